//! The daemon's I/O shell: the listener, the controller requests, the job
//! watchers, the recovery at start and the reports to the controller.
//!
//! ```text
//!   run() --bind--> recover (spool scan) --> listener --accept--> serve_connection
//!     |                 |                                            |
//!     |                 +--re-attach--> watch_job                    +--LaunchBatch
//!     +--spawn--> register (retry until Ok),                         |  launch::prepare
//!                 then report the jobs that ended meanwhile          |  launch::start_supervisor
//!                                                                     v
//!      remove job dir <-- report_exit (retry) <-- status record <-- watch_job (supervisor ended)
//! ```
//!
//! A job's end always comes from the `status` record its supervisor appends
//! to the job's log,
//! whether this daemon started the job (it reaps the supervisor, its
//! child) or found it running at start-up (it waits on a pidfd). The job
//! directory goes only once the controller answered the report, so a
//! daemon killed in between reports the end again after its restart.
//!
//! When the daemon stops in order (the controller's `Shutdown`, SIGTERM or
//! SIGINT) it kills the jobs it still runs, so that a stopped local cluster
//! (`muster down`) leaves no stray processes. Killed by SIGKILL or a crash,
//! it leaves them to their supervisors, and the next daemon picks them up.

use crate::daemon::link::{CtldLink, NodeLink, BACKOFF_MAX, BACKOFF_MIN};
use crate::daemon::setup::{self, host_port, NodeSetup};
use crate::daemon::state::{AfterStart, JobTable, Refusal, TerminateAction};
use crate::daemon::{confine, credsock};
use crate::options::NodedOptions;
use crate::spool::{self, Ended, Found, Pids, ProcId};
use crate::stepd::launch::{self, LaunchContext, StepdAnswer, Supervisor, SupervisorHandle};
use anyhow::Context;
use model::{ExitCode, JobId};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use proto::{
    BatchLaunch, CtldRequest, CtldResponse, Envelope, NodeRequest, NodeResponse, SignalScope,
};
use rpc::RpcError;
use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tracing::{debug, info, warn};

/// How long a stopping daemon waits for killed jobs to be reaped and
/// reported.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// How often /proc is looked at for a re-attached job's supervisor where
/// the kernel has no pidfd_open(2) (before Linux 5.3). Only jobs found
/// after a restart are watched this way; the daemon reaps its own
/// supervisors.
const ADOPTED_POLL: Duration = Duration::from_millis(200);
/// How long the daemon remembers which run of a job ended here, to refuse
/// a late copy of that run's launch (one a restarted controller sent before
/// it heard of the end). Copies arrive within seconds of the end.
const ENDED_RUN_MEMORY: Duration = Duration::from_secs(600);
/// How long a health check may run before it is killed (Slurm's fixed
/// limit for HealthCheckProgram).
const HEALTH_TIMEOUT: Duration = Duration::from_secs(60);
/// The raw wait status of `exit 1`.
const EXIT_1: i32 = 1 << 8;

/// The state the tasks share.
pub(crate) struct Daemon {
    pub(crate) setup: NodeSetup,
    pub(crate) daemon_uid: u32,
    /// Runs `noded --stepd DIR`.
    pub(crate) stepd_program: PathBuf,
    /// The controller link, and what the holders and steps report from.
    pub(crate) link: Arc<NodeLink>,
    /// srun's steps running here.
    pub(crate) steps: Arc<crate::daemon::steps::StepTable>,
    /// The extern steps' holders running here.
    pub(crate) holders: crate::daemon::holder::HolderTable,
    jobs: Mutex<JobTable>,
    shutdown: Notify,
    /// Reports to the controller not yet answered.
    pending_reports: AtomicUsize,
    /// Signalled when a job leaves the table, a report is answered or a
    /// step's tasks end.
    pub(crate) progress: Arc<Notify>,
    /// The run (`restarts`) of each job whose end the controller
    /// acknowledged lately, and when.
    ended_runs: Mutex<HashMap<JobId, (u32, Instant)>>,
    /// Forks the job supervisors (`zygote`); `None` once it failed, and
    /// the supervisors are executed instead.
    zygote: Mutex<Option<crate::stepd::zygote::Zygote>>,
    /// Reported jobs' directories, emptied for later launches.
    slots: crate::slots::Slots,
    /// Configless mode: the options and `--conf-server` to fetch the
    /// files again with at a reconfigure (`NodeRequest::Reconfigure`).
    configless: Option<(NodedOptions, String)>,
}

impl Daemon {
    /// Notes that run `restarts` of `job_id` ended here and the controller
    /// knows; forgets runs older than `ENDED_RUN_MEMORY`.
    fn remember_ended_run(&self, job_id: JobId, restarts: u32) {
        let mut runs = self.ended_runs.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        runs.retain(|_, (_, at)| now.duration_since(*at) < ENDED_RUN_MEMORY);
        runs.insert(job_id, (restarts, now));
    }

    /// The run of `job_id` that ended here lately, if any.
    fn ended_run(&self, job_id: JobId) -> Option<u32> {
        let runs = self.ended_runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get(&job_id)
            .filter(|(_, at)| at.elapsed() < ENDED_RUN_MEMORY)
            .map(|(run, _)| *run)
    }

