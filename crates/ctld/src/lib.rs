//! The controller daemon (Slurm's slurmctld): a thin tokio shell around
//! `engine::Engine`.
//!
//! ```text
//!  connections --(request, reply slot)--> engine task --commands--> node workers
//!       ^                                   |   ^                      |
//!       +------------- reply ---------------+   +-- launch failures ----+
//! ```
//!
//! One task owns the engine. It handles every message in arrival order,
//! drains whatever else is queued, then runs one scheduling pass, so a
//! submission on an idle cluster starts at once and a burst of submissions
//! costs one pass. Time limits and other deadlines wake it exactly when due
//! (`Engine::next_wakeup`); nothing polls. Commands for a node go through
//! that node's own queue so they arrive in the order they were decided.
//!
//! # Persistence, accounting and memory
//!
//! Journal records and snapshots (`durable`): a record is a magic byte, then
//! MessagePack with field names (a newer build reads an older one's records;
//! JSON records of earlier builds are still read). A submission's environment
//! is written in full only the first time it is seen since the last snapshot
//! (`EnvTable`, by content); later submissions with the same one refer to it by
//! id. A snapshot and a new process start the table afresh, so a recovery never
//! needs a record older than its snapshot.
//!
//! Snapshots are MessagePack with field names behind a magic byte
//! (self-describing, so a newer build reads an older one's; JSON snapshots of
//! older builds still load): first each distinct job description once, then the
//! state, whose jobs name their description by its number in that table
//! (`engine::persist`'s versioned snapshot types; a job's empty optional
//! fields are left out), so 100,000 jobs from one script are one description to
//! write, read and pool. Snapshots with a description per job (older builds)
//! still load, their identical descriptions pooled.
//!
//! Recovery replays the entries on top of the newest snapshot
//! (`Engine::restore`, then `Engine::after_recovery` re-sends launches and
//! terminations that may have been lost). slurm.conf may change between runs:
//! the snapshot records the node and partition names (`Engine::layout`);
//! `restore` maps every job's partitions, allocation and suspended shares to
//! the partitions of the same name and takes nodes added after the last one; it
//! refuses (`RestoreError`) while a job names a partition that is gone, or when
//! nodes were removed, renamed or reordered (allocations name nodes by place).
//! Records after the snapshot (a crash: a clean stop writes a snapshot last)
//! are replayed only under the layout they were written with
//! (`RecoverError::ConfigChangedAfterCrash`). A launch re-sent to a daemon that
//! has neither registered nor answered since the controller started, and that
//! refuses connections, is tried again for up to 30 s (`FIRST_CONTACT_WAIT`:
//! `muster up` starts the controller first) before the node is judged not
//! responding. A request the engine task never handled because it stopped gets
//! no answer: its connection is closed, so the client tries again instead of
//! reading a refusal.
//!
//! `scontrol reconfigure` and SIGHUP (`reconfigure`): the files are read
//! again once the batch before the request is on disk; the engine is rebuilt
//! under the configuration `conf::effect::reconfigured` makes of them, and a
//! snapshot of it is written before the answer, so records before it are
//! never replayed under the new configuration nor records after it under the
//! old. `muster ctld -R` recovers the partitions as `scontrol` left them.
//!
//! Accounting (`acct`): a writer thread owns the store and writes the engine's
//! `Command::AcctRecord`s in batches (a record waits up to 100 ms for others,
//! so a burst is one transaction; a query writes what waits before it is
//! answered). It retries when the database is away (the batch is kept and the
//! store opened again; a query, rollup or decayed-usage read that fails opens
//! it again once), answers sacct's `AcctQuery` and sreport's `AcctUsage`
//! (rolling usage up first, and every five idle minutes), serves the decayed
//! usage (`AcctDecayedUsage`), and owns the association database: sacctmgr's
//! changes are applied there, only for root, SlurmUser and AdminLevel Operator
//! or Administrator, and saved before the reply.
//!
//! Memory (`trim`): once requests (or accounting batches, such as the re-put of
//! every job after a restart) have stopped for a quarter of a second, and once
//! after recovery, `malloc_trim` gives the memory a burst freed back to the
//! system (glibc keeps it otherwise: RSS stayed twice the live heap after
//! 100,000 submissions). `trim::one_arena` makes every thread allocate from one
//! glibc arena (with one per thread, long-lived jobs and freed request buffers
//! were spread over several arenas and RSS stayed 1.4-1.9 times the live heap).
//!
//! sstat's `StepStat` is answered off the engine task: the job's running steps
//! come from the engine, each node that runs one is asked for its supervisors'
//! newest usage sample (`NodeRequest::StepStat`), and the answers are merged
//! with `StepUsage::merge`. Listings stream from the engine task in
//! `block_in_place`, so a connection's writer sends the parts already built
//! meanwhile.
//!
//! # Kept node connections
//!
//! The controller's commands for a node (launch, signal, terminate, extern
//! steps) travel on one connection per node that stays open between them
//! (`NodeLink` in ctld; a new one after 60 s of silence, the daemon closes one
//! after 300 s). It is authenticated both ways once: the controller's first
//! frame, `NodeRequest::OpenSession`, carries its credential, which the daemon
//! verifies (fresh, single-use nonce, root or SlurmUser); the daemon's answer
//! carries the daemon's own credential, which the controller verifies the same
//! way (so a process that took over the node's port without the cluster key or
//! MUNGE gets no command).
//!
//! Every later frame is `NodeRequest::InSession { seq, request }` without a
//! credential: `seq` counts from 1 on that connection and must grow by exactly
//! one, and an `InSession` frame on a connection that did not open a session,
//! or out of order, is refused and closes the connection. A frame copied from
//! one connection is worthless on another (the opening credential is single-use
//! and the numbers start over), so a replayed or forged command is still
//! refused; what this does not cover, as before, is an attacker who can inject
//! bytes into an established TCP connection (no per-message MAC: answers were
//! never authenticated either).
//!
//! When a kept connection turns out closed (the daemon restarted), the call is
//! made again once on a new connection: launches are idempotent on the daemon
//! (a launch of a running job is answered Ok, one of an ended run refused).
//! Job-end reports still come from the daemon on connections of their own, each
//! with its credential.

mod acct;
mod configless;
mod degraded;
mod diag;
mod durable;
mod fault;
mod health;
mod mail;
mod metrics;
mod private;
mod scripts;
mod trim;
mod watch;

use anyhow::Context;
use durable::{Entry, Store};
use engine::{Command, Engine, Input};
use model::{JobId, Timestamp};
use proto::{
    CtldRequest, CtldResponse, Identity, JobRowSource, NodeRequest, NodeResponse, SlurmError,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, info, warn};

/// How long the controller waits for a node daemon to answer: the
/// configured MessageTimeout (Slurm's default, 10 s).
fn node_timeout(engine: &Engine) -> Duration {
    Duration::from_secs(u64::from(engine.settings().message_timeout))
}

/// How many times a Terminate is tried on a node that does not answer
/// (about ten minutes with the capped backoff).
const TERMINATE_ATTEMPTS: u32 = 120;

/// Command-line options of `muster ctld`.
#[derive(Clone, Debug)]
pub struct CtldOptions {
    /// slurm.conf to read.
    pub conf: PathBuf,
    /// `-R`: the partitions as `scontrol` left them, not slurm.conf's
    /// (slurmctld's `-R` recovers partition state; without it only jobs
    /// and node states are).
    pub recover_partitions: bool,
}

/// What reaches the engine task.
enum Msg {
    Request {
        req: Box<CtldRequest>,
        who: Identity,
        reply: oneshot::Sender<CtldResponse>,
        /// For a streamed job listing (`JobFilter::stream`): where its
        /// parts go as they are built, ahead of `reply` (the last part).
        parts: Option<mpsc::UnboundedSender<CtldResponse>>,
    },
    LaunchFailed {
        job_id: JobId,
        node: String,
    },
    JobGone {
        job_id: JobId,
        node: String,
        run: u32,
    },
    Ping {
        node: String,
        ok: bool,
    },
    /// The accounting writer committed a change of the association database.
    AssocTables(Box<proto::acctdb::AcctTables>),
    /// SIGHUP: read the configuration again, as `scontrol reconfigure`.
    Reload,
    /// A job's PrologSlurmctld ended (`scripts`).
    PrologSlurmctldEnded {
        job_id: JobId,
        run: u32,
        ok: bool,
    },
    /// A watch stream opens (`watch`): its changes go to `tx`.
    Watch {
        req: proto::watch::WatchRequest,
        who: Identity,
        tx: watch::WatchTx,
    },
}

fn now() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as Timestamp)
        .unwrap_or(0)
}

/// The identity the controller uses when it calls node daemons.
fn daemon_identity(host: &str) -> Identity {
    let uid = nix::unistd::getuid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    Identity {
        uid: uid.as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        user,
        host: host.to_string(),
    }
}

/// What every request passes before it reaches the engine: its credential
/// is checked (crate `auth`), and the daemons' own requests must come from
/// the daemons' users.
struct Gate {
    verifier: auth::Verifier,
    /// root and SlurmUser.
    daemon_uids: Vec<u32>,
    /// slurm.conf, when configless mode serves it (`configless`).
    configless: Option<PathBuf>,
    /// The `auth/jwt` key (`AuthAltParameters=jwt_key=`), for
    /// `CtldRequest::Token`; None where slurm.conf enables no JWTs.
    jwt_key: Option<Vec<u8>>,
}

impl Gate {
    fn new(verifier: auth::Verifier, cfg: &conf::Config) -> Gate {
        let (daemon_uids, known) = auth::daemon_uids(cfg);
        if !known {
            warn!(
                "SlurmUser {:?} is not a known user: only root may register nodes",
                cfg.slurm_user
            );
        }
        if let Some((_, params)) = cfg.other.get("authaltparameters") {
            for p in params.split(',').map(str::trim) {
                // jwks= and userclaimfield= are restd's (it checks the
                // tokens); the controller only mints HS256 ones.
                let known = ["jwt_key=", "jwks=", "userclaimfield="];
                if !p.is_empty() && !known.iter().any(|k| p.starts_with(k)) {
                    warn!("AuthAltParameters={p} is not supported (only jwt_key=, jwks=, userclaimfield=): ignored");
                }
            }
        }
        let jwt_key = auth::jwt::key_path(cfg).and_then(|path| match auth::jwt::load_key(&path) {
            Ok(key) => Some(key),
            Err(e) => {
                error!(
                    "cannot read the JWT key {}: {e}; scontrol token is refused",
                    path.display()
                );
                None
            }
        });
        Gate {
            verifier,
            daemon_uids,
            configless: None,
            jwt_key,
        }
    }

