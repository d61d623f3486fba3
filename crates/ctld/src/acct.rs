//! The accounting writer: a thread that owns the accounting store (SQLite by
//! default, PostgreSQL with `AccountingStorageType=accounting_storage/pgsql`)
//! and writes the engine's records in batches, one transaction each.
//!
//! Records are whole job states, written as idempotent upserts: a write that
//! fails (database away) is kept and retried, never dropped, and after a
//! controller restart every job's record is written again. The engine task
//! never waits for the database.

use accounting::{AccountingStore, JobQuery, PgStore, SqliteStore};
use proto::acctdb::{
    AcctTables, Action, AdminLevel, AdminReply, AdminRequest, DecayedUsage, Entity, UsageEntry,
    UsageQuery, UsageReport,
};
use proto::{AcctJob, AcctQuery};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tracing::{info, warn};

/// How often an idle writer rolls usage up.
const ROLLUP_EVERY: Duration = Duration::from_secs(300);

/// How long a record may wait for others before it is written: a burst of
/// submissions or job ends becomes one transaction (one fsync, and each
/// index page written once) instead of one per record. A query (sacct,
/// sreport, fair-share) writes what waits first, so answers never miss a
/// record the engine sent before the question. Records that a crash loses
/// here are written again after the restart (every job's record is).
const COALESCE: Duration = Duration::from_millis(100);

/// Records after which the writer does not wait any longer.
const COALESCE_MAX: usize = 20_000;

/// Where job records go, from slurm.conf. Its `Debug` (the log's "accounting
/// in ...") leaves the password out.
#[derive(Clone, PartialEq)]
pub enum Backend {
    /// `AccountingStorageType=accounting_storage/none`.
    Disabled,
    /// The embedded default: a SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string.
    Postgres(String),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Disabled => write!(f, "Disabled"),
            Backend::Sqlite(p) => write!(f, "Sqlite({p:?})"),
            Backend::Postgres(c) => {
                let shown: Vec<&str> = c
                    .split_whitespace()
                    .map(|kv| {
                        if kv.starts_with("password=") {
                            "password=***"
                        } else {
                            kv
                        }
                    })
                    .collect();
                write!(f, "Postgres({:?})", shown.join(" "))
            }
        }
    }
}

impl Backend {
    /// Reads `AccountingStorageType` and its connection keys from
    /// slurm.conf, and the database's own settings from a `slurmdbd.conf`
    /// beside it, where there is one (muster has no slurmdbd: it reaches
    /// the database itself).
    ///
    /// - `AccountingStorageType=accounting_storage/pgsql`: PostgreSQL at
    ///   `AccountingStorageHost`, `AccountingStoragePort`,
    ///   `AccountingStorageUser`, `AccountingStoragePass`; what slurm.conf
    ///   leaves out comes from slurmdbd.conf's `StorageHost`, `StoragePort`,
    ///   `StorageUser`, `StoragePass`; the database is slurmdbd.conf's
    ///   `StorageLoc` (default `slurm_acct_db`, as slurmdbd's).
    /// - `accounting_storage/slurmdbd` (Slurm's usual setting) or unset,
    ///   with a slurmdbd.conf saying `StorageType=accounting_storage/pgsql`:
    ///   PostgreSQL from slurmdbd.conf's keys alone.
    /// - `accounting_storage/none`: no accounting.
    /// - otherwise a SQLite file, `accounting.db` in StateSaveLocation.
    pub fn from_config(cfg: &conf::Config) -> Backend {
        let dbd = cfg
            .path
            .parent()
            .map(|d| d.join("slurmdbd.conf"))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| dbd_keys(&text))
            .unwrap_or_default();
        let from_dbd = |k: &str| dbd.get(k).cloned();
        let get = |k: &str| cfg.other.get(k).map(|(_, v)| v.trim().to_string());
        let kind = get("accountingstoragetype")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let pgsql = |t: &str| {
            matches!(
                t,
                "accounting_storage/pgsql"
                    | "accounting_storage/postgres"
                    | "accounting_storage/postgresql"
            )
        };
        let dbd_pgsql = pgsql(
            &from_dbd("storagetype")
                .unwrap_or_default()
                .to_ascii_lowercase(),
        );
        let conf_keys = pgsql(&kind);
        if conf_keys || (dbd_pgsql && matches!(kind.as_str(), "" | "accounting_storage/slurmdbd")) {
            let key = |conf: &str, dbd_key: &str| {
                conf_keys
                    .then(|| get(conf))
                    .flatten()
                    .or_else(|| from_dbd(dbd_key))
            };
            let mut parts = Vec::new();
            if let Some(h) = key("accountingstoragehost", "storagehost") {
                parts.push(format!("host={h}"));
            }
            if let Some(p) = key("accountingstorageport", "storageport").filter(|p| p != "0") {
                parts.push(format!("port={p}"));
            }
            if let Some(u) = key("accountingstorageuser", "storageuser") {
                parts.push(format!("user={u}"));
            }
            if let Some(p) = key("accountingstoragepass", "storagepass") {
                parts.push(format!("password={p}"));
            }
            parts.push(format!(
                "dbname={}",
                from_dbd("storageloc").unwrap_or_else(|| "slurm_acct_db".into())
            ));
            if let Some(params) = key("accountingstorageparameters", "storageparameters") {
                parts.extend(tls_parameters(&params));
            }
            return Backend::Postgres(parts.join(" "));
        }
        match kind.as_str() {
            "accounting_storage/none" => Backend::Disabled,
            // Unset, accounting_storage/sqlite, or a site's slurmdbd setting:
            // muster keeps the history itself in a SQLite file.
            _ => Backend::Sqlite(PathBuf::from(&cfg.state_save_location).join("accounting.db")),
        }
    }
}

