//! `srun --pty`: task 0's pseudo-terminal. The supervisor keeps the
//! master (srun's stdin is written to it, what it reads goes to srun as the
//! task's stdout); the task gets the slave as its stdio and controlling
//! terminal (`setsid` then `TIOCSCTTY`, in `TaskSetup::apply`).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};

/// A pseudo-terminal pair, both ends close-on-exec (the task's stdio are
/// dup2'ed copies, which are not).
pub struct Pty {
    /// The supervisor's end.
    pub master: File,
    /// The task's end.
    pub slave: File,
}

/// Opens a pseudo-terminal of `rows` x `cols` (0 x 0: left as the kernel
/// makes it), its slave owned by `owner` (uid, gid) as a login's is.
pub fn open(rows: u16, cols: u16, owner: Option<(u32, u32)>) -> std::io::Result<Pty> {
    let err = std::io::Error::last_os_error;
    // SAFETY: plain system calls; every descriptor is owned by a File once
    // opened, so it is closed on every path.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if m < 0 {
            return Err(err());
        }
        let master = File::from_raw_fd(m);
        if libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(err());
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(m, name.as_mut_ptr(), name.len()) != 0 {
            return Err(err());
        }
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        if s < 0 {
            return Err(err());
        }
        let slave = File::from_raw_fd(s);
        if let Some((uid, gid)) = owner {
            libc::fchown(s, uid, gid);
            libc::fchmod(s, 0o620);
        }
        let pty = Pty { master, slave };
        if rows > 0 || cols > 0 {
            set_size(&pty.master, rows, cols);
        }
        Ok(pty)
    }
}

/// Sets the terminal's size (the task's foreground group gets SIGWINCH).
pub fn set_size(master: &File, rows: u16, cols: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize we own.
    unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pty_has_the_size_asked_for() {
        let pty = open(33, 101, None).expect("a pty");
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        // SAFETY: TIOCGWINSZ fills a winsize we own.
        unsafe { libc::ioctl(pty.slave.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) };
        assert_eq!((ws.ws_row, ws.ws_col), (33, 101));
    }
}
