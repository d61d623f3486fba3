//! The credential socket (`AuthType=auth/muster`): commands run by users
//! who cannot read the cluster key get their credentials here, as MUNGE
//! clients get theirs from munged.
//!
//! ```text
//!   sbatch --connect--> AuthInfo socket (mode 0666) --SO_PEERCRED--> uid, gid
//!          <-- one line: credential for that uid (user and primary gid from passwd)
//! ```
//!
//! The caller sends nothing: who it is comes from the kernel, never from
//! the caller, so a credential from here proves exactly the caller's uid.
//! One socket per host: when several node daemons share a host (a local
//! cluster), the one that holds the lock file beside the socket
//! (`<socket>.lock`, flock) serves it and the others wait for the lock
//! ([`serve_while_locked`]): when the server dies, the kernel drops its
//! lock and another live daemon takes the socket over within
//! [`TAKEOVER_POLL`], so no one daemon's death stops the users' commands.

use crate::daemon::setup::{self, NodeAuth};
use nix::fcntl::{Flock, FlockArg};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use proto::Identity;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tracing::{debug, info, warn};

/// How long a caller may take to read its answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a daemon that does not serve the socket tries to take its
/// lock.
pub const TAKEOVER_POLL: Duration = Duration::from_millis(250);

/// The bound socket; removed on drop if the path still names it.
pub struct CredSocket {
    listener: UnixListener,
    path: PathBuf,
    /// (device, inode) of the socket file this daemon bound.
    id: (u64, u64),
}

impl Drop for CredSocket {
    fn drop(&mut self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.path) {
            if (meta.dev(), meta.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// Binds the socket at `path` (mode 0666, parent created 0755 if
/// missing). `Ok(None)` when another live daemon already serves it. A
/// stale socket file left by a dead daemon is replaced; any other kind of
/// file at the path is an error.
pub fn bind(path: &Path) -> std::io::Result<Option<CredSocket>> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() && !parent.exists() {
            std::fs::create_dir_all(parent)?;
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    let listener = match UnixListener::bind(path) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Ok(None);
            }
            let meta = std::fs::symlink_metadata(path)?;
            if !meta.file_type().is_socket() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
            UnixListener::bind(path)?
        }
        Err(e) => return Err(e),
    };
    // Everyone may ask; each gets a credential for exactly who they are.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    let meta = std::fs::symlink_metadata(path)?;
    Ok(Some(CredSocket {
        listener,
        path: path.to_path_buf(),
        id: (meta.dev(), meta.ino()),
    }))
}

/// The lock file that says which daemon serves the socket at `path`.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the lock on the lock file, without waiting. `Ok(None)` while
/// another process holds it.
fn try_lock(path: &Path) -> std::io::Result<Option<Flock<std::fs::File>>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// Serves the socket at `path` whenever this daemon holds its lock, until
/// the task is dropped: waits for the lock (another daemon on the host
/// serves meanwhile), then binds and serves, holding the lock as long as it
/// lives. Errors are logged once each and retried.
pub async fn serve_while_locked(path: PathBuf, auth: Arc<NodeAuth>) {
    let lock_file = lock_path(&path);
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() && !parent.exists() {
            let made = std::fs::create_dir_all(parent).and_then(|()| {
                std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755))
            });
            if let Err(e) = made {
                warn!("credential socket: cannot create {}: {e}", parent.display());
            }
        }
    }
    let mut said_waiting = false;
    let mut last_error = String::new();
    loop {
        let attempt = try_lock(&lock_file).and_then(|lock| match lock {
            Some(lock) => Ok(bind(&path)?.map(|sock| (lock, sock))),
            None => Ok(None),
        });
        match attempt {
            Ok(Some((lock, sock))) => {
                let _lock = lock;
                serve(sock, auth).await;
                return;
            }
            Ok(None) => {
                if !said_waiting {
                    info!(
                        "credential socket {} is served by another node daemon; \
                         this one takes it over if that one stops",
                        path.display()
                    );
                    said_waiting = true;
                }
            }
            Err(e) => {
                let why = e.to_string();
                if why != last_error {
                    warn!(
                        "cannot serve the credential socket {}: {e}; \
                         users who cannot read the cluster key cannot make requests \
                         from this host until it can (retrying)",
                        path.display()
                    );
                    last_error = why;
                }
            }
        }
        tokio::time::sleep(TAKEOVER_POLL).await;
    }
}

/// Serves the socket until the task is dropped.
pub async fn serve(sock: CredSocket, auth: Arc<NodeAuth>) {
    info!("credential socket on {}", sock.path.display());
    loop {
        match sock.listener.accept().await {
            Ok((stream, _)) => {
                let auth = auth.clone();
                tokio::spawn(answer(stream, auth));
            }
            Err(e) => {
                warn!("credential socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn answer(mut stream: UnixStream, auth: Arc<NodeAuth>) {
    let result = match getsockopt(&stream, PeerCredentials) {
        Ok(cred) => {
            let identity = identity_of(cred.uid(), cred.gid());
            debug!(
                uid = identity.uid,
                pid = cred.pid(),
                "credential for {}",
                identity.user
            );
            auth.signer.sign(&identity, setup::now())
        }
        Err(e) => {
            warn!("credential socket: cannot tell who is calling: {e}");
            return;
        }
    };
    if let Err(e) = &result {
        warn!("credential socket: cannot sign: {e}");
    }
    let line = auth::socket_reply(&result);
    let _ = tokio::time::timeout(WRITE_TIMEOUT, stream.write_all(line.as_bytes())).await;
}

/// The identity of a caller: its uid, and the user name and primary gid
/// the password database gives for it (the uid and the group the kernel
/// reports when the uid has no entry).
fn identity_of(uid: u32, gid: u32) -> Identity {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten();
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into());
    match user {
        Some(u) => Identity {
            uid,
            gid: u.gid.as_raw(),
            user: u.name,
            host,
        },
        None => Identity {
            uid,
            gid,
            user: uid.to_string(),
            host,
        },
    }
}
