//! Starting a batch job. The daemon writes the job's spool directory and
//! starts the job's supervisor (`stepd`, forked by the `zygote`, else a
//! re-execution of this binary);
//! the supervisor starts the batch script: the user switch, the working
//! directory, stdio and the exec (slurmstepd's part of a batch launch).
//!
//! ```text
//!   daemon: prepare() --> start_supervisor() --StepdSpec on stdin------> stepd::main
//!                               ^                                           |
//!                               +--------StepdAnswer on stdout-- spawn_script()
//! ```
//!
//! The script runs as a new session, so its process group is the job.
//! Everything the script's child does between fork and exec is
//! async-signal-safe (no allocation, no locks): signal, setsid, setgroups,
//! setgid, setuid, umask, chdir, open, dup2, write. Output files are opened
//! by the child after the user switch, so they are created as, and checked
//! against the permissions of, the job's user.

use crate::env::{job_env, NodeEnv};
use crate::spool::{self, JobRecord, Pids, RecordState};
use proto::BatchLaunch;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

pub use crate::spool::job_dir;

/// Sets `SLURM_TASK_PID` to the shell's own pid, then execs the script in
/// its place, so the variable names the script's process. Used when the
/// script cannot be executed directly (no `#!` line, a missing
/// interpreter): the shell then runs it, or says why not, as it always did.
const WRAPPER: &str = "SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec \"$0\" \"$@\"";

/// What the node contributes to every launch.
#[derive(Clone, Debug)]
pub struct LaunchContext<'a> {
    /// This node's name.
    pub node_name: &'a str,
    /// Absolute slurm.conf path.
    pub conf_path: &'a str,
    /// `SlurmdSpoolDir` for this node.
    pub spool_dir: &'a Path,
    /// The daemon's effective uid.
    pub daemon_uid: u32,
    /// The program that runs `noded --stepd DIR` (normally this binary).
    pub stepd_program: &'a Path,
    /// How the supervisor gathers usage.
    pub gather: &'a crate::gather::GatherSettings,
}

/// What the daemon hands a supervisor on its stdin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepdSpec {
    /// The launch request.
    pub launch: BatchLaunch,
    /// This node's name.
    pub node_name: String,
    /// Absolute slurm.conf path.
    pub conf_path: String,
    /// Run the script as `launch.uid` (the daemon is root and the job is
    /// another user's).
    pub switch_user: bool,
    /// How to gather the script's usage.
    #[serde(default)]
    pub gather: crate::gather::GatherSettings,
}

/// The supervisor's one line on its stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepdAnswer {
    /// The script runs; the pids are also in the `pids` file.
    Started(Pids),
    /// The script could not be started; the `status` file says why.
    Failed(String),
}

/// A supervisor that answered.
#[derive(Debug)]
pub struct Supervisor {
    /// How the daemon learns its end.
    pub handle: SupervisorHandle,
    /// What it said.
    pub answer: StepdAnswer,
}

/// A supervisor process, as the daemon holds it.
#[derive(Debug)]
pub enum SupervisorHandle {
    /// Executed by the daemon: its child, reaped by it.
    Child(tokio::process::Child),
    /// Forked by the zygote (`zygote`), which reaps it.
    Forked,
}

/// How long a supervisor may take to start the script and answer.
const STEPD_ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// `path` against `work_dir` when relative; `default` when empty.
pub fn resolve_path(work_dir: &str, path: &str, default: &str) -> String {
    let path = if path.is_empty() { default } else { path };
    if path.starts_with('/') || work_dir.is_empty() {
        path.to_string()
    } else {
        format!("{}/{}", work_dir.trim_end_matches('/'), path)
    }
}

