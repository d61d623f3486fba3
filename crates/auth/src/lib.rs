//! Authentication of every RPC: the receiver learns who sent a request from
//! a credential it can check, never from what the sender claims.
//!
//! Two schemes, by `AuthType` in slurm.conf:
//!
//! - `auth/muster` (muster's own): the daemons share a cluster key
//!   (`AuthInfo=key=PATH`, 16 to 1024 bytes, mode 0600); a credential is the
//!   caller's uid, gid, user, host, issue and expiry times and a random
//!   nonce, HMAC-SHA256-signed with the key (see `cred`). A process that
//!   cannot read the key (any user but the daemons' on a production node)
//!   asks the local node daemon's Unix socket (`AuthInfo=socket=PATH`),
//!   which signs for exactly the uid the kernel reports for the caller
//!   (SO_PEERCRED), as munged does.
//! - `auth/munge`: MUNGE credentials from the site's munged carrying the
//!   same payload; munged proves uid and gid (see `munge`).
//!
//! ```text
//!  sbatch (no key) --connect--> noded credential socket --SO_PEERCRED--> sign(uid of caller)
//!     |  <------------------------ credential --------------------------+
//!     +--Envelope{identity, credential, body}--> ctld: Verifier::verify -> proven Identity
//!  ctld  --Signer::sign--> noded: Verifier::verify; LaunchBatch etc. only from root/SlurmUser
//!  noded --Signer::sign--> ctld:  RegisterNode, JobExited only from root/SlurmUser
//! ```
//!
//! Deliberately not here: what an identity may do (the receivers decide),
//! logging (the callers log each refusal), the clock (`now` is an
//! argument). Credentials are not bound to the request they travel with or
//! to its receiver, as MUNGE's are not: one seen on the wire can be
//! presented once to another daemon within its lifetime.
//!
//! Invariant: a [`Verifier`] accepts a credential at most once, and only
//! within its lifetime give or take [`CLOCK_SKEW`] seconds.
#![warn(missing_docs)]

pub mod cred;
pub mod jwt;
pub mod munge;
pub mod rs256;

use cred::{Payload, ReplayCache, DEFAULT_REPLAY_CACHE, NONCE_LEN};
use proto::Identity;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a credential is valid: MUNGE's default time to live.
pub const DEFAULT_LIFETIME: i64 = 300;

/// How far apart the clocks of two hosts may be.
pub const CLOCK_SKEW: i64 = 60;

/// Shortest cluster key accepted.
pub const MIN_KEY_LEN: usize = 16;
/// Longest cluster key accepted.
pub const MAX_KEY_LEN: usize = 1024;
/// Length of the key `muster up` and the test harness create.
pub const NEW_KEY_LEN: usize = 32;

/// `AuthType=auth/muster`.
pub const AUTH_MUSTER: &str = "auth/muster";
/// `AuthType=auth/munge`.
pub const AUTH_MUNGE: &str = "auth/munge";

/// The cluster key when AuthInfo names none.
pub const DEFAULT_KEY_PATH: &str = "/etc/slurm/muster.key";
/// The node daemon's credential socket when AuthInfo names none.
pub const DEFAULT_SOCKET_PATH: &str = "/run/muster/auth.sock";