    fn jobs(&self) -> MutexGuard<'_, JobTable> {
        // A panic while holding the lock cannot leave the table half
        // updated (every method is one step), so a poisoned lock is usable.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs the node daemon until the controller sends `Shutdown` or the
/// process gets SIGTERM or SIGINT. Fails when the configuration cannot be
/// loaded, the node is not in it, or its port cannot be bound.
pub async fn run(mut opts: NodedOptions) -> anyhow::Result<()> {
    if let Some(server) = opts.conf_server.clone() {
        // Configless: the configuration comes from the controller first.
        let cached =
            tokio::task::block_in_place(|| super::configless::fetch_and_cache(&opts, &server))?;
        opts.conf_path = cached;
    }
    let setup = setup::load(&opts)?;
    let bind = host_port(&setup.addr, setup.port);
    let listener = rpc::admission::listen(&bind).await.with_context(|| {
        format!(
            "cannot listen on {bind} (NodeAddr and Port of node {})",
            setup.node_name
        )
    })?;
    info!(
        node = %setup.node_name,
        "listening on {bind}; controller at {}; spool {}",
        setup.ctld_addrs.join(", "),
        setup.spool_dir.display()
    );
    spool::make_private(&setup.spool_dir);
    let cred_socket = serve_credential_socket(&setup);
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("installing the SIGINT handler")?;
    let stepd_program = stepd_program(&opts)?;
    let zygote = match crate::stepd::zygote::Zygote::start(&stepd_program, &setup.spool_dir) {
        Ok(z) => Some(z),
        Err(e) => {
            warn!("cannot start the supervisor zygote: {e}; supervisors will be executed");
            None
        }
    };
    // After the bind, as the recovery: the `free.N` left are this node's.
    let slots = crate::slots::Slots::new(&setup.spool_dir);
    let daemon_uid = nix::unistd::geteuid().as_raw();
    let progress = Arc::new(Notify::new());
    let link = Arc::new(NodeLink {
        ctld: CtldLink::new(&setup),
        node_name: setup.node_name.clone(),
        conf_path: setup.conf_path.clone(),
        spool_dir: setup.spool_dir.clone(),
        gather: setup.gather.clone(),
        gpus: setup.gpus.clone(),
        task_affinity: setup.task_affinity,
        topology_addr: setup.topology_addr.clone(),
        task_scripts: (
            setup.hooks.task_prolog.clone(),
            setup.hooks.task_epilog.clone(),
        ),
        cpu_threads: setup.cpu_threads,
        default_cpu_bind: setup.default_cpu_bind.clone(),
        cgroup: setup.cgroup.clone(),
        daemon_uid,
        stepd_program: stepd_program.clone(),
        progress: progress.clone(),
        scripts: crate::daemon::scripts::NodeScripts::new(setup.hooks.clone()),
    });
    let daemon = Arc::new(Daemon {
        slots,
        setup,
        link,
        daemon_uid,
        stepd_program,
        zygote: Mutex::new(zygote),
        jobs: Mutex::new(JobTable::new()),
        steps: Default::default(),
        holders: Default::default(),
        shutdown: Notify::new(),
        pending_reports: AtomicUsize::new(0),
        progress,
        ended_runs: Mutex::default(),
        configless: opts
            .conf_server
            .clone()
            .map(|server| (opts.clone(), server)),
    });
    // After the bind: a second daemon for the same node fails there and
    // never touches the first one's jobs.
    crate::daemon::holder::recover(&daemon.link, &daemon.holders);
    let ended_meanwhile = recover(&daemon);
    {
        let known = |job: u32| {
            daemon.jobs().contains(JobId(job)) || daemon.steps.job_ids().contains(&JobId(job))
        };
        confine::remove_gone(daemon.setup.cgroup.as_ref(), &known);
    }
    let registration = tokio::spawn({
        let daemon = daemon.clone();
        async move {
            register(daemon.clone(), ended_meanwhile).await;
            // The GPU Xid watcher, once the controller knows the node.
            crate::daemon::xid::start(
                daemon.link.clone(),
                daemon.setup.xid.clone(),
                daemon.setup.gpu_files.clone(),
            );
            // HealthCheckProgram: at start (once registered, so that a
            // program's `scontrol update` finds the node) and periodically.
            if let Some(health) = daemon.setup.hooks.health.clone() {
                let link = daemon.link.clone();
                let gpus = (daemon.setup.xid.clone(), daemon.setup.gpu_files.clone());
                crate::daemon::health::run(link, health, Some(HEALTH_TIMEOUT), gpus).await;
            }
        }
    });
    // Every connection is accepted; one that does not authenticate in time,
    // or is pushed out of the small unauthenticated pool by a newer one, is
    // closed (rpc::admission, docs/limits.md).
    // While many are open, those that have sent nothing wait in the lobby,
    // off the runtime that runs the jobs' steps (rpc::lobby).
    let admission = rpc::admission::Admission::new(CONNECTION_LIMITS);
    let lobby = rpc::lobby::Lobby::start("noded-lobby").context("starting the lobby thread")?;
    let mut accept_errors = rpc::admission::AcceptErrors::default();
    let why = loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let ticket = admission.arrive(peer.ip());
                    let daemon = daemon.clone();
                    lobby.admit(&admission, stream, ticket, move |stream, ticket| async move {
                        let peer = peer.to_string();
                        tokio::select! {
                            biased;
                            () = serve_connection(daemon, stream, &peer, &ticket) => {}
                            () = ticket.shed() => {
                                debug!(%peer, "closed unauthenticated connection to make room");
                            }
                        }
                    });
                }
                Err(e) => {
                    tokio::time::sleep(accept_errors.pause_after(&e, &admission)).await;
                }
            },
            _ = daemon.shutdown.notified() => break "the controller asked to shut down",
            _ = sigterm.recv() => break "SIGTERM",
            _ = sigint.recv() => break "SIGINT",
        }
    };
    info!("stopping: {why}");
    drop(listener);
    drop(lobby);
    if let Some(task) = cred_socket {
        task.abort();
    }
    registration.abort();
    stop_jobs(&daemon).await;
    confine::release(daemon.setup.cgroup.as_ref());
    Ok(())
}

/// Starts the credential socket (auth/muster only: munged serves MUNGE's
/// users); where another daemon on this host serves it, this one stands by
/// to take it over (`credsock::serve_while_locked`).
fn serve_credential_socket(setup: &NodeSetup) -> Option<tokio::task::JoinHandle<()>> {
    let auth = &setup.auth;
    if auth.settings.scheme != auth::Scheme::Key {
        return None;
    }
    Some(tokio::spawn(credsock::serve_while_locked(
        auth.settings.socket_path.clone(),
        auth.clone(),
    )))
}

/// The program that runs job supervisors: the option, else this very
/// binary. `/proc/self/exe` names it even after an upgrade replaced the
/// file, so supervisors always match the daemon that starts them.
fn stepd_program(opts: &NodedOptions) -> anyhow::Result<PathBuf> {
    if let Some(program) = &opts.stepd_program {
        return Ok(program.clone());
    }
    let proc_exe = Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe.to_path_buf());
    }
    std::env::current_exe().context("finding this executable, which runs the job supervisors")
}

/// A job that ended while no daemon watched it, reported once registered.
struct EndedMeanwhile {
    job_id: JobId,
    dir: PathBuf,
    ended: Ended,
}

/// Scans the spool directory: re-attaches to the jobs whose supervisor
/// still runs (they are in the table before the registration reports
/// `running_jobs`) and returns the ends to report.
fn recover(daemon: &Arc<Daemon>) -> Vec<EndedMeanwhile> {
    let spool_dir = &daemon.setup.spool_dir;
    let found = match spool::scan(spool_dir) {
        Ok(found) => found,
        Err(e) => {
            warn!(
                "cannot scan the spool directory {}: {e}",
                spool_dir.display()
            );
            return Vec::new();
        }
    };
    let mut ended_meanwhile = Vec::new();
    for found in found {
        match found {
            Found::Running { job_id, dir, pids } => {
                let pid = pids.script.pid;
                if daemon.jobs().reattach(job_id, pid, pid).is_err() {
                    continue;
                }
                info!(
                    job = %job_id,
                    "re-attached to the running job (supervisor {}, script {pid})",
                    pids.stepd.pid
                );
                let watch = Watch::Adopted(pids.stepd);
                tokio::spawn(watch_job(daemon.clone(), job_id, dir, pids, watch));
            }
            Found::Ended { job_id, dir, ended } => {
                info!(job = %job_id, "ended with {} while the daemon was away", ended.exit);
                ended_meanwhile.push(EndedMeanwhile { job_id, dir, ended });
            }
            Found::Lost { job_id, dir, pids } => {
                let no_status = match pids {
                    Some(pids) => NoStatus::Killed(pids),
                    None => NoStatus::LaunchFailed(
                        "the node daemon stopped while launching the job".to_string(),
                    ),
                };
                let (exit, launch_failed, ended) = end_without_status(job_id, &dir, no_status);
                match ended {
                    Some(ended) => ended_meanwhile.push(EndedMeanwhile { job_id, dir, ended }),
                    // Nothing on disk: report it now, without the cleanup.
                    None => start_report(daemon.clone(), job_id, exit, launch_failed, None, None),
                }
            }
        }
    }
    ended_meanwhile
}

