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

use crate::container::Container;
use crate::env::{job_env, NodeEnv};
use crate::exec::{groups_of, os_error_text, ExecImage, SUPERVISOR_IGNORES};
use crate::slots::{Owner, Slots};
use crate::spool::{JobRecord, Pids, RecordState};
use proto::BatchLaunch;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
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
    /// Which vendor variables name the job's GPUs (gres.conf `Flags=`).
    pub gpu_env: crate::gpus::GpuEnvVars,
    /// Where the job's cgroups are, when jobs are confined.
    pub cgroup: Option<&'a crate::cgroup::CgroupSettings>,
    /// slurm.conf `TaskPlugin` has `task/affinity`: the script is bound
    /// to the job's CPUs on the node.
    pub task_affinity: bool,
    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of this
    /// node (`conf::Config::topology_addr`); None: its name and `node`.
    pub topology_addr: Option<&'a (String, String)>,
    /// The spool's emptied job directories, used again.
    pub slots: &'a Slots,
    /// slurm.conf's TaskProlog and TaskEpilog, for the batch step.
    pub task_scripts: (Option<&'a str>, Option<&'a str>),
    /// gres.conf `File=` of each GPU, by the node's index.
    pub gpu_files: &'a [PathBuf],
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
    /// Which vendor variables name the job's GPUs (gres.conf `Flags=`).
    #[serde(default)]
    pub gpu_env: crate::gpus::GpuEnvVars,
    /// Where the job's cgroups are (proctrack/cgroup); `None`: the job is
    /// its script's process group, as without cgroups.
    #[serde(default)]
    pub cgroup: Option<crate::cgroup::CgroupSettings>,
    /// slurm.conf `TaskProlog`, run as the user before the batch script.
    #[serde(default)]
    pub task_prolog: Option<String>,
    /// slurm.conf `TaskEpilog`, run as the user after it.
    #[serde(default)]
    pub task_epilog: Option<String>,
    /// task/affinity: the script is bound (`sched_setaffinity`) to the
    /// job's CPUs here, as Slurm binds the batch step.
    #[serde(default)]
    pub task_affinity: bool,
    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of this
    /// node (`conf::Config::topology_addr`); None: its name and `node`.
    #[serde(default)]
    pub topology_addr: Option<(String, String)>,
    /// gres.conf `File=` of each GPU, by the node's index (the batch
    /// script's container binds the job's).
    #[serde(default)]
    pub gpu_files: Vec<PathBuf>,
}

/// A `StepdSpec` as the daemon writes it, borrowing the launch instead of
/// copying it: the same fields in the same order, so the same JSON.
#[derive(Serialize)]
struct StepdSpecRef<'a> {
    launch: &'a BatchLaunch,
    node_name: &'a str,
    conf_path: &'a str,
    switch_user: bool,
    gather: &'a crate::gather::GatherSettings,
    gpu_env: crate::gpus::GpuEnvVars,
    cgroup: Option<&'a crate::cgroup::CgroupSettings>,
    task_prolog: Option<&'a str>,
    task_epilog: Option<&'a str>,
    task_affinity: bool,
    topology_addr: Option<&'a (String, String)>,
    gpu_files: &'a [PathBuf],
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

/// The child's steps, reported through the side pipe when one fails.
const STEP_SETSID: u8 = 1;
const STEP_USER: u8 = 2;
const STEP_STDIN: u8 = 3;
const STEP_STDOUT: u8 = 4;
const STEP_STDERR: u8 = 5;
const STEP_CONTAINER: u8 = 6;

/// Highest errno with a prepared chdir message.
const MAX_ERRNO: usize = 134;

