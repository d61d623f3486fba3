//! The supervisor zygote: a single-threaded helper, started once per daemon
//! as `<this binary> noded --stepd-zygote <spool>`, that forks the job
//! supervisors (`stepd`) instead of the daemon executing this binary once
//! per job. Executing an 18 MB position-independent binary (loading and
//! relocating it, starting its runtime) was most of a trivial job's cost on
//! the node; a fork of a small process that already did all that is cheap.
//! The daemon itself cannot fork one: it runs a multi-threaded runtime, and
//! a child of such a process may only call async-signal-safe functions
//! until it executes something.
//!
//! ```text
//!   daemon                          zygote (fd 0: SOCK_SEQPACKET)         supervisor
//!   socketpair (a, b)
//!   send "<job dir>" + fd b  ---->  recv; fork  ------------------------>  fds 0, 1 = b
//!                                   write "<pid>\n" on b, close b          setsid, ...
//!   read "<pid>\n" on a  <-------------'
//!   write StepdSpec, shut down  --------------------------------------->  stepd::main(dir)
//!   read StepdAnswer  <-------------------------------------------------  answer, stdio -> null
//! ```
//!
//! The exchange on `a` is the one the daemon has with an executed
//! supervisor on its stdin and stdout, preceded by the supervisor's pid, so
//! that the daemon can kill a supervisor that does not answer in time.
//! The zygote ignores SIGCHLD, so the kernel reaps the supervisors it
//! forked; the daemon learns a supervisor's end as it does after a restart,
//! through a pidfd (`daemon::wait_adopted`). A supervisor's command line is
//! the zygote's (`--stepd-zygote <spool>`), which is what
//! `spool::is_supervisor` checks besides its pid and start time.
//!
//! The zygote ends when the daemon's end of its socket closes (the daemon
//! stopped or died); the supervisors it forked run on, as they do when the
//! daemon dies, and the next daemon starts a zygote of its own. When the
//! zygote cannot be used (it died, or was never started), the daemon
//! executes `noded --stepd DIR` as before.

use std::io::{IoSlice, IoSliceMut, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};

/// The zygote's flag.
pub const FLAG: &str = crate::spool::ZYGOTE_FLAG;

/// Longest job directory path the zygote reads.
const MAX_DIR_BYTES: usize = 4096;

/// Runs the zygote on the socket at fd 0 until the daemon closes it.
/// Returns the process's exit status.
pub fn main() -> i32 {
    if threads() != Some(1) {
        // A fork would copy one thread of several: refuse, the daemon
        // executes supervisors instead.
        eprintln!("noded {FLAG}: not single-threaded; exiting");
        return 1;
    }
    // SAFETY: SIG_IGN installs no handler. Ignoring SIGCHLD makes the
    // kernel reap the forked supervisors.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_IGN) };
    // Made here once, every supervisor forked inherits them.
    crate::stepd::launch::prepare_texts();
    let control: RawFd = 0;
    let mut buf = vec![0u8; MAX_DIR_BYTES];
    loop {
        let mut space = nix::cmsg_space!(RawFd);
        let (len, fd) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let msg = match recvmsg::<()>(control, &mut iov, Some(&mut space), MsgFlags::empty()) {
                Ok(msg) => msg,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    eprintln!("noded {FLAG}: {e}; exiting");
                    return 1;
                }
            };
            let mut fd = None;
            if let Ok(cmsgs) = msg.cmsgs() {
                for c in cmsgs {
                    if let ControlMessageOwned::ScmRights(fds) = c {
                        for raw in fds {
                            // SAFETY: a descriptor just received is ours alone.
                            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                            if fd.is_none() {
                                fd = Some(owned);
                            }
                        }
                    }
                }
            }
            (msg.bytes, fd)
        };
        if len == 0 && fd.is_none() {
            // The daemon closed its end.
            return 0;
        }
        let Some(fd) = fd else {
            continue;
        };
        let Ok(dir) = std::str::from_utf8(&buf[..len]) else {
            continue;
        };
        let dir = PathBuf::from(dir);
        fork_supervisor(fd, &dir);
    }
}

/// Forks the supervisor of the job in `dir`, talking on `fd`, and tells the
/// daemon its pid on the same socket.
fn fork_supervisor(fd: OwnedFd, dir: &Path) {
    // SAFETY: the zygote is single-threaded (checked at its start), so the
    // child may do anything the parent could.
    match unsafe { libc::fork() } {
        0 => {
            // SAFETY: plain descriptor and signal calls in the child.
            unsafe {
                libc::signal(libc::SIGCHLD, libc::SIG_DFL);
                libc::dup2(fd.as_raw_fd(), 0);
                libc::dup2(fd.as_raw_fd(), 1);
            }
            drop(fd);
            let status = crate::stepd::supervisor::main(dir);
            std::process::exit(status);
        }
        pid if pid > 0 => {
            let mut stream = UnixStream::from(fd);
            let _ = stream.write_all(format!("{pid}\n").as_bytes());
        }
        _ => {
            // No fork: closing the socket tells the daemon, which then
            // executes the supervisor itself.
            eprintln!(
                "noded {FLAG}: fork failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// The number of threads of this process.
fn threads() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// The daemon's end of a running zygote.
pub struct Zygote {
    control: OwnedFd,
    child: std::process::Child,
}

impl Zygote {
    /// Starts `program noded --stepd-zygote <spool_dir>`.
    pub fn start(program: &Path, spool_dir: &Path) -> std::io::Result<Zygote> {
        use std::os::unix::process::CommandExt;
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let child = std::process::Command::new(program)
            .arg0("muster")
            .arg("noded")
            .arg(FLAG)
            .arg(spool_dir)
            .current_dir("/")
            .stdin(std::process::Stdio::from(theirs))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()?;
        Ok(Zygote {
            control: ours,
            child,
        })
    }

    /// Asks for a supervisor of the job in `dir`. Returns the daemon's end
    /// of its socket, on which the zygote first writes the supervisor's pid
    /// (a line), then the exchange of `launch::start_supervisor` follows.
    /// Never blocks: a zygote that does not take the request fails it.
    pub fn send(&self, dir: &Path) -> std::io::Result<UnixStream> {
        let (ours, theirs) = UnixStream::pair()?;
        let dir_bytes = dir.as_os_str().as_encoded_bytes();
        if dir_bytes.len() > MAX_DIR_BYTES {
            return Err(std::io::Error::other("job directory path too long"));
        }
        let fds = [theirs.as_raw_fd()];
        let cmsg = [ControlMessage::ScmRights(&fds)];
        sendmsg::<()>(
            self.control.as_raw_fd(),
            &[IoSlice::new(dir_bytes)],
            &cmsg,
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            None,
        )?;
        Ok(ours)
    }

    /// True while the zygote process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}
