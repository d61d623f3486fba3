//! The one door into the daemons for the commands (and later the REST API):
//! finds the controller from `slurm.conf`, says who is calling (with a
//! credential from crate `auth` that proves it), and makes typed requests.
//!
//! Blocking on purpose: every command makes a handful of requests and exits,
//! so a runtime would only add start-up time.
#![warn(missing_docs)]

use proto::{CtldRequest, CtldResponse, Identity, JobList, NodeInfo, PartitionInfo, SlurmError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a command waits for the controller.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a request did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No slurm.conf could be found.
    #[error(
        "could not find slurm.conf: set SLURM_CONF, or start a local cluster with `muster up`"
    )]
    NoConfig,
    /// slurm.conf is broken.
    #[error(transparent)]
    Config(#[from] conf::ConfError),
    /// The controller could not be reached.
    #[error("Unable to contact slurm controller (connect failure)")]
    Unreachable(#[source] rpc::RpcError),
    /// The controller answered with a refusal.
    #[error("{}", .0.as_slurm_str())]
    Refused(SlurmError),
    /// The controller answered with something unexpected.
    #[error("Unexpected message received")]
    Unexpected,
    /// No credential could be made for the request (no readable key and
    /// no node daemon socket, or munged is down).
    #[error("Protocol authentication error: {0}")]
    Credential(#[source] auth::AuthError),
}

/// Where `muster up` keeps its cluster when `MUSTER_STATE_DIR` is unset:
/// `$XDG_STATE_HOME/muster` or `~/.local/state/muster`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MUSTER_STATE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("muster");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".local/state/muster")
}

/// The slurm.conf a command uses, in Slurm's order: `SLURM_CONF`, then
/// `/etc/slurm/slurm.conf`; muster adds the local cluster of `muster up`.
pub fn find_config() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SLURM_CONF") {
        return Some(PathBuf::from(p));
    }
    let etc = Path::new("/etc/slurm/slurm.conf");
    if etc.exists() {
        return Some(etc.to_path_buf());
    }
    let local = default_state_dir().join("slurm.conf");
    local.exists().then_some(local)
}

/// The calling process's identity.
pub fn current_identity() -> Identity {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    Identity {
        uid: uid.as_raw(),
        gid: gid.as_raw(),
        user,
        host,
    }
}

/// Seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A connection target plus the caller's identity.
pub struct Client {
    addrs: Vec<String>,
    identity: Identity,
    config: conf::Config,
    /// Connections that answered, for the next calls (one per concurrent
    /// caller): (index in `addrs`, connection).
    idle: std::sync::Mutex<Vec<(usize, rpc::Conn)>>,
    /// The signer this process makes its own credentials with, loaded at
    /// the first request (`None` inside: it cannot, and asks the node
    /// daemon's socket for each one).
    signer: std::sync::OnceLock<Option<auth::Signer>>,
}

/// How many requests [`Client::call_pipelined`] has in flight on its
/// connection at most (the controller reads ahead up to 64).
pub const PIPELINE_WINDOW: usize = 32;

/// How a request travels: submissions in binary (rpc::Encoding::Binary),
/// the controller being of this build and a job description with its
/// environment the one request sent in bulk; the rest as JSON.
fn encoding_for(req: &CtldRequest) -> rpc::Encoding {
    if matches!(req, CtldRequest::Submit(_)) {
        rpc::Encoding::Binary
    } else {
        rpc::Encoding::Json
    }
}

/// An answer as a result: refusals are errors.
fn answer(resp: CtldResponse) -> Result<CtldResponse, ClientError> {
    match resp {
        CtldResponse::Error(e) => Err(ClientError::Refused(e)),
        resp => Ok(resp),
    }
}

/// Fills `results` up to `n`: `e` for the first request not answered,
/// and for the ones after it (not sent, or sent and not answered) the same
/// failure.
fn fail_rest(results: &mut Vec<Result<CtldResponse, ClientError>>, n: usize, e: ClientError) {
    let text = e.to_string();
    if results.len() < n {
        results.push(Err(e));
    }
    while results.len() < n {
        results.push(Err(ClientError::Unreachable(rpc::RpcError::Io(
            std::io::Error::other(text.clone()),
        ))));
    }
}

/// A connection unused for longer is not reused: the controller drops idle
/// connections after `rpc::IO_TIMEOUT`, and a request must never race
/// with that.
const REUSE_WITHIN: Duration = Duration::from_secs(5);