/// Everything the child needs, allocated before fork.
struct ChildSetup {
    switch: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>,
    umask: Option<libc::mode_t>,
    work_dir: CString,
    chdir_line: ChdirLine,
    stdin: CString,
    stdout: CString,
    stderr: Option<CString>,
    append: bool,
    /// The script itself, executed with `SLURM_TASK_PID` set to its pid
    /// (one program started, not a shell that then starts the script).
    direct: Option<ExecImage>,
    /// `/bin/sh -c WRAPPER script args`, when the direct exec fails.
    wrapped: Option<ExecImage>,
    /// `sbatch --container-image`: the container's mount namespace and the
    /// working directory inside it. The output files are opened (as the
    /// user) before the script joins it: they are the host's.
    container: Option<(crate::container::Join, CString)>,
    /// `--container-remap-root`: the container's user namespace, joined
    /// instead of the user switch (the job's user is 0 in it).
    user_ns: Option<RawFd>,
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl ChildSetup {
    /// Runs in the child between fork and exec: async-signal-safe only.
    /// Execs the script itself (directly, else through the shell); returns
    /// only when neither could be: the step that failed (0: the exec) and
    /// its errno.
    fn apply(&mut self) -> (u8, i32) {
        // SAFETY: plain system calls on data prepared before fork; no
        // allocation or locking happens here.
        unsafe {
            // The supervisor ignores these; an ignored signal stays ignored
            // across exec, and the job must see them.
            for sig in SUPERVISOR_IGNORES {
                libc::signal(sig, libc::SIG_DFL);
            }
            if libc::setsid() < 0 {
                return (STEP_SETSID, errno());
            }
            // (A pointer, not a moved CString: nothing may be freed here.)
            if let Some((mnt, work_dir)) = self.container.as_ref().map(|(m, w)| (*m, w.as_ptr())) {
                return self.apply_in_container(mnt, work_dir);
            }
            if let Some((uid, gid, groups)) = &self.switch {
                if crate::exec::become_user(*uid, *gid, groups).is_err() {
                    return (STEP_USER, errno());
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
                return (STEP_STDIN, errno());
            }
            libc::dup2(fd, 0);
            // Always appending (after truncating, unless --open-mode=append):
            // what the daemon adds (the banner of a cancelled job) is never
            // written over by the script's later output.
            let mode = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_CLOEXEC
                | libc::O_APPEND
                | if self.append { 0 } else { libc::O_TRUNC };
            let fd = libc::open(self.stdout.as_ptr(), mode, 0o666 as libc::c_uint);
            if fd < 0 {
                return (STEP_STDOUT, errno());
            }
            libc::dup2(fd, 1);
            match &self.stderr {
                None => {
                    libc::dup2(1, 2);
                }
                Some(path) => {
                    let fd = libc::open(path.as_ptr(), mode, 0o666 as libc::c_uint);
                    if fd < 0 {
                        return (STEP_STDERR, errno());
                    }
                    libc::dup2(fd, 2);
                }
            }
            if chdir_errno != 0 {
                self.chdir_line.write(2, chdir_errno);
            }
        }
        if let Some(image) = self.direct.as_mut() {
            let _ = image.exec();
        }
        match self.wrapped.as_mut() {
            Some(image) => (0, image.exec().raw_os_error().unwrap_or(libc::EIO)),
            // No shell to run it either (no /bin/sh).
            None => (0, libc::ENOENT),
        }
    }
}

impl ChildSetup {
    /// `apply`'s rest for a script in a container: the output files
    /// opened with the user's file system ids on the host, then the
    /// container joined (as root) and the user switch (a container built
    /// as its user: the switch, then the join), the working directory
    /// inside, and the exec.
    fn apply_in_container(
        &mut self,
        mnt: crate::container::Join,
        work_dir: *const libc::c_char,
    ) -> (u8, i32) {
        // SAFETY: as `apply`: system calls on data prepared before fork.
        unsafe {
            if let Some((uid, gid, _)) = &self.switch {
                libc::setfsgid(*gid);
                libc::setfsuid(*uid);
            }
            if let Err(step) = self.open_stdio() {
                return (step, errno());
            }
            libc::setfsuid(0);
            libc::setfsgid(0);
            // A container built as the job's user is joined by the user
            // (after the switch below); root's, by root before it.
            if !mnt.user_first() && crate::container::join_in_child(mnt).is_err() {
                return (STEP_CONTAINER, errno());
            }
            if let (Some(ns), Some((_, gid, _))) = (self.user_ns, &self.switch) {
                if crate::container::enter_user_ns(ns, *gid).is_err() {
                    return (STEP_USER, errno());
                }
            } else if let Some((uid, gid, groups)) = &self.switch {
                if crate::exec::become_user(*uid, *gid, groups).is_err() {
                    return (STEP_USER, errno());
                }
            }
            if mnt.user_first() && crate::container::join_in_child(mnt).is_err() {
                return (STEP_CONTAINER, errno());
            }
            if let Some(mask) = self.umask {
                libc::umask(mask);
            }
            if libc::chdir(work_dir) != 0 {
                let e = errno();
                libc::chdir(c"/".as_ptr());
                self.chdir_line.write(2, e);
            }
        }
        if let Some(image) = self.direct.as_mut() {
            let _ = image.exec();
        }
        match self.wrapped.as_mut() {
            Some(image) => (0, image.exec().raw_os_error().unwrap_or(libc::EIO)),
            None => (0, libc::ENOENT),
        }
    }

    /// Opens stdin, stdout and stderr as `apply` does; Err: the step that
    /// failed (errno is left set).
    fn open_stdio(&self) -> Result<(), u8> {
        // SAFETY: open(2) and dup2(2) on paths prepared before fork.
        unsafe {
            let fd = libc::open(self.stdin.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(STEP_STDIN);
            }
            libc::dup2(fd, 0);
            let mode = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_CLOEXEC
                | libc::O_APPEND
                | if self.append { 0 } else { libc::O_TRUNC };
            let fd = libc::open(self.stdout.as_ptr(), mode, 0o666 as libc::c_uint);
            if fd < 0 {
                return Err(STEP_STDOUT);
            }
            libc::dup2(fd, 1);
            match &self.stderr {
                None => {
                    libc::dup2(1, 2);
                }
                Some(path) => {
                    let fd = libc::open(path.as_ptr(), mode, 0o666 as libc::c_uint);
                    if fd < 0 {
                        return Err(STEP_STDERR);
                    }
                    libc::dup2(fd, 2);
                }
            }
            Ok(())
        }
    }
}

/// strerror(3) texts by errno, below `MAX_ERRNO` (index 0: EIO's, for an
/// errno beyond), made once per process: the zygote makes them before it
/// forks (`prepare_texts`), so that no supervisor makes them again.
fn errno_texts() -> &'static [String] {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| {
        std::iter::once(os_error_text(libc::EIO))
            .chain((1..MAX_ERRNO as i32).map(os_error_text))
            .collect()
    })
}

