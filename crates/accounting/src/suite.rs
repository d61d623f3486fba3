//! The conformance suite every [`AccountingStore`] backend must pass
//! (style.md §6.5). Each backend's tests call [`conformance_suite`] with a
//! factory that returns a fresh, empty store per call.
//!
//! It panics (as a test does) on the first failed check, naming the check.

use model::{ExitCode, JobId, JobState, TimeLimit, Timestamp};
use proto::{AcctJob, AcctStep, StepId, StepUsage};

use crate::{AccountingStore, JobQuery, SCHEMA_VERSION};

/// A store factory: each call returns a new, empty store.
pub type MakeStore<'a> = &'a mut dyn FnMut() -> Box<dyn AccountingStore>;

/// Runs every check, each on a fresh store from `make`.
pub fn conformance_suite(make: MakeStore<'_>) {
    schema_is_current(make());
    empty_store_returns_nothing(make());
    round_trip_with_steps_and_usage(make());
    out_of_memory_round_trips(make());
    replayed_writes_replace(make());
    replay_within_one_batch_keeps_the_last(make());
    filters(make());
    time_window_without_states(make());
    time_window_with_states(make());
    long_jobs_are_found_in_late_windows(make());
    ordering(make());
    thousand_jobs_in_one_batch(make());
    reused_job_ids_are_distinct_records(make());
    association_tables_round_trip(make());
    usage_rollups(make());
    reservation_windows(make());
}

/// Reservation windows: written, replaced by (cluster, name, start),
/// selected by overlap with a window, by start then name, per cluster.
fn reservation_windows(mut s: Box<dyn AccountingStore>) {
    let w = |cluster: &str, name: &str, start: Timestamp, end: Timestamp| proto::resv::AcctResv {
        cluster: cluster.into(),
        name: name.into(),
        start,
        end,
        nodes: "n[1-2]".into(),
        tres: "cpu=4".into(),
        flags: "MAINT,SPEC_NODES".into(),
        cpus: 4,
        used_cpu_secs: 0,
        unused_wall: (end - start) as f64,
    };
    assert!(s.resvs("c1", None, None).expect("read").is_empty());
    s.put_resv(&w("c1", "b", 100, 200)).expect("write");
    s.put_resv(&w("c1", "a", 100, 300)).expect("write");
    s.put_resv(&w("c1", "d", 86_500, 86_600)).expect("write");
    s.put_resv(&w("c2", "a", 100, 300)).expect("write");
    // Deleted before it began: no window at all.
    s.put_resv(&w("c1", "e", 500, 500)).expect("write");
    // The same window again: replaced (deleted early, used by a job).
    let mut early = w("c1", "b", 100, 150);
    early.used_cpu_secs = 100;
    early.unused_wall = 25.0;
    s.put_resv(&early).expect("write");
    let all = s.resvs("c1", None, None).expect("read");
    let names: Vec<(&str, Timestamp)> = all.iter().map(|r| (r.name.as_str(), r.start)).collect();
    assert_eq!(names, [("a", 100), ("b", 100), ("d", 86_500)]);
    assert_eq!(all[1], early);
    let later = s.resvs("c1", Some(160), Some(86_501)).expect("read");
    let names: Vec<&str> = later.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "d"]);
}

