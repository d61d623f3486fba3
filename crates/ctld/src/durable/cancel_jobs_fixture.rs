//! A journal with a filtered scancel's record (`CancelJobs`, issue 44),
//! checked in under `tests/fixtures/cancel-jobs-journal/` and replayed by
//! every later build; this build writes it byte for byte.
//!
//! `MUSTER_WRITE_FIXTURES=1 cargo test -p ctld cancel_jobs_fixture`
//! writes it (only when it is new, never to refresh it).

use super::*;
use proto::{JobDesc, JobSelect, NodeRegistration};
use std::path::PathBuf;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cancel-jobs-journal")
}

fn config(dir: &Path) -> conf::Config {
    let text = format!(
        "ClusterName=fx\nSlurmctldHost=h(127.0.0.1)\nStateSaveLocation={}\n\
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

fn identity(uid: u32, user: &str) -> Identity {
    Identity {
        uid,
        gid: uid,
        user: user.into(),
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

fn job(name: &str, partition: &str, who: &Identity) -> CtldRequest {
    CtldRequest::Submit(Box::new(JobDesc {
        name: name.into(),
        script: "#!/bin/sh\nsleep 600\n".into(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())].into(),
        work_dir: "/home/x".into(),
        partitions: vec![partition.into()],
        hold: true,
        uid: who.uid,
        gid: who.gid,
        user: who.user.clone(),
        ..JobDesc::default()
    }))
}

fn run(store: &mut Store, engine: &mut Engine, who: &Identity, reqs: Vec<CtldRequest>, now: i64) {
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

/// Alice's and Bob's held jobs, then `scancel -u alice -n a -p batch -t PD`
/// (and the ids 1-3 typed beside it) as root, then Alice's `scancel --me -n c`.
fn write(dir: &Path) {
    let cfg = config(dir);
    let (mut store, mut engine) = Store::open(dir, &cfg, 1_700_000_000).unwrap();
    let (root, alice, bob) = (
        identity(0, "root"),
        identity(1000, "alice"),
        identity(1001, "bob"),
    );
    run(
        &mut store,
        &mut engine,
        &root,
        vec![reg("n1"), reg("n2")],
        1_700_000_000,
    );
    run(
        &mut store,
        &mut engine,
        &alice,
        vec![
            job("a", "batch", &alice),
            job("a", "debug", &alice),
            job("b", "batch", &alice),
            job("c", "batch", &alice),
        ],
        1_700_000_001,
    );
    run(
        &mut store,
        &mut engine,
        &bob,
        vec![job("a", "batch", &bob)],
        1_700_000_002,
    );
    let cancel = CtldRequest::CancelJobs {
        select: Box::new(JobSelect {
            job_ids: vec![JobId(1), JobId(2), JobId(3)],
            by_id: true,
            user: Some("alice".into()),
            names: vec!["a".into()],
            partitions: vec!["batch".into()],
            states: vec![model::JobState::Pending],
            ..JobSelect::default()
        }),
        signal: None,
        batch_only: false,
        full: false,
    };
    run(&mut store, &mut engine, &root, vec![cancel], 1_700_000_003);
    let mine = CtldRequest::CancelJobs {
        select: Box::new(JobSelect {
            me: true,
            names: vec!["c".into()],
            ..JobSelect::default()
        }),
        signal: None,
        batch_only: false,
        full: false,
    };
    run(&mut store, &mut engine, &alice, vec![mine], 1_700_000_004);
}

#[test]
fn write_the_cancel_jobs_fixture_when_asked() {
    if std::env::var_os("MUSTER_WRITE_FIXTURES").is_none() {
        return;
    }
    let dir = fixture();
    std::fs::create_dir_all(&dir).unwrap();
    write(&dir);
    let _ = std::fs::remove_file(dir.join("LOCK"));
}

#[test]
fn this_build_writes_the_cancel_jobs_fixture_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path());
    let mut compared = 0;
    for e in std::fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        let now = std::fs::read(tmp.path().join(p.file_name().unwrap())).unwrap();
        assert!(now == std::fs::read(&p).unwrap(), "{} differs", p.display());
        compared += 1;
    }
    assert_eq!(compared, 1);
}

#[test]
fn a_journal_with_filtered_cancels_replays() {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
    }
    let cfg = config(tmp.path());
    let (_store, engine) = Store::open(tmp.path(), &cfg, 1_700_000_100).unwrap();
    let states: Vec<String> = engine
        .job_list(1_700_000_100)
        .jobs
        .iter()
        .map(|j| {
            format!(
                "{} {} {} {} {:?}",
                j.job_id.0, j.user, j.name, j.partition, j.state
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            "1 alice a batch Cancelled",
            "2 alice a debug Pending",
            "3 alice b batch Pending",
            "4 alice c batch Cancelled",
            "5 bob a batch Pending",
        ]
    );
    assert!(engine.check_invariants().is_empty());
}
