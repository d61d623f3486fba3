//! Job arrays and dependencies in the engine.

use crate::tests::{admin, desc, engine, launched, other, submit as sub, user};
use crate::Engine;
use model::{ExitCode, JobId, JobState, PendingReason};
use proto::{JobDesc, SlurmError};

fn array(spec: &str) -> JobDesc {
    JobDesc {
        array: Some(spec.into()),
        ..desc()
    }
}

/// The tasks still pending in an array's own record.
fn pending(e: &Engine, id: JobId) -> String {
    let a = e.job(id).and_then(|j| j.array.as_ref());
    a.map(|a| a.pending.to_string()).unwrap_or_default()
}

fn exit(e: &mut Engine, id: JobId, code: i32, now: i64) {
    let node = e.job(id).unwrap().ran_on[0];
    let name = e.nodes[node.0 as usize].conf.name.clone();
    e.on_job_exited(id, &name, ExitCode { code, signal: 0 }, None, now)
        .unwrap();
    e.schedule(now);
}

fn ids(e: &Engine) -> Vec<String> {
    e.job_list(0)
        .jobs
        .iter()
        .filter(|j| !j.state.is_finished())
        .map(|j| j.display_id())
        .collect()
}

#[test]
fn an_array_is_one_record_until_its_tasks_start() {
    let mut e = engine();
    // 8 CPUs: a blocker takes them all, so the array waits as one record.
    let mut big = desc();
    big.ntasks = Some(8);
    let blocker = sub(&mut e, big, 1);
    let a = sub(&mut e, array("0-999"), 2);
    assert_eq!(e.jobs.len(), 2);
    assert_eq!(ids(&e), vec![blocker.to_string(), format!("{a}_[0-999]")]);
    e.take_commands();
    exit(&mut e, blocker, 0, 3);
    // Eight tasks start, each its own record with a new id.
    let started = launched(&e.take_commands());
    assert_eq!(started.len(), 8);
    assert_eq!(e.jobs.len(), 10);
    let first = e.job(JobId(started[0].1)).unwrap();
    assert_eq!(first.array.as_ref().unwrap().task_id, Some(0));
    assert_eq!(pending(&e, a), "8-999");
    assert_eq!(e.job(a).unwrap().reason, PendingReason::Resources);
    assert!(e.check_invariants().is_empty());
}

#[test]
fn task_environment_and_output_names() {
    let mut e = engine();
    let mut d = array("0-15:4");
    d.stdout = Some("o-%A_%a.txt".into());
    let a = sub(&mut e, d, 1);
    let cmds = e.take_commands();
    let launches: Vec<_> = cmds
        .iter()
        .filter_map(|c| match c {
            crate::Command::LaunchBatch { launch, .. } => Some(launch.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(launches.len(), 4);
    let last = &launches[3];
    // The last task keeps the array's own id.
    assert_eq!(last.job_id, a);
    assert_eq!(last.stdout, format!("/tmp/w/o-{a}_12.txt"));
    let get = |l: &proto::BatchLaunch, k: &str| {
        l.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    };
    let t0 = &launches[0];
    assert_ne!(t0.job_id, a);
    assert_eq!(get(t0, "SLURM_JOB_ID"), Some(t0.job_id.to_string()));
    assert_eq!(get(t0, "SLURM_ARRAY_JOB_ID"), Some(a.to_string()));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK_ID").as_deref(), Some("0"));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK_COUNT").as_deref(), Some("4"));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK_MIN").as_deref(), Some("0"));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK_MAX").as_deref(), Some("12"));
    assert_eq!(get(t0, "SLURM_ARRAY_TASK_STEP").as_deref(), Some("4"));
    assert_eq!(t0.stdout, format!("/tmp/w/o-{a}_0.txt"));
}

#[test]
fn throttle_limits_running_tasks_and_can_be_changed() {
    let mut e = engine();
    let a = sub(&mut e, array("0-9%2"), 1);
    assert_eq!(launched(&e.take_commands()).len(), 2);
    assert!(ids(&e).contains(&format!("{a}_[2-9%2]")), "{:?}", ids(&e));
    e.touch();
    e.schedule(2);
    assert_eq!(e.job(a).unwrap().reason, PendingReason::JobArrayTaskLimit);
    let u = proto::JobUpdate {
        array_throttle: Some(5),
        ..Default::default()
    };
    e.on_update_tasks(a, None, u, &user(), 3).unwrap();
    e.schedule(3);
    assert_eq!(launched(&e.take_commands()).len(), 3);
    // A failed task does not stop the others.
    let running: Vec<JobId> = e
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running)
        .map(|j| j.id)
        .collect();
    exit(&mut e, running[0], 1, 4);
    assert_eq!(e.job(running[0]).unwrap().state, JobState::Failed);
    assert_eq!(launched(&e.take_commands()).len(), 1);
}

