use super::*;
use model::{ExitCode, JobState, PendingReason};
use proto::{
    Identity, JobDesc, JobRowSource, JobUpdate, NodeRegistration, NodeStateRequest, SlurmError,
};

pub(crate) const CONF: &str = "\
ClusterName=test
SlurmctldHost=ctl(127.0.0.1)
SlurmUser=slurm
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
GresTypes=gpu
KillWait=5
MinJobAge=300
NodeName=node[1-2] CPUs=2 RealMemory=4000 Port=7001
NodeName=node[3-4] CPUs=2 RealMemory=4000 Gres=gpu:a100:2 Port=7003
PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP
";

pub(crate) fn engine() -> Engine {
    engine_on(CONF)
}

/// The slurm.conf of `engine()`, parsed.
pub(crate) fn test_config() -> conf::Config {
    config(CONF)
}

/// slurm.conf `text`, parsed.
pub(crate) fn config(text: &str) -> conf::Config {
    conf::parse_str(text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
        Err(std::io::Error::other("no includes"))
    })
    .expect("config parses")
    .config
}

/// An engine on slurm.conf `text` with node1-4 (2 CPUs, 4000 MB) registered.
pub(crate) fn engine_on(text: &str) -> Engine {
    let mut e = Engine::new(&config(text), 0);
    for i in 1..=4 {
        e.on_node_registered(reg(&format!("node{i}"), 2, 4000), 0)
            .unwrap();
    }
    e
}

pub(crate) fn reg(name: &str, cpus: u32, mem: u64) -> NodeRegistration {
    NodeRegistration {
        name: name.into(),
        addr: "127.0.0.1".into(),
        port: 7000,
        cpus,
        boards: 1,
        sockets: cpus,
        cores_per_socket: 1,
        threads_per_core: 1,
        real_memory: mem,
        free_memory: mem,
        cpu_load: 0.0,
        gres: vec![],
        os: "Linux".into(),
        arch: "x86_64".into(),
        boot_time: 0,
        start_time: 0,
        running_jobs: vec![],
        version: "0".into(),
        boot_id: String::new(),
        fabric: None,
    }
}

pub(crate) fn user() -> Identity {
    Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "h".into(),
    }
}

pub(crate) fn other() -> Identity {
    Identity {
        uid: 1001,
        gid: 1001,
        user: "bob".into(),
        host: "h".into(),
    }
}

pub(crate) fn admin() -> Identity {
    Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: "h".into(),
    }
}

pub(crate) fn desc() -> JobDesc {
    JobDesc {
        name: "job".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        work_dir: "/tmp/w".into(),
        submit_dir: "/tmp/w".into(),
        ..JobDesc::default()
    }
}

/// The engine's own consistency checks find nothing (what they found is
/// the failure's message).
pub(crate) fn assert_invariants(e: &Engine) {
    let broken = e.check_invariants();
    assert!(broken.is_empty(), "{broken:?}");
}

pub(crate) fn submit(e: &mut Engine, d: JobDesc, now: i64) -> JobId {
    let id = e.on_submit(d, &user(), now).expect("accepted").job_id;
    e.schedule(now);
    assert_invariants(e);
    id
}

/// Submits a job that takes every CPU of `engine()`'s cluster (4 nodes
/// of 2), so the jobs after it wait.
pub(crate) fn submit_blocker(e: &mut Engine, now: i64) -> JobId {
    let mut all = desc();
    all.ntasks = Some(8);
    submit(e, all, now)
}

/// The commands for node daemons, without accounting records.
fn node_commands(cmds: Vec<Command>) -> Vec<Command> {
    cmds.into_iter()
        .filter(|c| !matches!(c, Command::AcctRecord(_)))
        .collect()
}

pub(crate) fn launched(cmds: &[Command]) -> Vec<(String, u32)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::LaunchBatch { node, launch, .. } => Some((node.clone(), launch.job_id.0)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_job_starts_at_once_and_completes() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 10);
    assert_eq!(id, JobId(1));
    assert_eq!(launched(&e.take_commands()), vec![("node1".to_string(), 1)]);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    e.on_job_exited(id, "node1", ExitCode { code: 0, signal: 0 }, None, 12)
        .unwrap();
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Completed);
    assert_invariants(&e);
    assert_eq!(e.node("node1").unwrap().state.base, model::NodeBase::Idle);
}

#[test]
fn nonzero_exit_fails_and_signal_is_kept() {
    let mut e = engine();
    let a = submit(&mut e, desc(), 0);
    let b = submit(&mut e, desc(), 0);
    e.on_job_exited(a, "node1", ExitCode { code: 1, signal: 0 }, None, 1)
        .unwrap();
    e.on_job_exited(b, "node1", ExitCode { code: 0, signal: 9 }, None, 1)
        .unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Failed);
    assert_eq!(e.job(a).unwrap().exit.to_string(), "1:0");
    assert_eq!(e.job(b).unwrap().exit.to_string(), "0:9");
}

#[test]
fn batch_env_has_both_spellings() {
    let mut e = engine();
    let mut d = desc();
    d.min_nodes = Some(2);
    d.ntasks = Some(3);
    d.env = vec![
        ("PATH".into(), "/bin".into()),
        ("SLURM_JOB_ID".into(), "bogus".into()),
    ]
    .into();
    submit(&mut e, d, 0);
    let cmds = node_commands(e.take_commands());
    let Command::LaunchBatch { launch, .. } = &cmds[0] else {
        panic!("{cmds:?}")
    };
    let get = |k: &str| {
        launch
            .env
            .iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("SLURM_JOB_ID"), Some("1"));
    assert_eq!(get("SLURM_JOBID"), Some("1"));
    assert_eq!(get("SLURM_JOB_NODELIST"), Some("node[1-2]"));
    assert_eq!(get("SLURM_NODELIST"), Some("node[1-2]"));
    assert_eq!(get("SLURM_NNODES"), Some("2"));
    assert_eq!(get("SLURM_NTASKS"), Some("3"));
    assert_eq!(get("SLURM_NPROCS"), Some("3"));
    assert_eq!(get("SLURM_TASKS_PER_NODE"), Some("2,1"));
    assert_eq!(get("SLURM_JOB_CPUS_PER_NODE"), Some("2,1"));
    assert_eq!(get("SLURM_MEM_PER_CPU"), Some("500"));
    assert_eq!(get("PATH"), Some("/bin"));
    assert_eq!(launch.stdout, "/tmp/w/slurm-1.out");
    assert_eq!(
        launch
            .env
            .iter()
            .filter(|(k, _)| k == "SLURM_JOB_ID")
            .count(),
        1
    );
}

#[test]
fn gpus_are_visible_only_when_allocated() {
    let mut e = engine();
    let mut d = desc();
    d.partitions = vec!["gpu".into()];
    d.gres = vec![model::Gres::parse("gpu:2").unwrap()];
    submit(&mut e, d, 0);
    let cmds = node_commands(e.take_commands());
    let Command::LaunchBatch { node, launch, .. } = &cmds[0] else {
        panic!()
    };
    assert_eq!(node, "node3");
    let get = |k: &str| {
        launch
            .env
            .iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("CUDA_VISIBLE_DEVICES").as_deref(), Some("0,1"));
    assert_eq!(get("SLURM_GPUS_ON_NODE").as_deref(), Some("2"));
}

#[test]
fn impossible_requests_are_refused_and_too_many_nodes_wait() {
    let mut e = engine();
    let mut d = desc();
    d.gres = vec![model::Gres::parse("gpu:a100:9").unwrap()];
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::RequestedNodeConfigUnavailable
    );
    let mut d = desc();
    d.mem_per_node = Some(999_999);
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::MemoryNotSatisfiable
    );
    let mut d = desc();
    d.partitions = vec!["nosuchpart".into()];
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::InvalidPartitionName
    );
    let mut d = desc();
    d.gres = vec![model::Gres::parse("foo:1").unwrap()];
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::InvalidGres
    );
    let mut d = desc();
    d.min_nodes = Some(10);
    let id = submit(&mut e, d, 0);
    assert_eq!(e.job(id).unwrap().reason, PendingReason::PartitionNodeLimit);
}

/// Issue 35: real Slurm 22.05 on four nodes of two CPUs left `sbatch -n9`
/// (and `-N1 -n9`) pending with PartitionConfig, and refused `srun -N1
/// -n4` ("Requested node configuration is not available").
#[test]
fn issue_35_more_cpus_than_the_partition_wait_and_impossible_shapes_are_refused() {
    let mut e = engine();
    for one_node in [false, true] {
        let mut d = desc();
        d.ntasks = Some(9);
        if one_node {
            d.min_nodes = Some(1);
            d.max_nodes = Some(1);
        }
        let id = submit(&mut e, d, 0);
        assert_eq!(e.job(id).unwrap().state, JobState::Pending);
        assert_eq!(e.job(id).unwrap().reason, PendingReason::PartitionConfig);
    }
    let mut d = desc();
    d.ntasks = Some(4);
    d.min_nodes = Some(1);
    d.max_nodes = Some(1);
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::RequestedNodeConfigUnavailable
    );
}

#[test]
fn issue_35_test_only_fails_where_the_job_could_never_run() {
    // Real Slurm 22.05, 4 nodes: `sbatch --test-only -N 5 --wrap=true`
    // prints `allocation failure: Requested node configuration is not
    // available` and exits 1, though `sbatch -N 5` is queued.
    let mut e = engine();
    let mut d = desc();
    d.min_nodes = Some(10);
    d.test_only = true;
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::RequestedNodeConfigUnavailable
    );
    let mut d = desc();
    d.test_only = true;
    let reply = e.on_submit(d, &user(), 0).unwrap();
    assert!(reply.test_only.is_some());
    assert!(e.jobs.is_empty());
}

#[test]
fn issue_35_a_job_waiting_for_its_begin_time_is_expected_to_start_then() {
    // Real Slurm 22.05: `sbatch --begin=now+3600` shows `StartTime=` the
    // begin time (and squeue --start, %S), with `EndTime=Unknown`.
    let mut e = engine();
    let mut d = desc();
    d.begin_time = Some(3600);
    let id = submit(&mut e, d, 0);
    e.schedule(1);
    let j = e.job_info(e.job(id).unwrap(), 1);
    assert_eq!(j.reason, PendingReason::BeginTime);
    assert_eq!((j.start_time, j.end_time), (Some(3600), None));
}

#[test]
fn waiting_jobs_get_resources_then_priority_and_start_when_freed() {
    let mut e = engine();
    let mut big = desc();
    big.min_nodes = Some(4);
    big.exclusive = true;
    let a = submit(&mut e, big.clone(), 0);
    let b = submit(&mut e, big.clone(), 1);
    let c = submit(&mut e, big, 2);
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    assert_eq!(e.job(b).unwrap().reason, PendingReason::Resources);
    assert_eq!(e.job(c).unwrap().reason, PendingReason::Priority);
    e.take_commands();
    e.on_job_exited(a, "node1", ExitCode::default(), None, 5)
        .unwrap();
    e.schedule(5);
    assert_eq!(e.job(b).unwrap().state, JobState::Running);
    assert_eq!(
        launched(&e.take_commands()),
        vec![("node1".to_string(), b.0)]
    );
    assert_invariants(&e);
}

#[test]
fn time_limit_times_out_and_terminates() {
    let mut e = engine();
    let mut d = desc();
    d.time_limit = Some(TimeLimit::Minutes(1));
    d.signal = Some(proto::SignalSpec {
        signal: 10,
        secs: 30,
        batch_only: false,
    });
    let id = submit(&mut e, d, 0);
    e.take_commands();
    assert_eq!(e.next_wakeup(), Some(30));
    e.on_timer(30);
    assert!(matches!(
        node_commands(e.take_commands())[..],
        [Command::SignalJob {
            signal: 10,
            scope: proto::SignalScope::Steps,
            ..
        }]
    ));
    assert_eq!(e.next_wakeup(), Some(60));
    e.on_timer(60);
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Timeout);
    assert!(j.completing);
    assert!(matches!(
        node_commands(e.take_commands())[..],
        [Command::TerminateJob { kill_wait: 5, .. }]
    ));
    assert!(e.node("node1").unwrap().state.completing);
    e.on_job_exited(
        id,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        61,
    )
    .unwrap();
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Timeout);
    assert!(!j.completing);
    // Purged MinJobAge after its end.
    e.on_timer(60 + 300);
    assert!(e.job(id).is_none());
}

#[test]
fn a_plain_submission_keeps_the_earliest_deadline() {
    let mut e = engine();
    let mut d = desc();
    d.time_limit = Some(TimeLimit::Minutes(1));
    submit(&mut e, d, 0);
    assert_eq!(e.next_wakeup(), Some(60));
    // No begin time, no deadline: nothing comes due for it, so the kept
    // deadline stays (before, the job was looked for before it was in the
    // table, and every submission made the next timer look at every job).
    submit(&mut e, desc(), 10);
    assert_eq!(e.next_wakeup(), Some(60));
    let mut d = desc();
    d.deadline = Some(1_000);
    submit(&mut e, d, 20);
    assert_eq!(e.next_wakeup(), Some(60));
    assert!(
        e.check_invariants().is_empty(),
        "{:?}",
        e.check_invariants()
    );
}

#[test]
fn cancel_permissions_and_states() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    assert_eq!(
        e.on_cancel(id, None, proto::SignalScope::Steps, &other(), 1),
        Err(SlurmError::AccessDenied)
    );
    assert_eq!(
        e.on_cancel(JobId(99), None, proto::SignalScope::Steps, &user(), 1),
        Err(SlurmError::InvalidJobId)
    );
    e.on_cancel(id, None, proto::SignalScope::Steps, &user(), 1)
        .unwrap();
    assert_eq!(e.job(id).unwrap().state, JobState::Cancelled);
    assert!(e.job(id).unwrap().completing);
    let mut held = desc();
    held.hold = true;
    let h = submit(&mut e, held, 2);
    assert_eq!(e.job(h).unwrap().reason, PendingReason::JobHeldUser);
    assert_eq!(e.job(h).unwrap().priority, 0);
    e.on_cancel(h, None, proto::SignalScope::Steps, &admin(), 3)
        .unwrap();
    assert_eq!(e.job(h).unwrap().state, JobState::Cancelled);
    assert!(!e.job(h).unwrap().completing);
}

