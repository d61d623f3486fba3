//! `--signal=[{R|B}:]<sig_num>[@sig_time]` (`sbatch(1)`): a signal name (with
//! or without `SIG`, any case) or number, sent `sig_time` seconds (default 60)
//! before the time limit; `B:` signals only the batch shell, `R:` (reservation
//! end) is accepted and has no effect here.

use proto::SignalSpec;

/// Seconds before the limit when `@sig_time` is not given (`sbatch(1)`).
const DEFAULT_SIG_TIME: u32 = 60;

/// The largest `sig_time` Slurm accepts (it is kept in 16 bits).
const MAX_SIG_TIME: u32 = 0xffff;

/// Signal names Slurm's commands understand, without the `SIG` prefix.
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("SYS", libc::SIGSYS),
];

/// A signal name (`USR1`, `SIGUSR1`, `usr1`) or number (`10`) as a number.
pub fn signal_number(text: &str) -> Option<i32> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let n: i32 = text.parse().ok()?;
        return (1..=64).contains(&n).then_some(n);
    }
    let up = text.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Parses a `--signal` value; `None` when it is not valid.
pub fn parse_signal(spec: &str) -> Option<SignalSpec> {
    let mut batch_only = false;
    let mut rest = spec;
    if let Some((flags, after)) = spec.split_once(':') {
        if flags.is_empty() {
            return None;
        }
        for c in flags.chars() {
            match c {
                'B' | 'b' => batch_only = true,
                'R' | 'r' => {}
                _ => return None,
            }
        }
        rest = after;
    }
    let (sig, secs) = match rest.split_once('@') {
        Some((sig, time)) => {
            if time.is_empty() || !time.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let secs: u32 = time.parse().ok()?;
            if secs > MAX_SIG_TIME {
                return None;
            }
            (sig, secs)
        }
        None => (rest, DEFAULT_SIG_TIME),
    };
    Some(SignalSpec {
        signal: signal_number(sig)?,
        secs,
        batch_only,
    })
}
