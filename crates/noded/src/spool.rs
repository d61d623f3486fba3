//! The daemon's memory of its jobs on disk, and what a restarted daemon
//! finds there.
//!
//! ```text
//!   <spool>/jobNNNNN/        one per job, until the controller acknowledged its end
//!                            (then emptied and kept as free.N for a later job: `slots`)
//!     slurm_script            the batch script                    (daemon, at launch)
//!     job.log                 one record a line, appended:
//!       record {JobRecord}      id, user, run                     (daemon, creates the file)
//!       pids {Pids}             supervisor and script             (supervisor, after start)
//!       status {LogStatus}      raw wait status, launch failure,  (supervisor, last)
//!                               what the script used
//!     usage.live              the newest usage sample (sstat)     (supervisor, while it runs)
//! ```
//!
//! Who may read what: the spool directory is 0711 (others may reach a
//! script by its path, which the job's own processes do, but not list the
//! jobs), a job's directory 0711 where its owner is not the daemon's user
//! and 0700 where it is, its script the owner's (0700), and every other
//! file the daemon's alone (0600): the log holds the job's environment.
//! [`make_private`] tightens a spool left looser at the daemon's start.
//!
//! Each record is one `write` on a file opened for appending, so a reader
//! (a daemon started after a crash) sees it whole or not at all; a record
//! cut short (by a crash of the host, or a full disk) is a line that does
//! not parse, and is skipped. Every record starts on a line of its own
//! (a newline before it), so one written after a cut record is still read.
//! The supervisor writes `status` last and exits right after: a supervisor
//! that is gone without a `status` was killed. One file instead of a file
//! per record (each written under a temporary name and renamed, a new
//! inode each time) is what a short job costs the file system least.
//!
//! Daemons before 2026-12-03 wrote `job.json`, `pids` and `status`, each
//! whole under a temporary name and renamed into place; what the log lacks
//! is read from those files, so a daemon upgraded while jobs ran finds them.
//!
//! Nothing here is fsynced. What the files must survive is the daemon's
//! own death (a crash, SIGKILL, an upgrade): its jobs run on, and the next
//! daemon re-attaches to them and reports their ends from these files. The
//! page cache outlives a process, so a record appended (one `write`
//! returned) is there for the next daemon whether or not it reached the
//! disk: the supervisor records its pids before it answers the launch,
//! which is what a re-attach needs, and its end before it exits, which is
//! what the daemon waits for. What fsync would add
//! is survival of the host's crash (power, kernel), and then the jobs died
//! with the host: the daemon that starts after the reboot registers with a
//! boot time later than the controller's last contact with the node, and
//! the controller ends every job it held as running there and that the
//! daemon does not list (NODE_FAIL, or a requeue, as
//! Slurm does for a node that rebooted unexpectedly), whatever the spool
//! kept. A record cut short by such a crash reads as missing (a job
//! without its end counts as killed), never as another job's data. The
//! fsyncs cost five disk flushes per job on the launch and end paths.
//!
//! A process is named by its pid and its start time (`/proc/<pid>/stat`
//! field 22, clock ticks since boot), so a pid reused by an unrelated
//! process is never taken for the job's.

use model::{ExitCode, JobId};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Creates the spool directory (0711) where missing, and takes read and
/// write permission for others off it where it has them, logged.
pub fn make_private(spool: &Path) {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o711)
        .create(spool)
        .and_then(|()| std::fs::metadata(spool));
    let mode = match made {
        Ok(meta) => meta.mode() & 0o7777,
        Err(e) => {
            tracing::warn!("cannot create the spool {}: {e}", spool.display());
            return;
        }
    };
    if mode & 0o066 == 0 {
        return;
    }
    let tight = mode & !0o066;
    match std::fs::set_permissions(spool, std::fs::Permissions::from_mode(tight)) {
        Ok(()) => tracing::info!(
            "spool {} was listable by other users: mode {mode:04o} -> {tight:04o}",
            spool.display()
        ),
        Err(e) => tracing::warn!(
            "cannot make the spool {} private: {e}; other users can list its jobs",
            spool.display()
        ),
    }
}