/// How long a command waits for the node daemon's credential socket.
pub const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a credential could not be made or was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The request carried no credential.
    #[error("no credential")]
    Missing,
    /// The credential is longer than any valid one.
    #[error("credential of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The credential is not in the expected form.
    #[error("malformed credential ({what})")]
    Malformed {
        /// The part that is wrong.
        what: &'static str,
    },
    /// A payload version this build does not read.
    #[error("credential version {found} is not supported")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// The signature does not match: forged, tampered with, or made with
    /// another cluster's key.
    #[error("invalid credential signature (forged, altered, or another key)")]
    BadSignature,
    /// Past its expiry (plus the clock skew allowance).
    #[error("expired credential (expired at {exp}, now {now})")]
    Expired {
        /// Its expiry.
        exp: i64,
        /// The receiver's clock.
        now: i64,
    },
    /// Issued in the future (beyond the clock skew allowance).
    #[error("credential issued in the future (at {iat}, now {now}): are the clocks in sync?")]
    NotYetValid {
        /// When it says it was issued.
        iat: i64,
        /// The receiver's clock.
        now: i64,
    },
    /// Already presented once.
    #[error("replayed credential")]
    Replayed,
    /// Too many live credentials to remember: refused rather than risk
    /// accepting a replay.
    #[error("replay cache full ({max} live credentials); refusing")]
    ReplayCacheFull {
        /// The bound.
        max: usize,
    },
    /// The envelope claims another user than the credential proves.
    #[error("credential is for uid {proven} but the request claims uid {claimed}")]
    IdentityMismatch {
        /// What the envelope says.
        claimed: u32,
        /// What the credential proves.
        proven: u32,
    },
    /// An `AuthType` muster does not implement.
    #[error("AuthType={0} is not supported (use auth/muster or auth/munge)")]
    UnsupportedType(String),
    /// The key file cannot be read.
    #[error("cannot read the cluster key {path}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key file is open to group or others.
    #[error(
        "cluster key {path} has mode {mode:o}: it must be readable by its owner only (chmod 600)"
    )]
    KeyPermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The key is too short or too long.
    #[error("cluster key {path} has {len} bytes; expected {MIN_KEY_LEN} to {MAX_KEY_LEN}")]
    KeyLength {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: usize,
    },
    /// The operating system gave no random bytes.
    #[error("reading random bytes: {0}")]
    Random(#[source] std::io::Error),
    /// The node daemon's credential socket could not be used.
    #[error("cannot get a credential from the node daemon at {path}: {source}")]
    Socket {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The node daemon refused to make a credential.
    #[error("the node daemon at {path} refused a credential: {message}")]
    SocketRefused {
        /// The socket.
        path: PathBuf,
        /// What it said.
        message: String,
    },
    /// Neither the key nor the node daemon's socket gave a credential.
    #[error("{key}; and {socket}")]
    NoCredential {
        /// Why the key could not be used.
        key: Box<AuthError>,
        /// Why the socket could not be used.
        socket: Box<AuthError>,
    },
    /// libmunge or munged cannot be used.
    #[error("MUNGE is not available: {why}")]
    MungeUnavailable {
        /// Why.
        why: String,
    },
    /// munged says the credential has expired (or comes from the future).
    #[error("expired credential: {message}")]
    MungeExpired {
        /// munged's text.
        message: String,
    },
    /// munged refused the credential.
    #[error("munge: {message} (error {code})")]
    Munge {
        /// The `munge_err_t`.
        code: i32,
        /// munged's text.
        message: String,
    },
}

/// The scheme `AuthType` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `auth/muster`: HMAC with the cluster key.
    Key,
    /// `auth/munge`: the site's munged.
    Munge,
}

/// What `AuthType` and `AuthInfo` say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthSettings {
    /// The scheme.
    pub scheme: Scheme,
    /// `key=`: the cluster key (auth/muster).
    pub key_path: PathBuf,
    /// `socket=`: the node daemon's credential socket (auth/muster) or
    /// munged's socket (auth/munge).
    pub socket_path: PathBuf,
    /// `ttl=`: seconds a credential lives (default [`DEFAULT_LIFETIME`]).
    pub lifetime: i64,
}

