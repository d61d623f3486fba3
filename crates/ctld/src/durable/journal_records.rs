//! The journal's record types (`engine::journal_v1`) write each journaled
//! request as the wire request was written before them, and read it back.

use engine::journal_v1::Request;
use model::array::TaskSet;
use model::{ExitCode, Gres, JobId, TimeLimit};
use proto::CtldRequest;

fn gres(count: u64) -> Gres {
    Gres {
        name: "gpu".into(),
        type_: Some("a100".into()),
        count,
    }
}

fn usage() -> proto::StepUsage {
    proto::StepUsage {
        user_cpu_usec: Some(1),
        max_rss_node: Some("n1".into()),
        n_tasks: Some(4),
        ..Default::default()
    }
}

fn desc() -> proto::JobDesc {
    proto::JobDesc {
        name: "j".into(),
        script: "#!/bin/sh\n".into(),
        argv: vec!["a".into()],
        command: Some("/x.sh".into()),
        work_dir: "/w".into(),
        env: vec![("A".into(), "b".into())].into(),
        partitions: vec!["p".into()],
        min_nodes: Some(1),
        mem_per_cpu: Some(10),
        gres: vec![gres(1)],
        gpus: Some(gres(2)),
        time_limit: Some(TimeLimit::Minutes(5)),
        stdout: Some("o".into()),
        exclusive: true,
        nodelist: vec!["n1".into()],
        signal: Some(proto::SignalSpec {
            signal: 10,
            secs: 60,
            batch_only: true,
        }),
        requeue: Some(false),
        acctg_freq: Some("task=5".into()),
        nice: -3,
        uid: 7,
        user: "u".into(),
        array: Some("0-3".into()),
        deadline: Some(99),
        alloc_only: true,
        submit_token: Some("ab".into()),
        ..Default::default()
    }
}

/// One of each journaled request, with its optional parts given.
fn every_request() -> Vec<CtldRequest> {
    let tasks = Some(TaskSet::parse("1-3").unwrap());
    vec![
        CtldRequest::Submit(Box::new(desc())),
        CtldRequest::Submit(Box::default()),
        CtldRequest::Cancel {
            job_id: JobId(1),
            signal: Some(9),
            batch_only: true,
            full: false,
            tasks: tasks.clone(),
        },
        CtldRequest::Cancel {
            job_id: JobId(1),
            signal: None,
            batch_only: false,
            full: true,
            tasks: None,
        },
        CtldRequest::UpdateJob {
            job_id: JobId(2),
            update: proto::JobUpdate {
                partitions: Some(vec!["p".into()]),
                name: Some("n".into()),
                gres: Some(vec![gres(3)]),
                array_throttle: Some(2),
                priority: Some(5),
                ..Default::default()
            },
            tasks: tasks.clone(),
        },
        CtldRequest::UpdateJob {
            job_id: JobId(2),
            update: proto::JobUpdate::default(),
            tasks: None,
        },
        CtldRequest::UpdateNode {
            nodes: vec!["n1".into(), "n2".into()],
            state: Some(proto::NodeStateRequest::Drain),
            reason: Some("why".into()),
        },
        CtldRequest::Hold {
            job_id: JobId(3),
            user: true,
            tasks: tasks.clone(),
        },
        CtldRequest::Release {
            job_id: JobId(3),
            tasks: None,
        },
        CtldRequest::Requeue {
            job_id: JobId(3),
            hold: true,
            tasks: tasks.clone(),
        },
        CtldRequest::Suspend {
            job_id: JobId(3),
            tasks: None,
        },
        CtldRequest::Resume {
            job_id: JobId(3),
            tasks: tasks.clone(),
        },
        CtldRequest::RegisterNode(proto::NodeRegistration {
            name: "n1".into(),
            addr: "127.0.0.1".into(),
            port: 6818,
            cpus: 2,
            boards: 1,
            sockets: 2,
            cores_per_socket: 1,
            threads_per_core: 1,
            real_memory: 1000,
            free_memory: 900,
            cpu_load: 0.5,
            gres: vec![gres(1)],
            os: "Linux".into(),
            arch: "x86_64".into(),
            boot_time: 1,
            start_time: 2,
            running_jobs: vec![JobId(4)],
            version: "v".into(),
        }),
        CtldRequest::JobExited {
            job_id: JobId(4),
            node: "n1".into(),
            exit: ExitCode::default(),
            launch_failed: Some("no dir".into()),
            usage: Some(usage()),
        },
        CtldRequest::CompleteAllocation {
            job_id: JobId(4),
            exit: ExitCode::default(),
        },
        CtldRequest::CreateStep(Box::new(proto::StepRequest {
            job_id: JobId(4),
            name: "s".into(),
            argv: vec!["hostname".into()],
            gres: vec![gres(1)],
            gpus: Some(2),
            env: vec![("X".into(), "y".into())],
            stdin: proto::StdinMode::File("in".into()),
            stdout: Some("o".into()),
            mpi: "pmi2".into(),
            acctg_freq: Some("5".into()),
            ..Default::default()
        })),
        CtldRequest::CreateStep(Box::new(proto::StepRequest {
            stdin: proto::StdinMode::Task(2),
            ..Default::default()
        })),
        CtldRequest::StepExited(proto::StepNodeEnd {
            job_id: JobId(4),
            step_id: 0,
            node: "n1".into(),
            exit: ExitCode::default(),
            usage: Some(usage()),
        }),
        CtldRequest::ExternEnded {
            job_id: JobId(4),
            node: "n2".into(),
            usage: usage(),
        },
        CtldRequest::CancelStep {
            job_id: JobId(4),
            step_id: 1,
            signal: Some(2),
        },
        CtldRequest::InSession {
            seq: 3,
            request: Box::new(CtldRequest::Top { job_id: JobId(5) }),
        },
        CtldRequest::Top { job_id: JobId(5) },
    ]
}

#[test]
fn a_journaled_request_is_written_as_the_wire_request_was() {
    for req in every_request() {
        let mine = Request::from_ctld(&req).expect("journaled");
        assert_eq!(
            rmp_serde::to_vec_named(&mine).unwrap(),
            rmp_serde::to_vec_named(&req).unwrap(),
            "{req:?}"
        );
        assert_eq!(
            serde_json::to_string(&mine).unwrap(),
            serde_json::to_string(&req).unwrap(),
        );
    }
}

#[test]
fn a_journaled_request_reads_back_as_the_wire_request() {
    for req in every_request() {
        let bin = rmp_serde::to_vec_named(&req).unwrap();
        let back: Request<'static> = rmp_serde::from_slice(&bin).unwrap();
        let back = CtldRequest::from(back);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&req).unwrap()
        );
        let json = serde_json::to_vec(&req).unwrap();
        let back: Request<'static> = serde_json::from_slice(&json).unwrap();
        let back = CtldRequest::from(back);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&req).unwrap()
        );
    }
}

#[test]
fn requests_that_change_nothing_are_not_journaled() {
    assert!(Request::from_ctld(&CtldRequest::ListJobs).is_none());
    assert!(Request::from_ctld(&CtldRequest::Ping).is_none());
}
