//! Durable before acknowledged: every input that changes the engine is a
//! journal entry, appended and fsynced (one fsync per batch: group commit)
//! before any reply is sent or any command leaves for a node. Recovery is a
//! replay of those entries through the same deterministic engine, on top of
//! the newest snapshot: each entry becomes an `engine::Input`
//! ([`Entry::into_input`]) and goes through `Engine::apply`, as it did
//! when it was first applied.
//!
//! What a record holds is the journal's own type, `engine::journal_v1`,
//! not the wire request: an entry is written through a record that
//! borrows from it, and a record read back is moved into an entry.

use engine::journal_v1::{self, RECORD_MAGIC};
use engine::{Engine, Input};
use journal::{Journal, JournalError};
use model::{JobId, Timestamp};
use proto::{CtldRequest, CtldResponse, Identity};
#[cfg(test)]
use serde::Serialize;
use std::path::Path;
use tracing::{info, warn};

/// Entries since the last snapshot after which a new one is written.
pub const SNAPSHOT_EVERY: u64 = 20_000;

/// One input to the engine (`engine::Input`) as the journal records it,
/// with the time it was applied. Written and read as its record
/// ([`journal_v1::Record`]), never as itself (tests compare entries by
/// their JSON, the shape of that record, and write older builds' JSON
/// records with it).
#[derive(Clone, Debug)]
#[cfg_attr(test, derive(Serialize))]
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
    /// A job's PrologSlurmctld ended.
    PrologSlurmctld {
        /// The job.
        job_id: JobId,
        /// The run it was for.
        run: u32,
        /// It exited 0.
        ok: bool,
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
            | CtldRequest::JobPriorities { .. }
            | CtldRequest::Shares
            | CtldRequest::ListNodes
            | CtldRequest::ListPartitions
            | CtldRequest::ListLicenses
            | CtldRequest::ListReservations
            | CtldRequest::ShowTopology { .. }
            | CtldRequest::GetConfig
            | CtldRequest::ShowConfig
            | CtldRequest::Explain { .. }
            | CtldRequest::Shutdown
            | CtldRequest::ShutdownController
            | CtldRequest::Reconfigure
            | CtldRequest::AcctQuery(_)
            | CtldRequest::AcctTables
            | CtldRequest::AcctAdmin(_)
            | CtldRequest::AcctUsage(_)
            | CtldRequest::AcctReservations { .. }
            | CtldRequest::AcctDecayedUsage
            | CtldRequest::AllocationInfo { .. }
            | CtldRequest::ListSteps
            | CtldRequest::StepStat { .. }
            | CtldRequest::OpenSession
            | CtldRequest::Notify { .. }
            | CtldRequest::Diag { .. }
            | CtldRequest::Token { .. }
            | CtldRequest::Watch(_)
            | CtldRequest::Stats
            | CtldRequest::FabricReports
            | CtldRequest::HealthCheckRan(_)
            | CtldRequest::HealthChecks { .. }
    ) && !matches!(req, CtldRequest::Submit(d) if d.test_only)
        && !matches!(req, CtldRequest::OnBehalf { request, .. } if !is_mutating(request))
}

/// A job's environment variables, in order.
type Vars = Vec<(String, String)>;

/// The environments written in full since the last snapshot, by content,
/// with their ids. Ids are never reused within a process; a new process
/// and a snapshot start with an empty table, so a record only refers to an
/// environment written after the snapshot a recovery starts from, and the
/// newest `Full` record of an id is always the one meant (a restarted
/// controller numbers from 1 again, but gives each id in full before using
/// it).
#[derive(Debug, Default)]
pub struct EnvTable {
    next_id: u64,
    by_hash: std::collections::HashMap<u64, Vec<(u64, Vars)>>,
    /// The last one used (hash, index in its bucket): a burst of
    /// submissions from one client is compared, not hashed.
    last: Option<(u64, usize)>,
}

impl EnvTable {
    /// `vars`' id, and whether this is its first use (to be written in full).
    fn intern(&mut self, vars: &[(String, String)]) -> (u64, bool) {
        use std::hash::{Hash, Hasher};
        if let Some((h, i)) = self.last {
            if let Some((id, v)) = self.by_hash.get(&h).and_then(|b| b.get(i)) {
                if v.as_slice() == vars {
                    return (*id, false);
                }
            }
        }
        let mut hasher = std::hash::DefaultHasher::new();
        vars.hash(&mut hasher);
        let h = hasher.finish();
        let bucket = self.by_hash.entry(h).or_default();
        if let Some(i) = bucket.iter().position(|(_, v)| v.as_slice() == vars) {
            self.last = Some((h, i));
            return (bucket[i].0, false);
        }
        self.next_id += 1;
        bucket.push((self.next_id, vars.to_vec()));
        self.last = Some((h, bucket.len() - 1));
        (self.next_id, true)
    }

    /// Forgets every environment (at a snapshot): the next use of each is
    /// written in full again.
    fn clear(&mut self) {
        self.by_hash.clear();
        self.last = None;
    }
}

/// The environments of the records read so far (recovery), by id.
#[derive(Debug, Default)]
pub struct EnvReader {
    by_id: std::collections::HashMap<u64, proto::Env>,
}

/// The journal record of an entry: [`RECORD_MAGIC`] and MessagePack of a
/// [`journal_v1::Body`], a submission's environment given once per
/// distinct environment (`envs`).
#[cfg(test)]
pub fn encode_record(entry: &Entry, envs: &mut EnvTable) -> Vec<u8> {
    let mut out = Vec::new();
    encode_record_into(entry, envs, &mut out);
    out
}

/// [`encode_record`], appended to `out`. The record borrows from the
/// entry: nothing of a submission is copied to be written.
pub fn encode_record_into(entry: &Entry, envs: &mut EnvTable, out: &mut Vec<u8>) {
    let mut record = entry.record();
    let vars = record
        .submitted_desc()
        .map(|d| std::mem::take(&mut d.env))
        .filter(|v| !v.is_empty());
    let env = vars.map(|vars| match envs.intern(&vars) {
        (id, true) => journal_v1::Env::Full { id, vars },
        (id, false) => journal_v1::Env::Same { id },
    });
    out.push(RECORD_MAGIC);
    rmp_serde::encode::write_named(out, &journal_v1::Body { entry: record, env })
        .expect("journal records always serialize");
}