#[test]
fn single_tasks_split_for_cancel_hold_and_release() {
    let mut e = engine();
    let mut big = desc();
    big.ntasks = Some(8);
    sub(&mut e, big, 1);
    let a = sub(&mut e, array("1-5"), 2);
    let three = model::array::TaskSet::single(3);
    e.on_cancel_tasks(a, Some(&three), None, proto::SignalScope::Steps, &user(), 3)
        .unwrap();
    let two_four = model::array::TaskSet::parse("2,4").unwrap();
    e.on_hold_tasks(a, Some(&two_four), true, &user(), 3)
        .unwrap();
    let list = e.job_list(3);
    let shown: Vec<(String, JobState, PendingReason)> = list
        .jobs
        .iter()
        .filter(|j| j.array_job_id == Some(a.0))
        .map(|j| (j.display_id(), j.state, j.reason))
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                format!("{a}_[1,5]"),
                JobState::Pending,
                PendingReason::Resources
            ),
            (format!("{a}_3"), JobState::Cancelled, PendingReason::None),
            (
                format!("{a}_2"),
                JobState::Pending,
                PendingReason::JobHeldUser
            ),
            (
                format!("{a}_4"),
                JobState::Pending,
                PendingReason::JobHeldUser
            ),
        ]
    );
    assert_eq!(
        e.on_cancel_tasks(
            a,
            Some(&three),
            None,
            proto::SignalScope::Steps,
            &other(),
            4
        ),
        Err(SlurmError::AccessDenied)
    );
    e.on_release_tasks(a, Some(&model::array::TaskSet::single(2)), &user(), 4)
        .unwrap();
    // The whole array: every record.
    e.on_cancel_tasks(a, None, None, proto::SignalScope::Steps, &admin(), 5)
        .unwrap();
    assert!(e
        .jobs
        .values()
        .filter(|j| j.array.is_some())
        .all(|j| j.state == JobState::Cancelled));
    assert_eq!(
        e.on_submit(array("0-1001"), &user(), 6).err(),
        Some(SlurmError::InvalidArray)
    );
    assert_eq!(
        e.on_submit(array("0-3%0"), &user(), 6).err(),
        Some(SlurmError::InvalidArray)
    );
}

fn dep(text: &str) -> JobDesc {
    JobDesc {
        dependency: Some(text.into()),
        ..desc()
    }
}

#[test]
fn afterok_afternotok_and_any() {
    let mut e = engine();
    let a = sub(&mut e, desc(), 1);
    let ok = sub(&mut e, dep(&format!("afterok:{a}")), 1);
    let notok = sub(&mut e, dep(&format!("afternotok:{a}")), 1);
    let either = sub(&mut e, dep(&format!("afterok:{a}?afternotok:{a}")), 1);
    assert_eq!(e.job(ok).unwrap().reason, PendingReason::Dependency);
    assert_eq!(
        e.job_info(e.job(ok).unwrap(), 1).dependency.as_deref(),
        Some(format!("afterok:{a}(unfulfilled)").as_str())
    );
    exit(&mut e, a, 0, 2);
    assert_eq!(e.job(ok).unwrap().state, JobState::Running);
    assert_eq!(e.job(either).unwrap().state, JobState::Running);
    let n = e.job(notok).unwrap();
    assert_eq!(n.state, JobState::Pending);
    assert_eq!(n.reason, PendingReason::DependencyNeverSatisfied);
    assert_eq!(
        e.job_info(n, 2).dependency.as_deref(),
        Some(format!("afternotok:{a}(failed)").as_str())
    );
    assert_eq!(e.job_info(e.job(ok).unwrap(), 2).dependency, None);
}