/// Kills every job still running and gives the watchers a moment to reap
/// them and report their ends.
/// Launches still in flight (a connection task between `begin_launch` and
/// `started`) are refused from now on, or killed once their process exists
/// (`JobTable::stop`); the wait covers them too, since they are in the
/// table.
async fn stop_jobs(daemon: &Arc<Daemon>) {
    let groups = daemon.jobs().stop();
    for (job_id, pgid) in &groups {
        confine::thaw_job(daemon.setup.cgroup.as_ref(), *job_id);
        kill_at_shutdown(*job_id, *pgid);
    }
    // srun's steps end with the jobs: their supervisors run in sessions of
    // their own, which the batch jobs' groups do not reach.
    let steps = daemon.steps.stop();
    if steps > 0 {
        info!(steps, "ending steps at shutdown");
    }
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    loop {
        let notified = daemon.progress.notified();
        if daemon.jobs().is_empty()
            && daemon.pending_reports.load(Ordering::SeqCst) == 0
            && daemon.steps.all_ended()
        {
            return;
        }
        // A launch that fails takes its job out without a notice: look
        // again now and then.
        let wake = deadline.min(tokio::time::Instant::now() + Duration::from_millis(100));
        if tokio::time::timeout_at(wake, notified).await.is_err()
            && tokio::time::Instant::now() >= deadline
        {
            warn!("stopping with jobs or reports outstanding");
            return;
        }
    }
}

fn kill_at_shutdown(job_id: JobId, pgid: i32) {
    info!(job = %job_id, "killing job at shutdown");
    signal_group(pgid, Signal::SIGCONT);
    signal_group(pgid, Signal::SIGKILL);
}

fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 {
        let _ = kill(Pid::from_raw(-pgid), signal);
    }
}

/// Who may hold the node daemon's connections: a pool for connections
/// that have not yet presented a valid credential (the controller's
/// carries one in its first frame), and the rest for authenticated ones;
/// users other than root and SlurmUser may only ping, so they get few, and
/// the controller is held to no limit. The pool is the controller's size:
/// where a flood comes from the controller's own address (a login node
/// that is also the controller, loopback in the tests), a share of 256
/// was replaced faster than a loaded host read the controller's first
/// frame, and the node was judged down.
const CONNECTION_LIMITS: rpc::admission::Limits = rpc::admission::Limits {
    unauthenticated: 2048,
    unauthenticated_per_peer: 1024,
    deadline: Duration::from_millis(1500),
    authenticated: 1024,
    authenticated_per_uid: 64,
};

/// Largest request read. A launch carries a submission the controller
/// accepted (at most a quarter of the frame limit) plus the job's `SLURM_*`
/// environment and fields, so the node daemon reads twice as much.
const MAX_REQUEST_BYTES: u32 = proto::MAX_FRAME_BYTES / 2;

/// Writes one answer; a peer that does not read it within the I/O timeout
/// is dropped, as an idle one is.
async fn write_reply<T: serde::Serialize>(
    stream: &mut TcpStream,
    reply: &T,
) -> Result<(), RpcError> {
    tokio::time::timeout(rpc::IO_TIMEOUT, rpc::write_frame_async(stream, reply))
        .await
        .unwrap_or(Err(RpcError::Timeout))
}

/// How long a kept connection (`OpenSession`) may stay silent before the
/// daemon closes it; the controller opens a new one after
/// `SESSION_REUSE` of silence, well before.
const SESSION_IDLE: Duration = Duration::from_secs(300);

/// Writes a refusal and gives the reason to log.
async fn refuse(daemon: &Daemon, stream: &mut TcpStream, why: String) {
    let reply = rpc::envelope(daemon.setup.identity.clone(), failed(why));
    let _ = write_reply(stream, &reply).await;
}