/// A plausible finished job: `cluster`, `job_id`, submitted at `submit`,
/// eligible at once, started 10 s later, ended 100 s later, with a batch
/// and an extern step.
pub fn sample_job(cluster: &str, job_id: u32, submit: Timestamp) -> AcctJob {
    AcctJob {
        cluster: cluster.to_owned(),
        job_id: JobId(job_id),
        array_job_id: None,
        array_task_id: None,
        array_task_str: None,
        name: "job".to_owned(),
        user: "alice".to_owned(),
        uid: 1000,
        gid: 1000,
        account: "physics".to_owned(),
        qos: "normal".to_owned(),
        partition: "debug".to_owned(),
        state: JobState::Completed,
        cancelled_by: None,
        reason: "None".to_owned(),
        exit_code: ExitCode::default(),
        priority: 4294901750,
        submit_time: submit,
        eligible_time: Some(submit),
        start_time: Some(submit + 10),
        end_time: Some(submit + 110),
        time_limit: TimeLimit::Minutes(60),
        nodes: "n1".to_owned(),
        n_nodes: 1,
        n_cpus: 2,
        req_mem: "500M".to_owned(),
        req_tres: "billing=2,cpu=2,mem=500M,node=1".to_owned(),
        alloc_tres: "billing=2,cpu=2,mem=500M,node=1".to_owned(),
        work_dir: "/home/alice".to_owned(),
        submit_line: "sbatch job.sh".to_owned(),
        comment: None,
        suspended_secs: 0,
        steps: vec![
            step(StepId::Batch, "batch", submit + 10, Some(submit + 110)),
            step(StepId::Extern, "extern", submit + 10, Some(submit + 110)),
        ],
        container: None,
    }
}

fn step(id: StepId, name: &str, start: Timestamp, end: Option<Timestamp>) -> AcctStep {
    AcctStep {
        step: id,
        name: name.to_owned(),
        state: if end.is_some() {
            JobState::Completed
        } else {
            JobState::Running
        },
        exit_code: ExitCode::default(),
        start_time: Some(start),
        end_time: end,
        nodes: "n1".to_owned(),
        n_nodes: 1,
        n_cpus: 2,
        n_tasks: 1,
        alloc_tres: "cpu=2,mem=500M,node=1".to_owned(),
        usage: StepUsage::default(),
        container: None,
    }
}

fn all(store: &dyn AccountingStore) -> Vec<AcctJob> {
    store.query(&JobQuery::default()).expect("query all")
}

/// (cluster, job id, submit time) of each result, in order.
fn keys(jobs: &[AcctJob]) -> Vec<(String, u32, Timestamp)> {
    jobs.iter()
        .map(|j| (j.cluster.clone(), j.job_id.0, j.submit_time))
        .collect()
}

fn ids(store: &dyn AccountingStore, q: &JobQuery) -> Vec<u32> {
    store
        .query(q)
        .unwrap_or_else(|e| panic!("query {q:?}: {e}"))
        .iter()
        .map(|j| j.job_id.0)
        .collect()
}

fn schema_is_current(store: Box<dyn AccountingStore>) {
    assert_eq!(store.schema_version(), SCHEMA_VERSION, "schema_is_current");
}

fn empty_store_returns_nothing(store: Box<dyn AccountingStore>) {
    assert_eq!(all(&*store), vec![], "empty_store_returns_nothing");
}

fn round_trip_with_steps_and_usage(mut store: Box<dyn AccountingStore>) {
    let mut job = sample_job("c1", 42, 1_700_000_000);
    job.array_job_id = Some(40);
    job.array_task_id = Some(2);
    job.name = "it's \"quoted\"; DROP TABLE jobs; -- ✓".to_owned();
    job.state = JobState::Cancelled;
    job.cancelled_by = Some(0);
    job.exit_code = ExitCode {
        code: 0,
        signal: 15,
    };
    job.time_limit = TimeLimit::Unlimited;
    job.comment = Some("a comment".to_owned());
    // sacct's Container, on the job and on a step (issue 42).
    job.container = Some("/images/pytorch.sqsh".to_owned());
    let mut s0 = step(
        StepId::Numbered(0),
        "hostname",
        1_700_000_020,
        Some(1_700_000_030),
    );
    s0.state = JobState::Failed;
    s0.exit_code = ExitCode { code: 3, signal: 0 };
    s0.container = Some("nvcr.io#nvidia/pytorch:24.01-py3".to_owned());
    s0.usage = StepUsage {
        user_cpu_usec: Some(1_234_567),
        sys_cpu_usec: Some(89),
        max_rss_kib: Some(20_480),
        ave_rss_kib: Some(10_240),
        max_vmsize_kib: Some(123_456),
        max_rss_node: Some("n1".to_owned()),
        max_rss_task: Some(3),
        min_cpu_usec: Some(1_000),
        min_cpu_node: Some("n2".to_owned()),
        n_tasks: Some(4),
        ..StepUsage::default()
    };
    job.steps.push(s0);
    store.put_job(&job).expect("put_job");
    let got = store
        .query(&JobQuery {
            job_ids: vec![42],
            ..JobQuery::default()
        })
        .expect("query");
    assert_eq!(got, vec![job], "round_trip_with_steps_and_usage");
}

