//! Preemption and suspension, through the engine's inputs.
use crate::tests::{admin, desc, reg, user};
use crate::{Command, Engine};
use model::{ExitCode, JobId, JobState, PendingReason, TimeLimit};
use proto::acctdb::{AcctTables, Qos};
use proto::SlurmError;

fn config(extra: &str) -> conf::Config {
    let text = format!(
        "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\nKillWait=5\nSlurmdTimeout=0\n{extra}\
         NodeName=node1 CPUs=2 RealMemory=4000 Port=7001\n\
         PartitionName=low Nodes=node1 Default=YES PriorityTier=1 State=UP\n\
         PartitionName=high Nodes=node1 PriorityTier=5 State=UP\n"
    );
    conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
        Err(std::io::Error::other("no includes"))
    })
    .expect("config parses")
    .config
}

fn engine(extra: &str) -> Engine {
    let loaded_config = config(extra);
    let mut e = Engine::new(&loaded_config, 0);
    e.on_node_registered(reg("node1", 2, 4000), 0).unwrap();
    e
}

/// QOS `high` preempts `normal`; `normal` is preempted in `mode` with `grace`.
fn qos_tables(mode: &str, grace: u32) -> AcctTables {
    let mut normal = Qos::new(1, "normal");
    normal.preempt_mode = mode.into();
    normal.grace_time = grace;
    let mut high = Qos::new(2, "high");
    high.preempt = vec!["normal".into()];
    AcctTables {
        qos: vec![normal, high],
        ..AcctTables::default()
    }
}

fn job(qos: &str, cpus: u32, now: i64, e: &mut Engine) -> JobId {
    let mut d = desc();
    d.qos = Some(qos.into());
    d.ntasks = Some(cpus);
    d.time_limit = Some(TimeLimit::Minutes(10));
    let id = e.on_submit(d, &user(), now).expect("accepted").job_id;
    e.schedule(now);
    assert!(
        e.check_invariants().is_empty(),
        "{:?}",
        e.check_invariants()
    );
    id
}

fn state(e: &Engine, id: JobId) -> JobState {
    e.job(id).unwrap().state
}

fn exit(e: &mut Engine, id: JobId, now: i64) {
    e.on_job_exited(
        id,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        now,
    )
    .unwrap();
    e.schedule(now);
    assert!(
        e.check_invariants().is_empty(),
        "{:?}",
        e.check_invariants()
    );
}

fn acct_states(cmds: &[Command], id: JobId) -> Vec<JobState> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::AcctRecord(r) if r.job_id == id => Some(r.state),
            _ => None,
        })
        .collect()
}

fn signals(cmds: &[Command], id: JobId) -> Vec<i32> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::SignalJob { job_id, signal, .. } if *job_id == id => Some(*signal),
            _ => None,
        })
        .collect()
}

fn terminate_wait(cmds: &[Command], id: JobId) -> Option<u32> {
    cmds.iter().find_map(|c| match c {
        Command::TerminateJob {
            job_id, kill_wait, ..
        } if *job_id == id => Some(*kill_wait),
        _ => None,
    })
}

#[test]
fn requeue_mode_requeues_the_victim_and_the_preemptor_gets_its_cpus() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=REQUEUE\nAuthInfo=cred_expire=0\n");
    e.on_assoc_tables(qos_tables("cluster", 30));
    let low = job("normal", 2, 100, &mut e);
    assert_eq!(state(&e, low), JobState::Running);
    e.take_commands();
    let high = job("high", 2, 200, &mut e);
    let cmds = e.take_commands();
    // The victim is back in the queue with its id; the run that ended is
    // a PREEMPTED record; its processes get SIGTERM, GraceTime, SIGKILL.
    let j = e.job(low).unwrap();
    assert_eq!(
        (j.state, j.restarts, j.completing),
        (JobState::Pending, 1, true)
    );
    assert_eq!(
        acct_states(&cmds, low),
        vec![JobState::Preempted, JobState::Pending]
    );
    assert_eq!(terminate_wait(&cmds, low), Some(30));
    assert_eq!(state(&e, high), JobState::Pending);
    // Once its processes are gone, the preemptor runs on its CPUs, and the
    // victim waits.
    exit(&mut e, low, 201);
    assert_eq!(state(&e, high), JobState::Running);
    assert_eq!(state(&e, low), JobState::Pending);
    assert_eq!(
        e.job(high).unwrap().alloc.as_ref().unwrap().nodes[0].cpus,
        2
    );
    // The preemptor ends: the victim runs again, restart count 1.
    exit(&mut e, high, 300);
    assert_eq!(state(&e, low), JobState::Running);
    let launch = e
        .take_commands()
        .into_iter()
        .find_map(|c| match c {
            Command::LaunchBatch { launch, .. } if launch.job_id == low => Some(launch),
            _ => None,
        })
        .expect("relaunched");
    assert!(launch
        .env
        .iter()
        .any(|(k, v)| k == "SLURM_RESTART_COUNT" && v == "1"));
}