#[test]
fn kill_on_invalid_dep_delay_and_purged_jobs() {
    let mut e = engine();
    // Nodes stay up however long the test's clock runs.
    e.settings.slurmd_timeout = 0;
    let a = sub(&mut e, desc(), 1);
    let mut d = dep(&format!("afterok:{a}"));
    d.kill_on_invalid_dep = Some(true);
    let killed = sub(&mut e, d, 1);
    let later = sub(&mut e, dep(&format!("afterany:{a}+1")), 1);
    exit(&mut e, a, 3, 10);
    assert_eq!(e.job(killed).unwrap().state, JobState::Cancelled);
    assert_eq!(
        e.job(killed).unwrap().reason,
        PendingReason::DependencyNeverSatisfied
    );
    assert_eq!(e.job(later).unwrap().state, JobState::Pending);
    assert_eq!(e.next_wakeup(), Some(70));
    e.on_timer(70);
    e.schedule(70);
    assert_eq!(e.job(later).unwrap().state, JobState::Running);
    // Long after `a` is purged its result still counts.
    e.on_timer(10_000);
    assert!(e.job(a).is_none());
    let never = sub(&mut e, dep(&format!("afterok:{a}")), 10_001);
    assert_eq!(
        e.job(never).unwrap().reason,
        PendingReason::DependencyNeverSatisfied
    );
    let runs = sub(&mut e, dep(&format!("afternotok:{a}")), 10_001);
    assert_eq!(e.job(runs).unwrap().state, JobState::Running);
    // A job id never seen is dropped, as Slurm does.
    let unknown = sub(&mut e, dep("afterok:999999"), 10_002);
    assert_eq!(e.job(unknown).unwrap().state, JobState::Running);
}

#[test]
fn bad_dependencies_are_refused() {
    let mut e = engine();
    let a = sub(&mut e, desc(), 1);
    for bad in ["afterok", "bogus:1", "afterok:x"] {
        assert_eq!(
            e.on_submit(dep(bad), &user(), 2).err(),
            Some(SlurmError::Dependency),
            "{bad}"
        );
    }
    let b = sub(&mut e, dep(&format!("afterany:{a}")), 2);
    let c = sub(&mut e, dep(&format!("afterany:{b}")), 2);
    let mut hold = desc();
    hold.hold = true;
    let h = sub(&mut e, hold, 2);
    let u = |d: String| proto::JobUpdate {
        dependency: Some(d),
        ..Default::default()
    };
    assert_eq!(
        e.on_update_job(b, u(format!("afterok:{c}")), &user(), 3),
        Err(SlurmError::CircularDependency)
    );
    assert_eq!(
        e.on_update_job(h, u(format!("afterok:{h}")), &user(), 3),
        Err(SlurmError::Dependency)
    );
    e.on_update_job(h, u(format!("afterok:{c}")), &user(), 3)
        .unwrap();
    assert_eq!(e.job(h).unwrap().reason, PendingReason::JobHeldUser);
}

#[test]
fn dependencies_on_arrays_tasks_and_aftercorr() {
    let mut e = engine();
    let a = sub(&mut e, array("0-2"), 1);
    let whole = sub(&mut e, dep(&format!("afterok:{a}")), 1);
    let one = sub(&mut e, dep(&format!("afterok:{a}_1")), 1);
    let mut corr = array("0-2");
    corr.dependency = Some(format!("aftercorr:{a}"));
    let c = sub(&mut e, corr, 1);
    e.take_commands();
    let task = |e: &Engine, arr: JobId, t: u32| {
        *e.array_tasks
            .get(&arr)
            .and_then(|m| m.get(&t))
            .unwrap_or_else(|| panic!("no task {arr}_{t}: {:?}", e.array_tasks))
    };
    let t1 = task(&e, a, 1);
    exit(&mut e, t1, 0, 2);
    assert_eq!(e.job(one).unwrap().state, JobState::Running);
    assert_eq!(e.job(whole).unwrap().state, JobState::Pending);
    // Task 1 of the second array may run; 0 and 2 wait for their partners.
    let c1 = task(&e, c, 1);
    assert_eq!(e.job(c1).unwrap().state, JobState::Running);
    assert_eq!(pending(&e, c), "0,2");
    let t0 = task(&e, a, 0);
    exit(&mut e, t0, 1, 3);
    let c0 = task(&e, c, 0);
    assert_eq!(
        e.job(c0).unwrap().reason,
        PendingReason::DependencyNeverSatisfied
    );
    let t2 = task(&e, a, 2);
    exit(&mut e, t2, 0, 4);
    assert_eq!(
        e.job(whole).unwrap().reason,
        PendingReason::DependencyNeverSatisfied
    );
    assert_eq!(e.job(task(&e, c, 2)).unwrap().state, JobState::Running);
}