impl AuthSettings {
    /// Reads `AuthType` and `AuthInfo` (comma-separated `key=`, `socket=`,
    /// `ttl=`; other options are ignored, as Slurm's plugins ignore the
    /// options of others).
    pub fn from_config(cfg: &conf::Config) -> Result<AuthSettings, AuthError> {
        let scheme = match cfg.auth_type.to_ascii_lowercase().as_str() {
            AUTH_MUSTER => Scheme::Key,
            AUTH_MUNGE => Scheme::Munge,
            _ => return Err(AuthError::UnsupportedType(cfg.auth_type.clone())),
        };
        let mut s = AuthSettings {
            scheme,
            key_path: PathBuf::from(DEFAULT_KEY_PATH),
            socket_path: PathBuf::from(match scheme {
                Scheme::Key => DEFAULT_SOCKET_PATH,
                Scheme::Munge => munge::DEFAULT_SOCKET,
            }),
            lifetime: DEFAULT_LIFETIME,
        };
        let info = cfg.other.get("authinfo").map(|(_, v)| v.as_str());
        s.apply_info(info.unwrap_or(""));
        Ok(s)
    }
}

impl AuthSettings {
    /// What a node daemon in configless mode signs its configuration
    /// request with, before it has slurm.conf (slurmd's `--authinfo`):
    /// `AuthInfo` options as slurm.conf writes them. With `key=` it is
    /// auth/muster with that key; otherwise auth/munge (Slurm's default
    /// `AuthType`), with `socket=` naming munged's socket.
    pub fn bootstrap(authinfo: Option<&str>) -> AuthSettings {
        let info = authinfo.unwrap_or("");
        let has_key = info
            .split(',')
            .any(|o| o.trim().to_ascii_lowercase().starts_with("key="));
        let scheme = if has_key { Scheme::Key } else { Scheme::Munge };
        let mut s = AuthSettings {
            scheme,
            key_path: PathBuf::from(DEFAULT_KEY_PATH),
            socket_path: PathBuf::from(match scheme {
                Scheme::Key => DEFAULT_SOCKET_PATH,
                Scheme::Munge => munge::DEFAULT_SOCKET,
            }),
            lifetime: DEFAULT_LIFETIME,
        };
        s.apply_info(info);
        s
    }

    fn apply_info(&mut self, info: &str) {
        for opt in info.split(',') {
            let Some((k, v)) = opt.trim().split_once('=') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "key" => self.key_path = PathBuf::from(v.trim()),
                "socket" => self.socket_path = PathBuf::from(v.trim()),
                "ttl" => {
                    if let Ok(n) = v.trim().parse::<i64>() {
                        self.lifetime = n.clamp(1, cred::MAX_LIFETIME);
                    }
                }
                _ => {}
            }
        }
    }

    /// A signer for these settings: the cluster key (which this process
    /// must be able to read) or libmunge.
    pub fn signer(&self) -> Result<Signer, AuthError> {
        match self.scheme {
            Scheme::Key => Ok(Signer::with_key(&load_key(&self.key_path)?).lifetime(self.lifetime)),
            Scheme::Munge => Ok(Signer {
                kind: SignerKind::Munge(Arc::new(munge::Munge::load(&self.socket_path)?)),
                lifetime: self.lifetime,
            }),
        }
    }
}

/// The uids of the daemons: root and `SlurmUser` (a name or a number).
/// Only they may register a node, report a job's end, or launch, signal
/// and end jobs on a node. A `SlurmUser` this host does not know adds
/// nothing (the second element of the answer says so, for a warning).
pub fn daemon_uids(cfg: &conf::Config) -> (Vec<u32>, bool) {
    let mut uids = vec![0];
    let slurm_user = cfg.slurm_user.parse::<u32>().ok().or_else(|| {
        nix::unistd::User::from_name(&cfg.slurm_user)
            .ok()
            .flatten()
            .map(|u| u.uid.as_raw())
    });
    if let Some(uid) = slurm_user {
        if uid != 0 {
            uids.push(uid);
        }
    }
    (uids, slurm_user.is_some())
}