/// Serves requests on one connection until the peer closes it, a frame is
/// bad, or it stays idle past the read timeout.
async fn serve_connection(
    daemon: Arc<Daemon>,
    mut stream: TcpStream,
    peer: &str,
    ticket: &rpc::admission::Ticket,
) {
    let _ = stream.set_nodelay(true);
    // After an authenticated `OpenSession`: whom the connection's opener
    // proved to be, and the number the next `InSession` request must carry.
    let mut session: Option<(proto::Identity, u64)> = None;
    loop {
        let idle = if session.is_some() {
            SESSION_IDLE
        } else {
            rpc::IO_TIMEOUT
        };
        // Until the connection has presented a valid credential, its
        // deadline (rpc::admission) bounds every read.
        let read = rpc::read_frame_async_timed(&mut stream, MAX_REQUEST_BYTES, |len| {
            ticket.read_budget(len).unwrap_or(idle)
        });
        let env: Envelope<NodeRequest> = match read.await {
            Ok((env, _)) => env,
            // Before a valid credential: what a flood of hostile
            // connections does, counted rather than logged one by one.
            Err(e) if !ticket.is_authenticated() => {
                debug!(%peer, "closing unauthenticated connection: {e}");
                ticket.note_closed(&e);
                return;
            }
            Err(RpcError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return,
            Err(RpcError::Timeout) => {
                debug!(%peer, "closing idle connection");
                return;
            }
            Err(e) => {
                warn!(%peer, "dropping connection: {e}");
                return;
            }
        };
        let (who, body) = match env.body {
            // The connection was authenticated once; each request on it
            // carries the next number, so a frame repeated within it, or
            // one sent on a connection that never opened a session, is
            // refused and ends the connection.
            NodeRequest::InSession { seq, request } => match &mut session {
                Some((who, next))
                    if seq == *next
                        && !matches!(
                            *request,
                            NodeRequest::InSession { .. } | NodeRequest::OpenSession
                        ) =>
                {
                    *next += 1;
                    (who.clone(), *request)
                }
                _ => {
                    let expected = session.as_ref().map(|(_, next)| *next);
                    warn!(
                        %peer,
                        claimed_uid = env.identity.uid,
                        "refused a request in session (number {seq}, expected {expected:?}): \
                         no authenticated session or out of order"
                    );
                    let why = format!(
                        "{}: no authenticated session, or a request out of order",
                        proto::SlurmError::ProtocolAuthentication.as_slurm_str()
                    );
                    refuse(&daemon, &mut stream, why).await;
                    return;
                }
            },
            body => {
                let checked = authenticate(&daemon, env.credential.as_deref(), &env.identity);
                match checked {
                    Ok(who) => {
                        let exempt = daemon.setup.auth.privileged_uids.contains(&who.uid);
                        if let Err(refusal) = ticket.authenticate(who.uid, exempt) {
                            warn!(
                                %peer,
                                uid = who.uid,
                                "closing connection of user {}: {refusal}",
                                who.user
                            );
                            return;
                        }
                        (who, body)
                    }
                    Err(e) => {
                        warn!(
                            %peer,
                            claimed_uid = env.identity.uid,
                            "refused {:?}: authentication failed: {e}",
                            RequestName(&body)
                        );
                        let why = format!(
                            "{}: {e}",
                            proto::SlurmError::ProtocolAuthentication.as_slurm_str()
                        );
                        refuse(&daemon, &mut stream, why).await;
                        return;
                    }
                }
            }
        };
        debug!(%peer, user = %who.user, uid = who.uid, "request {:?}", RequestName(&body));
        if needs_privilege(&body) && !daemon.setup.auth.privileged_uids.contains(&who.uid) {
            warn!(
                %peer,
                user = %who.user,
                uid = who.uid,
                "refused {:?}: only root or SlurmUser may send it",
                RequestName(&body)
            );
            refuse(
                &daemon,
                &mut stream,
                proto::SlurmError::AccessDenied.as_slurm_str().to_string(),
            )
            .await;
            return;
        }
        if matches!(body, NodeRequest::OpenSession) {
            // The answer proves this daemon to the controller in turn.
            let reply = match daemon.link.ctld.credential() {
                Ok(c) => {
                    rpc::signed_envelope(daemon.setup.identity.clone(), Some(c), NodeResponse::Ok)
                }
                Err(e) => {
                    warn!(%peer, "cannot open a session: no credential of our own: {e}");
                    refuse(
                        &daemon,
                        &mut stream,
                        format!("cannot make a credential: {e}"),
                    )
                    .await;
                    return;
                }
            };
            if session.is_some() {
                refuse(
                    &daemon,
                    &mut stream,
                    "a session is already open".to_string(),
                )
                .await;
                return;
            }
            session = Some((who, 1));
            if let Err(e) = write_reply(&mut stream, &reply).await {
                warn!(%peer, "cannot answer: {e}");
                return;
            }
            continue;
        }
        let (response, after) = match body {
            // Who asks decides what it sees.
            NodeRequest::ListPids { job_id, step_id } => {
                let everyone = daemon.setup.auth.privileged_uids.contains(&who.uid);
                let owner = (!everyone).then_some(who.uid);
                let (jobs, roots) = daemon_jobs(&daemon);
                (
                    crate::daemon::pids::list(&jobs, &roots, job_id, step_id, owner),
                    None,
                )
            }
            NodeRequest::Attach {
                job_id,
                step_id,
                addr,
                token,
            } => {
                let everyone = daemon.setup.auth.privileged_uids.contains(&who.uid);
                let owner = (!everyone).then_some(who.uid);
                (
                    attach_step(&daemon, job_id, step_id, addr, token, owner),
                    None,
                )
            }
            body => handle(&daemon, body).await,
        };
        let reply = rpc::envelope(daemon.setup.identity.clone(), response);
        let written = write_reply(&mut stream, &reply).await;
        if let Some(after) = after {
            after(daemon.clone());
        }
        if let Err(e) = written {
            warn!(%peer, "cannot answer: {e}");
            return;
        }
    }
}

/// After `scontrol reconfigure`, a configless daemon fetches the files
/// again into its cache (once the answer is written: the controller does
/// not wait for it, and answers the fetch meanwhile). The running daemon
/// keeps the settings it started with, as muster's reconfigure applies
/// no node daemon setting live; what the cache serves (the commands and
/// jobs on this node) is the new configuration.
fn refetch_config(daemon: &Daemon) -> Option<After> {
    let (opts, server) = daemon.configless.clone()?;
    Some(Box::new(move |_daemon| {
        tokio::task::spawn_blocking(move || {
            match super::configless::fetch_and_cache(&opts, &server) {
                Ok(path) => info!(
                    "reconfigure: the configuration fetched again into {}",
                    path.display()
                ),
                Err(e) => warn!("reconfigure: fetching the configuration again: {e:#}"),
            }
        });
    }))
}

/// Checks the request's credential; the identity it proves.
fn authenticate(
    daemon: &Daemon,
    credential: Option<&str>,
    claimed: &proto::Identity,
) -> Result<proto::Identity, auth::AuthError> {
    let auth = &daemon.setup.auth;
    let verify = || auth.verifier.verify(credential, claimed, setup::now());
    if auth.blocks() {
        tokio::task::block_in_place(verify)
    } else {
        verify()
    }
}

/// Requests only the controller (root or SlurmUser) may send; anyone
/// authenticated may ping.
fn needs_privilege(request: &NodeRequest) -> bool {
    match request {
        NodeRequest::Ping | NodeRequest::ListPids { .. } | NodeRequest::Attach { .. } => false,
        NodeRequest::StepStat { .. }
        | NodeRequest::LaunchBatch(_)
        | NodeRequest::LaunchStep(_)
        | NodeRequest::SignalStep { .. }
        | NodeRequest::Signal { .. }
        | NodeRequest::Notify { .. }
        | NodeRequest::Reconfigure
        | NodeRequest::Terminate { .. }
        | NodeRequest::StartExtern { .. }
        | NodeRequest::EndExtern { .. }
        | NodeRequest::OpenSession
        | NodeRequest::InSession { .. }
        | NodeRequest::Reboot
        | NodeRequest::Shutdown => true,
    }
}

/// A credential for the daemon's own request to the controller (a fresh
/// one per attempt: each is accepted once).
/// The request's variant name, for logs (a launch carries a whole script).
struct RequestName<'a>(&'a NodeRequest);