/// scancel --signal: which nodes get which scope; a signal is not a
/// cancel (the job keeps running), and a pending job cannot be signalled.
#[test]
fn cancel_with_a_signal_reaches_the_scope_asked_for() {
    use proto::SignalScope::{Batch, Full, Steps};
    let mut e = engine();
    let mut two = desc();
    two.min_nodes = Some(2);
    two.ntasks = Some(4);
    let id = submit(&mut e, two, 0);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    e.take_commands();
    let signalled = |e: &mut Engine| -> Vec<(String, i32, proto::SignalScope)> {
        node_commands(e.take_commands())
            .into_iter()
            .filter_map(|c| match c {
                Command::SignalJob {
                    node,
                    signal,
                    scope,
                    ..
                } => Some((node, signal, scope)),
                _ => None,
            })
            .collect()
    };
    for (batch, full, scope) in [
        (false, false, Steps),
        (true, false, Batch),
        (false, true, Full),
        (true, true, Full),
    ] {
        let scope_of = proto::SignalScope::of_flags(batch, full);
        assert_eq!(scope_of, scope, "-b {batch} -f {full}");
        e.on_cancel(id, Some(12), scope_of, &user(), 1).unwrap();
        let want: Vec<_> = if scope == Batch {
            vec![("node1".to_string(), 12, Batch)]
        } else {
            vec![
                ("node1".to_string(), 12, scope),
                ("node2".to_string(), 12, scope),
            ]
        };
        assert_eq!(signalled(&mut e), want, "-b {batch} -f {full}");
        assert_eq!(e.job(id).unwrap().state, JobState::Running);
    }
    // Suspend and resume stop and continue every process of the job.
    e.on_suspend(id, &admin(), 2).unwrap();
    assert_eq!(
        signalled(&mut e),
        vec![
            ("node1".to_string(), 19, Full),
            ("node2".to_string(), 19, Full)
        ]
    );
    e.on_resume(id, &admin(), 2).unwrap();
    assert_eq!(
        signalled(&mut e),
        vec![
            ("node1".to_string(), 18, Full),
            ("node2".to_string(), 18, Full)
        ]
    );
    let blocker = submit_blocker(&mut e, 2);
    assert_eq!(
        e.on_cancel(blocker, Some(12), Steps, &user(), 3),
        Err(SlurmError::JobNotRunning)
    );
    assert_invariants(&e);
}

#[test]
fn drained_node_takes_no_new_job_while_its_job_finishes() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    e.on_update_node(
        &["node1".into()],
        Some(NodeStateRequest::Drain),
        Some("maint".into()),
        &admin(),
        1,
    )
    .unwrap();
    assert_eq!(e.node("node1").unwrap().state.sinfo_short(), "drng");
    assert_eq!(
        e.on_update_node(
            &["node1".into()],
            Some(NodeStateRequest::Drain),
            None,
            &user(),
            1
        ),
        Err(SlurmError::InvalidUserId)
    );
    let next = submit(&mut e, desc(), 2);
    let cmds = node_commands(e.take_commands());
    assert_eq!(
        launched(&cmds),
        vec![("node1".to_string(), id.0), ("node2".to_string(), next.0)]
    );
    e.on_job_exited(id, "node1", ExitCode::default(), None, 3)
        .unwrap();
    assert_eq!(e.node("node1").unwrap().state.sinfo_short(), "drain");
    e.on_update_node(
        &["node1".into()],
        Some(NodeStateRequest::Resume),
        None,
        &admin(),
        4,
    )
    .unwrap();
    assert_eq!(e.node("node1").unwrap().state.sinfo_short(), "idle");
}

#[test]
fn node_registering_with_less_than_configured_is_drained() {
    let mut e = engine();
    e.on_node_registered(reg("node2", 1, 4000), 5).unwrap();
    let n = e.node("node2").unwrap();
    assert!(n.state.drain);
    assert_eq!(
        n.reason.as_deref(),
        Some("Low socket*core*thread count, Low CPUs")
    );
    e.on_node_registered(reg("node3", 2, 2000), 5).unwrap();
    assert_eq!(
        e.node("node3").unwrap().reason.as_deref(),
        Some("Low RealMemory (reported:2000 < 100.00% of configured:4000)")
    );
}

#[test]
fn node_down_requeues_its_jobs() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    let mut nr = desc();
    nr.requeue = Some(false);
    let nr = submit(&mut e, nr, 0);
    e.take_commands();
    e.on_update_node(
        &["node1".into()],
        Some(NodeStateRequest::Down),
        Some("dead".into()),
        &admin(),
        5,
    )
    .unwrap();
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.restarts, 1);
    assert_eq!(e.job(nr).unwrap().state, JobState::NodeFail);
    assert_invariants(&e);
    // A requeued job waits out cred_expire (120 s by default) first.
    assert_eq!(e.job(id).unwrap().reason, PendingReason::BeginTime);
    assert_eq!(e.job(id).unwrap().eligible_time, 125);
    e.schedule(6);
    assert_eq!(e.job(id).unwrap().state, JobState::Pending);
    e.on_timer(125);
    e.schedule(125);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    assert_ne!(
        e.job(id).unwrap().alloc.as_ref().unwrap().nodes[0].node.0,
        0
    );
}

#[test]
fn hold_release_update_and_requeue() {
    let mut e = engine();
    let mut d = desc();
    d.min_nodes = Some(4);
    d.exclusive = true;
    let a = submit(&mut e, d.clone(), 0);
    let b = submit(&mut e, d, 0);
    e.on_hold(b, true, &user()).unwrap();
    assert_eq!(e.job(b).unwrap().reason, PendingReason::JobHeldUser);
    e.on_release(b, &user()).unwrap();
    e.schedule(1);
    assert_eq!(e.job(b).unwrap().reason, PendingReason::Resources);
    let u = proto::JobUpdate {
        time_limit: Some(TimeLimit::Minutes(5)),
        ..Default::default()
    };
    e.on_update_job(b, u, &user(), 1).unwrap();
    assert_eq!(e.job(b).unwrap().time_limit, TimeLimit::Minutes(5));
    let u = proto::JobUpdate {
        min_nodes: Some(2),
        ..Default::default()
    };
    // Slurm 22.05: `scontrol update jobid=<running> NumNodes=5` says
    // "Requested operation not supported on this system for job N".
    assert_eq!(
        e.on_update_job(a, u, &user(), 1),
        Err(SlurmError::NotSupported)
    );
    e.on_requeue(a, false, &user(), 2).unwrap();
    assert_eq!(e.job(a).unwrap().state, JobState::Pending);
    assert!(e.job(a).unwrap().completing);
    e.on_job_exited(
        a,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        3,
    )
    .unwrap();
    assert!(!e.job(a).unwrap().completing);
    assert_eq!(e.job(a).unwrap().state, JobState::Pending);
    assert_invariants(&e);
}

/// The subjects of the mails among `cmds`, with their user.
fn mails(cmds: &[Command]) -> Vec<(String, String, bool)> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::Mail {
                user,
                default_user,
                subject,
            } => Some((subject.clone(), user.clone(), *default_user)),
            _ => None,
        })
        .collect()
}

#[test]
fn mail_types_mail_at_begin_requeue_and_end() {
    let mut e = engine();
    let mut d = desc();
    d.mail_type = model::mail::ALL;
    d.user = "alice".into();
    let a = submit(&mut e, d.clone(), 0);
    let sent = mails(&e.take_commands());
    assert_eq!(
        sent,
        [(
            format!("Slurm Job_id={a} Name=job Began, Queued time 00:00:00"),
            "alice".into(),
            true
        )]
    );
    e.on_requeue(a, false, &user(), 2).unwrap();
    let sent = mails(&e.take_commands());
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].0, format!("Slurm Job_id={a} Name=job Requeued"));
    // The requeued run's end is no mail; nor is a job without --mail-type.
    e.on_job_exited(
        a,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        3,
    )
    .unwrap();
    let b = submit(&mut e, desc(), 3);
    e.on_job_exited(b, "node1", ExitCode::default(), None, 4)
        .ok();
    assert_eq!(mails(&e.take_commands()), []);
    // FAIL (in ALL) names a failed end; END alone says Ended.
    d.mail_user = Some("ops".into());
    let c = submit(&mut e, d.clone(), 10);
    let node = e.job(c).unwrap().alloc.as_ref().unwrap().nodes[0].node;
    let node = e.nodes[node.0 as usize].conf.name.clone();
    e.take_commands();
    e.on_job_exited(c, &node, ExitCode { code: 2, signal: 0 }, None, 75)
        .unwrap();
    assert_eq!(
        mails(&e.take_commands()),
        [(
            format!("Slurm Job_id={c} Name=job Failed, Run time 00:01:05, FAILED, ExitCode 2"),
            "ops".into(),
            false
        )]
    );
    d.mail_type = model::mail::END;
    let f = submit(&mut e, d, 80);
    let node = e.job(f).unwrap().alloc.as_ref().unwrap().nodes[0].node;
    let node = e.nodes[node.0 as usize].conf.name.clone();
    e.take_commands();
    e.on_job_exited(f, &node, ExitCode { code: 1, signal: 0 }, None, 81)
        .unwrap();
    assert_eq!(
        mails(&e.take_commands())[0].0,
        format!("Slurm Job_id={f} Name=job Ended, Run time 00:00:01, FAILED, ExitCode 1")
    );
}

#[test]
fn rle_counts_form() {
    assert_eq!(env::rle_counts(&[2, 2, 2, 1]), "2(x3),1");
    assert_eq!(env::rle_counts(&[1]), "1");
}

#[test]
fn unknown_features_are_refused() {
    let mut e = engine();
    let mut d = desc();
    d.constraint = Some("fast&big".into());
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::InvalidFeature
    );
    let mut d = desc();
    d.constraint = Some("a&".into());
    assert_eq!(
        e.on_submit(d, &user(), 0).unwrap_err(),
        SlurmError::InvalidFeature
    );
}

#[test]
fn accounting_records_follow_the_job() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 10);
    let recs: Vec<proto::AcctJob> = e
        .take_commands()
        .into_iter()
        .filter_map(|c| match c {
            Command::AcctRecord(r) => Some(*r),
            _ => None,
        })
        .collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].state, JobState::Pending);
    assert_eq!(recs[1].state, JobState::Running);
    assert_eq!(recs[1].alloc_tres, "billing=1,cpu=1,mem=500M,node=1");
    e.on_cancel(id, None, proto::SignalScope::Steps, &user(), 11)
        .unwrap();
    e.on_job_exited(
        id,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        12,
    )
    .unwrap();
    let last = e.acct_job(id, 12).unwrap();
    assert_eq!(last.state, JobState::Cancelled);
    assert_eq!(last.cancelled_by, Some(1000));
    assert_eq!(last.steps[0].state, JobState::Cancelled);
    assert_eq!(last.steps[0].exit_code.to_string(), "0:15");
}

#[test]
fn job_query_filters_by_user_partition_and_activity_and_brief_leaves_out_details() {
    let mut e = engine();
    let mut d = desc();
    d.work_dir = "/home/alice".into();
    let a = submit(&mut e, d.clone(), 1);
    let mut g = desc();
    g.partitions = vec!["gpu".into()];
    let b = e.on_submit(g, &other(), 2).unwrap().job_id;
    let mut held = desc();
    held.hold = true;
    let c = submit(&mut e, held, 3);
    e.on_cancel(c, None, proto::SignalScope::Steps, &user(), 4)
        .unwrap();
    assert_eq!(e.job(c).unwrap().state, JobState::Cancelled);
    let ids = |f: &proto::JobFilter| -> Vec<JobId> {
        e.job_query(f, 5).jobs.iter().map(|j| j.job_id).collect()
    };
    let all = proto::JobFilter::default();
    assert_eq!(ids(&all), vec![a, b, c]);
    let alice = proto::JobFilter {
        users: vec!["alice".into()],
        ..all.clone()
    };
    assert_eq!(ids(&alice), vec![a, c]);
    let by_uid = proto::JobFilter {
        users: vec!["1001".into()],
        ..all.clone()
    };
    assert_eq!(ids(&by_uid), vec![b]);
    let gpu = proto::JobFilter {
        partitions: vec!["gpu".into()],
        ..all.clone()
    };
    assert_eq!(ids(&gpu), vec![b]);
    let active = proto::JobFilter {
        active_only: true,
        ..all.clone()
    };
    assert_eq!(ids(&active), vec![a, b]);
    let one = proto::JobFilter {
        job_ids: vec![c.0],
        ..all.clone()
    };
    assert_eq!(ids(&one), vec![c]);
    let full = &e.job_query(&all, 5).jobs[0];
    let brief = &e
        .job_query(&proto::JobFilter { brief: true, ..all }, 5)
        .jobs[0];
    assert_eq!(full.work_dir, "/home/alice");
    assert!(brief.work_dir.is_empty() && brief.tres.is_empty());
    assert_eq!(
        (brief.job_id, &brief.user, &brief.partition, brief.num_cpus),
        (full.job_id, &full.user, &full.partition, full.num_cpus)
    );
    // Omitted text fields come empty; the others as in the brief form.
    let filter = proto::JobFilter {
        brief: true,
        omit: vec![proto::JobField::User, proto::JobField::Qos],
        ..proto::JobFilter::default()
    };
    let projected = &e.job_query(&filter, 5).jobs[0];
    let mut expected = brief.clone();
    filter.strip(&mut expected);
    assert!(projected.user.is_empty() && projected.qos.is_empty());
    assert_eq!(projected, &expected);
    assert_eq!(projected.partition, "debug");
}

#[test]
fn pending_jobs_carry_the_backfill_plan_and_short_jobs_backfill() {
    let mut e = engine();
    let timed = |nodes: u32, minutes: u32| JobDesc {
        min_nodes: Some(nodes),
        ntasks: Some(nodes * 2),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        partitions: vec!["debug".into()],
        ..desc()
    };
    // Three nodes busy for an hour, one free.
    let long = e.on_submit(timed(3, 60), &user(), 0).unwrap().job_id;
    e.schedule(0);
    // The whole cluster for an hour: planned when the long job ends.
    let wide = e.on_submit(timed(4, 60), &user(), 10).unwrap().job_id;
    // Ten minutes on one node: starts now on the free node, it delays nothing.
    let short = e.on_submit(timed(1, 10), &user(), 10).unwrap().job_id;
    // Two hours on one node: would delay the wide job's plan, so waits.
    let late = e.on_submit(timed(1, 120), &user(), 10).unwrap().job_id;
    e.schedule(10);
    assert_invariants(&e);
    assert_eq!(e.job(long).unwrap().state, JobState::Running);
    assert_eq!(e.job(short).unwrap().state, JobState::Running);
    assert_eq!(e.job(wide).unwrap().state, JobState::Pending);
    assert_eq!(e.job(late).unwrap().state, JobState::Pending);
    let plan = e.planned(wide).expect("wide job planned");
    assert_eq!(plan.start, 3600);
    assert_eq!(plan.nodes().len(), 4);
    let info = e.job_list(10);
    let wide_info = info.jobs.iter().find(|j| j.job_id == wide).unwrap();
    assert_eq!(wide_info.start_time, Some(3600));
    assert_eq!(wide_info.end_time, Some(7200));
    assert_eq!(
        wide_info.sched_nodes,
        vec!["node1", "node2", "node3", "node4"]
    );
    assert_eq!(wide_info.reason, PendingReason::Resources);
    let late_info = info.jobs.iter().find(|j| j.job_id == late).unwrap();
    // One reservation per partition by default (bf_job_part_count_reserve
    // = 1), which the wide job holds; the late job asks for a quarter of
    // the partition, so it gets a plan of its own as well
    // (bf_slowdown_reserve=1, bf_slowdown_reserve_width=25), after the
    // wide job's.
    assert_eq!(late_info.start_time, Some(7200));
    assert_eq!(late_info.reason, PendingReason::Priority);
    // Narrower than a quarter it would have none.
    let mut narrow = e.sched_config().clone();
    narrow.bf_slowdown_reserve_width = 26;
    e.set_sched_config(narrow);
    e.schedule(20);
    let late_info = e
        .job_list(20)
        .jobs
        .into_iter()
        .find(|j| j.job_id == late)
        .unwrap();
    assert_eq!(late_info.start_time, None);
    assert_eq!(late_info.reason, PendingReason::Priority);
}

