//! The daemons' logs as Slurm sites set them up (slurm.conf(5)):
//! `SlurmctldLogFile` and `SlurmdLogFile` (`%n` the node's name, `%h` its
//! host name), `SlurmctldDebug` and `SlurmdDebug` raised a step by each
//! `-v`, `LogTimeFormat`, and SIGUSR2 to reopen the file after logrotate
//! moved it. Without a log file the daemons write to stderr as before.
//!
//! ```text
//! slurm.conf + -v --settings()--> Settings --init()--> tracing subscriber
//!                                                       -> LogFile (reopened on SIGUSR2)
//!                                                       -> stderr
//! ```
//!
//! `MUSTER_LOG` (a tracing filter) still overrides the level.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use tracing::level_filters::LevelFilter;

/// Which daemon logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Daemon {
    /// `muster ctld`: `SlurmctldLogFile`, `SlurmctldDebug`.
    Ctld,
    /// `muster noded`: `SlurmdLogFile`, `SlurmdDebug`; the node's name
    /// (`-N`, else the short host name) for `%n`.
    Noded {
        /// This node's name.
        node: String,
    },
}

/// Slurm's levels, quietest first (`SlurmctldDebug` also takes their
/// numbers, 0 to 9).
const LEVELS: &[&str] = &[
    "quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5",
];

/// How a Slurm level shows in tracing's: tracing has no `verbose` nor
/// `fatal`, so `verbose` shows debug messages (so that one `-v` over
/// `info` shows more) and `fatal` is `error`.
fn filter_of(level: usize) -> LevelFilter {
    match level {
        0 => LevelFilter::OFF,
        1 | 2 => LevelFilter::ERROR,
        3 => LevelFilter::INFO,
        4 | 5 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    }
}

/// `LogTimeFormat`'s forms muster writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    /// `2026-12-02T10:24:13`.
    Iso8601,
    /// `2026-12-02T10:24:13.123` (Slurm's default).
    Iso8601Ms,
    /// `2026-12-02T10:24:13+00:00`.
    Rfc5424,
    /// `2026-12-02T10:24:13.123+00:00`.
    Rfc5424Ms,
    /// `Dec 02 10:24:13`.
    Short,
}

impl TimeFormat {
    fn chrono_format(self) -> &'static str {
        match self {
            TimeFormat::Iso8601 => "%Y-%m-%dT%H:%M:%S",
            TimeFormat::Iso8601Ms => "%Y-%m-%dT%H:%M:%S%.3f",
            TimeFormat::Rfc5424 => "%Y-%m-%dT%H:%M:%S%:z",
            TimeFormat::Rfc5424Ms => "%Y-%m-%dT%H:%M:%S%.3f%:z",
            TimeFormat::Short => "%b %d %H:%M:%S",
        }
    }
}

/// What slurm.conf and the command line ask of a daemon's log.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The log file; None: stderr.
    pub file: Option<PathBuf>,
    /// The level.
    pub level: LevelFilter,
    /// `LogTimeFormat`.
    pub time: TimeFormat,
    /// What was asked and cannot be done, to log once the log is open.
    pub warnings: Vec<String>,
}

/// A global key's value in slurm.conf.
fn other<'a>(cfg: &'a conf::Config, key: &str) -> Option<&'a str> {
    cfg.other
        .get(&key.to_ascii_lowercase())
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