/// Makes what every launch shares once, before the zygote forks.
pub fn prepare_texts() {
    errno_texts();
}

/// `chdir_error_line` for one working directory and any errno, prepared
/// before fork and written in the child without allocating.
struct ChdirLine {
    /// Up to the error's text.
    head: Vec<u8>,
    texts: &'static [String],
}

/// What follows the error's text.
const CHDIR_TAIL: &[u8] = b": going to /tmp instead\n";

impl ChdirLine {
    fn new(work_dir: &str) -> ChdirLine {
        ChdirLine {
            head: format!("slurmstepd: error: couldn't chdir to `{work_dir}': ").into_bytes(),
            texts: errno_texts(),
        }
    }

    /// The line's pieces for `errno`.
    fn pieces(&self, errno: i32) -> [&[u8]; 3] {
        let text = usize::try_from(errno)
            .ok()
            .and_then(|e| self.texts.get(e))
            .unwrap_or(&self.texts[0]);
        [&self.head, text.as_bytes(), CHDIR_TAIL]
    }

    /// Writes the line for `errno` to `fd` in one writev. Async-signal-safe.
    fn write(&self, fd: i32, errno: i32) {
        let iov = self.pieces(errno).map(|p| libc::iovec {
            iov_base: p.as_ptr() as *mut libc::c_void,
            iov_len: p.len(),
        });
        // SAFETY: writev from three live buffers.
        unsafe { libc::writev(fd, iov.as_ptr(), iov.len() as libc::c_int) };
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
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
    let owner = if switch_user {
        Owner {
            uid: launch.uid,
            gid: launch.gid,
            other_user: true,
        }
    } else {
        Owner {
            uid: ctx.daemon_uid,
            gid: nix::unistd::getegid().as_raw(),
            other_user: false,
        }
    };
    let record = JobRecord {
        job_id: launch.job_id,
        uid: launch.uid,
        user: launch.user.clone(),
        state: RecordState::Launching,
        pids: None,
        restarts: launch.restarts,
    };
    let written = ctx
        .slots
        .create_job_dir(&dir, launch.script.as_bytes(), owner, &record);
    if let Err(e) = written {
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
    let spec = StepdSpecRef {
        launch,
        node_name: ctx.node_name,
        conf_path: ctx.conf_path,
        switch_user: switches_user(launch, ctx),
        gather: ctx.gather,
        gpu_env: ctx.gpu_env,
        cgroup: ctx.cgroup,
        task_prolog: ctx.task_scripts.0,
        task_epilog: ctx.task_scripts.1,
        task_affinity: ctx.task_affinity,
        topology_addr: ctx.topology_addr,
        gpu_files: ctx.gpu_files,
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

/// A started batch script: its pid, its environment (for the
/// TaskEpilog), and its container (`sbatch --container-image`), which the
/// supervisor ends after the script.
pub type Spawned = (i32, Vec<(String, String)>, Option<Container>);

/// Starts the batch script of `spec`, whose copy is `script`, as a child
/// of the calling process (the supervisor). Returns its pid, which is also
/// its process group and session, or why it could not start. With a cgroup
/// the script starts inside it. Also returns the script's environment (as
/// the TaskProlog left it), for the TaskEpilog.
pub fn spawn_script(
    spec: &StepdSpec,
    script: &Path,
    cgroup: Option<&crate::gather::TaskCgroup>,
) -> Result<Spawned, String> {
    let launch = &spec.launch;
    let paths = Paths::of(launch);
    let mut env = job_env(
        launch,
        &NodeEnv {
            node_name: &spec.node_name,
            conf_path: &spec.conf_path,
            topology_addr: spec
                .topology_addr
                .as_ref()
                .map(|(a, p)| (a.as_str(), p.as_str())),
            gpu_env: spec.gpu_env,
            gpus_relative: spec.cgroup.as_ref().is_some_and(|c| c.devices.is_some()),
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
    // TaskProlog: its `export` and `unset` lines act on the script's
    // environment (its `print` lines are not written to the job's output).
    if let Some(prolog) = spec.task_prolog.as_deref() {
        match crate::hooks::run_task_script(prolog, &env, work_dir, switch.as_ref()) {
            Ok(out) => {
                crate::hooks::apply_task_prolog(&out, &mut env);
            }
            Err(e) => eprintln!("noded --stepd: job {}: TaskProlog: {e}", launch.job_id),
        }
    }
    // `sbatch --container-image`: the script runs in the container, bound
    // in at its own path.
    let container = if launch.container.is_empty() {
        None
    } else {
        let gpu_files = crate::gpus::device_files(&launch.gpus, &spec.gpu_files);
        let ctx = crate::container::StepContext {
            conf_path: &spec.conf_path,
            job_id: launch.job_id.0,
            step: "batch".into(),
            uid: launch.uid,
            gid: launch.gid,
            user: &launch.user,
            cwd: work_dir,
            gpu_files,
            extra_binds: vec![script.to_path_buf()],
            credentials: crate::container::registry::credentials_path(
                &launch.env,
                crate::container::home_of(&launch.user).as_deref(),
            ),
        };
        let c = Container::start(&launch.container, &ctx)?;
        c.task_env(&mut env);
        Some(c)
    };
    let root = container.as_ref().and_then(|c| c.root());
    let (mut report_rx, report_tx) =
        UnixStream::pair().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let script_arg = script.to_string_lossy().into_owned();
    // `--container-entrypoint`: the script runs through the image's
    // `/etc/rc`, as a step's tasks do (`Container::task_argv`).
    let image = |argv: Vec<String>| {
        let argv = match &container {
            Some(c) => c.task_argv(argv),
            None => argv,
        };
        ExecImage::new_in(root.as_deref(), &argv[0], &argv[1..], &env)
    };
    let direct = image([std::slice::from_ref(&script_arg), &launch.argv].concat());
    let wrapped = image(
        [
            [
                "/bin/sh".to_string(),
                "-c".to_string(),
                WRAPPER.to_string(),
                script_arg.clone(),
            ]
            .as_slice(),
            &launch.argv,
        ]
        .concat(),
    );
    let mut setup = ChildSetup {
        direct,
        wrapped,
        switch,
        umask,
        work_dir: cstring("working directory", work_dir)?,
        chdir_line: ChdirLine::new(work_dir),
        stdin: cstring("stdin path", &paths.stdin)?,
        stderr: if paths.stderr == paths.stdout {
            None
        } else {
            Some(cstring("stderr path", &paths.stderr)?)
        },
        stdout: cstring("stdout path", &paths.stdout)?,
        append: launch.open_append,
        container: match &container {
            Some(c) => Some((
                crate::container::raw(c),
                cstring("container working directory", &c.workdir)?,
            )),
            None => None,
        },
        user_ns: container
            .as_ref()
            .and_then(|c| c.user_ns.as_ref())
            .map(|ns| ns.as_raw_fd()),
    };
    let report_fd = report_tx.as_raw_fd();
    // task/affinity: the batch step on the job's CPUs here.
    let mask = (spec.task_affinity && !launch.cpu_ids.is_empty()).then(|| {
        let host = crate::affinity::host_cpus();
        crate::affinity::CpuMask::new(&crate::affinity::to_host(&launch.cpu_ids, &host))
    });
    // SAFETY: the child makes only async-signal-safe system calls on memory
    // prepared before fork (`TaskCgroup::join_self`, `CpuMask::apply`,
    // `ChildSetup::apply`)
    // and execs or exits. The cgroup is joined first, while it is root.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above; the signal mask is inherited across exec, and
        // the job starts with none blocked.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            if let Some(cg) = cgroup {
                cg.join_self();
            }
            if let Some(m) = &mask {
                m.apply();
            }
            let (step, err) = setup.apply();
            let mut report = [0u8; 5];
            report[0] = step;
            report[1..].copy_from_slice(&err.to_ne_bytes());
            libc::write(report_fd, report.as_ptr().cast(), report.len());
            libc::_exit(127);
        }
    }
    let fork_errno = errno();
    drop(report_tx);
    if pid < 0 {
        return Err(format!(
            "cannot execute /bin/sh for {}: {}",
            script.display(),
            os_error_text(fork_errno)
        ));
    }
    // The child's end closes at its exec (close-on-exec): nothing to read
    // is a start; otherwise the step that failed and its errno.
    let mut report = [0u8; 5];
    let mut got = 0;
    while got < report.len() {
        match report_rx.read(&mut report[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if got == 0 {
        // The supervisor reaps the script by pid (it needs the raw status
        // and to look before reaping).
        return Ok((pid, env, container));
    }
    // It failed before its exec and exits: reap it.
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
    let step = report[0];
    let err = if got == report.len() {
        os_error_text(i32::from_ne_bytes([
            report[1], report[2], report[3], report[4],
        ]))
    } else {
        os_error_text(libc::EIO)
    };
    Err(match step {
        STEP_SETSID => format!("setsid failed: {err}"),
        STEP_USER => format!(
            "cannot switch to user {} (uid {} gid {}): {err}",
            launch.user, launch.uid, launch.gid
        ),
        STEP_STDIN => format!("Could not open stdin file {}: {err}", paths.stdin),
        STEP_STDOUT => format!("Could not open stdout file {}: {err}", paths.stdout),
        STEP_STDERR => format!("Could not open stderr file {}: {err}", paths.stderr),
        STEP_CONTAINER => format!("pyxis: cannot join the container: {err}"),
        _ => format!("cannot execute /bin/sh for {}: {err}", script.display()),
    })
}

/// The batch script's working directory.
pub fn work_dir(launch: &BatchLaunch) -> String {
    Paths::of(launch).work_dir
}

#[cfg(test)]
mod tests;