/// The job's log: its record, the supervisor's pids, its end.
pub const LOG_FILE: &str = "job.log";
/// The record the daemon kept per job before the log.
pub const RECORD_FILE: &str = "job.json";
/// The supervisor's and the script's pids, before the log.
pub const PIDS_FILE: &str = "pids";
/// The script's end, and what it used, before the log.
pub const STATUS_FILE: &str = "status";
/// What the script used, as daemons before 2026-12 wrote it beside
/// `status` (read when `status` has no usage line).
pub const USAGE_FILE: &str = "usage";
/// The supervisor's newest usage sample while the script runs (sstat).
pub const LIVE_FILE: &str = "usage.live";

/// One process, recognisable after its pid is reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcId {
    /// Its pid.
    pub pid: i32,
    /// Its start time in clock ticks since boot.
    pub start: u64,
}

impl ProcId {
    /// `pid` as it is now, zombie or not; `None` when no such process
    /// exists.
    pub fn of(pid: i32) -> Option<ProcId> {
        read_stat(pid).map(|(_, start)| ProcId { pid, start })
    }

    /// True while this very process runs (a zombie has ended).
    pub fn is_alive(self) -> bool {
        self.pid > 0
            && matches!(read_stat(self.pid), Some((state, start))
                if start == self.start && state != 'Z' && state != 'X')
    }
}

fn read_stat(pid: i32) -> Option<(char, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The state letter and the start time (field 22) from the text of
/// `/proc/<pid>/stat`. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from its last `)`.
pub fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 is the state; field 22 is 19 further on.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// What the supervisor started: itself and the batch script, whose pid is
/// also its process group and session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pids {
    /// The supervisor (`noded --stepd`).
    pub stepd: ProcId,
    /// The batch script (`SLURM_TASK_PID`).
    pub script: ProcId,
}

/// How far the daemon got with a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordState {
    /// The supervisor is being started.
    Launching,
    /// The supervisor answered: the script runs (written by daemons
    /// before 2026-12; the supervisor's pid file says so now).
    Running,
}

/// The daemon's record of one job (`job.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    pub job_id: JobId,
    /// Whose job it is.
    pub uid: u32,
    /// The user's name.
    pub user: String,
    /// Launching or running.
    pub state: RecordState,
    /// Known once running.
    pub pids: Option<Pids>,
    /// Which run of the job (the launch's `restarts`).
    #[serde(default)]
    pub restarts: u32,
}

/// A job's end as read from its `status` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Ended {
    /// The exit code, from the raw wait status.
    pub exit: ExitCode,
    /// Set when the script never started.
    pub launch_failed: Option<String>,
    /// What the script used, when its supervisor measured it (`usage` file).
    pub usage: Option<Box<proto::StepUsage>>,
    /// How many processes of the batch step the OOM killer killed.
    pub oom_kills: u64,
    /// The file's (device, inode) and the token its writer put in it: the
    /// job directory is removed only while it still holds this very file,
    /// not a relaunch's (which may get the same inode number back).
    file: (u64, u64, Option<String>),
}

/// The spool directory of a job: Slurm's `job%05u`.
pub fn job_dir(spool_dir: &Path, job_id: JobId) -> PathBuf {
    spool_dir.join(format!("job{:05}", job_id.0))
}

/// The job id of a spool entry named `jobNNNNN`.
pub fn parse_job_dir_name(name: &str) -> Option<JobId> {
    let digits = name.strip_prefix("job")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(JobId)
}

/// Writes `path` whole: a temporary file, then a rename (no fsync: see
/// the module's documentation).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// A job's end as its log records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct LogStatus {
    /// The raw wait status.
    raw: i32,
    /// Tells one end from another written in a replaced log.
    token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    launch_failed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<proto::StepUsage>,
    #[serde(default, skip_serializing_if = "proto::is_zero_u64")]
    oom_kills: u64,
}