/// The log settings for `daemon` from `cfg` (None: slurm.conf could not be
/// read; the daemon says why itself) and `verbose` (the count of `-v`).
pub fn settings(daemon: &Daemon, cfg: Option<&conf::Config>, verbose: u8) -> Settings {
    let (file_key, debug_key) = match daemon {
        Daemon::Ctld => ("SlurmctldLogFile", "SlurmctldDebug"),
        Daemon::Noded { .. } => ("SlurmdLogFile", "SlurmdDebug"),
    };
    let mut warnings = Vec::new();
    let file = cfg.and_then(|c| other(c, file_key)).map(|f| {
        PathBuf::from(match daemon {
            Daemon::Ctld => f.to_string(),
            Daemon::Noded { node } => {
                let host = cfg
                    .and_then(|c| c.node(node))
                    .map_or(node.as_str(), |n| n.hostname.as_str());
                f.replace("%n", node).replace("%h", host)
            }
        })
    });
    let info = 3;
    let base = match cfg.and_then(|c| other(c, debug_key)) {
        None => info,
        Some(v) => {
            let v = v.to_ascii_lowercase();
            match LEVELS.iter().position(|l| *l == v) {
                Some(i) => i,
                None => match v.parse::<usize>() {
                    Ok(n) if n < LEVELS.len() => n,
                    _ => {
                        warnings.push(format!(
                            "{debug_key}={v} is not a level (one of {}), info is used",
                            LEVELS.join(", ")
                        ));
                        info
                    }
                },
            }
        }
    };
    let level = filter_of(base + usize::from(verbose));
    let mut time = TimeFormat::Iso8601Ms;
    if let Some(v) = cfg.and_then(|c| other(c, "LogTimeFormat")) {
        for word in v.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "iso8601" => time = TimeFormat::Iso8601,
                "iso8601_ms" => time = TimeFormat::Iso8601Ms,
                "rfc5424" => time = TimeFormat::Rfc5424,
                "rfc5424_ms" => time = TimeFormat::Rfc5424Ms,
                "short" => time = TimeFormat::Short,
                "clock" | "thread_id" | "format_stderr" => warnings.push(format!(
                    "LogTimeFormat={word} is not supported by muster, ignored \
                     (iso8601, iso8601_ms, rfc5424, rfc5424_ms and short are)"
                )),
                _ => warnings.push(format!(
                    "LogTimeFormat={word} is not a time format, ignored"
                )),
            }
        }
    }
    Settings {
        file,
        level,
        time,
        warnings,
    }
}

/// The open log file, reopened by path on SIGUSR2.
struct LogFile {
    path: PathBuf,
    file: Mutex<File>,
}

static LOG_FILE: OnceLock<LogFile> = OnceLock::new();

/// Sets the level of the installed log (`init`); None where `MUSTER_LOG`
/// chose the filter (it keeps overriding).
type SetLevel = Box<dyn Fn(LevelFilter) + Send + Sync>;
static SET_LEVEL: OnceLock<SetLevel> = OnceLock::new();

/// After `scontrol reconfigure`: the level slurm.conf's `cfg` now asks for
/// (`SlurmctldDebug`/`SlurmdDebug` and the daemon's `-v`), applied to the
/// installed log; unchanged where `MUSTER_LOG` chose it.
pub fn reload_level(daemon: &Daemon, cfg: &conf::Config, verbose: u8) {
    let s = settings(daemon, Some(cfg), verbose);
    if let Some(set) = SET_LEVEL.get() {
        set(s.level);
        tracing::info!("log level now {}", s.level);
    }
    for w in &s.warnings {
        tracing::warn!("{w}");
    }
}

fn level_filter(level: LevelFilter) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::default().add_directive(level.into())
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o640)
        .open(path)
}

impl LogFile {
    fn reopen(&self) -> io::Result<()> {
        let fresh = open(&self.path)?;
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        *file = fresh;
        Ok(())
    }
}

/// Writes each formatted line to the current log file.
struct FileWriter;