/// A job and step the OOM killer ended (issue 37) come back as they were
/// stored, and `sacct -s OOM` finds them.
fn out_of_memory_round_trips(mut store: Box<dyn AccountingStore>) {
    let oom = ExitCode {
        code: 0,
        signal: 125,
    };
    let mut job = sample_job("c1", 43, 1_700_000_000);
    job.state = JobState::OutOfMemory;
    job.exit_code = oom;
    let mut s0 = step(
        StepId::Numbered(0),
        "python3",
        1_700_000_020,
        Some(1_700_000_030),
    );
    s0.state = JobState::OutOfMemory;
    s0.exit_code = oom;
    job.steps.push(s0);
    store.put_job(&job).expect("put_job");
    store
        .put_job(&sample_job("c1", 44, 1_700_000_000))
        .expect("put_job");
    let got = store
        .query(&JobQuery {
            states: vec![JobState::OutOfMemory],
            ..JobQuery::default()
        })
        .expect("query");
    assert_eq!(got, vec![job], "out_of_memory_round_trips");
}

fn replayed_writes_replace(mut store: Box<dyn AccountingStore>) {
    // The writer reports the job at submit, at start and at end; each write
    // is the whole record. A crash makes it replay them.
    let done = sample_job("c1", 7, 1000);
    let mut pending = done.clone();
    pending.state = JobState::Pending;
    pending.reason = "Priority".to_owned();
    pending.start_time = None;
    pending.end_time = None;
    pending.nodes = "None assigned".to_owned();
    pending.steps = vec![];
    let mut running = done.clone();
    running.state = JobState::Running;
    running.end_time = None;
    running.steps = vec![step(StepId::Batch, "batch", 1010, None)];

    for stage in [&pending, &running, &done] {
        store.put_job(stage).expect("put_job");
        assert_eq!(
            all(&*store),
            vec![stage.clone()],
            "replayed_writes_replace: {:?}",
            stage.state
        );
    }
    // A replay of the whole history, in one batch and one by one.
    store
        .put_jobs(&[pending.clone(), running.clone(), done.clone()])
        .expect("put_jobs");
    store.put_job(&done).expect("put_job");
    store.put_job(&done).expect("put_job");
    assert_eq!(
        all(&*store),
        vec![done.clone()],
        "replayed_writes_replace: replay"
    );

    // Steps are replaced with the record's list, never merged.
    let mut fewer = done.clone();
    fewer.steps.truncate(1);
    store.put_job(&fewer).expect("put_job");
    assert_eq!(
        all(&*store),
        vec![fewer],
        "replayed_writes_replace: steps replaced"
    );
}

fn replay_within_one_batch_keeps_the_last(mut store: Box<dyn AccountingStore>) {
    let first = sample_job("c1", 9, 500);
    let mut second = first.clone();
    second.state = JobState::Failed;
    second.exit_code = ExitCode { code: 1, signal: 0 };
    store.put_jobs(&[first, second.clone()]).expect("put_jobs");
    assert_eq!(
        all(&*store),
        vec![second],
        "replay_within_one_batch_keeps_the_last"
    );
}

