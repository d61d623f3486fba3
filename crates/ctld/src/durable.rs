//! Durable before acknowledged: every input that changes the engine is a
//! journal entry, appended and fsynced (one fsync per batch: group commit)
//! before any reply is sent or any command leaves for a node. Recovery is a
//! replay of those entries through the same deterministic engine, on top of
//! the newest snapshot.

use engine::Engine;
use journal::{Journal, JournalError};
use model::{JobId, Timestamp};
use proto::{CtldRequest, CtldResponse, Identity};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tracing::{info, warn};

/// Entries since the last snapshot after which a new one is written.
pub const SNAPSHOT_EVERY: u64 = 20_000;

/// One input to the engine, with the time it was applied.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Entry {
    /// A request that may change state.
    Request {
        /// The request.
        req: Box<CtldRequest>,
        /// Who sent it.
        who: Identity,
        /// When it was applied.
        now: Timestamp,
    },
    /// A launch could not be delivered.
    LaunchFailed {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
        /// When.
        now: Timestamp,
    },
    /// A node no longer runs a job it was told to end.
    JobGone {
        /// The job.
        job_id: JobId,
        /// The node.
        node: String,
        /// The run that was ended.
        run: u32,
        /// When.
        now: Timestamp,
    },
    /// A ping's outcome.
    Ping {
        /// The node.
        node: String,
        /// Whether it answered.
        ok: bool,
        /// When.
        now: Timestamp,
    },
    /// The association database changed (sacctmgr), or was read at start.
    AssocTables {
        /// The whole database.
        tables: Box<proto::acctdb::AcctTables>,
    },
    /// The end of a batch: timers and a scheduling pass.
    Tick {
        /// When.
        now: Timestamp,
    },
}

/// Whether a request changes state (and so is journaled).
pub fn is_mutating(req: &CtldRequest) -> bool {
    !matches!(
        req,
        CtldRequest::Ping
            | CtldRequest::ListJobs
            | CtldRequest::QueryJobs(_)
            | CtldRequest::Priorities
            | CtldRequest::Shares
            | CtldRequest::ListNodes
            | CtldRequest::ListPartitions
            | CtldRequest::ShowConfig
            | CtldRequest::Explain { .. }
            | CtldRequest::Shutdown
            | CtldRequest::AcctQuery(_)
            | CtldRequest::AcctTables
            | CtldRequest::AcctAdmin(_)
            | CtldRequest::AcctUsage(_)
            | CtldRequest::AcctDecayedUsage
            | CtldRequest::AllocationInfo { .. }
            | CtldRequest::ListSteps
            | CtldRequest::StepStat { .. }
    ) && !matches!(req, CtldRequest::Submit(d) if d.test_only)
}

/// The journal record of an entry.
pub fn encode(entry: &Entry) -> Vec<u8> {
    serde_json::to_vec(entry).expect("journal entries always serialize")
}

/// Encodes an entry for the journal, then applies it (the request moves
/// into the engine instead of being copied: a submission's description,
/// environment included, is dozens of allocations); requests return their
/// answer.
pub fn encode_and_apply(
    engine: &mut Engine,
    cfg: &conf::Config,
    entry: Entry,
    boot_text: &str,
) -> (Vec<u8>, Option<CtldResponse>) {
    let record = encode(&entry);
    let resp = match entry {
        Entry::Request { req, who, now } => {
            Some(crate::handle(engine, cfg, *req, &who, now, boot_text))
        }
        other => apply(engine, cfg, &other, boot_text),
    };
    (record, resp)
}

/// Applies one entry to the engine; requests return their answer.
pub fn apply(
    engine: &mut Engine,
    cfg: &conf::Config,
    entry: &Entry,
    boot_text: &str,
) -> Option<CtldResponse> {
    match entry {
        Entry::Request { req, who, now } => Some(crate::handle(
            engine,
            cfg,
            (**req).clone(),
            who,
            *now,
            boot_text,
        )),
        Entry::LaunchFailed { job_id, node, now } => {
            engine.on_launch_failed(*job_id, node, *now);
            None
        }
        Entry::JobGone {
            job_id,
            node,
            run,
            now,
        } => {
            engine.on_job_gone(*job_id, node, *run, *now);
            None
        }
        Entry::Ping { node, ok, now } => {
            engine.on_node_ping(node, *ok, *now);
            None
        }
        Entry::AssocTables { tables } => {
            engine.on_assoc_tables((**tables).clone());
            None
        }
        Entry::Tick { now } => {
            engine.on_timer(*now);
            engine.schedule(*now);
            None
        }
    }
}