#[test]
fn singleton_runs_one_job_per_name_and_user() {
    let mut e = engine();
    let mut s = dep("singleton");
    s.name = "one".into();
    let first = sub(&mut e, s.clone(), 1);
    let second = sub(&mut e, s.clone(), 1);
    assert_eq!(e.job(first).unwrap().state, JobState::Running);
    assert_eq!(e.job(second).unwrap().reason, PendingReason::Dependency);
    exit(&mut e, first, 0, 2);
    assert_eq!(e.job(second).unwrap().state, JobState::Running);
}

#[test]
fn a_user_cannot_release_an_administrators_hold() {
    let mut e = engine();
    let mut d = desc();
    d.hold = true;
    let id = sub(&mut e, d, 1);
    assert_eq!(e.job(id).unwrap().reason, PendingReason::JobHeldUser);
    e.on_hold(id, false, &admin()).unwrap();
    assert_eq!(e.job(id).unwrap().reason, PendingReason::JobHeldAdmin);
    assert_eq!(e.on_release(id, &user()), Err(SlurmError::AccessDenied));
    // Slurm: "Invalid user id for job N" for another user's job.
    assert_eq!(e.on_release(id, &other()), Err(SlurmError::InvalidUserId));
    e.on_release(id, &admin()).unwrap();
    e.schedule(2);
    assert_eq!(e.job(id).unwrap().state, JobState::Running);
}

#[test]
fn requeue_keeps_the_id_records_the_old_run_and_appends() {
    let mut e = engine();
    e.settings.cred_expire = 0;
    let id = sub(&mut e, desc(), 1);
    e.take_commands();
    e.on_requeue(id, false, &user(), 5).unwrap();
    let old: Vec<proto::AcctJob> = e
        .take_commands()
        .into_iter()
        .filter_map(|c| match c {
            crate::Command::AcctRecord(r) => Some(*r),
            _ => None,
        })
        .collect();
    assert_eq!(old[0].state, JobState::Requeued);
    assert_eq!(old[0].submit_time, 1);
    let j = e.job(id).unwrap();
    assert_eq!(
        (j.state, j.restarts, j.submit_time),
        (JobState::Pending, 1, 5)
    );
    // The old run's end releases the node; the job runs again, appending.
    e.on_job_exited(
        id,
        "node1",
        ExitCode {
            code: 0,
            signal: 15,
        },
        None,
        6,
    )
    .unwrap();
    e.schedule(6);
    let launch = e
        .take_commands()
        .into_iter()
        .find_map(|c| match c {
            crate::Command::LaunchBatch { launch, .. } => Some(launch),
            _ => None,
        })
        .expect("launched again");
    assert_eq!(launch.job_id, id);
    assert!(launch.open_append);
    assert!(launch
        .env
        .iter()
        .any(|(k, v)| k == "SLURM_RESTART_COUNT" && v == "1"));
}

#[test]
fn issue_35_array_default_output_is_slurm_array_job_task() {
    let mut e = engine();
    let a = sub(&mut e, array("0-3"), 1);
    let launches: Vec<_> = e
        .take_commands()
        .into_iter()
        .filter_map(|c| match c {
            crate::Command::LaunchBatch { launch, .. } => Some(launch),
            _ => None,
        })
        .collect();
    assert_eq!(launches.len(), 4);
    for l in &launches {
        let task = e.job(l.job_id).unwrap().array.as_ref().unwrap().task_id;
        let path = format!("/tmp/w/slurm-{a}_{}.out", task.unwrap());
        assert_eq!((&l.stdout, &l.stderr), (&path, &path));
    }
}