fn filters(mut store: Box<dyn AccountingStore>) {
    let mk = |id: u32, user: &str, account: &str, state: JobState, name: &str, part: &str| {
        let mut j = sample_job("c1", id, 1000 + Timestamp::from(id));
        j.user = user.to_owned();
        j.account = account.to_owned();
        j.state = state;
        j.name = name.to_owned();
        j.partition = part.to_owned();
        j
    };
    let mut other_cluster = mk(7, "alice", "physics", JobState::Completed, "a", "debug");
    other_cluster.cluster = "c2".to_owned();
    store
        .put_jobs(&[
            mk(1, "alice", "physics", JobState::Completed, "a", "debug"),
            mk(2, "bob", "physics", JobState::Failed, "b", "debug"),
            mk(3, "alice", "chem", JobState::Running, "a", "gpu"),
            mk(4, "carol", "chem", JobState::Pending, "c", "gpu"),
            mk(5, "bob", "bio", JobState::Cancelled, "a", "long"),
            mk(6, "carol", "physics", JobState::Timeout, "b", "debug"),
            other_cluster,
        ])
        .expect("put_jobs");

    let q = JobQuery::default;
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let cases: Vec<(&str, JobQuery, Vec<u32>)> = vec![
        ("none", q(), vec![1, 2, 3, 4, 5, 6, 7]),
        (
            "cluster",
            JobQuery {
                cluster: Some("c1".into()),
                ..q()
            },
            vec![1, 2, 3, 4, 5, 6],
        ),
        (
            "cluster c2",
            JobQuery {
                cluster: Some("c2".into()),
                ..q()
            },
            vec![7],
        ),
        (
            "unknown cluster",
            JobQuery {
                cluster: Some("zz".into()),
                ..q()
            },
            vec![],
        ),
        (
            "ids",
            JobQuery {
                job_ids: vec![6, 2, 99],
                ..q()
            },
            vec![2, 6],
        ),
        (
            "users",
            JobQuery {
                users: s(&["bob", "carol"]),
                ..q()
            },
            vec![2, 4, 5, 6],
        ),
        (
            "accounts",
            JobQuery {
                accounts: s(&["chem"]),
                ..q()
            },
            vec![3, 4],
        ),
        (
            "states",
            JobQuery {
                states: vec![JobState::Failed, JobState::Timeout, JobState::Failed],
                ..q()
            },
            vec![2, 6],
        ),
        (
            "names",
            JobQuery {
                names: s(&["a"]),
                ..q()
            },
            vec![1, 3, 5, 7],
        ),
        (
            "partitions",
            JobQuery {
                partitions: s(&["gpu", "long"]),
                ..q()
            },
            vec![3, 4, 5],
        ),
        (
            "combined",
            JobQuery {
                cluster: Some("c1".into()),
                users: s(&["alice", "bob"]),
                names: s(&["a"]),
                partitions: s(&["debug", "long"]),
                ..q()
            },
            vec![1, 5],
        ),
        (
            "no match",
            JobQuery {
                users: s(&["alice"]),
                accounts: s(&["bio"]),
                ..q()
            },
            vec![],
        ),
    ];
    for (what, query, want) in cases {
        assert_eq!(ids(&*store, &query), want, "filters: {what}");
    }
}

/// Jobs for the time-window checks, all against the window [100, 200].
fn window_jobs() -> Vec<AcctJob> {
    let mk = |id: u32, state: JobState, times: [Option<Timestamp>; 4]| {
        let mut j = sample_job("c1", id, times[0].expect("submit"));
        j.state = state;
        j.eligible_time = times[1];
        j.start_time = times[2];
        j.end_time = times[3];
        j
    };
    use JobState::*;
    vec![
        // submit, eligible, start, end
        mk(1, Completed, [Some(10), Some(10), Some(20), Some(90)]), // ended before
        mk(2, Completed, [Some(10), Some(10), Some(20), Some(150)]), // ended inside
        mk(3, Running, [Some(140), Some(150), Some(160), None]),    // started inside
        mk(4, Completed, [Some(240), Some(250), Some(260), Some(300)]), // eligible after
        mk(5, Running, [Some(10), Some(50), Some(60), None]),       // running throughout
        mk(6, Pending, [Some(120), None, None, None]),              // held: never eligible
        mk(7, Completed, [Some(190), Some(190), Some(195), Some(300)]), // spans the end
        mk(8, Completed, [Some(10), Some(10), Some(50), Some(100)]), // ends on the start
        mk(9, Pending, [Some(150), Some(200), None, None]),         // eligible on the end
        mk(10, Pending, [Some(250), Some(250), None, None]),        // submitted after
        mk(11, Cancelled, [Some(110), Some(110), None, Some(130)]), // cancelled while pending
        mk(12, Failed, [Some(10), Some(10), Some(20), Some(250)]),  // spans the window
    ]
}

