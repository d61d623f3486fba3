//! The daemon's I/O shell: the listener, the controller requests, the job
//! watchers and the reports to the controller.
//!
//! ```text
//!   run() --bind--> listener --accept--> serve_connection --handle()--> NodeResponse
//!     |                                        |
//!     +--spawn--> register (retry until Ok)    +--LaunchBatch--> launch::launch
//!                                                                  |
//!                 report_exit (retry) <-- watch_job (reap) <-------+
//! ```
//!
//! When the daemon stops (the controller's `Shutdown`, SIGTERM or SIGINT)
//! it kills the jobs it still runs. Slurm's slurmd leaves them to their
//! slurmstepd, which a restarted slurmd finds again; muster's daemon does
//! not yet recover jobs after a restart (TODO(#noded-recovery)), so a job
//! left behind would run unwatched and never be reported. Killing them also
//! means a stopped local cluster leaves no stray processes.

use crate::launch::{self, LaunchContext, LaunchError};
use crate::setup::{self, host_port, NodeSetup};
use crate::state::{AfterStart, JobTable, Refusal, TerminateAction};
use crate::NodedOptions;
use anyhow::Context;
use model::{ExitCode, JobId};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use proto::{BatchLaunch, CtldRequest, CtldResponse, Envelope, NodeRequest, NodeResponse};
use rpc::RpcError;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

/// First retry delay towards the controller.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Longest retry delay towards the controller.
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long one request to the controller may take.
const CTLD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stopping daemon waits for killed jobs to be reaped and
/// reported.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The state the tasks share.
struct Daemon {
    setup: NodeSetup,
    daemon_uid: u32,
    jobs: Mutex<JobTable>,
    shutdown: Notify,
    /// Reports to the controller not yet answered.
    pending_reports: AtomicUsize,
    /// Signalled when a job leaves the table or a report is answered.
    progress: Notify,
}