/// With `bf_order=shortest` (the default) the jobs that can only backfill
/// take the holes shortest first; with `bf_order=priority` (Slurm's order)
/// in priority order.
#[test]
fn backfill_tries_the_shortest_jobs_first() {
    for (order, started) in [
        (sched::BackfillOrder::Shortest, ["short", "first"]),
        (sched::BackfillOrder::Priority, ["first", "second"]),
    ] {
        let mut e = engine();
        let mut cfg = e.sched_config().clone();
        cfg.bf_order = order;
        e.set_sched_config(cfg);
        let job = |nodes: u32, ntasks: u32, minutes: u32| JobDesc {
            min_nodes: Some(nodes),
            ntasks: Some(ntasks),
            time_limit: Some(TimeLimit::Minutes(minutes)),
            partitions: vec!["debug".into()],
            ..desc()
        };
        // Three nodes busy for an hour; the whole cluster planned after.
        e.on_submit(job(3, 6, 60), &user(), 0).unwrap();
        e.schedule(0);
        let wide = e.on_submit(job(4, 8, 60), &user(), 10).unwrap().job_id;
        // One CPU each (an eighth of the partition, no plan of their
        // own), all done before the plan: the free node's two CPUs take
        // two of them.
        let names = ["first", "second", "short"];
        let ids: Vec<JobId> = [50, 50, 10]
            .iter()
            .map(|m| e.on_submit(job(1, 1, *m), &user(), 10).unwrap().job_id)
            .collect();
        e.schedule(10);
        assert_invariants(&e);
        assert_eq!(e.planned(wide).map(|p| p.start), Some(3600), "{order:?}");
        for (name, id) in names.iter().zip(&ids) {
            let running = e.job(*id).unwrap().state == JobState::Running;
            assert_eq!(running, started.contains(name), "{order:?} {name}");
        }
    }
}

#[test]
fn scheduler_type_builtin_is_first_come_first_served() {
    let text = format!("{CONF}SchedulerType=sched/builtin\n");
    let mut e = engine_on(&text);
    assert_eq!(e.sched_config().policy, sched::Policy::Fcfs);
    let timed = |nodes: u32, minutes: u32| JobDesc {
        min_nodes: Some(nodes),
        ntasks: Some(nodes * 2),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        partitions: vec!["debug".into()],
        ..desc()
    };
    e.on_submit(timed(3, 60), &user(), 0).unwrap();
    e.schedule(0);
    let wide = e.on_submit(timed(4, 60), &user(), 10).unwrap().job_id;
    let short = e.on_submit(timed(1, 10), &user(), 10).unwrap().job_id;
    e.schedule(10);
    assert_eq!(e.job(wide).unwrap().state, JobState::Pending);
    assert_eq!(e.job(short).unwrap().state, JobState::Pending);
    assert!(e.planned(wide).is_none());
}

#[test]
fn records_in_pieces_cover_every_job_once() {
    let mut e = engine();
    for i in 0..5 {
        submit(&mut e, desc(), i);
    }
    let all: Vec<u32> = e.all_records(9).iter().map(|r| r.job_id.0).collect();
    let mut pieces = Vec::new();
    let mut cursor = None;
    loop {
        let (recs, more) = e.records_after(cursor, 2, 9);
        pieces.extend(recs.iter().map(|r| r.job_id.0));
        match more {
            Some(last) => cursor = Some(last),
            None => break,
        }
    }
    assert_eq!(all, vec![1, 2, 3, 4, 5]);
    assert_eq!(pieces, all);
}

#[test]
fn multifactor_priority_weighs_size_partition_and_fairshare_and_usage_lowers_it() {
    let text = format!(
        "{CONF}PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\n\
         PriorityWeightJobSize=1000\nPriorityWeightPartition=1000\nPriorityCalcPeriod=1\n\
         SlurmdTimeout=0\n"
    );
    let mut e = engine_on(&text);
    // alice runs a job on every CPU for ten minutes.
    for _ in 0..8 {
        submit(&mut e, desc(), 0);
    }
    let mut held = desc();
    held.hold = true;
    let a = e.on_submit(held.clone(), &user(), 0).unwrap().job_id;
    let b = e.on_submit(held, &other(), 0).unwrap().job_id;
    // Before any usage both users rank alike: 1 CPU of 8 on 1 node of 4
    // is a job size of 0.1875 (188 of 1000), the only partition factor 1.
    let f = *e.job(a).unwrap().prio_factors.clone().unwrap();
    assert_eq!((f.jobsize, f.partition), (187.5, 1000.0));
    e.on_timer(600);
    let list = e.priority_list();
    let fs = |id: JobId| {
        list.jobs
            .iter()
            .find(|j| j.job_id == id)
            .unwrap()
            .factors
            .fairshare
    };
    assert!(
        fs(a) < fs(b),
        "alice used the cluster: {} vs {}",
        fs(a),
        fs(b)
    );
    assert!(e.job(a).unwrap().base_priority < e.job(b).unwrap().base_priority);
    // One job's factors alone (the dashboard's job page): the same row,
    // nothing for a running job or one that does not exist.
    let one = e.priority_list_of(&[b.0, 1, 999_999]);
    assert_eq!(one.weights, list.weights);
    assert_eq!(one.jobs.len(), 1);
    assert_eq!(Some(&one.jobs[0]), list.jobs.iter().find(|j| j.job_id == b));
    // The usage shows in sshare's rows, decayed only slightly (half-life 7 days).
    let rows = e.share_rows();
    let alice = rows.iter().find(|r| r.user == "alice").unwrap();
    assert!(alice.raw_usage > 8.0 * 600.0 * 0.99, "{alice:?}");
    assert_eq!(alice.fairshare, Some(0.5));
}

#[test]
fn job_size_relative_to_time_and_memory_and_gpu_tres_weights() {
    let text = format!(
        "{CONF}PriorityType=priority/multifactor\nPriorityWeightJobSize=1000\n\
         PriorityFlags=SMALL_RELATIVE_TO_TIME\nPriorityWeightTRES=CPU=1000,Mem=2000,GRES/gpu=4000\n\
         SlurmdTimeout=0\n"
    );
    let cfg = config(&text);
    let mut e = Engine::new(&cfg, 0);
    let sized = |tasks: u32, minutes: u32| JobDesc {
        ntasks: Some(tasks),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        hold: true,
        ..desc()
    };
    // All 8 CPUs for one minute is the largest size for its time: 1.
    let whole = e.on_submit(sized(8, 1), &user(), 0).unwrap().job_id;
    // 4 CPUs for an hour: 4 / 60 / 8.
    let long = e.on_submit(sized(4, 60), &user(), 0).unwrap().job_id;
    let mut gpu = sized(2, 60);
    gpu.gres = vec![model::Gres::parse("gpu:2").unwrap()];
    let gpu = e.on_submit(gpu, &user(), 0).unwrap().job_id;
    let mut in_gpu = sized(2, 30);
    in_gpu.partitions = vec!["gpu".into()];
    let in_gpu = e.on_submit(in_gpu, &user(), 0).unwrap().job_id;
    let f = |id: JobId| *e.job(id).unwrap().prio_factors.clone().unwrap();
    assert_eq!(f(whole).jobsize, 1000.0);
    assert!((f(long).jobsize - 1000.0 * 4.0 / 60.0 / 8.0).abs() < 1e-9);
    // 2 of the partition's 8 CPUs, 1,000 of its 16,000 MB (DefMemPerCPU
    // 500), 2 of its 4 GPUs.
    let tres: std::collections::BTreeMap<String, f64> = f(gpu).tres.into_iter().collect();
    assert_eq!(tres["CPU"], 250.0);
    assert_eq!(tres["Mem"], 125.0);
    assert_eq!(tres["GRES/gpu"], 2000.0);
    // CPUs count against the job's partition too: 2 of gpu's 4.
    let tres: std::collections::BTreeMap<String, f64> = f(in_gpu).tres.into_iter().collect();
    assert_eq!(tres["CPU"], 500.0);
}

#[test]
fn usage_reset_periods_start_at_local_midnight_of_their_day() {
    use crate::priority::usage_reset_between as reset;
    // 2026-12-02T23:00Z .. 2026-12-03T00:30Z crosses UTC midnight.
    assert_eq!(reset("DAILY", 1796252400, 1796257800, 0), Some(1796256000));
    assert_eq!(reset("DAILY", 1796256000, 1796257800, 0), None);
    // One hour east of UTC, local midnight was at 23:00Z.
    assert_eq!(
        reset("DAILY", 1796248800, 1796254200, 3600),
        Some(1796252400)
    );
    // 2026-12-06 is a Sunday.
    assert_eq!(reset("WEEKLY", 1796472000, 1796518800, 0), Some(1796515200));
    assert_eq!(reset("WEEKLY", 1796252400, 1796257800, 0), None);
    assert_eq!(
        reset("MONTHLY", 1796079600, 1796083800, 0),
        Some(1796083200)
    );
    assert_eq!(
        reset("QUARTERLY", 1790809200, 1790813400, 0),
        Some(1790812800)
    );
    assert_eq!(reset("QUARTERLY", 1796079600, 1796083800, 0), None);
    assert_eq!(reset("YEARLY", 1798758000, 1798762200, 0), Some(1798761600));
    assert_eq!(reset("NONE", 1798758000, 1798762200, 0), None);
}

#[test]
fn usage_is_forgotten_when_its_reset_period_starts() {
    let text = format!(
        "{CONF}PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\n\
         PriorityCalcPeriod=1\nPriorityDecayHalfLife=0\nPriorityUsageResetPeriod=DAILY\n\
         SlurmdTimeout=0\n"
    );
    let cfg = config(&text);
    // 2026-12-02T23:00Z; midnight is an hour later.
    let t0 = 1796252400;
    let mut e = Engine::new(&cfg, t0);
    e.on_node_registered(reg("node1", 2, 4000), t0).unwrap();
    let id = submit(&mut e, desc(), t0);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    let usage = |e: &Engine| {
        e.share_rows()
            .iter()
            .find(|r| r.user == "alice")
            .map_or(0.0, |r| r.raw_usage)
    };
    e.on_timer(t0 + 1800);
    assert_eq!(usage(&e), 1800.0);
    // At 00:10 only the ten minutes since midnight count.
    e.on_timer(t0 + 4200);
    assert_eq!(usage(&e), 600.0);
}

/// A pass after submissions only (nothing came free) tries the new jobs,
/// the planned ones and the first blocked ones: a new job that fits beside
/// the plan starts, one that cannot waits behind it, and the plan holds.
#[test]
fn passes_after_submissions_only_start_what_fits_and_keep_the_plan() {
    let mut e = engine();
    let job = |tasks: u32, minutes: u32| JobDesc {
        ntasks: Some(tasks),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        ..desc()
    };
    // 6 of the 8 CPUs until 600.
    let a = submit(&mut e, job(6, 10), 0);
    assert_eq!(e.job(a).unwrap().state, JobState::Running);
    // The whole cluster: planned at 600.
    let b = submit(&mut e, job(8, 10), 1);
    assert_eq!(e.job(b).unwrap().reason, PendingReason::Resources);
    assert_eq!(e.planned(b).map(|p| p.start), Some(600));
    // Needs more than is free: waits behind b, whose plan holds.
    let c = submit(&mut e, job(8, 10), 2);
    assert_eq!(e.job(c).unwrap().reason, PendingReason::Priority);
    assert_eq!(e.planned(b).map(|p| p.start), Some(600));
    // Fits in the 2 free CPUs and ends before 600: starts at once.
    let s = submit(&mut e, job(2, 5), 3);
    assert_eq!(e.job(s).unwrap().state, JobState::Running);
    // Nothing free now: waits.
    let l = submit(&mut e, job(1, 60), 4);
    assert_eq!(e.job(l).unwrap().reason, PendingReason::Priority);
    assert_eq!(e.planned(b).map(|p| p.start), Some(600));
    // When a ends, the whole queue is looked at again.
    e.on_job_exited(a, "node1", ExitCode::default(), None, 100)
        .unwrap();
    e.schedule(100);
    assert_eq!(e.job(b).unwrap().state, JobState::Pending);
    assert_eq!(e.planned(b).map(|p| p.start), Some(303));
    assert_invariants(&e);
}

#[test]
fn streamed_rows_are_the_answer_in_parts() {
    let mut e = engine();
    // More than two chunks of rows, with texts new in every part.
    let n = proto::JobRows::CHUNK * 2 + 100;
    for i in 0..n {
        let mut d = desc();
        d.hold = true;
        d.name = format!("job{}", i / 7);
        e.on_submit(d, &user(), 1).unwrap();
    }
    let filter = proto::JobFilter {
        brief: true,
        rows: true,
        stream: true,
        ..proto::JobFilter::default()
    };
    let whole = e.job_rows_encoded(&filter, 2).decoded().unwrap();
    assert_eq!(whole, e.job_rows(&filter, 2));
    let mut parts = Vec::new();
    let last = e.job_rows_parts(&filter, 2, |p| {
        parts.push(std::mem::take(p));
        true
    });
    assert_eq!(parts.len(), 2);
    // Each part decoded on its own, as the command reads it, then
    // appended in order.
    let mut got: Option<proto::JobRows> = None;
    for p in parts.into_iter().chain([last]) {
        let p = p.decoded().unwrap();
        match &mut got {
            Some(g) => g.append(p),
            None => got = Some(p),
        }
    }
    assert_eq!(got.unwrap(), whole);
    // A part not taken stays in the answer.
    let mut offered = 0;
    let all = e.job_rows_parts(&filter, 2, |_| {
        offered += 1;
        false
    });
    assert_eq!(offered, 2);
    assert_eq!(all.decoded().unwrap(), whole);
}