/// Reads a record [`encode_record`] wrote, or the JSON record of an older
/// build. `envs` holds the environments of the records before it.
pub fn decode_record(payload: &[u8], envs: &mut EnvReader) -> Result<Entry, String> {
    let Some((&RECORD_MAGIC, rest)) = payload.split_first() else {
        let record: journal_v1::Record =
            serde_json::from_slice(payload).map_err(|e| e.to_string())?;
        return Ok(Entry::from(record));
    };
    let journal_v1::Body { entry, env } = rmp_serde::from_slice(rest).map_err(|e| e.to_string())?;
    let mut entry = Entry::from(entry);
    let vars = match env {
        None => return Ok(entry),
        Some(journal_v1::Env::Full { id, vars }) => {
            // Shared by every later record that refers to it.
            let vars = proto::Env::new(vars.into_owned());
            envs.by_id.insert(id, vars.clone());
            vars
        }
        Some(journal_v1::Env::Same { id }) => envs.by_id.get(&id).cloned().ok_or_else(|| {
            format!("it refers to environment {id}, which no earlier record gives")
        })?,
    };
    match &mut entry {
        Entry::Request { req, .. } => match &mut **req {
            CtldRequest::Submit(desc) => desc.env = vars,
            _ => return Err("an environment in a record that is not a submission".into()),
        },
        _ => return Err("an environment in a record that is not a submission".into()),
    }
    Ok(entry)
}

impl Entry {
    /// The entry's journal record, borrowing from it.
    fn record(&self) -> journal_v1::Record<'_> {
        use std::borrow::Cow;
        match self {
            Entry::Request { req, who, now } => journal_v1::Record::Request {
                req: journal_v1::Request::from_ctld(req)
                    .expect("only requests that change state are journaled (is_mutating)"),
                who: who.into(),
                now: *now,
            },
            Entry::LaunchFailed { job_id, node, now } => journal_v1::Record::LaunchFailed {
                job_id: *job_id,
                node: Cow::Borrowed(node),
                now: *now,
            },
            Entry::JobGone {
                job_id,
                node,
                run,
                now,
            } => journal_v1::Record::JobGone {
                job_id: *job_id,
                node: Cow::Borrowed(node),
                run: *run,
                now: *now,
            },
            Entry::Ping { node, ok, now } => journal_v1::Record::Ping {
                node: Cow::Borrowed(node),
                ok: *ok,
                now: *now,
            },
            Entry::AssocTables { tables } => journal_v1::Record::AssocTables {
                tables: Cow::Borrowed(&**tables),
            },
            Entry::Tick { now } => journal_v1::Record::Tick { now: *now },
            Entry::PrologSlurmctld {
                job_id,
                run,
                ok,
                now,
            } => journal_v1::Record::PrologSlurmctld {
                job_id: *job_id,
                run: *run,
                ok: *ok,
                now: *now,
            },
        }
    }
}

impl From<journal_v1::Record<'_>> for Entry {
    fn from(record: journal_v1::Record<'_>) -> Entry {
        use journal_v1::Record;
        match record {
            Record::Request { req, who, now } => Entry::Request {
                req: Box::new(req.into()),
                who: who.into(),
                now,
            },
            Record::LaunchFailed { job_id, node, now } => Entry::LaunchFailed {
                job_id,
                node: node.into_owned(),
                now,
            },
            Record::JobGone {
                job_id,
                node,
                run,
                now,
            } => Entry::JobGone {
                job_id,
                node: node.into_owned(),
                run,
                now,
            },
            Record::Ping { node, ok, now } => Entry::Ping {
                node: node.into_owned(),
                ok,
                now,
            },
            Record::AssocTables { tables } => Entry::AssocTables {
                tables: Box::new(tables.into_owned()),
            },
            Record::Tick { now } => Entry::Tick { now },
            Record::PrologSlurmctld {
                job_id,
                run,
                ok,
                now,
            } => Entry::PrologSlurmctld {
                job_id,
                run,
                ok,
                now,
            },
        }
    }
}

impl Entry {
    /// The engine's input, and the time it was applied at. An
    /// `AssocTables` entry records no time (the engine reads none for it):
    /// 0.
    pub fn into_input(self) -> (Input, Timestamp) {
        match self {
            Entry::Request { req, who, now } => (Input::Request { req, who }, now),
            Entry::LaunchFailed { job_id, node, now } => {
                (Input::LaunchFailed { job_id, node }, now)
            }
            Entry::JobGone {
                job_id,
                node,
                run,
                now,
            } => (Input::JobGone { job_id, node, run }, now),
            Entry::Ping { node, ok, now } => (Input::Ping { node, ok }, now),
            Entry::AssocTables { tables } => (Input::AssocTables { tables }, 0),
            Entry::Tick { now } => (Input::Tick, now),
            Entry::PrologSlurmctld {
                job_id,
                run,
                ok,
                now,
            } => (Input::PrologSlurmctldEnded { job_id, run, ok }, now),
        }
    }
}

/// Encodes an entry for the journal, then applies it (the request moves
/// into the engine instead of being copied: a submission's description,
/// environment included, is dozens of allocations); requests return their
/// answer.
pub fn stage_and_apply(
    engine: &mut Engine,
    store: &mut Store,
    entry: Entry,
) -> Option<CtldResponse> {
    store.stage(&entry);
    apply(engine, entry)
}

/// Applies one entry to the engine ([`Engine::apply`]); requests return
/// their answer.
pub fn apply(engine: &mut Engine, entry: Entry) -> Option<CtldResponse> {
    let (input, now) = entry.into_input();
    engine.apply(input, now).reply
}

/// The journal and the bookkeeping of snapshots.
pub struct Store {
    journal: Journal,
    since_snapshot: u64,
    /// `since_snapshot` at which the next periodic snapshot is written:
    /// [`SNAPSHOT_EVERY`], or later after one failed.
    snapshot_due: u64,
    /// Environments written since the last snapshot.
    envs: EnvTable,
    /// Records encoded for the next append, back to back, and where each
    /// ends (one buffer for the batch, reused).
    staged: Vec<u8>,
    staged_ends: Vec<usize>,
}

