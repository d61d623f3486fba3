//! State directories as the release before issue 36 wrote them, checked in
//! under `tests/fixtures/` and loaded by every later build: a journal alone,
//! a snapshot alone, a snapshot followed by journal records, and a snapshot
//! with a step, a suspension and a purged job's outcome.
//!
//! `MUSTER_WRITE_FIXTURES=1 cargo test -p ctld release_fixtures` writes
//! them again with the build under test; that is only for a new format
//! version's fixtures, never to refresh these.

use super::*;
use proto::{JobDesc, NodeRegistration};
use std::path::PathBuf;

thread_local! {
    /// Snapshots leave out what the release did not have (the CPU ids of
    /// allocations and steps): set while this build writes the release's
    /// history to compare it byte for byte.
    pub(super) static AS_RELEASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn config(dir: &Path) -> conf::Config {
    let text = format!(
        "ClusterName=fx\nSlurmctldHost=h(127.0.0.1)\nStateSaveLocation={}\n\
         SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=10\n\
         NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
         PartitionName=batch Nodes=n[1-2] Default=YES\nPartitionName=debug Nodes=n1\n",
        dir.display()
    );
    conf::parse_str(&text, &dir.join("slurm.conf"), &mut |_| {
        Err(std::io::Error::other("none"))
    })
    .expect("config")
    .config
}

fn who() -> Identity {
    Identity {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        host: "login".into(),
    }
}

fn reg(name: &str) -> CtldRequest {
    CtldRequest::RegisterNode(NodeRegistration {
        name: name.into(),
        addr: "127.0.0.1".into(),
        port: 6818,
        cpus: 2,
        boards: 1,
        sockets: 2,
        cores_per_socket: 1,
        threads_per_core: 1,
        real_memory: 1000,
        free_memory: 1000,
        cpu_load: 0.0,
        gres: vec![],
        os: "Linux".into(),
        arch: "x86_64".into(),
        boot_time: 0,
        start_time: 0,
        running_jobs: vec![],
        version: "fixture".into(),
        boot_id: String::new(),
        fabric: None,
    })
}

fn job(name: &str, edit: impl FnOnce(&mut JobDesc)) -> CtldRequest {
    let mut d = JobDesc {
        name: name.into(),
        script: "#!/bin/sh\nsleep 600\n".into(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())].into(),
        work_dir: "/home/alice".into(),
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        ..JobDesc::default()
    };
    edit(&mut d);
    CtldRequest::Submit(Box::new(d))
}

fn cancel(id: u32) -> CtldRequest {
    CtldRequest::Cancel {
        job_id: JobId(id),
        signal: None,
        batch_only: false,
        full: false,
        tasks: None,
    }
}

fn run(store: &mut Store, engine: &mut Engine, reqs: Vec<CtldRequest>, now: Timestamp) {
    run_as(store, engine, who(), reqs, now)
}

fn root() -> Identity {
    Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: "h".into(),
    }
}

fn run_as(
    store: &mut Store,
    engine: &mut Engine,
    who: Identity,
    reqs: Vec<CtldRequest>,
    now: Timestamp,
) {
    let mut entries = Vec::new();
    for req in reqs {
        let e = Entry::Request {
            req: Box::new(req),
            who: who.clone(),
            now,
        };
        apply(engine, e.clone());
        entries.push(e);
    }
    let tick = Entry::Tick { now };
    apply(engine, tick.clone());
    entries.push(tick);
    store.append(&entries).unwrap();
}

/// The first half of the fixtures' history: nodes, a running job, an
/// array, a dependency, a hold and a cancellation, all in the journal.
fn first_half(store: &mut Store, engine: &mut Engine) {
    run(store, engine, vec![reg("n1"), reg("n2")], 1_700_000_000);
    run(
        store,
        engine,
        vec![
            job("solo", |_| {}),
            job("sweep", |d| d.array = Some("1-3".into())),
            job("after", |d| d.dependency = Some("afterok:1".into())),
            job("held", |d| d.hold = true),
            job("debugging", |d| {
                d.partitions = vec!["debug".into()];
                d.time_limit = Some(model::TimeLimit::Minutes(30));
            }),
        ],
        1_700_000_010,
    );
    run(store, engine, vec![cancel(5)], 1_700_000_020);
}