#[test]
fn a_job_that_may_not_be_requeued_is_cancelled_as_preempted() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=REQUEUE\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let mut d = desc();
    d.qos = Some("normal".into());
    d.ntasks = Some(2);
    d.requeue = Some(false);
    let low = e.on_submit(d, &user(), 0).unwrap().job_id;
    e.schedule(0);
    e.take_commands();
    job("high", 2, 10, &mut e);
    let cmds = e.take_commands();
    assert_eq!(state(&e, low), JobState::Preempted);
    // No grace: the cluster's KillWait.
    assert_eq!(terminate_wait(&cmds, low), Some(5));
}

#[test]
fn cancel_mode_ends_the_victim_preempted() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=REQUEUE\n");
    e.on_assoc_tables(qos_tables("cancel", 0));
    let low = job("normal", 2, 0, &mut e);
    let high = job("high", 1, 10, &mut e);
    let j = e.job(low).unwrap();
    assert_eq!((j.state, j.completing), (JobState::Preempted, true));
    assert_eq!(
        j.exit,
        ExitCode {
            code: 0,
            signal: 15
        }
    );
    exit(&mut e, low, 11);
    assert_eq!(state(&e, low), JobState::Preempted);
    assert_eq!(state(&e, high), JobState::Running);
}

#[test]
fn suspend_mode_stops_the_victim_and_resumes_it_when_the_preemptor_ends() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=SUSPEND,GANG\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let low = job("normal", 2, 0, &mut e);
    e.take_commands();
    let high = job("high", 2, 60, &mut e);
    let cmds = e.take_commands();
    // Stopped at once; its CPUs go to the preemptor in the same pass.
    assert_eq!(state(&e, low), JobState::Suspended);
    assert_eq!(signals(&cmds, low), vec![19]);
    assert_eq!(state(&e, high), JobState::Running);
    assert!(e.job(low).unwrap().alloc.is_none());
    // The suspended job does not resume while the preemptor runs.
    e.on_timer(120);
    e.schedule(120);
    assert_eq!(state(&e, low), JobState::Suspended);
    exit(&mut e, high, 360);
    let cmds = e.take_commands();
    assert_eq!(state(&e, low), JobState::Running);
    assert_eq!(signals(&cmds, low), vec![18]);
    // Five minutes suspended do not count toward its ten-minute limit.
    let j = e.job(low).unwrap();
    assert_eq!(j.suspended_secs, 300);
    assert_eq!(j.limit_end(), Some(900));
    // Accounting's Suspended counts it too, and counts while suspended.
    assert_eq!(e.acct_job(low, 400).unwrap().suspended_secs, 300);
    e.on_timer(600);
    assert_eq!(state(&e, low), JobState::Running);
    e.on_timer(900);
    assert_eq!(state(&e, low), JobState::Timeout);
}

#[test]
fn a_suspended_jobs_shares_are_kept_for_it_while_its_preemptor_runs() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=SUSPEND,GANG\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let low = job("normal", 2, 0, &mut e);
    // The preemptor needs one of the two CPUs: the other stays the
    // suspended job's, and a later job may not take it.
    let high = job("high", 1, 60, &mut e);
    assert_eq!(state(&e, low), JobState::Suspended);
    assert_eq!(state(&e, high), JobState::Running);
    let later = job("normal", 1, 70, &mut e);
    e.on_timer(120);
    e.schedule(120);
    assert_eq!(state(&e, later), JobState::Pending);
    assert_eq!(e.job(later).unwrap().reason, PendingReason::Resources);
    // The preemptor ends: the suspended job resumes first.
    exit(&mut e, high, 300);
    assert_eq!(state(&e, low), JobState::Running);
    assert_eq!(state(&e, later), JobState::Pending);
    exit(&mut e, low, 400);
    assert_eq!(state(&e, later), JobState::Running);
}