/// strerror(3) text, without Rust's " (os error N)".
pub fn os_error_text(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The line slurmstepd writes to the job's stderr when it cannot enter the
/// working directory.
pub fn chdir_error_line(work_dir: &str, errno: i32) -> String {
    format!(
        "slurmstepd: error: couldn't chdir to `{work_dir}': {}: going to /tmp instead\n",
        os_error_text(errno)
    )
}

/// The child's steps, reported through the side pipe when one fails.
const STEP_SETSID: u8 = 1;
const STEP_USER: u8 = 2;
const STEP_STDIN: u8 = 3;
const STEP_STDOUT: u8 = 4;
const STEP_STDERR: u8 = 5;

/// Signals the supervisor ignores, so that only the job's own signals
/// (sent to the script's group, not to the supervisor) affect the job.
pub const SUPERVISOR_IGNORES: [libc::c_int; 4] =
    [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGPIPE];

/// Highest errno with a prepared chdir message.
const MAX_ERRNO: usize = 134;

/// Everything the child needs, allocated before fork.
struct ChildSetup {
    switch: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>,
    umask: Option<libc::mode_t>,
    work_dir: CString,
    chdir_lines: Vec<Vec<u8>>,
    stdin: CString,
    stdout: CString,
    stderr: Option<CString>,
    append: bool,
    report_fd: i32,
    /// The script itself, executed with `SLURM_TASK_PID` set to its pid
    /// (one program started, not a shell that then starts the script).
    direct: Option<crate::taskd::ExecImage>,
    /// `/bin/sh -c WRAPPER script args`, when the direct exec fails.
    wrapped: Option<crate::taskd::ExecImage>,
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl ChildSetup {
    /// Runs in the child between fork and exec: async-signal-safe only.
    /// Execs the script itself (directly, else through the shell); returns
    /// only when neither could be, or when the spawn's own exec is to run.
    fn apply(&mut self) -> std::io::Result<()> {
        let fail = |step: u8| -> std::io::Error {
            let e = errno();
            // SAFETY: writing one byte from a live buffer to an fd we own.
            unsafe { libc::write(self.report_fd, (&step as *const u8).cast(), 1) };
            std::io::Error::from_raw_os_error(e)
        };
        // SAFETY: plain system calls on data prepared before fork; no
        // allocation or locking happens here.
        unsafe {
            // The supervisor ignores these; an ignored signal stays ignored
            // across exec, and the job must see them.
            for sig in SUPERVISOR_IGNORES {
                libc::signal(sig, libc::SIG_DFL);
            }
            if libc::setsid() < 0 {
                return Err(fail(STEP_SETSID));
            }
            if let Some((uid, gid, groups)) = &self.switch {
                if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0
                    || libc::setgid(*gid) != 0
                    || libc::setuid(*uid) != 0
                {
                    return Err(fail(STEP_USER));
                }
            }
            if let Some(mask) = self.umask {
                libc::umask(mask);
            }
            let mut chdir_errno = 0;
            if libc::chdir(self.work_dir.as_ptr()) != 0 {
                chdir_errno = errno();
                libc::chdir(c"/tmp".as_ptr());
            }
            let fd = libc::open(self.stdin.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(fail(STEP_STDIN));
            }
            libc::dup2(fd, 0);
            let mode = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_CLOEXEC
                | if self.append {
                    libc::O_APPEND
                } else {
                    libc::O_TRUNC
                };
            let fd = libc::open(self.stdout.as_ptr(), mode, 0o666 as libc::c_uint);
            if fd < 0 {
                return Err(fail(STEP_STDOUT));
            }
            libc::dup2(fd, 1);
            match &self.stderr {
                None => {
                    libc::dup2(1, 2);
                }
                Some(path) => {
                    let fd = libc::open(path.as_ptr(), mode, 0o666 as libc::c_uint);
                    if fd < 0 {
                        return Err(fail(STEP_STDERR));
                    }
                    libc::dup2(fd, 2);
                }
            }
            if chdir_errno != 0 {
                let line = self
                    .chdir_lines
                    .get(chdir_errno as usize)
                    .unwrap_or(&self.chdir_lines[0]);
                libc::write(2, line.as_ptr().cast(), line.len());
            }
        }
        if let Some(image) = self.direct.as_mut() {
            let _ = image.exec();
        }
        match self.wrapped.as_mut() {
            Some(image) => Err(image.exec()),
            None => Ok(()),
        }
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Supplementary groups of `user` with primary group `gid`.
pub(crate) fn groups_of(user: &str, gid: u32) -> Result<Vec<libc::gid_t>, String> {
    let name = CString::new(user).map_err(|_| "user name contains a NUL byte".to_string())?;
    let groups = nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid))
        .map_err(|e| format!("cannot read the groups of user {user}: {e}"))?;
    Ok(groups.into_iter().map(|g| g.as_raw()).collect())
}

/// Where the script's stdio and working directory are.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Paths {
    work_dir: String,
    stdin: String,
    stdout: String,
    stderr: String,
}

impl Paths {
    fn of(launch: &BatchLaunch) -> Paths {
        let work_dir = if launch.work_dir.is_empty() {
            "/tmp"
        } else {
            &launch.work_dir
        };
        let stdout = resolve_path(
            work_dir,
            &launch.stdout,
            &format!("slurm-{}.out", launch.job_id),
        );
        Paths {
            stderr: resolve_path(work_dir, &launch.stderr, &stdout),
            stdin: resolve_path(work_dir, &launch.stdin, "/dev/null"),
            work_dir: work_dir.to_string(),
            stdout,
        }
    }

    /// Refuses names that cannot be passed to the system.
    fn check(&self, launch: &BatchLaunch) -> Result<(), String> {
        cstring("working directory", &self.work_dir)?;
        cstring("stdin path", &self.stdin)?;
        cstring("stdout path", &self.stdout)?;
        cstring("stderr path", &self.stderr)?;
        cstring("user name", &launch.user)?;
        Ok(())
    }
}

/// Writes the script into a fresh job directory. For another user's job
/// the directory stays the daemon's (mode 0711: the user may reach the
/// script but not list, add or replace the supervisor's files) and only
/// the script is the user's.
fn write_script(dir: &Path, script: &str, owner: Option<(u32, u32)>) -> std::io::Result<PathBuf> {
    let _guard = crate::spool::DIR_LOCK
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if dir.exists() {
        // A leftover of an earlier run of the same job id.
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir(dir)?;
    let mode = if owner.is_some() { 0o711 } else { 0o700 };
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    let path = dir.join("slurm_script");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)?;
    // No fsync: see the `spool` module.
    f.write_all(script.as_bytes())?;
    drop(f);
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
    }
    Ok(path)
}