#[test]
fn issue_35_output_paths_are_shown_from_submission_with_node_codes_as_written() {
    let mut e = engine();
    // Held: still pending, yet StdOut= already names the file.
    let mut d = desc();
    d.hold = true;
    d.stdout = Some("o-%j-%N.txt".into());
    d.stderr = Some("/tmp/e-%x-%u-%t.txt".into());
    d.user = "alice".into();
    let id = sub(&mut e, d, 1);
    let show = |e: &Engine, id: JobId| {
        let j = e.job_info(e.job(id).unwrap(), 2);
        (j.stdout, j.stderr)
    };
    assert_eq!(
        show(&e, id),
        (
            format!("/tmp/w/o-{id}-%N.txt"),
            "/tmp/e-job-alice-%t.txt".to_string()
        )
    );
    // squeue -O STDOUT,STDERR: the patterns as given, anchored (real
    // squeue 22.05: `/tmp/realslurm-queries/nb/o-%j-%N-%x-%u-%4j-%%.txt`
    // where scontrol showed `.../o-29-%N-wrap-root-%4j-%%.txt`).
    let j = e.job_info(e.job(id).unwrap(), 2);
    assert_eq!(j.stdout_pattern.as_deref(), Some("/tmp/w/o-%j-%N.txt"));
    assert_eq!(j.stderr_pattern.as_deref(), Some("/tmp/e-%x-%u-%t.txt"));
    // An array's record shows the default with its ids (real scontrol
    // 22.05: `StdOut=/tmp/realslurm-queries/nb/slurm-28_4294967294.out`
    // for a held `--array=1-3`), in squeue too.
    let mut d = array("0-3");
    d.hold = true;
    let a = sub(&mut e, d, 1);
    let path = format!("/tmp/w/slurm-{a}_4294967294.out");
    assert_eq!(show(&e, a), (path.clone(), path));
    let j = e.job_info(e.job(a).unwrap(), 2);
    assert_eq!((j.stdout_pattern, j.stderr_pattern), (None, None));
}

#[test]
fn issue_35_a_failed_condition_of_an_or_dependency_says_failed() {
    // Slurm shows each condition's own state: `afterok:A(failed)?afterok:
    // B(unfulfilled)` once A has failed and B still runs (squeue %E,
    // scontrol Dependency=).
    let mut e = engine();
    let a = sub(&mut e, desc(), 1);
    let b = sub(&mut e, desc(), 1);
    let or = sub(&mut e, dep(&format!("afterok:{a}?afterok:{b}")), 1);
    exit(&mut e, a, 1, 2);
    let j = e.job(or).unwrap();
    assert_eq!(
        (j.state, j.reason),
        (JobState::Pending, PendingReason::Dependency)
    );
    assert_eq!(
        e.job_info(j, 2).dependency.as_deref(),
        Some(format!("afterok:{a}(failed)?afterok:{b}(unfulfilled)").as_str())
    );
    exit(&mut e, b, 0, 3);
    assert_eq!(e.job(or).unwrap().state, JobState::Running);
}

/// `JobFilter::job_ids` with an array's id selects the array's record and
/// every task split off it (restd's `job/{id}` asks this way); a task's
/// own id selects that task alone.
#[test]
fn a_query_by_an_arrays_id_has_its_tasks() {
    let mut e = engine();
    let a = sub(&mut e, array("0-9"), 0);
    let other_job = sub(&mut e, desc(), 0);
    let listed = |e: &Engine, id: u32| -> Vec<String> {
        let filter = proto::JobFilter {
            job_ids: vec![id],
            ..Default::default()
        };
        e.job_query(&filter, 0)
            .jobs
            .iter()
            .map(|j| j.display_id())
            .collect()
    };
    let of_array = listed(&e, a.0);
    assert!(
        of_array.len() > 1,
        "started tasks and the rest: {of_array:?}"
    );
    assert!(
        of_array
            .iter()
            .all(|id| id.starts_with(&format!("{}_", a.0))),
        "{of_array:?}"
    );
    let all = ids(&e);
    let from_all: Vec<&String> = all
        .iter()
        .filter(|id| id.starts_with(&format!("{}_", a.0)))
        .collect();
    assert_eq!(of_array.iter().collect::<Vec<_>>(), from_all);
    let task = e
        .job_list(0)
        .jobs
        .iter()
        .find(|j| j.array_job_id == Some(a.0) && j.job_id != a)
        .map(|j| j.job_id.0)
        .expect("a task split off");
    assert_eq!(listed(&e, task).len(), 1);
    assert_eq!(listed(&e, other_job.0), vec![other_job.0.to_string()]);
}
