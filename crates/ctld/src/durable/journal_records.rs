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
        gres_flags: Some("enforce-binding".into()),
        mail_type: 2,
        mail_user: Some("m@x".into()),
        user_groups: vec!["g".into()],
        hint: Some("nomultithread".into()),
        threads_per_core: Some(1),
        ntasks_per_core: Some(2),
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
            boot_id: "0c5e7a0e-boot".into(),
            fabric: Some(proto::FabricReport {
                source: "MusterTopologyProbe".into(),
                switches: vec!["s1".into(), "top".into()],
                ib_ports: vec![proto::IbPort {
                    device: "mlx5_0".into(),
                    port: 1,
                    state: "4: ACTIVE".into(),
                    rate: "200 Gb/sec (4X HDR)".into(),
                    link_layer: "InfiniBand".into(),
                    lid: "0x1a".into(),
                    sm_lid: "0x1".into(),
                    subnet_prefix: "fe80:0000:0000:0000".into(),
                    node_guid: "0c42:a103:0065:7e4a".into(),
                }],
                lldp: vec![proto::LldpNeighbor {
                    interface: "eno1".into(),
                    chassis: "leaf-a3".into(),
                    port: "Ethernet12".into(),
                }],
                error: String::new(),
            }),
        }),
        CtldRequest::JobExited {
            job_id: JobId(4),
            node: "n1".into(),
            exit: ExitCode::default(),
            launch_failed: Some("no dir".into()),
            usage: Some(usage()),
            oom_kills: 0,
            script_failed: None,
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
            oom_kills: 0,
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
        CtldRequest::CancelJobs {
            select: Box::new(proto::JobSelect {
                job_ids: vec![JobId(6)],
                by_id: true,
                me: true,
                user: Some("u".into()),
                names: vec!["n".into()],
                partitions: vec!["p".into()],
                accounts: vec!["a".into()],
                qos: vec!["q".into()],
                states: vec![model::JobState::Pending, model::JobState::Suspended],
                nodes: vec!["n1".into()],
            }),
            signal: Some(10),
            batch_only: true,
            full: false,
        },
        CtldRequest::CancelJobs {
            select: Box::default(),
            signal: None,
            batch_only: false,
            full: true,
        },
        CtldRequest::Submit(Box::new(proto::JobDesc {
            licenses: Some("matlab:1".into()),
            ..desc()
        })),
        CtldRequest::UpdatePartition(Box::new(proto::PartitionUpdate {
            name: "p".into(),
            nodes: Some(vec!["n1".into()]),
            default: Some(true),
            max_time: Some(model::TimeLimit::Minutes(5)),
            default_time: Some(None),
            max_nodes: Some(Some(2)),
            min_nodes: Some(1),
            state: Some("DOWN".into()),
            priority_tier: Some(2),
            priority_job_factor: Some(3),
            allow_accounts: Some(Some(vec!["a".into()])),
            allow_groups: Some(None),
            oversubscribe: Some("NO".into()),
            other: vec![("RootOnly".into(), "YES".into())],
        })),
        CtldRequest::CreatePartition(Box::new(proto::PartitionUpdate {
            name: "q".into(),
            nodes: Some(Vec::new()),
            default: Some(false),
            max_time: Some(model::TimeLimit::Unlimited),
            default_time: Some(Some(model::TimeLimit::Minutes(1))),
            max_nodes: Some(None),
            min_nodes: Some(0),
            state: Some("UP".into()),
            priority_tier: Some(1),
            priority_job_factor: Some(1),
            allow_accounts: Some(None),
            allow_groups: Some(Some(vec!["g".into()])),
            oversubscribe: Some("YES:4".into()),
            other: vec![("DenyQos".into(), "low".into())],
        })),
        CtldRequest::DeletePartition { name: "q".into() },
        CtldRequest::Submit(Box::new(proto::JobDesc {
            reservation: Some("maint".into()),
            ..desc()
        })),
        CtldRequest::CreateReservation(proto::resv::ResvSpec {
            name: "maint".into(),
            start: Some(100),
            start_now: false,
            end: None,
            duration_mins: Some(60),
            nodes: Some("n[1-2]".into()),
            node_cnt: None,
            partition: Some("p".into()),
            users: Some("root".into()),
            accounts: Some("-a".into()),
            flags: Some("MAINT".into()),
        }),
        CtldRequest::UpdateReservation(proto::resv::ResvSpec {
            name: "maint".into(),
            start_now: true,
            node_cnt: Some(2),
            ..Default::default()
        }),
        CtldRequest::DeleteReservation {
            name: "maint".into(),
        },
        CtldRequest::RebootNodes {
            nodes: vec!["n1".into(), "n2".into()],
            asap: true,
            next_state: Some(proto::RebootNextState::Down),
            reason: Some("bios".into()),
        },
        CtldRequest::RebootNodes {
            nodes: vec!["n1".into()],
            asap: false,
            next_state: None,
            reason: None,
        },
        CtldRequest::CancelReboot {
            nodes: vec!["n2".into()],
        },
        CtldRequest::GpuXid {
            node: "n1".into(),
            xid: 79,
            gpu: Some(1),
            pci: "0000:3b:00".into(),
        },
    ]
}