/// Why the controller could not recover its state.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// The journal is damaged or unreadable.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A JSON snapshot is not a valid state.
    #[error("{path}: record {seq} cannot be decoded: {source}")]
    Decode {
        /// The journal directory.
        path: String,
        /// The snapshot's sequence number.
        seq: u64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A record (its checksum intact) is not a valid entry.
    #[error("{path}: journal record {seq} cannot be decoded: {what}")]
    DecodeRecord {
        /// The journal directory.
        path: String,
        /// The record's sequence number.
        seq: u64,
        /// Why.
        what: String,
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
    /// Nodes or partitions changed while the journal holds records after
    /// its last snapshot.
    #[error(
        "{path}: slurm.conf's nodes or partitions changed since the controller last ran, \
         and it did not stop cleanly ({records} journal records after the last snapshot, \
         which must be replayed under the configuration they were written with): start it \
         once with the old slurm.conf and stop it, then change the configuration"
    )]
    ConfigChangedAfterCrash {
        /// The journal directory.
        path: String,
        /// Records after the snapshot.
        records: usize,
    },
}

impl Store {
    /// Opens the journal under `dir` and rebuilds the engine from it.
    #[cfg(test)]
    pub fn open(
        dir: &Path,
        cfg: &conf::Config,
        now: Timestamp,
    ) -> Result<(Store, Engine), RecoverError> {
        Store::open_with(dir, cfg, now, false)
    }

