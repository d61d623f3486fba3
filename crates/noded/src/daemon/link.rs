//! The daemon's link to the controller: the requests it sends (registration,
//! job, step and extern step ends), each signed with a credential of its
//! own and sent again until answered, over kept connections.
//!
//! [`NodeLink`] is the handle the extern step holders (`holder`) and srun's
//! steps (`steps`) get instead of the whole daemon: the link, and what
//! they need to know of the node to start and report their processes.

use crate::daemon::setup::{self, NodeAuth, NodeSetup};
use crate::gather::GatherSettings;
use proto::{CtldRequest, CtldResponse, Envelope, Identity};
use rpc::RpcError;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tracing::{debug, warn};

/// First retry delay towards the controller.
pub const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Longest retry delay towards the controller.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long one request to the controller may take.
pub const CTLD_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to the controller between two requests.
struct IdleConn {
    addr: String,
    stream: TcpStream,
    since: Instant,
}

/// A connection to the controller is used again only after less silence
/// than this (the controller closes one after `rpc::IO_TIMEOUT`, 30 s).
const CTLD_CONN_REUSE: Duration = Duration::from_secs(10);
/// At most this many such connections are kept.
const CTLD_CONNS_KEPT: usize = 16;

/// The controller's addresses and the daemon's identity and signer, with
/// the connections kept between two requests.
pub struct CtldLink {
    /// Controller addresses (`host:port`), primary first.
    addrs: Vec<String>,
    identity: Identity,
    auth: Arc<NodeAuth>,
    /// Connections to the controller that answered a request and may carry
    /// the next (`call_until_answered`).
    conns: Mutex<Vec<IdleConn>>,
}

impl CtldLink {
    /// The link to the controllers `setup` names, with no connection yet.
    pub fn new(setup: &NodeSetup) -> CtldLink {
        CtldLink {
            addrs: setup.ctld_addrs.clone(),
            identity: setup.identity.clone(),
            auth: setup.auth.clone(),
            conns: Mutex::default(),
        }
    }

    /// A credential of the daemon's own, for a request to the controller
    /// (or the answer that opens a session).
    pub fn credential(&self) -> Result<String, auth::AuthError> {
        let auth = &self.auth;
        let sign = || auth.signer.sign(&self.identity, setup::now());
        if auth.blocks() {
            tokio::task::block_in_place(sign)
        } else {
            sign()
        }
    }

    /// Sends a request to the controller (the primary, then the backups in
    /// turn) until one answers, with capped exponential backoff.
    pub async fn call_until_answered(
        &self,
        mut make: impl FnMut() -> CtldRequest,
        what: &str,
    ) -> CtldResponse {
        let addrs = &self.addrs;
        let mut delay = BACKOFF_MIN;
        let mut attempt: usize = 0;
        loop {
            let credential = match self.credential() {
                Ok(c) => Some(c),
                Err(e) => {
                    warn!("{what}: cannot make a credential: {e}; retrying");
                    None
                }
            };
            if let (Some(addr), Some(credential)) =
                (addrs.get(attempt % addrs.len().max(1)), credential)
            {
                let frame = rpc::signed_envelope(self.identity.clone(), Some(credential), make());
                match self.call(addr, &frame).await {
                    Ok(answer) => return answer,
                    // A kept connection that turned out closed: again at once on
                    // a new one, with a new credential (the controller may have
                    // read this one, and would refuse it as a replay).
                    Err(CtldCallError::Stale) => continue,
                    Err(CtldCallError::Rpc(e)) if attempt == 0 || delay == BACKOFF_MAX => {
                        warn!("{what}: controller at {addr} did not answer: {e}; retrying")
                    }
                    Err(CtldCallError::Rpc(e)) => {
                        debug!("{what}: controller at {addr} did not answer: {e}")
                    }
                }
            }
            attempt += 1;
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(BACKOFF_MAX);
        }
    }