impl Daemon {
    fn jobs(&self) -> MutexGuard<'_, JobTable> {
        // A panic while holding the lock cannot leave the table half
        // updated (every method is one step), so a poisoned lock is usable.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Runs the node daemon until the controller sends `Shutdown` or the
/// process gets SIGTERM or SIGINT. Fails when the configuration cannot be
/// loaded, the node is not in it, or its port cannot be bound.
pub async fn run(opts: NodedOptions) -> anyhow::Result<()> {
    let setup = setup::load(&opts)?;
    let bind = host_port(&setup.addr, setup.port);
    let listener = TcpListener::bind(&bind).await.with_context(|| {
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
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("installing the SIGINT handler")?;
    let daemon = Arc::new(Daemon {
        setup,
        daemon_uid: nix::unistd::geteuid().as_raw(),
        jobs: Mutex::new(JobTable::new()),
        shutdown: Notify::new(),
        pending_reports: AtomicUsize::new(0),
        progress: Notify::new(),
    });
    let registration = tokio::spawn(register(daemon.clone()));
    let why = loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tokio::spawn(serve_connection(daemon.clone(), stream, peer.to_string()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = daemon.shutdown.notified() => break "the controller asked to shut down",
            _ = sigterm.recv() => break "SIGTERM",
            _ = sigint.recv() => break "SIGINT",
        }
    };
    info!("stopping: {why}");
    drop(listener);
    registration.abort();
    stop_jobs(&daemon).await;
    Ok(())
}

/// Kills every job still running and gives the watchers a moment to reap
/// them and report their ends.
async fn stop_jobs(daemon: &Arc<Daemon>) {
    let groups = daemon.jobs().running_groups();
    for (job_id, pgid) in &groups {
        info!(job = %job_id, "killing job at shutdown");
        signal_group(*pgid, Signal::SIGCONT);
        signal_group(*pgid, Signal::SIGKILL);
    }
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    loop {
        let notified = daemon.progress.notified();
        if daemon.jobs().is_empty() && daemon.pending_reports.load(Ordering::SeqCst) == 0 {
            return;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            warn!("stopping with jobs or reports outstanding");
            return;
        }
    }
}

fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 {
        let _ = kill(Pid::from_raw(-pgid), signal);
    }
}

/// Serves requests on one connection until the peer closes it, a frame is
/// bad, or it stays idle past the read timeout.
async fn serve_connection(daemon: Arc<Daemon>, mut stream: TcpStream, peer: String) {
    let _ = stream.set_nodelay(true);
    loop {
        let env: Envelope<NodeRequest> =
            match rpc::read_frame_async(&mut stream, rpc::IO_TIMEOUT).await {
                Ok(env) => env,
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
        debug!(%peer, user = %env.identity.user, "request {:?}", RequestName(&env.body));
        let (response, after) = handle(&daemon, env.body);
        let reply = rpc::envelope(daemon.setup.identity.clone(), response);
        let written = rpc::write_frame_async(&mut stream, &reply).await;
        if let Some(after) = after {
            after(daemon.clone());
        }
        if let Err(e) = written {
            warn!(%peer, "cannot answer: {e}");
            return;
        }
    }
}

/// The request's variant name, for logs (a launch carries a whole script).
struct RequestName<'a>(&'a NodeRequest);

impl std::fmt::Debug for RequestName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            NodeRequest::LaunchBatch(l) => write!(f, "LaunchBatch(job {})", l.job_id),
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

fn handle(daemon: &Arc<Daemon>, request: NodeRequest) -> (NodeResponse, Option<After>) {
    match request {
        NodeRequest::Ping => (NodeResponse::Ok, None),
        NodeRequest::LaunchBatch(l) => launch_batch(daemon, *l),
        NodeRequest::Signal {
            job_id,
            signal,
            batch_only,
        } => (signal_job(daemon, job_id, signal, batch_only), None),
        NodeRequest::Terminate { job_id, kill_wait } => {
            let action = daemon.jobs().terminate(job_id, kill_wait);
            match action {
                Ok(TerminateAction::Signal {
                    pid,
                    pgid,
                    kill_wait,
                }) => {
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
    }
}

fn signal_job(daemon: &Daemon, job_id: JobId, signal: i32, batch_only: bool) -> NodeResponse {
    let Ok(sig) = Signal::try_from(signal) else {
        return failed(format!("invalid signal {signal}"));
    };
    let target = match daemon.jobs().signal_target(job_id, batch_only) {
        Ok(t) => t,
        Err(r) => return failed(r.message()),
    };
    match kill(Pid::from_raw(target.kill_arg()), sig) {
        Ok(()) => {
            info!(job = %job_id, "sent {sig} to {target:?}");
            NodeResponse::Ok
        }
        Err(nix::errno::Errno::ESRCH) => failed(Refusal::NoSuchJob.message()),
        Err(e) => failed(format!("cannot signal job {job_id}: {e}")),
    }
}

/// Slurm's KillWait: SIGCONT and SIGTERM now, SIGKILL after `kill_wait`
/// seconds if the script still runs.
fn terminate(daemon: &Arc<Daemon>, job_id: JobId, pid: i32, pgid: i32, kill_wait: u32) {
    info!(job = %job_id, "terminating (KillWait {kill_wait}s)");
    signal_group(pgid, Signal::SIGCONT);
    signal_group(pgid, Signal::SIGTERM);
    let daemon = daemon.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(u64::from(kill_wait))).await;
        if daemon.jobs().is_running(job_id, pid) {
            info!(job = %job_id, "still running after KillWait: SIGKILL");
            signal_group(pgid, Signal::SIGKILL);
        }
    });
}

fn launch_batch(daemon: &Arc<Daemon>, launch: BatchLaunch) -> (NodeResponse, Option<After>) {
    let job_id = launch.job_id;
    if let Err(refusal) = daemon.jobs().begin_launch(job_id) {
        // A repeated launch (the controller retrying after a lost answer)
        // must not start the script twice; the first one is running.
        warn!(job = %job_id, "launch refused: {}", refusal.message());
        return match refusal {
            Refusal::AlreadyHere => (NodeResponse::Ok, None),
            other => (failed(other.message()), None),
        };
    }
    let conf_path = daemon.setup.conf_path.to_string_lossy().into_owned();
    let ctx = LaunchContext {
        node_name: &daemon.setup.node_name,
        conf_path: &conf_path,
        spool_dir: &daemon.setup.spool_dir,
        daemon_uid: daemon.daemon_uid,
    };
    match launch::launch(&launch, &ctx) {
        Ok(started) => {
            let pid = started.pid;
            info!(job = %job_id, pid, user = %launch.user, "batch script started");
            let after = daemon.jobs().started(job_id, pid, pid);
            tokio::spawn(watch_job(daemon.clone(), job_id, started));
            if let AfterStart::Terminate(kill_wait) = after {
                terminate(daemon, job_id, pid, pid, kill_wait);
            }
            (NodeResponse::Ok, None)
        }
        Err(LaunchError::Refused(msg)) => {
            daemon.jobs().abort_launch(job_id);
            warn!(job = %job_id, "launch refused: {msg}");
            (failed(msg), None)
        }
        Err(LaunchError::StartFailed(msg)) => {
            daemon.jobs().abort_launch(job_id);
            warn!(job = %job_id, "launch failed: {msg}");
            let after: After = Box::new(move |daemon: Arc<Daemon>| {
                start_report(daemon, job_id, ExitCode { code: 1, signal: 0 }, Some(msg));
            });
            (NodeResponse::Ok, Some(after))
        }
    }
}

/// Reaps the batch script, kills what is left of its process group (the
/// batch step ends with its script), removes the spool directory and
/// reports the end.
async fn watch_job(daemon: Arc<Daemon>, job_id: JobId, started: launch::Started) {
    let launch::Started {
        pid,
        mut child,
        job_dir,
    } = started;
    let exit = match child.wait().await {
        Ok(status) => ExitCode::from_wait_status(status.into_raw()),
        Err(e) => {
            warn!(job = %job_id, "cannot wait for the batch script: {e}");
            ExitCode { code: 1, signal: 0 }
        }
    };
    signal_group(pid, Signal::SIGKILL);
    daemon.jobs().finished(job_id, pid);
    remove_job_dir(job_dir);
    info!(job = %job_id, "batch script ended with {exit}");
    start_report(daemon.clone(), job_id, exit, None);
    daemon.progress.notify_waiters();
}

fn remove_job_dir(dir: PathBuf) {
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        if e.kind() != std::io::ErrorKind::NotFound {
            warn!("cannot remove {}: {e}", dir.display());
        }
    }
}

/// Reports a job's end to the controller in the background, retrying until
/// it answers.
fn start_report(daemon: Arc<Daemon>, job_id: JobId, exit: ExitCode, launch_failed: Option<String>) {
    daemon.pending_reports.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        let request = CtldRequest::JobExited {
            job_id,
            node: daemon.setup.node_name.clone(),
            exit,
            launch_failed,
        };
        match call_until_answered(&daemon, || request.clone(), "job end").await {
            CtldResponse::Ok => debug!(job = %job_id, "end reported"),
            other => warn!(job = %job_id, "controller refused the job end report: {other:?}"),
        }
        daemon.pending_reports.fetch_sub(1, Ordering::SeqCst);
        daemon.progress.notify_waiters();
    });
}