    /// [`Store::open`]; `keep_partitions` (`muster ctld -R`) recovers the
    /// partitions as `scontrol` left them ([`Engine::restore_with`]).
    pub fn open_with(
        dir: &Path,
        cfg: &conf::Config,
        now: Timestamp,
        keep_partitions: bool,
    ) -> Result<(Store, Engine), RecoverError> {
        let t0 = std::time::Instant::now();
        let (journal, mut recovered) = Journal::open(dir)?;
        let t_read = t0.elapsed();
        if let Some(t) = &recovered.truncated {
            warn!(
                "journal {}: dropped a torn record of {} bytes at byte {} (a crash during a write); recovered up to the last complete record",
                t.path.display(),
                t.dropped_bytes,
                t.offset
            );
        }
        // The snapshot's bytes are dropped once decoded, and each record's
        // once replayed: the memory they held is reused by what the
        // restore and the replay build, instead of staying beside it until
        // the end of recovery and leaving holes in the heap between the
        // jobs (a restarted controller held 1.5 to 2 times the memory of
        // the one before it; docs/performance-history.md).
        let state = match recovered.snapshot.take() {
            Some(snap) => Some(decode_snapshot(dir, snap.seq, &snap.data)?),
            None => None,
        };
        let t_decode = t0.elapsed();
        let saved_layout = state
            .as_ref()
            .map(|s| (s.node_names.clone(), s.partition_names.clone()));
        let state_restored = state.is_some();
        let mut engine = match state {
            // Records after the snapshot (a crash) replay under the
            // partitions they were written with, runtime changes included.
            Some(state) => Engine::restore_with(
                cfg,
                state,
                now,
                keep_partitions || !recovered.records.is_empty(),
            )?,
            None => Engine::new(cfg, now),
        };
        // Records after the snapshot are replayed through the engine, whose
        // decisions then stand for what the last process did: only under the
        // configuration they were written with. (A clean stop writes a
        // snapshot last, so this is after a crash only.)
        if !recovered.records.is_empty() && saved_layout.is_some_and(|l| l != engine.layout()) {
            return Err(RecoverError::ConfigChangedAfterCrash {
                path: dir.display().to_string(),
                records: recovered.records.len(),
            });
        }
        engine.set_utc_offset(i64::from(chrono::Local::now().offset().local_minus_utc()));
        let t_restore = t0.elapsed();
        let n_records = recovered.records.len();
        let mut envs = EnvReader::default();
        for rec in std::mem::take(&mut recovered.records) {
            let entry = decode_record(&rec.payload, &mut envs).map_err(|what| {
                RecoverError::DecodeRecord {
                    path: dir.display().to_string(),
                    seq: rec.seq,
                    what,
                }
            })?;
            apply(&mut engine, entry);
            // What the replay decides was done (or lost) by the previous
            // process. Dropped record by record: a submission's accounting
            // record kept until the end would sit between the jobs the
            // replay builds, and leave holes in the heap once dropped.
            drop(engine.take_commands());
        }
        engine.after_recovery(now);
        let store = Store {
            journal,
            since_snapshot: n_records as u64,
            snapshot_due: SNAPSHOT_EVERY,
            envs: EnvTable::default(),
            staged: Vec::new(),
            staged_ends: Vec::new(),
        };
        if n_records > 0 || state_restored {
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

    /// Encodes `entry` ([`encode_record`] with this journal's
    /// environments) for the next [`Store::commit`].
    pub fn stage(&mut self, entry: &Entry) {
        encode_record_into(entry, &mut self.envs, &mut self.staged);
        self.staged_ends.push(self.staged.len());
    }

    /// How many records wait for the next commit.
    pub fn staged(&self) -> usize {
        self.staged_ends.len()
    }

    /// Appends the staged records, in the order they were staged, and
    /// makes them durable (one fsync).
    pub fn commit(&mut self) -> Result<(), JournalError> {
        if self.staged_ends.is_empty() {
            return Ok(());
        }
        let mut start = 0;
        let refs: Vec<&[u8]> = self
            .staged_ends
            .iter()
            .map(|&end| {
                let r = &self.staged[start..end];
                start = end;
                r
            })
            .collect();
        let res = self.journal.append(&refs);
        let n = self.staged_ends.len() as u64;
        self.staged.clear();
        self.staged_ends.clear();
        res?;
        self.since_snapshot += n;
        Ok(())
    }

    /// Appends a batch and makes it durable (one fsync).
    pub fn append(&mut self, entries: &[Entry]) -> Result<(), JournalError> {
        for e in entries {
            self.stage(e);
        }
        self.commit()
    }

    /// Writes a snapshot when enough entries have accumulated.
    ///
    /// A snapshot that could not be written while the journal still
    /// appends (a full disk refuses the large snapshot file first) is a
    /// warning, tried again after another tenth of [`SNAPSHOT_EVERY`]
    /// entries; the error is returned only when the failure left the
    /// journal refusing appends until [`Store::resume`].
    pub fn maybe_snapshot(&mut self, engine: &Engine) -> Result<(), JournalError> {
        if self.since_snapshot < self.snapshot_due {
            return Ok(());
        }
        match self.snapshot(engine) {
            Ok(()) => Ok(()),
            Err(e) if self.journal.is_poisoned() => Err(e),
            Err(e) => {
                warn!(
                    "periodic snapshot not written, the journal goes on: {e}; \
                     trying again after {} more entries",
                    SNAPSHOT_EVERY / 10
                );
                self.snapshot_due = self.since_snapshot + SNAPSHOT_EVERY / 10;
                Ok(())
            }
        }
    }

    /// The journal's directory (StateSaveLocation).
    pub fn dir(&self) -> &Path {
        self.journal.dir()
    }

    /// After a failed write: saves the whole engine as a snapshot that
    /// covers every record the failed write may have left on disk, in
    /// part or whole, and goes on in a new log segment (see
    /// [`Journal::resume`]). Returns the snapshot's seq.
    pub fn resume(&mut self, engine: &Engine) -> Result<u64, JournalError> {
        let data = encode_state(engine.persistent_state());
        let seq = self.journal.resume(&data)?;
        self.since_snapshot = 0;
        self.snapshot_due = SNAPSHOT_EVERY;
        // Records after the snapshot give their environments again.
        self.envs.clear();
        Ok(seq)
    }

    /// Writes a snapshot of the engine as of the last appended entry.
    pub fn snapshot(&mut self, engine: &Engine) -> Result<(), JournalError> {
        let data = encode_state(engine.persistent_state());
        let seq = self.journal.last_seq();
        self.journal.snapshot(seq, &data)?;
        self.since_snapshot = 0;
        self.snapshot_due = SNAPSHOT_EVERY;
        // Records after the snapshot give their environments again: a
        // recovery from it reads nothing older.
        self.envs.clear();
        Ok(())
    }
}

/// First byte of a binary snapshot of the first binary form: MessagePack
/// with field names, which like JSON lets a newer build read an older
/// build's snapshot (missing fields take their serde defaults) at a
/// fraction of JSON's size and decoding time. Snapshots written before it
/// existed are JSON and start with `{`; all three forms are read.
const SNAPSHOT_MAGIC: u8 = 0xB6;

/// First byte of a binary snapshot with pooled descriptions: the distinct
/// job descriptions (MessagePack with field names, an array of
/// `snapshot_v1::JobDesc`, the mirror of `proto::JobDesc`), then the
/// state as under [`SNAPSHOT_MAGIC`] except that each job gives its
/// description by its index in that array. 100,000 jobs from one script
/// hold one description, written, read and pooled once instead of
/// 100,000 times (most of a snapshot's size and decoding time).
const SNAPSHOT_MAGIC_POOLED: u8 = 0xB8;

/// A snapshot of `state` in the pooled binary form: the description table,
/// then the state with each job's description by number.
fn encode_state(mut state: engine::PersistentState) -> Vec<u8> {
    #[cfg(test)]
    if release_fixtures::AS_RELEASE.with(|r| r.get()) {
        state.forget_cpu_ids();
    }
    let mut out = vec![SNAPSHOT_MAGIC_POOLED];
    rmp_serde::encode::write_named(&mut out, &state.descs).expect("descriptions always serialize");
    state.number_descs();
    rmp_serde::encode::write_named(&mut out, &state).expect("state always serializes");
    out
}

/// [`encode_state`] of a state the caller keeps.
#[cfg(test)]
fn encode_snapshot(state: &engine::PersistentState) -> Vec<u8> {
    encode_state(state.clone())
}

/// A snapshot of the first binary form, as builds before
/// [`SNAPSHOT_MAGIC_POOLED`] wrote it (for tests that older snapshots
/// are still read).
#[cfg(test)]
fn encode_snapshot_unpooled(state: &engine::PersistentState) -> Vec<u8> {
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
    let binary = |source| RecoverError::DecodeSnapshot {
        path: path(),
        seq,
        source,
    };
    match data.split_first() {
        Some((&SNAPSHOT_MAGIC_POOLED, rest)) => {
            use serde::Deserialize;
            let mut de = rmp_serde::Deserializer::from_read_ref(rest);
            let descs: Vec<std::sync::Arc<engine::snapshot_v1::JobDesc<'static>>> =
                Deserialize::deserialize(&mut de).map_err(binary)?;
            let mut state: engine::PersistentState =
                Deserialize::deserialize(&mut de).map_err(binary)?;
            state.descs = descs;
            state
                .resolve_descs()
                .map_err(|e| binary(rmp_serde::decode::Error::Syntax(e.to_string())))?;
            Ok(state)
        }
        Some((&SNAPSHOT_MAGIC, rest)) => rmp_serde::from_slice(rest).map_err(binary),
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
    use journal::Journal;
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
            boot_id: "3f2c-boot".into(),
            fabric: None,
        })
    }

    fn submit(name: &str) -> CtldRequest {
        CtldRequest::Submit(Box::new(JobDesc {
            name: name.into(),
            script: "#!/bin/sh\n".into(),
            env: vec![("MARK".into(), "1".into())].into(),
            work_dir: "/tmp".into(),
            ..JobDesc::default()
        }))
    }