    /// One request to the controller at `addr`: on a connection that carried
    /// an earlier one if one is idle (a report costs no new connection), else
    /// on a new one. The request carries its own credential either way, so
    /// the controller checks each as before. A reused connection that turns
    /// out closed is `Stale`: the caller sends the request again with a new
    /// credential (the same one, sent again, would be refused as a replay
    /// where the controller had read it).
    async fn call(
        &self,
        addr: &str,
        frame: &Envelope<CtldRequest>,
    ) -> Result<CtldResponse, CtldCallError> {
        let idle = {
            let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
            conns.retain(|c| c.since.elapsed() < CTLD_CONN_REUSE);
            conns
                .iter()
                .rposition(|c| c.addr == addr)
                .map(|i| conns.swap_remove(i))
        };
        if let Some(IdleConn { stream, .. }) = idle {
            match exchange_ctld(stream, frame).await {
                Ok((answer, stream)) => {
                    self.keep(addr, stream);
                    return Ok(answer);
                }
                Err(e) => {
                    debug!("connection to the controller at {addr} closed ({e}); opening another");
                    return Err(CtldCallError::Stale);
                }
            }
        }
        let fut = async {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            exchange_ctld(stream, frame).await
        };
        let (answer, stream) = tokio::time::timeout(CTLD_TIMEOUT, fut)
            .await
            .unwrap_or(Err(RpcError::Timeout))
            .map_err(CtldCallError::Rpc)?;
        self.keep(addr, stream);
        Ok(answer)
    }

    fn keep(&self, addr: &str, stream: TcpStream) {
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if conns.len() < CTLD_CONNS_KEPT {
            conns.push(IdleConn {
                addr: addr.to_string(),
                stream,
                since: Instant::now(),
            });
        }
    }
}

/// Why `CtldLink::call` got no answer.
enum CtldCallError {
    /// The kept connection it used turned out closed: the caller sends the
    /// request again at once, signed anew.
    Stale,
    /// A new connection got no answer.
    Rpc(RpcError),
}

async fn exchange_ctld(
    mut stream: TcpStream,
    frame: &Envelope<CtldRequest>,
) -> Result<(CtldResponse, TcpStream), RpcError> {
    let fut = async {
        rpc::write_frame_async(&mut stream, frame).await?;
        let answer: Envelope<CtldResponse> =
            rpc::read_frame_async(&mut stream, CTLD_TIMEOUT).await?;
        Ok::<_, RpcError>(answer.body)
    };
    let answer = tokio::time::timeout(CTLD_TIMEOUT, fut)
        .await
        .unwrap_or(Err(RpcError::Timeout))?;
    Ok((answer, stream))
}

/// What the extern step holders and srun's steps need of the daemon: the
/// controller link to report their ends on, and this node's name, files,
/// gathering settings and supervisor program.
pub struct NodeLink {
    /// The controller.
    pub ctld: CtldLink,
    /// This node's NodeName.
    pub node_name: String,
    /// The absolute slurm.conf path (`SLURM_CONF` in jobs).
    pub conf_path: PathBuf,
    /// The spool directory.
    pub spool_dir: PathBuf,
    /// JobAcctGatherType and JobAcctGatherFrequency.
    pub gather: GatherSettings,
    /// The node's GPUs (gres.conf) for its steps' tasks.
    pub gpus: crate::gpus::GpuSettings,
    /// Where jobs' cgroups are, when jobs are confined.
    pub cgroup: Option<crate::cgroup::CgroupSettings>,
    /// slurm.conf `TaskPlugin` has `task/affinity`.
    pub task_affinity: bool,
    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of this
    /// node (`conf::Config::topology_addr`); None: its name and `node`.
    pub topology_addr: Option<(String, String)>,
    /// slurm.conf's TaskProlog and TaskEpilog, for the steps' supervisors.
    pub task_scripts: (Option<String>, Option<String>),
    /// Threads per core of the node's CPU ids (`NodeSetup::cpu_threads`).
    pub cpu_threads: u32,
    /// `TaskPluginParam`'s binding (`NodeSetup::default_cpu_bind`).
    pub default_cpu_bind: Option<String>,
    /// The daemon's effective uid: only root starts processes for others.
    pub daemon_uid: u32,
    /// Runs `noded --step-tasks`.
    pub stepd_program: PathBuf,
    /// The daemon's `progress`, signalled when a step's tasks end.
    pub progress: Arc<Notify>,
    /// Prolog and Epilog, and the jobs whose Prolog ran here
    /// (`daemon::scripts`).
    pub scripts: crate::daemon::scripts::NodeScripts,
}
