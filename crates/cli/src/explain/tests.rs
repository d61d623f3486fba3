use super::*;
use model::JobId;
use proto::ExplainNode;

fn utc() {
    std::env::set_var("TZ", "UTC");
}

#[test]
fn a_planned_job_is_explained_in_words() {
    utc();
    let x = JobExplanation {
        job_id: JobId(42),
        user: "alice".into(),
        partition: "debug".into(),
        state: JobState::Pending,
        reason: PendingReason::Resources,
        priority: 4_294_901_757,
        position: Some(3),
        n_queued: 5,
        ahead: Some((JobId(41), 4_294_901_758)),
        first: Some((JobId(39), 4_294_901_760)),
        request: "2 nodes, 4 CPUs".into(),
        time_limit: TimeLimit::Minutes(60),
        start_time: Some(7200),
        planned_nodes: vec!["node1".into(), "node2".into()],
        waits_for: vec![(JobId(40), 7200), (JobId(38), 3600)],
        candidates: vec![
            ExplainNode {
                name: "node1".into(),
                state: "allocated".into(),
                cpus: 2,
                alloc_cpus: 2,
                jobs: vec![(JobId(40), Some(7200))],
            },
            ExplainNode {
                name: "node2".into(),
                state: "drained".into(),
                cpus: 2,
                alloc_cpus: 0,
                jobs: vec![],
            },
        ],
        reservations: vec![],
    };
    assert_eq!(
        render(&x, 100),
        "\
Job 42 (alice, partition debug) is PENDING.
It asks for 2 nodes, 4 CPUs with a time limit of 1:00:00.
It waits because the resources it needs are in use by running jobs.
Queue: 3rd of 5 jobs the scheduler tries, in priority order, with priority 4294901757; job 41 just ahead has 4294901758 (1 more); the first, job 39, has 4294901760.
Nodes that could run it: 1 of 2 in its partition are up.
  node1        allocated  2/2 CPUs in use, running job 40 until 1970-01-01T02:00:00
  node2        drained    0/2 CPUs in use, nothing running
Expected start: 1970-01-01T02:00:00 on node[1-2], when job 40 reaches its time limit at 1970-01-01T02:00:00 (the last of 2 running jobs on those nodes). Jobs that end early make it sooner.
"
    );
}

/// A plan over the pool (`bf_plan=auto` where every job spreads, or
/// `bf_plan=pool`) names no nodes: the CPUs come from the partition.
#[test]
fn a_job_planned_over_the_pool_is_explained_in_words() {
    utc();
    let x = JobExplanation {
        job_id: JobId(42),
        user: "alice".into(),
        partition: "debug".into(),
        state: JobState::Pending,
        reason: PendingReason::Resources,
        priority: 4_294_901_757,
        position: Some(1),
        n_queued: 2,
        ahead: None,
        first: Some((JobId(42), 4_294_901_757)),
        request: "1 node, 3 CPUs".into(),
        time_limit: TimeLimit::Minutes(60),
        start_time: Some(7200),
        planned_nodes: vec![],
        waits_for: vec![(JobId(40), 7200), (JobId(38), 3600)],
        candidates: vec![],
        reservations: vec![],
    };
    let text = render(&x, 100);
    let last = text.lines().last().unwrap();
    assert_eq!(
        last,
        "Expected start: 1970-01-01T02:00:00, on CPUs counted over partition debug, when job 40 reaches its time limit at 1970-01-01T02:00:00 (the last of 2 running jobs in the partition that end by then). Jobs that end early make it sooner."
    );
}

#[test]
fn a_job_without_a_plan_is_told_why_it_may_have_none() {
    utc();
    let x = JobExplanation {
        job_id: JobId(43),
        user: "bob".into(),
        partition: "debug".into(),
        state: JobState::Pending,
        reason: PendingReason::Priority,
        priority: 100,
        position: Some(2),
        n_queued: 2,
        ahead: Some((JobId(42), 200)),
        first: Some((JobId(42), 200)),
        request: "1 node, 1 CPU".into(),
        time_limit: TimeLimit::Minutes(10),
        start_time: None,
        planned_nodes: vec![],
        waits_for: vec![],
        candidates: vec![],
        reservations: vec![],
    };
    let text = render(&x, 100);
    assert!(
        text.ends_with(
            "Expected start: unknown. It holds no plan: a pass plans the first blocked job of \
             each partition and, by default, every blocked job of at least a quarter of one; the \
             others start where they fit without delaying those plans, shortest time limit first \
             (or in priority order with bf_order=priority). A job gets none either when it cannot \
             start within the backfill window or is not tried.\n"
        ),
        "{text}"
    );
    assert!(text.contains("It waits because jobs with higher priority are queued ahead of it"));
}

#[test]
fn ordinals() {
    assert_eq!(ordinal(1), "1st");
    assert_eq!(ordinal(2), "2nd");
    assert_eq!(ordinal(3), "3rd");
    assert_eq!(ordinal(11), "11th");
    assert_eq!(ordinal(22), "22nd");
    assert_eq!(ordinal(104), "104th");
}

/// A job kept off nodes by a maintenance reservation is told which.
#[test]
fn a_job_waiting_for_maintenance_names_the_reservation() {
    utc();
    let x = JobExplanation {
        job_id: JobId(44),
        user: "bob".into(),
        partition: "debug".into(),
        state: JobState::Pending,
        reason: PendingReason::ReservedForMaint,
        priority: 100,
        position: Some(1),
        n_queued: 1,
        ahead: None,
        first: Some((JobId(44), 100)),
        request: "1 node, 1 CPU".into(),
        time_limit: TimeLimit::Minutes(120),
        start_time: None,
        planned_nodes: vec![],
        waits_for: vec![],
        candidates: vec![],
        reservations: vec!["maint".into()],
    };
    let text = render(&x, 100);
    assert!(
        text.contains("It waits because a maintenance reservation holds the nodes it could use before its time limit would end.\nReservations in its way: maint (`scontrol show reservation`).\n"),
        "{text}"
    );
}
