use super::*;
use proto::watch::{JobEvent, WatchChange};
use proto::{JobDesc, NodeRegistration};

fn engine() -> Engine {
    engine_with("")
}

fn engine_with(extra: &str) -> Engine {
    let text = format!(
        "ClusterName=w\nSlurmctldHost=h(127.0.0.1)\n{extra}\
         NodeName=n1 CPUs=2 RealMemory=1000\n\
         PartitionName=debug Nodes=n1 Default=YES\n"
    );
    let text = text.as_str();
    let cfg = conf::parse_str(text, std::path::Path::new("/x/slurm.conf"), &mut |_| {
        Err(std::io::Error::other("no includes"))
    })
    .expect("config")
    .config;
    let mut e = Engine::new(&cfg, 0);
    e.on_node_registered(
        NodeRegistration {
            name: "n1".into(),
            addr: "127.0.0.1".into(),
            port: 7000,
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
            version: "t".into(),
            boot_id: String::new(),
            fabric: None,
        },
        0,
    )
    .expect("registered");
    e
}

fn who() -> Identity {
    Identity {
        uid: 1000,
        gid: 1000,
        user: "ann".into(),
        host: "login".into(),
    }
}

fn submit(e: &mut Engine, now: Timestamp) -> JobId {
    let d = JobDesc {
        name: "job".into(),
        script: "#!/bin/sh\ntrue\n".into(),
        work_dir: "/tmp".into(),
        submit_dir: "/tmp".into(),
        ..JobDesc::default()
    };
    let id = e.on_submit(d, &who(), now).expect("accepted").job_id;
    e.schedule(now);
    id
}

fn all() -> WatchRequest {
    WatchRequest {
        jobs: true,
        nodes: true,
        ..WatchRequest::default()
    }
}

/// Every batch waiting on `rx`.
fn drain(rx: &mut mpsc::Receiver<CtldResponse>) -> Vec<WatchBatch> {
    let mut out = Vec::new();
    while let Ok(CtldResponse::WatchEvents(b)) = rx.try_recv() {
        out.push(b);
    }
    out
}

fn job_events(batches: &[WatchBatch]) -> Vec<(u32, JobEvent)> {
    batches
        .iter()
        .flat_map(|b| &b.events)
        .filter_map(|e| match &e.change {
            WatchChange::Job(j) => Some((j.job_id.0, j.event)),
            WatchChange::Node(_) => None,
        })
        .collect()
}

#[test]
fn nothing_is_noted_until_someone_watches() {
    let mut e = engine();
    let mut hub = Hub::new();
    submit(&mut e, 1);
    hub.publish(&mut e, 1);
    assert_eq!(hub.events(), 0);
    let mut changed = Vec::new();
    e.take_watch_changes(&mut changed);
    assert!(changed.is_empty());
}