    fn run(store: &mut Store, engine: &mut Engine, reqs: Vec<CtldRequest>, now: Timestamp) {
        let mut entries = Vec::new();
        for req in reqs {
            let e = Entry::Request {
                req: Box::new(req),
                who: who(),
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

    fn jobs_json(engine: &Engine) -> String {
        serde_json::to_string(&engine.job_list(100).jobs).unwrap()
    }

    #[test]
    fn replay_rebuilds_the_same_jobs_and_ids_continue() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![reg("n1"), reg("n2")], 1);
        run(
            &mut store,
            &mut engine,
            (0..5).map(|i| submit(&format!("j{i}"))).collect(),
            2,
        );
        run(
            &mut store,
            &mut engine,
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
        let (mut store, mut again) = Store::open(tmp.path(), &cfg, 50).unwrap();
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
        run(&mut store, &mut again, vec![submit("next")], 60);
        let ids: Vec<u32> = again.job_list(61).jobs.iter().map(|j| j.job_id.0).collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5, 6]);
        // And once more from a (binary) snapshot.
        store.snapshot(&again).unwrap();
        drop(store);
        let (_store, mut third) = Store::open(tmp.path(), &cfg, 70).unwrap();
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

    fn submit_env(name: &str, env: &[(&str, &str)], hold: bool) -> CtldRequest {
        CtldRequest::Submit(Box::new(JobDesc {
            name: name.into(),
            script: "#!/bin/sh\ntrue\n".into(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
                .into(),
            work_dir: "/tmp".into(),
            hold,
            ..JobDesc::default()
        }))
    }

    fn request(req: CtldRequest, now: Timestamp) -> Entry {
        Entry::Request {
            req: Box::new(req),
            who: who(),
            now,
        }
    }

    /// Entries compared through their JSON form (Entry has no PartialEq).
    fn json(e: &Entry) -> serde_json::Value {
        serde_json::to_value(e).unwrap()
    }

    fn env_of(engine: &Engine, id: u32) -> Vec<(String, String)> {
        engine.job(JobId(id)).expect("job").env.to_vec()
    }

    /// Issue 39's records (a PrologSlurmctld's end, a GPU Xid report)
    /// come back from the journal as they were written.
    #[test]
    fn issue_39_records_round_trip() {
        let entries = [
            Entry::PrologSlurmctld {
                job_id: JobId(7),
                run: 2,
                ok: false,
                now: 9,
            },
            request(
                CtldRequest::GpuXid {
                    node: "n1".into(),
                    xid: 79,
                    gpu: None,
                    pci: "0000:3b:00".into(),
                },
                10,
            ),
        ];
        for e in entries {
            let bytes = encode_record(&e, &mut EnvTable::default());
            let back = decode_record(&bytes, &mut EnvReader::default()).unwrap();
            assert_eq!(json(&back), json(&e));
        }
    }

    #[test]
    fn an_environment_is_written_once_until_the_next_snapshot() {
        let env = [
            ("PATH", "/usr/bin:/bin"),
            ("MARKER_VALUE", "x".repeat(500).leak()),
        ];
        let mut envs = EnvTable::default();
        let first = request(submit_env("a", &env, true), 1);
        let before = json(&first);
        let full = encode_record(&first, &mut envs);
        // The entry is handed back unchanged.
        assert_eq!(json(&first), before);
        let same = encode_record(&request(submit_env("b", &env, true), 1), &mut envs);
        assert_eq!(full[0], RECORD_MAGIC);
        assert!(full.len() > 500, "{}", full.len());
        assert!(
            same.len() < full.len() - 500,
            "{} vs {}",
            same.len(),
            full.len()
        );
        assert!(!same.windows(12).any(|w| w == b"MARKER_VALUE"));
        // A snapshot starts over: the next record gives it in full again.
        envs.clear();
        let again = encode_record(&request(submit_env("c", &env, true), 1), &mut envs);
        assert!(again.windows(12).any(|w| w == b"MARKER_VALUE"));
        // Read back in order, every record has its environment.
        let mut reader = EnvReader::default();
        for (rec, name) in [(&full, "a"), (&same, "b"), (&again, "c")] {
            let back = decode_record(rec, &mut reader).unwrap();
            assert_eq!(json(&back), json(&request(submit_env(name, &env, true), 1)));
        }
        // A reference to an environment no earlier record gave is an error.
        let err = decode_record(&same, &mut EnvReader::default()).expect_err("refused");
        assert!(err.contains("environment 1"), "{err}");
        // Records of older builds are JSON, and still read.
        let old = serde_json::to_vec(&first).unwrap();
        let back = decode_record(&old, &mut EnvReader::default()).unwrap();
        assert_eq!(json(&back), before);
    }

    proptest::proptest! {
        /// Any sequence of entries, submissions drawing on a few
        /// environments (arbitrary text, the empty one too), with snapshots
        /// at any point, reads back exactly, in order.
        #[test]
        fn records_round_trip(
            pool in proptest::collection::vec(
                proptest::collection::vec(("[A-Z_]{1,8}", "\\PC{0,20}"), 0..6),
                1..4,
            ),
            steps in proptest::collection::vec(
                (0usize..8, "\\PC{0,12}", proptest::bool::ANY, 0i64..2_000_000_000),
                1..40,
            ),
        ) {
            let mut envs = EnvTable::default();
            let mut written = Vec::new();
            for (i, (pick, name, flag, now)) in steps.iter().enumerate() {
                let entry = match pick {
                    0 => Entry::Tick { now: *now },
                    1 => Entry::Ping { node: name.clone(), ok: *flag, now: *now },
                    2 => Entry::JobGone { job_id: JobId(i as u32), node: name.clone(), run: 3, now: *now },
                    3 => request(CtldRequest::Cancel {
                        job_id: JobId(i as u32),
                        signal: None,
                        batch_only: *flag,
                        full: false,
                        tasks: None,
                    }, *now),
                    _ => {
                        let vars = &pool[pick % pool.len()];
                        let vars: Vec<(&str, &str)> =
                            vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                        let mut req = submit_env(name, &vars, *flag);
                        if let CtldRequest::Submit(d) = &mut req {
                            d.time_limit = flag.then_some(model::TimeLimit::Minutes((*now % 1000) as u32));
                            d.comment = Some(name.clone());
                        }
                        request(req, *now)
                    }
                };
                if *flag && pick % 3 == 0 {
                    envs.clear();
                }
                let expected = json(&entry);
                written.push((encode_record(&entry, &mut envs), expected));
            }
            let mut reader = EnvReader::default();
            for (rec, expected) in &written {
                let back = decode_record(rec, &mut reader).unwrap();
                proptest::prop_assert_eq!(&json(&back), expected);
            }
        }
    }

    /// A partition added while the controller was stopped cleanly (a
    /// snapshot last) is taken; after a crash (records after the snapshot,
    /// which are replayed through the engine) it is refused until the
    /// controller has run once under the old configuration.
    #[test]
    fn a_partition_added_is_taken_after_a_clean_stop_only() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let mut more = cfg.clone();
        let mut second = more.partitions[0].clone();
        second.name = "q".into();
        second.default = false;
        more.partitions.push(second);
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![submit_env("a", &[], true)], 2);
        store.snapshot(&engine).unwrap();
        run(&mut store, &mut engine, vec![submit_env("b", &[], true)], 3);
        drop(store);
        let err = Store::open(tmp.path(), &more, 4).err().expect("refused");
        assert!(
            matches!(err, RecoverError::ConfigChangedAfterCrash { records, .. } if records > 0),
            "{err}"
        );
        // Started once as it was, stopped cleanly: then taken, jobs kept.
        let (mut store, engine) = Store::open(tmp.path(), &cfg, 4).unwrap();
        store.snapshot(&engine).unwrap();
        drop(store);
        let (_store, again) = Store::open(tmp.path(), &more, 5).unwrap();
        assert_eq!(again.layout().1, ["p", "q"]);
        assert_eq!(jobs_json(&again), jobs_json(&engine));
    }