    /// `scontrol token`: a JWT for `who`, or for `username` where `who` is
    /// root or SlurmUser.
    fn token(
        &self,
        who: &Identity,
        username: Option<String>,
        lifespan: Option<u64>,
        peer: &str,
    ) -> CtldResponse {
        let Some(key) = &self.jwt_key else {
            return CtldResponse::Error(SlurmError::NotSupported);
        };
        let user = match username {
            Some(u) if u != who.user => {
                if !self.daemon_uids.contains(&who.uid) {
                    warn!(
                        "refused a token for {u} to {} (uid {}) from {peer}: not root or SlurmUser",
                        who.user, who.uid
                    );
                    return CtldResponse::Error(SlurmError::AccessDenied);
                }
                u
            }
            _ => who.user.clone(),
        };
        let lifespan = lifespan.unwrap_or(auth::jwt::DEFAULT_LIFESPAN);
        info!(
            "issued a JWT for {user} (lifespan {lifespan}s) to {} (uid {})",
            who.user, who.uid
        );
        CtldResponse::Token(auth::jwt::mint(key, &user, now(), lifespan))
    }

    /// Unwraps `CtldRequest::OnBehalf`: the request and the identity it
    /// acts as, when `who` (proven by a credential or a session) is root
    /// or SlurmUser; any other request as it is.
    fn on_behalf(
        &self,
        who: Identity,
        body: CtldRequest,
        peer: &str,
    ) -> Result<(Identity, CtldRequest), SlurmError> {
        let CtldRequest::OnBehalf { user, request } = body else {
            return Ok((who, body));
        };
        if !self.daemon_uids.contains(&who.uid) {
            warn!(
                "refused a request on behalf of {} from {peer}: user {} (uid {}) is not root or \
                 SlurmUser",
                user.user, who.user, who.uid
            );
            return Err(SlurmError::AccessDenied);
        }
        if matches!(
            *request,
            CtldRequest::OnBehalf { .. } | CtldRequest::OpenSession | CtldRequest::InSession { .. }
        ) {
            return Err(SlurmError::InvalidRequest);
        }
        self.permit(&request, &user, peer)?;
        Ok((user, *request))
    }

    /// A connection that proved `who` leaves the unauthenticated pool for
    /// an authenticated place (`rpc::admission`; root and SlurmUser are
    /// never refused one). Where the user or the controller has no place
    /// left, the connection is closed without an answer, as one beyond the
    /// listen queue would be, and the refusal logged.
    fn take_place(
        &self,
        ticket: &rpc::admission::Ticket,
        who: &Identity,
        peer: &str,
    ) -> Result<(), rpc::RpcError> {
        let exempt = self.daemon_uids.contains(&who.uid);
        ticket.authenticate(who.uid, exempt).map_err(|refusal| {
            warn!(
                "closing a connection from {peer} of user {} (uid {}): {refusal}",
                who.user, who.uid
            );
            rpc::RpcError::Io(std::io::Error::other(refusal))
        })
    }

    /// The identity the envelope's credential proves, or the refusal to
    /// answer with (logged here, with the peer's address).
    fn verify(
        &self,
        env: &proto::Envelope<CtldRequest>,
        peer: &str,
    ) -> Result<Identity, SlurmError> {
        let check = || {
            self.verifier
                .verify(env.credential.as_deref(), &env.identity, now())
        };
        let checked = if self.verifier.blocks() {
            tokio::task::block_in_place(check)
        } else {
            check()
        };
        match checked {
            Ok(who) => Ok(who),
            Err(e) => {
                warn!(
                    "refused a request from {peer} claiming to be {} (uid {}): \
                     authentication failed: {e}",
                    env.identity.user, env.identity.uid
                );
                Err(SlurmError::ProtocolAuthentication)
            }
        }
    }

    /// Whether `who` (proved by the request's credential or by its
    /// connection's session) may send `body` at all (the refusal is logged
    /// here, with the peer's address). Only root and SlurmUser may register
    /// a node or report a job's end, so no other process can pose as a
    /// node daemon.
    fn permit(&self, body: &CtldRequest, who: &Identity, peer: &str) -> Result<(), SlurmError> {
        let daemons_only = matches!(
            body,
            CtldRequest::RegisterNode(_)
                | CtldRequest::JobExited { .. }
                | CtldRequest::StepExited(_)
                | CtldRequest::ExternEnded { .. }
                | CtldRequest::GpuXid { .. }
                | CtldRequest::HealthCheckRan(_)
        );
        if daemons_only && !self.daemon_uids.contains(&who.uid) {
            warn!(
                "refused {} from {peer}: user {} (uid {}) is not root or SlurmUser",
                match body {
                    CtldRequest::RegisterNode(_) => "a node registration",
                    CtldRequest::GpuXid { .. } => "a GPU Xid report",
                    CtldRequest::HealthCheckRan(_) => "a health check report",
                    _ => "a job end report",
                },
                who.user,
                who.uid
            );
            return Err(SlurmError::AccessDenied);
        }
        Ok(())
    }
}

/// What the process does with a configuration `scontrol reconfigure`
/// put in force beyond the engine (`muster`: the log level).
type ReconfigureHook = Box<dyn Fn(&conf::Config) + Send + Sync>;
static ON_RECONFIGURE: std::sync::OnceLock<ReconfigureHook> = std::sync::OnceLock::new();

/// Sets what the process does after each reconfigure with the new
/// configuration (the log's `SlurmctldDebug`); once, before [`main`].
pub fn on_reconfigure(hook: ReconfigureHook) {
    let _ = ON_RECONFIGURE.set(hook);
}

/// `muster ctld [-f slurm.conf] [-D] [-v]`.
pub fn main(args: Vec<String>) -> i32 {
    let mut conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"));
    let mut recover_partitions = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-R" => recover_partitions = true,
            "-f" if i + 1 < args.len() => {
                conf = PathBuf::from(&args[i + 1]);
                i += 1;
            }
            "-D" | "-v" | "-vv" | "-vvv" => {}
            "-h" | "--help" => {
                println!("Usage: muster ctld [-f slurm.conf] [-D] [-R] [-v]");
                return 0;
            }
            other => {
                eprintln!("muster ctld: unknown option {other}");
                return 1;
            }
        }
        i += 1;
    }
    trim::one_arena();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("muster ctld: cannot start runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(run(CtldOptions {
        conf,
        recover_partitions,
    })) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("muster ctld: error: {e:#}");
            1
        }
    }
}

/// Runs the controller until SIGINT/SIGTERM or `scontrol shutdown`.
pub async fn run(opts: CtldOptions) -> anyhow::Result<()> {
    fault::init();
    let loaded =
        conf::load(&opts.conf).with_context(|| format!("reading {}", opts.conf.display()))?;
    for w in &loaded.warnings {
        warn!("{w}");
    }
    // Keys Slurm knows that do nothing here: said once, as check-config
    // says them (`conf::effect`); `scontrol show config` still shows them.
    if let Ok(text) = std::fs::read_to_string(&opts.conf) {
        for w in conf::effect::inert_keys(&text, &opts.conf, &mut |p| std::fs::read_to_string(p)) {
            warn!("{w}");
        }
    }
    let cfg = Arc::new(loaded.config);
    // Every request is checked with the verifier; every call to a node
    // daemon carries a credential from the signer.
    let (signer, verifier) = auth::from_config(&cfg)
        .context("setting up authentication (AuthType and AuthInfo in slurm.conf)")?;
    let signer = Arc::new(signer);
    let mut gate = Gate::new(verifier, &cfg);
    if configless::enabled(&cfg) {
        // Said at start, so a broken set is found before a node asks.
        match configless::files(&opts.conf) {
            Ok(files) => info!(
                "configless mode: serving {}",
                files
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Err(why) => warn!("configless mode: {why}"),
        }
        if cfg.other.contains_key("accountingstoragepass") {
            warn!(
                "configless mode: slurm.conf sets AccountingStoragePass, and configless mode \
                 serves slurm.conf to every authenticated user: put the password in a \
                 slurmdbd.conf beside it (StoragePass=, mode 0600), which is never served"
            );
        }
        gate.configless = Some(opts.conf.clone());
    }
    let gate = Arc::new(gate);
    let started = now();
    let state_dir = PathBuf::from(&cfg.state_save_location);
    // Job scripts and environments are in the journal: owner-only.
    private::make_private(&state_dir);
    let (store, engine) = tokio::task::block_in_place(|| {
        Store::open_with(&state_dir, &cfg, started, opts.recover_partitions)
    })
    .with_context(|| format!("recovering the controller state in {}", state_dir.display()))?;
    let settings = engine.settings().clone();
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();
    let tables_tx = tx.clone();
    let acct = acct::AcctWriter::start(
        acct::Backend::from_config(&cfg),
        settings.cluster_name.clone(),
        acct::UsageSettings::from_config(&cfg),
        Box::new(move |t| {
            let _ = tables_tx.send(Msg::AssocTables(Box::new(t)));
        }),
    )
    .context("opening the accounting database (AccountingStorageType in slurm.conf)")?;
    // The engine decides submissions with the association database: it
    // gets the store's copy through the journal, so a replay sees the same.
    let (mut store, mut engine) = (store, engine);
    if let Some(t) = acct.initial_tables() {
        if engine.assoc_tables() != Some(t) {
            let entry = Entry::AssocTables {
                tables: Box::new(t.clone()),
            };
            durable::apply(&mut engine, entry.clone());
            tokio::task::block_in_place(|| store.append(std::slice::from_ref(&entry)))
                .context("writing the association database into the journal")?;
        }
    }
    let bind = format!("{}:{}", settings.ctld_addr, settings.ctld_port);
    let listener = rpc::admission::listen(&bind)
        .await
        .with_context(|| format!("listening on {bind}"))?;
    info!(
        "muster ctld for cluster {} listening on {}",
        settings.cluster_name,
        listener.local_addr()?
    );
    let identity = daemon_identity(&settings.ctld_host);
    let mut engine_task = tokio::spawn(engine_loop(
        engine,
        store,
        cfg.clone(),
        opts.conf.clone(),
        rx,
        tx.clone(),
        identity,
        signer,
        gate.clone(),
        acct,
        started,
    ));
    trim::spawn();
    match rpc::admission::raise_open_file_limit() {
        Ok((_, n)) => debug!("open files: up to {n}"),
        Err(e) => warn!("cannot raise the open-file limit: {e}"),
    }
    let admission = rpc::admission::Admission::new(CONNECTION_LIMITS);
    let lobby = rpc::lobby::Lobby::start("ctld-lobby").context("starting the lobby thread")?;
    let accept = tokio::spawn(accept_loop(listener, admission, lobby, tx.clone(), gate));
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // The engine task ends only for `scontrol shutdown` (Ok) or a reason
    // to stop that the process exits non-zero with; nothing else (a channel
    // closing as a task ends) reads as a request to stop.
    let ended = loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {
                info!("interrupted, stopping");
                break None;
            }
            _ = sigterm.recv() => {
                info!("terminated, stopping");
                break None;
            }
            _ = sighup.recv() => {
                // As slurmctld: SIGHUP is `scontrol reconfigure`.
                info!("SIGHUP: reading the configuration again");
                let _ = tx.send(Msg::Reload);
            }
            ended = &mut engine_task => break Some(ended),
        }
    };
    accept.abort();
    engine_task.abort();
    match ended {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(why))) => {
            error!("stopping: {why:#}");
            Err(why)
        }
        Some(Err(e)) => {
            error!("stopping: the engine task failed: {e}");
            anyhow::bail!("the engine task failed: {e}")
        }
    }
}