impl Write for FileWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match LOG_FILE.get() {
            Some(log) => log
                .file
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write(buf),
            None => io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Lines as Slurm's daemons write them to their log files:
/// `[2026-12-02T10:24:13.123] error: text`, with Slurm's prefixes by level
/// (none for info).
struct SlurmFormat(TimeFormat);

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for SlurmFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let now = chrono::Local::now().format(self.0.chrono_format());
        write!(writer, "[{now}] ")?;
        writer.write_str(match *event.metadata().level() {
            tracing::Level::ERROR => "error: ",
            tracing::Level::WARN => "warning: ",
            tracing::Level::INFO => "",
            tracing::Level::DEBUG => "debug:  ",
            tracing::Level::TRACE => "debug2: ",
        })?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The write end of the pipe the SIGUSR2 handler writes to.
static USR2_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_usr2(_: libc::c_int) {
    let fd = USR2_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; a full pipe (already
        // asked to reopen) loses nothing.
        unsafe { libc::write(fd, b"r".as_ptr().cast(), 1) };
    }
}

/// SIGUSR2 reopens the log file: the handler only wakes a thread (through
/// a pipe), which reopens. Installed with or without a log file, so that
/// a logrotate script sending SIGUSR2 never ends a daemon.
fn watch_usr2() -> io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    // SAFETY: the write end is ours; non-blocking so the handler never waits.
    unsafe { libc::fcntl(write_fd, libc::F_SETFL, libc::O_NONBLOCK) };
    USR2_PIPE.store(write_fd, Ordering::Relaxed);
    // SAFETY: the descriptor is ours alone from here.
    let mut wake: File = unsafe { std::os::fd::FromRawFd::from_raw_fd(read_fd) };
    std::thread::Builder::new()
        .name("log-reopen".into())
        .spawn(move || {
            let mut byte = [0u8; 64];
            while let Ok(n) = io::Read::read(&mut wake, &mut byte) {
                if n == 0 {
                    break;
                }
                if let Some(log) = LOG_FILE.get() {
                    match log.reopen() {
                        Ok(()) => tracing::info!("reopened log file {}", log.path.display()),
                        Err(e) => {
                            tracing::error!("cannot reopen log file {}: {e}", log.path.display())
                        }
                    }
                }
            }
        })?;
    // SAFETY: a zeroed sigaction with a plain handler; the handler only
    // calls write(2).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr2 as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Installs the daemon's log: reads slurm.conf at `conf_path` for its
/// settings (stderr and info where it cannot be read: the daemon reports
/// the error when it reads it itself).
pub fn init(daemon: &Daemon, conf_path: &Path, verbose: u8) {
    let cfg = conf::load(conf_path).ok().map(|l| l.config);
    let s = settings(daemon, cfg.as_ref(), verbose);
    // An empty MUSTER_LOG is no MUSTER_LOG.
    let from_env = std::env::var("MUSTER_LOG")
        .is_ok_and(|v| !v.is_empty())
        .then(|| tracing_subscriber::EnvFilter::try_from_env("MUSTER_LOG").ok())
        .flatten();
    let reloadable = from_env.is_none();
    let filter = from_env.unwrap_or_else(|| level_filter(s.level));
    let mut open_error = None;
    if let Some(path) = &s.file {
        match open(path) {
            Ok(file) => {
                let _ = LOG_FILE.set(LogFile {
                    path: path.clone(),
                    file: Mutex::new(file),
                });
            }
            Err(e) => open_error = Some(format!("cannot open log file {}: {e}", path.display())),
        }
    }
    if LOG_FILE.get().is_some() {
        let b = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(|| FileWriter)
            .with_ansi(false)
            .event_format(SlurmFormat(s.time))
            .with_filter_reloading();
        let handle = b.reload_handle();
        if b.try_init().is_ok() && reloadable {
            let _ = SET_LEVEL.set(Box::new(move |l| {
                let _ = handle.reload(level_filter(l));
            }));
        }
    } else {
        let b = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(io::stderr)
            .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
            .with_filter_reloading();
        let handle = b.reload_handle();
        if b.try_init().is_ok() && reloadable {
            let _ = SET_LEVEL.set(Box::new(move |l| {
                let _ = handle.reload(level_filter(l));
            }));
        }
    }
    if let Some(e) = open_error {
        tracing::error!("{e}; logging to stderr");
    }
    for w in &s.warnings {
        tracing::warn!("{w}");
    }
    if let Err(e) = watch_usr2() {
        tracing::warn!("SIGUSR2 will not reopen the log file: {e}");
    }
}

/// The default slurm.conf: `SLURM_CONF`, else /etc/slurm/slurm.conf (as
/// the daemons find it).
pub fn default_conf() -> PathBuf {
    std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/slurm/slurm.conf"))
}

/// This host's short name (the node daemon's name without `-N`).
pub fn short_hostname() -> String {
    let mut s = String::new();
    if let Ok(h) = nix::unistd::gethostname() {
        let _ = write!(s, "{}", h.to_string_lossy());
    }
    s.split('.').next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests;
