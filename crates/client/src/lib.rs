//! The one door into the daemons for the commands (and later the REST API):
//! finds the controller from `slurm.conf`, says who is calling (with a
//! credential from crate `auth` that proves it), and makes typed requests.
//!
//! Blocking on purpose: every command makes a handful of requests and exits,
//! so a runtime would only add start-up time.
//!
//! # Performance notes: kept connections, resent submissions
//!
//! A `Client` keeps the connections that answered for its next calls, and the
//! signer it loaded at its first request (the cluster key or libmunge, read
//! once, not per request); `Client::call_pipelined` keeps up to 32 requests in
//! flight on one connection. A kept connection's requests travel in a session
//! authenticated once (`CtldRequest::OpenSession`), so no credential is signed,
//! verified or remembered per request.
//!
//! A request over the controller's limit (`proto::MAX_REQUEST_BYTES`, 16 MiB)
//! is not sent (`ClientError::TooLarge`). `Client::call` gives each submission
//! a random token (`JobDesc::submit_token`) and, when its connection fails
//! after it may have been sent, sends it again with that token until an answer
//! comes or `TIMEOUT` passes: the controller answers a token it has seen with
//! the job it made, so a lost answer is neither a lost nor a doubled job
//! (docs/limits.md).
//!
//! # Sessions
//!
//! The client library's kept connections to the controller are authenticated
//! once, as the controller's kept connections to the node daemons are. On a
//! connection kept from an earlier call,
//! `client::Client` first sends `CtldRequest::OpenSession` with its credential
//! (in the same write as the first request after it); the controller verifies
//! it as any request's (fresh, single-use nonce; HMAC or MUNGE), and the
//! identity it proves is the caller of every later request on the connection,
//! for every check exactly as a per-request credential's (a job's owner, who
//! may cancel what, the daemons-only requests). Later requests are
//! `CtldRequest::InSession { seq, request }` without a credential, numbered
//! from 1; one out of order, claiming a uid other than the session's, on a
//! connection without a session, or a second `OpenSession`, is refused
//! (`ProtocolAuthentication`) and closes the connection (`ctld::read_request`).
//!
//! A request with a credential of its own is still accepted on any connection,
//! so older clients and the commands' single calls (a new connection, one
//! request) work as before. What a session does not cover is the same as for
//! node connections: bytes injected into an established TCP connection (no
//! per-message MAC). What it removes is a credential signed and verified per
//! request and a nonce per request in the replay cache, which bounded a
//! sustained rate at about 2,900 requests/s (docs/limits.md).
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
    /// The request is larger than the controller reads
    /// ([`proto::MAX_REQUEST_BYTES`]), so it was not sent: the controller
    /// would refuse it. Commands print it as it is, sbatch names the
    /// script when that is what is too large.
    #[error("Request too large ({bytes} bytes, limit {} MiB)", limit >> 20)]
    TooLarge {
        /// The request's encoded size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// No credential could be made for the request (no readable key and
    /// no node daemon socket, or munged is down).
    #[error("Protocol authentication error: {0}")]
    Credential(#[source] auth::AuthError),
}

#[cfg(test)]
mod tests;

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
/// `/etc/slurm/slurm.conf`, then the configless cache a node daemon
/// started with `--conf-server` keeps (`proto::CONF_CACHE_LINK`, as
/// Slurm's clients read `/run/slurm/conf`): so a command in a job finds it
/// even where a workflow tool stripped `SLURM_CONF`. muster adds the local
/// cluster of `muster up`.
pub fn find_config() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SLURM_CONF") {
        return Some(PathBuf::from(p));
    }
    let etc = Path::new("/etc/slurm/slurm.conf");
    if etc.exists() {
        return Some(etc.to_path_buf());
    }
    let cached = Path::new(proto::CONF_CACHE_LINK).join("slurm.conf");
    if cached.exists() {
        return Some(cached);
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
    /// caller).
    idle: std::sync::Mutex<Vec<Kept>>,
    /// The signer this process makes its own credentials with, loaded at
    /// the first request (`None` inside: it cannot, and asks the node
    /// daemon's socket for each one).
    signer: std::sync::OnceLock<Option<auth::Signer>>,
}