/// True when `launch` runs as another user than the daemon.
fn switches_user(launch: &BatchLaunch, ctx: &LaunchContext<'_>) -> bool {
    launch.uid != ctx.daemon_uid
}

/// Checks `launch` and writes its job directory: the script and the
/// daemon's record (state `launching`). Returns the directory, or why the
/// launch is refused (answered `Failed`: another user's job on a non-root
/// daemon, an unusable spool directory).
///
/// What goes wrong later (an output file, the user switch, the exec) is
/// answered `Ok` and reported as `JobExited` with `launch_failed`, as
/// Slurm fails the job rather than the launch request.
pub fn prepare(launch: &BatchLaunch, ctx: &LaunchContext<'_>) -> Result<PathBuf, String> {
    let switch_user = switches_user(launch, ctx);
    if switch_user && ctx.daemon_uid != 0 {
        return Err(
            "cannot run jobs for other users unless the node daemon runs as root".to_string(),
        );
    }
    Paths::of(launch).check(launch)?;
    let dir = job_dir(ctx.spool_dir, launch.job_id);
    let owner = switch_user.then_some((launch.uid, launch.gid));
    let record = JobRecord {
        job_id: launch.job_id,
        uid: launch.uid,
        user: launch.user.clone(),
        state: RecordState::Launching,
        pids: None,
        restarts: launch.restarts,
    };
    let written =
        write_script(&dir, &launch.script, owner).and_then(|_| spool::write_record(&dir, &record));
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(format!(
            "cannot write the batch script into {}: {e}",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Starts the supervisor of the job in `dir` and waits for its answer:
/// forked by the zygote when `zygote` is its socket for this launch
/// (`zygote::Zygote::send`), else by executing `noded --stepd DIR`, which
/// is also what happens when the zygote does not name a supervisor.
/// An error means no script runs; the supervisor, if any, is killed.
pub async fn start_supervisor(
    launch: &BatchLaunch,
    ctx: &LaunchContext<'_>,
    dir: &Path,
    zygote: Option<UnixStream>,
) -> Result<Supervisor, String> {
    let spec = StepdSpec {
        launch: launch.clone(),
        node_name: ctx.node_name.to_string(),
        conf_path: ctx.conf_path.to_string(),
        switch_user: switches_user(launch, ctx),
        gather: ctx.gather.clone(),
    };
    let spec = serde_json::to_vec(&spec).map_err(|e| format!("cannot encode the launch: {e}"))?;
    if let Some(sock) = zygote {
        match forked_pid(sock).await {
            Ok((sock, pid)) => {
                let (rx, tx) = sock.into_split();
                return match tokio::time::timeout(STEPD_ANSWER_TIMEOUT, talk(tx, rx, &spec)).await {
                    Ok(Ok(answer)) => Ok(Supervisor {
                        handle: SupervisorHandle::Forked,
                        answer,
                    }),
                    Ok(Err(msg)) => {
                        kill_forked(pid);
                        Err(msg)
                    }
                    Err(_) => {
                        kill_forked(pid);
                        Err(format!(
                            "the job supervisor did not answer within {STEPD_ANSWER_TIMEOUT:?}"
                        ))
                    }
                };
            }
            Err(e) => tracing::warn!(
                job = %launch.job_id,
                "the supervisor zygote did not fork ({e}); executing the supervisor"
            ),
        }
    }
    let mut cmd = tokio::process::Command::new(ctx.stepd_program);
    // `muster noded --stepd DIR`; a test binary that calls `noded::main`
    // skips the leading word as it skips a program name.
    cmd.arg0("muster")
        .arg("noded")
        .arg("--stepd")
        .arg(dir)
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(false);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot start the job supervisor {}: {e}",
            ctx.stepd_program.display()
        )
    })?;
    let exchange = async {
        let stdin = child.stdin.take().ok_or("no supervisor stdin")?;
        let stdout = child.stdout.take().ok_or("no supervisor stdout")?;
        talk(stdin, stdout, &spec).await
    };
    let answer = match tokio::time::timeout(STEPD_ANSWER_TIMEOUT, exchange).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(msg)) => {
            let _ = child.start_kill();
            return Err(msg);
        }
        Err(_) => {
            let _ = child.start_kill();
            return Err(format!(
                "the job supervisor did not answer within {STEPD_ANSWER_TIMEOUT:?}"
            ));
        }
    };
    Ok(Supervisor {
        handle: SupervisorHandle::Child(child),
        answer,
    })
}