/// Reads the cluster key: owner-only permissions, [`MIN_KEY_LEN`] to
/// [`MAX_KEY_LEN`] bytes.
pub fn load_key(path: &Path) -> Result<Vec<u8>, AuthError> {
    use std::os::unix::fs::PermissionsExt;
    let key_err = |source| AuthError::Key {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(key_err)?;
    let mode = file.metadata().map_err(key_err)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(AuthError::KeyPermissions {
            path: path.to_path_buf(),
            mode: mode & 0o7777,
        });
    }
    let mut key = Vec::new();
    file.take(MAX_KEY_LEN as u64 + 1)
        .read_to_end(&mut key)
        .map_err(key_err)?;
    if !(MIN_KEY_LEN..=MAX_KEY_LEN).contains(&key.len()) {
        return Err(AuthError::KeyLength {
            path: path.to_path_buf(),
            len: key.len(),
        });
    }
    Ok(key)
}

/// Creates a new cluster key at `path`: [`NEW_KEY_LEN`] bytes from
/// /dev/urandom, mode 0600. Fails if the file exists.
pub fn create_key(path: &Path) -> Result<(), AuthError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut key = [0u8; NEW_KEY_LEN];
    random_bytes(&mut key)?;
    let key_err = |source| AuthError::Key {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(key_err)?;
    f.write_all(&key).map_err(key_err)?;
    f.sync_all().map_err(key_err)
}

/// Writes a new cluster key over the one at `path` (or where none is):
/// [`NEW_KEY_LEN`] random bytes, mode 0600, written beside it and renamed
/// into place, so a reader sees the old key or the new one, never part.
pub fn replace_key(path: &Path) -> Result<(), AuthError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".new");
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    create_key(&tmp)?;
    std::fs::rename(&tmp, path).map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        AuthError::Key {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Fills `buf` from the kernel's random source: the getrandom system call
/// (one call, no file descriptor: a credential is made per request), or
/// /dev/urandom where the kernel lacks it.
pub fn random_bytes(buf: &mut [u8]) -> Result<(), AuthError> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: the pointer and length describe `rest`, which is writable.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
            continue;
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOSYS) => {
                return std::fs::File::open("/dev/urandom")
                    .and_then(|mut f| f.read_exact(&mut buf[filled..]))
                    .map_err(AuthError::Random)
            }
            _ => return Err(AuthError::Random(err)),
        }
    }
    Ok(())
}

fn new_nonce() -> Result<cred::Nonce, AuthError> {
    let mut n = [0u8; NONCE_LEN];
    random_bytes(&mut n)?;
    Ok(n)
}

/// Makes credentials for this process (daemons: for their own identity;
/// the node daemon's socket: for its callers).
#[derive(Clone, Debug)]
pub struct Signer {
    kind: SignerKind,
    lifetime: i64,
}

#[derive(Clone)]
enum SignerKind {
    Key(Arc<[u8]>),
    Munge(Arc<munge::Munge>),
}

impl std::fmt::Debug for SignerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Never the key itself.
            SignerKind::Key(_) => f.write_str("Key"),
            SignerKind::Munge(m) => write!(f, "{m:?}"),
        }
    }
}

impl Signer {
    /// A signer with the cluster key.
    pub fn with_key(key: &[u8]) -> Signer {
        Signer {
            kind: SignerKind::Key(Arc::from(key)),
            lifetime: DEFAULT_LIFETIME,
        }
    }

    /// The same signer, making credentials that live `lifetime` seconds.
    pub fn lifetime(mut self, lifetime: i64) -> Signer {
        self.lifetime = lifetime;
        self
    }

    /// True when signing asks munged (a blocking round trip); an async
    /// caller then signs in `tokio::task::block_in_place`.
    pub fn blocks(&self) -> bool {
        matches!(self.kind, SignerKind::Munge(_))
    }

    /// A credential for `identity`, valid from `now` for the lifetime.
    ///
    /// With auth/munge, munged puts this process's uid and gid into the
    /// credential whatever `identity` says; a receiver refuses the two
    /// disagreeing. Fails when /dev/urandom or munged cannot be used.
    pub fn sign(&self, identity: &Identity, now: i64) -> Result<String, AuthError> {
        let payload = Payload::new(identity, now, self.lifetime, &new_nonce()?);
        match &self.kind {
            SignerKind::Key(key) => Ok(cred::sign(key, &payload)),
            SignerKind::Munge(m) => {
                let json = serde_json::to_vec(&payload).expect("a payload always serializes");
                m.encode(&json)
            }
        }
    }
}