/// What a job's log holds: for each kind, the first whole record.
#[derive(Debug, Default)]
struct Log {
    record: Option<JobRecord>,
    pids: Option<Pids>,
    status: Option<LogStatus>,
}

/// Parses a log's text. Lines that do not parse (a record cut short,
/// anything unknown) are skipped.
fn parse_log(text: &str) -> Log {
    let mut log = Log::default();
    for line in text.split('\n') {
        let Some((tag, json)) = line.split_once(' ') else {
            continue;
        };
        match tag {
            "record" if log.record.is_none() => log.record = serde_json::from_str(json).ok(),
            "pids" if log.pids.is_none() => log.pids = serde_json::from_str(json).ok(),
            "status" if log.status.is_none() => log.status = serde_json::from_str(json).ok(),
            _ => {}
        }
    }
    log
}

/// One record as appended: a newline (a record cut short before it ends
/// its line), the tag, the JSON, a newline.
pub(crate) fn log_line<T: Serialize>(tag: &str, value: &T) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    line.push(b'\n');
    line.extend_from_slice(tag.as_bytes());
    line.push(b' ');
    serde_json::to_writer(&mut line, value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Appends one record to the log of the job in `dir`, in one `write`;
/// `create`: the log is new (the daemon's first record), else it may or
/// may not exist yet (a directory of a daemon before the log).
fn append(dir: &Path, line: &[u8], create: bool) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut opts = std::fs::OpenOptions::new();
    opts.append(true).mode(0o600);
    if create {
        opts.create_new(true);
    } else {
        opts.create(true);
    }
    let mut f = opts.open(dir.join(LOG_FILE))?;
    // One write: a short one (a full disk) leaves a cut record.
    let n = f.write(line)?;
    if n != line.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "short write to the job log",
        ));
    }
    Ok(())
}