impl std::fmt::Debug for RequestName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            NodeRequest::LaunchBatch(l) => write!(f, "LaunchBatch(job {})", l.job_id),
            NodeRequest::LaunchStep(l) => write!(f, "LaunchStep({}.{})", l.job_id, l.step_id),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Work to start once the answer is written (so the controller sees the
/// launch answered before the job's end).
type After = Box<dyn FnOnce(Arc<Daemon>) + Send>;

fn failed(msg: impl Into<String>) -> NodeResponse {
    NodeResponse::Failed(msg.into())
}

async fn handle(daemon: &Arc<Daemon>, request: NodeRequest) -> (NodeResponse, Option<After>) {
    match request {
        NodeRequest::Ping => (NodeResponse::Ok, None),
        NodeRequest::StepStat { job_id } => (step_stat(daemon, job_id), None),
        NodeRequest::LaunchBatch(l) => launch_batch(daemon, *l).await,
        NodeRequest::LaunchStep(l) => (
            crate::daemon::steps::launch(&daemon.link, &daemon.steps, *l).await,
            None,
        ),
        NodeRequest::StartExtern {
            job_id,
            uid,
            gid,
            node_index,
            acctg_freq,
        } => (
            crate::daemon::holder::start(
                &daemon.link,
                &daemon.holders,
                job_id,
                uid,
                gid,
                node_index,
                acctg_freq.as_deref(),
            ),
            None,
        ),
        NodeRequest::EndExtern { job_id } => {
            crate::daemon::scripts::job_ended(&daemon.link, job_id);
            // Named containers live as long as their job (pyxis's job scope).
            crate::container::remove_job_containers(
                &daemon.setup.conf_path.to_string_lossy(),
                job_id.0,
            );
            (
                crate::daemon::holder::end(&daemon.link, &daemon.holders, job_id),
                None,
            )
        }
        NodeRequest::SignalStep {
            job_id,
            step_id,
            signal,
            kill_wait,
            time_limit,
            reason,
        } => (
            crate::daemon::steps::signal(
                &daemon.steps,
                job_id,
                step_id,
                signal,
                kill_wait,
                time_limit,
                reason,
            ),
            None,
        ),
        NodeRequest::Signal {
            job_id,
            signal,
            scope,
        } => (signal_job(daemon, job_id, signal, scope), None),
        NodeRequest::Notify { job_id, message } => (notify_job(daemon, job_id, &message), None),
        NodeRequest::Reconfigure => (NodeResponse::Ok, refetch_config(daemon)),
        NodeRequest::Terminate {
            job_id,
            kill_wait,
            reason,
        } => {
            // A job's steps end with it, its extern step too; frozen
            // (suspended), they would not see their signals.
            confine::thaw_job(daemon.setup.cgroup.as_ref(), job_id);
            crate::daemon::holder::end(&daemon.link, &daemon.holders, job_id);
            daemon.steps.control(
                job_id,
                None,
                match reason {
                    Some(reason) => crate::taskd::TaskdControl::End {
                        reason,
                        step: false,
                        kill_wait: Some(kill_wait),
                    },
                    None => crate::taskd::TaskdControl::Terminate(kill_wait),
                },
            );
            let action = daemon.jobs().terminate(job_id, kill_wait);
            match action {
                Ok(TerminateAction::Signal {
                    pid,
                    pgid,
                    kill_wait,
                }) => {
                    if let Some(reason) = reason {
                        write_job_banner(daemon, job_id, pid, reason);
                    }
                    terminate(daemon, job_id, pid, pgid, kill_wait);
                    (NodeResponse::Ok, None)
                }
                Ok(TerminateAction::Deferred) => (NodeResponse::Ok, None),
                Err(r) => (failed(r.message()), None),
            }
        }
        NodeRequest::Shutdown => {
            daemon.shutdown.notify_one();
            (NodeResponse::Ok, None)
        }
        NodeRequest::Reboot => (reboot(daemon), None),
        // Answered by the connection itself (serve_connection).
        NodeRequest::OpenSession
        | NodeRequest::InSession { .. }
        | NodeRequest::ListPids { .. }
        | NodeRequest::Attach { .. } => (failed("not a request on its own"), None),
    }
}

/// `sattach`: tells the step's supervisor to connect to `addr`, when the
/// step runs here and `owner` (None: root or SlurmUser) owns it.
fn attach_step(
    daemon: &Daemon,
    job_id: JobId,
    step_id: u32,
    addr: String,
    token: String,
    owner: Option<u32>,
) -> NodeResponse {
    let Some(uid) = daemon.steps.owner(job_id, step_id) else {
        return failed(format!("Job step {job_id}.{step_id} is not running here"));
    };
    if owner.is_some_and(|o| o != uid) {
        return failed("Access/permission denied");
    }
    let told = daemon.steps.control(
        job_id,
        Some(step_id),
        crate::taskd::TaskdControl::Attach { addr, token },
    );
    if told == 0 {
        return failed(format!("Job step {job_id}.{step_id} is not running here"));
    }
    NodeResponse::Ok
}

/// `scontrol reboot`: runs slurm.conf's RebootProgram (a command line,
/// through `/bin/sh -c`) as the daemon's user, detached: the host goes
/// down under it, and the daemon that starts after the boot registers
/// with the new boot id. Not configured: refused with slurmd's message,
/// and the node is set DOWN once ResumeTimeout passes.
fn reboot(daemon: &Daemon) -> NodeResponse {
    let Some(program) = daemon.setup.reboot_program.as_deref() else {
        tracing::error!("RebootProgram isn't defined in config");
        return failed("RebootProgram isn't defined in config");
    };
    tracing::info!("rebooting: running RebootProgram {program}");
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(program)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .env("SLURMD_NODENAME", &daemon.setup.node_name);
    use std::os::unix::process::CommandExt;
    // Its own session: the program outlives this daemon (which it may
    // stop) and none of its signals reach it.
    cmd.process_group(0);
    match cmd.spawn() {
        Ok(mut child) => {
            // Reaped off the request's thread: nothing waits on it.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            NodeResponse::Ok
        }
        Err(e) => {
            tracing::error!("cannot run RebootProgram {program}: {e}");
            failed(format!("cannot run RebootProgram {program}: {e}"))
        }
    }
}

/// sstat: the usage each of the job's supervisors here last published
/// (the batch step's in its spool directory, srun's steps' beside it). A
/// step that has not been sampled yet is left out.
fn step_stat(daemon: &Daemon, job_id: JobId) -> NodeResponse {
    let spool_dir = &daemon.setup.spool_dir;
    let mut out = Vec::new();
    let dir = crate::spool::job_dir(spool_dir, job_id);
    if let Some(s) = crate::gather::read_live(&dir.join(crate::spool::LIVE_FILE)) {
        out.push(s);
    }
    for step in daemon.steps.running(job_id) {
        let path = crate::daemon::steps::live_path(spool_dir, job_id, step);
        if let Some(s) = crate::gather::read_live(&path) {
            out.push(s);
        }
    }
    if daemon.holders.running(job_id) {
        if let Some(s) =
            crate::gather::read_live(&crate::daemon::holder::live_path(spool_dir, job_id))
        {
            out.push(s);
        }
    }
    NodeResponse::StepStats(out)
}

/// `scancel --signal` and sbatch `--signal` here: the job's steps
/// (`Steps`), its batch shell alone (`Batch`), or the batch shell's
/// process group and the steps (`Full`). A job here without steps is
/// signalled with nothing under `Steps`, and that is no error, as in
/// Slurm, where the batch shell must be named with `-b` or `-f`.
fn signal_job(daemon: &Daemon, job_id: JobId, signal: i32, scope: SignalScope) -> NodeResponse {
    let Ok(sig) = Signal::try_from(signal) else {
        return failed(format!("invalid signal {signal}"));
    };
    // proctrack/cgroup: a suspend freezes the job's cgroups (no SIGSTOP);
    // resume and SIGKILL thaw them first (a frozen process gets its
    // signals once thawed).
    let cgroups = daemon.setup.cgroup.as_ref();
    match sig {
        Signal::SIGSTOP if scope == SignalScope::Full => {
            match confine::freeze_job(cgroups, job_id) {
                Some(Ok(())) => return NodeResponse::Ok,
                Some(Err(e)) => return failed(format!("cannot suspend job {job_id}: {e}")),
                None => {}
            }
        }
        Signal::SIGCONT | Signal::SIGKILL => confine::thaw_job(cgroups, job_id),
        _ => {}
    }
    let steps = match scope {
        SignalScope::Batch => 0,
        SignalScope::Steps | SignalScope::Full => {
            daemon
                .steps
                .control(job_id, None, crate::taskd::TaskdControl::Signal(signal))
        }
    };
    if steps > 0 {
        info!(job = %job_id, "sent {sig} to {steps} step(s)");
    }
    if scope == SignalScope::Steps {
        return if steps > 0 || daemon.jobs().contains(job_id) {
            NodeResponse::Ok
        } else {
            failed(Refusal::NoSuchJob.message())
        };
    }
    let target = match daemon
        .jobs()
        .signal_target(job_id, scope == SignalScope::Batch)
    {
        Ok(t) => t,
        // A job with steps here but no batch shell (an allocation, or
        // not the batch host): the steps had it.
        Err(_) if steps > 0 => return NodeResponse::Ok,
        Err(r) => return failed(r.message()),
    };
    match kill(Pid::from_raw(target.kill_arg()), sig) {
        Ok(()) => {
            info!(job = %job_id, "sent {sig} to {target:?}");
            NodeResponse::Ok
        }
        Err(nix::errno::Errno::ESRCH) if steps > 0 => NodeResponse::Ok,
        Err(nix::errno::Errno::ESRCH) => failed(Refusal::NoSuchJob.message()),
        Err(e) => failed(format!("cannot signal job {job_id}: {e}")),
    }
}

/// The jobs this daemon runs a batch script or steps of, and the
/// processes theirs descend from: the daemon itself (its supervisors) and
/// the batch scripts (which a restarted daemon took over without being
/// their ancestor).
fn daemon_jobs(daemon: &Daemon) -> (Vec<JobId>, Vec<u32>) {
    let batch = daemon.jobs().job_ids();
    let mut roots = vec![std::process::id()];
    for &id in &batch {
        if let Ok(t) = daemon.jobs().signal_target(id, true) {
            roots.push(t.kill_arg().unsigned_abs());
        }
    }
    let mut ids = batch;
    ids.extend(daemon.steps.job_ids());
    ids.sort();
    ids.dedup();
    (ids, roots)
}

/// `scontrol notify`: slurmstepd's line in the batch script's stderr,
/// whatever file that is (real Slurm 22.05 wrote `slurmstepd-node1: error:
/// hello world` into the job's output for `scontrol notify 8 hello world`).
fn notify_job(daemon: &Daemon, job_id: JobId, message: &str) -> NodeResponse {
    let target = match daemon.jobs().signal_target(job_id, true) {
        Ok(t) => t,
        Err(r) => return failed(r.message()),
    };
    let text = format!("slurmstepd-{}: error: {message}\n", daemon.setup.node_name);
    let path = format!("/proc/{}/fd/2", target.kill_arg());
    let written = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    match written {
        Ok(()) => NodeResponse::Ok,
        Err(e) => failed(format!("cannot write to job {job_id}'s stderr: {e}")),
    }
}

/// slurmstepd's banner for a batch job the controller ends
/// (`*** JOB 12 ON node1 CANCELLED AT 2026-12-06T14:20:24 ***`), appended
/// to the script's stderr, whatever file that is (its output is opened for
/// appending, so the script's own later writes go after it).
fn write_job_banner(daemon: &Daemon, job_id: JobId, pid: i32, reason: proto::EndReason) {
    let text = reason.banner(
        &format!("JOB {job_id}"),
        &daemon.setup.node_name,
        &crate::taskd::banner_time(),
    );
    let path = format!("/proc/{pid}/fd/2");
    let written = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if let Err(e) = written {
        warn!(job = %job_id, "cannot write the job's end into its stderr: {e}");
    }
}

/// Slurm's KillWait: SIGCONT and SIGTERM now, SIGKILL after `kill_wait`
/// seconds if the script still runs.
fn terminate(daemon: &Arc<Daemon>, job_id: JobId, pid: i32, pgid: i32, kill_wait: u32) {
    info!(job = %job_id, "terminating (KillWait {kill_wait}s)");
    confine::thaw_job(daemon.setup.cgroup.as_ref(), job_id);
    signal_group(pgid, Signal::SIGCONT);
    signal_group(pgid, Signal::SIGTERM);
    let daemon = daemon.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(u64::from(kill_wait))).await;
        if daemon.jobs().is_running(job_id, pid) {
            confine::thaw_job(daemon.setup.cgroup.as_ref(), job_id);
            info!(job = %job_id, "still running after KillWait: SIGKILL");
            signal_group(pgid, Signal::SIGKILL);
        }
    });
}