/// Hands the launch to a supervisor and reads its one-line answer.
async fn talk(
    mut tx: impl tokio::io::AsyncWrite + Unpin,
    rx: impl tokio::io::AsyncRead + Unpin,
    spec: &[u8],
) -> Result<StepdAnswer, String> {
    tx.write_all(spec)
        .await
        .map_err(|e| format!("cannot hand the launch to the job supervisor: {e}"))?;
    // The supervisor reads to the end: close our writing side.
    tx.shutdown()
        .await
        .map_err(|e| format!("cannot hand the launch to the job supervisor: {e}"))?;
    drop(tx);
    let mut line = String::new();
    tokio::io::BufReader::new(rx)
        .read_line(&mut line)
        .await
        .map_err(|e| format!("cannot read the job supervisor's answer: {e}"))?;
    serde_json::from_str::<StepdAnswer>(&line)
        .map_err(|_| format!("the job supervisor did not start: {:?}", line.trim()))
}

/// How long the zygote may take to fork and name the supervisor.
const ZYGOTE_FORK_TIMEOUT: Duration = Duration::from_secs(5);

/// Reads the pid line the zygote writes after its fork, byte by byte (the
/// supervisor's answer follows on the same socket).
async fn forked_pid(sock: UnixStream) -> Result<(tokio::net::UnixStream, i32), String> {
    use tokio::io::AsyncReadExt;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut sock = tokio::net::UnixStream::from_std(sock).map_err(|e| e.to_string())?;
    let read = async {
        let mut line = Vec::with_capacity(12);
        while line.len() < 12 {
            match sock.read_u8().await {
                Ok(b'\n') => break,
                Ok(b) => line.push(b),
                Err(e) => return Err(e.to_string()),
            }
        }
        std::str::from_utf8(&line)
            .ok()
            .and_then(|s| s.parse::<i32>().ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| "no pid".to_string())
    };
    let pid = tokio::time::timeout(ZYGOTE_FORK_TIMEOUT, read)
        .await
        .map_err(|_| "no answer".to_string())??;
    Ok((sock, pid))
}