fn time_window_without_states(mut store: Box<dyn AccountingStore>) {
    store.put_jobs(&window_jobs()).expect("put_jobs");
    let w = |start, end| JobQuery {
        start,
        end,
        ..JobQuery::default()
    };
    let cases = [
        (
            "[100, 200]",
            w(Some(100), Some(200)),
            vec![2, 5, 8, 12, 11, 3, 9, 7],
        ),
        (
            "[100, -]",
            w(Some(100), None),
            vec![2, 5, 8, 12, 11, 3, 9, 7, 4, 10],
        ),
        (
            "[-, 200]",
            w(None, Some(200)),
            vec![1, 2, 5, 8, 12, 11, 3, 9, 7],
        ),
        // Still running or still eligible and pending: in every later window.
        ("[400, 500]", w(Some(400), Some(500)), vec![5, 3, 9, 10]),
        ("[0, 5]", w(Some(0), Some(5)), vec![]),
    ];
    for (what, query, want) in cases {
        assert_eq!(
            ids(&*store, &query),
            want,
            "time_window_without_states: {what}"
        );
    }
}

/// A backend may bound its search by the longest time a job took from
/// submission to end; a job that took far longer than the others, written
/// in any batch, in any cluster, is still found in a window near its end,
/// and so is a job that has not ended.
fn long_jobs_are_found_in_late_windows(mut store: Box<dyn AccountingStore>) {
    let job = |cluster: &str, id: u32, submit: Timestamp, end: Option<Timestamp>| {
        let mut j = sample_job(cluster, id, submit);
        j.user = "alice".into();
        j.eligible_time = Some(submit);
        j.start_time = Some(submit + 1);
        j.end_time = end;
        if end.is_none() {
            j.state = JobState::Running;
        }
        j
    };
    // Short jobs (100 s from submission to end), every 50 s.
    let short: Vec<AcctJob> = (0..200)
        .map(|i| {
            job(
                "c1",
                100 + i,
                50 * Timestamp::from(i),
                Some(50 * Timestamp::from(i) + 100),
            )
        })
        .collect();
    store.put_jobs(&short).expect("put_jobs short");
    // Written later, alone: submitted at 0, ended at 9,000.
    store
        .put_job(&job("c1", 1, 0, Some(9_000)))
        .expect("put_job long");
    // Another cluster's long job; and a job of c1 still running since 20.
    store
        .put_jobs(&[job("c2", 2, 0, Some(8_000)), job("c1", 3, 20, None)])
        .expect("put_jobs");
    let w = |cluster: Option<&str>, start, end| JobQuery {
        cluster: cluster.map(str::to_owned),
        users: vec!["alice".into()],
        start: Some(start),
        end: Some(end),
        ..JobQuery::default()
    };
    let cases = [
        (
            "c1 [8990, 8995]",
            w(Some("c1"), 8_990, 8_995),
            vec![1, 3, 278, 279],
        ),
        (
            "c1 [9000, 9000]",
            w(Some("c1"), 9_000, 9_000),
            vec![1, 3, 278, 279, 280],
        ),
        (
            "c1 [9001, 9010]",
            w(Some("c1"), 9_001, 9_010),
            vec![3, 279, 280],
        ),
        ("c2 [7999, 8000]", w(Some("c2"), 7_999, 8_000), vec![2]),
        (
            "all [7999, 8000]",
            w(None, 7_999, 8_000),
            vec![1, 2, 3, 258, 259, 260],
        ),
        ("c1 [20000, 30000]", w(Some("c1"), 20_000, 30_000), vec![3]),
    ];
    for (what, query, want) in cases {
        assert_eq!(
            ids(&*store, &query),
            want,
            "long_jobs_are_found_in_late_windows: {what}"
        );
    }
    // A replay that shortens the long job changes what is found, not
    // whether the others are.
    store.put_job(&job("c1", 1, 0, Some(500))).expect("replay");
    assert_eq!(
        ids(&*store, &w(Some("c1"), 8_990, 8_995)),
        vec![3, 278, 279],
        "long_jobs_are_found_in_late_windows: after the replay"
    );
}