#[test]
fn the_youngest_job_is_preempted_and_no_more_than_needed() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=CANCEL\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let old = job("normal", 1, 0, &mut e);
    let young = job("normal", 1, 500, &mut e);
    job("high", 1, 600, &mut e);
    assert_eq!(state(&e, old), JobState::Running);
    assert_eq!(state(&e, young), JobState::Preempted);
}

#[test]
fn jobs_within_preempt_exempt_time_are_not_preempted() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=CANCEL\nPreemptExemptTime=00:05:00\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let low = job("normal", 2, 0, &mut e);
    let high = job("high", 2, 100, &mut e);
    assert_eq!(state(&e, low), JobState::Running);
    assert_eq!(e.job(high).unwrap().reason, PendingReason::Resources);
    e.on_timer(300);
    e.on_update_job(high, Default::default(), &admin(), 300)
        .unwrap();
    e.schedule(300);
    assert_eq!(state(&e, low), JobState::Preempted);
}

#[test]
fn the_victims_qos_preempt_exempt_time_overrides_the_clusters() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=CANCEL\nPreemptExemptTime=00:10:00\n");
    let mut t = qos_tables("cluster", 0);
    t.qos[0].preempt_exempt_time = Some(60);
    e.on_assoc_tables(t);
    let low = job("normal", 2, 0, &mut e);
    // 30 s in: exempt by its QOS (60 s), not yet preempted.
    let high = job("high", 2, 30, &mut e);
    assert_eq!(state(&e, low), JobState::Running);
    // 90 s in: past the QOS's 60 s, though within the cluster's 10 min.
    e.on_timer(90);
    e.schedule(90);
    assert_eq!(state(&e, low), JobState::Preempted);
    assert_eq!(e.job(high).unwrap().reason, PendingReason::Resources);
}

#[test]
fn within_lets_a_job_preempt_lower_priority_jobs_of_its_own_qos() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=CANCEL\n");
    let mut t = qos_tables("cluster", 0);
    t.qos[0].preempt_mode = "cancel,within".into();
    e.on_assoc_tables(t);
    let low = job("normal", 2, 0, &mut e);
    let mut d = desc();
    d.qos = Some("normal".into());
    d.ntasks = Some(2);
    let high = e.on_submit(d, &user(), 60).unwrap().job_id;
    // Equal priority preempts nobody; a higher one does.
    e.schedule(60);
    assert_eq!(state(&e, low), JobState::Running);
    e.on_update_job(
        high,
        proto::JobUpdate {
            priority: Some(e.job(low).unwrap().priority + 100),
            ..Default::default()
        },
        &admin(),
        70,
    )
    .unwrap();
    e.schedule(70);
    assert_eq!(state(&e, low), JobState::Preempted);
}

#[test]
fn preempt_parameters_youngest_first_and_min_exempt_priority() {
    // Two 1-CPU victims: an old small one and a young one. By default the
    // least work lost is the young job's; youngest_first agrees; with
    // min_exempt_priority above the young job's priority, the old one goes.
    let run = |params: &str| {
        let mut e = engine(&format!(
            "PreemptType=preempt/qos\nPreemptMode=CANCEL\n{params}"
        ));
        e.on_assoc_tables(qos_tables("cluster", 0));
        let old = job("normal", 1, 0, &mut e);
        let young = job("normal", 1, 500, &mut e);
        let old_prio = e.job(old).unwrap().priority;
        e.on_update_job(
            young,
            proto::JobUpdate {
                priority: Some(old_prio + 10),
                ..Default::default()
            },
            &admin(),
            500,
        )
        .unwrap();
        job("high", 1, 600, &mut e);
        (state(&e, old), state(&e, young), old_prio)
    };
    let (old, young, old_prio) = run("");
    assert_eq!((old, young), (JobState::Running, JobState::Preempted));
    let (old, young, _) = run("PreemptParameters=youngest_first\n");
    assert_eq!((old, young), (JobState::Running, JobState::Preempted));
    let (old, young, _) = run(&format!(
        "PreemptParameters=min_exempt_priority={}\n",
        old_prio + 5
    ));
    assert_eq!((old, young), (JobState::Preempted, JobState::Running));
}