/// Who may hold the controller's connections (docs/limits.md,
/// "Connections"). A connection is unauthenticated until a frame of it
/// carries a valid credential, which a real client's first frame does:
/// such connections have a small pool of their own, where a new one
/// closes the oldest, and a short deadline; authenticated ones have the
/// rest, at most half of it per user, and the daemons' users (root,
/// SlurmUser: node registrations, job ends) are held to no limit.
const CONNECTION_LIMITS: rpc::admission::Limits = rpc::admission::Limits {
    unauthenticated: 2048,
    unauthenticated_per_peer: 1024,
    deadline: Duration::from_millis(1500),
    authenticated: 1024,
    authenticated_per_uid: 512,
};

/// Accepts connections for as long as the controller runs. It never waits
/// for a place: a new connection always gets one in the unauthenticated
/// pool (`rpc::admission`), so an authenticated client is never queued
/// behind connections that never authenticate; while many such are open,
/// those that have sent no request wait in the lobby (`rpc::lobby`), off
/// the runtime that serves requests.
async fn accept_loop(
    listener: TcpListener,
    admission: Arc<rpc::admission::Admission>,
    lobby: rpc::lobby::Lobby,
    tx: mpsc::UnboundedSender<Msg>,
    gate: Arc<Gate>,
) {
    let mut accept_errors = rpc::admission::AcceptErrors::default();
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                let ticket = admission.arrive(peer.ip());
                let tx = tx.clone();
                let gate = gate.clone();
                lobby.admit(&admission, stream, ticket, move |stream, ticket| {
                    serve_admitted(stream, ticket, peer, tx, gate)
                });
            }
            Err(e) => tokio::time::sleep(accept_errors.pause_after(&e, &admission)).await,
        }
    }
}

/// Serves one connection until it ends or, not yet authenticated, is shed.
async fn serve_admitted(
    stream: TcpStream,
    ticket: rpc::admission::Ticket,
    peer: std::net::SocketAddr,
    tx: mpsc::UnboundedSender<Msg>,
    gate: Arc<Gate>,
) {
    let peer = peer.to_string();
    let serve = serve_connection(stream, tx, gate, &peer, &ticket);
    tokio::select! {
        // A connection whose credential has arrived is served rather than
        // closed.
        biased;
        served = serve => {
            if let Err(e) = served {
                debug!("connection: {e}");
            }
        }
        () = ticket.shed() => {
            debug!("closed unauthenticated connection from {peer} to make room");
        }
    }
}

/// Requests one connection may have in flight (read, not yet answered):
/// a client may send several before reading an answer (pipelining, see
/// `client::Client::call_pipelined`); beyond this many the controller
/// stops reading from that connection until answers have gone out.
const PIPELINE_DEPTH: usize = 64;

/// An answer a connection owes, in the order of its requests.
enum Owed {
    /// Answered already (a refusal before the engine; boxed, as it is
    /// rare, so an `Owed` stays small).
    Ready(Box<CtldResponse>, rpc::Encoding),
    /// The engine task's answer, to come.
    Engine(oneshot::Receiver<CtldResponse>, rpc::Encoding),
    /// A streamed job listing: its parts as the engine task builds them
    /// (the channel closes after the last), then its last part.
    Parts(
        mpsc::UnboundedReceiver<CtldResponse>,
        oneshot::Receiver<CtldResponse>,
        rpc::Encoding,
    ),
    /// A watch stream: its batches until the engine task drops it or the
    /// client goes away; the connection's last answer.
    Stream(mpsc::Receiver<CtldResponse>, rpc::Encoding),
}

/// An answer, or `None` where the engine task ended without handling the
/// request (the controller is stopping): such a request gets no answer and
/// its connection is closed, so that the client tries again (a node
/// daemon's job end report until a controller takes it) rather than read a
/// refusal of something never looked at.
type Answer = Option<(CtldResponse, rpc::Encoding)>;

impl Owed {
    fn now(self) -> Result<Answer, Owed> {
        match self {
            Owed::Ready(resp, enc) => Ok(Some((*resp, enc))),
            Owed::Engine(mut rx, enc) => match rx.try_recv() {
                Ok(resp) => Ok(Some((resp, enc))),
                Err(oneshot::error::TryRecvError::Empty) => Err(Owed::Engine(rx, enc)),
                Err(oneshot::error::TryRecvError::Closed) => Ok(None),
            },
            later @ (Owed::Parts(..) | Owed::Stream(..)) => Err(later),
        }
    }

    async fn wait(self) -> Answer {
        match self {
            Owed::Ready(resp, enc) => Some((*resp, enc)),
            Owed::Engine(rx, enc) | Owed::Parts(_, rx, enc) => rx.await.ok().map(|r| (r, enc)),
            Owed::Stream(..) => None,
        }
    }
}

async fn serve_connection(
    stream: TcpStream,
    tx: mpsc::UnboundedSender<Msg>,
    gate: Arc<Gate>,
    peer: &str,
    ticket: &rpc::admission::Ticket,
) -> Result<(), rpc::RpcError> {
    // Every request is journaled as one record of at most
    // journal::MAX_RECORD_LEN (64 MiB), and a record that does not fit stops
    // the controller. Re-encoding can grow a request (omitted optional
    // fields come back as nulls, by well under 2x), so requests are held to
    // a quarter of the record limit (docs/limits.md).
    const MAX_REQUEST_BYTES: u32 = proto::MAX_REQUEST_BYTES;
    stream.set_nodelay(true)?;
    let (rd, mut wr) = stream.into_split();
    // Reads go through a buffer: a request's length and body, the wait
    // for the next request, and requests a client sent back to back are
    // one read in the common case.
    let mut rd = tokio::io::BufReader::with_capacity(16 * 1024, rd);
    // A client may send several requests on one connection, in turn or
    // several at once; they reach the engine in the order they were read
    // and are answered in that order. The reader goes on reading while
    // earlier requests wait for the engine (and the journal), so a
    // pipelining client's requests share the engine's batches.
    let (owed_tx, mut owed_rx) = mpsc::channel::<Owed>(PIPELINE_DEPTH);
    // Set once the connection carries a watch stream.
    let watching = AtomicBool::new(false);
    let watching = &watching;
    let gate = &*gate;
    let tx = &tx;
    let reader = async move {
        let mut first = true;
        // After an authenticated `OpenSession`: whom the connection's
        // opener proved to be, and the number its next `InSession` request
        // must carry.
        let mut session: Option<(Identity, u64)> = None;
        loop {
            if !first {
                // The next request, or the client's end: a close, or
                // silence for rpc::IO_TIMEOUT (until its deadline, on a
                // connection not yet authenticated).
                use tokio::io::AsyncBufReadExt;
                let idle = ticket.read_budget(0).unwrap_or(rpc::IO_TIMEOUT);
                match tokio::time::timeout(idle, rd.fill_buf()).await {
                    Ok(Ok([])) | Err(_) => return Ok(()),
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return Err(e.into()),
                }
            }
            first = false;
            let read = read_request(
                &mut rd,
                tx,
                gate,
                peer,
                MAX_REQUEST_BYTES,
                &mut session,
                ticket,
            );
            let Some((owed, next)) = read.await? else {
                return Ok(());
            };
            if owed_tx.send(owed).await.is_err() || next == Next::Close {
                return Ok(());
            }
            if next == Next::Stream {
                watching.store(true, Ordering::Relaxed);
                // A watch: the client sends nothing more; its close (or
                // anything it sends) ends the stream.
                use tokio::io::AsyncBufReadExt;
                let _ = rd.fill_buf().await;
                return Ok(());
            }
        }
    };
    let writer = async move {
        // Answers that are ready together (a batch of the engine's) leave
        // in one write.
        let mut out = Vec::new();
        let mut held: Option<Owed> = None;
        loop {
            let owed = match held.take() {
                Some(o) => o,
                None => match owed_rx.recv().await {
                    Some(o) => o,
                    None => return Ok::<(), rpc::RpcError>(()),
                },
            };
            use tokio::io::AsyncWriteExt;
            let owed = match owed {
                // A watch stream: batches as they come, a heartbeat when
                // quiet, until the engine task drops it (too slow, or
                // stopping) or the write fails; then the connection ends.
                Owed::Stream(mut rx, enc) => {
                    let beat = Duration::from_secs(proto::watch::WATCH_HEARTBEAT_SECS);
                    loop {
                        let next = tokio::time::timeout(beat, rx.recv()).await;
                        let resp = match next {
                            Ok(Some(resp)) => resp,
                            Ok(None) => return Ok(()),
                            Err(_) => CtldResponse::WatchEvents(proto::watch::WatchBatch {
                                reset: false,
                                last: 0,
                                epoch: 0,
                                events: Vec::new(),
                            }),
                        };
                        append_answer(&mut out, resp, enc)?;
                        tokio::time::timeout(rpc::IO_TIMEOUT, wr.write_all(&out))
                            .await
                            .unwrap_or(Err(std::io::ErrorKind::TimedOut.into()))?;
                        out.clear();
                    }
                }
                // A streamed listing's parts leave as they come; its last
                // part is then awaited as any answer.
                Owed::Parts(mut parts, rx, enc) => {
                    while let Some(part) = parts.recv().await {
                        append_answer(&mut out, part, enc)?;
                        tokio::time::timeout(rpc::IO_TIMEOUT, wr.write_all(&out))
                            .await
                            .unwrap_or(Err(std::io::ErrorKind::TimedOut.into()))?;
                        out.clear();
                    }
                    Owed::Engine(rx, enc)
                }
                owed => owed,
            };
            // Unanswered (the engine stopped): what is ready leaves, then
            // the connection closes.
            let mut unanswered = false;
            match owed.wait().await {
                Some((resp, enc)) => append_answer(&mut out, resp, enc)?,
                None => unanswered = true,
            }
            while !unanswered {
                let Ok(next) = owed_rx.try_recv() else { break };
                match next.now() {
                    Ok(Some((resp, enc))) => append_answer(&mut out, resp, enc)?,
                    Ok(None) => unanswered = true,
                    Err(later) => {
                        held = Some(later);
                        break;
                    }
                }
            }
            // A client that never reads its answers is dropped as an
            // idle one is.
            tokio::time::timeout(rpc::IO_TIMEOUT, wr.write_all(&out))
                .await
                .unwrap_or(Err(std::io::ErrorKind::TimedOut.into()))?;
            out.clear();
            if unanswered {
                return Ok(());
            }
        }
    };
    tokio::pin!(reader, writer);
    tokio::select! {
        // The client's end (or a bad request): what is owed is still
        // answered; a watch stream has nothing owed and ends with it.
        read = &mut reader => {
            if watching.load(Ordering::Relaxed) {
                return read;
            }
            let written = (&mut writer).await;
            read.and(written)
        }
        // Answers cannot be written: nothing more is read.
        written = &mut writer => written,
    }
}

/// Appends one answer's frame, with the controller's own identity
/// (resolved once: a lookup per answer read /etc/passwd for every request).
fn append_answer(
    out: &mut Vec<u8>,
    resp: CtldResponse,
    enc: rpc::Encoding,
) -> Result<(), rpc::RpcError> {
    let frame = rpc::envelope(daemon_identity_cached(), resp);
    rpc::append_frame(out, &frame, enc, proto::MAX_RESPONSE_BYTES)
}

