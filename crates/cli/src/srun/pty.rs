//! `srun --pty`: srun's own terminal. While the step runs it is in raw
//! mode (every key, Ctrl-C included, goes to task 0's terminal as a byte,
//! as Slurm's srun does) and its size follows srun's window.

/// srun's terminal size (rows, columns), when its stdin is a terminal.
pub fn window_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills a winsize we own.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::isatty(0) == 1 && libc::ioctl(0, libc::TIOCGWINSZ, &mut ws) == 0 };
    ok.then_some((ws.ws_row, ws.ws_col))
}

/// srun's terminal in raw mode until dropped.
pub struct RawMode {
    saved: libc::termios,
}

impl RawMode {
    /// Puts stdin's terminal in raw mode; None when stdin is no terminal.
    pub fn enter() -> Option<RawMode> {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with termios we own.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return None;
            }
            let mut raw = saved;
            libc::cfmakeraw(&mut raw);
            if libc::tcsetattr(0, libc::TCSANOW, &raw) != 0 {
                return None;
            }
            Some(RawMode { saved })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter`.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.saved) };
    }
}