#[test]
fn a_qos_not_in_the_preempt_list_preempts_nobody() {
    let mut e = engine("PreemptType=preempt/qos\nPreemptMode=CANCEL\n");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let a = job("high", 2, 0, &mut e);
    let b = job("normal", 2, 10, &mut e);
    assert_eq!(state(&e, a), JobState::Running);
    assert_eq!(state(&e, b), JobState::Pending);
}

#[test]
fn partition_prio_preempts_jobs_of_lower_tiers() {
    let mut e = engine("PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n");
    let low = job("normal", 2, 0, &mut e);
    let mut d = desc();
    d.partitions = vec!["high".into()];
    d.ntasks = Some(2);
    let high = e.on_submit(d, &user(), 100).unwrap().job_id;
    e.schedule(100);
    assert_eq!(state(&e, low), JobState::Pending);
    assert_eq!(e.job(low).unwrap().restarts, 1);
    exit(&mut e, low, 101);
    assert_eq!(state(&e, high), JobState::Running);
}

#[test]
fn without_preempt_type_nothing_is_preempted() {
    let mut e = engine("");
    e.on_assoc_tables(qos_tables("cluster", 0));
    let low = job("normal", 2, 0, &mut e);
    job("high", 2, 10, &mut e);
    assert_eq!(state(&e, low), JobState::Running);
}

#[test]
fn scontrol_suspend_and_resume_take_arrays_and_their_tasks() {
    let mut e = engine("");
    let mut d = desc();
    d.array = Some("0-1".into());
    let arr = e.on_submit(d, &user(), 0).unwrap().job_id;
    e.schedule(0);
    let task = |e: &Engine, t: u32| e.array_tasks[&arr][&t];
    let (t0, t1) = (task(&e, 0), task(&e, 1));
    assert_eq!(
        (state(&e, t0), state(&e, t1)),
        (JobState::Running, JobState::Running)
    );
    // One task, then the whole array.
    let one = model::array::TaskSet::single(1);
    e.on_suspend_tasks(arr, Some(&one), &admin(), 10).unwrap();
    assert_eq!(
        (state(&e, t0), state(&e, t1)),
        (JobState::Running, JobState::Suspended)
    );
    e.on_suspend_tasks(arr, None, &admin(), 20).unwrap();
    assert_eq!(state(&e, t0), JobState::Suspended);
    e.on_resume_tasks(arr, None, &admin(), 30).unwrap();
    e.schedule(30);
    assert_eq!(
        (state(&e, t0), state(&e, t1)),
        (JobState::Running, JobState::Running)
    );
    assert_eq!(
        e.on_suspend_tasks(arr, None, &user(), 40),
        Err(SlurmError::AccessDenied)
    );
}

#[test]
fn scontrol_suspend_and_resume_are_for_administrators() {
    let mut e = engine("");
    let a = job("normal", 2, 0, &mut e);
    let b = job("normal", 2, 0, &mut e);
    assert_eq!(e.on_suspend(a, &user(), 10), Err(SlurmError::AccessDenied));
    assert_eq!(e.on_resume(a, &user(), 10), Err(SlurmError::AccessDenied));
    assert_eq!(
        e.on_suspend(b, &admin(), 10),
        Err(SlurmError::JobNotRunning)
    );
    assert_eq!(e.on_resume(a, &admin(), 10), Err(SlurmError::Disabled));
    assert_eq!(
        e.on_suspend(JobId(999), &admin(), 10),
        Err(SlurmError::InvalidJobId)
    );
    e.take_commands();
    e.on_suspend(a, &admin(), 10).unwrap();
    assert_eq!(signals(&e.take_commands(), a), vec![19]);
    assert_eq!(e.on_suspend(a, &admin(), 10), Err(SlurmError::Disabled));
    // Its CPUs are free while it is suspended: the next job runs there.
    e.schedule(10);
    assert_eq!(state(&e, b), JobState::Running);
    // An administrator's suspension lasts until resume; resume waits for
    // the CPUs, then continues it.
    exit(&mut e, b, 100);
    assert_eq!(state(&e, a), JobState::Suspended);
    e.on_resume(a, &admin(), 200).unwrap();
    assert_eq!(state(&e, a), JobState::Running);
    assert_eq!(e.job(a).unwrap().suspended_secs, 190);
    // squeue's TIME leaves the suspension out: 10 s before, 50 s after.
    let info = e.job_list(250);
    let shown = info.jobs.iter().find(|j| j.job_id == a).unwrap();
    assert_eq!(shown.run_time, 60);
    assert_eq!(
        (shown.suspend_time, shown.secs_pre_suspend),
        (Some(200), 10)
    );
    assert!(e.check_invariants().is_empty());
}