/// The connection-string words of `AccountingStorageParameters` (or
/// slurmdbd.conf's `StorageParameters`): comma-separated `key=value`
/// items, libpq's `sslmode`, `sslrootcert`, `sslcert`, `sslkey` as they
/// are, and Slurm's `SSL_CA`, `SSL_CERT`, `SSL_KEY` as those three (with
/// `SSL_CA` and no `sslmode`, the server's certificate is checked against
/// it: `verify-ca`). Other items are warned about and left out.
fn tls_parameters(params: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut mode = false;
    let mut ca = false;
    for item in params.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        let key = match k.trim().to_ascii_lowercase().as_str() {
            "sslmode" => {
                mode = true;
                "sslmode"
            }
            "sslrootcert" | "ssl_ca" => {
                ca = true;
                "sslrootcert"
            }
            "sslcert" | "ssl_cert" => "sslcert",
            "sslkey" | "ssl_key" => "sslkey",
            _ => {
                warn!(
                    "AccountingStorageParameters: {item} does nothing here (muster takes \
                     sslmode, sslrootcert, sslcert, sslkey, SSL_CA, SSL_CERT, SSL_KEY)"
                );
                continue;
            }
        };
        out.push(format!("{key}={}", accounting::pg_tls::quote(v.trim())));
    }
    if ca && !mode {
        out.push("sslmode=verify-ca".into());
    }
    out
}

/// slurmdbd.conf's `Key=Value` lines (keys lowercased; `#` starts a
/// comment).
fn dbd_keys(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

enum Msg {
    Put(Box<AcctJob>),
    Query(AcctQuery, oneshot::Sender<Result<Vec<AcctJob>, String>>),
    Tables(oneshot::Sender<AcctTables>),
    Admin(Box<AdminRequest>, Caller, oneshot::Sender<AdminReply>),
    Usage(UsageQuery, oneshot::Sender<Option<UsageReport>>),
    Decayed(oneshot::Sender<Option<Vec<DecayedUsage>>>),
    PutResv(Box<proto::resv::AcctResv>),
    Resvs(
        Option<i64>,
        Option<i64>,
        oneshot::Sender<Option<Vec<proto::resv::AcctResv>>>,
    ),
}

/// What usage rollups need from slurm.conf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageSettings {
    /// The cluster's CPUs (its capacity per second).
    pub cpus: u32,
    /// PriorityDecayHalfLife, seconds (0: no decay).
    pub half_life: i64,
}

