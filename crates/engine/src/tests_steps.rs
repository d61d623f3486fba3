//! Job steps in the engine: how they are ended and recorded (issue 35).

use crate::tests::{desc, engine, submit, user};
use crate::{Command, Engine};
use model::{ExitCode, JobId, JobState};
use proto::{EndReason, SignalScope, StepId, StepNodeEnd, StepRequest};

/// A running batch job with one step of one task on node1.
fn job_with_step(e: &mut Engine) -> (JobId, u32) {
    let id = submit(e, desc(), 0);
    let created = e
        .on_create_step(
            StepRequest {
                job_id: id,
                name: "sleep".into(),
                argv: vec!["sleep".into(), "100".into()],
                ntasks: Some(1),
                ..StepRequest::default()
            },
            &user(),
            1,
        )
        .expect("the step fits");
    e.take_commands();
    (id, created.step_id)
}

fn step_ends(cmds: &[Command]) -> Vec<(Option<i32>, Option<EndReason>)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::SignalStep { signal, reason, .. } => Some((*signal, *reason)),
            _ => None,
        })
        .collect()
}

fn numbered(e: &Engine, id: JobId, step: u32) -> proto::AcctStep {
    e.acct_job(id, 10)
        .expect("a record")
        .steps
        .into_iter()
        .find(|s| s.step == StepId::Numbered(step))
        .expect("the step's record")
}

#[test]
fn issue_35_scancel_of_a_step_kills_its_tasks_at_once() {
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_cancel_step(id, step, None, &user(), 2).unwrap();
    assert_eq!(
        step_ends(&e.take_commands()),
        [(Some(9), Some(EndReason::Cancelled))]
    );
    e.on_step_exited(
        StepNodeEnd {
            job_id: id,
            step_id: step,
            node: "node1".into(),
            exit: ExitCode { code: 0, signal: 9 },
            usage: None,
            oom_kills: 0,
        },
        3,
    )
    .unwrap();
    let rec = numbered(&e, id, step);
    assert_eq!(rec.state, JobState::Cancelled);
    assert_eq!(rec.exit_code.to_string(), "0:9");
    // A plain signal is only a signal.
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_cancel_step(id, step, Some(10), &user(), 2).unwrap();
    assert_eq!(step_ends(&e.take_commands()), [(Some(10), None)]);
}

#[test]
fn issue_35_a_task_killed_by_a_signal_makes_its_step_cancelled() {
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_step_exited(
        StepNodeEnd {
            job_id: id,
            step_id: step,
            node: "node1".into(),
            exit: ExitCode { code: 0, signal: 9 },
            usage: None,
            oom_kills: 0,
        },
        3,
    )
    .unwrap();
    let rec = numbered(&e, id, step);
    assert_eq!(rec.state, JobState::Cancelled);
    assert_eq!(rec.exit_code.to_string(), "0:9");
}

#[test]
fn issue_35_a_step_still_running_when_its_job_is_cancelled_ends_0_15() {
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_cancel(id, None, SignalScope::Full, &user(), 5)
        .unwrap();
    let cmds = e.take_commands();
    // The step's tasks get SIGTERM and KillWait, with the job's banner.
    assert_eq!(step_ends(&cmds), [(None, Some(EndReason::Cancelled))]);
    assert!(cmds.iter().any(|c| matches!(
        c,
        Command::TerminateJob {
            reason: Some(EndReason::Cancelled),
            ..
        }
    )));
    let rec = numbered(&e, id, step);
    assert_eq!(rec.state, JobState::Cancelled);
    assert_eq!(rec.exit_code.to_string(), "0:15");
}

#[test]
fn issue_35_a_job_out_of_time_says_so_to_its_nodes() {
    let mut e = engine();
    let mut d = desc();
    d.time_limit = Some(model::TimeLimit::Minutes(1));
    submit(&mut e, d, 0);
    e.take_commands();
    e.on_timer(60);
    assert!(e.take_commands().iter().any(|c| matches!(
        c,
        Command::TerminateJob {
            reason: Some(EndReason::TimeLimit),
            ..
        }
    )));
}

