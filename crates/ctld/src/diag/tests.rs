use super::*;

fn who(uid: u32, user: &str) -> Identity {
    Identity {
        uid,
        gid: uid,
        user: user.into(),
        host: "h".into(),
    }
}

#[test]
fn requests_are_named_by_slurm_message_type() {
    assert_eq!(rpc_type(&CtldRequest::Ping), ("REQUEST_PING", 1008));
    assert_eq!(rpc_type(&CtldRequest::ListJobs), ("REQUEST_JOB_INFO", 2003));
    assert_eq!(
        rpc_type(&CtldRequest::Diag { reset: true }),
        ("REQUEST_STATS_INFO", 2035)
    );
    let inner = CtldRequest::InSession {
        seq: 1,
        request: Box::new(CtldRequest::ListNodes),
    };
    assert_eq!(rpc_type(&inner), ("REQUEST_NODE_INFO", 2007));
}

#[test]
fn requests_are_booked_by_type_and_by_user() {
    let mut s = Stats::new(100);
    for (req, w) in [
        (CtldRequest::Ping, who(0, "root")),
        (CtldRequest::ListJobs, who(1000, "alice")),
        (CtldRequest::ListJobs, who(1000, "alice")),
    ] {
        let p = Stats::begin(&req, &w);
        s.finish(Some(p));
    }
    s.finish(None);
    let types: Vec<(&str, u32, u32)> = s
        .by_type
        .iter()
        .map(|((n, id), (c, _))| (*n, *id, *c))
        .collect();
    assert_eq!(
        types,
        vec![("REQUEST_JOB_INFO", 2003, 2), ("REQUEST_PING", 1008, 1)]
    );
    let users: Vec<(u32, &str, u32)> = s
        .by_user
        .iter()
        .map(|(uid, (u, (c, _)))| (*uid, u.as_str(), *c))
        .collect();
    assert_eq!(users, vec![(0, "root", 1), (1000, "alice", 2)]);
}

#[test]
fn job_records_count_submissions_starts_and_ends_once() {
    let mut s = Stats::new(0);
    let (a, b, c) = (JobId(1), JobId(2), JobId(3));
    s.observe(a, JobState::Pending, true);
    s.observe(a, JobState::Pending, true);
    s.observe(a, JobState::Running, true);
    s.observe(a, JobState::Completed, true);
    // A record after the end (accounting update) counts nothing again.
    s.observe(a, JobState::Completed, true);
    s.observe(b, JobState::Pending, true);
    s.observe(b, JobState::Cancelled, true);
    s.observe(c, JobState::Pending, true);
    s.observe(c, JobState::Running, true);
    s.observe(c, JobState::Timeout, true);
    // Learnt after a restart: followed, not counted.
    s.observe(JobId(4), JobState::Pending, false);
    assert_eq!(
        (s.submitted, s.started, s.completed, s.canceled, s.failed),
        (3, 2, 1, 1, 1)
    );
    assert_eq!((s.n_pending, s.n_running), (1, 0));
    s.observe(JobId(5), JobState::Pending, true);
    s.observe(JobId(5), JobState::Running, true);
    assert_eq!((s.n_pending, s.n_running), (1, 1));
    s.observe(JobId(5), JobState::Suspended, true);
    s.observe(JobId(5), JobState::Running, true);
    // A resume is no start.
    assert_eq!((s.started, s.n_running), (3, 1));
}

#[test]
fn ticks_with_a_pass_are_cycles_and_backfills_are_backfill_cycles() {
    let mut s = Stats::new(0);
    let zero = PassStats::default();
    // A tick without a pass is no cycle.
    s.note_tick(&zero, &zero, 50, 10);
    assert_eq!(s.schedule.total_cycles, 0);
    let one = PassStats {
        passes: 1,
        last_depth: 3,
        started: 1,
        backfilled: 0,
        last_backfilled: 0,
    };
    s.note_tick(&zero, &one, 200, 11);
    let two = PassStats {
        passes: 2,
        last_depth: 5,
        started: 3,
        backfilled: 1,
        last_backfilled: 1,
    };
    s.note_tick(&one, &two, 100, 12);
    let m = &s.schedule;
    assert_eq!(
        (
            m.last_cycle,
            m.max_cycle,
            m.total_cycles,
            m.cycle_sum,
            m.depth_sum
        ),
        (100, 200, 2, 300, 8)
    );
    let b = &s.backfill;
    assert_eq!(
        (
            b.total_cycles,
            b.last_cycle_when,
            b.last_cycle,
            b.last_depth
        ),
        (1, 12, 100, 5)
    );
}