/// The second half, after the snapshot: more records.
fn second_half(store: &mut Store, engine: &mut Engine) {
    run(
        store,
        engine,
        vec![job("late", |d| d.hold = true), cancel(1)],
        1_700_000_030,
    );
}

/// A second history, for the parts of a job the first leaves out: a step,
/// a suspension, and the outcome of a purged job; then a snapshot.
fn rich(store: &mut Store, engine: &mut Engine) {
    let t = 1_700_000_000;
    run(store, engine, vec![reg("n1"), reg("n2")], t);
    run(
        store,
        engine,
        vec![
            job("stepping", |_| {}),
            job("suspended", |_| {}),
            job("quick", |_| {}),
        ],
        t + 10,
    );
    let step = proto::StepRequest {
        job_id: JobId(1),
        name: "hostname".into(),
        argv: vec!["hostname".into()],
        ntasks: Some(1),
        work_dir: "/home/alice".into(),
        srun_host: "login".into(),
        srun_port: 4000,
        srun_pid: 77,
        ..Default::default()
    };
    let exited = CtldRequest::JobExited {
        job_id: JobId(3),
        node: engine
            .job(JobId(3))
            .and_then(|j| j.alloc.as_ref())
            .map(|a| engine.node_infos()[a.nodes[0].node.0 as usize].name.clone())
            .unwrap_or_default(),
        exit: model::ExitCode::default(),
        launch_failed: None,
        usage: None,
        oom_kills: 0,
        script_failed: None,
    };
    run(
        store,
        engine,
        vec![CtldRequest::CreateStep(Box::new(step)), exited],
        t + 20,
    );
    run_as(
        store,
        engine,
        root(),
        vec![CtldRequest::Suspend {
            job_id: JobId(2),
            tasks: None,
        }],
        t + 30,
    );
    // The nodes answer their pings until past MinJobAge, when job 3 is
    // purged and only its outcome is kept.
    for now in (t + 100..t + 1000).step_by(100) {
        let pings: Vec<Entry> = ["n1", "n2"]
            .iter()
            .map(|n| Entry::Ping {
                node: n.to_string(),
                ok: true,
                now,
            })
            .chain([Entry::Tick { now }])
            .collect();
        for e in &pings {
            apply(engine, e.clone());
        }
        store.append(&pings).unwrap();
    }
    run(
        store,
        engine,
        vec![
            job("after-quick", |d| d.dependency = Some("afterok:3".into())),
            job("after-stepping", |d| {
                d.dependency = Some("afterok:1".into())
            }),
        ],
        t + 1000,
    );
    store.snapshot(engine).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().is_some_and(|n| n != "LOCK") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Writes the three fixtures' directories under `to`.
fn write_fixtures(to: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1_700_000_000).unwrap();
    first_half(&mut store, &mut engine);
    copy_dir(tmp.path(), &to.join("release-journal"));
    store.snapshot(&engine).unwrap();
    copy_dir(tmp.path(), &to.join("release-snapshot"));
    second_half(&mut store, &mut engine);
    copy_dir(tmp.path(), &to.join("release-snapshot-journal"));
    drop(store);
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1_700_000_000).unwrap();
    rich(&mut store, &mut engine);
    copy_dir(tmp.path(), &to.join("release-rich-snapshot"));
}

#[test]
fn write_release_fixtures_when_asked() {
    if std::env::var_os("MUSTER_WRITE_FIXTURES").is_some() {
        write_fixtures(&fixtures());
    }
}

/// The snapshot's own types keep the release's shape: the same history
/// written by this build gives the fixtures' bytes, less the CPU ids
/// that only this build's snapshots hold (optional fields, left out
/// where empty).
#[test]
fn this_build_writes_the_fixtures_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    AS_RELEASE.with(|r| r.set(true));
    write_fixtures(tmp.path());
    AS_RELEASE.with(|r| r.set(false));
    let mut compared = 0;
    for name in [
        "release-journal",
        "release-snapshot",
        "release-snapshot-journal",
        "release-rich-snapshot",
    ] {
        for e in std::fs::read_dir(fixtures().join(name)).unwrap() {
            let p = e.unwrap().path();
            let file = p.file_name().unwrap();
            let now = std::fs::read(tmp.path().join(name).join(file)).unwrap();
            assert!(now == std::fs::read(&p).unwrap(), "{} differs", p.display());
            compared += 1;
        }
    }
    assert_eq!(compared, 7);
}