/// Whether a connection goes on after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// Read the next request.
    Read,
    /// Answer what is owed, then close (a session request out of order,
    /// or on a connection without a session).
    Close,
    /// A watch stream: nothing more is read; the connection ends when the
    /// client closes it or the stream ends.
    Stream,
}

/// A refusal the connection owes, in JSON.
fn refused(e: SlurmError) -> Owed {
    Owed::Ready(Box::new(CtldResponse::Error(e)), rpc::Encoding::Json)
}

/// Reads and drops the `len` bytes of a frame that is not read, within
/// `rpc::IO_TIMEOUT`; nothing is kept.
async fn skip_bytes(
    stream: &mut tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>,
    len: u32,
) -> Result<(), rpc::RpcError> {
    let mut body = tokio::io::AsyncReadExt::take(&mut *stream, u64::from(len));
    let skipped = tokio::time::timeout(
        rpc::IO_TIMEOUT,
        tokio::io::copy(&mut body, &mut tokio::io::sink()),
    )
    .await
    .map_err(|_| rpc::RpcError::Timeout)??;
    if skipped < u64::from(len) {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(())
}

/// Reads one request from `stream`, checks its credential (or, in a
/// session, its number) and hands it to the engine task: what the
/// connection then owes its client, and whether it goes on. `None`: the
/// engine task is gone.
async fn read_request(
    stream: &mut tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>,
    tx: &mpsc::UnboundedSender<Msg>,
    gate: &Gate,
    peer: &str,
    max_request: u32,
    session: &mut Option<(Identity, u64)>,
    ticket: &rpc::admission::Ticket,
) -> Result<Option<(Owed, Next)>, rpc::RpcError> {
    // Nothing reaches the engine until a whole frame has arrived, and the
    // read gives up after rpc::IO_TIMEOUT, or, until the connection has
    // presented a valid credential, at its deadline (rpc::admission), so
    // an idle client holds only its place.
    let read = rpc::read_frame_async_timed(&mut *stream, max_request, |len| {
        ticket.read_budget(len).unwrap_or(rpc::IO_TIMEOUT)
    })
    .await;
    trim::note_request();
    let (env, frame_enc) = match read {
        Ok(read) => read,
        Err(rpc::RpcError::Version { .. }) => {
            return Ok(Some((refused(SlurmError::ProtocolVersion), Next::Read)))
        }
        Err(rpc::RpcError::TooLarge { len, max }) if len <= proto::MAX_FRAME_BYTES => {
            // Read (not kept) so that the client reads the refusal rather
            // than a reset connection, then closed (docs/limits.md); an
            // unauthenticated connection only within its deadline.
            let budget = ticket.read_budget(len).unwrap_or(rpc::IO_TIMEOUT);
            if ticket.is_authenticated() {
                warn!("refusing a request of {len} bytes from {peer} (limit {max})");
            } else {
                debug!("refusing a first request of {len} bytes from {peer} (limit {max})");
            }
            tokio::time::timeout(budget, skip_bytes(stream, len))
                .await
                .map_err(|_| rpc::RpcError::Timeout)??;
            return Ok(Some((refused(SlurmError::RequestTooLarge), Next::Close)));
        }
        // Silence past the deadline, a close in the middle of a frame or
        // garbage from a connection that never authenticated: what a
        // flood of hostile connections does, not worth a line each.
        Err(e) if !ticket.is_authenticated() => {
            debug!("closing unauthenticated connection from {peer}: {e}");
            ticket.note_closed(&e);
            return Err(e);
        }
        Err(e) => {
            warn!("dropping malformed request: {e}");
            return Err(e);
        }
    };
    let (who, body) = match env.body {
        // The connection was authenticated once (ARCHITECTURE.md, "Client
        // sessions"); each request on it carries the next number and no
        // credential, so a frame repeated within the connection, or sent
        // on one that never opened a session, is refused and ends it.
        CtldRequest::InSession { seq, request } => match session {
            Some((who, next))
                if seq == *next
                    && env.identity.uid == who.uid
                    && !matches!(
                        *request,
                        CtldRequest::InSession { .. } | CtldRequest::OpenSession
                    ) =>
            {
                *next += 1;
                if let Err(e) = gate.permit(&request, who, peer) {
                    return Ok(Some((refused(e), Next::Read)));
                }
                (who.clone(), *request)
            }
            _ => {
                warn!(
                    "refused a request in session from {peer} claiming to be {} (uid {}), \
                     number {seq}, expected {:?}: no authenticated session, another \
                     user, or out of order; closing the connection",
                    env.identity.user,
                    env.identity.uid,
                    session.as_ref().map(|(_, next)| *next)
                );
                return Ok(Some((
                    refused(SlurmError::ProtocolAuthentication),
                    Next::Close,
                )));
            }
        },
        CtldRequest::OpenSession => {
            let env = proto::Envelope {
                body: CtldRequest::OpenSession,
                ..env
            };
            if session.is_some() {
                warn!("refused a second session on one connection from {peer}; closing it");
                return Ok(Some((
                    refused(SlurmError::ProtocolAuthentication),
                    Next::Close,
                )));
            }
            return Ok(Some(match gate.verify(&env, peer) {
                Ok(who) => {
                    gate.take_place(ticket, &who, peer)?;
                    *session = Some((who, 1));
                    (
                        Owed::Ready(Box::new(CtldResponse::Ok), rpc::Encoding::Json),
                        Next::Read,
                    )
                }
                Err(e) => (refused(e), Next::Close),
            }));
        }
        body => {
            let env = proto::Envelope { body, ..env };
            let who = match gate.verify(&env, peer) {
                Ok(who) => who,
                Err(refusal) => return Ok(Some((refused(refusal), Next::Read))),
            };
            gate.take_place(ticket, &who, peer)?;
            if let Err(refusal) = gate.permit(&env.body, &who, peer) {
                return Ok(Some((refused(refusal), Next::Read)));
            }
            (who, env.body)
        }
    };
    // A front-end's request for one of its users (the REST daemon's):
    // from here on it is that user's request.
    let (who, body) = match gate.on_behalf(who, body, peer) {
        Ok(unwrapped) => unwrapped,
        Err(refusal) => return Ok(Some((refused(refusal), Next::Read))),
    };
    if let CtldRequest::Token { username, lifespan } = body {
        let resp = gate.token(&who, username, lifespan, peer);
        return Ok(Some((
            Owed::Ready(Box::new(resp), rpc::Encoding::Json),
            Next::Read,
        )));
    }
    // Job listings for the commands travel in binary, and a binary
    // request (a submission from the client library, of this build) is
    // answered in binary (rpc::Encoding).
    let encoding =
        if frame_enc == rpc::Encoding::Binary || matches!(body, CtldRequest::QueryJobs(_)) {
            rpc::Encoding::Binary
        } else {
            rpc::Encoding::Json
        };
    if let CtldRequest::Watch(req) = body {
        let (stream_tx, stream_rx) = mpsc::channel(watch::WATCHER_QUEUE);
        if tx
            .send(Msg::Watch {
                req,
                who,
                tx: stream_tx,
            })
            .is_err()
        {
            return Ok(None);
        }
        return Ok(Some((Owed::Stream(stream_rx, encoding), Next::Stream)));
    }
    if matches!(body, CtldRequest::GetConfig) {
        // Answered here: the files, not the engine's state.
        let resp = tokio::task::block_in_place(|| configless::answer(gate.configless.as_deref()));
        return Ok(Some((Owed::Ready(Box::new(resp), encoding), Next::Read)));
    }
    let (reply_tx, reply_rx) = oneshot::channel();
    let streamed = matches!(
        &body,
        CtldRequest::QueryJobs(f) if f.stream && (f.rows && f.brief || f.wire)
    );
    let (parts, owed) = if streamed {
        let (parts_tx, parts_rx) = mpsc::unbounded_channel();
        (Some(parts_tx), Owed::Parts(parts_rx, reply_rx, encoding))
    } else {
        (None, Owed::Engine(reply_rx, encoding))
    };
    let msg = Msg::Request {
        req: Box::new(body),
        who,
        reply: reply_tx,
        parts,
    };
    if tx.send(msg).is_err() {
        return Ok(None);
    }
    Ok(Some((owed, Next::Read)))
}

/// `QueryJobs` with `wire`: every job the filter selects and the
/// requester may see, each encoded as the engine hands it over. With
/// `parts`, each full part is sent there as it is done
/// ([`stream_job_wires`]) and the last is returned.
fn job_wires(
    seen: &engine::privacy::SeenBy<'_>,
    filter: &proto::JobFilter,
    now: model::Timestamp,
    parts: Option<&mpsc::UnboundedSender<CtldResponse>>,
) -> CtldResponse {
    let mut wires = proto::JobWires::new(now);
    let expected = seen.job_count();
    seen.each_job_info(filter, now, |info| {
        if let Err(e) = wires.push(info, expected) {
            error!(
                "job {}: its information cannot be encoded: {e}",
                info.job_id
            );
        }
        if let Some(parts) = parts {
            if let Some(part) = wires.take_full_part() {
                // A connection gone takes no more parts; its answer is
                // dropped with it.
                let _ = parts.send(CtldResponse::JobWiresPart(part));
            }
        }
    });
    CtldResponse::JobWires(wires)
}

/// Per-node ordered delivery of commands, each node's over its kept
/// connection (`NodeLink`).
struct NodeWorkers {
    workers: BTreeMap<String, mpsc::UnboundedSender<Command>>,
    engine_tx: mpsc::UnboundedSender<Msg>,
    identity: Identity,
    signer: Arc<auth::Signer>,
    gate: Arc<Gate>,
    /// MessageTimeout.
    timeout: Duration,
    /// Per node: its daemon registered or answered since this controller
    /// started (`NodeLink::reached`).
    reached: BTreeMap<String, Arc<AtomicBool>>,
    /// `sdiag`'s statistics: here because `dispatch` follows the jobs'
    /// accounting records for them.
    diag: diag::Stats,
    /// MailProg, for `Command::Mail`.
    mailer: mail::Mailer,
    /// PrologSlurmctld and EpilogSlurmctld, for `Command::CtldScript`.
    scripts: scripts::CtldScripts,
    /// What each node reported of the fabric at its last registration
    /// since this controller started (`CtldRequest::FabricReports`); not
    /// rebuilt from the journal: every daemon sends it again when it
    /// registers.
    fabric: BTreeMap<String, proto::FabricReport>,
}

impl NodeWorkers {
    /// The node's daemon registered with this controller.
    fn registered(&mut self, node: &str) {
        self.reached_flag(node).store(true, Ordering::Relaxed);
    }

    fn reached_flag(&mut self, node: &str) -> Arc<AtomicBool> {
        self.reached.entry(node.to_string()).or_default().clone()
    }

    fn send(&mut self, cmd: Command) {
        let node = match &cmd {
            Command::LaunchBatch { node, .. }
            | Command::LaunchStep { node, .. }
            | Command::SignalStep { node, .. }
            | Command::SignalJob { node, .. }
            | Command::NotifyJob { node, .. }
            | Command::StartExtern { node, .. }
            | Command::EndExtern { node, .. }
            | Command::TerminateJob { node, .. }
            | Command::RebootNode { node, .. }
            | Command::ReconfigureNode { node, .. } => node.clone(),
            Command::AcctRecord(_)
            | Command::AcctResv(_)
            | Command::Mail { .. }
            | Command::CtldScript { .. } => return,
        };
        if !self.workers.contains_key(&node) {
            // The node's worker and its link, made once per node.
            let engine_tx = self.engine_tx.clone();
            let mut link = NodeLink {
                identity: self.identity.clone(),
                signer: self.signer.clone(),
                gate: self.gate.clone(),
                kept: None,
                timeout: self.timeout,
                reached: self.reached_flag(&node),
            };
            let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
            tokio::spawn(async move {
                while let Some(cmd) = rx.recv().await {
                    deliver(cmd, &mut link, &engine_tx).await;
                }
            });
            self.workers.insert(node.clone(), tx);
        }
        let worker = &self.workers[&node];
        let _ = worker.send(cmd);
    }
}

/// Why a call to a node daemon got no answer.
#[derive(Debug, thiserror::Error)]
enum NodeCallError {
    /// No credential could be made (munged down, /dev/urandom unreadable).
    #[error("cannot make a credential: {0}")]
    Credential(#[from] auth::AuthError),
    /// The node did not answer.
    #[error(transparent)]
    Rpc(#[from] rpc::RpcError),
    /// The daemon answering did not prove itself a node daemon.
    #[error("the node daemon did not authenticate: {0}")]
    Unproven(String),
}

/// A kept connection is used again only after less silence than this; the
/// daemon closes one after `SESSION_IDLE` (300 s) of it.
const SESSION_REUSE: Duration = Duration::from_secs(60);

/// The controller's side of the connection to one node daemon, kept open
/// between calls: authenticated both ways once (`NodeRequest::OpenSession`),
/// then every request numbered (`NodeRequest::InSession`). Calls on it are
/// one at a time, in order (the node's worker task owns it).
struct NodeLink {
    identity: Identity,
    signer: Arc<auth::Signer>,
    gate: Arc<Gate>,
    kept: Option<KeptConn>,
    /// MessageTimeout.
    timeout: Duration,
    /// The daemon registered or answered a call since this controller
    /// started: a launch it refuses is not waited for (`deliver`).
    reached: Arc<AtomicBool>,
}

struct KeptConn {
    addr: String,
    stream: TcpStream,
    next_seq: u64,
    last_used: std::time::Instant,
}

/// `NodeRequest::InSession` by reference (the same JSON), so that a request
/// needs no copy to be retried on a new connection.
#[derive(serde::Serialize)]
enum InSessionRef<'a> {
    InSession { seq: u64, request: &'a NodeRequest },
}

impl NodeLink {
    /// One request to the node daemon at `addr`: on the kept connection
    /// if one is open there, else (or when that one turns out closed: the
    /// daemon restarted, or dropped it) on a new one.
    async fn call(&mut self, addr: &str, req: &NodeRequest) -> Result<NodeResponse, NodeCallError> {
        let res = self.call_once(addr, req).await;
        if res.is_ok() {
            self.reached.store(true, Ordering::Relaxed);
        }
        res
    }

    async fn call_once(
        &mut self,
        addr: &str,
        req: &NodeRequest,
    ) -> Result<NodeResponse, NodeCallError> {
        let timeout = self.timeout;
        if let Some(kept) = self.kept.take() {
            if kept.addr == addr && kept.last_used.elapsed() < SESSION_REUSE {
                match tokio::time::timeout(timeout, Self::exchange(kept, req)).await {
                    Ok(Ok((resp, kept))) => {
                        self.kept = Some(kept);
                        return Ok(resp);
                    }
                    Ok(Err(e)) => debug!("kept connection to {addr} failed ({e}); opening another"),
                    Err(_) => debug!("kept connection to {addr} timed out; opening another"),
                }
            }
        }
        let fut = async {
            let kept = match self.open(addr).await? {
                Ok(kept) => kept,
                Err(refused) => return Ok(refused),
            };
            let (resp, kept) = Self::exchange(kept, req).await?;
            self.kept = Some(kept);
            Ok(resp)
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(NodeCallError::Rpc(rpc::RpcError::Timeout)),
        }
    }

    /// Connects and authenticates both ways: our credential in the
    /// request, the daemon's in its answer (it must be root or SlurmUser,
    /// as any node daemon). `Ok(Err(answer))` when the daemon refused us.
    async fn open(&self, addr: &str) -> Result<Result<KeptConn, NodeResponse>, NodeCallError> {
        let sign = || self.signer.sign(&self.identity, now());
        let credential = if self.signer.blocks() {
            tokio::task::block_in_place(sign)?
        } else {
            sign()?
        };
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(rpc::RpcError::from)?;
        stream.set_nodelay(true).map_err(rpc::RpcError::from)?;
        let hello = rpc::signed_envelope(
            self.identity.clone(),
            Some(credential),
            NodeRequest::OpenSession,
        );
        rpc::write_frame_async(&mut stream, &hello).await?;
        let answer: proto::Envelope<NodeResponse> =
            rpc::read_frame_async(&mut stream, rpc::IO_TIMEOUT).await?;
        if !matches!(answer.body, NodeResponse::Ok) {
            return Ok(Err(answer.body));
        }
        let check = || {
            self.gate
                .verifier
                .verify(answer.credential.as_deref(), &answer.identity, now())
        };
        let who = if self.gate.verifier.blocks() {
            tokio::task::block_in_place(check)
        } else {
            check()
        }
        .map_err(|e| {
            warn!("node daemon at {addr} answered without a valid credential: {e}");
            NodeCallError::Unproven(e.to_string())
        })?;
        if !self.gate.daemon_uids.contains(&who.uid) {
            warn!(
                "the daemon at {addr} runs as {} (uid {}), not root or SlurmUser",
                who.user, who.uid
            );
            return Err(NodeCallError::Unproven(format!(
                "it runs as {} (uid {}), not root or SlurmUser",
                who.user, who.uid
            )));
        }
        Ok(Ok(KeptConn {
            addr: addr.to_string(),
            stream,
            next_seq: 1,
            last_used: std::time::Instant::now(),
        }))
    }

    /// Sends `req` with the connection's next number and reads the answer.
    async fn exchange(
        mut kept: KeptConn,
        req: &NodeRequest,
    ) -> Result<(NodeResponse, KeptConn), NodeCallError> {
        let body = InSessionRef::InSession {
            seq: kept.next_seq,
            request: req,
        };
        let frame = rpc::envelope(daemon_identity_cached(), body);
        rpc::write_frame_async(&mut kept.stream, &frame).await?;
        let answer: proto::Envelope<NodeResponse> =
            rpc::read_frame_async(&mut kept.stream, rpc::IO_TIMEOUT).await?;
        kept.next_seq += 1;
        kept.last_used = std::time::Instant::now();
        Ok((answer.body, kept))
    }
}

/// The controller's identity, resolved once: what its answers carry, and
/// what the envelopes of in-session requests to node daemons claim (the
/// session's credential proved it; the daemon acts on that).
fn daemon_identity_cached() -> Identity {
    static ID: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
    ID.get_or_init(|| daemon_identity("ctld")).clone()
}

/// One request to a node daemon, with a fresh credential (each is accepted
/// once, so a retry signs again).
async fn call_node(
    addr: &str,
    identity: &Identity,
    signer: &auth::Signer,
    req: NodeRequest,
    timeout: Duration,
) -> Result<NodeResponse, NodeCallError> {
    let sign = || signer.sign(identity, now());
    let credential = if signer.blocks() {
        tokio::task::block_in_place(sign)?
    } else {
        sign()?
    };
    Ok(rpc::call(addr, identity.clone(), Some(credential), req, timeout).await?)
}

async fn deliver(cmd: Command, link: &mut NodeLink, engine_tx: &mpsc::UnboundedSender<Msg>) {
    match cmd {
        // Records go to the accounting writer (`dispatch`), never here.
        Command::AcctRecord(_)
        | Command::AcctResv(_)
        | Command::Mail { .. }
        | Command::CtldScript { .. } => {}
        Command::LaunchBatch { node, addr, launch } => {
            let job_id = launch.job_id;
            let req = NodeRequest::LaunchBatch(launch);
            // A daemon that has not answered since this controller started
            // and refuses connections may still be starting (a controller
            // restarted before its nodes, as `muster up` starts them, re-sends
            // the launches of the jobs it holds as running): it is waited
            // for a while, as terminations are, before being judged down.
            // Later commands for the node wait, which keeps their order.
            let (mut delay, first) = (Duration::from_millis(100), std::time::Instant::now());
            let res = loop {
                let res = link.call(&addr, &req).await;
                match &res {
                    Err(e)
                        if !link.reached.load(Ordering::Relaxed)
                            && connection_refused(e)
                            && first.elapsed() < FIRST_CONTACT_WAIT =>
                    {
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(2));
                    }
                    _ => break res,
                }
            };
            match res {
                // (StepStats answers only StepStat.)
                Ok(NodeResponse::Ok | NodeResponse::StepStats(_) | NodeResponse::Pids(_)) => {
                    debug!("launched job {job_id} on {node}")
                }
                Ok(NodeResponse::Failed(why)) => {
                    // The node refused (it reports the job's end itself when
                    // it could not start the script).
                    warn!("node {node} refused job {job_id}: {why}");
                }
                Err(e) => {
                    warn!("cannot reach {node} ({addr}) to launch job {job_id}: {e}");
                    let _ = engine_tx.send(Msg::LaunchFailed { job_id, node });
                }
            }
        }
        Command::LaunchStep { node, addr, launch } => {
            let (job_id, step_id) = (launch.job_id, launch.step_id);
            let req = NodeRequest::LaunchStep(launch);
            match link.call(&addr, &req).await {
                Ok(NodeResponse::Ok | NodeResponse::StepStats(_) | NodeResponse::Pids(_)) => {
                    debug!("launched step {job_id}.{step_id} on {node}")
                }
                Ok(NodeResponse::Failed(why)) => {
                    warn!("node {node} refused step {job_id}.{step_id}: {why}")
                }
                Err(e) => warn!("cannot reach {node} to launch step {job_id}.{step_id}: {e}"),
            }
        }
        Command::StartExtern {
            node,
            addr,
            job_id,
            uid,
            gid,
            node_index,
            acctg_freq,
        } => {
            let req = NodeRequest::StartExtern {
                job_id,
                uid,
                gid,
                node_index,
                acctg_freq,
            };
            match link.call(&addr, &req).await {
                Ok(NodeResponse::Failed(why)) => {
                    warn!("node {node} could not start the extern step of job {job_id}: {why}")
                }
                Ok(_) => debug!("extern step of job {job_id} started on {node}"),
                Err(e) => {
                    warn!("cannot reach {node} to start the extern step of job {job_id}: {e}")
                }
            }
        }
        Command::ReconfigureNode { node, addr } => {
            match link.call(&addr, &NodeRequest::Reconfigure).await {
                Ok(NodeResponse::Failed(why)) => warn!("node {node} did not reconfigure: {why}"),
                Ok(_) => debug!("node {node} told of the reconfigure"),
                Err(e) => warn!("cannot tell node {node} of the reconfigure: {e}"),
            }
        }
        Command::EndExtern { node, addr, job_id } => {
            // The node reports the usage itself (ExternEnded).
            let req = NodeRequest::EndExtern { job_id };
            if let Err(e) = link.call(&addr, &req).await {
                warn!("cannot end the extern step of job {job_id} on {node}: {e}");
            }
        }
        Command::SignalStep {
            node,
            addr,
            job_id,
            step_id,
            signal,
            kill_wait,
            time_limit,
            reason,
        } => {
            let req = NodeRequest::SignalStep {
                job_id,
                step_id,
                signal,
                kill_wait,
                time_limit,
                reason,
            };
            if let Err(e) = link.call(&addr, &req).await {
                warn!("cannot signal step {job_id}.{step_id} on {node}: {e}");
            }
        }
        Command::SignalJob {
            node,
            addr,
            job_id,
            signal,
            scope,
        } => {
            let req = NodeRequest::Signal {
                job_id,
                signal,
                scope,
            };
            if let Err(e) = link.call(&addr, &req).await {
                warn!("cannot signal job {job_id} on {node}: {e}");
            }
        }
        Command::RebootNode { node, addr } => {
            // Once: a node that does not take it does not come back, and
            // ResumeTimeout sets it DOWN.
            match link.call(&addr, &NodeRequest::Reboot).await {
                Ok(NodeResponse::Failed(why)) => warn!("node {node} cannot reboot: {why}"),
                Ok(_) => info!("node {node} is rebooting"),
                Err(e) => warn!("cannot reboot node {node}: {e}"),
            }
        }
        Command::NotifyJob {
            node,
            addr,
            job_id,
            message,
        } => {
            let req = NodeRequest::Notify { job_id, message };
            if let Err(e) = link.call(&addr, &req).await {
                warn!("cannot notify job {job_id} on {node}: {e}");
            }
        }
        Command::TerminateJob {
            node,
            addr,
            job_id,
            kill_wait,
            run,
            reason,
        } => {
            // A node that does not answer may come back with the job still
            // running (a hung host, a cut network): keep trying for a while,
            // so no orphan outlives its job. Later commands for the node wait,
            // which keeps their order.
            let mut delay = Duration::from_millis(500);
            for attempt in 0..TERMINATE_ATTEMPTS {
                let req = NodeRequest::Terminate {
                    job_id,
                    kill_wait,
                    reason,
                };
                match link.call(&addr, &req).await {
                    Ok(NodeResponse::Ok | NodeResponse::StepStats(_) | NodeResponse::Pids(_)) => {
                        return
                    }
                    Ok(NodeResponse::Failed(why)) => {
                        // The node no longer runs it (it ended, or the node
                        // lost it): nothing is left to clean up there.
                        debug!("terminate job {job_id} on {node}: {why}");
                        let _ = engine_tx.send(Msg::JobGone { job_id, node, run });
                        return;
                    }
                    Err(e) => {
                        if attempt == 0 {
                            warn!("cannot terminate job {job_id} on {node}: {e}; retrying");
                        }
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                }
            }
            warn!("gave up terminating job {job_id} on {node}");
        }
    }
}

/// How long a launch waits for a node daemon that refuses connections and
/// has not answered since the controller started (`deliver`).
const FIRST_CONTACT_WAIT: Duration = Duration::from_secs(30);

/// Whether a call failed because nothing listens at the node's address.
fn connection_refused(e: &NodeCallError) -> bool {
    matches!(e, NodeCallError::Rpc(rpc::RpcError::Io(io)) if io.kind() == std::io::ErrorKind::ConnectionRefused)
}

async fn engine_loop(
    mut engine: Engine,
    mut store: Store,
    cfg: Arc<conf::Config>,
    conf_path: PathBuf,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    tx: mpsc::UnboundedSender<Msg>,
    identity: Identity,
    signer: Arc<auth::Signer>,
    gate: Arc<Gate>,
    acct: acct::AcctWriter,
    started: Timestamp,
) -> anyhow::Result<()> {
    engine.set_show_config(cfg.clone(), fmt_local(engine.boot_time()));
    // Accounting writes are idempotent: after a restart every job's record
    // is written again, covering whatever the previous process had not
    // written yet. In pieces between batches, so the controller answers at
    // once however many jobs it holds; `Some(cursor)` while pieces remain.
    const REPUT_PIECE: usize = 2_000;
    let mut reput: Option<Option<JobId>> = Some(None);
    // Launches and terminations recovery decided on.
    let recovered_commands = engine.take_commands();
    let mut workers = NodeWorkers {
        workers: BTreeMap::new(),
        engine_tx: tx,
        identity: identity.clone(),
        signer: signer.clone(),
        gate,
        timeout: node_timeout(&engine),
        reached: BTreeMap::new(),
        diag: diag::Stats::new(started),
        mailer: mail::Mailer::from_config(&cfg),
        scripts: scripts::CtldScripts::from_config(&cfg, &conf_path),
        fabric: BTreeMap::new(),
    };
    // Slurm pings every node a third of SlurmdTimeout; silence for the
    // whole timeout sets it DOWN (Engine::on_timer).
    let timeout = engine.settings().slurmd_timeout;
    let ping_every = Duration::from_secs(u64::from((timeout / 3).max(1)));
    for cmd in recovered_commands {
        dispatch(cmd, &mut workers, &acct);
    }
    let mut ping_tick = tokio::time::interval(ping_every);
    ping_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Set while the journal cannot be written (module `degraded`).
    let mut degraded: Option<degraded::Degraded> = None;
    // A reconfigure ran: the next batch passes over the jobs at once.
    let mut pass_soon = false;
    // The watch stream (idle until someone watches) and the histograms
    // of `/metrics`.
    let mut hub = watch::Hub::new();
    let mut hists = metrics::Histograms::new();
    // The recent health-check runs of each node (memory only).
    let mut health_log = health::HealthLog::default();
    loop {
        if let Some(cursor) = reput {
            let (records, more) = engine.records_after(cursor, REPUT_PIECE, started);
            for rec in records {
                workers.diag.observe(rec.job_id, rec.state, false);
                acct.put(rec);
            }
            reput = more.map(Some);
        }
        let wake = engine.next_wakeup();
        let sleep_for = match wake {
            _ if reput.is_some() || pass_soon => Duration::ZERO,
            // No timers run while degraded: the next wake-up is the next try.
            _ if degraded.is_some() => degraded
                .as_ref()
                .map_or(Duration::ZERO, |d| d.until_next_try()),
            Some(at) => Duration::from_millis((at - now()).max(0) as u64 * 1000 + 5),
            None => Duration::from_secs(3600),
        };
        let first = tokio::select! {
            m = rx.recv() => m,
            _ = tokio::time::sleep(sleep_for) => None,
            _ = ping_tick.tick(), if timeout > 0 => {
                ping_nodes(&engine, &identity, &signer, &workers.engine_tx);
                None
            }
        };
        let mut batch: Vec<Msg> = first.into_iter().collect();
        while let Ok(m) = rx.try_recv() {
            batch.push(m);
        }
        if let Some(resumed) = degraded
            .as_mut()
            .and_then(|d| d.try_resume(&mut store, &engine))
        {
            degraded = None;
            release(resumed.held, &mut engine, &mut workers, &acct);
            // Handled first, as they came before this batch.
            batch.splice(0..0, resumed.deferred);
        }
        let mut shutdown = false;
        // `scontrol shutdown` also stops the node daemons; `scontrol
        // shutdown slurmctld` does not.
        let mut stop_nodes = true;
        // `scontrol reconfigure` (their answers; None for SIGHUP): done
        // once the batch before them is on disk.
        let mut reconfigures: Vec<Option<oneshot::Sender<CtldResponse>>> = Vec::new();
        // The batch's journal records are staged in `store`, in order.
        let mut replies: Vec<(oneshot::Sender<CtldResponse>, CtldResponse)> = Vec::new();
        // The request being handled, booked when the next message starts
        // (the handling below leaves by `continue`) or the batch ends.
        let mut booking: Option<diag::Pending> = None;
        for msg in batch {
            workers.diag.finish(booking.take());
            let t = now();
            if let Msg::Watch { req, who, tx } = msg {
                hub.subscribe(&mut engine, who, req, tx);
                continue;
            }
            if let Msg::Reload = msg {
                match &degraded {
                    Some(_) => warn!("SIGHUP: the state cannot be saved; not reconfigured"),
                    None => reconfigures.push(None),
                }
                continue;
            }
            if let Some(d) = &mut degraded {
                // Launch failures, pings and association updates change
                // the engine: they wait for the journal.
                if !matches!(msg, Msg::Request { .. }) {
                    d.defer(msg);
                    continue;
                }
            }
            let entry = match msg {
                Msg::Request {
                    req,
                    who,
                    reply,
                    parts,
                } => {
                    booking = Some(diag::Stats::begin(&req, &who));
                    if let CtldRequest::Diag { reset } = *req {
                        let resp = if !reset {
                            CtldResponse::Diag(Box::new(workers.diag.report(&engine, t)))
                        } else if engine.is_super(&who) {
                            workers.diag.reset(&engine, t);
                            CtldResponse::Ok
                        } else {
                            CtldResponse::Error(SlurmError::AccessDenied)
                        };
                        replies.push((reply, resp));
                        continue;
                    }
                    if let CtldRequest::Stats = *req {
                        let resp = metrics::stats(&engine, &hists, &acct, &hub);
                        replies.push((reply, CtldResponse::Stats(Box::new(resp))));
                        continue;
                    }
                    if let CtldRequest::HealthCheckRan(run) = *req {
                        let resp = match engine.node(&run.node) {
                            Some(n) => {
                                let (drained, reason) = (n.state.drain, n.reason.clone());
                                health_log.record(*run, drained, reason);
                                CtldResponse::Ok
                            }
                            None => CtldResponse::Error(SlurmError::InvalidNodeName),
                        };
                        replies.push((reply, resp));
                        continue;
                    }
                    if let CtldRequest::HealthChecks { node } = *req {
                        // PrivateData=nodes hides them as it hides the nodes.
                        let resp = if engine.sight(&who).nodes() {
                            health_log.retain(|n| engine.node(n).is_some());
                            CtldResponse::HealthChecks(health_log.runs(node.as_deref()))
                        } else {
                            CtldResponse::Error(SlurmError::AccessDenied)
                        };
                        replies.push((reply, resp));
                        continue;
                    }
                    if let CtldRequest::RegisterNode(reg) = &*req {
                        workers.registered(&reg.name);
                        match &reg.fabric {
                            Some(f) => workers.fabric.insert(reg.name.clone(), f.clone()),
                            None => workers.fabric.remove(&reg.name),
                        };
                    }
                    if let CtldRequest::FabricReports = *req {
                        let all = workers
                            .fabric
                            .iter()
                            .map(|(n, f)| (n.clone(), f.clone()))
                            .collect();
                        replies.push((reply, CtldResponse::Fabric(all)));
                        continue;
                    }
                    if matches!(
                        *req,
                        CtldRequest::Shutdown | CtldRequest::ShutdownController
                    ) {
                        // Slurm's: ESLURM_USER_ID_MISSING for anyone else.
                        let resp = if engine.is_super(&who) {
                            shutdown = true;
                            if matches!(*req, CtldRequest::ShutdownController) {
                                stop_nodes = false;
                            }
                            CtldResponse::Ok
                        } else {
                            CtldResponse::Error(SlurmError::InvalidUserId)
                        };
                        replies.push((reply, resp));
                        continue;
                    }
                    if matches!(*req, CtldRequest::Reconfigure) {
                        if !engine.is_super(&who) {
                            replies.push((reply, CtldResponse::Error(SlurmError::InvalidUserId)));
                        } else if let Some(d) = &degraded {
                            replies.push((reply, d.refusal()));
                        } else {
                            reconfigures.push(Some(reply));
                        }
                        continue;
                    }
                    if let CtldRequest::AcctQuery(q) = *req {
                        answer_acct_query(&acct, q, engine.sight(&who), reply);
                        continue;
                    }
                    if let CtldRequest::StepStat { job_id } = *req {
                        answer_step_stat(&engine, job_id, &who, t, &identity, &signer, reply);
                        continue;
                    }
                    if matches!(
                        *req,
                        CtldRequest::AcctTables
                            | CtldRequest::AcctAdmin(_)
                            | CtldRequest::AcctUsage(_)
                            | CtldRequest::AcctReservations { .. }
                            | CtldRequest::AcctDecayedUsage
                    ) {
                        let daemon = engine.is_admin(&who);
                        let sight = engine.sight(&who);
                        answer_acct_admin(&acct, *req, &who, daemon, sight, reply);
                        continue;
                    }
                    if let (Some(parts), CtldRequest::QueryJobs(filter)) = (&parts, &*req) {
                        // Parts leave at once, so only while nothing of
                        // this batch waits for the journal: an answer
                        // never shows what is not yet durable. Otherwise
                        // the whole answer is the reply, after the commit.
                        if store.staged() == 0 {
                            let seen = engine.seen_by(&who);
                            let resp = if filter.wire && !filter.rows {
                                stream_job_wires(&seen, filter, t, parts)
                            } else {
                                stream_job_rows(&seen, filter, t, parts)
                            };
                            replies.push((reply, resp));
                            continue;
                        }
                    }
                    if let CtldRequest::QueryJobs(filter) = &*req {
                        if filter.wire && !filter.rows {
                            // Encoded job by job as the engine builds
                            // them (`proto::JobWires`).
                            drop(parts);
                            let resp = job_wires(&engine.seen_by(&who), filter, t, None);
                            replies.push((reply, resp));
                            continue;
                        }
                        if filter.rows && filter.brief {
                            // Encoded here: the engine hands out rows and
                            // writes no wire bytes (`proto::JobRowSource`).
                            drop(parts);
                            let rows = engine.seen_by(&who).job_rows_encoded(filter, t);
                            replies.push((reply, CtldResponse::JobRows(rows)));
                            continue;
                        }
                    }
                    if !durable::is_mutating(&req) {
                        drop(parts);
                        let input = Input::Request { req, who };
                        let resp = engine.apply(input, t).reply;
                        replies.push((reply, resp.unwrap_or(CtldResponse::Ok)));
                        continue;
                    }
                    if let Some(d) = &mut degraded {
                        if degraded::Degraded::defers(&req) {
                            d.defer(Msg::Request {
                                req,
                                who,
                                reply,
                                parts,
                            });
                        } else {
                            replies.push((reply, d.refusal()));
                        }
                        continue;
                    }
                    drop(parts);
                    let mut req = req;
                    if let CtldRequest::Submit(desc) = &mut *req {
                        // AllowGroups: the groups are the controller's
                        // look-up, journaled with the submission.
                        desc.user_groups = if engine
                            .config()
                            .partitions
                            .iter()
                            .any(|p| p.allow_groups.is_some())
                        {
                            user_groups(&who)
                        } else {
                            Vec::new()
                        };
                    }
                    let entry = Entry::Request { req, who, now: t };
                    let resp = durable::stage_and_apply(&mut engine, &mut store, entry);
                    replies.push((reply, resp.unwrap_or(CtldResponse::Ok)));
                    continue;
                }
                Msg::LaunchFailed { job_id, node } => Entry::LaunchFailed {
                    job_id,
                    node,
                    now: t,
                },
                Msg::Ping { node, ok } => Entry::Ping { node, ok, now: t },
                Msg::AssocTables(tables) => Entry::AssocTables { tables },
                Msg::JobGone { job_id, node, run } => Entry::JobGone {
                    job_id,
                    node,
                    run,
                    now: t,
                },
                Msg::Reload | Msg::Watch { .. } => continue,
                Msg::PrologSlurmctldEnded { job_id, run, ok } => Entry::PrologSlurmctld {
                    job_id,
                    run,
                    ok,
                    now: t,
                },
            };
            durable::stage_and_apply(&mut engine, &mut store, entry);
        }
        workers.diag.finish(booking.take());
        if let Some(d) = &mut degraded {
            // Queries and refusals leave at once; nothing was staged.
            for (reply, resp) in replies {
                let _ = reply.send(resp);
            }
            if shutdown {
                // The connection tasks write the answers just sent (the
                // shutdown's own `Ok` among them) before the process ends.
                tokio::time::sleep(REPLY_GRACE).await;
                // One more try, so that a stop does not lose what waits.
                return match d.resume_now(&mut store, &engine) {
                    Ok(resumed) => {
                        release(resumed.held, &mut engine, &mut workers, &acct);
                        stop(&mut store, &engine, &identity, &signer, stop_nodes).await;
                        if !resumed.deferred.is_empty() {
                            warn!(
                                "{} deferred messages of the node daemons not handled before \
                                 the stop; the daemons send them again",
                                resumed.deferred.len()
                            );
                        }
                        Ok(())
                    }
                    Err(e) => Err(anyhow::anyhow!(
                        "shutdown requested while the controller state cannot be saved \
                         ({e}); the changes since the last successful write were never \
                         acknowledged and are lost"
                    )),
                };
            }
            continue;
        }
        // Timers and a scheduling pass, when something changed or a
        // deadline is due; a batch of queries alone writes nothing.
        let t = now();
        if store.staged() > 0
            || std::mem::take(&mut pass_soon)
            || engine.next_wakeup().is_some_and(|due| t >= due)
        {
            let tick = Entry::Tick { now: t };
            let (before, clock) = (engine.pass_stats().clone(), std::time::Instant::now());
            durable::stage_and_apply(&mut engine, &mut store, tick);
            let us = clock.elapsed().as_micros() as u64;
            if engine.pass_stats().passes != before.passes {
                hists.sched_pass.observe(us);
            }
            workers.diag.note_tick(&before, engine.pass_stats(), us, t);
        }
        // Nothing leaves this process (no reply, no launch) before the
        // batch is on disk: a crash after this point loses nothing.
        let staged = store.staged() > 0;
        let written = tokio::task::block_in_place(|| {
            let clock = std::time::Instant::now();
            store.commit()?;
            if staged {
                hists
                    .journal_commit
                    .observe(clock.elapsed().as_micros() as u64);
            }
            store.maybe_snapshot(&engine)
        });
        if let Err(e) = written {
            // The engine is ahead of the disk: this batch's answers and
            // commands wait until a snapshot of it is written.
            if shutdown {
                anyhow::bail!(
                    "cannot write the controller state ({e}) while stopping on request; the \
                     last batch's changes were never acknowledged and are lost"
                );
            }
            degraded = Some(degraded::Degraded::new(&e, replies));
            continue;
        }
        fault::after_commit(replies.iter().map(|(_, resp)| resp));
        if !reconfigures.is_empty() && !shutdown {
            // After the batch before it is on disk: the snapshot the
            // reconfigure writes covers every record before it.
            let resp = reconfigure(&mut engine, &mut store, &conf_path);
            if matches!(resp, CtldResponse::Reconfigured(_)) {
                pass_soon = true;
                workers.scripts = scripts::CtldScripts::from_config(engine.config(), &conf_path);
            }
            for reply in reconfigures.into_iter().flatten() {
                replies.push((reply, resp.clone()));
            }
        }
        release(replies, &mut engine, &mut workers, &acct);
        // After the replies and commands have left: watchers never delay
        // a launch, and see only what is on disk.
        hub.publish(&mut engine, t);
        if shutdown {
            stop(&mut store, &engine, &identity, &signer, stop_nodes).await;
            return Ok(());
        }
    }
}

/// The names of `who`'s groups (primary and supplementary) as this host's
/// user database has them, for partitions' `AllowGroups`.
fn user_groups(who: &Identity) -> Vec<String> {
    use nix::unistd::{getgrouplist, Gid, Group};
    let Ok(name) = std::ffi::CString::new(who.user.as_str()) else {
        return Vec::new();
    };
    let gids = getgrouplist(&name, Gid::from_raw(who.gid)).unwrap_or_else(|e| {
        warn!("groups of {}: {e}", who.user);
        vec![Gid::from_raw(who.gid)]
    });
    let mut names: Vec<String> = gids
        .into_iter()
        .filter_map(|g| Group::from_gid(g).ok().flatten().map(|g| g.name))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// How long a stopping controller lets its connections write the answers
/// it has just sent before the process ends.
const REPLY_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// Sends the answers of a batch that is on disk, then its commands.
fn release(
    replies: Vec<degraded::Reply>,
    engine: &mut Engine,
    workers: &mut NodeWorkers,
    acct: &acct::AcctWriter,
) {
    for (reply, resp) in replies {
        let _ = reply.send(resp);
    }
    for cmd in engine.take_commands() {
        dispatch(cmd, workers, acct);
    }
}

/// `scontrol shutdown`: a last snapshot, then the node daemons are told
/// (not for `scontrol shutdown slurmctld`).
async fn stop(
    store: &mut Store,
    engine: &Engine,
    identity: &Identity,
    signer: &Arc<auth::Signer>,
    stop_nodes: bool,
) {
    if let Err(e) = tokio::task::block_in_place(|| store.snapshot(engine)) {
        warn!("final snapshot: {e}");
    }
    if stop_nodes {
        shutdown_nodes(engine, identity, signer).await;
    }
    tokio::time::sleep(REPLY_GRACE).await;
}

/// `scontrol reconfigure` and SIGHUP, as slurmctld: the files are read
/// again; refused with their error, the configuration in force stays.
/// Otherwise the engine is rebuilt under the configuration the files give
/// for the keys a running controller can change (`conf::effect::
/// reconfigured`; the others are logged and told, and wait for a
/// restart), and a snapshot of it is written before the answer, so a
/// recovery never replays a record written under the old configuration.
fn reconfigure(engine: &mut Engine, store: &mut Store, path: &std::path::Path) -> CtldResponse {
    let loaded = match tokio::task::block_in_place(|| conf::load(path)) {
        Ok(l) => l,
        Err(e) => {
            error!("reconfigure refused, the configuration in force stays: {e}");
            return CtldResponse::ReconfigureRefused(e.to_string());
        }
    };
    for w in &loaded.warnings {
        warn!("{w}");
    }
    let plan =
        conf::effect::reconfigured(engine.config(), &loaded.config, &engine.partitions_in_use());
    let kept = plan
        .config
        .partitions
        .iter()
        .any(|p| loaded.config.partition(&p.name).is_none());
    let mut new = match engine.rebuilt(&plan.config) {
        Ok(e) => e,
        Err(e) => {
            error!("reconfigure refused, the configuration in force stays: {e}");
            return CtldResponse::ReconfigureRefused(e.to_string());
        }
    };
    if kept {
        new.set_partitions_changed();
    }
    if let Err(e) = tokio::task::block_in_place(|| store.snapshot(&new)) {
        error!("reconfigure: cannot save the controller state, not reconfigured: {e}");
        return CtldResponse::ReconfigureRefused(format!(
            "cannot save the controller state ({e}); not reconfigured"
        ));
    }
    engine.take_over(new);
    // The node daemons hear of it (configless ones fetch the files again).
    engine.reconfigure_nodes();
    if let Some(hook) = ON_RECONFIGURE.get() {
        hook(&plan.config);
    }
    for line in &plan.applied {
        info!("reconfigure: {line}");
    }
    for line in &plan.restart {
        warn!("reconfigure: not applied, needs a restart: {line}");
    }
    info!(
        "reconfigured from {}: {} changes applied, {} need a restart",
        path.display(),
        plan.applied.len(),
        plan.restart.len()
    );
    CtldResponse::Reconfigured(proto::ReconfigureReport {
        applied: plan.applied,
        restart: plan.restart,
    })
}

/// Sends node commands to their node's queue and records to the accounting writer.
fn dispatch(cmd: Command, workers: &mut NodeWorkers, acct: &acct::AcctWriter) {
    match cmd {
        Command::AcctRecord(rec) => {
            workers.diag.observe(rec.job_id, rec.state, true);
            acct.put(*rec)
        }
        Command::AcctResv(rec) => acct.put_resv(*rec),
        Command::Mail {
            user,
            default_user,
            subject,
        } => workers.mailer.send(user, default_user, subject),
        Command::CtldScript {
            job_id,
            run,
            prolog,
            env,
        } => workers
            .scripts
            .run(job_id, run, prolog, env, &workers.engine_tx),
        other => workers.send(other),
    }
}

/// sacct: asks the accounting store without holding up the engine task.
fn answer_acct_query(
    acct: &acct::AcctWriter,
    q: proto::AcctQuery,
    sight: engine::privacy::Sight,
    reply: oneshot::Sender<CtldResponse>,
) {
    let Some(rx) = acct.query(q) else {
        let _ = reply.send(CtldResponse::Error(SlurmError::AccountingDisabled));
        return;
    };
    tokio::spawn(async move {
        let resp = match rx.await {
            // PrivateData=jobs: another user's records are not there.
            Ok(Ok(mut jobs)) => {
                jobs.retain(|j| sight.job(j.uid));
                CtldResponse::AcctJobs(jobs)
            }
            Ok(Err(e)) => {
                warn!("accounting query: {e}");
                CtldResponse::Error(SlurmError::AccountingUnavailable)
            }
            Err(_) => CtldResponse::Error(SlurmError::AccountingUnavailable),
        };
        let _ = reply.send(resp);
    });
}

/// sstat: the job's running steps (from the engine), each with the usage
/// its nodes' supervisors last sampled, asked of those nodes without
/// holding up the engine task. A node that does not answer in time is left
/// out of the merge.
fn answer_step_stat(
    engine: &Engine,
    job_id: JobId,
    who: &Identity,
    now: Timestamp,
    identity: &Identity,
    signer: &Arc<auth::Signer>,
    reply: oneshot::Sender<CtldResponse>,
) {
    let Some(job) = engine.job(job_id).filter(|_| engine.sees_job(who, job_id)) else {
        let _ = reply.send(CtldResponse::Error(SlurmError::InvalidJobId));
        return;
    };
    if job.desc.uid != who.uid && !engine.is_admin(who) {
        let _ = reply.send(CtldResponse::Error(SlurmError::AccessDenied));
        return;
    }
    let steps: Vec<proto::StepInfo> = engine
        .step_list(now)
        .steps
        .into_iter()
        .filter(|s| s.job_id == job_id)
        .collect();
    let addrs: BTreeMap<String, String> = engine.registered_daemons().into_iter().collect();
    let timeout = node_timeout(engine);
    let nodes: std::collections::BTreeSet<String> =
        steps.iter().flat_map(|s| s.nodes.iter().cloned()).collect();
    let calls: Vec<_> = nodes
        .into_iter()
        .filter_map(|n| addrs.get(&n).map(|a| (n, a.clone())))
        .map(|(node, addr)| {
            let identity = identity.clone();
            let signer = signer.clone();
            let req = NodeRequest::StepStat { job_id };
            tokio::spawn(async move {
                let res = call_node(&addr, &identity, &signer, req, timeout).await;
                (node, res)
            })
        })
        .collect();
    tokio::spawn(async move {
        let mut reports: Vec<(String, proto::NodeStepStat)> = Vec::new();
        for call in calls {
            match call.await {
                Ok((node, Ok(NodeResponse::StepStats(stats)))) => {
                    reports.extend(stats.into_iter().map(|s| (node.clone(), s)));
                }
                Ok((node, other)) => debug!(%node, "sstat: no usage from the node: {other:?}"),
                Err(_) => {}
            }
        }
        let live = steps
            .into_iter()
            .map(|s| {
                let mut usage = proto::StepUsage::default();
                let mut pids = Vec::new();
                for node in &s.nodes {
                    for (_, r) in reports
                        .iter()
                        .filter(|(n, r)| n == node && r.step == s.step)
                    {
                        usage.merge(&r.usage);
                        pids.push((node.clone(), r.pids.clone()));
                    }
                }
                proto::LiveStepStat {
                    job_id,
                    step: s.step,
                    nodes: s.nodes,
                    ntasks: s.ntasks,
                    usage,
                    pids,
                }
            })
            .collect();
        let _ = reply.send(CtldResponse::StepStats(live));
    });
}

/// sacctmgr: the association database is the accounting writer's; the
/// engine task only forwards.
fn answer_acct_admin(
    acct: &acct::AcctWriter,
    req: CtldRequest,
    who: &Identity,
    daemon: bool,
    sight: engine::privacy::Sight,
    reply: oneshot::Sender<CtldResponse>,
) {
    // PrivateData=reservations: the reservations' history is for
    // operators alone (as slurmdbd answers sacctmgr and sreport).
    if matches!(req, CtldRequest::AcctReservations { .. }) && !sight.all_reservations() {
        let _ = reply.send(CtldResponse::Error(SlurmError::AccessDenied));
        return;
    }
    let caller = acct::Caller {
        user: who.user.clone(),
        daemon,
    };
    let rx = match req {
        CtldRequest::AcctTables => acct.tables().map(|rx| {
            tokio::spawn(async move {
                rx.await
                    .ok()
                    .map(|t| CtldResponse::AcctTables(sight.tables(t)))
            })
        }),
        CtldRequest::AcctAdmin(r) => acct
            .admin(r, caller)
            .map(|rx| tokio::spawn(async move { rx.await.ok().map(CtldResponse::AcctAdmin) })),
        CtldRequest::AcctUsage(q) => acct.usage(q).map(|rx| {
            tokio::spawn(async move {
                rx.await
                    .ok()
                    .flatten()
                    .map(|r| CtldResponse::AcctUsage(sight.usage(r)))
            })
        }),
        CtldRequest::AcctReservations { start, end } => acct.resvs(start, end).map(|rx| {
            tokio::spawn(async move { rx.await.ok().flatten().map(CtldResponse::AcctReservations) })
        }),
        CtldRequest::AcctDecayedUsage => acct.decayed_usage().map(|rx| {
            tokio::spawn(async move {
                rx.await.ok().flatten().map(|mut rows| {
                    rows.retain(|u| sight.usage_of(&u.account, &u.user));
                    CtldResponse::AcctDecayedUsage(rows)
                })
            })
        }),
        _ => None,
    };
    let Some(task) = rx else {
        let _ = reply.send(CtldResponse::Error(SlurmError::AccountingDisabled));
        return;
    };
    tokio::spawn(async move {
        let resp = task
            .await
            .ok()
            .flatten()
            .unwrap_or(CtldResponse::Error(SlurmError::AccountingUnavailable));
        let _ = reply.send(resp);
    });
}

/// Pings every registered node daemon; the answers come back as messages.
fn ping_nodes(
    engine: &Engine,
    identity: &Identity,
    signer: &Arc<auth::Signer>,
    tx: &mpsc::UnboundedSender<Msg>,
) {
    let timeout = node_timeout(engine);
    for (name, addr) in engine.registered_daemons() {
        let identity = identity.clone();
        let signer = signer.clone();
        let tx = tx.clone();
        tokio::spawn(async move {
            let res = call_node(&addr, &identity, &signer, NodeRequest::Ping, timeout).await;
            let ok = matches!(res, Ok(NodeResponse::Ok));
            let _ = tx.send(Msg::Ping { node: name, ok });
        });
    }
}

/// `muster down`: every node daemon is told to stop (ending its jobs).
async fn shutdown_nodes(engine: &Engine, identity: &Identity, signer: &Arc<auth::Signer>) {
    let mut calls = Vec::new();
    for (_, addr) in engine.registered_daemons() {
        let identity = identity.clone();
        let signer = signer.clone();
        calls.push(tokio::spawn(async move {
            let _ = call_node(
                &addr,
                &identity,
                &signer,
                NodeRequest::Shutdown,
                Duration::from_secs(5),
            )
            .await;
        }));
    }
    for c in calls {
        let _ = c.await;
    }
}

/// A job listing in rows (`JobFilter::stream`), its parts sent to the
/// connection as they are built; returns the last part. The walk runs
/// outside the runtime's worker (`block_in_place`), so the connection's
/// writer runs on the other worker meanwhile and the command decodes the
/// first rows while the rest are built.
fn stream_job_rows(
    engine: &engine::privacy::SeenBy<'_>,
    filter: &proto::JobFilter,
    t: Timestamp,
    parts: &mpsc::UnboundedSender<CtldResponse>,
) -> CtldResponse {
    tokio::task::block_in_place(|| {
        CtldResponse::JobRows(engine.job_rows_parts(filter, t, |part| {
            parts
                .send(CtldResponse::JobRowsPart(std::mem::take(part)))
                .is_ok()
        }))
    })
}

/// A job listing in wire form (`JobFilter::wire` and `stream`), as
/// [`stream_job_rows`] sends rows: parts of about
/// `proto::JobWires::PART_BYTES` leave while the rest is built, and the
/// last part is returned.
fn stream_job_wires(
    seen: &engine::privacy::SeenBy<'_>,
    filter: &proto::JobFilter,
    t: Timestamp,
    parts: &mpsc::UnboundedSender<CtldResponse>,
) -> CtldResponse {
    tokio::task::block_in_place(|| job_wires(seen, filter, t, Some(parts)))
}

fn fmt_local(ts: Timestamp) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_opt(ts, 0) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%dT%H:%M:%S").to_string()
        }
        chrono::LocalResult::None => "(null)".into(),
    }
}