#[test]
fn issue_35_a_batch_shell_killed_by_a_signal_is_cancelled() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    e.on_job_exited(id, "node1", ExitCode { code: 0, signal: 9 }, None, 3)
        .unwrap();
    let rec = e.acct_job(id, 4).expect("a record");
    assert_eq!(rec.state, JobState::Failed);
    let batch = rec
        .steps
        .iter()
        .find(|s| s.step == StepId::Batch)
        .expect("the batch step");
    assert_eq!(batch.state, JobState::Cancelled);
    assert_eq!(batch.exit_code.to_string(), "0:9");
}

/// Issue 37: `--gpus-per-task` takes that many GPUs per task on each
/// node, `--ntasks-per-gpu` one per that many tasks, and the node is told
/// how to bind them (`GpuBind`); without either every task sees the step's.
#[test]
fn issue_37_per_task_gpus_size_the_step_and_travel_to_the_node() {
    let mut e = engine();
    let mut d = desc();
    d.partitions = vec!["gpu".into()];
    d.ntasks = Some(2);
    d.gres = vec![model::Gres::parse("gpu:2").unwrap()];
    let id = submit(&mut e, d, 0);
    e.take_commands();
    let launch_of = |e: &mut Engine, req: StepRequest| {
        e.on_create_step(req, &user(), 1).expect("the step fits");
        e.take_commands()
            .into_iter()
            .find_map(|c| match c {
                Command::LaunchStep { launch, .. } => Some(launch),
                _ => None,
            })
            .expect("a launch")
    };
    let req = |ntasks: u32| StepRequest {
        job_id: id,
        name: "s".into(),
        argv: vec!["true".into()],
        ntasks: Some(ntasks),
        exact: true,
        overlap: true,
        ..StepRequest::default()
    };
    let plain = launch_of(&mut e, req(2));
    assert_eq!(plain.gpus, [0, 1]);
    assert_eq!(plain.gpu_bind, proto::GpuBind::None);
    let per_task = launch_of(
        &mut e,
        StepRequest {
            gpus_per_task: Some(1),
            ..req(1)
        },
    );
    assert_eq!(per_task.gpus, [0]);
    assert_eq!(per_task.gpu_bind, proto::GpuBind::PerTask(1));
    let shared = launch_of(
        &mut e,
        StepRequest {
            ntasks_per_gpu: Some(2),
            gpu_bind: Some("map_gpu:1,0".into()),
            ..req(2)
        },
    );
    assert_eq!(shared.gpus, [0]);
    assert_eq!(shared.gpu_bind, proto::GpuBind::Map(vec![1, 0]));
    let too_many = e.on_create_step(
        StepRequest {
            gpus_per_task: Some(2),
            ..req(2)
        },
        &user(),
        1,
    );
    assert_eq!(too_many.err(), Some(proto::SlurmError::InvalidGres));
}