/// For the upgrade tests: a job of alice in c1 that took 9,000 s from
/// submission (at 0) to end, and 200 that took 100 s each (ids 100 to
/// 299, one every 50 s).
pub fn span_jobs() -> (AcctJob, Vec<AcctJob>) {
    let job = |id: u32, submit: Timestamp, end: Timestamp| {
        let mut j = sample_job("c1", id, submit);
        j.user = "alice".into();
        j.eligible_time = Some(submit);
        j.start_time = Some(submit + 1);
        j.end_time = Some(end);
        j
    };
    let short = (0..200)
        .map(|i| {
            job(
                100 + i,
                50 * Timestamp::from(i),
                50 * Timestamp::from(i) + 100,
            )
        })
        .collect();
    (job(1, 0, 9_000), short)
}

/// alice's jobs in c1 during [8990, 8995]: with [`span_jobs`], the ids in
/// [`LATE_WINDOW_IDS`].
pub fn late_window() -> JobQuery {
    JobQuery {
        cluster: Some("c1".into()),
        users: vec!["alice".into()],
        start: Some(8_990),
        end: Some(8_995),
        ..JobQuery::default()
    }
}

/// What [`late_window`] finds among [`span_jobs`].
pub const LATE_WINDOW_IDS: [u32; 3] = [1, 278, 279];

fn time_window_with_states(mut store: Box<dyn AccountingStore>) {
    store.put_jobs(&window_jobs()).expect("put_jobs");
    let w = |states: Vec<JobState>| JobQuery {
        states,
        start: Some(100),
        end: Some(200),
        ..JobQuery::default()
    };
    use JobState::*;
    let cases = [
        // Pending during the window, whether eligible or not.
        ("PENDING", w(vec![Pending]), vec![6, 9]),
        ("RUNNING", w(vec![Running]), vec![5, 3]),
        // A final state counts when the job ended inside the window.
        ("COMPLETED", w(vec![Completed]), vec![2, 8]),
        ("CANCELLED,FAILED", w(vec![Cancelled, Failed]), vec![11]),
        (
            "RUNNING,COMPLETED",
            w(vec![Completed, Running]),
            vec![2, 5, 8, 3],
        ),
    ];
    for (what, query, want) in cases {
        assert_eq!(
            ids(&*store, &query),
            want,
            "time_window_with_states: {what}"
        );
    }
}

fn ordering(mut store: Box<dyn AccountingStore>) {
    // Submit time first, then job id (ids restart after a controller reset,
    // so a later job can have a smaller id), then cluster.
    let jobs = [
        sample_job("c1", 30, 300),
        sample_job("c2", 5, 100),
        sample_job("c1", 5, 100),
        sample_job("c1", 4, 100),
        sample_job("c1", 2, 200),
    ];
    for j in &jobs {
        store.put_job(j).expect("put_job");
    }
    let want = vec![
        ("c1".to_owned(), 4, 100),
        ("c1".to_owned(), 5, 100),
        ("c2".to_owned(), 5, 100),
        ("c1".to_owned(), 2, 200),
        ("c1".to_owned(), 30, 300),
    ];
    assert_eq!(keys(&all(&*store)), want, "ordering");
}