#[test]
fn cancelling_a_suspended_job_continues_and_ends_its_processes() {
    let mut e = engine("");
    let a = job("normal", 2, 0, &mut e);
    e.on_suspend(a, &admin(), 10).unwrap();
    e.take_commands();
    e.on_cancel(a, None, proto::SignalScope::Steps, &user(), 20)
        .unwrap();
    let cmds = e.take_commands();
    assert_eq!(state(&e, a), JobState::Cancelled);
    assert_eq!(terminate_wait(&cmds, a), Some(5));
    assert!(e.check_invariants().is_empty());
}

#[test]
fn a_suspended_job_survives_a_snapshot() {
    let mut e = engine("");
    let a = job("normal", 2, 0, &mut e);
    e.on_suspend(a, &admin(), 10).unwrap();
    let r = Engine::restore(&config(""), e.persistent_state(), 20).expect("restores");
    let j = r.job(a).unwrap();
    assert_eq!(j.state, JobState::Suspended);
    assert_eq!(j.suspend.as_ref().map(|s| s.since), Some(10));
}

#[test]
fn a_suspended_job_on_a_node_that_goes_down_is_requeued() {
    let mut e = engine("");
    let a = job("normal", 2, 0, &mut e);
    e.on_suspend(a, &admin(), 10).unwrap();
    e.on_update_node(
        &["node1".to_string()],
        Some(proto::NodeStateRequest::Down),
        Some("gone".into()),
        &admin(),
        20,
    )
    .unwrap();
    let j = e.job(a).unwrap();
    assert_eq!((j.state, j.restarts), (JobState::Pending, 1));
    assert!(j.suspend.is_none());
    assert!(e.check_invariants().is_empty());
}