#[test]
fn compact_rows_carry_what_the_brief_jobs_carry() {
    let mut e = engine();
    let timed = |nodes: u32, minutes: u32| JobDesc {
        min_nodes: Some(nodes),
        ntasks: Some(nodes * 2),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        partitions: vec!["debug".into()],
        ..desc()
    };
    // Running, then ended (keeps where it ran), a planned pending job,
    // one waiting without a plan, a held one in two partitions, an array.
    let done = e.on_submit(timed(1, 5), &user(), 0).unwrap().job_id;
    e.schedule(0);
    e.on_job_exited(done, "node1", ExitCode { code: 0, signal: 0 }, None, 3)
        .unwrap();
    e.on_submit(timed(3, 60), &user(), 4).unwrap();
    e.schedule(4);
    e.on_submit(timed(4, 60), &user(), 10).unwrap();
    e.on_submit(timed(1, 120), &other(), 10).unwrap();
    let mut held = desc();
    held.hold = true;
    held.partitions = vec!["debug".into(), "gpu".into()];
    held.account = Some("physics".into());
    e.on_submit(held, &user(), 11).unwrap();
    let mut array = desc();
    array.array = Some("0-9%2".into());
    array.hold = true;
    e.on_submit(array, &user(), 12).unwrap();
    e.schedule(12);
    let omits = [
        vec![],
        vec![proto::JobField::User, proto::JobField::Qos],
        proto::JobField::ALL.to_vec(),
    ];
    for omit in omits {
        let filter = proto::JobFilter {
            brief: true,
            omit,
            rows: true,
            ..proto::JobFilter::default()
        };
        let brief = e.job_query(&filter, 20);
        let rows = e.job_rows(&filter, 20);
        // What the controller sends decodes to the same rows.
        assert_eq!(e.job_rows_encoded(&filter, 20).decoded().unwrap(), rows);
        assert_eq!(rows.now, brief.now);
        assert_eq!(rows.len(), brief.jobs.len());
        if filter.omit.is_empty() {
            assert!(brief.jobs.iter().any(|j| !j.nodes.is_empty()));
            assert!(brief.jobs.iter().any(|j| !j.sched_nodes.is_empty()));
            assert!(brief.jobs.iter().any(|j| j.partition.contains(',')));
        }
        assert!(brief.jobs.iter().any(|j| j.array_task_str.is_some()));
        // Compared through the row form: what a row cannot carry (the
        // details a brief job leaves empty anyway) is out of both.
        let expected = proto::JobRows::from_list(&brief, &proto::JobFilter::default());
        for (got, want) in rows.rows().zip(expected.rows()) {
            assert_eq!(
                got.to_info(&rows),
                want.to_info(&expected),
                "{:?}",
                filter.omit
            );
        }
    }
}

#[test]
fn message_timeout_is_read_with_slurms_default() {
    assert_eq!(engine().settings().message_timeout, 10);
    let with = |line: &str| {
        let text = format!("{CONF}{line}\n");
        let cfg = config(&text);
        Engine::new(&cfg, 0).settings().message_timeout
    };
    assert_eq!(with("MessageTimeout=60"), 60);
    // Zero or a word keeps the default rather than never timing out.
    assert_eq!(with("MessageTimeout=0"), 10);
}

/// An engine on `CONF` with MinJobAge=`age` and no node timeouts (as the
/// simulator runs it, with age 0).
fn engine_aged(age: u32) -> Engine {
    let text = CONF.replace(
        "MinJobAge=300",
        &format!("MinJobAge={age}\nSlurmdTimeout=0"),
    );
    engine_on(&text)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Time limits and purges found from the deadline index are those a
    /// look at every job finds (`check_invariants` compares the index with
    /// every job's deadline), and an engine whose passes all look at every
    /// job (`set_full_passes`, no short passes after purges) stays the
    /// same as one without, job for job, through random submissions and
    /// job ends.
    #[test]
    fn deadlines_from_the_index_are_those_of_a_full_look(
        age in 0u32..3,
        events in proptest::collection::vec((0i64..90, 0u8..3, 1u32..4, 1u32..3), 1..60),
    ) {
        let mut short = engine_aged(age);
        let mut full = engine_aged(age);
        full.set_full_passes(true);
        let mut t = 0;
        for (dt, what, tasks, minutes) in events {
            t += dt;
            for e in [&mut short, &mut full] {
                let wake = e.next_wakeup();
                if wake.is_some_and(|w| w <= t) {
                    e.on_timer(wake.unwrap_or(t));
                }
                let running: Vec<(JobId, String)> = e
                    .jobs
                    .values()
                    .filter(|j| j.state == JobState::Running)
                    .map(|j| (j.id, e.nodes[j.ran_on[0].0 as usize].conf.name.clone()))
                    .collect();
                match what {
                    0 => {
                        let d = JobDesc {
                            ntasks: Some(tasks),
                            time_limit: Some(TimeLimit::Minutes(minutes)),
                            ..desc()
                        };
                        e.on_submit(d, &user(), t).unwrap();
                    }
                    _ => {
                        if let Some((id, node)) = running.get(tasks as usize % running.len().max(1)) {
                            e.on_job_exited(*id, node, ExitCode::default(), None, t).unwrap();
                        }
                    }
                }
                e.on_timer(t);
                e.schedule(t);
                e.take_commands();
            }
            proptest::prop_assert_eq!(short.check_invariants(), Vec::<String>::new());
            let table = |e: &Engine| -> Vec<(JobId, JobState)> {
                e.jobs.values().map(|j| (j.id, j.state)).collect()
            };
            proptest::prop_assert_eq!(table(&short), table(&full), "at {}", t);
            proptest::prop_assert_eq!(short.next_wakeup(), full.next_wakeup());
        }
    }
}

#[test]
fn a_node_that_rebooted_loses_the_jobs_it_does_not_list() {
    let mut e = engine();
    let mut r = reg("node1", 2, 4000);
    r.boot_time = 3;
    e.on_node_registered(r.clone(), 100).unwrap();
    let id = submit(&mut e, desc(), 100);
    let mut nr = desc();
    nr.requeue = Some(false);
    let nr = submit(&mut e, nr, 100);
    e.take_commands();
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    assert_eq!(e.job(nr).unwrap().state, JobState::Running);
    // The daemon restarted on the same boot: nothing is lost, even with
    // an empty list (its jobs' ends are reported after the registration).
    r.boot_time = 11;
    e.on_node_registered(r.clone(), 200).unwrap();
    // The host's clock was stepped: the boot time it reports moved, but
    // not past the last contact.
    r.boot_time = 150;
    e.on_node_registered(r.clone(), 300).unwrap();
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    assert_eq!(e.job(nr).unwrap().state, JobState::Running);
    // The host booted after the controller last heard from it: its jobs
    // died with it.
    r.boot_time = 350;
    e.on_node_registered(r, 400).unwrap();
    let j = e.job(id).unwrap();
    assert_eq!(j.state, JobState::Pending);
    assert_eq!(j.restarts, 1);
    assert_eq!(e.job(nr).unwrap().state, JobState::NodeFail);
    assert_invariants(&e);
    let node = e.node("node1").unwrap();
    assert_eq!(node.alloc_cpus, 0);
    // ReturnToService=0 (the default): out of service until an
    // administrator resumes it, with Slurm's reason.
    assert_eq!(node.state.base, model::NodeBase::Down);
    assert_eq!(node.reason.as_deref(), Some("Node unexpectedly rebooted"));
    assert_eq!(node.reason_user.as_deref(), Some("slurm"));
}

#[test]
fn return_to_service_decides_whether_a_rebooted_node_is_used_again() {
    for (rts, usable) in [(0, false), (1, false), (2, true)] {
        let mut e = engine_on(&format!("{CONF}ReturnToService={rts}\n"));
        let mut r = reg("node1", 2, 4000);
        r.boot_time = 3;
        e.on_node_registered(r.clone(), 100).unwrap();
        let id = submit(&mut e, desc(), 100);
        e.take_commands();
        r.boot_time = 350;
        e.on_node_registered(r, 400).unwrap();
        assert_eq!(e.job(id).unwrap().state, JobState::Pending, "rts {rts}");
        let node = e.node("node1").unwrap();
        let down = node.state.base == model::NodeBase::Down;
        assert_eq!(down, !usable, "rts {rts}: {:?}", node.state);
        assert_eq!(
            node.reason.is_none(),
            usable,
            "rts {rts}: {:?}",
            node.reason
        );
        assert_invariants(&e);
    }
}

#[test]
fn a_node_down_for_not_responding_that_rebooted_comes_back_with_return_to_service_1() {
    let mut e = engine_on(&format!("{CONF}ReturnToService=1\nSlurmdTimeout=100\n"));
    let mut r = reg("node1", 2, 4000);
    r.boot_time = 3;
    e.on_node_registered(r.clone(), 100).unwrap();
    e.check_node_timeouts(300);
    let node = e.node("node1").unwrap();
    assert_eq!(node.state.base, model::NodeBase::Down);
    assert_eq!(node.reason.as_deref(), Some("Not responding"));
    // Rebooted while DOWN: its jobs were already gone; it was down only
    // for not responding, so it is used again.
    r.boot_time = 350;
    e.on_node_registered(r, 400).unwrap();
    let node = e.node("node1").unwrap();
    assert_ne!(node.state.base, model::NodeBase::Down);
    assert_eq!(node.reason, None);
}

/// `CONF` with its one default partition only (the gpu one removed): the
/// pass after job ends may then try a prefix of the queue.
fn one_partition(policy: &str) -> Engine {
    one_partition_with(policy, "")
}

/// `one_partition` with more slurm.conf lines.
fn one_partition_with(policy: &str, extra: &str) -> Engine {
    one_partition_on(CONF, policy, extra)
}

/// `one_partition_with` on slurm.conf `conf` (`CONF` or a variant).
fn one_partition_on(conf: &str, policy: &str, extra: &str) -> Engine {
    let text = conf.replace(
        "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP\n",
        "",
    );
    let mut e = engine_on(&format!("{text}SchedulerType={policy}\n{extra}"));
    // The pass over the head of the queue is tried on short queues too.
    e.prefix_min_left_out = 1;
    e
}

/// What a pass decided for every job: state, reason, nodes, and the plans
/// shown (squeue --start), then the planned starts of the requests that
/// stood for arrays' further tasks (by time: which ids they had depends on
/// the order a pass collected the arrays in).
type Decided = (
    Vec<(JobId, JobState, PendingReason, Vec<u32>)>,
    Vec<(JobId, Timestamp)>,
    Vec<Timestamp>,
);

fn decided(e: &Engine) -> Decided {
    let jobs = e
        .jobs
        .values()
        .map(|j| {
            (
                j.id,
                j.state,
                j.reason,
                j.ran_on.iter().map(|n| n.0).collect(),
            )
        })
        .collect();
    let virtual_task = |id: &JobId| id.0 >= crate::array::VIRTUAL_TASK_IDS;
    let plans = e
        .plans
        .iter()
        .filter(|(id, _)| !virtual_task(id))
        .map(|(id, p)| (*id, p.start))
        .collect();
    let mut tasks: Vec<Timestamp> = e
        .plans
        .iter()
        .filter(|(id, _)| virtual_task(id))
        .map(|(_, p)| p.start)
        .collect();
    tasks.sort_unstable();
    (jobs, plans, tasks)
}

/// After job ends, the pass tries the first jobs of the queue only, as many
/// as the free CPUs could take and the next one (which waits for
/// Resources): the jobs behind them, which no free CPU is left for, are not
/// looked at again (their last evaluation stays), and keep the reason
/// Priority a full pass gives them.
#[test]
fn after_job_ends_a_pass_tries_only_the_head_of_the_queue() {
    for policy in ["sched/backfill", "sched/easy"] {
        let mut e = one_partition(policy);
        let mut full = one_partition(policy);
        full.set_full_passes(true);
        let mut ids = Vec::new();
        for e in [&mut e, &mut full] {
            ids.clear();
            for _ in 0..40 {
                ids.push(e.on_submit(desc(), &user(), 10).unwrap().job_id);
            }
            e.schedule(10);
            e.take_commands();
        }
        assert_eq!(decided(&e), decided(&full));
        let last = *ids.last().unwrap();
        assert_eq!(e.job(last).unwrap().last_sched_eval, Some(10));
        for t in [20, 30] {
            for e in [&mut e, &mut full] {
                let running: Vec<(JobId, String)> = e
                    .jobs
                    .values()
                    .filter(|j| j.state == JobState::Running)
                    .take(3)
                    .map(|j| (j.id, e.nodes[j.ran_on[0].0 as usize].conf.name.clone()))
                    .collect();
                for (id, node) in running {
                    e.on_job_exited(id, &node, ExitCode::default(), None, t)
                        .unwrap();
                }
                e.schedule(t);
                e.take_commands();
                assert_invariants(e);
            }
            assert_eq!(decided(&e), decided(&full), "{policy} at {t}");
        }
        // Three more started each time, behind them one waits for
        // Resources, the rest for Priority.
        let started = ids
            .iter()
            .filter(|id| e.job(**id).unwrap().state != JobState::Pending)
            .count();
        assert_eq!(started, 8 + 3 + 3, "{policy}");
        let head = ids[started];
        assert_eq!(e.job(head).unwrap().reason, PendingReason::Resources);
        assert_eq!(e.job(head).unwrap().last_sched_eval, Some(30));
        assert_eq!(e.job(last).unwrap().reason, PendingReason::Priority);
        assert_eq!(e.job(last).unwrap().last_sched_eval, Some(10), "{policy}");
        assert_eq!(full.job(last).unwrap().last_sched_eval, Some(30));
    }
}