/// Waits (a few seconds at most) until the end of a job's earlier run in
/// `dir` has been acknowledged by the controller and its directory taken
/// away; whether it was.
async fn earlier_run_acknowledged(dir: &Path) -> bool {
    const LIMIT: Duration = Duration::from_secs(5);
    let start = std::time::Instant::now();
    while matches!(spool::read_status(dir), Ok(Some(_))) {
        if start.elapsed() >= LIMIT {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

async fn launch_batch(daemon: &Arc<Daemon>, launch: BatchLaunch) -> (NodeResponse, Option<After>) {
    let job_id = launch.job_id;
    // The job ended here and its end is still being reported (the status
    // file goes once the controller has it): this launch is one a restarted
    // controller re-sends for a job it still thinks runs. The script ran;
    // it must not run twice. A later run (a requeue: a higher run number)
    // may arrive before the answer to the report has: the controller sends
    // it once it has the end, on another connection. It waits for that
    // answer (the directory's removal) and then starts.
    let dir = spool::job_dir(&daemon.setup.spool_dir, job_id);
    // The status and the run record are read together: once the end is
    // acknowledged the directory is emptied file by file (under
    // `DIR_LOCK`), and read apart the status could still be there with the
    // record gone, which made a requeue's launch look like a repeat.
    let ended_run = {
        let _guard = spool::DIR_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        matches!(spool::read_status(&dir), Ok(Some(_)))
            .then(|| spool::read_record(&dir).map(|r| r.restarts))
    };
    if let Some(ended_run) = ended_run {
        let later_run = ended_run.is_some_and(|r| r < launch.restarts);
        if !later_run {
            warn!(job = %job_id, "launch refused: the job ended here, its end is being reported");
            return (NodeResponse::Ok, None);
        }
        if !earlier_run_acknowledged(&dir).await {
            let msg = "the end of the job's earlier run here is not yet acknowledged";
            warn!(job = %job_id, run = launch.restarts, "launch refused: {msg}");
            return (failed(msg.to_string()), None);
        }
    }
    // The same, after the end was acknowledged and the directory removed:
    // a copy of the launch that was on its way meanwhile. A later run (a
    // requeue) has a higher run number and starts.
    if daemon.ended_run(job_id) == Some(launch.restarts) {
        warn!(job = %job_id, run = launch.restarts, "launch refused: this run of the job ended here");
        return (NodeResponse::Ok, None);
    }
    if let Err(refusal) = daemon.jobs().begin_launch(job_id) {
        // A repeated launch (the controller retrying after a lost answer)
        // must not start the script twice; the first one is running.
        warn!(job = %job_id, "launch refused: {}", refusal.message());
        return match refusal {
            Refusal::AlreadyHere => (NodeResponse::Ok, None),
            other => (failed(other.message()), None),
        };
    }
    daemon.link.scripts.batch_launched(job_id);
    // Prolog: run before the script, off this connection (a site script
    // may take long); its failure is reported as the job's end, and the
    // controller drains the node and requeues the job held.
    if let Some(prolog) = daemon.setup.hooks.prolog.clone() {
        let after: After = Box::new(move |daemon: Arc<Daemon>| {
            tokio::spawn(async move {
                let env = script_env(&daemon, &launch, "prolog_slurmd");
                let outcome = crate::daemon::scripts::run_job_script(
                    &daemon.link,
                    &daemon.setup.hooks,
                    &prolog,
                    &env,
                    job_id,
                    "prolog",
                )
                .await;
                if !outcome.ok {
                    daemon.jobs().abort_launch(job_id);
                    warn!(job = %job_id, "prolog failed: {}", outcome.why);
                    start_report(
                        daemon.clone(),
                        job_id,
                        ExitCode::from_wait_status(EXIT_1),
                        Some("Prolog error".into()),
                        None,
                        Some(proto::NodeScript::Prolog),
                    );
                    return;
                }
                let (response, after) = start_batch(&daemon, launch).await;
                if let NodeResponse::Failed(msg) = response {
                    start_report(
                        daemon.clone(),
                        job_id,
                        ExitCode::from_wait_status(EXIT_1),
                        Some(msg),
                        None,
                        None,
                    );
                }
                if let Some(after) = after {
                    after(daemon);
                }
            });
        });
        return (NodeResponse::Ok, Some(after));
    }
    start_batch(daemon, launch).await
}

/// The environment of the job's Prolog or Epilog here.
fn script_env(daemon: &Daemon, launch: &BatchLaunch, context: &str) -> Vec<(String, String)> {
    let mut env = crate::hooks::job_env(
        &launch.env,
        &launch.gpus,
        &daemon.setup.node_name,
        &daemon.setup.conf_path.to_string_lossy(),
        context,
    );
    if !env.iter().any(|(k, _)| k == "SLURM_JOB_UID") {
        env.push(("SLURM_JOB_UID".into(), launch.uid.to_string()));
    }
    env
}

/// Where a job's Epilog environment is kept between its launch and its end
/// (in the job's directory: a restarted daemon still has it).
const EPILOG_ENV: &str = "epilog_env";

/// Starts a batch script whose launch was accepted (`begin_launch`).
async fn start_batch(daemon: &Arc<Daemon>, launch: BatchLaunch) -> (NodeResponse, Option<After>) {
    let job_id = launch.job_id;
    let conf_path = daemon.setup.conf_path.to_string_lossy().into_owned();
    let ctx = LaunchContext {
        node_name: &daemon.setup.node_name,
        conf_path: &conf_path,
        spool_dir: &daemon.setup.spool_dir,
        daemon_uid: daemon.daemon_uid,
        stepd_program: &daemon.stepd_program,
        gather: &daemon.setup.gather,
        gpu_env: daemon.setup.gpus.env,
        cgroup: daemon.setup.cgroup.as_ref(),
        task_affinity: daemon.setup.task_affinity,
        topology_addr: daemon.setup.topology_addr.as_ref(),
        slots: &daemon.slots,
        task_scripts: (
            daemon.setup.hooks.task_prolog.as_deref(),
            daemon.setup.hooks.task_epilog.as_deref(),
        ),
        gpu_files: &daemon.setup.gpus.files,
    };
    let dir = match launch::prepare(&launch, &ctx) {
        Ok(dir) => dir,
        Err(msg) => {
            daemon.jobs().abort_launch(job_id);
            warn!(job = %job_id, "launch refused: {msg}");
            return (failed(msg), None);
        }
    };
    if daemon.setup.hooks.epilog.is_some() {
        let env = script_env(daemon, &launch, "epilog_slurmd");
        if let Err(e) = serde_json::to_vec(&env)
            .map_err(std::io::Error::other)
            .and_then(|bytes| spool::write_atomic(&dir.join(EPILOG_ENV), &bytes))
        {
            warn!(job = %job_id, "cannot keep the epilog's environment: {e}");
        }
    }
    let zygote = zygote_socket(daemon, &dir);
    match launch::start_supervisor(&launch, &ctx, &dir, zygote).await {
        Ok(Supervisor {
            handle,
            answer: StepdAnswer::Started(pids),
        }) => {
            let pid = pids.script.pid;
            // The supervisor recorded its pids in the job's log before
            // answering: that is what a restarted daemon re-attaches by, so
            // the daemon records nothing more here.
            info!(
                job = %job_id,
                pid,
                supervisor = pids.stepd.pid,
                user = %launch.user,
                "batch script started"
            );
            let after = daemon.jobs().started(job_id, pid, pid);
            let watch = match handle {
                SupervisorHandle::Child(child) => Watch::Child(child),
                SupervisorHandle::Forked => Watch::Adopted(pids.stepd),
            };
            tokio::spawn(watch_job(daemon.clone(), job_id, dir, pids, watch));
            match after {
                AfterStart::Run => {}
                AfterStart::Terminate(kill_wait) => terminate(daemon, job_id, pid, pid, kill_wait),
                AfterStart::Kill => kill_at_shutdown(job_id, pid),
            }
            (NodeResponse::Ok, None)
        }
        Ok(Supervisor {
            handle,
            answer: StepdAnswer::Failed(msg),
        }) => {
            daemon.jobs().abort_launch(job_id);
            warn!(job = %job_id, "launch failed: {msg}");
            let after: After = Box::new(move |daemon: Arc<Daemon>| {
                tokio::spawn(async move {
                    // It exits right after answering; its status record
                    // holds the failure (written before the answer).
                    if let SupervisorHandle::Child(mut child) = handle {
                        let _ = child.wait().await;
                    }
                    report_end(&daemon, job_id, &dir, NoStatus::LaunchFailed(msg));
                });
            });
            (NodeResponse::Ok, Some(after))
        }
        Err(msg) => {
            daemon.jobs().abort_launch(job_id);
            warn!(job = %job_id, "launch failed: {msg}");
            let after: After = Box::new(move |daemon: Arc<Daemon>| {
                report_end(&daemon, job_id, &dir, NoStatus::LaunchFailed(msg));
            });
            (NodeResponse::Ok, Some(after))
        }
    }
}

/// The zygote's socket for a launch of the job in `dir`, if the zygote
/// takes it; a zygote that does not is dropped (it exits on its socket's
/// end) and supervisors are executed from then on.
fn zygote_socket(daemon: &Daemon, dir: &Path) -> Option<std::os::unix::net::UnixStream> {
    let mut zygote = daemon.zygote.lock().unwrap_or_else(|p| p.into_inner());
    let z = zygote.as_mut()?;
    if !z.is_running() {
        warn!("the supervisor zygote exited; supervisors will be executed");
        *zygote = None;
        return None;
    }
    match z.send(dir) {
        Ok(sock) => Some(sock),
        Err(e) => {
            warn!(
                "the supervisor zygote does not take launches ({e}); supervisors will be executed"
            );
            *zygote = None;
            None
        }
    }
}

/// How the daemon learns that a job's supervisor ended.
enum Watch {
    /// Started by this daemon: reaped as its child.
    Child(tokio::process::Child),
    /// Found after a restart, or forked by the zygote: not our child.
    Adopted(ProcId),
}

/// Waits for the job's supervisor to end, then reports the job's end from
/// the status it recorded in the job's log.
async fn watch_job(daemon: Arc<Daemon>, job_id: JobId, dir: PathBuf, pids: Pids, watch: Watch) {
    match watch {
        Watch::Child(mut child) => {
            if let Err(e) = child.wait().await {
                warn!(job = %job_id, "cannot wait for the job supervisor: {e}");
                wait_adopted(pids.stepd).await;
            }
        }
        Watch::Adopted(id) => wait_adopted(id).await,
    }
    // Counted from before the job leaves the table, so that a stopping
    // daemon never sees neither a job nor a report outstanding meanwhile.
    daemon.pending_reports.fetch_add(1, Ordering::SeqCst);
    daemon.jobs().finished(job_id, pids.script.pid);
    if daemon.setup.cgroup.is_some() && !daemon.steps.job_ids().contains(&job_id) {
        // What the supervisor could not remove (it was killed) goes now.
        let settings = daemon.setup.cgroup.clone();
        let _ =
            tokio::task::spawn_blocking(move || confine::end_job(settings.as_ref(), job_id)).await;
    }
    report_end(&daemon, job_id, &dir, NoStatus::Killed(pids));
    daemon.pending_reports.fetch_sub(1, Ordering::SeqCst);
    daemon.progress.notify_waiters();
}

/// Waits until `id`, a process that is not our child, has ended.
///
/// pidfd_open(2) makes the kernel say when; where it is missing (Linux
/// before 5.3, or a seccomp filter), /proc is polled every ADOPTED_POLL.
async fn wait_adopted(id: ProcId) {
    if let Some(fd) = pidfd_open(id.pid) {
        // The pidfd pins whichever process had the pid when it was opened;
        // if that pid is still our supervisor now, the pidfd is its.
        if !id.is_alive() {
            return;
        }
        // SAFETY: the OwnedFd is moved in and stays open, the same
        // descriptor, until the AsyncFd is dropped.
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        };
        match registered {
            Ok(fd) => {
                debug!("waiting for supervisor {} on its pidfd", id.pid);
                // Readable once the process has ended.
                if fd.readable().await.is_ok() {
                    return;
                }
            }
            Err(e) => debug!("cannot poll a pidfd: {e}; polling /proc"),
        }
    }
    debug!("polling /proc for supervisor {}", id.pid);
    while id.is_alive() {
        tokio::time::sleep(ADOPTED_POLL).await;
    }
}

fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: the system call takes two integers and returns a new
    // descriptor or -1; no memory is involved.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// What to record for a job whose supervisor recorded no status.
enum NoStatus {
    /// The supervisor was killed (or its status could not be written): the
    /// job counts as killed, and what is left of it is.
    Killed(Pids),
    /// The script never started, for this reason.
    LaunchFailed(String),
}

/// Reports the end of the job in `dir`, from its log.
fn report_end(daemon: &Arc<Daemon>, job_id: JobId, dir: &Path, no_status: NoStatus) {
    let ended = match spool::read_status(dir) {
        Ok(Some(ended)) => Some(ended),
        Ok(None) => None,
        Err(e) => {
            warn!(job = %job_id, "{e}");
            None
        }
    };
    let (exit, launch_failed, ended) = match ended {
        Some(ended) => (ended.exit, ended.launch_failed.clone(), Some(ended)),
        None => end_without_status(job_id, dir, no_status),
    };
    info!(job = %job_id, "batch script ended with {exit}");
    let cleanup = ended.map(|ended| (dir.to_path_buf(), ended));
    start_report(daemon.clone(), job_id, exit, launch_failed, cleanup, None);
}

/// Records the end of a job whose supervisor left no status: kills what is
/// left of a killed job and writes the status in the supervisor's stead,
/// so that a daemon restarted before the report is answered reports the
/// same. Returns the end, and the status as written (`None` if it could
/// not be).
fn end_without_status(
    job_id: JobId,
    dir: &Path,
    no_status: NoStatus,
) -> (ExitCode, Option<String>, Option<Ended>) {
    let (raw, launch_failed) = match no_status {
        NoStatus::Killed(pids) => {
            warn!(
                job = %job_id,
                "the job supervisor (pid {}) ended without recording the job's end: \
                 reporting the job killed",
                pids.stepd.pid
            );
            if pids.script.is_alive() {
                signal_group(pids.script.pid, Signal::SIGKILL);
            }
            (libc::SIGKILL, None)
        }
        NoStatus::LaunchFailed(msg) => (EXIT_1, Some(msg)),
    };
    let written = spool::write_status(dir, raw, launch_failed.as_deref(), None)
        .and_then(|()| spool::read_status(dir));
    let ended = match written {
        Ok(ended) => ended,
        Err(e) => {
            warn!(job = %job_id, "cannot record the job's end in {}: {e}", dir.display());
            None
        }
    };
    (ExitCode::from_wait_status(raw), launch_failed, ended)
}

/// Reports a job's end to the controller in the background, retrying until
/// it answers; then removes the job's directory (`cleanup`).
fn start_report(
    daemon: Arc<Daemon>,
    job_id: JobId,
    exit: ExitCode,
    launch_failed: Option<String>,
    cleanup: Option<(PathBuf, Ended)>,
    mut script_failed: Option<proto::NodeScript>,
) {
    daemon.pending_reports.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        // Epilog: after the script, before the end is reported (the job's
        // resources are held meanwhile, as a COMPLETING job's in Slurm).
        if let (Some(epilog), Some((dir, ended))) = (&daemon.setup.hooks.epilog, &cleanup) {
            if ended.launch_failed.is_none() {
                let env: Vec<(String, String)> = std::fs::read(dir.join(EPILOG_ENV))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_else(|| {
                        vec![
                            ("SLURM_JOB_ID".into(), job_id.to_string()),
                            ("SLURMD_NODENAME".into(), daemon.setup.node_name.clone()),
                            ("SLURM_SCRIPT_CONTEXT".into(), "epilog_slurmd".into()),
                        ]
                    });
                let outcome = crate::daemon::scripts::run_job_script(
                    &daemon.link,
                    &daemon.setup.hooks,
                    epilog,
                    &env,
                    job_id,
                    "epilog",
                )
                .await;
                if !outcome.ok {
                    warn!(job = %job_id, "epilog failed: {}", outcome.why);
                    script_failed = Some(proto::NodeScript::Epilog);
                }
            }
        }
        let usage = cleanup
            .as_ref()
            .and_then(|(_, ended)| ended.usage.as_deref().cloned());
        let oom_kills = cleanup.as_ref().map_or(0, |(_, ended)| ended.oom_kills);
        let request = CtldRequest::JobExited {
            job_id,
            node: daemon.setup.node_name.clone(),
            exit,
            launch_failed,
            usage,
            oom_kills,
            script_failed,
        };
        let mut delay = BACKOFF_MIN;
        loop {
            match daemon
                .link
                .ctld
                .call_until_answered(|| request.clone(), "job end")
                .await
            {
                CtldResponse::Ok => debug!(job = %job_id, "end reported"),
                // Its credential was not taken, so the report was not
                // looked at: sent again after its connection closed
                // unanswered (as a stopping controller closes them, its
                // credential already seen). Again, with a new one: the
                // job's end must not be dropped, or a launch the controller
                // re-sends would run the script a second time.
                CtldResponse::Error(proto::SlurmError::ProtocolAuthentication) => {
                    warn!(job = %job_id, "job end report not authenticated; sending it again");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(BACKOFF_MAX);
                    continue;
                }
                other => warn!(job = %job_id, "controller refused the job end report: {other:?}"),
            }
            break;
        }
        // Answered either way: asking again would not change the answer.
        if let Some((dir, ended)) = cleanup {
            if let Some(record) = spool::read_record(&dir) {
                daemon.remember_ended_run(job_id, record.restarts);
            }
            if let Err(e) = spool::remove_reported(&dir, &ended, Some(&daemon.slots)) {
                warn!("cannot remove {}: {e}", dir.display());
            }
        }
        daemon.pending_reports.fetch_sub(1, Ordering::SeqCst);
        daemon.progress.notify_waiters();
    });
}

