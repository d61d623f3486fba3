//! Starting a batch script: the spool directory, the user switch, the
//! working directory, stdio, and the exec (slurmstepd's part of a batch
//! launch).
//!
//! The script runs as a new session, so it survives the daemon and its
//! process group is the job. Everything the child does between fork and
//! exec is async-signal-safe (no allocation, no locks): setsid, setgroups,
//! setgid, setuid, umask, chdir, open, dup2, write. Output files are opened
//! by the child after the user switch, so they are created as, and checked
//! against the permissions of, the job's user.

use crate::env::{job_env, NodeEnv};
use proto::BatchLaunch;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// Sets `SLURM_TASK_PID` to the shell's own pid, then execs the script in
/// its place, so the variable names the script's process.
const WRAPPER: &str = "SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec \"$0\" \"$@\"";

/// Why a launch did not start a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// Refused before anything ran (another user's job on a non-root
    /// daemon, an unusable spool directory): answered `Failed`.
    Refused(String),
    /// The script could not be started (output file, user switch, exec):
    /// answered `Ok`, then reported as `JobExited` with `launch_failed`, as
    /// Slurm fails the job rather than the launch request.
    StartFailed(String),
}

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
}

/// A started batch script.
#[derive(Debug)]
pub struct Started {
    /// Its pid, which is also its process group and session id.
    pub pid: i32,
    /// The handle to reap it with.
    pub child: tokio::process::Child,
    /// `<spool>/jobNNNNN`, removed once the job ends.
    pub job_dir: PathBuf,
}

/// The spool directory of a job: Slurm's `job%05u`.
pub fn job_dir(spool_dir: &Path, job_id: model::JobId) -> PathBuf {
    spool_dir.join(format!("job{:05}", job_id.0))
}

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
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl ChildSetup {
    /// Runs in the child between fork and exec: async-signal-safe only.
    fn apply(&self) -> std::io::Result<()> {
        let fail = |step: u8| -> std::io::Error {
            let e = errno();
            // SAFETY: writing one byte from a live buffer to an fd we own.
            unsafe { libc::write(self.report_fd, (&step as *const u8).cast(), 1) };
            std::io::Error::from_raw_os_error(e)
        };
        // SAFETY: plain system calls on data prepared before fork; no
        // allocation or locking happens here.
        unsafe {
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
        Ok(())
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, LaunchError> {
    CString::new(s).map_err(|_| LaunchError::Refused(format!("{what} contains a NUL byte")))
}

/// Supplementary groups of `user` with primary group `gid`.
fn groups_of(user: &str, gid: u32) -> Result<Vec<libc::gid_t>, LaunchError> {
    let name = cstring("user name", user)?;
    let groups =
        nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid)).map_err(|e| {
            LaunchError::StartFailed(format!("cannot read the groups of user {user}: {e}"))
        })?;
    Ok(groups.into_iter().map(|g| g.as_raw()).collect())
}

/// Writes the script into a fresh job directory.
fn write_script(dir: &Path, script: &str, owner: Option<(u32, u32)>) -> std::io::Result<PathBuf> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if dir.exists() {
        // A leftover of an earlier run of the same job id.
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let path = dir.join("slurm_script");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&path)?;
    f.write_all(script.as_bytes())?;
    f.sync_all()?;
    drop(f);
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
    }
    Ok(path)
}

/// Starts `launch`'s batch script. Must be called inside a tokio runtime.
pub fn launch(launch: &BatchLaunch, ctx: &LaunchContext<'_>) -> Result<Started, LaunchError> {
    let switch_user = launch.uid != ctx.daemon_uid;
    if switch_user && ctx.daemon_uid != 0 {
        return Err(LaunchError::Refused(
            "cannot run jobs for other users unless the node daemon runs as root".to_string(),
        ));
    }
    let dir = job_dir(ctx.spool_dir, launch.job_id);
    let owner = switch_user.then_some((launch.uid, launch.gid));
    let script = write_script(&dir, &launch.script, owner).map_err(|e| {
        LaunchError::Refused(format!(
            "cannot write the batch script into {}: {e}",
            dir.display()
        ))
    })?;
    let result = spawn(launch, ctx, &script, switch_user);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result.map(|(pid, child)| Started {
        pid,
        child,
        job_dir: dir,
    })
}

fn spawn(
    launch: &BatchLaunch,
    ctx: &LaunchContext<'_>,
    script: &Path,
    switch_user: bool,
) -> Result<(i32, tokio::process::Child), LaunchError> {
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
    let stderr = resolve_path(work_dir, &launch.stderr, &stdout);
    let stdin = resolve_path(work_dir, &launch.stdin, "/dev/null");
    let env = job_env(
        launch,
        &NodeEnv {
            node_name: ctx.node_name,
            conf_path: ctx.conf_path,
        },
    );
    let umask = env
        .iter()
        .find(|(k, _)| k == "SLURM_UMASK")
        .and_then(|(_, v)| libc::mode_t::from_str_radix(v, 8).ok())
        .filter(|m| *m <= 0o777);
    let switch = if switch_user {
        Some((launch.uid, launch.gid, groups_of(&launch.user, launch.gid)?))
    } else {
        None
    };
    let mut chdir_lines = vec![chdir_error_line(work_dir, libc::EIO).into_bytes()];
    chdir_lines.extend((1..MAX_ERRNO as i32).map(|e| chdir_error_line(work_dir, e).into_bytes()));
    let (mut report_rx, report_tx) = UnixStream::pair()
        .map_err(|e| LaunchError::StartFailed(format!("cannot create a pipe: {e}")))?;
    let setup = ChildSetup {
        switch,
        umask,
        work_dir: cstring("working directory", work_dir)?,
        chdir_lines,
        stdin: cstring("stdin path", &stdin)?,
        stderr: if stderr == stdout {
            None
        } else {
            Some(cstring("stderr path", &stderr)?)
        },
        stdout: cstring("stdout path", &stdout)?,
        append: launch.open_append,
        report_fd: report_tx.as_raw_fd(),
    };
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(WRAPPER)
        .arg(script.as_os_str())
        .args(&launch.argv)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false);
    // SAFETY: `apply` only makes async-signal-safe system calls on memory
    // prepared before fork (see ChildSetup).
    unsafe {
        cmd.pre_exec(move || setup.apply());
    }
    let spawned = cmd.spawn();
    drop(report_tx);
    match spawned {
        Ok(child) => {
            let pid = child.id().map(|p| p as i32).ok_or_else(|| {
                LaunchError::StartFailed("the batch script vanished at start".to_string())
            })?;
            Ok((pid, child))
        }
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
            let msg = match step {
                STEP_SETSID => format!("setsid failed: {err}"),
                STEP_USER => format!(
                    "cannot switch to user {} (uid {} gid {}): {err}",
                    launch.user, launch.uid, launch.gid
                ),
                STEP_STDIN => format!("Could not open stdin file {stdin}: {err}"),
                STEP_STDOUT => format!("Could not open stdout file {stdout}: {err}"),
                STEP_STDERR => format!("Could not open stderr file {stderr}: {err}"),
                _ => format!("cannot execute /bin/sh for {}: {err}", script.display()),
            };
            Err(LaunchError::StartFailed(msg))
        }
    }
}

#[cfg(test)]
mod tests;