/// FCFS tries at most `default_queue_depth` jobs per pass, as Slurm's
/// sched/builtin does; the jobs it did not try start at the pass over the
/// whole queue `sched_interval` later (or at an earlier event's pass),
/// not only at the next event.
#[test]
fn fcfs_tries_the_whole_queue_a_sched_interval_after_stopping_at_its_depth() {
    let mut e = one_partition_with(
        "sched/builtin",
        "SchedulerParameters=default_queue_depth=2\n",
    );
    let ids: Vec<JobId> = (0..7)
        .map(|_| e.on_submit(desc(), &user(), 10).unwrap().job_id)
        .collect();
    let running = |e: &Engine| {
        ids.iter()
            .filter(|id| e.job(**id).unwrap().state == JobState::Running)
            .count()
    };
    e.schedule(10);
    assert_eq!(running(&e), 2, "two tried");
    assert_eq!(e.next_wakeup(), Some(70), "sched_interval 60 s later");
    // An event before then: its pass tries two more.
    e.on_submit(desc(), &user(), 20).unwrap();
    e.schedule(20);
    assert_eq!(running(&e), 4);
    assert_eq!(e.next_wakeup(), Some(70), "still due");
    e.on_timer(70);
    e.schedule(70);
    assert_eq!(running(&e), 7, "the whole queue tried");
    assert_eq!(e.depth_wake, None, "nothing left to try");
    assert_eq!(e.sched_cfg.default_queue_depth, 2, "the depth again");
    assert_invariants(&e);
}

/// An array behind the head of the queue that a pass after job ends
/// leaves out (`freed_prefix`) is still tried as a full pass tries it: one
/// request per task that could start, so every task the freed CPUs hold
/// starts in that pass, not one per pass. (Until the shortcut property
/// tests made arrays, it was tried as one request: one task started.)
#[test]
fn an_array_left_out_of_the_head_of_the_queue_starts_every_task_that_fits() {
    let mut e = one_partition_with(
        "sched/backfill",
        "SchedulerParameters=bf_slowdown_reserve=0\n",
    );
    let hour = |ntasks| JobDesc {
        ntasks: Some(ntasks),
        time_limit: Some(TimeLimit::Minutes(60)),
        ..desc()
    };
    let busy: Vec<JobId> = (0..8)
        .map(|_| e.on_submit(hour(1), &user(), 10).unwrap().job_id)
        .collect();
    e.schedule(10);
    // Three whole-cluster jobs wait: the first holds the plan, the others
    // wait for Priority, so a pass after job ends may leave them out.
    for _ in 0..3 {
        e.on_submit(hour(8), &user(), 11).unwrap();
    }
    let array = e
        .on_submit(
            JobDesc {
                ntasks: Some(1),
                time_limit: Some(TimeLimit::Minutes(10)),
                array: Some("0-3".into()),
                ..desc()
            },
            &user(),
            11,
        )
        .unwrap()
        .job_id;
    e.schedule(11);
    e.take_commands();
    for id in &busy[..3] {
        let node = e.nodes[e.job(*id).unwrap().ran_on[0].0 as usize]
            .conf
            .name
            .clone();
        e.on_job_exited(*id, &node, ExitCode::default(), None, 20)
            .unwrap();
    }
    e.schedule(20);
    let tasks = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running && j.array.as_ref().is_some())
        .count();
    assert_eq!(tasks, 3, "a task on each freed CPU, before the plan");
    assert_eq!(
        e.job(array).unwrap().state,
        JobState::Pending,
        "one task still waits"
    );
    assert_invariants(&e);
}

/// A job in two partitions that waits behind the blocked job of one is
/// the first blocked job of the other: a pass over a new job of that other
/// partition tries it again, and the new job waits behind it for Priority,
/// as after a pass over every job. (Under EASY, which plans only one job,
/// the new job was told Resources, until the shortcut property tests made
/// jobs in two partitions.)
#[test]
fn a_new_job_waits_behind_a_job_first_blocked_in_its_partition_only_through_another() {
    let mut e = engine_on(&format!("{CONF}SchedulerType=sched/easy\n"));
    let job = |ntasks, parts: &[&str]| JobDesc {
        ntasks: Some(ntasks),
        time_limit: Some(TimeLimit::Minutes(60)),
        partitions: parts.iter().map(|p| p.to_string()).collect(),
        ..desc()
    };
    for _ in 0..8 {
        e.on_submit(job(1, &["debug"]), &user(), 10).unwrap();
    }
    e.schedule(10);
    let wide = e.on_submit(job(8, &["debug"]), &user(), 11).unwrap().job_id;
    e.schedule(11);
    let both = e
        .on_submit(job(2, &["debug", "gpu"]), &user(), 12)
        .unwrap()
        .job_id;
    e.schedule(12);
    let gpu = e.on_submit(job(1, &["gpu"]), &user(), 13).unwrap().job_id;
    e.schedule(13);
    let reason = |e: &Engine, id| e.job(id).unwrap().reason;
    assert_eq!(reason(&e, wide), PendingReason::Resources);
    assert_eq!(reason(&e, both), PendingReason::Priority);
    assert_eq!(
        reason(&e, gpu),
        PendingReason::Priority,
        "behind the job first blocked in gpu"
    );
}

/// A job that is being ended (here past its time limit, its node silent)
/// is expected gone a second after each pass, so a plan behind it moves
/// with the clock: a pass over a new job that can only wait makes the plan
/// again, as a full pass does, instead of leaving the last pass's start,
/// which is now. (Found by the shortcut property tests once they downed
/// nodes: a job requeued from a down node stays completing on its other.)
#[test]
fn a_plan_behind_a_job_being_ended_moves_with_the_clock() {
    // One plan only: the new job waits behind it without one of its own.
    let mut e = one_partition_with(
        "sched/backfill",
        "SchedulerParameters=bf_slowdown_reserve=0\n",
    );
    let job = |ntasks, minutes| JobDesc {
        ntasks: Some(ntasks),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        ..desc()
    };
    let over = e.on_submit(job(8, 1), &user(), 10).unwrap().job_id;
    e.schedule(10);
    e.on_timer(71);
    e.schedule(71);
    assert!(
        e.job(over).unwrap().completing,
        "timed out, its node silent"
    );
    let wide = e.on_submit(job(8, 60), &user(), 80).unwrap().job_id;
    e.schedule(80);
    assert_eq!(e.planned(wide).map(|p| p.start), Some(81));
    e.on_submit(job(8, 60), &user(), 90).unwrap();
    e.schedule(90);
    assert_eq!(
        e.planned(wide).map(|p| p.start),
        Some(91),
        "a second from now"
    );
}

/// An FCFS pass that would stop at its depth arms the pass over the whole
/// queue (`depth_wake`), so it is not one the simulator may skip, though
/// it could start nothing: skipped, the whole-queue pass came later than
/// the controller's. (Found by the skip property test once it made jobs
/// that can never run: they use up the depth.)
#[test]
fn an_fcfs_pass_that_would_arm_the_whole_queue_pass_is_not_skipped() {
    let mut e = one_partition_with(
        "sched/builtin",
        "SchedulerParameters=default_queue_depth=2\n",
    );
    let wide = JobDesc {
        ntasks: Some(8),
        ..desc()
    };
    // More nodes than the partition has: they wait for ever.
    let never = JobDesc {
        min_nodes: Some(5),
        max_nodes: Some(5),
        ..desc()
    };
    e.on_submit(wide, &user(), 10).unwrap();
    e.schedule(10);
    e.on_submit(never.clone(), &user(), 11).unwrap();
    e.on_submit(never, &user(), 11).unwrap();
    let waits = e.on_submit(desc(), &user(), 11).unwrap().job_id;
    e.schedule(11);
    assert_eq!(e.next_wakeup(), Some(71), "the depth was reached");
    e.on_timer(71);
    e.schedule(71);
    assert_eq!(e.job(waits).unwrap().state, JobState::Pending);
    assert_eq!(e.depth_wake, None, "the whole queue tried");
    // No CPU is free: the next pass starts nothing, but it stops at the
    // depth again and arms the whole-queue pass.
    e.on_submit(desc(), &user(), 80).unwrap();
    assert!(
        !e.pass_starts_nothing(),
        "it would arm the whole-queue pass"
    );
    e.schedule(80);
    assert_eq!(e.next_wakeup(), Some(140));
}

/// The schedulers the shortcut property tests run: backfill, EASY, FCFS.
const POLICIES: [&str; 3] = ["sched/backfill", "sched/easy", "sched/builtin"];

/// How the shortcut property tests plan blocked jobs that are not first
/// in line (`bf_slowdown_reserve`): not at all, the default (wide jobs at
/// once), or every job once its expansion factor has reached 2 (the
/// events' limits are then minutes, so that some jobs come due).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slowdown {
    Off,
    Default,
    FactorTwo,
}

const SLOWDOWNS: [Slowdown; 3] = [Slowdown::Off, Slowdown::Default, Slowdown::FactorTwo];

/// Two identical engines on one partition for the shortcut property tests
/// under `policy` (a SchedulerType of `POLICIES`), with a plan for every
/// job that waited 20 s (`aging`; under FCFS, two jobs tried per pass
/// instead), with plans for jobs by their slowdown as `slowdown` says,
/// trying the jobs that can only backfill shortest first or in priority
/// order; with the `gpu` partition too (`two_parts`: node3 and node4,
/// 60 minutes at most) or without; with association and QOS limits
/// enforced (`limits`) or without.
fn twin_engines(
    policy: &'static str,
    aging: bool,
    slowdown: Slowdown,
    shortest: bool,
    two_parts: bool,
    limits: bool,
    memory: bool,
) -> (&'static str, Engine, Engine) {
    // Without memory as a resource, jobs that ask for none spread
    // (`sched::spreads`), and with one partition the default plans over
    // the pool whenever every pending job does (`bf_plan=auto`), on nodes
    // otherwise: passes go from one to the other as jobs come and go.
    let conf = if memory {
        CONF.to_string()
    } else {
        CONF.replace(
            "SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=500\n",
            "SelectTypeParameters=CR_Core\n",
        )
    };
    let mut params = Vec::new();
    if aging {
        // FCFS plans nothing: there it tries only two jobs per pass
        // instead, and the whole queue a minute later.
        params.push(if policy == "sched/builtin" {
            "default_queue_depth=2"
        } else {
            "bf_age_reserve=20"
        });
    }
    match slowdown {
        Slowdown::Off => params.push("bf_slowdown_reserve=0"),
        Slowdown::Default => {}
        Slowdown::FactorTwo => {
            params.push("bf_slowdown_reserve=2");
            params.push("bf_slowdown_reserve_width=0");
        }
    }
    params.push(if shortest {
        "bf_order=shortest"
    } else {
        "bf_order=priority"
    });
    let mut extra = format!("SchedulerParameters={}\n", params.join(","));
    if limits {
        extra.push_str("AccountingStorageEnforce=associations,limits,qos\n");
    }
    let make = || {
        let mut e = if two_parts {
            let mut e = engine_on(&format!("{conf}SchedulerType={policy}\n{extra}"));
            e.prefix_min_left_out = 1;
            e
        } else {
            one_partition_on(&conf, policy, &extra)
        };
        if limits {
            // physics (alice's and bob's account) holds 6 CPUs at most,
            // alice runs 3 jobs at most, a user 5 CPUs at most in QOS normal.
            let cpus = |n| proto::acctdb::Limits {
                grp_tres: Some(format!("cpu={n}")),
                ..Default::default()
            };
            let alice = proto::acctdb::Limits {
                max_jobs: Some(3),
                ..Default::default()
            };
            let normal = proto::acctdb::Limits {
                max_tres_per_user: Some("cpu=5".into()),
                ..Default::default()
            };
            e.on_assoc_tables(crate::limits::tests::tables(cpus(6), alice, normal));
        }
        e
    };
    (policy, make(), make())
}