#[test]
fn a_journaled_request_is_written_as_the_wire_request_was() {
    for req in every_request() {
        let mine = Request::from_ctld(&req).expect("journaled");
        // A submission without `--gres-flags` or without licenses: the
        // journal leaves the field out (so records of jobs without it are
        // written as before it existed), the wire writes it (rpc's binary
        // encoding is positional). The same request either way.
        if let CtldRequest::Submit(d) = &req {
            if d.gres_flags.is_none()
                || d.user_groups.is_empty()
                || d.licenses.is_none()
                || d.mail_type == 0
                || d.mail_user.is_none()
                || d.hint.is_none()
                || d.reservation.is_none()
            {
                let bin = rmp_serde::to_vec_named(&mine).unwrap();
                let json = serde_json::to_string(&mine).unwrap();
                for back in [
                    rmp_serde::from_slice::<CtldRequest>(&bin).unwrap(),
                    serde_json::from_str::<CtldRequest>(&json).unwrap(),
                ] {
                    let CtldRequest::Submit(back) = back else {
                        panic!("not a submission: {back:?}")
                    };
                    assert_eq!(back, *d);
                }
                continue;
            }
        }
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

/// A journal of JSON records, as builds before the binary records wrote
/// them, checked in under `tests/fixtures/json-journal/`
/// (`MUSTER_WRITE_FIXTURES=1` writes it again: only for a new fixture).
mod json_fixture {
    use super::super::{Entry, Store};
    use journal::Journal;
    use model::{JobId, JobState};
    use proto::{CtldRequest, Identity};
    use std::path::{Path, PathBuf};

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/json-journal")
    }

    fn config(dir: &Path) -> conf::Config {
        let text = format!(
            "ClusterName=fx\nSlurmctldHost=h(127.0.0.1)\nStateSaveLocation={}\n\
             NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
             PartitionName=batch Nodes=n[1-2] Default=YES\n",
            dir.display()
        );
        conf::parse_str(&text, &dir.join("slurm.conf"), &mut |_| {
            Err(std::io::Error::other("none"))
        })
        .expect("config")
        .config
    }

    fn request(req: CtldRequest, now: i64) -> Entry {
        Entry::Request {
            req: Box::new(req),
            who: Identity {
                uid: 1000,
                gid: 1000,
                user: "alice".into(),
                host: "login".into(),
            },
            now,
        }
    }

    fn submit(name: &str, hold: bool) -> CtldRequest {
        CtldRequest::Submit(Box::new(proto::JobDesc {
            name: name.into(),
            script: "#!/bin/sh\nsleep 600\n".into(),
            env: vec![("MARK".into(), "json".into())].into(),
            work_dir: "/home/alice".into(),
            uid: 1000,
            gid: 1000,
            user: "alice".into(),
            hold,
            ..Default::default()
        }))
    }

    fn history() -> Vec<Entry> {
        let reg = |name: &str| match super::every_request().swap_remove(12) {
            CtldRequest::RegisterNode(mut r) => {
                r.name = name.into();
                r.running_jobs.clear();
                r.gres.clear();
                CtldRequest::RegisterNode(r)
            }
            other => panic!("{other:?}"),
        };
        vec![
            request(reg("n1"), 1_700_000_000),
            request(reg("n2"), 1_700_000_000),
            Entry::Tick { now: 1_700_000_000 },
            request(submit("a", false), 1_700_000_001),
            request(submit("b", true), 1_700_000_001),
            Entry::Tick { now: 1_700_000_001 },
            request(
                CtldRequest::Cancel {
                    job_id: JobId(2),
                    signal: None,
                    batch_only: false,
                    full: false,
                    tasks: None,
                },
                1_700_000_002,
            ),
            Entry::Tick { now: 1_700_000_002 },
        ]
    }

    #[test]
    fn write_the_json_journal_fixture_when_asked() {
        if std::env::var_os("MUSTER_WRITE_FIXTURES").is_none() {
            return;
        }
        let dir = fixture();
        std::fs::create_dir_all(&dir).unwrap();
        let (mut journal, _) = Journal::open(&dir).unwrap();
        let records: Vec<Vec<u8>> = history()
            .iter()
            .map(|e| serde_json::to_vec(e).unwrap())
            .collect();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        journal.append(&refs).unwrap();
        drop(journal);
        let _ = std::fs::remove_file(dir.join("LOCK"));
    }

    #[test]
    fn a_journal_of_json_records_of_older_builds_replays() {
        let tmp = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(fixture()).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n != "LOCK") {
                std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
            }
        }
        let cfg = config(tmp.path());
        let (_store, engine) = Store::open(tmp.path(), &cfg, 1_700_000_100).unwrap();
        assert_eq!(engine.job_count(), 2);
        let a = engine.job(JobId(1)).expect("job 1");
        assert_eq!(a.desc.name, "a");
        assert_eq!(a.env.to_vec(), vec![("MARK".into(), "json".into())]);
        assert_eq!(a.state, JobState::Running);
        assert_eq!(engine.job(JobId(2)).unwrap().state, JobState::Cancelled);
    }
}