/// A job as `preemption_keeps_the_engine_consistent` sees it before an
/// event: id, state, completing, its first node's name.
type Seen = (JobId, JobState, bool, String);

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Under preemption by QOS (each mode) and by partition tier, random
    /// submissions (QOS normal or high, partition low or high, 1 to 2
    /// tasks, some exclusive), job ends (of running, suspended or
    /// completing jobs), cancels, administrators' suspends and resumes,
    /// node drains, downs and resumes, and the clock's timers leave the
    /// engine consistent after every pass: no node gives more CPUs than
    /// it has, every node accounts exactly what its jobs hold, and the
    /// indexes match the jobs (`check_invariants`).
    #[test]
    fn preemption_keeps_the_engine_consistent(
        mode in proptest::sample::select(vec!["REQUEUE", "SUSPEND,GANG", "CANCEL"]),
        by_partition in proptest::bool::ANY,
        events in proptest::collection::vec((0i64..40, 0u8..7, 0u32..8), 1..60),
    ) {
        let preempt = if by_partition {
            format!("PreemptType=preempt/partition_prio\nPreemptMode={mode}\n")
        } else {
            format!("PreemptType=preempt/qos\nPreemptMode={mode}\n")
        };
        let text = format!(
            "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\nKillWait=5\n\
             SlurmdTimeout=0\n{preempt}\
             NodeName=node[1-2] CPUs=2 RealMemory=4000 Port=7001\n\
             PartitionName=low Nodes=node[1-2] Default=YES PriorityTier=1 State=UP\n\
             PartitionName=high Nodes=node[1-2] PriorityTier=5 State=UP\n"
        );
        let config = conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .expect("config parses")
        .config;
        let mut e = Engine::new(&config, 0);
        for n in ["node1", "node2"] {
            e.on_node_registered(reg(n, 2, 4000), 0).unwrap();
        }
        if !by_partition {
            e.on_assoc_tables(qos_tables("cluster", 0));
        }
        let mut t = 10;
        for (dt, what, k) in events {
            t += dt;
            let jobs: Vec<Seen> = e
                .jobs
                .values()
                .map(|j| {
                    let node = j
                        .ran_on
                        .first()
                        .map(|n| e.nodes[n.0 as usize].conf.name.clone())
                        .unwrap_or_default();
                    (j.id, j.state, j.completing, node)
                })
                .collect();
            let pick = |f: &dyn Fn(&Seen) -> bool| {
                let some: Vec<&Seen> = jobs.iter().filter(|j| f(j)).collect();
                some.get(k as usize % some.len().max(1)).map(|j| (j.0, j.3.clone()))
            };
            match what {
                0 | 1 => {
                    let mut d = desc();
                    d.ntasks = Some(1 + k % 2);
                    d.time_limit = Some(TimeLimit::Minutes(1 + k % 3));
                    d.exclusive = k == 7;
                    if by_partition {
                        d.partitions = vec![if what == 1 { "high" } else { "low" }.to_string()];
                    } else {
                        d.qos = Some(if what == 1 { "high" } else { "normal" }.to_string());
                    }
                    let _ = e.on_submit(d, &user(), t);
                }
                2 => {
                    let ends = |j: &Seen| {
                        matches!(j.1, JobState::Running | JobState::Suspended) || j.2
                    };
                    if let Some((id, node)) = pick(&ends) {
                        let _ = e.on_job_exited(id, &node, ExitCode::default(), None, t);
                    }
                }
                3 => {
                    if let Some((id, _)) = pick(&|j| j.1 == JobState::Pending || j.1 == JobState::Running) {
                        let _ = e.on_cancel(id, None, proto::SignalScope::Steps, &user(), t);
                    }
                }
                4 => {
                    if let Some((id, _)) = pick(&|j| j.1 == JobState::Running) {
                        let _ = e.on_suspend(id, &admin(), t);
                    }
                }
                5 => {
                    if let Some((id, _)) = pick(&|j| j.1 == JobState::Suspended) {
                        let _ = e.on_resume(id, &admin(), t);
                    }
                }
                _ => {
                    let state = match k % 3 {
                        0 => proto::NodeStateRequest::Drain,
                        1 => proto::NodeStateRequest::Down,
                        _ => proto::NodeStateRequest::Resume,
                    };
                    let node = format!("node{}", 1 + k % 2);
                    let _ = e.on_update_node(&[node], Some(state), Some("test".into()), &admin(), t);
                }
            }
            if e.next_wakeup().is_some_and(|w| w <= t) {
                e.on_timer(t);
            }
            e.schedule(t);
            e.take_commands();
            proptest::prop_assert_eq!(e.check_invariants(), Vec::<String>::new(), "at {}", t);
        }
    }
}

#[test]
fn a_partitions_grace_time_delays_the_kill_of_its_preempted_jobs() {
    for (kind, qos_grace, want) in [
        // partition_prio: the victim's partition's GraceTime.
        ("partition_prio", 0, 20),
        // qos: the QOS's GraceTime, else the partition's.
        ("qos", 0, 20),
        ("qos", 45, 45),
    ] {
        let text = format!(
            "ClusterName=test\nSlurmctldHost=ctl(127.0.0.1)\nSlurmUser=slurm\nKillWait=5\n\
             SlurmdTimeout=0\nPreemptType=preempt/{kind}\nPreemptMode=CANCEL\n\
             NodeName=node1 CPUs=2 RealMemory=4000 Port=7001\n\
             PartitionName=low Nodes=node1 Default=YES PriorityTier=1 GraceTime=20\n\
             PartitionName=high Nodes=node1 PriorityTier=5\n"
        );
        let cfg = conf::parse_str(&text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
            Err(std::io::Error::other("no includes"))
        })
        .unwrap()
        .config;
        let mut e = Engine::new(&cfg, 0);
        e.on_node_registered(reg("node1", 2, 4000), 0).unwrap();
        e.on_assoc_tables(qos_tables("cancel", qos_grace));
        let low = job("normal", 2, 0, &mut e);
        e.take_commands();
        let mut d = desc();
        d.partitions = vec!["high".into()];
        d.ntasks = Some(2);
        d.qos = Some("high".into());
        e.on_submit(d, &user(), 100).unwrap();
        e.schedule(100);
        let cmds = e.take_commands();
        assert_eq!(state(&e, low), JobState::Preempted, "{kind}");
        assert_eq!(terminate_wait(&cmds, low), Some(want), "{kind} {qos_grace}");
    }
}