/// One random event of the shortcut property tests, at `t`, then the
/// timers due. `what` 0 or 1 submits a job of `tasks` tasks with a limit
/// of `minutes` hours (none for 0; minutes instead with `short_limits`):
/// held when `what` is 1 with 3, niced with 2 and one task, to begin 30 s
/// later when `what` is 1 with 1, on one node when `shape` is 1,
/// exclusive when it is 2, an array of three jobs of `tasks` tasks each
/// when it is 4, on 5 nodes when it is 5 (more than the partition
/// has: it waits for ever, with reason PartitionNodeLimit), and in the `gpu`
/// partition (even `tasks`) or in both (odd) when it is 3 (refused where
/// there is no `gpu` partition), with one or two GPUs per node when it is
/// 6 or 7, with a minimum time of half its limit (`--time-min`) when it
/// is 8, on the node picked by `tasks` (`--nodelist`) when it is 9, on
/// any node but that one (`--exclude`) when it is 10, and with 3,000 MB
/// of a node's 4,000 (`--mem`) when it is 11. `what` 2 ends
/// one running (or completing, after its time limit) job and 3 ends
/// three, picked by `tasks`. `what` 4 submits a job of one or two tasks
/// that depends on an earlier job picked by `tasks` (afterok, afterany,
/// afternotok by `minutes`; a singleton for 3); 5 cancels (`minutes` 0),
/// holds (1) or releases (2, 3) a pending job picked by `tasks`; 6
/// drains (`minutes` 0), downs (2) or resumes (1, 3) the node picked by
/// `tasks`; 7 has an administrator change a pending job picked by
/// `tasks`: its time limit (`minutes` 0), nice (1), priority (2) or
/// tasks (3). A plain job submitted with `what` 1 is another user's.
fn play(
    e: &mut Engine,
    t: Timestamp,
    (what, tasks, minutes, shape): (u8, u32, u32, u8),
    short_limits: bool,
) {
    let running: Vec<(JobId, String)> = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running || j.completing)
        .map(|j| (j.id, e.nodes[j.ran_on[0].0 as usize].conf.name.clone()))
        .collect();
    match what {
        0 | 1 => {
            // Hours: no job times out (a job that does stays completing
            // until it is picked to end). Minutes: jobs come due for a
            // plan by their slowdown within the events' few minutes.
            let scale = if short_limits { 3 } else { 60 };
            let d = JobDesc {
                ntasks: Some(tasks),
                time_limit: (minutes > 0).then_some(TimeLimit::Minutes(minutes * scale)),
                hold: what == 1 && minutes == 3,
                nice: if minutes == 2 && tasks == 1 { 1_000 } else { 0 },
                begin_time: (what == 1 && minutes == 1).then_some(t + 30),
                // On one node: free CPUs spread over nodes may not hold it.
                min_nodes: match shape {
                    1 => Some(1),
                    5 => Some(5),
                    _ => None,
                },
                max_nodes: match shape {
                    1 => Some(1),
                    5 => Some(5),
                    _ => None,
                },
                exclusive: shape == 2,
                array: (shape == 4).then(|| "0-2".to_string()),
                // node3 and node4 have two GPUs each.
                gres: match shape {
                    6 | 7 => vec![model::Gres {
                        name: "gpu".into(),
                        type_: None,
                        count: u64::from(shape) - 5,
                    }],
                    _ => Vec::new(),
                },
                // It may start with half its limit where that fits a hole.
                time_min: (shape == 8 && minutes > 0)
                    .then_some(TimeLimit::Minutes((minutes * scale / 2).max(1))),
                // Named nodes, nodes left out, most of a node's memory.
                nodelist: match shape {
                    9 => vec![format!("node{}", 1 + tasks % 4)],
                    _ => Vec::new(),
                },
                exclude: match shape {
                    10 => vec![format!("node{}", 1 + tasks % 4)],
                    _ => Vec::new(),
                },
                mem_per_node: (shape == 11).then_some(3_000),
                // Where there is a `gpu` partition (else the default).
                partitions: match (shape, tasks % 2) {
                    (3, 0) => vec!["gpu".to_string()],
                    (3, _) => vec!["debug".to_string(), "gpu".to_string()],
                    _ => Vec::new(),
                },
                ..desc()
            };
            // Another user's (fair-share tells them apart).
            let who = if what == 1 && minutes == 0 {
                Identity {
                    uid: 1001,
                    gid: 1001,
                    user: "bob".into(),
                    host: "h".into(),
                }
            } else {
                user()
            };
            let _ = e.on_submit(d, &who, t);
        }
        4 => {
            // A job that depends on an earlier one (or a singleton).
            let ids: Vec<JobId> = e.jobs.values().map(|j| j.id).collect();
            let Some(on) = ids.get(tasks as usize % ids.len().max(1)) else {
                return;
            };
            let dependency = match minutes {
                0 => format!("afterok:{on}"),
                1 => format!("afterany:{on}"),
                2 => format!("afternotok:{on}"),
                _ => "singleton".to_string(),
            };
            let d = JobDesc {
                ntasks: Some(1 + tasks % 2),
                time_limit: Some(TimeLimit::Minutes(if short_limits { 3 } else { 60 })),
                dependency: Some(dependency),
                exclusive: shape == 2,
                ..desc()
            };
            let _ = e.on_submit(d, &user(), t);
        }
        5 => {
            // A pending job cancelled, held or released.
            let Some(id) = nth_pending(e, tasks) else {
                return;
            };
            let _ = match minutes {
                0 => e.on_cancel(id, None, proto::SignalScope::Steps, &user(), t),
                1 => e.on_hold(id, true, &user()),
                _ => e.on_release(id, &user()),
            };
        }
        6 => {
            // An administrator drains, resumes or downs a node.
            let state = match minutes {
                0 => NodeStateRequest::Drain,
                2 => NodeStateRequest::Down,
                _ => NodeStateRequest::Resume,
            };
            let node = format!("node{}", 1 + tasks % 4);
            let _ = e.on_update_node(&[node], Some(state), Some("test".into()), &admin(), t);
        }
        7 => {
            // An administrator changes a pending job.
            let Some(id) = nth_pending(e, tasks) else {
                return;
            };
            let u = match minutes {
                0 => JobUpdate {
                    time_limit: Some(TimeLimit::Minutes(if short_limits { 6 } else { 120 })),
                    ..JobUpdate::default()
                },
                1 => JobUpdate {
                    nice: Some(500),
                    ..JobUpdate::default()
                },
                2 => JobUpdate {
                    priority: Some(1_000_000),
                    ..JobUpdate::default()
                },
                _ => JobUpdate {
                    ntasks: Some(1),
                    ..JobUpdate::default()
                },
            };
            let _ = e.on_update_job(id, u, &admin(), t);
        }
        _ => {
            let ends = if what == 3 { 3 } else { 1 };
            let first = tasks as usize % running.len().max(1);
            for (id, node) in running.iter().skip(first).take(ends) {
                e.on_job_exited(*id, node, ExitCode::default(), None, t)
                    .unwrap();
            }
        }
    }
    if e.next_wakeup().is_some_and(|w| w <= t) {
        e.on_timer(t);
    }
}

/// The pending job `k` picks (`play`), counting round the pending jobs.
fn nth_pending(e: &Engine, k: u32) -> Option<JobId> {
    let pending: Vec<JobId> = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Pending)
        .map(|j| j.id)
        .collect();
    pending.get(k as usize % pending.len().max(1)).copied()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
    /// The pass after job ends over a prefix of the queue
    /// (`Engine::freed_prefix`), and the short pass after submissions
    /// that leaves out the older jobs it shows would wait
    /// (`Engine::walk_pass`), decide what passes without them decide:
    /// the same starts on the same nodes, the same reasons, the same plans,
    /// through random submissions (of 1 to 3 tasks, with and without a time
    /// limit, some held, some to begin later, some of lower priority, some
    /// on one node, some exclusive, arrays, jobs that can never run, jobs
    /// in a second partition or in both, GPU jobs, jobs with a minimum
    /// time, jobs with dependencies, another user's jobs), job ends,
    /// cancels, holds, releases, administrators' changes to pending jobs,
    /// and nodes drained, downed and resumed (`play`), on one partition or
    /// two, with association and QOS limits enforced or not, under
    /// backfill (with and without plans for jobs that waited, for wide
    /// jobs or for every job by a slowdown of 2, in both backfill orders),
    /// EASY and FCFS; compared with full passes (`set_full_passes`), so
    /// the other shortcuts are checked too. (The
    /// cases kept in proptest-regressions as aa8b6c4a and f6566d03 once
    /// differed: a job held to one node was not placed on an idle node
    /// behind a node with room for part of it, so it waited with a plan
    /// that a backfilled job then made stale; `placement::pick` now puts
    /// it where it fits whole.)
    #[test]
    fn passes_after_job_ends_decide_as_without_them(
        policy in proptest::sample::select(POLICIES.to_vec()),
        aging in proptest::bool::ANY,
        slowdown in proptest::sample::select(SLOWDOWNS.to_vec()),
        shortest in proptest::bool::ANY,
        two_parts in proptest::bool::ANY,
        limits in proptest::bool::ANY,
        memory in proptest::bool::ANY,
        events in proptest::collection::vec((0i64..6, 0u8..8, 1u32..4, 0u32..4, 0u8..12), 1..80),
    ) {
        let (policy, mut short, mut full) =
            twin_engines(policy, aging, slowdown, shortest, two_parts, limits, memory);
        let short_limits = slowdown == Slowdown::FactorTwo;
        full.set_full_passes(true);
        let mut t = 100;
        for (dt, what, tasks, minutes, shape) in events {
            t += dt;
            for e in [&mut short, &mut full] {
                play(e, t, (what, tasks, minutes, shape), short_limits);
                e.schedule(t);
                e.take_commands();
            }
            proptest::prop_assert_eq!(short.check_invariants(), Vec::<String>::new());
            proptest::prop_assert_eq!(decided(&short), decided(&full), "{} at {}", policy, t);
        }
    }
}

/// `pass_starts_nothing`: true while every waiting job asks for more CPUs
/// than are free and nothing else a pass does can be due; false once a
/// job could fit, for an array record (its tasks may fit), with a
/// dependency or preemption in play, and with no pass due.
#[test]
fn a_pass_that_can_start_nothing_is_known_before_it() {
    let mut e = one_partition("sched/backfill");
    let big = e
        .on_submit(
            JobDesc {
                ntasks: Some(8),
                ..desc()
            },
            &user(),
            10,
        )
        .unwrap()
        .job_id;
    assert!(!e.pass_starts_nothing(), "8 CPUs free, it fits");
    e.schedule(10);
    assert_eq!(e.job(big).unwrap().state, JobState::Running);
    assert!(!e.pass_starts_nothing(), "no pass due");
    let small = e
        .on_submit(
            JobDesc {
                ntasks: Some(1),
                ..desc()
            },
            &user(),
            11,
        )
        .unwrap()
        .job_id;
    assert!(e.pass_starts_nothing(), "no CPU free");
    // Skipped: the next pass sees the submission.
    let mut array = desc();
    array.array = Some("0-3".into());
    let arr = e.on_submit(array, &user(), 12).unwrap().job_id;
    assert!(
        !e.pass_starts_nothing(),
        "an array record is never counted out"
    );
    e.on_cancel(arr, None, proto::SignalScope::Steps, &user(), 12)
        .unwrap();
    e.schedule(12);
    e.take_commands();
    assert_eq!(e.job(small).unwrap().reason, PendingReason::Resources);
    let after = e
        .on_submit(
            JobDesc {
                ntasks: Some(1),
                dependency: Some(format!("afterok:{big}")),
                ..desc()
            },
            &user(),
            13,
        )
        .unwrap()
        .job_id;
    assert!(!e.pass_starts_nothing(), "a dependency may be decided");
    e.on_cancel(after, None, proto::SignalScope::Steps, &user(), 13)
        .unwrap();
    e.schedule(13);
    e.on_job_exited(big, "node1", ExitCode::default(), None, 20)
        .unwrap();
    assert!(!e.pass_starts_nothing(), "8 CPUs free again");
    e.schedule(20);
    assert_eq!(e.job(small).unwrap().state, JobState::Running);

    let mut p = one_partition_with("sched/backfill", "PreemptType=preempt/qos\n");
    p.on_submit(
        JobDesc {
            ntasks: Some(8),
            ..desc()
        },
        &user(),
        10,
    )
    .unwrap();
    p.schedule(10);
    p.on_submit(
        JobDesc {
            ntasks: Some(1),
            ..desc()
        },
        &user(),
        11,
    )
    .unwrap();
    assert!(!p.pass_starts_nothing(), "a pass may preempt");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    /// Skipping the passes `pass_starts_nothing` tells of (as the
    /// simulator does) changes no start: the engine that runs every pass
    /// starts nothing in those, the same jobs run on the same nodes
    /// throughout, and after each pass the skipping engine does run, every
    /// reason and plan is the same too. Random submissions (`play`: 1 to 8
    /// tasks, some held, niced, to begin later, exclusive or on one node,
    /// arrays, jobs that can never run, in a second partition, GPU jobs,
    /// with a minimum time, with dependencies, another user's), job ends,
    /// cancels, holds, releases, administrators' changes to pending jobs,
    /// and nodes drained, downed and resumed, on one partition or two,
    /// with association and QOS limits enforced or not, under backfill (both orders, without plans for
    /// jobs that are not first in line, with the default's for wide jobs,
    /// or for every job by a slowdown of 2), EASY and FCFS (with a queue
    /// depth of two, so that passes over the whole queue come due).
    #[test]
    fn passes_that_start_nothing_may_be_skipped(
        policy in proptest::sample::select(POLICIES.to_vec()),
        slowdown in proptest::sample::select(SLOWDOWNS.to_vec()),
        shortest in proptest::bool::ANY,
        two_parts in proptest::bool::ANY,
        limits in proptest::bool::ANY,
        memory in proptest::bool::ANY,
        events in proptest::collection::vec((0i64..6, 0u8..8, 1u32..9, 0u32..4, 0u8..12), 1..80),
    ) {
        // FCFS with two jobs tried per pass (`twin_engines`' `aging`).
        let depth = policy == "sched/builtin";
        let (policy, mut skipping, mut every) =
            twin_engines(policy, depth, slowdown, shortest, two_parts, limits, memory);
        let short_limits = slowdown == Slowdown::FactorTwo;
        let mut t = 100;
        let mut skipped = 0;
        for (dt, what, tasks, minutes, shape) in events {
            t += dt;
            let mut skip = false;
            for (k, e) in [&mut skipping, &mut every].into_iter().enumerate() {
                play(e, t, (what, tasks, minutes, shape), short_limits);
                if k == 0 {
                    skip = e.pass_starts_nothing();
                    if skip {
                        skipped += 1;
                        continue;
                    }
                }
                let before = e.jobs.values().filter(|j| j.state == JobState::Running).count();
                e.schedule(t);
                e.take_commands();
                let after = e.jobs.values().filter(|j| j.state == JobState::Running).count();
                if k == 1 && skip {
                    proptest::prop_assert_eq!(before, after, "a skipped pass started a job at {}", t);
                }
            }
            proptest::prop_assert_eq!(skipping.check_invariants(), Vec::<String>::new());
            let runs = |e: &Engine| -> Vec<(JobId, JobState, Vec<u32>)> {
                e.jobs.values().map(|j| (j.id, j.state, j.ran_on.iter().map(|n| n.0).collect())).collect()
            };
            proptest::prop_assert_eq!(runs(&skipping), runs(&every), "{} at {}", policy, t);
            if !skip {
                proptest::prop_assert_eq!(decided(&skipping), decided(&every), "{} at {}", policy, t);
            }
        }
        let _ = skipped;
    }
}

/// slurm.conf changed between a snapshot and its restore, as an
/// administrator changes it: jobs follow their partitions by name (one
/// added before them, their order changed), nodes added after the last
/// one start unregistered; changes that would lose a job are refused.
#[test]
fn a_snapshot_restores_under_changed_partitions_and_added_nodes() {
    let mut e = engine();
    let mut g = desc();
    g.partitions = vec!["gpu".into()];
    let on_gpu = submit(&mut e, g, 1);
    let blocker = submit_blocker(&mut e, 1);
    let mut both = desc();
    both.partitions = vec!["gpu".into(), "debug".into()];
    both.ntasks = Some(8);
    let waiting = submit(&mut e, both, 2);
    assert_eq!(e.jobs[&on_gpu].state, JobState::Running);
    assert_eq!(e.jobs[&waiting].state, JobState::Pending);
    let saved = e.persistent_state();
    let changed =
        CONF.replace(
            "PartitionName=debug",
            "PartitionName=long Nodes=node[1-5] MaxTime=INFINITE State=UP\nPartitionName=debug",
        )
        .replace(
            "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP\n",
            "",
        )
        .replace(
            "NodeName=node[3-4] CPUs=2 RealMemory=4000 Gres=gpu:a100:2 Port=7003\n",
            "NodeName=node[3-4] CPUs=2 RealMemory=4000 Gres=gpu:a100:2 Port=7003\n\
             NodeName=node5 CPUs=2 RealMemory=4000 Port=7005\n",
        ) + "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP\n";
    let r = Engine::restore(&config(&changed), saved.clone(), 10).expect("restores");
    assert_invariants(&r);
    let names = |e: &Engine, id: JobId| -> Vec<String> {
        e.jobs[&id]
            .partitions
            .iter()
            .map(|p| e.parts[*p].conf.name.clone())
            .collect()
    };
    assert_eq!(r.layout().1, ["long", "debug", "gpu"]);
    assert_eq!(names(&r, on_gpu), ["gpu"]);
    assert_eq!(names(&r, waiting), ["gpu", "debug"]);
    let alloc = r.jobs[&on_gpu].alloc.as_ref().expect("still running");
    assert_eq!(r.parts[alloc.partition].conf.name, "gpu");
    assert_eq!(r.parts[r.jobs[&blocker].partition].conf.name, "debug");
    assert_eq!(r.nodes.len(), 5);
    assert!(!r.nodes[4].registered);
    // A job in a partition that is gone: refused, naming both.
    let without_gpu = CONF.replace(
        "PartitionName=gpu Nodes=node[3-4] MaxTime=60 State=UP\n",
        "",
    );
    let err = Engine::restore(&config(&without_gpu), saved.clone(), 10).expect_err("refused");
    assert_eq!(
        err,
        RestoreError::PartitionsGone {
            jobs: vec![on_gpu, waiting],
            parts: vec!["gpu".into()],
        }
    );
    // Nodes taken away or reordered: refused.
    let fewer = CONF
        .replace("node[1-4] Default", "node[1-3] Default")
        .replace("NodeName=node[3-4]", "NodeName=node3")
        .replace("Nodes=node[3-4]", "Nodes=node3");
    let err = Engine::restore(&config(&fewer), saved, 10).expect_err("refused");
    assert!(matches!(err, RestoreError::NodesChanged { .. }), "{err}");
}