/// Issue 37 (acceptance test 15): shards and MPS shares name the GPU
/// they live on, with SLURM_SHARDS_ON_NODE and Slurm's MPS percentage.
#[test]
fn issue_37_shard_and_mps_variables() {
    let pool = |name: &str, n: u32| sched::GresPool {
        name: name.into(),
        type_: None,
        indexes: (0..n).collect(),
        used: vec![false; n as usize],
        cores: Vec::new(),
    };
    let pools = [pool("gpu", 2), pool("shard", 16), pool("mps", 200)];
    let get = |env: &[(String, String)], k: &str| {
        env.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone())
    };
    let shards = crate::env::sharing_env(&pools, &[(1, (0..8).collect())]);
    assert_eq!(get(&shards, "SLURM_SHARDS_ON_NODE").as_deref(), Some("8"));
    assert_eq!(get(&shards, "CUDA_VISIBLE_DEVICES").as_deref(), Some("0"));
    let later = crate::env::sharing_env(&pools, &[(1, (8..12).collect())]);
    assert_eq!(get(&later, "CUDA_VISIBLE_DEVICES").as_deref(), Some("1"));
    // 50 of the 100 MPS shares of one GPU: half its threads.
    let mps = crate::env::sharing_env(&pools, &[(2, (0..50).collect())]);
    assert_eq!(
        get(&mps, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").as_deref(),
        Some("50")
    );
    assert_eq!(get(&mps, "GPU_DEVICE_ORDINAL").as_deref(), Some("0"));
    // A job with GPUs of its own gets none of this.
    assert!(crate::env::sharing_env(&pools, &[(0, vec![0]), (1, vec![0])]).is_empty());
}

/// A node's report of the step on node1 (one task) ending with `exit`,
/// the OOM killer having killed `oom_kills` of its processes.
fn step_end(id: JobId, step: u32, exit: ExitCode, oom_kills: u64) -> StepNodeEnd {
    StepNodeEnd {
        job_id: id,
        step_id: step,
        node: "node1".into(),
        exit,
        usage: None,
        oom_kills,
    }
}

#[test]
fn issue_37_a_step_the_oom_killer_hit_ends_out_of_memory_0_125() {
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_step_exited(step_end(id, step, ExitCode { code: 0, signal: 9 }, 1), 3)
        .unwrap();
    let rec = numbered(&e, id, step);
    assert_eq!(rec.state, JobState::OutOfMemory);
    assert_eq!(rec.exit_code.to_string(), "0:125");
    // Even when the task it killed was not the one whose exit counts.
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_step_exited(step_end(id, step, ExitCode::default(), 2), 3)
        .unwrap();
    assert_eq!(numbered(&e, id, step).state, JobState::OutOfMemory);
    // The job itself goes on: its batch script's exit decides its state.
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
}

#[test]
fn issue_37_a_step_without_oom_kills_ends_as_before() {
    let mut e = engine();
    let (id, step) = job_with_step(&mut e);
    e.on_step_exited(step_end(id, step, ExitCode { code: 0, signal: 9 }, 0), 3)
        .unwrap();
    assert_eq!(numbered(&e, id, step).state, JobState::Cancelled);
}

fn batch_exited(e: &mut Engine, id: JobId, exit: ExitCode, oom_kills: u64, now: i64) {
    let req = proto::CtldRequest::JobExited {
        job_id: id,
        node: "node1".into(),
        exit,
        launch_failed: None,
        usage: None,
        oom_kills,
        script_failed: None,
    };
    let _ = e.apply(
        crate::Input::Request {
            req: Box::new(req),
            who: user(),
        },
        now,
    );
}

#[test]
fn issue_37_a_batch_step_the_oom_killer_hit_ends_the_job_out_of_memory() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    // The script itself may even exit 0 after one of its children died.
    batch_exited(&mut e, id, ExitCode::default(), 1, 5);
    let job = e.job(id).unwrap();
    assert_eq!(job.state, JobState::OutOfMemory);
    assert_eq!(job.reason.as_slurm_str(), "OutOfMemory");
    let rec = e.acct_job(id, 6).unwrap();
    assert_eq!(rec.state, JobState::OutOfMemory);
    assert_eq!(rec.exit_code.to_string(), "0:125");
    let batch = rec
        .steps
        .iter()
        .find(|s| s.step == StepId::Batch)
        .expect("the batch step's record");
    assert_eq!(batch.state, JobState::OutOfMemory);
    assert_eq!(batch.exit_code.to_string(), "0:125");
}

#[test]
fn issue_37_a_batch_job_without_oom_kills_ends_as_its_exit_says() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    batch_exited(&mut e, id, ExitCode { code: 0, signal: 9 }, 0, 5);
    assert_eq!(e.job(id).unwrap().state, JobState::Failed);
}