/// The log of the job in `dir` (empty when there is none), with the
/// file's (device, inode).
fn read_log(dir: &Path) -> std::io::Result<Option<(Log, (u64, u64))>> {
    let file = match std::fs::File::open(dir.join(LOG_FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let text = std::io::read_to_string(file)?;
    Ok(Some((parse_log(&text), (meta.dev(), meta.ino()))))
}

/// Creates the job's log with the daemon's record of the job (the daemon
/// writes it with the script: `slots::Slots::create_job_dir`).
#[cfg(test)]
pub fn write_record(dir: &Path, record: &JobRecord) -> std::io::Result<()> {
    append(dir, &log_line("record", record)?, true)
}

/// The daemon's record of a job, if readable.
pub fn read_record(dir: &Path) -> Option<JobRecord> {
    match read_log(dir) {
        Ok(Some((
            Log {
                record: Some(record),
                ..
            },
            _,
        ))) => Some(record),
        _ => read_json(&dir.join(RECORD_FILE)),
    }
}

/// Records the supervisor's pids.
pub fn write_pids(dir: &Path, pids: &Pids) -> std::io::Result<()> {
    append(dir, &log_line("pids", pids)?, false)
}

/// The supervisor's pids, if recorded.
pub fn read_pids(dir: &Path) -> Option<Pids> {
    match read_log(dir) {
        Ok(Some((
            Log {
                pids: Some(pids), ..
            },
            _,
        ))) => Some(pids),
        _ => read_json(&dir.join(PIDS_FILE)),
    }
}

/// Starts the line of a `status` file that holds the usage (JSON).
const USAGE_PREFIX: &str = "usage ";

/// The text of a `status` file as daemons before the log wrote it: the
/// raw wait status on the first line, then the launch failure, if any.
#[cfg(test)]
pub fn format_status(raw: i32, launch_failed: Option<&str>) -> String {
    match launch_failed {
        Some(msg) => format!("{raw}\n{}\n", msg.replace('\n', " ")),
        None => format!("{raw}\n"),
    }
}

/// Parses a `status` file: (raw wait status, launch failure). A usage line
/// is not part of the failure.
pub fn parse_status(text: &str) -> Option<(i32, Option<String>)> {
    let (first, rest) = text.split_once('\n')?;
    // The first line is the status, then (from `write_status`) a token.
    let raw = first.split_whitespace().next()?.parse().ok()?;
    let msg = rest
        .lines()
        .filter(|l| !l.starts_with(USAGE_PREFIX))
        .collect::<Vec<_>>()
        .join(" ");
    let msg = msg.trim_end();
    Some((raw, (!msg.is_empty()).then(|| msg.to_string())))
}

/// The usage line of a `status` file, if it has one.
fn parse_status_usage(text: &str) -> Option<proto::StepUsage> {
    let line = text.lines().find_map(|l| l.strip_prefix(USAGE_PREFIX))?;
    serde_json::from_str(line).ok()
}

/// Records a job's end, with what the script used when it was measured;
/// the supervisor's last act. One record: the end and its usage appear
/// together.
pub fn write_status(
    dir: &Path,
    raw: i32,
    launch_failed: Option<&str>,
    usage: Option<&proto::StepUsage>,
) -> std::io::Result<()> {
    write_end(dir, raw, launch_failed, usage, 0)
}

/// [`write_status`], with how many of the batch step's processes the OOM
/// killer killed.
pub fn write_end(
    dir: &Path,
    raw: i32,
    launch_failed: Option<&str>,
    usage: Option<&proto::StepUsage>,
    oom_kills: u64,
) -> std::io::Result<()> {
    let status = LogStatus {
        raw,
        token: token(),
        // As a `status` file had it: one line, no trailing blanks.
        launch_failed: launch_failed.map(|m| m.replace('\n', " ").trim_end().to_string()),
        usage: usage.cloned(),
        oom_kills,
    };
    append(dir, &log_line("status", &status)?, false)
}

/// A token that tells one `status` file from another written in its place.
fn token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{:x}-{nanos:x}-{n:x}", std::process::id())
}

/// The job's end, `None` while it has not ended (no `status` yet).
pub fn read_status(dir: &Path) -> std::io::Result<Option<Ended>> {
    if let Some((log, (dev, ino))) = read_log(dir)? {
        if let Some(status) = log.status {
            let launch_failed = status.launch_failed.filter(|m| !m.is_empty());
            return Ok(Some(Ended {
                exit: ExitCode::from_wait_status(status.raw),
                launch_failed,
                usage: status.usage.map(Box::new),
                oom_kills: status.oom_kills,
                file: (dev, ino, Some(status.token)),
            }));
        }
    }
    read_status_file(dir)
}

/// The job's end from a `status` file (daemons before the log).
fn read_status_file(dir: &Path) -> std::io::Result<Option<Ended>> {
    let path = dir.join(STATUS_FILE);
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let text = std::io::read_to_string(file)?;
    let (raw, launch_failed) = parse_status(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: not a wait status: {text:?}", path.display()),
        )
    })?;
    let usage = parse_status_usage(&text)
        .or_else(|| {
            std::fs::read(dir.join(USAGE_FILE))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
        })
        .map(Box::new);
    Ok(Some(Ended {
        exit: ExitCode::from_wait_status(raw),
        launch_failed,
        usage,
        oom_kills: 0,
        file: (
            meta.dev(),
            meta.ino(),
            text.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .map(str::to_string),
        ),
    }))
}

/// Held while a job directory is checked and removed, or replaced and
/// filled for a new run: a job that requeues itself is launched again while
/// its previous run's directory is being removed, and the removal must not
/// take the new run's directory with it.
pub static DIR_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What keeps a reported job's directory, emptied, for a later launch
/// instead of removing it (`slots::Slots`).
pub trait Recycle {
    /// Empties `dir` and keeps it for a later launch.
    fn recycle(&self, dir: &Path) -> std::io::Result<()>;
}