/// The default `bf_plan=auto`: with memory not a resource and one
/// partition, a queue of jobs that spread is planned over the pool (the
/// plan names no nodes, `explain` names the running jobs it waits for in
/// the partition); one job that does not spread puts the passes back on
/// nodes.
#[test]
fn plans_go_over_the_pool_while_every_pending_job_spreads() {
    let conf = CONF.replace(
        "SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=500\n",
        "SelectTypeParameters=CR_Core\n",
    );
    let mut e = one_partition_on(&conf, "sched/backfill", "");
    let timed = |tasks: u32, minutes: u32| JobDesc {
        ntasks: Some(tasks),
        time_limit: Some(TimeLimit::Minutes(minutes)),
        ..desc()
    };
    let blocker = submit(&mut e, timed(8, 60), 0);
    let wide = submit(&mut e, timed(8, 30), 1);
    assert_eq!(e.job(blocker).unwrap().state, JobState::Running);
    let plan = &e.plans[&wide];
    assert_eq!((plan.start, plan.nodes().len()), (3600, 0));
    let x = e.explain(wide, 2).unwrap();
    assert_eq!(x.waits_for, vec![(blocker, 3600)]);
    assert!(x.planned_nodes.is_empty());
    // Two tasks on one node each: the pass plans on nodes again.
    let pinned = submit(
        &mut e,
        JobDesc {
            ntasks_per_node: Some(2),
            ..timed(2, 10)
        },
        3,
    );
    assert!(!e.plans[&wide].nodes().is_empty());
    assert_eq!(e.plans[&wide].start, 3600);
    assert_eq!(e.job(pinned).unwrap().state, JobState::Pending);
}

/// A step of `ntasks` tasks in job `job`.
fn step_req(job: JobId, ntasks: u32) -> proto::StepRequest {
    proto::StepRequest {
        job_id: job,
        name: "step".into(),
        argv: vec!["true".into()],
        ntasks: Some(ntasks),
        ..proto::StepRequest::default()
    }
}

/// A running job of two tasks on one node (two CPUs).
fn two_cpu_job(e: &mut Engine) -> JobId {
    let mut d = desc();
    d.ntasks = Some(2);
    d.min_nodes = Some(1);
    d.max_nodes = Some(1);
    let id = submit(e, d, 0);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    id
}

/// Issue 35 (srun(1) `--exact`): without `--exact` a step gets every CPU
/// of the job on its nodes, so the next one is busy until it ends; with
/// `--exact` only what its tasks need; `--overlap` shares.
#[test]
fn issue_35_a_step_without_exact_takes_all_the_jobs_cpus_on_its_nodes() {
    let mut e = engine();
    let id = two_cpu_job(&mut e);
    let first = e.on_create_step(step_req(id, 1), &user(), 1).unwrap();
    assert_eq!(first.cpus, vec![2]);
    // Its TRES, as real Slurm's `scontrol show step` gave them for a step
    // of a two-task job with DefMemPerCPU=500: all of the job's memory.
    let tres = |e: &Engine, job: JobId, step: u32| {
        e.step_list(1)
            .steps
            .iter()
            .find(|s| s.job_id == job && s.step == proto::StepId::Numbered(step))
            .map(|s| s.tres.clone())
    };
    assert_eq!(
        tres(&e, id, first.step_id).as_deref(),
        Some("cpu=2,mem=1000M,node=1")
    );
    assert_eq!(
        e.on_create_step(step_req(id, 1), &user(), 1).unwrap_err(),
        SlurmError::NodesBusy
    );
    let mut exact = step_req(id, 1);
    exact.exact = true;
    assert_eq!(
        e.on_create_step(exact.clone(), &user(), 1).unwrap_err(),
        SlurmError::NodesBusy
    );
    let mut overlap = step_req(id, 1);
    overlap.overlap = true;
    assert_eq!(e.on_create_step(overlap, &user(), 1).unwrap().cpus, vec![2]);
    // Two --exact steps of one task each run side by side.
    let mut e = engine();
    let id = two_cpu_job(&mut e);
    exact.job_id = id;
    let one = e.on_create_step(exact.clone(), &user(), 1).unwrap();
    assert_eq!(one.cpus, vec![1]);
    assert_eq!(
        tres(&e, id, one.step_id).as_deref(),
        Some("cpu=1,mem=1000M,node=1")
    );
    assert_eq!(e.on_create_step(exact, &user(), 1).unwrap().cpus, vec![1]);
    // A step without --exact waits while an --exact one holds a CPU.
    assert_eq!(
        e.on_create_step(step_req(id, 1), &user(), 1).unwrap_err(),
        SlurmError::NodesBusy
    );
    assert_invariants(&e);
}

/// Issue 35: a step's own time limit (`srun -t 1`) ends it a minute
/// after its start: its node is told to end it for its time limit, and it
/// counts as TIMEOUT; the job runs on.
#[test]
fn issue_35_a_steps_time_limit_ends_it() {
    let mut e = engine();
    let id = two_cpu_job(&mut e);
    let mut req = step_req(id, 1);
    req.time_limit = Some(TimeLimit::Minutes(1));
    let step = e.on_create_step(req, &user(), 100).unwrap().step_id;
    // A step without -t has no deadline of its own: the job's ends it.
    let mut plain = step_req(id, 1);
    plain.overlap = true;
    let plain = e.on_create_step(plain, &user(), 100).unwrap().step_id;
    let job = e.job(id).unwrap();
    let plain = job.steps.iter().find(|s| s.id == plain).unwrap();
    assert_eq!(plain.limit_end(), None);
    e.take_commands();
    assert_eq!(e.next_wakeup(), Some(160));
    e.on_timer(159);
    assert!(node_commands(e.take_commands()).is_empty());
    e.on_timer(160);
    let ends: Vec<Command> = node_commands(e.take_commands());
    assert!(
        matches!(
            ends.as_slice(),
            [Command::SignalStep {
                signal: None,
                time_limit: true,
                ..
            }]
        ),
        "{ends:?}"
    );
    let job = e.job(id).unwrap();
    assert_eq!(job.state, JobState::Running);
    let s = job.steps.iter().find(|s| s.id == step).unwrap();
    assert_eq!(s.state, JobState::Timeout);
    assert_invariants(&e);
    e.on_step_exited(
        proto::StepNodeEnd {
            job_id: id,
            step_id: step,
            node: "node1".into(),
            exit: ExitCode {
                code: 0,
                signal: 15,
            },
            usage: None,
            oom_kills: 0,
        },
        161,
    )
    .unwrap();
    let s = e
        .job(id)
        .unwrap()
        .steps
        .iter()
        .find(|s| s.id == step)
        .cloned();
    assert_eq!(s.map(|s| s.state), Some(JobState::Timeout));
    assert_ne!(e.next_wakeup(), Some(160));
}

#[test]
fn issue_35_update_refusals_use_slurms_errors() {
    // Real scontrol 22.05 (4 nodes of 2 CPUs): "Job has already finished
    // for job N", "Invalid user id for job N" (another user's job),
    // "Requested partition configuration not available now for job N"
    // (NumNodes=10), while NumNodes=5 is accepted.
    let mut e = engine();
    let mut d = desc();
    d.hold = true;
    let id = submit(&mut e, d, 0);
    let nodes = |n: u32| proto::JobUpdate {
        min_nodes: Some(n),
        ..Default::default()
    };
    assert_eq!(
        e.on_update_job(id, nodes(5), &other(), 1),
        Err(SlurmError::InvalidUserId)
    );
    e.on_update_job(id, nodes(5), &user(), 1).unwrap();
    assert_eq!(
        e.on_update_job(id, nodes(10), &user(), 1),
        Err(SlurmError::RequestedPartConfigUnavailable)
    );
    assert_eq!(e.job(id).unwrap().min_nodes, 5);
    e.on_cancel(id, None, proto::SignalScope::Steps, &user(), 2)
        .unwrap();
    let limit = proto::JobUpdate {
        time_limit: Some(TimeLimit::Minutes(5)),
        ..Default::default()
    };
    assert_eq!(
        e.on_update_job(id, limit, &user(), 3),
        Err(SlurmError::JobFinished)
    );
    assert_eq!(e.on_hold(id, false, &admin()), Err(SlurmError::JobFinished));
    assert_eq!(e.on_release(id, &admin()), Err(SlurmError::JobFinished));
}

#[test]
fn issue_35_holds_of_running_and_requeued_jobs() {
    let mut e = engine();
    let id = submit(&mut e, desc(), 0);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
    // Real Slurm 22.05: `scontrol hold <running>` as root is accepted:
    // Priority=0, Reason=JobHeldAdmin, EligibleTime=Unknown; it runs on.
    e.on_hold(id, false, &admin()).unwrap();
    let j = e.job_info(e.job(id).unwrap(), 1);
    assert_eq!(
        (j.state, j.reason, j.priority),
        (JobState::Running, PendingReason::JobHeldAdmin, 0)
    );
    assert_eq!(j.eligible_time, 0);
    // `scontrol release`: Reason=None.
    e.on_release(id, &admin()).unwrap();
    let j = e.job_info(e.job(id).unwrap(), 1);
    assert_eq!(j.reason, PendingReason::None);
    assert_ne!(j.priority, 0);
    // `scontrol requeuehold`: Reason=job_requeued_in_held_state (scontrol),
    // "job requeued in held state" (squeue), Priority=0; release: None.
    e.on_requeue(id, true, &admin(), 2).unwrap();
    let j = e.job_info(e.job(id).unwrap(), 3);
    assert_eq!(j.reason, PendingReason::JobRequeuedHeld);
    assert_eq!(j.reason.as_slurm_str(), "job requeued in held state");
    assert_eq!(j.priority, 0);
    e.on_release(id, &admin()).unwrap();
    assert_eq!(e.job(id).unwrap().reason, PendingReason::None);
    // A job held from its submission is not yet eligible: Unknown.
    let mut d = desc();
    d.hold = true;
    let held = submit(&mut e, d, 4);
    assert_eq!(e.job_info(e.job(held).unwrap(), 5).eligible_time, 0);
    assert_invariants(&e);
}

#[test]
fn issue_35_top_moves_a_job_ahead_of_its_users_other_jobs() {
    // Real Slurm 22.05 (four pending jobs 24-27 of priorities P..P-3, as
    // root `scontrol top 27`): 27 takes P (Nice=-3), 24-26 move down one
    // place each (Nice=1); then `scontrol top 26`: 26 P (Nice=-2), 27 P-1
    // (Nice=-2), 24 and 25 below (Nice=2).
    let mut e = engine();
    let mut d = desc();
    d.ntasks = Some(8);
    let blocker = submit(&mut e, d, 0);
    assert_eq!(e.job(blocker).unwrap().state, JobState::Running);
    let ids: Vec<JobId> = (0..4).map(|_| submit(&mut e, desc(), 1)).collect();
    let prio = |e: &Engine, id: JobId| e.job(id).unwrap().priority;
    let nice = |e: &Engine, id: JobId| e.job(id).unwrap().desc.nice;
    let before: Vec<u32> = ids.iter().map(|&id| prio(&e, id)).collect();
    assert!(before.windows(2).all(|w| w[0] > w[1]), "{before:?}");
    assert_eq!(e.on_top(ids[3], &user()), Err(SlurmError::AccessDenied));
    assert_eq!(e.on_top(blocker, &admin()), Err(SlurmError::JobNotPending));
    assert_eq!(
        e.on_top(JobId(999), &admin()),
        Err(SlurmError::InvalidJobId)
    );
    e.on_top(ids[3], &admin()).unwrap();
    let order = [ids[3], ids[0], ids[1], ids[2]];
    for (i, id) in order.iter().enumerate() {
        assert_eq!(prio(&e, *id), before[i]);
    }
    assert_eq!(order.map(|id| nice(&e, id)), [-3, 1, 1, 1]);
    e.on_top(ids[2], &admin()).unwrap();
    let order = [ids[2], ids[3], ids[0], ids[1]];
    for (i, id) in order.iter().enumerate() {
        assert_eq!(prio(&e, *id), before[i]);
    }
    assert_eq!(order.map(|id| nice(&e, id)), [-2, -2, 2, 2]);
    // SchedulerParameters=enable_user_top: a user may top their own jobs.
    let conf = format!("{CONF}SchedulerParameters=bf_continue,enable_user_top\n");
    assert!(engine_on(&conf).settings.enable_user_top);
    assert!(!engine().settings.enable_user_top);
    e.settings.enable_user_top = true;
    e.on_top(ids[1], &user()).unwrap();
    assert_eq!(prio(&e, ids[1]), before[0]);
    assert_eq!(e.on_top(ids[0], &other()), Err(SlurmError::AccessDenied));
    assert_invariants(&e);
}

#[test]
fn issue_35_notify_reaches_a_running_jobs_batch_host() {
    let mut e = engine();
    let mut d = desc();
    d.ntasks = Some(8);
    let running = submit(&mut e, d, 0);
    let pending = submit(&mut e, desc(), 1);
    e.take_commands();
    let note = |e: &mut Engine, id: JobId, who: &Identity| e.on_notify(id, "hi there".into(), who);
    assert_eq!(
        note(&mut e, JobId(999), &user()),
        Err(SlurmError::InvalidJobId)
    );
    assert_eq!(note(&mut e, pending, &user()), Err(SlurmError::Disabled));
    assert_eq!(
        note(&mut e, running, &other()),
        Err(SlurmError::InvalidUserId)
    );
    note(&mut e, running, &user()).unwrap();
    let batch = e.job(running).unwrap().ran_on[0];
    let name = e.nodes[batch.0 as usize].conf.name.clone();
    assert!(matches!(
        &e.take_commands()[..],
        [Command::NotifyJob { node, job_id, message, .. }]
            if *node == name && *job_id == running && message == "hi there"
    ));
}