#[test]
fn a_job_life_and_its_node_then_a_resume_and_a_reset() {
    let mut e = engine();
    let mut hub = Hub::new();
    let (tx, mut rx) = mpsc::channel(64);
    hub.subscribe(&mut e, who(), all(), tx);
    let first = drain(&mut rx);
    assert_eq!(first.len(), 1);
    assert!(!first[0].reset && first[0].events.is_empty());
    let id = submit(&mut e, 2);
    hub.publish(&mut e, 2);
    e.on_job_exited(id, "n1", model::ExitCode { code: 3, signal: 0 }, None, 3)
        .expect("ended");
    hub.publish(&mut e, 3);
    let batches = drain(&mut rx);
    assert_eq!(
        job_events(&batches),
        [
            (id.0, JobEvent::Submitted),
            (id.0, JobEvent::Started),
            (id.0, JobEvent::Ended)
        ]
    );
    let events: Vec<&WatchEvent> = batches.iter().flat_map(|b| &b.events).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let nodes: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match &e.change {
            WatchChange::Node(n) => Some((n.previous.as_str(), n.state.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(nodes, [("IDLE", "MIXED"), ("MIXED", "IDLE")], "{events:#?}");
    let ended = events
        .iter()
        .find_map(|e| match &e.change {
            WatchChange::Job(j) if j.event == JobEvent::Ended => Some(j.clone()),
            _ => None,
        })
        .expect("an end");
    assert_eq!(ended.state, JobState::Failed);
    assert_eq!(
        ended.exit_code,
        Some(model::ExitCode { code: 3, signal: 0 })
    );
    assert_eq!(ended.nodes, "n1");

    // A resume after the first two events gets the rest, jobs only.
    let epoch = batches[0].epoch;
    let (tx2, mut rx2) = mpsc::channel(64);
    let jobs_only = WatchRequest {
        nodes: false,
        after: Some(WatchPosition { epoch, seq: 2 }),
        ..all()
    };
    hub.subscribe(&mut e, who(), jobs_only, tx2);
    let resumed = drain(&mut rx2);
    assert!(!resumed[0].reset);
    let resumed_events: Vec<u64> = resumed
        .iter()
        .flat_map(|b| &b.events)
        .map(|e| e.seq)
        .collect();
    assert!(resumed_events.iter().all(|s| *s > 2), "{resumed:#?}");
    assert!(job_events(&resumed).contains(&(id.0, JobEvent::Ended)));

    // Another process's position: a reset, then live events.
    let (tx3, mut rx3) = mpsc::channel(64);
    let stale = WatchRequest {
        after: Some(WatchPosition {
            epoch: epoch + 1,
            seq: 1,
        }),
        ..all()
    };
    hub.subscribe(&mut e, who(), stale, tx3);
    let reset = drain(&mut rx3);
    assert!(reset[0].reset && reset[0].events.is_empty());
    assert_eq!(reset[0].last, hub.events());
}

#[test]
fn a_watcher_that_does_not_read_is_dropped_and_the_hub_idles_later() {
    let mut e = engine();
    let mut hub = Hub::new();
    let (tx, rx) = mpsc::channel(1);
    hub.subscribe(&mut e, who(), all(), tx);
    // Its channel is full with the first batch: the next drops it.
    submit(&mut e, 2);
    hub.publish(&mut e, 2);
    assert_eq!(hub.watchers(), 0);
    drop(rx);
    // With nobody watching, the hub stays armed for a while, then idles.
    hub.publish(&mut e, 3);
    assert!(hub.ring_len() > 0);
    hub.publish(&mut e, 3 + KEEP_ARMED_SECS);
    assert_eq!(hub.ring_len(), 0);
    let mut changed = Vec::new();
    submit(&mut e, 4 + KEEP_ARMED_SECS);
    e.take_watch_changes(&mut changed);
    assert!(changed.is_empty());
}

#[test]
fn under_private_jobs_a_watcher_gets_only_its_own_jobs_events() {
    let mut e = engine_with("PrivateData=jobs,nodes\n");
    let mut hub = Hub::new();
    let bob = Identity {
        uid: 1001,
        gid: 1001,
        user: "bob".into(),
        host: "login".into(),
    };
    let root = Identity {
        uid: 0,
        gid: 0,
        user: "root".into(),
        host: "login".into(),
    };
    let (bob_tx, mut bob_rx) = mpsc::channel(64);
    let (root_tx, mut root_rx) = mpsc::channel(64);
    let (ann_tx, mut ann_rx) = mpsc::channel(64);
    hub.subscribe(&mut e, bob.clone(), all(), bob_tx);
    hub.subscribe(&mut e, root, all(), root_tx);
    hub.subscribe(&mut e, who(), all(), ann_tx);
    let id = submit(&mut e, 2);
    hub.publish(&mut e, 2);
    let for_root = drain(&mut root_rx);
    assert_eq!(
        job_events(&for_root),
        [(id.0, JobEvent::Submitted), (id.0, JobEvent::Started)]
    );
    assert!(for_root
        .iter()
        .flat_map(|b| &b.events)
        .any(|e| matches!(e.change, WatchChange::Node(_))));
    // ann sees her job, no node; bob sees nothing at all.
    let for_ann = drain(&mut ann_rx);
    assert_eq!(job_events(&for_ann).len(), 2);
    assert!(!for_ann
        .iter()
        .flat_map(|b| &b.events)
        .any(|e| matches!(e.change, WatchChange::Node(_))));
    let for_bob = drain(&mut bob_rx);
    assert!(for_bob.iter().all(|b| b.events.is_empty()), "{for_bob:?}");
    // Nor out of the ring on a resume.
    let (tx, mut rx) = mpsc::channel(64);
    let after = WatchPosition {
        epoch: for_root[0].epoch,
        seq: 0,
    };
    hub.subscribe(
        &mut e,
        bob,
        WatchRequest {
            after: Some(after),
            ..all()
        },
        tx,
    );
    assert!(drain(&mut rx).iter().all(|b| b.events.is_empty()));
}