/// Opens a copy of fixture `name` (opening writes to the directory).
fn open_fixture(name: &str) -> (tempfile::TempDir, Engine) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join(name), tmp.path());
    let cfg = config(tmp.path());
    let (_store, engine) = Store::open(tmp.path(), &cfg, 1_700_000_100).unwrap();
    (tmp, engine)
}

/// One line per job: id, array parent and index, name, state, partition.
fn jobs(engine: &Engine) -> Vec<String> {
    engine
        .job_list(1_700_000_100)
        .jobs
        .iter()
        .map(|j| {
            format!(
                "{} {:?}_{:?} {} {:?} {} {:?}",
                j.job_id.0, j.array_job_id, j.array_task_id, j.name, j.state, j.partition, j.reason
            )
        })
        .collect()
}

fn nodes(engine: &Engine) -> Vec<String> {
    engine
        .node_infos()
        .iter()
        .map(|n| {
            format!(
                "{} {:?} completing={} {}",
                n.name, n.state.base, n.state.completing, n.port
            )
        })
        .collect()
}

/// What every fixture holds up to the snapshot (job 5 cancelled).
const FIRST_HALF: [&str; 7] = [
    "1 None_None solo Running batch None",
    "2 Some(2)_Some(3) sweep Running batch None",
    "3 None_None after Pending batch Dependency",
    "4 None_None held Pending batch JobHeldUser",
    "5 None_None debugging Cancelled debug None",
    "6 Some(2)_Some(1) sweep Running batch None",
    "7 Some(2)_Some(2) sweep Running batch None",
];

fn check_common(name: &str, engine: &Engine) {
    assert_eq!(
        engine.layout(),
        (
            vec!["n1".to_string(), "n2".to_string()],
            vec!["batch".to_string(), "debug".to_string()]
        ),
        "{name}"
    );
    let partitions: Vec<String> = engine
        .partition_infos()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(partitions, ["batch", "debug"], "{name}");
    // Scripts, environments and descriptions come back from their tables.
    let held = engine.job(JobId(4)).expect("job 4");
    assert_eq!(&*held.script, "#!/bin/sh\nsleep 600\n", "{name}");
    assert_eq!(
        held.env.to_vec(),
        vec![("PATH".to_string(), "/usr/bin:/bin".to_string())],
        "{name}"
    );
    assert_eq!(held.desc.work_dir, "/home/alice", "{name}");
    let debugging = engine.job(JobId(5)).expect("job 5");
    assert_eq!(
        debugging.time_limit,
        model::TimeLimit::Minutes(30),
        "{name}"
    );
    assert!(
        engine.check_invariants().is_empty(),
        "{name}: {:?}",
        engine.check_invariants()
    );
}

#[test]
fn a_journal_of_the_release_before_issue_36_replays() {
    let (_tmp, engine) = open_fixture("release-journal");
    check_common("release-journal", &engine);
    assert_eq!(jobs(&engine), FIRST_HALF);
    assert_eq!(
        nodes(&engine),
        [
            "n1 Allocated completing=false 6818",
            "n2 Allocated completing=false 6818"
        ]
    );
    assert_eq!(engine.persistent_state().next_job_id, 8);
}

#[test]
fn a_snapshot_of_the_release_before_issue_36_restores() {
    let (_tmp, engine) = open_fixture("release-snapshot");
    check_common("release-snapshot", &engine);
    assert_eq!(jobs(&engine), FIRST_HALF);
    assert_eq!(
        nodes(&engine),
        [
            "n1 Allocated completing=false 6818",
            "n2 Allocated completing=false 6818"
        ]
    );
    assert_eq!(engine.persistent_state().next_job_id, 8);
}