/// A connection that answered, kept for the next calls.
struct Kept {
    conn: rpc::Conn,
    /// With a session open on it (`CtldRequest::OpenSession`), the number
    /// its next request carries: requests on it then carry no credential
    /// of their own (ARCHITECTURE.md, "Client sessions").
    next_seq: Option<u64>,
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

/// A frame that could not be built: too large for the controller, or
/// (never in practice) not encodable.
fn frame_error(e: rpc::RpcError) -> ClientError {
    match e {
        rpc::RpcError::TooLarge { len, max } => ClientError::TooLarge {
            bytes: u64::from(len),
            limit: u64::from(max),
        },
        e => ClientError::Unreachable(e),
    }
}

/// The first wait before a submission whose answer was lost is sent
/// again; each later wait doubles, up to [`RETRY_MAX_DELAY`].
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(100);

/// The longest wait between two tries of a submission.
const RETRY_MAX_DELAY: Duration = Duration::from_secs(2);

/// A try of a request that got no answer: the failure, and whether the
/// request may have reached the controller (it was being written or
/// answered when the connection failed).
struct NoAnswer {
    error: ClientError,
    maybe_sent: bool,
}

impl NoAnswer {
    fn before_sending(error: ClientError) -> NoAnswer {
        NoAnswer {
            error,
            maybe_sent: false,
        }
    }
}

/// A new submission token: 128 random bits (`proto::SubmitToken`).
fn new_token() -> Result<String, ClientError> {
    let mut bytes = [0u8; 16];
    auth::random_bytes(&mut bytes).map_err(ClientError::Credential)?;
    Ok(proto::SubmitToken::from_bytes(bytes).text())
}

/// Gives a submission its token (unless the caller gave one) and says
/// whether `req` may be sent again after its answer was lost: only a
/// submission with a token, which the controller answers with the job it
/// already made instead of making another (`--test-only` makes nothing).
fn give_token(req: &mut CtldRequest) -> Result<bool, ClientError> {
    match req {
        CtldRequest::Submit(desc) if !desc.test_only => {
            if desc.submit_token.is_none() {
                desc.submit_token = Some(new_token()?);
            }
            Ok(true)
        }
        // A front-end's submission for a user is resent the same way.
        CtldRequest::OnBehalf { request, .. } => give_token(request),
        _ => Ok(false),
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

    /// Sends one request to the first controller that answers. On a
    /// connection kept from an earlier call the request travels in the
    /// connection's session (opened with this call's credential if it has
    /// none yet); on a new connection it carries its own credential, as a
    /// command's single call does.
    ///
    /// A request larger than the controller reads is not sent
    /// ([`ClientError::TooLarge`]). A submission (`CtldRequest::Submit`,
    /// not `--test-only`) gets a token ([`proto::JobDesc::submit_token`])
    /// unless it has one; when its connection fails after it may have
    /// been sent (the controller may have made the job and died before
    /// answering), it is sent again with the same token, on a new
    /// connection, waiting 0.1 s, then twice as long each time up to 2 s,
    /// until an answer comes or [`TIMEOUT`] has passed since the first
    /// try: the controller answers a token it has seen with the job it
    /// made, so the caller gets that job's id, never a second job. A
    /// controller that cannot be reached at the first try is reported at
    /// once, as before.
    pub fn call(&self, mut req: CtldRequest) -> Result<CtldResponse, ClientError> {
        let again = give_token(&mut req)?;
        let first_try = std::time::Instant::now();
        let mut delay = RETRY_FIRST_DELAY;
        let mut maybe_sent = false;
        loop {
            // A try after the first waits only for what is left of the
            // first one's timeout.
            let wait = match maybe_sent {
                false => TIMEOUT,
                true => TIMEOUT
                    .saturating_sub(first_try.elapsed())
                    .max(RETRY_MAX_DELAY),
            };
            match self.call_once(&req, wait) {
                Ok(resp) => return answer(resp),
                Err(failed) => {
                    maybe_sent |= failed.maybe_sent;
                    let unanswered = matches!(failed.error, ClientError::Unreachable(_));
                    if !(again && maybe_sent && unanswered)
                        || first_try.elapsed() + delay >= TIMEOUT
                    {
                        return Err(failed.error);
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(RETRY_MAX_DELAY);
                }
            }
        }
    }

    /// One try of [`Client::call`]: the answer (refusals included), or
    /// why none came. A new connection waits up to `timeout` to connect,
    /// and for each read and write.
    fn call_once(&self, req: &CtldRequest, timeout: Duration) -> Result<CtldResponse, NoAnswer> {
        // A kept connection that failed without an answer was usually
        // closed by the controller before it read the request, but the
        // controller may also have read it and died: it may have been sent.
        let mut maybe_sent = false;
        if let Some(mut kept) = self.reused() {
            maybe_sent = true;
            // A connection the controller has closed fails before the
            // request is read; the request then goes on a fresh one below.
            if let Some(result) = self.call_in_session(&mut kept, req) {
                // A session opened and answered: the connection serves on.
                if result.is_ok() && kept.next_seq.is_some() {
                    self.keep(kept);
                }
                return result.map_err(|error| NoAnswer {
                    maybe_sent: matches!(error, ClientError::Unreachable(_)),
                    error,
                });
            }
        }
        let enc = encoding_for(req);
        let mut last = None;
        for addr in &self.addrs {
            let credential = self.credential().map_err(NoAnswer::before_sending)?;
            let mut frame = Vec::with_capacity(2048);
            let env = rpc::signed_envelope(self.identity.clone(), Some(credential), req);
            rpc::append_frame(&mut frame, &env, enc, proto::MAX_REQUEST_BYTES)
                .map_err(|e| NoAnswer::before_sending(frame_error(e)))?;
            let mut conn = match rpc::Conn::connect(addr, timeout) {
                Ok(conn) => conn,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            maybe_sent = true;
            let (mut answers, err) = conn.call_many::<CtldResponse>(&frame, 1);
            let answer = match (answers.pop(), err) {
                (Some(resp), None) => rest_of_parts(&mut conn, resp),
                (_, e) => Err(e.unwrap_or(rpc::RpcError::Timeout)),
            };
            match answer {
                Ok(resp) => {
                    // Kept only with the usual timeout (a retry's is
                    // shorter, and would then cut later calls short).
                    if timeout == TIMEOUT {
                        self.keep(Kept {
                            conn,
                            next_seq: None,
                        });
                    }
                    return Ok(resp);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(NoAnswer {
            error: ClientError::Unreachable(last.unwrap_or(rpc::RpcError::Timeout)),
            maybe_sent,
        })
    }

    /// Appends the frame that opens a session (with a fresh credential)
    /// when `kept` has none, and returns the number the first request
    /// after it carries.
    fn open_frame(&self, kept: &Kept, frames: &mut Vec<u8>) -> Result<u64, ClientError> {
        if let Some(seq) = kept.next_seq {
            return Ok(seq);
        }
        let env = rpc::signed_envelope(
            self.identity.clone(),
            Some(self.credential()?),
            CtldRequest::OpenSession,
        );
        rpc::append_frame(frames, &env, rpc::Encoding::Json, proto::MAX_REQUEST_BYTES)
            .map_err(frame_error)?;
        Ok(1)
    }

    /// Appends `req` as request number `seq` of a session.
    fn session_frame(
        &self,
        frames: &mut Vec<u8>,
        seq: u64,
        req: &CtldRequest,
    ) -> Result<(), ClientError> {
        let body = proto::InSessionRef { seq, request: req };
        let env = rpc::envelope(self.identity.clone(), body);
        rpc::append_frame(frames, &env, encoding_for(req), proto::MAX_REQUEST_BYTES)
            .map_err(frame_error)
    }

    /// One request in `kept`'s session, opening it first if needed (both
    /// frames in one write). `None`: the connection failed before any
    /// answer came (the controller had closed it), so the request may go
    /// on a new connection. Afterwards `kept.next_seq` is set only where
    /// the connection may serve on.
    fn call_in_session(
        &self,
        kept: &mut Kept,
        req: &CtldRequest,
    ) -> Option<Result<CtldResponse, ClientError>> {
        let mut frames = Vec::with_capacity(2048);
        let opening = kept.next_seq.is_none();
        let built = self
            .open_frame(kept, &mut frames)
            .and_then(|seq| self.session_frame(&mut frames, seq, req).map(|()| seq));
        let seq = match built {
            Ok(seq) => seq,
            Err(e) => return Some(Err(e)),
        };
        let count = 1 + usize::from(opening);
        kept.next_seq = None;
        let (mut answers, err) = kept.conn.call_many::<CtldResponse>(&frames, count);
        if opening && !answers.is_empty() {
            // A refused opening closes the connection: that refusal is
            // the answer.
            match answers.remove(0) {
                CtldResponse::Ok => {}
                refusal => return Some(Ok(refusal)),
            }
        } else if answers.is_empty() {
            return None;
        }
        match (answers.pop(), err) {
            (Some(resp), None) => match rest_of_parts(&mut kept.conn, resp) {
                Ok(resp) => {
                    kept.next_seq = Some(seq + 1);
                    Some(Ok(resp))
                }
                Err(e) => Some(Err(ClientError::Unreachable(e))),
            },
            (_, e) => Some(Err(ClientError::Unreachable(
                e.unwrap_or(rpc::RpcError::Timeout),
            ))),
        }
    }

    /// Sends `reqs` on one kept connection with up to [`PIPELINE_WINDOW`]
    /// of them in flight at once (several requests in one write, their
    /// answers read back in order), and returns one result per request,
    /// in order. The requests travel in the connection's session (opened
    /// with one credential if it has none: the identity it proves is the
    /// caller of each request, and each carries the next number). A
    /// request whose answer did not come (the connection failed) is an
    /// error and may or may not have been carried out, as with
    /// [`Client::call`]; the requests after it are not sent.
    ///
    /// Meant for programs that make many requests (a workflow engine
    /// submitting a batch): the commands make one request each.
    pub fn call_pipelined(&self, reqs: &[CtldRequest]) -> Vec<Result<CtldResponse, ClientError>> {
        let mut results = Vec::with_capacity(reqs.len());
        let mut frames = Vec::with_capacity(2048 * PIPELINE_WINDOW.min(reqs.len()) + 512);
        let mut conn: Option<(Kept, bool)> = self.reused().map(|k| (k, true));
        for chunk in reqs.chunks(PIPELINE_WINDOW) {
            let mut tries = 0;
            let answers = loop {
                tries += 1;
                let (mut kept, reused) = match conn.take() {
                    Some(c) => c,
                    None => match self.connect() {
                        Ok(conn) => (
                            Kept {
                                conn,
                                next_seq: None,
                            },
                            false,
                        ),
                        Err(e) => {
                            fail_rest(&mut results, reqs.len(), e);
                            return results;
                        }
                    },
                };
                frames.clear();
                let opening = kept.next_seq.is_none();
                let built = self.open_frame(&kept, &mut frames).and_then(|first| {
                    for (k, req) in chunk.iter().enumerate() {
                        self.session_frame(&mut frames, first + k as u64, req)?;
                    }
                    Ok(first)
                });
                let first = match built {
                    Ok(first) => first,
                    Err(e) => {
                        fail_rest(&mut results, reqs.len(), e);
                        return results;
                    }
                };
                let count = chunk.len() + usize::from(opening);
                let (mut answers, err) = kept.conn.call_many::<CtldResponse>(&frames, count);
                if err.is_some() && answers.is_empty() && reused && tries == 1 {
                    // A kept connection the controller had closed fails
                    // before any request is read: once more on a new one.
                    continue;
                }
                if opening && !answers.is_empty() {
                    match answers.remove(0) {
                        CtldResponse::Ok => {}
                        refusal => {
                            let e = answer(refusal).err().unwrap_or(ClientError::Unexpected);
                            fail_rest(&mut results, reqs.len(), e);
                            return results;
                        }
                    }
                }
                match err {
                    None => {
                        kept.next_seq = Some(first + chunk.len() as u64);
                        conn = Some((kept, reused));
                        break answers;
                    }
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
        if let Some((kept, _)) = conn {
            self.keep(kept);
        }
        results
    }

    /// A kept connection recent enough to use.
    fn reused(&self) -> Option<Kept> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|k| k.conn.idle() < REUSE_WITHIN);
        idle.pop()
    }

    /// A new connection to the first controller that accepts.
    fn connect(&self) -> Result<rpc::Conn, ClientError> {
        let mut last = None;
        for addr in &self.addrs {
            match rpc::Conn::connect(addr, TIMEOUT) {
                Ok(c) => return Ok(c),
                Err(e) => last = Some(e),
            }
        }
        Err(ClientError::Unreachable(
            last.unwrap_or(rpc::RpcError::Timeout),
        ))
    }

    fn keep(&self, kept: Kept) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        // Enough for the callers running at once; more would only idle.
        if idle.len() < 64 {
            idle.push(kept);
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
        // Rows decoded while the controller builds the next ones.
        filter.stream = true;
        match self.call(CtldRequest::QueryJobs(filter))? {
            CtldResponse::JobRows(rows) => Ok(rows),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// Every node.
    pub fn nodes(&self) -> Result<Vec<NodeInfo>, ClientError> {
        match self.call(CtldRequest::ListNodes)? {
            CtldResponse::Nodes(mut list) => {
                // REBOOT_ISSUED travels beside the state, whose encoding
                // has no room for it (`proto::NodeInfo::reboot_issued`).
                for n in &mut list {
                    n.state.reboot_issued |= n.reboot_issued;
                }
                Ok(list)
            }
            _ => Err(ClientError::Unexpected),
        }
    }

    /// The recent runs of `HealthCheckProgram` the controller holds (the
    /// last few of each node, memory only), of one node or of every node:
    /// by node name, each node's oldest first.
    pub fn health_checks(
        &self,
        node: Option<&str>,
    ) -> Result<Vec<proto::health::HealthCheckRun>, ClientError> {
        match self.call(CtldRequest::HealthChecks {
            node: node.map(str::to_string),
        })? {
            CtldResponse::HealthChecks(runs) => Ok(runs),
            CtldResponse::Error(e) => Err(ClientError::Refused(e)),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// The processes of the jobs on one node daemon (`addr`: `host:port`;
    /// `req`: a `NodeRequest::ListPids`), asked of that daemon itself, as
    /// Slurm's `scontrol listpids` asks the local slurmd: the caller's own
    /// processes, every one for root or SlurmUser. (The one request the
    /// commands send a node daemon; the daemon refuses any other from them.)
    pub fn node_pids(
        &self,
        addr: &str,
        req: proto::NodeRequest,
    ) -> Result<Vec<proto::JobProcess>, ClientError> {
        let credential = self.credential()?;
        let answer: proto::NodeResponse =
            rpc::call_blocking(addr, self.identity.clone(), Some(credential), req, TIMEOUT)
                .map_err(ClientError::Unreachable)?;
        match answer {
            proto::NodeResponse::Pids(rows) => Ok(rows),
            _ => Err(ClientError::Unexpected),
        }
    }

    /// One request to a node daemon (`addr`: `host:port`), signed as this
    /// client: `sattach`'s `NodeRequest::Attach`. The daemon refuses the
    /// requests only the controller may send.
    pub fn node_call(
        &self,
        addr: &str,
        req: proto::NodeRequest,
    ) -> Result<proto::NodeResponse, ClientError> {
        let credential = self.credential()?;
        rpc::call_blocking(addr, self.identity.clone(), Some(credential), req, TIMEOUT)
            .map_err(ClientError::Unreachable)
    }

    /// Opens a watch stream (`req`: a `CtldRequest::Watch`, or one wrapped
    /// in `OnBehalf`) on a connection of its own and hands each batch to
    /// `each` (heartbeats included: empty batches every
    /// `proto::watch::WATCH_HEARTBEAT_SECS`) until `each` returns false
    /// (then Ok) or the stream fails (the controller stopped or dropped a
    /// watcher too slow to read). A refusal is `Refused`.
    pub fn watch(
        &self,
        req: CtldRequest,
        mut each: impl FnMut(proto::watch::WatchBatch) -> bool,
    ) -> Result<(), ClientError> {
        let (mut conn, first) = self.open_stream(&req, rpc::Encoding::Binary)?;
        // Three heartbeats missed: the controller is gone.
        let quiet = Duration::from_secs(3 * proto::watch::WATCH_HEARTBEAT_SECS);
        conn.set_read_timeout(quiet)
            .map_err(ClientError::Unreachable)?;
        let mut resp = first;
        loop {
            match resp {
                CtldResponse::WatchEvents(batch) => {
                    if !each(batch) {
                        return Ok(());
                    }
                }
                CtldResponse::Error(e) => return Err(ClientError::Refused(e)),
                _ => return Err(ClientError::Unexpected),
            }
            resp = conn
                .read_more::<CtldResponse>()
                .map_err(ClientError::Unreachable)?;
        }
    }

    /// A job listing in wire form (`req` a `QueryJobs` with
    /// `JobFilter::wire` and `stream`, or an `OnBehalf` holding one), each
    /// part handed to `each` as it arrives, the last one included: the
    /// caller works on the first jobs while the controller builds the
    /// rest. A controller that answers whole (one `JobWires`, or `Jobs`)
    /// gives one part. On a connection of its own; a controller that
    /// cannot be reached is tried at the next address, but never once a
    /// part was handed over (the listing then fails).
    pub fn job_wires(
        &self,
        req: &CtldRequest,
        mut each: impl FnMut(proto::JobWires),
    ) -> Result<(), ClientError> {
        let (mut conn, mut resp) = self.open_stream(req, encoding_for(req))?;
        loop {
            match resp {
                CtldResponse::JobWiresPart(part) => each(part),
                CtldResponse::JobWires(whole) => {
                    each(whole);
                    return Ok(());
                }
                CtldResponse::Jobs(list) => {
                    let whole =
                        proto::JobWires::from_list(&list).map_err(|_| ClientError::Unexpected)?;
                    each(whole);
                    return Ok(());
                }
                CtldResponse::Error(e) => return Err(ClientError::Refused(e)),
                _ => return Err(ClientError::Unexpected),
            }
            resp = conn
                .read_more::<CtldResponse>()
                .map_err(ClientError::Unreachable)?;
        }
    }

    /// Sends `req` on a connection of its own, to the first controller
    /// address that answers: the connection, for the answers that follow
    /// (a watch stream's, a streamed listing's), and the first answer.
    fn open_stream(
        &self,
        req: &CtldRequest,
        enc: rpc::Encoding,
    ) -> Result<(rpc::Conn, CtldResponse), ClientError> {
        let mut last = None;
        for addr in &self.addrs {
            let credential = self.credential()?;
            let mut frame = Vec::with_capacity(512);
            let env = rpc::signed_envelope(self.identity.clone(), Some(credential), req);
            rpc::append_frame(&mut frame, &env, enc, proto::MAX_REQUEST_BYTES)
                .map_err(frame_error)?;
            let mut conn = match rpc::Conn::connect(addr, TIMEOUT) {
                Ok(conn) => conn,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let (mut answers, err) = conn.call_many::<CtldResponse>(&frame, 1);
            match (answers.pop(), err) {
                (Some(resp), None) => return Ok((conn, resp)),
                (_, e) => last = Some(e.unwrap_or(rpc::RpcError::Timeout)),
            }
        }
        Err(ClientError::Unreachable(
            last.unwrap_or(rpc::RpcError::Timeout),
        ))
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

/// A streamed job listing (`JobFilter::stream`) read to its end: `first`
/// and the parts after it on `conn`, appended into one answer. Any other
/// answer is returned as it is.
fn rest_of_parts(conn: &mut rpc::Conn, first: CtldResponse) -> Result<CtldResponse, rpc::RpcError> {
    if let CtldResponse::JobWiresPart(mut wires) = first {
        loop {
            match conn.read_more::<CtldResponse>()? {
                CtldResponse::JobWiresPart(part) => wires.append(part),
                CtldResponse::JobWires(last) => {
                    wires.append(last);
                    return Ok(CtldResponse::JobWires(wires));
                }
                other => return Ok(other),
            }
        }
    }
    let CtldResponse::JobRowsPart(mut rows) = first else {
        return Ok(first);
    };
    loop {
        match conn.read_more::<CtldResponse>()? {
            CtldResponse::JobRowsPart(part) => rows.append(part),
            CtldResponse::JobRows(last) => {
                rows.append(last);
                return Ok(CtldResponse::JobRows(rows));
            }
            other => return Ok(other),
        }
    }
}
