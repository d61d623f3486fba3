use super::*;

const J: JobId = JobId(7);

#[test]
fn launch_then_finish_leaves_table_empty() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    assert_eq!(t.started(J, 100, 100), AfterStart::Run);
    assert!(t.is_running(J, 100));
    assert_eq!(t.running_groups(), vec![(J, 100)]);
    let entry = t.finished(J, 100).unwrap();
    assert_eq!(
        entry.phase,
        Phase::Running {
            pid: 100,
            pgid: 100
        }
    );
    assert!(t.is_empty());
    assert!(!t.is_running(J, 100));
}

#[test]
fn second_launch_of_same_job_is_refused() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    assert_eq!(t.begin_launch(J), Err(Refusal::AlreadyHere));
    t.started(J, 5, 5);
    assert_eq!(t.begin_launch(J), Err(Refusal::AlreadyHere));
    assert_eq!(t.len(), 1);
}

#[test]
fn aborted_launch_forgets_job_but_not_a_running_one() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    t.abort_launch(J);
    assert!(t.is_empty());
    t.begin_launch(J).unwrap();
    t.started(J, 9, 9);
    t.abort_launch(J);
    assert_eq!(t.job_ids(), vec![J]);
}

#[test]
fn signal_targets_shell_or_group() {
    let mut t = JobTable::new();
    assert_eq!(t.signal_target(J, false), Err(Refusal::NoSuchJob));
    assert_eq!(Refusal::NoSuchJob.message(), "no such job");
    t.begin_launch(J).unwrap();
    assert_eq!(t.signal_target(J, false), Err(Refusal::Starting));
    t.started(J, 42, 41);
    assert_eq!(t.signal_target(J, true), Ok(SignalTarget::Process(42)));
    assert_eq!(t.signal_target(J, false), Ok(SignalTarget::Group(41)));
    assert_eq!(SignalTarget::Process(42).kill_arg(), 42);
    assert_eq!(SignalTarget::Group(41).kill_arg(), -41);
}

#[test]
fn terminate_while_starting_is_applied_when_started() {
    let mut t = JobTable::new();
    assert_eq!(t.terminate(J, 30), Err(Refusal::NoSuchJob));
    t.begin_launch(J).unwrap();
    assert_eq!(t.terminate(J, 30), Ok(TerminateAction::Deferred));
    assert_eq!(t.started(J, 3, 3), AfterStart::Terminate(30));
}

#[test]
fn repeated_terminate_keeps_shorter_kill_wait() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    t.started(J, 3, 3);
    assert_eq!(
        t.terminate(J, 10),
        Ok(TerminateAction::Signal {
            pid: 3,
            pgid: 3,
            kill_wait: 10
        })
    );
    assert_eq!(
        t.terminate(J, 30),
        Ok(TerminateAction::Signal {
            pid: 3,
            pgid: 3,
            kill_wait: 10
        })
    );
    assert_eq!(
        t.terminate(J, 1),
        Ok(TerminateAction::Signal {
            pid: 3,
            pgid: 3,
            kill_wait: 1
        })
    );
}

#[test]
fn stale_pid_does_not_finish_job() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    t.started(J, 3, 3);
    assert_eq!(t.finished(J, 4), None);
    assert_eq!(t.finished(JobId(8), 3), None);
    assert_eq!(t.len(), 1);
}

#[test]
fn reattached_job_runs_and_can_be_terminated() {
    let mut t = JobTable::new();
    t.reattach(J, 50, 50).unwrap();
    assert_eq!(t.reattach(J, 51, 51), Err(Refusal::AlreadyHere));
    assert_eq!(t.begin_launch(J), Err(Refusal::AlreadyHere));
    assert!(t.is_running(J, 50));
    assert_eq!(t.signal_target(J, false), Ok(SignalTarget::Group(50)));
    assert_eq!(
        t.terminate(J, 5),
        Ok(TerminateAction::Signal {
            pid: 50,
            pgid: 50,
            kill_wait: 5
        })
    );
    assert!(t.finished(J, 50).is_some());
    assert!(t.is_empty());
}

#[test]
fn after_stop_launches_are_refused_and_jobs_still_starting_are_killed() {
    let mut t = JobTable::new();
    t.begin_launch(J).unwrap();
    let running = JobId(8);
    t.begin_launch(running).unwrap();
    t.started(running, 50, 50);
    assert_eq!(t.stop(), vec![(running, 50)]);
    // The launch in flight gets its process: killed, not left to run.
    assert_eq!(t.started(J, 60, 60), AfterStart::Kill);
    assert_eq!(t.begin_launch(JobId(9)), Err(Refusal::Stopping));
    assert_eq!(t.len(), 2);
}