/// Checks credentials; remembers the ones it accepted (see
/// [`cred::ReplayCache`]). Shared by every connection of a daemon.
#[derive(Debug)]
pub struct Verifier {
    kind: VerifierKind,
    skew: i64,
}

#[derive(Debug)]
enum VerifierKind {
    Key {
        key: SecretKey,
        replay: Mutex<ReplayCache>,
    },
    Munge(Arc<munge::Munge>),
}

struct SecretKey(Arc<[u8]>);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey")
    }
}

impl Verifier {
    /// A verifier for the cluster key, remembering up to
    /// [`DEFAULT_REPLAY_CACHE`] live credentials.
    pub fn with_key(key: &[u8]) -> Verifier {
        Verifier::with_key_and_cache(key, DEFAULT_REPLAY_CACHE)
    }

    /// A verifier for the cluster key with a replay cache of `max` entries.
    pub fn with_key_and_cache(key: &[u8], max: usize) -> Verifier {
        Verifier {
            kind: VerifierKind::Key {
                key: SecretKey(Arc::from(key)),
                replay: Mutex::new(ReplayCache::new(max)),
            },
            skew: CLOCK_SKEW,
        }
    }

    /// True when verifying asks munged (a blocking round trip); an async
    /// caller then verifies in `tokio::task::block_in_place`.
    pub fn blocks(&self) -> bool {
        matches!(self.kind, VerifierKind::Munge(_))
    }

    /// Checks `credential` at `now` and returns the identity it proves.
    ///
    /// Refuses a missing, malformed, forged, expired, future or replayed
    /// credential, and one for another uid than `claimed` (the envelope's
    /// identity, which is never trusted by itself). The returned identity,
    /// not `claimed`, is the one to act on. Logs nothing: the caller logs
    /// the refusal with the peer's address.
    ///
    /// With auth/munge this makes one round trip to munged (blocking).
    pub fn verify(
        &self,
        credential: Option<&str>,
        claimed: &Identity,
        now: i64,
    ) -> Result<Identity, AuthError> {
        let text = match credential {
            Some(t) if !t.is_empty() => t,
            _ => return Err(AuthError::Missing),
        };
        cred::check_len(text)?;
        let proven = match &self.kind {
            VerifierKind::Key { key, replay } => {
                let payload = cred::open(&key.0, text)?;
                payload.check_time(now, self.skew)?;
                check_claim(claimed, payload.uid)?;
                // Last, so that only credentials valid in every other way
                // take a place in the cache.
                let nonce = payload.nonce()?;
                let mut cache = replay.lock().unwrap_or_else(|p| p.into_inner());
                cache.insert(nonce, payload.exp.saturating_add(self.skew), now)?;
                payload.identity()
            }
            VerifierKind::Munge(m) => {
                let decoded = m.decode(text)?;
                let payload = Payload::from_json(&decoded.payload)?;
                // munged proved who encoded it: a payload naming anyone
                // else is a forgery.
                if payload.uid != decoded.uid {
                    return Err(AuthError::IdentityMismatch {
                        claimed: payload.uid,
                        proven: decoded.uid,
                    });
                }
                payload.check_time(now, self.skew)?;
                check_claim(claimed, decoded.uid)?;
                Identity {
                    uid: decoded.uid,
                    gid: decoded.gid,
                    user: payload.user,
                    host: payload.host,
                }
            }
        };
        Ok(proven)
    }
}

fn check_claim(claimed: &Identity, proven: u32) -> Result<(), AuthError> {
    if claimed.uid != proven {
        return Err(AuthError::IdentityMismatch {
            claimed: claimed.uid,
            proven,
        });
    }
    Ok(())
}