impl Client {
    /// Finds slurm.conf and reads the controller's address from it.
    pub fn from_env() -> Result<Client, ClientError> {
        Client::from_env_as(current_identity())
    }

    /// [`Client::from_env`] for a caller that looked up its identity
    /// already (`current_identity` reads the passwd database).
    pub fn from_env_as(identity: Identity) -> Result<Client, ClientError> {
        let path = find_config().ok_or(ClientError::NoConfig)?;
        let loaded = conf::load(&path)?;
        Ok(Client::new(loaded.config, identity))
    }

    /// A client for `config`'s controller, calling as `identity`.
    pub fn new(config: conf::Config, identity: Identity) -> Client {
        let port = config.slurmctld_port;
        let addrs = config
            .slurmctld_host
            .iter()
            .map(|h| format!("{}:{}", h.addr.as_deref().unwrap_or(&h.name), port))
            .collect();
        Client {
            addrs,
            identity,
            config,
            idle: std::sync::Mutex::new(Vec::new()),
            signer: std::sync::OnceLock::new(),
        }
    }

    /// The configuration this client read.
    pub fn config(&self) -> &conf::Config {
        &self.config
    }

    /// Who this client says it is.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// A fresh credential for one request (each is accepted once):
    /// signed with the cluster key when this process can read it, else
    /// from the local node daemon, or from munged (crate `auth`).
    pub fn credential(&self) -> Result<String, ClientError> {
        let signer = self
            .signer
            .get_or_init(|| auth::client_signer(&self.config).ok());
        match signer {
            Some(s) => s.sign(&self.identity, now()),
            None => auth::credential_for_client(&self.config, &self.identity, now()),
        }
        .map_err(ClientError::Credential)
    }

    /// Sends one request to the first controller that answers.
    pub fn call(&self, req: CtldRequest) -> Result<CtldResponse, ClientError> {
        let reused = self.reused();
        let enc = encoding_for(&req);
        if let Some((i, mut conn)) = reused {
            let credential = self.credential()?;
            // A connection the controller has closed fails before the
            // request is read; the request then goes on a fresh one below.
            if let Ok(resp) = conn.call_enc(self.identity.clone(), Some(credential), &req, enc) {
                self.keep(i, conn);
                return match resp {
                    CtldResponse::Error(e) => Err(ClientError::Refused(e)),
                    resp => Ok(resp),
                };
            }
        }
        let mut last = None;
        for (i, addr) in self.addrs.iter().enumerate() {
            let credential = self.credential()?;
            let answer = rpc::Conn::connect(addr, TIMEOUT).and_then(|mut conn| {
                let resp = conn.call_enc(self.identity.clone(), Some(credential), &req, enc)?;
                self.keep(i, conn);
                Ok(resp)
            });
            match answer {
                Ok(CtldResponse::Error(e)) => return Err(ClientError::Refused(e)),
                Ok(resp) => return Ok(resp),
                Err(e) => last = Some(e),
            }
        }
        Err(ClientError::Unreachable(
            last.unwrap_or(rpc::RpcError::Timeout),
        ))
    }

    /// Sends `reqs` on one kept connection with up to [`PIPELINE_WINDOW`]
    /// of them in flight at once (several requests in one write, their
    /// answers read back in order), and returns one result per request,
    /// in order. Each request carries its own credential, checked by the
    /// controller as any other. A request whose answer did not come (the
    /// connection failed) is an error and may or may not have been
    /// carried out, as with [`Client::call`]; the requests after it are
    /// not sent.
    ///
    /// Meant for programs that make many requests (a workflow engine
    /// submitting a batch): the commands make one request each.
    pub fn call_pipelined(&self, reqs: &[CtldRequest]) -> Vec<Result<CtldResponse, ClientError>> {
        let mut results = Vec::with_capacity(reqs.len());
        let mut frames = Vec::with_capacity(2048 * PIPELINE_WINDOW.min(reqs.len()));
        let mut conn: Option<(usize, rpc::Conn, bool)> = self.reused().map(|(i, c)| (i, c, true));
        for chunk in reqs.chunks(PIPELINE_WINDOW) {
            let mut tries = 0;
            let answers = loop {
                tries += 1;
                let (i, mut c, reused) = match conn.take() {
                    Some(c) => c,
                    None => match self.connect() {
                        Ok((i, c)) => (i, c, false),
                        Err(e) => {
                            fail_rest(&mut results, reqs.len(), e);
                            return results;
                        }
                    },
                };
                frames.clear();
                for req in chunk {
                    let credential = match self.credential() {
                        Ok(c) => c,
                        Err(e) => {
                            fail_rest(&mut results, reqs.len(), e);
                            return results;
                        }
                    };
                    let env = rpc::signed_envelope(self.identity.clone(), Some(credential), req);
                    if let Err(e) = rpc::append_frame(
                        &mut frames,
                        &env,
                        encoding_for(req),
                        proto::MAX_FRAME_BYTES,
                    ) {
                        fail_rest(&mut results, reqs.len(), ClientError::Unreachable(e));
                        return results;
                    }
                }
                let (answers, err) = c.call_many::<CtldResponse>(&frames, chunk.len());
                match err {
                    None => {
                        conn = Some((i, c, reused));
                        break answers;
                    }
                    // A kept connection the controller had closed fails
                    // before any request is read: once more on a new one.
                    Some(_) if reused && answers.is_empty() && tries == 1 => continue,
                    Some(e) => {
                        for resp in answers {
                            results.push(answer(resp));
                        }
                        fail_rest(&mut results, reqs.len(), ClientError::Unreachable(e));
                        return results;
                    }
                }
            };
            results.extend(answers.into_iter().map(answer));
        }
        if let Some((i, c, _)) = conn {
            self.keep(i, c);
        }
        results
    }