fn thousand_jobs_in_one_batch(mut store: Box<dyn AccountingStore>) {
    let users = ["alice", "bob", "carol", "dave"];
    let jobs: Vec<AcctJob> = (1..=1000u32)
        .map(|i| {
            let mut j = sample_job("c1", i, 10_000 + Timestamp::from(i));
            j.user = users[i as usize % users.len()].to_owned();
            j
        })
        .collect();
    store.put_jobs(&jobs).expect("put_jobs of 1000");
    let got = all(&*store);
    assert_eq!(got.len(), 1000, "thousand_jobs_in_one_batch: count");
    assert_eq!(got, jobs, "thousand_jobs_in_one_batch: records and order");
    let bobs = ids(
        &*store,
        &JobQuery {
            users: vec!["bob".into()],
            ..JobQuery::default()
        },
    );
    assert_eq!(bobs.len(), 250, "thousand_jobs_in_one_batch: by user");
    assert!(
        bobs.iter().all(|i| i % 4 == 1),
        "thousand_jobs_in_one_batch: by user"
    );
    // Replaying the batch changes nothing.
    store.put_jobs(&jobs).expect("replayed put_jobs of 1000");
    assert_eq!(
        all(&*store).len(),
        1000,
        "thousand_jobs_in_one_batch: replay"
    );
}

fn reused_job_ids_are_distinct_records(mut store: Box<dyn AccountingStore>) {
    let a = sample_job("c1", 100, 1000);
    let b = sample_job("c2", 100, 1000);
    let mut c = sample_job("c1", 100, 5000);
    c.user = "bob".to_owned();
    store
        .put_jobs(&[c.clone(), a.clone(), b.clone()])
        .expect("put_jobs");
    let got = store
        .query(&JobQuery {
            job_ids: vec![100],
            ..JobQuery::default()
        })
        .expect("query");
    assert_eq!(
        got,
        vec![a.clone(), b, c.clone()],
        "reused_job_ids_are_distinct_records"
    );
    let c1 = store
        .query(&JobQuery {
            cluster: Some("c1".into()),
            job_ids: vec![100],
            ..JobQuery::default()
        })
        .expect("query");
    assert_eq!(
        c1,
        vec![a, c],
        "reused_job_ids_are_distinct_records: one cluster"
    );
}

/// A small association database: a cluster, an account tree, users with
/// admin levels, associations with limits, and two QOS.
pub fn sample_tables() -> proto::acctdb::AcctTables {
    use proto::acctdb::*;
    let assoc = |id, account: &str, user: &str, parent: &str| Assoc {
        id,
        cluster: "c1".into(),
        account: account.into(),
        user: user.into(),
        partition: String::new(),
        parent: parent.into(),
        shares: 1,
        ..Assoc::default()
    };
    let mut limited = assoc(3, "physics", "alice", "");
    limited.limits.max_jobs = Some(4);
    limited.limits.grp_tres = Some("cpu=8,mem=4G".into());
    limited.limits.max_wall = Some(60);
    limited.qos = vec!["high".into(), "normal".into()];
    limited.default_qos = Some("normal".into());
    limited.partition = "debug".into();
    let mut high = Qos::new(2, "high");
    high.priority = 100;
    high.limits.max_jobs = Some(10);
    AcctTables {
        clusters: vec![AcctCluster { name: "c1".into() }],
        accounts: vec![
            AcctAccount {
                name: "physics".into(),
                description: "physics dept".into(),
                organization: "science".into(),
            },
            AcctAccount {
                name: "root".into(),
                description: "default root account".into(),
                organization: "root".into(),
            },
        ],
        users: vec![
            AcctUser {
                name: "alice".into(),
                default_account: "physics".into(),
                admin_level: AdminLevel::Operator,
            },
            AcctUser {
                name: "root".into(),
                default_account: "root".into(),
                admin_level: AdminLevel::Administrator,
            },
        ],
        assocs: vec![
            assoc(1, "root", "", ""),
            assoc(2, "physics", "", "root"),
            limited,
            assoc(4, "root", "root", ""),
        ],
        qos: vec![high, Qos::new(1, "normal")],
    }
}