    #[test]
    fn environments_survive_snapshots_and_replays() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let one = [("MARK", "one"), ("WEIRD", "a=b\nc \"d\" \u{e9}")];
        let two = [("MARK", "two")];
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        let batch = vec![
            submit_env("a", &one, true),
            submit_env("b", &one, true),
            submit_env("c", &two, true),
        ];
        run(&mut store, &mut engine, batch, 2);
        store.snapshot(&engine).unwrap();
        // After the snapshot each is given in full again, then referred to.
        let batch = vec![submit_env("d", &one, true), submit_env("e", &two, true)];
        run(&mut store, &mut engine, batch, 3);
        run(
            &mut store,
            &mut engine,
            vec![submit_env("f", &one, true)],
            4,
        );
        drop(store);
        let (store, again) = Store::open(tmp.path(), &cfg, 5).unwrap();
        let strings = |env: &[(&str, &str)]| -> Vec<(String, String)> {
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        for (id, env) in [
            (1, &one[..]),
            (2, &one),
            (3, &two),
            (4, &one),
            (5, &two),
            (6, &one),
        ] {
            assert_eq!(env_of(&again, id), strings(env), "job {id}");
        }
        assert_eq!(jobs_json(&again), jobs_json(&engine));
        drop(store);
        // Once more from the records alone (the snapshot set aside as a
        // damaged one would be): no record refers to an environment the
        // replay has not read.
        for e in std::fs::read_dir(tmp.path()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "snap") {
                std::fs::remove_file(p).unwrap();
            }
        }
        let (_store, third) = Store::open(tmp.path(), &cfg, 5).unwrap();
        assert_eq!(jobs_json(&third), jobs_json(&engine));
        assert_eq!(env_of(&third, 6), strings(&one));
    }

    /// After a failed commit the engine is ahead of the journal: `resume`
    /// saves all of it, and the journal goes on after it (environments
    /// given in full again, as after any snapshot).
    #[test]
    fn resume_saves_the_engine_ahead_of_the_journal_and_appends_go_on() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let env = [("MARK", "one")];
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![reg("n1"), reg("n2")], 1);
        let batch = vec![submit_env("a", &env, true)];
        run(&mut store, &mut engine, batch, 2);
        // Applied, but its record never reached the journal.
        apply(&mut engine, request(submit_env("b", &env, true), 3));
        store.resume(&engine).unwrap();
        let batch = vec![submit_env("c", &env, true)];
        run(&mut store, &mut engine, batch, 4);
        drop(store);
        let (_store, again) = Store::open(tmp.path(), &cfg, 5).unwrap();
        assert_eq!(jobs_json(&again), jobs_json(&engine));
        assert_eq!(again.job_count(), 3);
        assert_eq!(env_of(&again, 3), vec![("MARK".into(), "one".into())]);
    }

    #[test]
    fn journals_of_older_builds_json_records_still_load() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        // What the previous build wrote: JSON records.
        {
            let (mut journal, _) = Journal::open(tmp.path()).unwrap();
            let entries = [
                request(reg("n1"), 1),
                Entry::Tick { now: 1 },
                request(submit_env("old", &[("MARK", "json")], true), 2),
                Entry::Tick { now: 2 },
            ];
            let records: Vec<Vec<u8>> = entries
                .iter()
                .map(|e| serde_json::to_vec(e).unwrap())
                .collect();
            let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
            journal.append(&refs).unwrap();
        }
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 3).unwrap();
        assert_eq!(env_of(&engine, 1), vec![("MARK".into(), "json".into())]);
        // New records go on in binary after the old ones.
        let batch = vec![submit_env("new", &[("MARK", "bin")], true)];
        run(&mut store, &mut engine, batch, 4);
        drop(store);
        let (_store, again) = Store::open(tmp.path(), &cfg, 5).unwrap();
        assert_eq!(env_of(&again, 1), vec![("MARK".into(), "json".into())]);
        assert_eq!(env_of(&again, 2), vec![("MARK".into(), "bin".into())]);
    }

    #[test]
    fn a_torn_binary_tail_is_cut_and_other_damage_names_the_file_and_offset() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        let env = [("MARK", "one")];
        for i in 0..3 {
            run(
                &mut store,
                &mut engine,
                vec![submit_env(&format!("j{i}"), &env, true)],
                2,
            );
        }
        drop(store);
        let log = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .max()
            .unwrap();
        let bytes = std::fs::read(&log).unwrap();
        // The last record cut in the middle: a crash during its write.
        std::fs::write(&log, &bytes[..bytes.len() - 5]).unwrap();
        let (store, again) = Store::open(tmp.path(), &cfg, 3).unwrap();
        // The last record was the batch's Tick: every job is there.
        assert_eq!(again.job_count(), 3);
        assert_eq!(env_of(&again, 3), vec![("MARK".into(), "one".into())]);
        drop(store);
        // A flipped byte inside an earlier record is corruption.
        let mut bytes = std::fs::read(&log).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x55;
        std::fs::write(&log, &bytes).unwrap();
        let err = Store::open(tmp.path(), &cfg, 4).err().expect("refused");
        let text = err.to_string();
        assert!(text.contains(&log.display().to_string()), "{text}");
        assert!(text.contains("corrupt record at byte"), "{text}");
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
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![reg("n1"), reg("n2")], 1);
        run(&mut store, &mut engine, vec![submit("a"), submit("b")], 2);
        let mut state = engine.persistent_state();
        state.assoc_tables = Some(Default::default());
        // Every field survives the binary encoding, with pooled
        // descriptions and in the older form without.
        let bin = encode_snapshot(&state);
        assert_eq!(bin[0], SNAPSHOT_MAGIC_POOLED);
        let back = decode_snapshot(tmp.path(), 1, &bin).expect(SKIP_HINT);
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&state).unwrap()
        );
        let unpooled = encode_snapshot_unpooled(&state);
        assert_eq!(unpooled[0], SNAPSHOT_MAGIC);
        let back = decode_snapshot(tmp.path(), 1, &unpooled).expect(SKIP_HINT);
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

    /// A cluster with `n` identical held jobs and two others, journaled
    /// and snapshotted in `dir`.
    fn queue_of_identical_jobs(dir: &Path, cfg: &conf::Config, n: usize) -> Engine {
        let (mut store, mut engine) = Store::open(dir, cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![reg("n1"), reg("n2")], 1);
        let mut reqs: Vec<CtldRequest> = (0..n)
            .map(|_| submit_env("same", &[("PATH", "/bin")], true))
            .collect();
        reqs.push(submit("other"));
        reqs.push(submit_env("third", &[("PATH", "/usr/bin")], true));
        run(&mut store, &mut engine, reqs, 2);
        store.snapshot(&engine).unwrap();
        engine
    }

    #[test]
    fn a_snapshot_stores_each_description_once_and_jobs_share_it_after_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let engine = queue_of_identical_jobs(tmp.path(), &cfg, 50);
        let state = engine.persistent_state();
        assert_eq!(state.jobs.len(), 52);
        assert_eq!(
            state.descs.len(),
            3,
            "50 identical jobs share one description"
        );
        let pooled = encode_snapshot(&state);
        let unpooled = encode_snapshot_unpooled(&state);
        assert!(
            pooled.len() * 3 < unpooled.len() * 2,
            "{} B pooled, {} B not",
            pooled.len(),
            unpooled.len()
        );
        let before = jobs_json(&engine);
        drop(engine);
        let (_store, again) = Store::open(tmp.path(), &cfg, 50).unwrap();
        assert_eq!(jobs_json(&again), before);
        let first = again.job(JobId(1)).unwrap();
        for id in 2..=50 {
            let job = again.job(JobId(id)).unwrap();
            assert!(std::sync::Arc::ptr_eq(&job.desc, &first.desc), "job {id}");
        }
        assert!(!std::sync::Arc::ptr_eq(
            &again.job(JobId(51)).unwrap().desc,
            &first.desc
        ));
        assert_eq!(again.job(JobId(52)).unwrap().desc.name, "third");
    }

    #[test]
    fn a_snapshot_of_an_older_build_with_a_description_per_job_still_restores() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let engine = queue_of_identical_jobs(tmp.path(), &cfg, 20);
        let before = jobs_json(&engine);
        // Replace the newest snapshot with the older binary form of the
        // same state, then the JSON form of builds before that.
        let state = engine.persistent_state();
        drop(engine);
        for data in [
            encode_snapshot_unpooled(&state),
            serde_json::to_vec(&state).unwrap(),
        ] {
            let (mut journal, _) = Journal::open(tmp.path()).unwrap();
            let seq = journal.last_seq();
            journal.snapshot(seq, &data).unwrap();
            drop(journal);
            let (_store, again) = Store::open(tmp.path(), &cfg, 50).unwrap();
            assert_eq!(jobs_json(&again), before);
            // Identical descriptions are pooled on load all the same.
            let first = again.job(JobId(1)).unwrap();
            let last = again.job(JobId(20)).unwrap();
            assert!(std::sync::Arc::ptr_eq(&first.desc, &last.desc));
        }
    }

    #[test]
    fn a_description_number_outside_the_table_is_an_error_naming_the_snapshot() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let engine = queue_of_identical_jobs(tmp.path(), &cfg, 3);
        let mut state = engine.persistent_state();
        // The table written ahead of the state lacks the last description.
        let mut data = vec![SNAPSHOT_MAGIC_POOLED];
        rmp_serde::encode::write_named(&mut data, &state.descs[..2]).unwrap();
        let mut numbered = state.clone();
        numbered.number_descs();
        rmp_serde::encode::write_named(&mut data, &numbered).unwrap();
        let err = decode_snapshot(tmp.path(), 9, &data).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("snapshot 9"), "{text}");
        assert!(text.contains("job description 2"), "{text}");
        // Numbers are used only while a snapshot is written: the state's
        // other encodings give each description in full.
        state.descs.clear();
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(json["jobs"][0]["desc"]["name"], "same");
    }

    /// The snapshot's mirrors of the wire payloads write what the wire
    /// types wrote, with every field set (the release fixtures leave most
    /// of them empty), and read back into the same values.
    #[test]
    fn a_snapshots_payload_mirrors_encode_as_the_wire_types_did() {
        use engine::snapshot_v1 as v1;
        fn same<P, M>(wire: &P, mirror: &M)
        where
            P: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
            M: serde::Serialize + serde::de::DeserializeOwned + Into<P>,
        {
            let bin = rmp_serde::to_vec_named(wire).unwrap();
            assert_eq!(rmp_serde::to_vec_named(mirror).unwrap(), bin);
            let json = serde_json::to_vec(wire).unwrap();
            assert_eq!(serde_json::to_vec(mirror).unwrap(), json);
            let back: M = rmp_serde::from_slice(&bin).unwrap();
            assert_eq!(&back.into(), wire);
            let back: M = serde_json::from_slice(&json).unwrap();
            assert_eq!(&back.into(), wire);
        }
        let gres = |n: &str| model::Gres {
            name: n.into(),
            type_: Some("a100".into()),
            count: 2,
        };
        let text = |s: &str| Some(s.to_string());
        let desc = JobDesc {
            name: "n".into(),
            script: "#!/bin/sh\n".into(),
            argv: vec!["a".into()],
            command: text("/x.sh"),
            work_dir: "/w".into(),
            submit_dir: "/s".into(),
            submit_host: "h".into(),
            submit_line: "sbatch x.sh".into(),
            env: vec![("A".into(), "1".into())].into(),
            partitions: vec!["batch".into()],
            min_nodes: Some(1),
            max_nodes: Some(2),
            ntasks: Some(3),
            ntasks_per_node: Some(4),
            cpus_per_task: Some(5),
            mem_per_node: Some(6),
            mem_per_cpu: Some(7),
            mem_per_gpu: Some(8),
            gres: vec![gres("gpu")],
            gpus: Some(gres("gpu")),
            gpus_per_node: Some(gres("gpu")),
            gpus_per_task: Some(gres("gpu")),
            cpus_per_gpu: Some(9),
            time_limit: Some(model::TimeLimit::Minutes(10)),
            time_min: Some(model::TimeLimit::Minutes(5)),
            stdout: text("o"),
            stderr: text("e"),
            stdin: text("i"),
            open_append: true,
            exclusive: true,
            nodelist: vec!["n1".into()],
            exclude: vec!["n2".into()],
            constraint: text("c"),
            hold: true,
            begin_time: Some(11),
            signal: Some(proto::SignalSpec {
                signal: 10,
                secs: 60,
                batch_only: true,
            }),
            requeue: Some(false),
            comment: text("hi"),
            acctg_freq: text("30"),
            account: text("acct"),
            qos: text("q"),
            nice: -3,
            dependency: text("afterok:1"),
            test_only: true,
            uid: 1000,
            gid: 1001,
            user: "alice".into(),
            alloc_sid: 77,
            array: text("0-3"),
            kill_on_invalid_dep: Some(true),
            deadline: Some(12),
            alloc_only: true,
            submit_token: text("feed"),
            // Where None, the mirror skips it (the wire form writes null):
            // what older releases wrote stays byte for byte.
            licenses: text("matlab:1"),
            gres_flags: text("enforce-binding"),
            mail_type: 3,
            mail_user: text("ops@site"),
            user_groups: vec!["wheel".into()],
            hint: text("nomultithread"),
            threads_per_core: Some(1),
            ntasks_per_core: Some(1),
            reservation: text("maint"),
            switches: Some(2),
            switch_wait: Some(600),
            segment: Some(4),
            container: vec![("container-image".into(), "/img.sqsh".into())],
        };
        same(&desc, &v1::JobDesc::from(&desc).into_owned());
        let usage = proto::StepUsage {
            user_cpu_usec: Some(1),
            sys_cpu_usec: Some(2),
            max_rss_kib: Some(3),
            ave_rss_kib: Some(4),
            max_vmsize_kib: Some(5),
            max_rss_node: text("n1"),
            max_rss_task: Some(6),
            max_vmsize_node: text("n2"),
            max_vmsize_task: Some(7),
            ave_vmsize_kib: Some(8),
            max_pages: Some(9),
            max_pages_node: text("n3"),
            max_pages_task: Some(10),
            ave_pages: Some(11),
            min_cpu_usec: Some(12),
            min_cpu_node: text("n4"),
            min_cpu_task: Some(13),
            ave_cpu_usec: Some(14),
            n_tasks: Some(15),
            container_start_usec: Some(16),
        };
        for u in [proto::StepUsage::default(), usage] {
            same(&u, &v1::StepUsage::from(&u).into_owned());
        }
        let CtldRequest::RegisterNode(mut node) = reg("n1") else {
            unreachable!()
        };
        node.gres = vec![gres("gpu")];
        node.running_jobs = vec![JobId(4)];
        node.cpu_load = 1.5;
        // Every field set: the mirror leaves out a registration's missing
        // fabric report, as it does an empty boot id.
        node.fabric = Some(proto::FabricReport {
            source: "MusterTopologyProbe".into(),
            switches: vec!["s1".into(), "top".into()],
            ib_ports: vec![proto::IbPort {
                device: "mlx5_0".into(),
                port: 1,
                state: "4: ACTIVE".into(),
                rate: "200 Gb/sec (4X HDR)".into(),
                link_layer: "InfiniBand".into(),
                lid: "0x1a".into(),
                sm_lid: "0x1".into(),
                subnet_prefix: "fe80:0000:0000:0000".into(),
                node_guid: "0c42:a103:0065:7e4a".into(),
            }],
            lldp: vec![proto::LldpNeighbor {
                interface: "eno1".into(),
                chassis: "leaf-a3".into(),
                port: "Ethernet12".into(),
            }],
            error: String::new(),
        });
        same(&node, &v1::NodeRegistration::from(&node).into_owned());
        let factors = proto::PriorityFactors {
            site: 1.0,
            age: 2.5,
            assoc: 3.0,
            fairshare: 4.25,
            jobsize: 5.0,
            partition: 6.0,
            qos: 7.0,
            nice: -8,
            tres: vec![("cpu".into(), 9.5)],
        };
        same(&factors, &v1::PriorityFactors::from(&factors));
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

    #[test]
    fn issue_34_a_submissions_token_survives_a_replay_and_a_snapshot() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = config(tmp.path());
        let with_token = || {
            let CtldRequest::Submit(mut d) = submit("tok") else {
                unreachable!()
            };
            d.submit_token = Some(proto::SubmitToken(0xfeed).text());
            CtldRequest::Submit(d)
        };
        let again = |engine: &mut Engine| {
            let entry = request(with_token(), 40);
            match apply(engine, entry) {
                Some(CtldResponse::Submitted(r)) => r.job_id,
                other => panic!("{other:?}"),
            }
        };
        let (mut store, mut engine) = Store::open(tmp.path(), &cfg, 1).unwrap();
        run(&mut store, &mut engine, vec![reg("n1"), with_token()], 2);
        drop(store);
        // Replayed from the journal.
        let (mut store, mut replayed) = Store::open(tmp.path(), &cfg, 30).unwrap();
        assert_eq!(again(&mut replayed), JobId(1));
        assert_eq!(replayed.job_list(40).jobs.len(), 1);
        // Restored from a (binary) snapshot.
        store.snapshot(&replayed).unwrap();
        drop(store);
        let (_store, mut restored) = Store::open(tmp.path(), &cfg, 50).unwrap();
        assert_eq!(again(&mut restored), JobId(1));
        assert_eq!(restored.job_list(60).jobs.len(), 1);
    }
}

#[cfg(test)]
mod cancel_jobs_fixture;
#[cfg(test)]
mod journal_records;
#[cfg(test)]
mod release_fixtures;