/// Registers with the controller, retrying until it answers Ok; then
/// reports the jobs that ended while no daemon ran (after the registration,
/// so that the controller hears of the node first).
async fn register(daemon: Arc<Daemon>, ended_meanwhile: Vec<EndedMeanwhile>) {
    let setup = &daemon.setup;
    let fabric = crate::daemon::fabric::probe(
        setup.fabric_probe.as_deref(),
        &setup.node_name,
        &setup.conf_path,
    )
    .await;
    if !fabric.error.is_empty() {
        warn!("{}", fabric.error);
    }
    loop {
        let make = || {
            let mut reg = daemon.setup.registration.clone();
            reg.fabric = Some(fabric.clone());
            reg.free_memory = crate::daemon::hw::free_memory_mb();
            reg.cpu_load = crate::daemon::hw::load_average();
            reg.running_jobs = daemon.jobs().job_ids();
            CtldRequest::RegisterNode(reg)
        };
        match daemon
            .link
            .ctld
            .call_until_answered(make, "registration")
            .await
        {
            CtldResponse::Ok => {
                // `muster up` waits for this line in each log it started.
                info!("registered with the controller");
                for EndedMeanwhile { job_id, dir, ended } in ended_meanwhile {
                    let (exit, launch_failed) = (ended.exit, ended.launch_failed.clone());
                    start_report(
                        daemon.clone(),
                        job_id,
                        exit,
                        launch_failed,
                        Some((dir, ended)),
                        None,
                    );
                }
                return;
            }
            other => {
                warn!("controller refused the registration: {other:?}; retrying");
                tokio::time::sleep(BACKOFF_MAX).await;
            }
        }
    }
}