/// Removes a reported job's directory (or empties it and keeps it for a
/// later launch, with `slots`), unless a relaunch of the same job id
/// replaced it meanwhile.
pub fn remove_reported(
    dir: &Path,
    ended: &Ended,
    slots: Option<&dyn Recycle>,
) -> std::io::Result<()> {
    let _guard = DIR_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    match read_status(dir) {
        Ok(Some(now)) if now.file == ended.file => match slots {
            Some(slots) => slots.recycle(dir),
            None => std::fs::remove_dir_all(dir),
        },
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The flag of the zygote's command line (`noded --stepd-zygote SPOOL`),
/// by which a supervisor it forked is known in /proc.
pub const ZYGOTE_FLAG: &str = "--stepd-zygote";

/// True when `id` is the supervisor of the job in `dir`: the same process
/// (pid and start time) and its command line names `--stepd` and `dir`
/// (executed by the daemon), or `--stepd-zygote` and the spool directory
/// that holds `dir` (forked by the zygote).
pub fn is_supervisor(id: ProcId, dir: &Path) -> bool {
    if !id.is_alive() {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{}/cmdline", id.pid)) else {
        return false;
    };
    names_supervisor(&cmdline, dir)
}

/// True when the command line `cmdline` (NUL-separated) is that of a
/// supervisor of the job in `dir`.
pub fn names_supervisor(cmdline: &[u8], dir: &Path) -> bool {
    let spool = dir.parent().map(|p| p.as_os_str().as_encoded_bytes());
    let dir = dir.as_os_str().as_encoded_bytes();
    let mut args = cmdline.split(|b| *b == 0);
    let mut flag: &[u8] = b"";
    args.any(|arg| {
        let hit = (flag == b"--stepd" && arg == dir)
            || (flag == ZYGOTE_FLAG.as_bytes() && Some(arg) == spool);
        flag = arg;
        hit
    })
}

/// A job directory found at start-up.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// The job ended while no daemon watched: report it.
    Ended {
        /// The job.
        job_id: JobId,
        /// Its directory.
        dir: PathBuf,
        /// How it ended.
        ended: Ended,
    },
    /// Its supervisor still runs: re-attach.
    Running {
        /// The job.
        job_id: JobId,
        /// Its directory.
        dir: PathBuf,
        /// The supervisor and the script.
        pids: Pids,
    },
    /// No end recorded and no supervisor: it was killed (`pids` known) or
    /// the daemon stopped in the middle of its launch (`pids` unknown).
    Lost {
        /// The job.
        job_id: JobId,
        /// Its directory.
        dir: PathBuf,
        /// What the supervisor had started, if it got that far.
        pids: Option<Pids>,
    },
}

/// What `dir` says about a job, given whether its supervisor still runs.
pub fn classify(
    job_id: JobId,
    dir: PathBuf,
    ended: Option<Ended>,
    pids: Option<Pids>,
    supervisor_alive: bool,
) -> Found {
    match (ended, pids) {
        (Some(ended), _) => Found::Ended { job_id, dir, ended },
        (None, Some(pids)) if supervisor_alive => Found::Running { job_id, dir, pids },
        (None, pids) => Found::Lost { job_id, dir, pids },
    }
}

/// Every job directory under `spool_dir`, in job id order. A missing spool
/// directory holds none.
pub fn scan(spool_dir: &Path) -> std::io::Result<Vec<Found>> {
    let entries = match std::fs::read_dir(spool_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(job_id) = entry.file_name().to_str().and_then(parse_job_dir_name) else {
            continue;
        };
        if entry.file_type()?.is_dir() {
            dirs.push((job_id, entry.path()));
        }
    }
    dirs.sort();
    let mut found = Vec::new();
    for (job_id, dir) in dirs {
        // A log or status file that cannot be read is reported as missing; the
        // job then counts as lost rather than blocking the start.
        let ended = match read_status(&dir) {
            Ok(ended) => ended,
            Err(e) => {
                tracing::warn!(job = %job_id, "{e}");
                None
            }
        };
        // The supervisor's own file is the truth; records of daemons
        // before 2026-12 copied it once the start was answered.
        let pids = read_pids(&dir).or_else(|| read_record(&dir).and_then(|r| r.pids));
        let alive = pids.is_some_and(|p| is_supervisor(p.stepd, &dir));
        found.push(classify(job_id, dir, ended, pids, alive));
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