#[test]
fn issue_35_a_batch_job_without_tasks_asked_has_no_task_count() {
    let mut e = engine();
    submit(&mut e, desc(), 0);
    let cmds = e.take_commands();
    let env = cmds
        .iter()
        .find_map(|c| match c {
            Command::LaunchBatch { launch, .. } => Some(launch.env.clone()),
            _ => None,
        })
        .expect("a launch");
    for k in ["SLURM_NTASKS", "SLURM_NPROCS"] {
        assert!(!env.iter().any(|(n, _)| n == k), "{k} in {env:?}");
    }
    assert!(env.iter().any(|(n, _)| n == "SLURM_MEM_PER_CPU"));
}

/// The CPU ids a job holds on each node.
fn cpu_ids(e: &Engine, id: JobId) -> Vec<Vec<u32>> {
    e.jobs[&id]
        .alloc
        .as_ref()
        .map(|a| a.nodes.iter().map(|n| n.cpu_ids.clone()).collect())
        .unwrap_or_default()
}

/// Issue 37 item 4: two jobs on one node never share a CPU; each takes
/// the lowest free ids, a job's end frees them for the next, and a
/// snapshot keeps them.
#[test]
fn issue_37_jobs_on_one_node_hold_disjoint_cpu_ids_lowest_first() {
    let mut e = engine();
    let on_node1 = || {
        let mut d = desc();
        d.nodelist = vec!["node1".into()];
        d
    };
    let a = submit(&mut e, on_node1(), 1);
    let b = submit(&mut e, on_node1(), 1);
    assert_eq!(cpu_ids(&e, a), vec![vec![0]]);
    assert_eq!(cpu_ids(&e, b), vec![vec![1]]);
    assert_eq!(e.job_info(&e.jobs[&b], 1).cpu_ids_per_node, vec![vec![1]]);
    e.on_job_exited(a, "node1", ExitCode::default(), None, 2)
        .unwrap();
    e.schedule(2);
    assert_invariants(&e);
    let c = submit(&mut e, on_node1(), 3);
    assert_eq!(cpu_ids(&e, c), vec![vec![0]]);
    let r = Engine::restore(&test_config(), e.persistent_state(), 4).expect("restores");
    assert_invariants(&r);
    assert_eq!(cpu_ids(&r, b), vec![vec![1]]);
    assert_eq!(cpu_ids(&r, c), vec![vec![0]]);
}

/// Steps: without `--exact` a step runs on all of the job's CPU ids on a
/// node; with it, `--exact` steps get disjoint ids among the job's.
#[test]
fn issue_37_exact_steps_get_disjoint_cpu_ids_within_the_job() {
    let mut e = engine();
    let id = two_cpu_job(&mut e);
    let job_ids = cpu_ids(&e, id);
    assert_eq!(job_ids, vec![vec![0, 1]]);
    let launched = |e: &mut Engine| -> Vec<(Vec<u32>, Vec<u32>)> {
        e.take_commands()
            .into_iter()
            .filter_map(|c| match c {
                Command::LaunchStep { launch, .. } => {
                    Some((launch.cpu_ids.clone(), launch.job_cpu_ids.clone()))
                }
                _ => None,
            })
            .collect()
    };
    let _ = launched(&mut e);
    let mut exact = step_req(id, 1);
    exact.exact = true;
    exact.cpu_bind = Some("verbose,cores".into());
    e.on_create_step(exact.clone(), &user(), 1).unwrap();
    assert_eq!(launched(&mut e), vec![(vec![0], vec![0, 1])]);
    e.on_create_step(exact, &user(), 1).unwrap();
    assert_eq!(launched(&mut e), vec![(vec![1], vec![0, 1])]);
    assert_eq!(e.jobs[&id].steps[1].cpu_ids, vec![vec![1]]);
}

/// Issue 37: `--gres-flags=enforce-binding` gives a job the GPU whose
/// gres.conf `Cores=` have free CPUs, and CPU ids among those cores (the
/// controller reads gres.conf beside slurm.conf); a job that no GPU's
/// cores could hold is refused at submission.
#[test]
fn issue_37_enforce_binding_gives_cpu_ids_near_the_gpus() {
    let mut cfg = config(
        "ClusterName=c\nSlurmctldHost=h\nGresTypes=gpu\n\
         NodeName=g1 CPUs=4 RealMemory=4000 Gres=gpu:2 Port=7001\n\
         PartitionName=p Nodes=g1 Default=YES MaxTime=INFINITE State=UP\n",
    );
    cfg.gres = conf::parse_gres_conf(
        "Name=gpu File=/dev/nvidia0 Cores=0-1\nName=gpu File=/dev/nvidia1 Cores=2-3\n",
        std::path::Path::new("/x/gres.conf"),
    )
    .expect("gres.conf parses")
    .0;
    let mut e = Engine::new(&cfg, 0);
    e.on_node_registered(reg("g1", 4, 4000), 0).unwrap();
    let gpu_job = |flags: Option<&str>, tasks: u32| {
        let mut d = desc();
        d.ntasks = Some(tasks);
        d.gres = vec![model::Gres::parse("gpu:1").unwrap()];
        d.gres_flags = flags.map(str::to_string);
        d
    };
    let gpus = |e: &Engine, id: JobId| -> Vec<u32> {
        e.jobs[&id].alloc.as_ref().unwrap().nodes[0]
            .gres
            .iter()
            .flat_map(|g| g.1.clone())
            .collect()
    };
    // A job without the flag: GPU 0, CPU 0.
    let a = submit(&mut e, gpu_job(None, 1), 0);
    assert_eq!((gpus(&e, a), cpu_ids(&e, a)), (vec![0], vec![vec![0]]));
    // With it: GPU 1 and CPU 2 (near GPU 1), not the lowest free id 1.
    let b = submit(&mut e, gpu_job(Some("enforce-binding"), 1), 0);
    assert_eq!((gpus(&e, b), cpu_ids(&e, b)), (vec![1], vec![vec![2]]));
    // Two CPUs near one GPU: none has them free now, so it waits.
    let c = submit(&mut e, gpu_job(Some("enforce-binding"), 2), 0);
    assert!(e.jobs[&c].alloc.is_none());
    assert_eq!(e.jobs[&c].reason, PendingReason::Resources);
    // Three CPUs near one GPU: never.
    assert_eq!(
        e.on_submit(gpu_job(Some("enforce-binding"), 3), &user(), 0)
            .unwrap_err(),
        SlurmError::RequestedNodeConfigUnavailable
    );
    // disable-binding after it turns it off again.
    assert!(e
        .on_submit(
            gpu_job(Some("enforce-binding,disable-binding"), 3),
            &user(),
            0
        )
        .is_ok());
}

#[test]
fn time_limit_mails_come_at_their_share_of_the_limit_by_the_timer() {
    use model::mail;
    let mut e = engine();
    let mut d = desc();
    d.mail_type = mail::TIME_LIMIT | mail::TIME_LIMIT_50 | mail::TIME_LIMIT_90;
    d.time_limit = Some(TimeLimit::Minutes(2));
    let a = submit(&mut e, d, 0);
    e.take_commands();
    // The engine wakes at 50% (60 s), then 90% (108 s), then the limit
    // (before SlurmdTimeout, 300 s, would take the silent nodes down).
    assert_eq!(e.next_wakeup(), Some(60));
    e.on_timer(59);
    assert_eq!(mails(&e.take_commands()), []);
    e.on_timer(60);
    let sent = mails(&e.take_commands());
    assert_eq!(
        sent.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
        [format!(
            "Slurm Job_id={a} Name=job Reached 50% of time limit, Run time 00:01:00"
        )]
    );
    assert_eq!(e.next_wakeup(), Some(108));
    e.on_timer(109);
    assert_eq!(
        mails(&e.take_commands())[0].0,
        format!("Slurm Job_id={a} Name=job Reached 90% of time limit, Run time 00:01:49")
    );
    assert_eq!(e.next_wakeup(), Some(120));
    e.on_timer(120);
    assert_eq!(
        mails(&e.take_commands())[0].0,
        format!("Slurm Job_id={a} Name=job Reached time limit, Run time 00:02:00")
    );
    assert_eq!(e.job(a).unwrap().state, JobState::Timeout);
    assert_invariants(&e);
}

#[test]
fn an_array_without_array_tasks_gets_one_summary_mail_at_start_and_end() {
    use model::mail;
    let mut e = engine();
    let mut d = desc();
    d.mail_type = mail::BEGIN | mail::END | mail::FAIL;
    d.array = Some("1-3".into());
    d.name = "w".into();
    let a = submit(&mut e, d.clone(), 0);
    let sent = mails(&e.take_commands());
    assert_eq!(
        sent.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
        [format!(
            "Slurm Array Summary Job_id={a}_* ({a}) Name=w Began"
        )]
    );
    let tasks: Vec<JobId> = e
        .jobs
        .values()
        .filter(|j| j.array.as_ref().is_some_and(|r| r.array_job_id == a))
        .map(|j| j.id)
        .collect();
    assert_eq!(tasks.len(), 3);
    for (i, t) in tasks.iter().enumerate() {
        let node = e.job(*t).unwrap().alloc.as_ref().unwrap().nodes[0].node;
        let node = e.nodes[node.0 as usize].conf.name.clone();
        let code = if i == 1 { 3 } else { 0 };
        e.on_job_exited(*t, &node, ExitCode { code, signal: 0 }, None, 10)
            .unwrap();
        let sent = mails(&e.take_commands());
        if i < 2 {
            assert_eq!(sent, [], "task {i}");
        } else {
            assert_eq!(
                sent.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
                [format!(
                    "Slurm Array Summary Job_id={a}_* ({a}) Name=w Failed, Mixed, ExitCode [0-3]"
                )]
            );
        }
    }
    // With ARRAY_TASKS every task is mailed for.
    d.mail_type = mail::BEGIN | mail::ARRAY_TASKS;
    d.array = Some("0-1".into());
    let b = submit(&mut e, d, 20);
    let sent = mails(&e.take_commands());
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(
        sent[0]
            .0
            .starts_with(&format!("Slurm Array Task Job_id={b}_")),
        "{sent:?}"
    );
}

#[test]
fn requested_counts_read_what_the_full_request_holds() {
    let mut e = engine();
    let mut shapes = Vec::new();
    let mut plain = desc();
    plain.ntasks = Some(3);
    plain.cpus_per_task = Some(2);
    shapes.push(plain);
    let mut per_cpu = desc();
    per_cpu.mem_per_cpu = Some(300);
    per_cpu.ntasks = Some(2);
    shapes.push(per_cpu);
    let gpu_desc = |d: &mut JobDesc| {
        d.partitions = vec!["gpu".into()];
        d.mem_per_node = Some(500);
        d.min_nodes = Some(2);
    };
    let mut gres = desc();
    gpu_desc(&mut gres);
    gres.gres = vec![model::Gres::parse("gpu:1").unwrap()];
    shapes.push(gres);
    let mut per_node = desc();
    gpu_desc(&mut per_node);
    per_node.gpus_per_node = Some(model::Gres::parse("gpu:2").unwrap());
    shapes.push(per_node);
    let mut total = desc();
    gpu_desc(&mut total);
    total.gpus = Some(model::Gres::parse("gpu:3").unwrap());
    shapes.push(total);
    for d in shapes {
        let id = submit(&mut e, d, 0);
        let job = &e.jobs[&id];
        let req = e.request_for(job);
        let cpus = job.ntasks * req.cpus_per_task;
        let mem = match (req.mem_per_node, req.mem_per_cpu) {
            (Some(m), _) => m * job.min_nodes as u64,
            (None, Some(m)) => m * cpus as u64,
            _ => 0,
        };
        let gpus = req
            .gres_per_node
            .iter()
            .filter(|g| g.name == "gpu")
            .map(|g| g.count * job.min_nodes as u64)
            .sum::<u64>()
            + req.gpus_total.as_ref().map_or(0, |g| g.count);
        assert_eq!(e.requested_counts(job), (cpus, mem, gpus), "job {id}");
    }
}

/// A listing that writes one `JobInfo` over and over
/// (`each_job_info_seen`) answers exactly what fresh ones do, whatever
/// job came before: running, ended, pending, rich and bare, full and
/// brief.
#[test]
fn a_reused_job_info_is_written_whole_for_every_job() {
    let mut e = engine();
    let mut rich = desc();
    rich.partitions = vec!["gpu".into()];
    rich.gres = vec![model::Gres::parse("gpu:1").unwrap()];
    rich.gpus = Some(model::Gres::parse("gpu:1").unwrap());
    rich.comment = Some("a comment".into());
    rich.exclude = vec!["node1".into()];
    rich.mail_type = 1;
    rich.stdout = Some("out-%j.txt".into());
    rich.stderr = Some("/abs/err-%j.txt".into());
    rich.signal = Some(proto::SignalSpec {
        signal: 10,
        secs: 60,
        batch_only: false,
    });
    let running = submit(&mut e, rich.clone(), 0);
    let ended = submit(&mut e, desc(), 0);
    e.on_job_exited(ended, "node1", ExitCode { code: 3, signal: 0 }, None, 5)
        .unwrap();
    submit_blocker(&mut e, 6);
    let mut multi = desc();
    multi.partitions = vec!["debug".into(), "gpu".into()];
    multi.nodelist = vec!["node1".into()];
    submit(&mut e, multi, 7);
    let mut held = rich;
    held.hold = true;
    submit(&mut e, held, 8);
    submit(&mut e, desc(), 9);
    assert_eq!(e.job(running).unwrap().state, JobState::Running);
    let everyone = crate::privacy::Sight::everything();
    for filter in [
        proto::JobFilter::default(),
        proto::JobFilter {
            brief: true,
            ..Default::default()
        },
        proto::JobFilter {
            brief: true,
            omit: vec![proto::JobField::Nodes, proto::JobField::Name],
            ..Default::default()
        },
    ] {
        let fresh = e.job_query_seen(&filter, 20, &everyone).jobs;
        let mut lent = Vec::new();
        e.each_job_info_seen(&filter, 20, &everyone, |j| lent.push(j.clone()));
        assert_eq!(lent.len(), 6);
        assert_eq!(lent, fresh, "{filter:?}");
        // And in the other order: the bare job first, the rich ones after.
        let mut info = proto::JobInfo::default();
        let keep = crate::info::Keep::of(&filter);
        for (job, want) in e.jobs.values().rev().zip(fresh.iter().rev()) {
            e.fill_job_info(job, 20, &keep, &mut info);
            assert_eq!(&info, want);
        }
    }
}