#[test]
fn issue_37_a_standalone_srun_ending_0_125_ends_its_job_out_of_memory() {
    let mut e = engine();
    let mut d = desc();
    d.alloc_only = true;
    let id = submit(&mut e, d, 0);
    e.on_complete_allocation(id, crate::OOM_EXIT, &user(), 5)
        .unwrap();
    let job = e.job(id).unwrap();
    assert_eq!(job.state, JobState::OutOfMemory);
    assert_eq!(job.reason.as_slurm_str(), "OutOfMemory");
    assert_eq!(e.acct_job(id, 6).unwrap().exit_code.to_string(), "0:125");
}

fn script_failed(e: &mut Engine, id: JobId, exit: ExitCode, script: proto::NodeScript, now: i64) {
    let req = proto::CtldRequest::JobExited {
        job_id: id,
        node: "node1".into(),
        exit,
        launch_failed: (script == proto::NodeScript::Prolog).then(|| "Prolog error".into()),
        usage: None,
        oom_kills: 0,
        script_failed: Some(script),
    };
    let _ = e.apply(
        crate::Input::Request {
            req: Box::new(req),
            who: user(),
        },
        now,
    );
}

#[test]
fn issue_39_a_failed_prolog_drains_the_node_and_requeues_the_job_held() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    script_failed(
        &mut e,
        id,
        ExitCode { code: 1, signal: 0 },
        proto::NodeScript::Prolog,
        5,
    );
    let job = e.job(id).unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.reason.as_slurm_str(), "launch failed requeued held");
    assert_eq!(job.priority, 0);
    assert_eq!(job.restarts, 1);
    let n = e.node("node1").unwrap();
    assert!(n.state.drain);
    assert_eq!(n.reason.as_deref(), Some("Prolog error"));
    assert_eq!(n.alloc_cpus, 0);
    crate::tests::assert_invariants(&e);
    // Held: a pass does not start it again.
    e.apply(crate::Input::Tick, 100);
    assert_eq!(e.job(id).unwrap().state, JobState::Pending);
}

#[test]
fn issue_39_a_failed_epilog_drains_the_node_and_the_job_ends_as_it_did() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    script_failed(
        &mut e,
        id,
        ExitCode::default(),
        proto::NodeScript::Epilog,
        5,
    );
    assert_eq!(e.job(id).unwrap().state, JobState::Completed);
    let n = e.node("node1").unwrap();
    assert!(n.state.drain);
    assert_eq!(n.reason.as_deref(), Some("Epilog error"));
    crate::tests::assert_invariants(&e);
}

#[test]
fn issue_39_a_failed_step_prolog_on_another_node_requeues_a_batch_job_held() {
    let mut e = engine();
    let mut d = desc();
    d.min_nodes = Some(2);
    d.max_nodes = Some(2);
    let id = submit(&mut e, d, 0);
    let nodes = e.job(id).unwrap().alloc.as_ref().unwrap().nodes.clone();
    assert_eq!(nodes.len(), 2);
    let other = e.nodes[nodes[1].node.0 as usize].conf.name.clone();
    let req = proto::CtldRequest::JobExited {
        job_id: id,
        node: other.clone(),
        exit: ExitCode { code: 1, signal: 0 },
        launch_failed: Some("Prolog error".into()),
        usage: None,
        oom_kills: 0,
        script_failed: Some(proto::NodeScript::Prolog),
    };
    let _ = e.apply(
        crate::Input::Request {
            req: Box::new(req),
            who: user(),
        },
        5,
    );
    let job = e.job(id).unwrap();
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.reason.as_slurm_str(), "launch failed requeued held");
    assert_eq!(
        e.node(&other).unwrap().reason.as_deref(),
        Some("Prolog error")
    );
    crate::tests::assert_invariants(&e);
}