/// The journal and the bookkeeping of snapshots.
pub struct Store {
    journal: Journal,
    since_snapshot: u64,
}

/// Why the controller could not recover its state.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// The journal is damaged or unreadable.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A record or snapshot is not a valid entry.
    #[error("{path}: record {seq} cannot be decoded: {source}")]
    Decode {
        /// The journal directory.
        path: String,
        /// The record's sequence number (0 for the snapshot).
        seq: u64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A binary snapshot is not a valid state.
    #[error("{path}: snapshot {seq} cannot be decoded: {source}")]
    DecodeSnapshot {
        /// The journal directory.
        path: String,
        /// The snapshot's sequence number.
        seq: u64,
        /// Why.
        #[source]
        source: rmp_serde::decode::Error,
    },
    /// The snapshot does not fit the configuration.
    #[error(transparent)]
    Restore(#[from] engine::RestoreError),
}

impl Store {
    /// Opens the journal under `dir` and rebuilds the engine from it.
    pub fn open(
        dir: &Path,
        cfg: &conf::Config,
        now: Timestamp,
        boot_text: &str,
    ) -> Result<(Store, Engine), RecoverError> {
        let t0 = std::time::Instant::now();
        let (journal, recovered) = Journal::open(dir)?;
        let t_read = t0.elapsed();
        if let Some(t) = &recovered.truncated {
            warn!(
                "journal {}: dropped a torn record of {} bytes at byte {} (a crash during a write); recovered up to the last complete record",
                t.path.display(),
                t.dropped_bytes,
                t.offset
            );
        }
        let state = match &recovered.snapshot {
            Some(snap) => Some(decode_snapshot(dir, snap.seq, &snap.data)?),
            None => None,
        };
        let t_decode = t0.elapsed();
        let mut engine = match state {
            Some(state) => Engine::restore(cfg, state, now)?,
            None => Engine::new(cfg, now),
        };
        engine.set_utc_offset(i64::from(chrono::Local::now().offset().local_minus_utc()));
        let t_restore = t0.elapsed();
        let n_records = recovered.records.len();
        for rec in &recovered.records {
            let entry: Entry =
                serde_json::from_slice(&rec.payload).map_err(|source| RecoverError::Decode {
                    path: dir.display().to_string(),
                    seq: rec.seq,
                    source,
                })?;
            apply(&mut engine, cfg, &entry, boot_text);
        }
        // What the replay decided was done (or lost) by the previous process.
        engine.take_commands();
        engine.after_recovery(now);
        let store = Store {
            journal,
            since_snapshot: n_records as u64,
        };
        if n_records > 0 || recovered.snapshot.is_some() {
            let t_all = t0.elapsed();
            info!(
                "recovered {} jobs from {} ({} journal records after the snapshot) in {:.3} s: \
                 read {:.3} s, decode {:.3} s, restore {:.3} s, replay {:.3} s",
                engine.job_count(),
                dir.display(),
                n_records,
                t_all.as_secs_f64(),
                t_read.as_secs_f64(),
                (t_decode - t_read).as_secs_f64(),
                (t_restore - t_decode).as_secs_f64(),
                (t_all - t_restore).as_secs_f64(),
            );
        }
        // The replayed records stay in the journal; the next snapshot comes
        // when SNAPSHOT_EVERY entries have accumulated, not before listening.
        Ok((store, engine))
    }

    /// Appends a batch and makes it durable (one fsync).
    pub fn append(&mut self, entries: &[Entry]) -> Result<(), JournalError> {
        let records: Vec<Vec<u8>> = entries.iter().map(encode).collect();
        self.append_records(&records)
    }

    /// Appends a batch of [`encode`]d entries and makes it durable (one
    /// fsync).
    pub fn append_records(&mut self, records: &[Vec<u8>]) -> Result<(), JournalError> {
        if records.is_empty() {
            return Ok(());
        }
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        self.journal.append(&refs)?;
        self.since_snapshot += records.len() as u64;
        Ok(())
    }

    /// Writes a snapshot when enough entries have accumulated.
    pub fn maybe_snapshot(&mut self, engine: &Engine) -> Result<(), JournalError> {
        if self.since_snapshot >= SNAPSHOT_EVERY {
            self.snapshot(engine)?;
        }
        Ok(())
    }

    /// Writes a snapshot of the engine as of the last appended entry.
    pub fn snapshot(&mut self, engine: &Engine) -> Result<(), JournalError> {
        let data = encode_snapshot(&engine.persistent_state());
        let seq = self.journal.last_seq();
        self.journal.snapshot(seq, &data)?;
        self.since_snapshot = 0;
        Ok(())
    }
}

/// First byte of a binary snapshot: MessagePack with field names, which
/// like JSON lets a newer build read an older build's snapshot (missing
/// fields take their serde defaults) at a fraction of JSON's size and
/// decoding time. Snapshots written before it existed are JSON and start
/// with `{`; both are read.
const SNAPSHOT_MAGIC: u8 = 0xB6;

fn encode_snapshot(state: &engine::PersistentState) -> Vec<u8> {
    let mut out = vec![SNAPSHOT_MAGIC];
    rmp_serde::encode::write_named(&mut out, state).expect("state always serializes");
    out
}

fn decode_snapshot(
    dir: &Path,
    seq: u64,
    data: &[u8],
) -> Result<engine::PersistentState, RecoverError> {
    let path = || dir.display().to_string();
    match data.split_first() {
        Some((&SNAPSHOT_MAGIC, rest)) => {
            rmp_serde::from_slice(rest).map_err(|source| RecoverError::DecodeSnapshot {
                path: path(),
                seq,
                source,
            })
        }
        _ => serde_json::from_slice(data).map_err(|source| RecoverError::Decode {
            path: path(),
            seq,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{JobDesc, NodeRegistration};

    fn config(dir: &Path) -> conf::Config {
        let text = format!(
            "ClusterName=t\nSlurmctldHost=h(127.0.0.1)\nStateSaveLocation={}\n\
             SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=10\n\
             NodeName=n[1-2] CPUs=2 RealMemory=1000\nPartitionName=p Nodes=n[1-2] Default=YES\n",
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
            uid: 7,
            gid: 7,
            user: "u".into(),
            host: "h".into(),
        }
    }

    fn reg(name: &str) -> CtldRequest {
        CtldRequest::RegisterNode(NodeRegistration {
            name: name.into(),
            addr: "127.0.0.1".into(),
            port: 1,
            cpus: 2,
            boards: 1,
            sockets: 2,
            cores_per_socket: 1,
            threads_per_core: 1,
            real_memory: 1000,
            free_memory: 1000,
            cpu_load: 0.0,
            gres: vec![],
            os: "L".into(),
            arch: "x".into(),
            boot_time: 0,
            start_time: 0,
            running_jobs: vec![],
            version: "v".into(),
        })
    }

    fn submit(name: &str) -> CtldRequest {
        CtldRequest::Submit(Box::new(JobDesc {
            name: name.into(),
            script: "#!/bin/sh\n".into(),
            env: vec![("MARK".into(), "1".into())],
            work_dir: "/tmp".into(),
            ..JobDesc::default()
        }))
    }

    fn run(
        store: &mut Store,
        engine: &mut Engine,
        cfg: &conf::Config,
        reqs: Vec<CtldRequest>,
        now: Timestamp,
    ) {
        let mut entries = Vec::new();
        for req in reqs {
            let e = Entry::Request {
                req: Box::new(req),
                who: who(),
                now,
            };
            apply(engine, cfg, &e, "b");
            entries.push(e);
        }
        let tick = Entry::Tick { now };
        apply(engine, cfg, &tick, "b");
        entries.push(tick);
        store.append(&entries).unwrap();
    }

    fn jobs_json(engine: &Engine) -> String {
        serde_json::to_string(&engine.job_list(100).jobs).unwrap()
    }

    #[test]
    fn replay_rebuilds_the_same_jobs_and_ids_continue() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1, "b").unwrap();
        run(&mut store, &mut engine, &cfg, vec![reg("n1"), reg("n2")], 1);
        run(
            &mut store,
            &mut engine,
            &cfg,
            (0..5).map(|i| submit(&format!("j{i}"))).collect(),
            2,
        );
        run(
            &mut store,
            &mut engine,
            &cfg,
            vec![CtldRequest::Cancel {
                job_id: JobId(2),
                signal: None,
                batch_only: false,
                full: false,
                tasks: None,
            }],
            3,
        );
        let before = jobs_json(&engine);
        drop(store);
        let (mut store, mut again) = Store::open(tmp.path(), &cfg, 50, "b").unwrap();
        assert_eq!(jobs_json(&again), before);
        // Recovery re-sends the launches of the 3 running jobs and the
        // termination of the cancelled one, which still holds its CPU.
        let cmds = again.take_commands();
        let launches = cmds
            .iter()
            .filter(|c| matches!(c, engine::Command::LaunchBatch { .. }))
            .count();
        let terms = cmds
            .iter()
            .filter(|c| matches!(c, engine::Command::TerminateJob { .. }))
            .count();
        assert_eq!((launches, terms), (3, 1), "{cmds:?}");
        run(&mut store, &mut again, &cfg, vec![submit("next")], 60);
        let ids: Vec<u32> = again.job_list(61).jobs.iter().map(|j| j.job_id.0).collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5, 6]);
        // And once more from a (binary) snapshot.
        store.snapshot(&again).unwrap();
        drop(store);
        let (_store, mut third) = Store::open(tmp.path(), &cfg, 70, "b").unwrap();
        assert_eq!(third.job_list(61).jobs.len(), 6);
        // Scripts and environments come back from the snapshot's shared tables.
        for cmd in third.take_commands() {
            if let engine::Command::LaunchBatch { launch, .. } = cmd {
                assert_eq!(launch.script, "#!/bin/sh\n");
                assert!(
                    launch.env.iter().any(|(k, v)| k == "MARK" && v == "1"),
                    "{:?}",
                    launch.env
                );
            }
        }
    }

    const SKIP_HINT: &str = "a binary snapshot decodes";

    #[test]
    fn a_newer_build_reads_an_older_builds_binary_snapshot() {
        // Fields are named in the binary form, so a field added later takes
        // its serde default when an older snapshot lacks it.
        #[derive(serde::Serialize)]
        struct Old {
            id: u32,
            name: String,
        }
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct New {
            id: u32,
            name: String,
            #[serde(default)]
            added: Option<u32>,
        }
        let old = rmp_serde::to_vec_named(&Old {
            id: 7,
            name: "x".into(),
        })
        .unwrap();
        let new: New = rmp_serde::from_slice(&old).unwrap();
        assert_eq!(
            new,
            New {
                id: 7,
                name: "x".into(),
                added: None
            }
        );
    }

    #[test]
    fn snapshots_are_binary_and_json_snapshots_of_older_builds_still_load() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1, "b").unwrap();
        run(&mut store, &mut engine, &cfg, vec![reg("n1"), reg("n2")], 1);
        run(
            &mut store,
            &mut engine,
            &cfg,
            vec![submit("a"), submit("b")],
            2,
        );
        let mut state = engine.persistent_state();
        state.assoc_tables = Some(Default::default());
        // Every field survives the binary encoding.
        let bin = encode_snapshot(&state);
        assert_eq!(bin[0], SNAPSHOT_MAGIC);
        let back = decode_snapshot(tmp.path(), 1, &bin).expect(SKIP_HINT);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&state).unwrap()
        );
        let json = serde_json::to_vec(&state).unwrap();
        let old = decode_snapshot(tmp.path(), 1, &json).unwrap();
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            serde_json::to_value(&state).unwrap()
        );
        // A damaged binary snapshot is an error naming the directory.
        let err = decode_snapshot(tmp.path(), 7, &bin[..bin.len() / 2]).unwrap_err();
        assert!(err.to_string().contains("snapshot 7"), "{err}");
    }

    #[test]
    fn usage_survives_a_binary_snapshot() {
        let u = proto::StepUsage {
            user_cpu_usec: Some(1),
            max_rss_node: Some("n1".into()),
            ..Default::default()
        };
        for v in [proto::StepUsage::default(), u] {
            let bin = rmp_serde::to_vec_named(&Some(v.clone())).unwrap();
            let back: Option<proto::StepUsage> = rmp_serde::from_slice(&bin).expect(SKIP_HINT);
            assert_eq!(back, Some(v));
        }
    }
}