    /// A kept connection recent enough to use.
    fn reused(&self) -> Option<(usize, rpc::Conn)> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|(_, c)| c.idle() < REUSE_WITHIN);
        idle.pop()
    }

    /// A new connection to the first controller that accepts.
    fn connect(&self) -> Result<(usize, rpc::Conn), ClientError> {
        let mut last = None;
        for (i, addr) in self.addrs.iter().enumerate() {
            match rpc::Conn::connect(addr, TIMEOUT) {
                Ok(c) => return Ok((i, c)),
                Err(e) => last = Some(e),
            }
        }
        Err(ClientError::Unreachable(
            last.unwrap_or(rpc::RpcError::Timeout),
        ))
    }

    fn keep(&self, i: usize, conn: rpc::Conn) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // Enough for the callers running at once; more would only idle.
        if idle.len() < 64 {
            idle.push((i, conn));
        }
    }

    /// Sends a request whose answer is a plain `Ok`.
    pub fn call_ok(&self, req: CtldRequest) -> Result<(), ClientError> {
        match self.call(req)? {
            CtldResponse::Ok => Ok(()),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// Every job the controller holds.
    pub fn jobs(&self) -> Result<JobList, ClientError> {
        match self.call(CtldRequest::ListJobs)? {
            CtldResponse::Jobs(list) => Ok(list),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// The jobs `filter` selects.
    pub fn query_jobs(&self, filter: proto::JobFilter) -> Result<JobList, ClientError> {
        match self.call(CtldRequest::QueryJobs(filter))? {
            CtldResponse::Jobs(list) => Ok(list),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// The jobs `filter` selects, as compact rows (`filter.rows` and
    /// `filter.brief` are set here).
    pub fn query_job_rows(
        &self,
        mut filter: proto::JobFilter,
    ) -> Result<proto::JobRows, ClientError> {
        filter.brief = true;
        filter.rows = true;
        match self.call(CtldRequest::QueryJobs(filter))? {
            CtldResponse::JobRows(rows) => Ok(rows),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// Every node.
    pub fn nodes(&self) -> Result<Vec<NodeInfo>, ClientError> {
        match self.call(CtldRequest::ListNodes)? {
            CtldResponse::Nodes(list) => Ok(list),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// Every partition.
    pub fn partitions(&self) -> Result<Vec<PartitionInfo>, ClientError> {
        match self.call(CtldRequest::ListPartitions)? {
            CtldResponse::Partitions(list) => Ok(list),
            _ => Err(ClientError::Unexpected),
        }
    }
}

/// The stream between srun and the step supervisors on the nodes (task
/// output, task ends, stdin, signals, PMI fences): the same framing as
/// every other message, without credentials (the step's token, checked by
/// srun in the first message, proves the peer).
pub mod stepio {
    use proto::{SrunToStepd, StepdToSrun};

    /// Sends one message to a step supervisor.
    pub fn send(w: &mut impl std::io::Write, msg: SrunToStepd) -> Result<(), rpc::RpcError> {
        rpc::write_frame(w, &rpc::envelope(super::current_identity(), msg))
    }

    /// Reads one message from a step supervisor.
    pub fn recv(r: &mut impl std::io::Read) -> Result<StepdToSrun, rpc::RpcError> {
        rpc::read_frame::<_, StepdToSrun>(r).map(|e| e.body)
    }
}