/// Kills a forked supervisor that did not answer.
fn kill_forked(pid: i32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// Starts the batch script of `spec`, whose copy is `script`, as a child
/// of the calling process (the supervisor). Returns its pid, which is also
/// its process group and session, or why it could not start. With a cgroup
/// the script starts inside it.
pub fn spawn_script(
    spec: &StepdSpec,
    script: &Path,
    cgroup: Option<&crate::gather::TaskCgroup>,
) -> Result<i32, String> {
    let launch = &spec.launch;
    let paths = Paths::of(launch);
    let env = job_env(
        launch,
        &NodeEnv {
            node_name: &spec.node_name,
            conf_path: &spec.conf_path,
        },
    );
    let umask = env
        .iter()
        .find(|(k, _)| k == "SLURM_UMASK")
        .and_then(|(_, v)| libc::mode_t::from_str_radix(v, 8).ok())
        .filter(|m| *m <= 0o777);
    let switch = if spec.switch_user {
        Some((launch.uid, launch.gid, groups_of(&launch.user, launch.gid)?))
    } else {
        None
    };
    let work_dir = &paths.work_dir;
    let mut chdir_lines = vec![chdir_error_line(work_dir, libc::EIO).into_bytes()];
    chdir_lines.extend((1..MAX_ERRNO as i32).map(|e| chdir_error_line(work_dir, e).into_bytes()));
    let (mut report_rx, report_tx) =
        UnixStream::pair().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let script_arg = script.to_string_lossy().into_owned();
    let direct = crate::taskd::ExecImage::new(&script_arg, &launch.argv, &env);
    let wrapped = crate::taskd::ExecImage::new(
        "/bin/sh",
        &[
            ["-c".to_string(), WRAPPER.to_string(), script_arg.clone()].as_slice(),
            &launch.argv,
        ]
        .concat(),
        &env,
    );
    let mut setup = ChildSetup {
        direct,
        wrapped,
        switch,
        umask,
        work_dir: cstring("working directory", work_dir)?,
        chdir_lines,
        stdin: cstring("stdin path", &paths.stdin)?,
        stderr: if paths.stderr == paths.stdout {
            None
        } else {
            Some(cstring("stderr path", &paths.stderr)?)
        },
        stdout: cstring("stdout path", &paths.stdout)?,
        append: launch.open_append,
        report_fd: report_tx.as_raw_fd(),
    };
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(WRAPPER)
        .arg(script.as_os_str())
        .args(&launch.argv)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: `join_self` and `apply` only make async-signal-safe system
    // calls on memory prepared before fork (see TaskCgroup, ChildSetup).
    // The cgroup is joined first, while the child is still root.
    unsafe {
        if let Some(cg) = cgroup.cloned() {
            cmd.pre_exec(move || {
                cg.join_self();
                Ok(())
            });
        }
        cmd.pre_exec(move || setup.apply());
    }
    let spawned = cmd.spawn();
    drop(report_tx);
    match spawned {
        // The supervisor reaps the script by pid (it needs the raw status
        // and to look before reaping); dropping the handle neither waits
        // nor kills.
        Ok(child) => Ok(child.id() as i32),
        Err(e) => {
            let mut step = [0u8; 1];
            let _ = report_rx.set_nonblocking(true);
            let step = match report_rx.read(&mut step) {
                Ok(1) => step[0],
                _ => 0,
            };
            let err = e
                .raw_os_error()
                .map_or_else(|| e.to_string(), os_error_text);
            Err(match step {
                STEP_SETSID => format!("setsid failed: {err}"),
                STEP_USER => format!(
                    "cannot switch to user {} (uid {} gid {}): {err}",
                    launch.user, launch.uid, launch.gid
                ),
                STEP_STDIN => format!("Could not open stdin file {}: {err}", paths.stdin),
                STEP_STDOUT => format!("Could not open stdout file {}: {err}", paths.stdout),
                STEP_STDERR => format!("Could not open stderr file {}: {err}", paths.stderr),
                _ => format!("cannot execute /bin/sh for {}: {err}", script.display()),
            })
        }
    }
}

#[cfg(test)]
mod tests;