/// Registers with the controller, retrying until it answers Ok.
async fn register(daemon: Arc<Daemon>) {
    loop {
        let make = || {
            let mut reg = daemon.setup.registration.clone();
            reg.free_memory = crate::hw::free_memory_mb();
            reg.cpu_load = crate::hw::load_average();
            reg.running_jobs = daemon.jobs().job_ids();
            CtldRequest::RegisterNode(reg)
        };
        match call_until_answered(&daemon, make, "registration").await {
            CtldResponse::Ok => {
                info!("registered with the controller");
                return;
            }
            other => {
                warn!("controller refused the registration: {other:?}; retrying");
                tokio::time::sleep(BACKOFF_MAX).await;
            }
        }
    }
}

/// Sends a request to the controller (the primary, then the backups in
/// turn) until one answers, with capped exponential backoff.
async fn call_until_answered(
    daemon: &Daemon,
    mut make: impl FnMut() -> CtldRequest,
    what: &str,
) -> CtldResponse {
    let addrs = &daemon.setup.ctld_addrs;
    let mut delay = BACKOFF_MIN;
    let mut attempt: usize = 0;
    loop {
        if let Some(addr) = addrs.get(attempt % addrs.len().max(1)) {
            match rpc::call::<_, CtldResponse>(
                addr,
                daemon.setup.identity.clone(),
                make(),
                CTLD_TIMEOUT,
            )
            .await
            {
                Ok(answer) => return answer,
                Err(e) if attempt == 0 || delay == BACKOFF_MAX => {
                    warn!("{what}: controller at {addr} did not answer: {e}; retrying")
                }
                Err(e) => debug!("{what}: controller at {addr} did not answer: {e}"),
            }
        }
        attempt += 1;
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(BACKOFF_MAX);
    }
}