#[test]
fn a_snapshot_and_journal_of_the_release_before_issue_36_restore_and_replay() {
    let (_tmp, engine) = open_fixture("release-snapshot-journal");
    check_common("release-snapshot-journal", &engine);
    let mut expected = FIRST_HALF.to_vec();
    expected[0] = "1 None_None solo Cancelled batch None";
    expected[2] = "3 None_None after Pending batch DependencyNeverSatisfied";
    expected.push("8 None_None late Pending batch JobHeldUser");
    assert_eq!(jobs(&engine), expected);
    assert_eq!(
        nodes(&engine),
        [
            "n1 Allocated completing=true 6818",
            "n2 Allocated completing=false 6818"
        ]
    );
    assert_eq!(engine.persistent_state().next_job_id, 9);
}

#[test]
fn a_snapshot_of_the_release_with_steps_suspensions_and_outcomes_restores() {
    let (_tmp, engine) = open_fixture("release-rich-snapshot");
    assert_eq!(
        jobs(&engine),
        [
            "1 None_None stepping Running batch None",
            "2 None_None suspended Suspended batch None",
            "4 None_None after-quick Running batch None",
            "5 None_None after-stepping Pending batch Dependency",
        ]
    );
    let stepping = engine.job(JobId(1)).expect("job 1");
    assert_eq!(stepping.steps.len(), 1);
    assert_eq!(stepping.steps[0].name, "hostname");
    assert_eq!(stepping.steps[0].srun, "login:77");
    let suspended = engine.job(JobId(2)).expect("job 2");
    assert!(suspended.suspend.as_ref().is_some_and(|s| s.by_admin));
    assert_eq!(
        engine.job(JobId(5)).expect("job 5").dep_status,
        engine::DepStatus::Waiting
    );
    // Job 3 was purged; its outcome is kept for dependencies on it.
    assert!(engine.job(JobId(3)).is_none());
    let state = engine.persistent_state();
    assert_eq!(state.outcomes.len(), 1);
    assert_eq!(state.outcomes[0].0, JobId(3));
    assert_eq!(state.next_job_id, 6);
    assert_eq!(
        nodes(&engine),
        [
            "n1 Allocated completing=false 6818",
            "n2 Idle completing=false 6818"
        ]
    );
    assert!(
        engine.check_invariants().is_empty(),
        "{:?}",
        engine.check_invariants()
    );
}

/// A job's id, its CPU ids on each node, and each step's on each node.
type JobCpuIds = (u32, Vec<Vec<u32>>, Vec<Vec<Vec<u32>>>);

/// The CPU ids each job holds and each of its steps runs on.
fn cpu_ids(engine: &Engine) -> Vec<JobCpuIds> {
    (1..=8)
        .filter_map(|id| engine.job(JobId(id)))
        .map(|j| {
            let alloc = j
                .alloc
                .as_ref()
                .map(|a| a.nodes.iter().map(|n| n.cpu_ids.clone()).collect())
                .unwrap_or_default();
            (
                j.id.0,
                alloc,
                j.steps.iter().map(|s| s.cpu_ids.clone()).collect(),
            )
        })
        .collect()
}

/// Issue 37: this build's snapshots hold the CPU ids of allocations and
/// steps, and a restore keeps them; the release's (without ids) restore
/// with the lowest free ids given to its running jobs, none shared.
#[test]
fn issue_37_snapshots_keep_the_cpu_ids_of_jobs_and_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1_700_000_000).unwrap();
    rich(&mut store, &mut engine);
    let before = cpu_ids(&engine);
    assert!(
        before.iter().any(|(_, alloc, steps)| !alloc.is_empty()
            && !steps.is_empty()
            && !steps[0].is_empty()),
        "{before:?}"
    );
    drop(store);
    let (_store, reopened) = Store::open(tmp.path(), &cfg, 1_700_000_100).unwrap();
    assert_eq!(cpu_ids(&reopened), before);
    assert!(reopened.check_invariants().is_empty());

    let (_tmp, old) = open_fixture("release-rich-snapshot");
    let running = cpu_ids(&old);
    assert!(running.iter().any(|(_, alloc, _)| !alloc.is_empty()));
    assert!(
        old.check_invariants().is_empty(),
        "{:?}",
        old.check_invariants()
    );
}