impl UsageSettings {
    /// Reads the node definitions and `PriorityDecayHalfLife` (default 7
    /// days, as Slurm's).
    pub fn from_config(cfg: &conf::Config) -> UsageSettings {
        let half_life = cfg
            .other
            .get("prioritydecayhalflife")
            .and_then(|(_, v)| model::units::parse_time_limit(v).ok())
            .map_or(7 * 86_400, |t| match t {
                model::TimeLimit::Minutes(m) => i64::from(m) * 60,
                model::TimeLimit::Unlimited => 0,
            });
        UsageSettings {
            cpus: cfg.nodes.iter().map(|n| n.cpus).sum(),
            half_life,
        }
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Writes `pending` in one transaction, the latest record of each job only.
/// A write that fails is kept in `pending` for the next try (after a pause
/// and a fresh connection), never dropped.
fn write(store: &mut Box<dyn AccountingStore>, backend: &Backend, pending: &mut Vec<AcctJob>) {
    if pending.is_empty() {
        return;
    }
    let mut latest: std::collections::BTreeMap<(u32, i64), AcctJob> = Default::default();
    for j in pending.drain(..) {
        latest.insert((j.job_id.0, j.submit_time), j);
    }
    // A burst (every job's record again after a restart: 100,000 of them
    // arrive at once) would otherwise leave its whole capacity allocated
    // for good, hundreds of bytes a job.
    if pending.capacity() > 4096 {
        *pending = Vec::new();
    }
    let batch: Vec<AcctJob> = latest.into_values().collect();
    // A burst of records (every job's again after a restart) is freed
    // once written: the next quiet spell gives that memory back too.
    crate::trim::note_request();
    if let Err(e) = store.put_jobs(&batch) {
        warn!(
            "accounting write of {} records failed, will retry: {e}",
            batch.len()
        );
        *pending = batch;
        std::thread::sleep(Duration::from_millis(500));
        if let Ok(s) = open(backend) {
            *store = s;
        }
    }
}

/// Rolls up to now, then sums the hourly rows of `[start, end)`.
fn usage_report(
    store: &mut dyn AccountingStore,
    cluster: &str,
    u: UsageSettings,
    q: &UsageQuery,
) -> Result<UsageReport, accounting::AcctError> {
    use accounting::usage::{roll_up, sum_rows, Period};
    roll_up(store, cluster, u.cpus, now())?;
    let hours = store.usage(cluster, Period::Hour, q.start, q.end)?;
    let rows = sum_rows(&hours, Period::Hour, q.start)
        .into_iter()
        .map(|r| UsageEntry {
            account: r.account,
            user: r.user,
            alloc_secs: r.alloc_secs,
            capacity_secs: r.capacity_secs,
        })
        .collect();
    Ok(UsageReport {
        cluster: cluster.to_owned(),
        rows,
    })
}

/// Rolls up to now, then decays every association's hourly usage.
fn decayed_usage(
    store: &mut dyn AccountingStore,
    cluster: &str,
    u: UsageSettings,
) -> Result<Vec<DecayedUsage>, accounting::AcctError> {
    use accounting::usage::{decayed, roll_up, Period, DAY};
    let t = now();
    roll_up(store, cluster, u.cpus, t)?;
    // Beyond ten half-lives an hour weighs under a thousandth.
    let horizon = if u.half_life > 0 {
        10 * u.half_life
    } else {
        365 * DAY
    };
    let hours = store.usage(cluster, Period::Hour, t - horizon, t + 1)?;
    Ok(decayed(&hours, u.half_life, t)
        .into_iter()
        .map(|((account, user), usage)| DecayedUsage {
            account,
            user,
            usage,
        })
        .collect())
}

/// Who sent a sacctmgr change, as the gate proved it.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The user name.
    pub user: String,
    /// root or SlurmUser.
    pub daemon: bool,
}

/// The handle the engine task uses.
pub struct AcctWriter {
    tx: Option<mpsc::Sender<Msg>>,
    /// Records handed over (`put`) and records stored (or dropped as
    /// written) by the writer thread: their difference is the backlog
    /// `/metrics` shows.
    queued: Arc<AtomicU64>,
    stored: Arc<AtomicU64>,
    /// The association database as read at start.
    initial: Option<AcctTables>,
}

/// Told every committed change of the association database (the engine
/// task journals it and hands it to the engine).
pub type OnTables = Box<dyn Fn(AcctTables) + Send>;

fn open(backend: &Backend) -> Result<Box<dyn AccountingStore>, accounting::AcctError> {
    Ok(match backend {
        Backend::Sqlite(path) => Box::new(SqliteStore::open(path)?),
        Backend::Postgres(conninfo) => Box::new(PgStore::connect(conninfo)?),
        Backend::Disabled => unreachable!("no store when accounting is disabled"),
    })
}

/// Runs `f` on the store; when it fails, opens the store again (a
/// connection the server ended stays broken: PostgreSQL restarted, or the
/// backend was terminated) and runs `f` once more on the new one.
fn with_reopen<T>(
    store: &mut Box<dyn AccountingStore>,
    backend: &Backend,
    mut f: impl FnMut(&mut dyn AccountingStore) -> Result<T, accounting::AcctError>,
) -> Result<T, accounting::AcctError> {
    match f(&mut **store) {
        Ok(v) => Ok(v),
        Err(e) => match open(backend) {
            Ok(s) => {
                *store = s;
                f(&mut **store)
            }
            Err(_) => Err(e),
        },
    }
}

impl AcctWriter {
    /// Opens the store and starts the writer thread. A store that cannot be
    /// opened at start is an error (as slurmctld refuses to start without
    /// its database).
    pub fn start(
        backend: Backend,
        cluster: String,
        usage: UsageSettings,
        on_tables: OnTables,
    ) -> Result<AcctWriter, accounting::AcctError> {
        if backend == Backend::Disabled {
            return Ok(AcctWriter {
                tx: None,
                initial: None,
                queued: Arc::default(),
                stored: Arc::default(),
            });
        }
        // Opened on a thread of its own: the PostgreSQL client blocks on a
        // runtime of its own, which must not start inside the controller's
        // (start is called from async code). The store then lives on the
        // writer thread.
        let (mut store, mut tables) = std::thread::scope(|s| {
            s.spawn(|| -> Result<_, accounting::AcctError> {
                let mut store = open(&backend)?;
                // The association database: this cluster, its root account
                // and user, and QOS normal exist from the start (as
                // slurmdbd does).
                let mut tables = store.load_tables()?;
                let loaded = tables.clone();
                accounting::admin::bootstrap(&mut tables, &cluster);
                if tables != loaded {
                    store.save_tables(&tables)?;
                }
                Ok((store, tables))
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })?;
        info!("accounting in {backend:?}");
        let initial = Some(tables.clone());
        let (tx, rx) = mpsc::channel::<Msg>();
        let stored = Arc::new(AtomicU64::new(0));
        let stored_by_writer = stored.clone();
        std::thread::Builder::new()
            .name("acct-writer".into())
            .spawn(move || {
                let mut pending: Vec<AcctJob> = Vec::new();
                // When the oldest record in `pending` arrived.
                let mut since: Option<Instant> = None;
                // Records received, for the backlog (`AcctWriter::backlog`).
                let mut received: u64 = 0;
                loop {
                    stored_by_writer.store(received - pending.len() as u64, Ordering::Relaxed);
                    let first = if pending.is_empty() {
                        match rx.recv_timeout(ROLLUP_EVERY) {
                            Ok(m) => Some(m),
                            Err(mpsc::RecvTimeoutError::Timeout) => {
                                // Idle: keep the usage rollups current.
                                if let Err(e) = with_reopen(&mut store, &backend, |s| {
                                    accounting::usage::roll_up(s, &cluster, usage.cpus, now())
                                }) {
                                    warn!("usage rollup: {e}");
                                }
                                None
                            }
                            Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                    } else {
                        let due =
                            since.map_or(Duration::ZERO, |t| COALESCE.saturating_sub(t.elapsed()));
                        match rx.recv_timeout(due) {
                            Ok(m) => Some(m),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => {
                                // The controller is stopping: write what is
                                // left (what is lost to a crash instead is
                                // written again after the restart).
                                write(&mut store, &backend, &mut pending);
                                return;
                            }
                        }
                    };
                    let mut queries = Vec::new();
                    let mut admin = Vec::new();
                    for m in first.into_iter().chain(rx.try_iter()) {
                        match m {
                            Msg::Put(j) => {
                                received += 1;
                                since.get_or_insert_with(Instant::now);
                                pending.push(*j);
                            }
                            Msg::Query(q, reply) => queries.push((q, reply)),
                            Msg::Tables(reply) => {
                                let _ = reply.send(tables.clone());
                            }
                            Msg::Admin(req, who, reply) => admin.push((req, who, reply)),
                            Msg::Usage(q, reply) => {
                                // Rollups read the job records: every record
                                // the engine sent before the question is in.
                                write(&mut store, &backend, &mut pending);
                                let r = with_reopen(&mut store, &backend, |s| {
                                    usage_report(s, &cluster, usage, &q)
                                });
                                if let Err(e) = &r {
                                    warn!("usage rollup: {e}");
                                }
                                let _ = reply.send(r.ok());
                            }
                            Msg::PutResv(r) => {
                                // Rare (a reservation made, changed or
                                // over): written at once.
                                if let Err(e) =
                                    with_reopen(&mut store, &backend, |s| s.put_resv(&r))
                                {
                                    warn!("accounting write of reservation {}: {e}", r.name);
                                }
                            }
                            Msg::Resvs(start, end, reply) => {
                                let r = with_reopen(&mut store, &backend, |s| {
                                    s.resvs(&cluster, start, end)
                                });
                                if let Err(e) = &r {
                                    warn!("accounting read of reservations: {e}");
                                }
                                let _ = reply.send(r.ok());
                            }
                            Msg::Decayed(reply) => {
                                write(&mut store, &backend, &mut pending);
                                let r = with_reopen(&mut store, &backend, |s| {
                                    decayed_usage(s, &cluster, usage)
                                });
                                if let Err(e) = &r {
                                    warn!("usage rollup: {e}");
                                }
                                let _ = reply.send(r.ok());
                            }
                        }
                    }
                    for (req, who, reply) in admin {
                        let before = req.commit.then(|| tables.clone());
                        let answer =
                            administer(&mut store, &backend, &mut tables, &req, &who, &cluster);
                        // The engine hears of a change before sacctmgr does,
                        // so the next submission is judged by it.
                        if before.is_some_and(|b| b != tables) {
                            on_tables(tables.clone());
                        }
                        let _ = reply.send(answer);
                    }
                    // Records wait up to COALESCE for company (one
                    // transaction for a burst of submissions), unless a
                    // query must see them now.
                    let due = since.is_some_and(|t| t.elapsed() >= COALESCE)
                        || pending.len() >= COALESCE_MAX
                        || !queries.is_empty();
                    if !pending.is_empty() && due {
                        write(&mut store, &backend, &mut pending);
                    }
                    if pending.is_empty() {
                        since = None;
                    }
                    stored_by_writer.store(received - pending.len() as u64, Ordering::Relaxed);
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
                        let answer = with_reopen(&mut store, &backend, |s| s.query(&query));
                        let _ = reply.send(answer.map_err(|e| e.to_string()));
                    }
                }
            })
            .expect("spawning the accounting writer");
        Ok(AcctWriter {
            tx: Some(tx),
            initial,
            queued: Arc::default(),
            stored,
        })
    }

    /// Records handed to the writer and not yet stored (as of the writer's
    /// last round).
    pub fn backlog(&self) -> u64 {
        self.queued
            .load(Ordering::Relaxed)
            .saturating_sub(self.stored.load(Ordering::Relaxed))
    }

    /// The association database as read at start (`None` without accounting).
    pub fn initial_tables(&self) -> Option<&AcctTables> {
        self.initial.as_ref()
    }

    /// Queues a record (never blocks).
    pub fn put(&self, job: AcctJob) {
        if let Some(tx) = &self.tx {
            self.queued.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Msg::Put(Box::new(job)));
        }
    }

    /// Queues a reservation window's record (never blocks).
    pub fn put_resv(&self, r: proto::resv::AcctResv) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::PutResv(Box::new(r)));
        }
    }

    /// sacctmgr show reservation: the windows meeting `[start, end)`.
    pub fn resvs(
        &self,
        start: Option<i64>,
        end: Option<i64>,
    ) -> Option<oneshot::Receiver<Option<Vec<proto::resv::AcctResv>>>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Resvs(start, end, reply)).ok()?;
        Some(rx)
    }

    /// sacctmgr show: the association database.
    pub fn tables(&self) -> Option<oneshot::Receiver<AcctTables>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Tables(reply)).ok()?;
        Some(rx)
    }

    /// sacctmgr add/modify/delete.
    pub fn admin(&self, req: AdminRequest, who: Caller) -> Option<oneshot::Receiver<AdminReply>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Admin(Box::new(req), who, reply)).ok()?;
        Some(rx)
    }

    /// sreport: usage summed over a window (rolled up first).
    pub fn usage(&self, q: UsageQuery) -> Option<oneshot::Receiver<Option<UsageReport>>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Usage(q, reply)).ok()?;
        Some(rx)
    }

    /// Every association's decayed usage (PriorityDecayHalfLife), for
    /// fair-share.
    pub fn decayed_usage(&self) -> Option<oneshot::Receiver<Option<Vec<DecayedUsage>>>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Decayed(reply)).ok()?;
        Some(rx)
    }

    /// Asks the store; the answer arrives on the returned channel.
    pub fn query(&self, q: AcctQuery) -> Option<oneshot::Receiver<Result<Vec<AcctJob>, String>>> {
        let tx = self.tx.as_ref()?;
        let (reply, rx) = oneshot::channel();
        tx.send(Msg::Query(q, reply)).ok()?;
        Some(rx)
    }
}