/// The signer and verifier of a daemon, from slurm.conf. With auth/muster
/// the key must be readable (the daemons' user owns it).
pub fn from_config(cfg: &conf::Config) -> Result<(Signer, Verifier), AuthError> {
    let s = AuthSettings::from_config(cfg)?;
    match s.scheme {
        Scheme::Key => {
            let key = load_key(&s.key_path)?;
            Ok((
                Signer::with_key(&key).lifetime(s.lifetime),
                Verifier::with_key(&key),
            ))
        }
        Scheme::Munge => {
            let m = Arc::new(munge::Munge::load(&s.socket_path)?);
            Ok((
                Signer {
                    kind: SignerKind::Munge(m.clone()),
                    lifetime: s.lifetime,
                },
                Verifier {
                    kind: VerifierKind::Munge(m),
                    skew: CLOCK_SKEW,
                },
            ))
        }
    }
}

/// A credential for a command: with auth/muster, signed with the key when
/// this process can read it (the daemons' user, root, the owner of a
/// `muster up` cluster), else from the local node daemon's socket, which
/// signs for this process's real uid whatever `identity` says; with
/// auth/munge, from munged.
pub fn credential_for_client(
    cfg: &conf::Config,
    identity: &Identity,
    now: i64,
) -> Result<String, AuthError> {
    let s = AuthSettings::from_config(cfg)?;
    match s.scheme {
        Scheme::Key => match load_key(&s.key_path) {
            Ok(key) => Signer::with_key(&key)
                .lifetime(s.lifetime)
                .sign(identity, now),
            Err(key_err) => credential_from_socket(&s.socket_path).map_err(|socket_err| {
                AuthError::NoCredential {
                    key: Box::new(key_err),
                    socket: Box::new(socket_err),
                }
            }),
        },
        Scheme::Munge => {
            let m = munge::Munge::load(&s.socket_path)?;
            Signer {
                kind: SignerKind::Munge(Arc::new(m)),
                lifetime: s.lifetime,
            }
            .sign(identity, now)
        }
    }
}

/// The signer a client process can make its credentials with by itself,
/// loaded once and kept for all its requests: the cluster key when this
/// process can read it, or libmunge. `Err` when it cannot (the key is not
/// readable: credentials then come from the node daemon's socket, one per
/// request, through [`credential_for_client`]).
pub fn client_signer(cfg: &conf::Config) -> Result<Signer, AuthError> {
    AuthSettings::from_config(cfg)?.signer()
}

/// What the node daemon's credential socket answers: one line, either the
/// credential or `error: ` and why.
pub fn socket_reply(result: &Result<String, AuthError>) -> String {
    match result {
        Ok(cred) => format!("{cred}\n"),
        Err(e) => format!("error: {e}\n"),
    }
}

/// Asks the node daemon's credential socket at `path` for a credential.
/// The caller sends nothing: the daemon learns who it is from the kernel.
pub fn credential_from_socket(path: &Path) -> Result<String, AuthError> {
    let sock_err = |source| AuthError::Socket {
        path: path.to_path_buf(),
        source,
    };
    let stream = std::os::unix::net::UnixStream::connect(path).map_err(sock_err)?;
    stream
        .set_read_timeout(Some(SOCKET_TIMEOUT))
        .map_err(sock_err)?;
    // One line; the daemon need not close its end first.
    let mut text = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(stream.take(cred::MAX_CREDENTIAL_LEN as u64 + 64)),
        &mut text,
    )
    .map_err(sock_err)?;
    let line = text.trim_end_matches('\n');
    if let Some(msg) = line.strip_prefix("error: ") {
        return Err(AuthError::SocketRefused {
            path: path.to_path_buf(),
            message: msg.to_string(),
        });
    }
    if line.is_empty() || line.contains('\n') {
        return Err(sock_err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "unexpected answer",
        )));
    }
    Ok(line.to_string())
}

#[cfg(test)]
mod tests;