fn association_tables_round_trip(mut store: Box<dyn AccountingStore>) {
    let empty = store.load_tables().expect("load empty tables");
    assert_eq!(empty, Default::default(), "a new store has no associations");
    let t = sample_tables();
    store.save_tables(&t).expect("save tables");
    assert_eq!(store.load_tables().expect("load"), t, "tables round trip");
    // Saving again replaces: a removed user and association are gone.
    let mut smaller = t.clone();
    smaller.users.retain(|u| u.name != "alice");
    smaller.assocs.retain(|a| a.user != "alice");
    store.save_tables(&smaller).expect("save smaller");
    assert_eq!(store.load_tables().expect("load"), smaller, "save replaces");
    // Job records are untouched by table writes.
    store.put_job(&sample_job("c1", 9, 100)).expect("put");
    store.save_tables(&t).expect("save again");
    assert_eq!(all(&*store).len(), 1, "jobs survive table writes");
}

fn usage_rollups(mut store: Box<dyn AccountingStore>) {
    use crate::usage::{roll_up, Period, DAY, HOUR};
    assert_eq!(
        store.rolled_to("c1").expect("rolled_to"),
        None,
        "never rolled"
    );
    // Day 1000 (UTC): alice runs 2 CPUs 01:00-03:30, bob 1 CPU 02:00-02:30.
    let d = 1000 * DAY;
    let mut a = sample_job("c1", 1, d);
    a.start_time = Some(d + HOUR);
    a.end_time = Some(d + 3 * HOUR + 1800);
    a.n_cpus = 2;
    let mut b = sample_job("c1", 2, d);
    b.user = "bob".into();
    b.account = "chem".into();
    b.start_time = Some(d + 2 * HOUR);
    b.end_time = Some(d + 2 * HOUR + 1800);
    b.n_cpus = 1;
    store.put_jobs(&[a, b]).expect("put");
    let now = d + 5 * HOUR + 60;
    let to = roll_up(&mut *store, "c1", 4, now).expect("roll up");
    assert_eq!(to, d + 5 * HOUR, "rolled to the hour in progress");
    assert_eq!(
        store.rolled_to("c1").expect("rolled_to"),
        Some(d + 5 * HOUR)
    );
    let hours = store.usage("c1", Period::Hour, d, d + DAY).expect("hours");
    let of = |acct: &str, user: &str| -> Vec<(i64, i64)> {
        hours
            .iter()
            .filter(|r| r.account == acct && r.user == user)
            .map(|r| ((r.start - d) / HOUR, r.alloc_secs))
            .collect()
    };
    assert_eq!(
        of("physics", "alice"),
        vec![(1, 7200), (2, 7200), (3, 3600)],
        "alice by hour"
    );
    assert_eq!(of("chem", "bob"), vec![(2, 1800)], "bob by hour");
    let cluster = of("", "");
    assert_eq!(
        cluster.len(),
        6,
        "an hour row per hour, the one in progress included"
    );
    assert_eq!(cluster[2], (2, 9000), "cluster allocation in hour 2");
    let days = store.usage("c1", Period::Day, d, d + DAY).expect("days");
    let day = |acct: &str| {
        days.iter()
            .find(|r| r.account == acct)
            .map(|r| r.alloc_secs)
    };
    assert_eq!(day("physics"), Some(18000), "alice's day");
    assert_eq!(day("chem"), Some(1800), "bob's day");
    let total = days
        .iter()
        .find(|r| r.account.is_empty())
        .expect("cluster day row");
    assert_eq!(total.capacity_secs, 4 * (5 * HOUR + 60), "capacity so far");
    let months = store
        .usage("c1", Period::Month, 0, d + 40 * DAY)
        .expect("months");
    assert_eq!(
        months
            .iter()
            .find(|r| r.account == "physics")
            .map(|r| r.alloc_secs),
        Some(18000),
        "alice's month"
    );
    // Rolling up again changes nothing: rows are replaced, never added.
    roll_up(&mut *store, "c1", 4, now).expect("roll up again");
    assert_eq!(
        store.usage("c1", Period::Hour, d, d + DAY).expect("hours"),
        hours,
        "idempotent"
    );
}