/// Applies one sacctmgr change: only root, SlurmUser and users with
/// AdminLevel Operator or Administrator may change the database (as in
/// Slurm). A committed change is durable before the reply.
fn administer(
    store: &mut Box<dyn AccountingStore>,
    backend: &Backend,
    tables: &mut AcctTables,
    req: &AdminRequest,
    who: &Caller,
    cluster: &str,
) -> AdminReply {
    let allowed =
        who.daemon || accounting::admin::admin_level(tables, &who.user) >= AdminLevel::Operator;
    if !allowed {
        warn!(
            "refused a sacctmgr change from {}: not an operator",
            who.user
        );
        return AdminReply {
            stderr: denied_text(req),
            ..AdminReply::default()
        };
    }
    let applied = accounting::admin::apply(tables, req, cluster);
    if req.commit {
        if let Some(new) = applied.tables {
            if let Err(e) = with_reopen(store, backend, |s| s.save_tables(&new)) {
                warn!("sacctmgr change not saved: {e}");
                return AdminReply {
                    stderr: format!(
                        " Error with request: {}\n",
                        proto::SlurmError::AccountingUnavailable.as_slurm_str()
                    ),
                    ..AdminReply::default()
                };
            }
            info!("association database changed by {}", who.user);
            *tables = new;
        }
    }
    applied.reply
}

