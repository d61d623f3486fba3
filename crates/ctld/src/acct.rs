//! The accounting writer: a thread that owns the accounting store (SQLite by
//! default, PostgreSQL with `AccountingStorageType=accounting_storage/pgsql`)
//! and writes the engine's records in batches, one transaction each.
//!
//! Records are whole job states, written as idempotent upserts: a write that
//! fails (database away) is kept and retried, never dropped, and after a
//! controller restart every job's record is written again. The engine task
//! never waits for the database.

use accounting::{AccountingStore, JobQuery, PgStore, SqliteStore};
use proto::{AcctJob, AcctQuery};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;
use tracing::{info, warn};

/// Where job records go, from slurm.conf.
#[derive(Clone, Debug, PartialEq)]
pub enum Backend {
    /// `AccountingStorageType=accounting_storage/none`.
    Disabled,
    /// The embedded default: a SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl Backend {
    /// Reads `AccountingStorageType` and its connection keys.
    pub fn from_config(cfg: &conf::Config) -> Backend {
        let get = |k: &str| cfg.other.get(k).map(|(_, v)| v.trim().to_string());
        let kind = get("accountingstoragetype")
            .unwrap_or_default()
            .to_ascii_lowercase();
        match kind.as_str() {
            "accounting_storage/none" => Backend::Disabled,
            "accounting_storage/pgsql"
            | "accounting_storage/postgres"
            | "accounting_storage/postgresql" => {
                let mut parts = Vec::new();
                if let Some(h) = get("accountingstoragehost") {
                    parts.push(format!("host={h}"));
                }
                if let Some(p) = get("accountingstorageport").filter(|p| p != "0") {
                    parts.push(format!("port={p}"));
                }
                if let Some(u) = get("accountingstorageuser") {
                    parts.push(format!("user={u}"));
                }
                if let Some(p) = get("accountingstoragepass") {
                    parts.push(format!("password={p}"));
                }
                parts.push(format!(
                    "dbname={}",
                    get("accountingstorageloc").unwrap_or_else(|| "slurm_acct_db".into())
                ));
                Backend::Postgres(parts.join(" "))
            }
            // Unset, accounting_storage/sqlite, or a site's slurmdbd setting:
            // muster keeps the history itself in a SQLite file.
            _ => Backend::Sqlite(
                get("accountingstorageloc")
                    .filter(|l| l.starts_with('/'))
                    .map(PathBuf::from)
                    .unwrap_or_else(|| {
                        PathBuf::from(&cfg.state_save_location).join("accounting.db")
                    }),
            ),
        }
    }
}

enum Msg {
    Put(Box<AcctJob>),
    Query(AcctQuery, oneshot::Sender<Result<Vec<AcctJob>, String>>),
}

/// The handle the engine task uses.
pub struct AcctWriter {
    tx: Option<mpsc::Sender<Msg>>,
}

fn open(backend: &Backend) -> Result<Box<dyn AccountingStore>, accounting::AcctError> {
    Ok(match backend {
        Backend::Sqlite(path) => Box::new(SqliteStore::open(path)?),
        Backend::Postgres(conninfo) => Box::new(PgStore::connect(conninfo)?),
        Backend::Disabled => unreachable!("no store when accounting is disabled"),
    })
}

impl AcctWriter {
    /// Opens the store and starts the writer thread. A store that cannot be
    /// opened at start is an error (as slurmctld refuses to start without
    /// its database).
    pub fn start(backend: Backend, cluster: String) -> Result<AcctWriter, accounting::AcctError> {
        if backend == Backend::Disabled {
            return Ok(AcctWriter { tx: None });
        }
        let mut store = open(&backend)?;
        info!("accounting in {backend:?}");
        let (tx, rx) = mpsc::channel::<Msg>();
        std::thread::Builder::new()
            .name("acct-writer".into())
            .spawn(move || {
                let mut pending: Vec<AcctJob> = Vec::new();
                loop {
                    let first = if pending.is_empty() {
                        match rx.recv() {
                            Ok(m) => Some(m),
                            Err(_) => return,
                        }
                    } else {
                        rx.recv_timeout(Duration::from_millis(500)).ok()
                    };
                    let mut queries = Vec::new();
                    for m in first.into_iter().chain(rx.try_iter()) {
                        match m {
                            Msg::Put(j) => pending.push(*j),
                            Msg::Query(q, reply) => queries.push((q, reply)),
                        }
                    }
                    if !pending.is_empty() {
                        // The latest record of each job is all that matters.
                        let mut latest: std::collections::BTreeMap<(u32, i64), AcctJob> =
                            Default::default();
                        for j in pending.drain(..) {
                            latest.insert((j.job_id.0, j.submit_time), j);
                        }
                        let batch: Vec<AcctJob> = latest.into_values().collect();
                        if let Err(e) = store.put_jobs(&batch) {
                            warn!(
                                "accounting write of {} records failed, will retry: {e}",
                                batch.len()
                            );
                            pending = batch;
                            std::thread::sleep(Duration::from_millis(500));
                            if let Ok(s) = open(&backend) {
                                store = s;
                            }
                        }
                    }
                    for (q, reply) in queries {
                        let query = JobQuery {
                            cluster: Some(q.cluster.clone().unwrap_or_else(|| cluster.clone())),
                            job_ids: q.job_ids,
                            users: q.users,
                            accounts: q.accounts,
                            states: q.states,
                            names: q.names,
                            partitions: q.partitions,
                            start: q.start,
                            end: q.end,
                        };
                        let _ = reply.send(store.query(&query).map_err(|e| e.to_string()));
                    }
                }
            })
            .expect("spawning the accounting writer");
        Ok(AcctWriter { tx: Some(tx) })
    }

    /// Queues a record (never blocks).
    pub fn put(&self, job: AcctJob) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Put(Box::new(job)));
        }
    }

    /// Asks the store; the answer arrives on the returned channel.
    pub fn query(&self, q: AcctQuery) -> Option<oneshot::Receiver<Result<Vec<AcctJob>, String>>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Query(q, reply)).ok()?;
        Some(rx)
    }
}