/// What sacctmgr prints when slurmdbd refuses a change for lack of rights.
fn denied_text(req: &AdminRequest) -> String {
    let why = proto::SlurmError::AccessDenied.as_slurm_str();
    match (req.action, req.entity) {
        (Action::Add, Entity::Account) => format!(" Problem adding accounts: {why}\n"),
        (Action::Add, Entity::User) => format!(" Problem adding users: {why}\n"),
        (Action::Add, Entity::Cluster) => format!(" Problem adding clusters: {why}\n"),
        (Action::Add, Entity::Qos) => format!(" Problem adding QOS: {why}\n"),
        _ => format!(" Error with request: {why}\n"),
    }
}

#[cfg(test)]
mod pg_outage;

#[cfg(test)]
mod tests {
    use super::*;
    use proto::acctdb::{Cond, Key, ListOp, Setting};

    fn add(entity: Entity, name: &str, set: Vec<Setting>) -> AdminRequest {
        AdminRequest {
            action: Action::Add,
            entity,
            cond: Cond {
                names: vec![name.into()],
                accounts: if entity == Entity::User {
                    vec!["root".into()]
                } else {
                    vec![]
                },
                ..Cond::default()
            },
            set,
            commit: true,
        }
    }

    #[test]
    fn postgres_settings_come_from_slurm_conf_and_slurmdbd_conf() {
        let dir = tempfile::tempdir().unwrap();
        let base = "ClusterName=c\nSlurmctldHost=h\nNodeName=n1 CPUs=1\n\
                    PartitionName=p Nodes=n1\nStateSaveLocation=/var/spool/m\n";
        let backend = |conf: &str, dbd: Option<&str>| {
            let path = dir.path().join("slurm.conf");
            std::fs::write(&path, format!("{base}{conf}")).unwrap();
            let dbd_path = dir.path().join("slurmdbd.conf");
            match dbd {
                Some(t) => std::fs::write(&dbd_path, t).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&dbd_path);
                }
            }
            Backend::from_config(&conf::load(&path).unwrap().config)
        };
        let pg = |s: &str| Backend::Postgres(s.into());
        assert_eq!(
            backend("", None),
            Backend::Sqlite("/var/spool/m/accounting.db".into())
        );
        assert_eq!(
            backend("AccountingStorageType=accounting_storage/none\n", None),
            Backend::Disabled
        );
        let conf_pg = "AccountingStorageType=accounting_storage/pgsql\n\
                       AccountingStorageHost=db1\nAccountingStorageUser=slurm\n";
        assert_eq!(
            backend(conf_pg, None),
            pg("host=db1 user=slurm dbname=slurm_acct_db")
        );
        let dbd = "# the database\nStorageType=accounting_storage/pgsql\nStorageHost=db2\n\
                   StoragePort=5433\nStoragePass=secret\nStorageLoc=acct\n";
        // slurm.conf's keys first, then slurmdbd.conf's.
        assert_eq!(
            backend(conf_pg, Some(dbd)),
            pg("host=db1 port=5433 user=slurm password=secret dbname=acct")
        );
        // A site's slurmdbd setting with a PostgreSQL slurmdbd.conf.
        assert_eq!(
            backend(
                "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=dbd\n",
                Some(dbd)
            ),
            pg("host=db2 port=5433 password=secret dbname=acct")
        );
        // A slurmdbd.conf for MySQL changes nothing.
        assert_eq!(
            backend("", Some("StorageType=accounting_storage/mysql\n")),
            Backend::Sqlite("/var/spool/m/accounting.db".into())
        );
        // TLS: libpq's words in AccountingStorageParameters, Slurm's
        // SSL_* words in slurmdbd.conf's StorageParameters.
        assert_eq!(
            backend(
                &format!(
                    "{conf_pg}AccountingStorageParameters=sslmode=verify-full,\
                     sslrootcert=/etc/muster/pg-ca.pem,SSL_CIPHER=x\n"
                ),
                None
            ),
            pg(
                "host=db1 user=slurm dbname=slurm_acct_db sslmode=verify-full \
                sslrootcert=/etc/muster/pg-ca.pem"
            )
        );
        assert_eq!(
            backend(
                conf_pg,
                Some("StorageParameters=SSL_CA=/ca.pem,SSL_CERT=/c.pem,SSL_KEY=/k.pem\n")
            ),
            pg(
                "host=db1 user=slurm dbname=slurm_acct_db sslrootcert=/ca.pem sslcert=/c.pem \
                sslkey=/k.pem sslmode=verify-ca"
            )
        );
    }

    #[test]
    fn the_log_line_leaves_the_password_out() {
        let b = Backend::Postgres("host=db user=slurm password=secret dbname=acct".into());
        assert_eq!(
            format!("{b:?}"),
            r#"Postgres("host=db user=slurm password=*** dbname=acct")"#
        );
    }

    #[test]
    fn only_root_slurmuser_and_operators_change_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let mut store: Box<dyn AccountingStore> = Box::new(SqliteStore::open(&path).unwrap());
        let backend = Backend::Sqlite(path);
        let mut t = AcctTables::default();
        accounting::admin::bootstrap(&mut t, "c");
        let caller = |user: &str, daemon| Caller {
            user: user.into(),
            daemon,
        };
        let op = Setting {
            key: Key::AdminLevel,
            op: ListOp::Set,
            value: Some("Operator".into()),
        };
        let r = administer(
            &mut store,
            &backend,
            &mut t,
            &add(Entity::User, "alice", vec![op]),
            &caller("slurm", true),
            "c",
        );
        assert!(r.ok, "{r:?}");
        administer(
            &mut store,
            &backend,
            &mut t,
            &add(Entity::User, "bob", vec![]),
            &caller("root", true),
            "c",
        );
        let denied = administer(
            &mut store,
            &backend,
            &mut t,
            &add(Entity::Account, "x", vec![]),
            &caller("bob", false),
            "c",
        );
        assert_eq!(
            (denied.ok, denied.stderr.as_str()),
            (
                false,
                " Problem adding accounts: Access/permission denied\n"
            )
        );
        assert!(t.accounts.iter().all(|a| a.name != "x"));
        let ok = administer(
            &mut store,
            &backend,
            &mut t,
            &add(Entity::Account, "x", vec![]),
            &caller("alice", false),
            "c",
        );
        assert!(ok.ok, "{ok:?}");
        // What was committed is in the store, not only in memory.
        assert_eq!(store.load_tables().unwrap(), t);
        // A preview changes nothing.
        let mut preview = add(Entity::Account, "y", vec![]);
        preview.commit = false;
        let r = administer(
            &mut store,
            &backend,
            &mut t,
            &preview,
            &caller("alice", false),
            "c",
        );
        assert!(r.changed && t.accounts.iter().all(|a| a.name != "y"));
    }

    #[test]
    fn decayed_usage_weighs_recent_use_more() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = SqliteStore::open(dir.path().join("u.db")).unwrap();
        let t = now();
        let day = 86_400;
        let job = |id, user: &str, ago: i64| {
            let mut j = accounting::suite::sample_job("c", id, t - ago - 200);
            j.user = user.into();
            j.start_time = Some(t - ago - 100);
            j.end_time = Some(t - ago);
            j.n_cpus = 1;
            j
        };
        // The same 100 CPU-seconds, one day ago and three weeks ago.
        store
            .put_jobs(&[job(1, "recent", day), job(2, "old", 21 * day)])
            .unwrap();
        let u = UsageSettings {
            cpus: 4,
            half_life: 7 * day,
        };
        let d = decayed_usage(&mut store, "c", u).unwrap();
        let of = |user: &str| d.iter().find(|x| x.user == user).map(|x| x.usage).unwrap();
        assert!(of("recent") > 85.0 && of("recent") <= 100.0, "{d:?}");
        // Three half-lives: about an eighth.
        assert!((of("old") - 12.5).abs() < 1.5, "{d:?}");
        let r = usage_report(
            &mut store,
            "c",
            u,
            &UsageQuery {
                start: t - 22 * day,
                end: t + 3600,
            },
        )
        .unwrap();
        let total: i64 = r
            .rows
            .iter()
            .filter(|x| !x.user.is_empty())
            .map(|x| x.alloc_secs)
            .sum();
        assert_eq!(total, 200);
    }
}
