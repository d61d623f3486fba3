//! The step supervisor (slurmstepd's part for srun's steps): one process per
//! step and node, started by the daemon as `<this binary> noded
//! --step-tasks`, with a [`TaskdSpec`] line on its stdin.
//!
//! ```text
//!   connect to srun, Hello(token)        stdin from the daemon: control lines
//!   fork/exec every local task             (Signal, Terminate) --> tasks' groups
//!     stdout/stderr pipes --Output------> srun
//!     stdin pipe <--------Stdin---------- srun
//!     PMI_FD socketpair <--> pmi server --FenceIn/FenceOut--> srun (the tree's root)
//!   each task started --Started(pid, start time)--> the daemon (stdout)
//!   reap each task --TaskExited--> srun; all reaped: Done
//!   last line on stdout: Ended(TaskdResult) (highest exit, usage)
//! ```
//!
//! `srun --pty`: task 0's stdio is a pseudo-terminal (`pty`) whose master
//! the supervisor reads (to srun as task 0's stdout) and writes (srun's
//! stdin; `WindowSize` resizes it); `--multi-prog`: each task's command is
//! its line of the file (`proto::multi_prog`).
//!
//! Each task is a session and process group of its own, run as the job's
//! user; a signal for the step goes to every task's group. A task that
//! cannot be executed gets slurmstepd's `execve(): NAME: REASON` line on
//! its stderr and exits with the errno as its code, as in Slurm.
//!
//! This is the step supervisor's room. It may import the leaves (`spool`,
//! `gather`, `exec`, `to_srun`) and the PMI servers (`pmi`); the daemon
//! imports its spec, control and report lines, never the other way.

mod pty;

use crate::exec::{chdir_error_line, os_error_text, ExecImage};
use crate::gather::{
    parse_frequency, Gather, GatherSettings, GatherType, Publish, Sampler, StepCgroup, TaskCgroup,
    TaskSource,
};
use crate::spool::ProcId;
use crate::to_srun::ToSrun;
use model::ExitCode;
use proto::{SrunToStepd, StdinMode, StepLaunch, StepdToSrun};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the daemon hands the supervisor on its first stdin line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskdSpec {
    /// The step's launch.
    pub launch: StepLaunch,
    /// This node's name.
    pub node_name: String,
    /// Absolute slurm.conf path.
    pub conf_path: String,
    /// Run the tasks as the launch's user.
    pub switch_user: bool,
    /// How to gather the tasks' usage.
    #[serde(default)]
    pub gather: GatherSettings,
    /// Where to publish the step's usage after every sample (sstat).
    #[serde(default)]
    pub live_path: Option<std::path::PathBuf>,
    /// The node's GPUs (gres.conf) and how its tasks' GPU variables count.
    #[serde(default)]
    pub gpus: crate::gpus::GpuSettings,
    /// Where the job's cgroups are (proctrack/cgroup): the tasks join
    /// `step_S/task_T`, and the step ends once its cgroup is empty.
    #[serde(default)]
    pub cgroup: Option<crate::cgroup::CgroupSettings>,
    /// slurm.conf `TaskPlugin` has `task/affinity`: each task is bound to
    /// CPUs as `--cpu-bind` says (`affinity`).
    #[serde(default)]
    pub task_affinity: bool,
    /// `SLURM_TOPOLOGY_ADDR` and `SLURM_TOPOLOGY_ADDR_PATTERN` of this
    /// node (`conf::Config::topology_addr`); None: its name and `node`.
    #[serde(default)]
    pub topology_addr: Option<(String, String)>,
    /// slurm.conf `TaskProlog`, run as the user before each task.
    #[serde(default)]
    pub task_prolog: Option<String>,
    /// slurm.conf `TaskEpilog`, run as the user after each task.
    #[serde(default)]
    pub task_epilog: Option<String>,
    /// Threads per core of the node's CPU ids (0 read as 1).
    #[serde(default)]
    pub cpu_threads: u32,
    /// slurm.conf `TaskPluginParam`'s binding for a step that asks none.
    #[serde(default)]
    pub default_cpu_bind: Option<String>,
}

/// The daemon's later stdin lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskdControl {
    /// Send a signal to every task.
    Signal(i32),
    /// End the step: SIGCONT and SIGTERM, SIGKILL after `kill_wait` seconds.
    Terminate(u32),
    /// The controller ends the step: slurmstepd's banner to srun, then
    /// SIGKILL at once (`kill_wait` None: `scancel J.S`) or as `Terminate`
    /// (its job ends, or its own time limit passed).
    End {
        /// What the banner says.
        reason: proto::EndReason,
        /// The step ends alone (`scancel J.S`, its own time limit), not
        /// with its job: srun says `Force Terminated`.
        step: bool,
        /// KillWait, when the tasks get SIGTERM first.
        kill_wait: Option<u32>,
    },
    /// The controller has recorded this node's end of the step: srun may
    /// hear `Done` (so srun never exits before the step's end is known).
    Reported,
    /// `sattach`: connect to `addr`, say Hello with `token`, copy the
    /// tasks' output there too, and take stdin and signals from there.
    Attach {
        /// `host:port` sattach listens on.
        addr: String,
        /// sattach's secret.
        token: String,
    },
}

/// How long the supervisor waits for `Reported` before telling srun anyway.
const REPORT_WAIT: Duration = Duration::from_secs(60);

/// A line the supervisor writes on its stdout for the daemon.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TaskdReport {
    /// A task has been started: its pid is its process group, which the
    /// daemon kills if the supervisor dies before reaping it.
    Started(ProcId),
    /// The last line: every task has ended.
    Ended(Box<TaskdResult>),
}

/// What a step's tasks on this node came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskdResult {
    /// The highest exit of the node's tasks.
    pub exit: ExitCode,
    /// What they used.
    pub usage: proto::StepUsage,
    /// How many of their processes the OOM killer killed (0 without a
    /// memory cgroup).
    #[serde(default)]
    pub oom_kills: u64,
}

/// How long the supervisor tries to reach srun.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Now, as slurmstepd's banners write it (local time, `2026-12-06T14:20:24`).
pub fn banner_time() -> String {
    chrono::Local::now().format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// How the step's end reaches its tasks: once, whoever asks first (the
/// controller for the step, for its job, or srun `-K`).
#[derive(Clone)]
struct Ender {
    to: ToSrun,
    pids: Arc<Mutex<Vec<i32>>>,
    /// Job, step, node and the first local task (whose stderr carries the
    /// banner, as `0: slurmstepd: ...` under `srun -l`).
    job_id: model::JobId,
    step_id: u32,
    node: String,
    first_task: Option<u32>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl Ender {
    /// Says why the step ends (banner, srun told) and ends its tasks: at
    /// once, or SIGTERM and SIGKILL after `kill_wait` seconds.
    fn end(&self, reason: proto::EndReason, step: bool, kill_wait: Option<u32>) {
        if !self.done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            if let Some(task) = self.first_task {
                let what = format!("STEP {}.{}", self.job_id, self.step_id);
                self.to.send(StepdToSrun::Output {
                    task,
                    stderr: true,
                    data: reason
                        .banner(&what, &self.node, &banner_time())
                        .into_bytes(),
                });
            }
            self.to.send(StepdToSrun::Ending {
                step,
                kill_wait: kill_wait.unwrap_or(0),
            });
        }
        match kill_wait {
            None => {
                signal_tasks(&self.pids, libc::SIGCONT);
                signal_tasks(&self.pids, libc::SIGKILL);
            }
            Some(kill_wait) => terminate_tasks(&self.pids, kill_wait),
        }
    }
}

/// SIGCONT and SIGTERM now, SIGKILL after `kill_wait` seconds.
fn terminate_tasks(pids: &Arc<Mutex<Vec<i32>>>, kill_wait: u32) {
    signal_tasks(pids, libc::SIGCONT);
    signal_tasks(pids, libc::SIGTERM);
    let pids = pids.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(u64::from(kill_wait)));
        signal_tasks(&pids, libc::SIGKILL);
    });
}

/// One local task.
struct Task {
    /// Global task id.
    id: u32,
    pid: i32,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// Its environment (after the TaskProlog), for the TaskEpilog.
    env: Vec<(String, String)>,
}

/// Runs the supervisor; returns the process exit status.
pub fn main() -> i32 {
    let _ = nix::unistd::setsid();
    for sig in crate::exec::SUPERVISOR_IGNORES {
        // SAFETY: SIG_IGN installs no handler.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let mut stdin = std::io::BufReader::new(std::io::stdin());
    let mut line = String::new();
    if stdin.read_line(&mut line).is_err() {
        return 1;
    }
    let spec: TaskdSpec = match serde_json::from_str(&line) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("noded --step-tasks: cannot read the launch: {e}");
            return 1;
        }
    };
    run(&spec, stdin);
    0
}

fn report(line: &TaskdReport) {
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, line);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

fn connect(addr: &str) -> Option<TcpStream> {
    use std::net::ToSocketAddrs;
    for sa in addr.to_socket_addrs().ok()? {
        if let Ok(s) = TcpStream::connect_timeout(&sa, CONNECT_TIMEOUT) {
            let _ = s.set_nodelay(true);
            return Some(s);
        }
    }
    None
}

fn identity(spec: &TaskdSpec) -> proto::Identity {
    proto::Identity {
        uid: nix::unistd::getuid().as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        user: String::new(),
        host: spec.node_name.clone(),
    }
}

/// Expands an srun filename pattern for one task (`model::filename`; the
/// job's name and array ids come from its environment).
pub fn expand_task_path(pattern: &str, l: &StepLaunch, node: &str, task: u32) -> String {
    let job_step = format!("{}.{}", l.job_id, l.step_id);
    let step = l.step_id.to_string();
    let env = |name: &str| {
        l.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let env_num = |name: &str| env(name).and_then(|v| v.parse::<u32>().ok());
    model::filename::expand(
        pattern,
        &model::filename::PatternValues {
            job_id: l.job_id.0,
            job_step: Some(&job_step),
            array_job_id: env_num("SLURM_ARRAY_JOB_ID").unwrap_or(l.job_id.0),
            array_task_id: env_num("SLURM_ARRAY_TASK_ID"),
            name: env("SLURM_JOB_NAME").unwrap_or_default(),
            user: &l.user,
            node,
            node_index: l.node_index,
            task,
            step: &step,
            work_dir: &l.work_dir,
        },
    )
}

/// The GPUs of the `local`th task here (`--gpus-per-task`, `--gpu-bind`).
/// `closest` compares the task's cores with gres.conf `Cores=` (core
/// ids: the node's CPU id over its threads per core).
fn own_gpus(spec: &TaskdSpec, step: &StepSetup, local: usize) -> Vec<u32> {
    let t = spec.cpu_threads.max(1);
    let cores = task_cpus(spec, step, local).map(|ids| {
        let mut c: Vec<u32> = ids.iter().map(|id| id / t).collect();
        c.dedup();
        c
    });
    crate::gpus::task_gpus(
        &spec.launch.gpus,
        &spec.launch.gpu_bind,
        local as u32,
        &spec.gpus,
        cores.as_deref(),
    )
}

/// The CPUs (the node's ids) the `local`th task may run on, for
/// `--gpu-bind=closest`: those task/affinity binds it to; unbound, the
/// step's where ConstrainCores keeps the step on them; else unknown (it
/// may run on any CPU, and `closest` gives every GPU of the step).
fn task_cpus(spec: &TaskdSpec, step: &StepSetup, local: usize) -> Option<Vec<u32>> {
    let bound = step
        .binding
        .as_ref()
        .and_then(|(b, _)| b.node_tasks.get(local).cloned().flatten());
    let confined =
        spec.cgroup.as_ref().is_some_and(|c| c.constrains_cores()) && step.confined.is_some();
    bound.or_else(|| {
        (confined && !spec.launch.cpu_ids.is_empty()).then(|| spec.launch.cpu_ids.clone())
    })
}

/// Who and where the step's container is for.
/// `extra_binds`: host paths the tasks need inside at the same place (the
/// PMIx server's directory).
fn container_context(
    spec: &TaskdSpec,
    extra_binds: Vec<std::path::PathBuf>,
) -> crate::container::StepContext<'_> {
    let l = &spec.launch;
    let gpu_files = crate::gpus::device_files(&l.gpus, &spec.gpus.files);
    crate::container::StepContext {
        conf_path: &spec.conf_path,
        job_id: l.job_id.0,
        step: l.step_id.to_string(),
        uid: l.uid,
        gid: l.gid,
        user: &l.user,
        cwd: &l.work_dir,
        gpu_files,
        extra_binds,
        credentials: crate::container::registry::credentials_path(
            &l.env,
            crate::container::home_of(&l.user).as_deref(),
        ),
    }
}

/// Whether a task with `task_gpus` gets a device cgroup of its own
/// (ConstrainDevices, and fewer GPUs than its step: as Slurm, the task
/// level is skipped where a task gets all the step's).
fn task_devices(spec: &TaskdSpec, task_gpus: &[u32]) -> bool {
    spec.cgroup.as_ref().is_some_and(|c| c.devices.is_some())
        && task_gpus.len() < spec.launch.gpus.len()
}

/// The environment of one task.
fn task_env(
    spec: &TaskdSpec,
    step: &StepSetup,
    task: u32,
    local: usize,
    pmi_fd: Option<RawFd>,
    extra: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let l = &spec.launch;
    let mut env: BTreeMap<String, String> = l
        .env
        .iter()
        .filter(|(k, v)| {
            !k.is_empty() && !k.contains('=') && !k.contains('\0') && !v.contains('\0')
        })
        .cloned()
        .collect();
    let mine = &l.tasks[l.node_index as usize];
    let gtids: Vec<String> = mine.iter().map(|t| t.to_string()).collect();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_string(), v);
    };
    set("SLURMD_NODENAME", spec.node_name.clone());
    let (addr, pattern) = spec
        .topology_addr
        .clone()
        .unwrap_or_else(|| (spec.node_name.clone(), "node".into()));
    set("SLURM_TOPOLOGY_ADDR", addr);
    set("SLURM_TOPOLOGY_ADDR_PATTERN", pattern);
    set("SLURM_CONF", spec.conf_path.clone());
    set("SLURM_CPUS_ON_NODE", l.cpus.to_string());
    set("SLURM_NODEID", l.node_index.to_string());
    set("SLURM_GTIDS", gtids.join(","));
    set("SLURM_PROCID", task.to_string());
    set("SLURM_LOCALID", local.to_string());
    set("SLURM_PRIO_PROCESS", "0".into());
    if let Some(fd) = pmi_fd {
        set("PMI_FD", fd.to_string());
        set("PMI_RANK", task.to_string());
        set("PMI_SIZE", l.ntasks().to_string());
        set("PMI_JOBID", format!("{}.{}", l.job_id, l.step_id));
    }
    if !l.gpus.is_empty() {
        // The task's own GPUs replace the job's that srun's environment
        // carries (the batch script's).
        for name in [
            "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "ZE_AFFINITY_MASK",
            "GPU_DEVICE_ORDINAL",
        ] {
            env.remove(name);
        }
        let task_gpus = own_gpus(spec, step, local);
        // A task confined to its own GPUs sees them numbered from 0.
        let settings = if task_devices(spec, &task_gpus) {
            crate::gpus::GpuSettings {
                numbering: crate::gpus::GpuNumbering::Task,
                ..spec.gpus.clone()
            }
        } else {
            spec.gpus.clone()
        };
        for (k, v) in crate::gpus::gpu_env(&l.gpus, &task_gpus, &settings) {
            env.insert(k, v);
        }
    }
    env.extend(extra);
    env.into_iter().collect()
}

/// Everything a task's child needs between fork and exec.
struct TaskSetup {
    switch: Option<(libc::uid_t, libc::gid_t, Vec<libc::gid_t>)>,
    work_dir: CString,
    chdir_lines: Vec<Vec<u8>>,
    stdin_file: Option<CString>,
    keep_fd: Option<RawFd>,
    /// `srun --pty`: stdin is a terminal to make the task's controlling one.
    ctty: bool,
    image: Option<ExecImage>,
    /// The step's container: its mount namespace, joined before the user
    /// switch (built as its user: after it).
    mnt_ns: Option<crate::container::Join>,
    /// `--container-remap-root`: the container's user namespace, joined
    /// instead of the user switch (the job's user is 0 in it).
    user_ns: Option<RawFd>,
}

impl TaskSetup {
    /// Async-signal-safe only: runs between fork and exec. With an image,
    /// execs it (so `SLURM_TASK_PID` is the task's pid); without one,
    /// returns and lets the spawn's own exec report the error.
    fn apply(&mut self) -> std::io::Result<()> {
        // SAFETY: system calls on memory prepared before fork.
        unsafe {
            for sig in crate::exec::SUPERVISOR_IGNORES {
                libc::signal(sig, libc::SIG_DFL);
            }
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if self.ctty && libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(j) = self.mnt_ns.filter(|j| !j.user_first()) {
                // Still root: the container's mount namespace, then the
                // user switch and the working directory inside it.
                crate::container::join_in_child(j)?;
            }
            // A container built as the job's user is joined by the user:
            // the switch first (no group list may be set in the user's
            // namespaces), then its namespaces.
            if let (Some(ns), Some((_, gid, _))) = (self.user_ns, &self.switch) {
                crate::container::enter_user_ns(ns, *gid)?;
            } else if let Some((uid, gid, groups)) = &self.switch {
                crate::exec::become_user(*uid, *gid, groups)?;
            }
            if let Some(j) = self.mnt_ns.filter(|j| j.user_first()) {
                crate::container::join_in_child(j)?;
            }
            if libc::chdir(self.work_dir.as_ptr()) != 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as usize;
                let line = self.chdir_lines.get(e).unwrap_or(&self.chdir_lines[0]);
                libc::write(2, line.as_ptr().cast(), line.len());
                libc::chdir(c"/tmp".as_ptr());
            }
            if let Some(path) = &self.stdin_file {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::dup2(fd, 0);
                libc::close(fd);
            }
            if let Some(fd) = self.keep_fd {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            }
        }
        match self.image.as_mut() {
            Some(image) => Err(image.exec()),
            None => Ok(()),
        }
    }
}

/// Opens an output file as the job's user (the supervisor is root): the
/// file system ids are switched for the open only.
fn open_output(path: &str, switch: Option<(u32, u32)>) -> std::io::Result<std::fs::File> {
    if let Some((uid, gid)) = switch {
        // SAFETY: per-thread file system ids; restored below.
        unsafe {
            libc::setfsgid(gid);
            libc::setfsuid(uid);
        }
    }
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path);
    if switch.is_some() {
        // SAFETY: back to the supervisor's own ids.
        unsafe {
            libc::setfsuid(0);
            libc::setfsgid(0);
        }
    }
    opened
}

fn pump(
    mut from: impl Read + Send + 'static,
    to: ToSrun,
    task: u32,
    stderr: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => to.send(StepdToSrun::Output {
                    task,
                    stderr,
                    data: buf[..n].to_vec(),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    })
}

/// Signals every task's process group.
fn signal_tasks(pids: &Mutex<Vec<i32>>, sig: i32) {
    for pid in pids.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        // SAFETY: kill(2) on a process group.
        unsafe { libc::kill(-*pid, sig) };
    }
}

fn run(spec: &TaskdSpec, control: std::io::BufReader<std::io::Stdin>) {
    // The supervisor starts as the node takes the step's launch: a
    // container's start-up (`ContainerStart`) counts from here.
    let started = std::time::Instant::now();
    let l = &spec.launch;
    let mut gather_settings = spec.gather.clone();
    if let Some(n) = l.acctg_freq.as_deref().and_then(parse_frequency) {
        gather_settings.freq_secs = n;
    }
    let stream = connect(&l.srun_addr);
    let to = ToSrun::new(
        stream.as_ref().and_then(|s| s.try_clone().ok()),
        identity(spec),
    );
    to.send(StepdToSrun::Hello {
        token: l.token.clone(),
        node_index: l.node_index,
        node: spec.node_name.clone(),
    });
    let mut step = StepSetup::new(spec, to, &gather_settings, started);
    let Started {
        tasks,
        sources,
        task_cgroups,
        stdin_pipes,
        failed_exits,
        pmi_conns,
        pty_master,
    } = start_tasks(spec, &mut step);
    let pids: Arc<Mutex<Vec<i32>>> = Arc::new(Mutex::new(tasks.iter().map(|t| t.pid).collect()));
    if let (Some(pmi), Some(_)) = (&step.pmi, tasks.first()) {
        for (task, fd) in pmi_conns {
            pmi.serve(task, fd, pids.clone());
        }
    }
    let ender = Ender {
        to: step.to.clone(),
        pids: pids.clone(),
        job_id: l.job_id,
        step_id: l.step_id,
        node: spec.node_name.clone(),
        first_task: step.mine.first().copied(),
        done: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let stdin_pipes = Arc::new(Mutex::new(stdin_pipes));
    if let Some(s) = stream {
        relay_srun_messages(
            s,
            &step,
            pids.clone(),
            ender.clone(),
            (stdin_pipes.clone(), pty_master),
        );
    }
    let attach = AttachTo {
        to: step.to.clone(),
        node_index: l.node_index,
        node: spec.node_name.clone(),
        stdin_pipes,
    };
    let reported_rx = follow_control_lines(control, pids.clone(), ender, attach);
    let mut gathered = Gather::new(&spec.node_name, &step.mine);
    gathered.container_start_usec = step.container_start_usec;
    let gather = Arc::new(Mutex::new(gathered));
    let publish = spec.live_path.clone().map(|path| Publish {
        path,
        step: proto::StepId::Numbered(l.step_id),
        pids: tasks.iter().map(|t| t.pid as u32).collect(),
    });
    let sampler = Sampler::start(&gather_settings, gather.clone(), sources, publish);
    let epilogs = (l.task_epilog.clone(), spec.task_epilog.clone());
    let exit = reap_tasks(
        &step,
        tasks,
        failed_exits,
        &task_cgroups,
        &pids,
        &gather,
        &epilogs,
    );
    sampler.stop();
    if let Some(p) = &step.pmix {
        p.finish();
    }
    if let Some(p) = &spec.live_path {
        let _ = std::fs::remove_file(p);
    }
    let usage = gather.lock().unwrap_or_else(|p| p.into_inner()).usage();
    let oom_kills = match (&step.cgroup, &step.confined) {
        (Some(c), _) => c.oom_kills(),
        (None, Some(c)) => c.driver.oom_kills(&c.step),
        (None, None) => 0,
    };
    if let Some(c) = &step.cgroup {
        c.remove();
    }
    if let Some(c) = &step.confined {
        // The step is over once its cgroup is empty: what its tasks left
        // (a double fork, a daemon) is killed now.
        if let Err(e) = crate::cgroup::end_step(&*c.driver, &c.step, c.settle) {
            eprintln!("noded --step-tasks: {e}");
        }
    }
    // The container goes once its tasks are gone (`--container-save`
    // first): its namespace, and every mount in it, with its anchor.
    if let Some(c) = step.container.take() {
        if let Some(e) = c.finish() {
            if let Some(task) = step.mine.first() {
                step.to.send(StepdToSrun::Output {
                    task: *task,
                    stderr: true,
                    data: format!("slurmstepd: error: {e}\n").into_bytes(),
                });
            }
        }
    }
    if oom_kills > 0 {
        // slurmstepd's line, on the stderr of the node's first task.
        if let Some(task) = step.mine.first() {
            let what = format!("{}.{}", l.job_id, l.step_id);
            step.to.send(StepdToSrun::Output {
                task: *task,
                stderr: true,
                data: crate::oom::detected_line(oom_kills, &what).into_bytes(),
            });
        }
    }
    report(&TaskdReport::Ended(Box::new(TaskdResult {
        exit,
        usage,
        oom_kills,
    })));
    let _ = reported_rx.recv_timeout(REPORT_WAIT);
    step.to.send(StepdToSrun::Done);
}

/// What every task of the step on this node shares, made once before the
/// first fork: the user switch, the working directory and its error
/// lines, the PMI server and the step's cgroup.
struct StepSetup {
    /// The step's connection to srun.
    to: ToSrun,
    /// This node's tasks (global ids).
    mine: Vec<u32>,
    switch: Option<(u32, u32, Vec<libc::gid_t>)>,
    work_dir: String,
    /// `chdir_error_line` by errno (index 0: EIO's).
    chdir_lines: Vec<Vec<u8>>,
    pmi: Option<crate::pmi::pmi2::Server>,
    pmix: Option<Arc<crate::pmi::pmix::Server>>,
    /// Why the PMIx server could not start (or serve a task): every task
    /// of this node then fails.
    pmix_error: Option<String>,
    cgroup: Option<StepCgroup>,
    /// proctrack/cgroup: the step's cgroup, which every task joins.
    confined: Option<Confined>,
    /// Why the step's cgroup could not be made: every task of this node
    /// then fails.
    confine_error: Option<String>,
    /// task/affinity: how this node's tasks are bound, and the host's CPUs.
    binding: Option<(crate::affinity::Binding, Vec<u32>)>,
    /// The step's container (`srun --container-image`).
    container: Option<crate::container::Container>,
    /// Why the container could not be set up (pyxis's line): every task
    /// of this node then fails.
    /// How long the container took to be ready (`ContainerStart`).
    container_start_usec: Option<u64>,
    container_error: Option<String>,
}

/// A confined step's cgroup.
struct Confined {
    driver: Box<dyn crate::cgroup::Driver>,
    step: crate::cgroup::CgPath,
    settle: Duration,
}

impl StepSetup {
    fn new(
        spec: &TaskdSpec,
        to: ToSrun,
        gather_settings: &GatherSettings,
        started: std::time::Instant,
    ) -> StepSetup {
        let l = &spec.launch;
        let mine: Vec<u32> = l.tasks[l.node_index as usize].clone();
        let switch = if spec.switch_user {
            let groups = crate::exec::groups_of(&l.user, l.gid).unwrap_or_else(|_| vec![l.gid]);
            Some((l.uid, l.gid, groups))
        } else {
            None
        };
        let work_dir = if l.work_dir.is_empty() {
            "/tmp"
        } else {
            &l.work_dir
        };
        let mut chdir_lines = vec![chdir_error_line(work_dir, libc::EIO).into_bytes()];
        chdir_lines.extend((1..134).map(|e| chdir_error_line(work_dir, e).into_bytes()));
        let pmi = (l.mpi == "pmi2").then(|| crate::pmi::pmi2::Server::new(l, to.clone()));
        let ids = match &switch {
            Some((uid, gid, _)) => (*uid, *gid),
            None => (
                nix::unistd::getuid().as_raw(),
                nix::unistd::getgid().as_raw(),
            ),
        };
        let (pmix, pmix_error) =
            match (l.mpi == "pmix").then(|| crate::pmi::pmix::Server::start(l, to.clone(), ids)) {
                Some(Ok(server)) => (Some(Arc::new(server)), None),
                Some(Err(e)) => (None, Some(e)),
                None => (None, None),
            };
        let mut confine_error = None;
        let confined = spec.cgroup.as_ref().and_then(|s| {
            let c = Confined {
                driver: s.driver(),
                step: crate::cgroup::CgPath::job(l.uid, l.job_id.0).step(&l.step_id.to_string()),
                settle: s.settle,
            };
            let made = c.driver.create_step(&c.step).and_then(|()| {
                // ConstrainCores: the job on its CPUs here, the step on its
                // own, before the tasks' cgroups copy them.
                crate::cgroup::confine_cpus(
                    &*c.driver,
                    s,
                    &c.step,
                    &l.job_cpu_ids,
                    &l.cpu_ids,
                    &crate::affinity::host_cpus(),
                )?;
                // ConstrainDevices: the step may open only its GPUs.
                crate::cgroup::confine_devices(s, &c.step, &l.gpus).map_err(|e| {
                    crate::cgroup::CgroupError::Devices {
                        what: e.to_string(),
                    }
                })
            });
            match made {
                Ok(()) => {
                    // The job's limit (all its steps together), then the
                    // step's.
                    let job = crate::cgroup::CgPath::job(l.uid, l.job_id.0);
                    for (cg, mb) in [(&job, l.job_mem), (&c.step, l.mem)] {
                        let limits = gather_settings.memory.as_ref().and_then(|m| {
                            conf::memlimit::mem_limits(mb, gather_settings.real_memory_mb, m)
                        });
                        if let Some(limits) = limits {
                            let swap = limits.swap_only_bytes();
                            if let Err(e) = c.driver.set_memory_limit(cg, limits.ram_bytes, swap) {
                                eprintln!("noded --step-tasks: memory limit: {e}");
                            }
                        }
                    }
                    Some(c)
                }
                Err(e) => {
                    let _ = c.driver.remove(&c.step);
                    confine_error = Some(format!("cannot make the step's cgroup: {e}"));
                    None
                }
            }
        });
        let cgroup = (confined.is_none() && gather_settings.kind == GatherType::Cgroup)
            .then(|| StepCgroup::create(gather_settings, l.job_id.0, &l.step_id.to_string()))
            .flatten();
        if let Some(c) = &cgroup {
            c.limit_memory(gather_settings, l.mem);
        }
        let binding = spec.task_affinity.then(|| {
            let host = crate::affinity::host_cpus();
            // srun(1) `-c`: each task's share of the step's CPUs.
            let cpus_per_task = l
                .env
                .iter()
                .find(|(k, _)| k == "SLURM_CPUS_PER_TASK")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(1);
            let binding = crate::affinity::plan_smt(
                l.cpu_bind.as_deref().or(spec.default_cpu_bind.as_deref()),
                &l.cpu_ids,
                &host,
                mine.len(),
                cpus_per_task,
                spec.cpu_threads,
            );
            (binding, host)
        });
        let (container, container_error) = if l.container.is_empty() {
            (None, None)
        } else {
            // PMIx's rendezvous files and sockets (under the host's /tmp,
            // which the container's own /tmp hides) at the same path
            // inside, as enroot's 50-slurm-pmi hook binds PMIX_SERVER_TMPDIR.
            let binds = pmix.iter().map(|p| p.tmpdir().to_path_buf()).collect();
            match crate::container::Container::start(&l.container, &container_context(spec, binds))
            {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e)),
            }
        };
        let container_start_usec = container.as_ref().map(|c| {
            u64::try_from(c.ready_at.duration_since(started).as_micros()).unwrap_or(u64::MAX)
        });
        let (work_dir, chdir_lines) = match &container {
            Some(c) => {
                let mut lines = vec![chdir_error_line(&c.workdir, libc::EIO).into_bytes()];
                lines.extend((1..134).map(|e| chdir_error_line(&c.workdir, e).into_bytes()));
                (c.workdir.clone(), lines)
            }
            None => (work_dir.to_string(), chdir_lines),
        };
        StepSetup {
            container,
            container_start_usec,
            container_error,
            binding,
            confined,
            confine_error,
            to,
            mine,
            switch,
            work_dir,
            chdir_lines,
            pmi,
            pmix,
            pmix_error,
            cgroup,
        }
    }
}

/// This node's tasks as they started, or did not.
#[derive(Default)]
struct Started {
    tasks: Vec<Task>,
    /// Where the sampler reads each local task's usage.
    sources: Vec<(usize, TaskSource)>,
    task_cgroups: BTreeMap<usize, TaskCgroup>,
    /// The tasks that read srun's stdin (a pipe, or task 0's terminal).
    stdin_pipes: Vec<(u32, std::fs::File)>,
    /// `srun --pty`: task 0's terminal, for srun's window size.
    pty_master: Option<std::fs::File>,
    /// The tasks that never ran, with their wait status.
    failed_exits: Vec<(u32, i32)>,
    /// The daemon's end of each task's `PMI_FD`.
    pmi_conns: Vec<(u32, OwnedFd)>,
}

/// Starts every task of this node, in order.
fn start_tasks(spec: &TaskdSpec, step: &mut StepSetup) -> Started {
    let mut started = Started::default();
    let mut opened: BTreeMap<String, std::fs::File> = BTreeMap::new();
    for (local, task) in step.mine.clone().into_iter().enumerate() {
        start_task(spec, step, &mut opened, &mut started, local, task);
    }
    drop(opened);
    started
}

/// Starts the task `task` (the `local`th here): its stdio, environment,
/// cgroup and exec, and notes it in `started` (or why it did not start).
/// Output files already open for an earlier task (`opened`) are shared.
fn start_task(
    spec: &TaskdSpec,
    step: &mut StepSetup,
    opened: &mut BTreeMap<String, std::fs::File>,
    started: &mut Started,
    local: usize,
    task: u32,
) {
    let l = &spec.launch;
    let to = &step.to;
    let confined_task = match (&step.confined, &step.confine_error) {
        (_, Some(e)) => Err(e.clone()),
        (Some(c), None) => c
            .driver
            .create_task(&c.step.task(local as u32))
            .and_then(|dirs| {
                // ConstrainDevices: a task given some of the step's GPUs
                // may open only those.
                let gpus = own_gpus(spec, step, local);
                match spec.cgroup.as_ref() {
                    Some(s) if task_devices(spec, &gpus) => {
                        crate::cgroup::confine_devices(s, &c.step.task(local as u32), &gpus)
                            .map_err(|e| crate::cgroup::CgroupError::Devices {
                                what: e.to_string(),
                            })?
                    }
                    _ => {}
                }
                Ok(dirs)
            })
            .map(|dirs| {
                Some(TaskCgroup::from_dirs(
                    c.driver.version() == crate::cgroup::Version::V2,
                    dirs.memory,
                    dirs.cpu,
                    &dirs.procs,
                ))
            })
            .map_err(|e| format!("cannot make the task's cgroup: {e}")),
        (None, None) => Ok(None),
    };
    let confined_task = match confined_task {
        Ok(t) => t,
        Err(e) => {
            to.send(StepdToSrun::Output {
                task,
                stderr: true,
                data: format!("slurmstepd: error: {e}\n").into_bytes(),
            });
            started.failed_exits.push((task, 1 << 8));
            return;
        }
    };
    if let Some(e) = &step.container_error {
        // pyxis's lines, once per node; every task of the node fails.
        if local == 0 {
            to.send(StepdToSrun::Output {
                task,
                stderr: true,
                data: e
                    .lines()
                    .map(|line| format!("slurmstepd: error: {line}\n"))
                    .collect::<String>()
                    .into_bytes(),
            });
        }
        started.failed_exits.push((task, 1 << 8));
        return;
    }
    if let Some(c) = step.container.as_ref().filter(|_| local == 0) {
        // pyxis's informational lines (joining a running container).
        if !c.notices.is_empty() {
            to.send(StepdToSrun::Output {
                task,
                stderr: true,
                data: c
                    .notices
                    .iter()
                    .map(|line| format!("{line}\n"))
                    .collect::<String>()
                    .into_bytes(),
            });
        }
    }
    let mut stdio = task_stdio(spec, step, opened, task);
    // `srun --pty`: task 0 alone runs on a terminal (srun(1) --pty).
    let term = match l.pty.filter(|_| task == 0) {
        Some((rows, cols)) => {
            let owner = step.switch.as_ref().map(|(u, g, _)| (*u, *g));
            match pty::open(rows, cols, owner) {
                Ok(p) => {
                    let dup = |f: &std::fs::File| f.try_clone().map(Stdio::from);
                    if let (Ok(i), Ok(o), Ok(e)) = (dup(&p.slave), dup(&p.slave), dup(&p.slave)) {
                        stdio.stdin = i;
                        stdio.stdout = o;
                        stdio.stderr = e;
                        stdio.stdin_file = None;
                    }
                    Some(p)
                }
                Err(e) => {
                    stdio
                        .messages
                        .push(format!("slurmstepd: error: cannot open a pty: {e}\n"));
                    None
                }
            }
        }
        None => None,
    };
    let pair = if step.pmi.is_some() {
        nix::sys::socket::socketpair(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::Stream,
            None,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        )
        .ok()
    } else {
        None
    };
    let keep_fd = pair.as_ref().map(|(_, child)| child.as_raw_fd());
    let pmix_env = match &step.pmix {
        Some(server) => server.task_env(task),
        None => Ok(Vec::new()),
    };
    let pmix_env = match (pmix_env, step.pmix_error.clone()) {
        (Ok(v), None) => v,
        (Err(e), _) | (_, Some(e)) => {
            // Said once per node; every task of the node fails.
            if step.pmix_error.is_none() || local == 0 {
                to.send(StepdToSrun::Output {
                    task,
                    stderr: true,
                    data: format!("slurmstepd: error: mpi/pmix: {e}\n").into_bytes(),
                });
            }
            step.pmix_error.get_or_insert(e);
            started.failed_exits.push((task, 1 << 8));
            return;
        }
    };
    let mut pmix_env = pmix_env;
    let bound: Option<Vec<u32>> = match &step.binding {
        Some((b, _)) => {
            pmix_env.extend(b.env.iter().cloned());
            b.tasks.get(local).cloned().flatten()
        }
        None => None,
    };
    let mut env = task_env(spec, step, task, local, keep_fd, pmix_env);
    // TaskProlog (slurm.conf's, then srun's --task-prolog): its `export`,
    // `unset` and `print` lines act on the task.
    for prolog in [spec.task_prolog.as_deref(), l.task_prolog.as_deref()]
        .into_iter()
        .flatten()
    {
        match crate::hooks::run_task_script(prolog, &env, &step.work_dir, step.switch.as_ref()) {
            Ok(out) => {
                let printed = crate::hooks::apply_task_prolog(&out, &mut env);
                if !printed.is_empty() {
                    to.send(StepdToSrun::Output {
                        task,
                        stderr: false,
                        data: printed.into_bytes(),
                    });
                }
            }
            Err(e) => to.send(StepdToSrun::Output {
                task,
                stderr: true,
                data: format!("slurmstepd: error: {e}\n").into_bytes(),
            }),
        }
    }
    // `srun --multi-prog`: the task's own line of the file.
    let argv = match &l.multi_prog {
        Some(text) => proto::multi_prog::parse(text)
            .ok()
            .and_then(|lines| proto::multi_prog::task_argv(&lines, task)),
        None => Some(l.argv.clone()),
    };
    let Some(argv) = argv.filter(|a| !a.is_empty()) else {
        to.send(StepdToSrun::Output {
            task,
            stderr: true,
            data: b"No executable program specified for this task\n".to_vec(),
        });
        started.failed_exits.push((task, 1 << 8));
        return;
    };
    // In a container: the image's environment and entrypoint (pyxis).
    let argv = match &step.container {
        Some(c) => {
            c.task_env(&mut env);
            c.task_argv(argv)
        }
        None => argv,
    };
    let program = &argv[0];
    let root = step.container.as_ref().and_then(|c| c.root());
    let mut setup = TaskSetup {
        switch: step.switch.clone(),
        work_dir: CString::new(step.work_dir.as_str()).unwrap_or_else(|_| c"/tmp".into()),
        chdir_lines: step.chdir_lines.clone(),
        stdin_file: stdio.stdin_file,
        keep_fd,
        ctty: term.is_some(),
        image: ExecImage::new_in(root.as_deref(), program, &argv[1..], &env),
        mnt_ns: step.container.as_ref().map(crate::container::raw),
        user_ns: step
            .container
            .as_ref()
            .and_then(|c| c.user_ns.as_ref())
            .map(|f| f.as_raw_fd()),
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(stdio.stdin)
        .stdout(stdio.stdout)
        .stderr(stdio.stderr);
    let task_cgroup = match confined_task {
        Some(cg) => Some(cg),
        None => step.cgroup.as_ref().and_then(|c| c.task(task)),
    };
    // Usage comes from the cgroup only where JobAcctGatherType says so.
    let sampled = task_cgroup
        .clone()
        .filter(|_| spec.gather.kind == GatherType::Cgroup);
    if let Some(cg) = &sampled {
        started.task_cgroups.insert(local, cg.clone());
    }
    // SAFETY: `join_self` and `apply` are async-signal-safe (see
    // TaskCgroup, TaskSetup); the cgroup is joined while still root.
    unsafe {
        if let Some(cg) = task_cgroup.clone() {
            cmd.pre_exec(move || {
                cg.join_self();
                Ok(())
            });
        }
        // task/affinity, after the cgroup (joining a v1 cpuset resets the
        // affinity to the cpuset's CPUs); `apply` is one system call.
        if let Some(mask) = bound.as_deref().map(crate::affinity::CpuMask::new) {
            cmd.pre_exec(move || {
                mask.apply();
                Ok(())
            });
        }
        cmd.pre_exec(move || setup.apply());
    }
    for m in stdio.messages {
        to.send(StepdToSrun::Output {
            task,
            stderr: true,
            data: m.into_bytes(),
        });
    }
    match cmd.spawn() {
        Ok(mut child) => {
            let pid = child.id() as i32;
            if let Some(id) = ProcId::of(pid) {
                report(&TaskdReport::Started(id));
            }
            if let Some((b, host)) = step.binding.as_ref().filter(|(b, _)| b.verbose) {
                to.send(StepdToSrun::Output {
                    task,
                    stderr: true,
                    data: crate::affinity::verbose_line(
                        &spec.node_name,
                        task,
                        local,
                        pid,
                        b.tasks.get(local).and_then(|t| t.as_deref()),
                        host,
                    )
                    .into_bytes(),
                });
            }
            started.sources.push((
                local,
                match sampled {
                    Some(cg) => TaskSource::Cgroup(cg),
                    None => TaskSource::Session(pid),
                },
            ));
            let mut readers = Vec::new();
            if let Some(o) = child.stdout.take() {
                readers.push(pump(o, to.clone(), task, false));
            }
            if let Some(e) = child.stderr.take() {
                readers.push(pump(e, to.clone(), task, true));
            }
            if let Some(i) = child.stdin.take() {
                started
                    .stdin_pipes
                    .push((task, std::fs::File::from(OwnedFd::from(i))));
            }
            if let Some(p) = term {
                // The task holds the slave now: the master reads EIO once
                // every process on the terminal is gone.
                drop(p.slave);
                if let Ok(r) = p.master.try_clone() {
                    readers.push(pump(r, to.clone(), task, false));
                }
                if let Ok(w) = p.master.try_clone() {
                    started.stdin_pipes.push((task, w));
                }
                started.pty_master = Some(p.master);
            }
            if let Some((ours, _child_end)) = pair {
                started.pmi_conns.push((task, ours));
            }
            started.tasks.push(Task {
                id: task,
                pid,
                readers,
                env,
            });
        }
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::ENOENT);
            to.send(StepdToSrun::Output {
                task,
                stderr: true,
                data: format!(
                    "slurmstepd: error: execve(): {program}: {}\n",
                    os_error_text(errno)
                )
                .into_bytes(),
            });
            started.failed_exits.push((task, (errno & 0xff) << 8));
        }
    }
}

/// A task's stdio, and the error lines for the files that could not be
/// opened (sent to srun as the task's stderr).
struct TaskStdio {
    stdin: Stdio,
    /// `--input=FILE`: opened by the child, as the job's user.
    stdin_file: Option<CString>,
    stdout: Stdio,
    stderr: Stdio,
    messages: Vec<String>,
}

/// Opens (or shares, through `opened`) the output files of task `task`;
/// a stream without a file is a pipe to srun.
fn task_stdio(
    spec: &TaskdSpec,
    step: &StepSetup,
    opened: &mut BTreeMap<String, std::fs::File>,
    task: u32,
) -> TaskStdio {
    let l = &spec.launch;
    let fs_switch = step.switch.as_ref().map(|(u, g, _)| (*u, *g));
    let mut messages: Vec<String> = Vec::new();
    let mut output = |pattern: &Option<String>| -> Stdio {
        let Some(p) = pattern else {
            return Stdio::piped();
        };
        let path = expand_task_path(p, l, &spec.node_name, task);
        if let Some(f) = opened.get(&path).and_then(|f| f.try_clone().ok()) {
            return Stdio::from(f);
        }
        match open_output(&path, fs_switch) {
            Ok(f) => {
                if let Ok(c) = f.try_clone() {
                    opened.insert(path, c);
                }
                Stdio::from(f)
            }
            Err(e) => {
                messages.push(format!(
                    "slurmstepd: error: Could not open stdout file {path}: {}\n",
                    os_error_text(e.raw_os_error().unwrap_or(libc::EIO))
                ));
                Stdio::null()
            }
        }
    };
    let stdout = output(&l.stdout);
    let stderr = match (&l.stderr, &l.stdout) {
        (None, Some(_)) => output(&l.stdout),
        (e, _) => output(e),
    };
    let (stdin, stdin_file) = match &l.stdin {
        StdinMode::Task0 if task == 0 => (Stdio::piped(), None),
        StdinMode::Task(n) if *n == task => (Stdio::piped(), None),
        StdinMode::All => (Stdio::piped(), None),
        StdinMode::File(p) => (
            Stdio::null(),
            CString::new(expand_task_path(p, l, &spec.node_name, task)).ok(),
        ),
        _ => (Stdio::null(), None),
    };
    TaskStdio {
        stdin,
        stdin_file,
        stdout,
        stderr,
        messages,
    }
}

/// Serves srun's messages (stdin, signals, fence results) on a thread of
/// their own until srun goes.
fn relay_srun_messages(
    stream: TcpStream,
    step: &StepSetup,
    pids: Arc<Mutex<Vec<i32>>>,
    ender: Ender,
    (stdin_pipes, pty_master): (StdinPipes, Option<std::fs::File>),
) {
    let pmi = step.pmi.clone();
    let pmix = step.pmix.clone();
    std::thread::spawn(move || {
        let mut s = stream;
        loop {
            let msg: proto::Envelope<SrunToStepd> = match rpc::read_frame(&mut s) {
                Ok(m) => m,
                Err(_) => return,
            };
            match msg.body {
                SrunToStepd::Stdin(data) => write_stdin(&stdin_pipes, &data),
                SrunToStepd::StdinEof => {
                    // A terminal hears its end-of-file character.
                    if let Some(m) = &pty_master {
                        let _ = (&*m).write_all(b"\x04");
                    }
                    stdin_pipes
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clear();
                }
                SrunToStepd::WindowSize(rows, cols) => {
                    if let Some(m) = &pty_master {
                        pty::set_size(m, rows, cols);
                    }
                }
                SrunToStepd::Signal(sig) => signal_tasks(&pids, sig),
                SrunToStepd::Terminate { kill_wait } => {
                    ender.end(proto::EndReason::Cancelled, true, Some(kill_wait));
                }
                SrunToStepd::FenceOut { seq, kvs } => {
                    if let Some(p) = &pmi {
                        p.fence_out(seq, kvs);
                    } else if let Some(p) = &pmix {
                        p.fence_out(seq, kvs);
                    }
                }
            }
        }
    });
}

/// The pipes to the stdin of the tasks that read srun's, shared by srun's
/// and sattach's connections.
type StdinPipes = Arc<Mutex<Vec<(u32, std::fs::File)>>>;

fn write_stdin(pipes: &StdinPipes, data: &[u8]) {
    let mut pipes = pipes.lock().unwrap_or_else(|p| p.into_inner());
    pipes.retain_mut(|(_, p)| p.write_all(data).is_ok());
}

/// How long a write to an `sattach` client may block.
const ATTACH_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What an `sattach` connection needs of the step.
struct AttachTo {
    to: ToSrun,
    node_index: u32,
    node: String,
    stdin_pipes: StdinPipes,
}

impl AttachTo {
    /// Connects to sattach at `addr`, and serves its stdin and signals on
    /// a thread of their own until it goes (its end of input is its own:
    /// srun's stdin stays open).
    fn attach(&self, addr: &str, token: String, pids: Arc<Mutex<Vec<i32>>>) {
        let Some(stream) = connect(addr) else {
            eprintln!("noded --step-tasks: cannot reach sattach at {addr}");
            return;
        };
        let Ok(mut reader) = stream.try_clone() else {
            return;
        };
        // An sattach that stops reading is dropped rather than holding up
        // the output srun gets.
        let _ = stream.set_write_timeout(Some(ATTACH_WRITE_TIMEOUT));
        let hello = StepdToSrun::Hello {
            token,
            node_index: self.node_index,
            node: self.node.clone(),
        };
        if !self.to.attach(stream, hello) {
            return;
        }
        let pipes = self.stdin_pipes.clone();
        std::thread::spawn(move || loop {
            let msg: proto::Envelope<SrunToStepd> = match rpc::read_frame(&mut reader) {
                Ok(m) => m,
                Err(_) => return,
            };
            match msg.body {
                SrunToStepd::Stdin(data) => write_stdin(&pipes, &data),
                SrunToStepd::Signal(sig) => signal_tasks(&pids, sig),
                _ => {}
            }
        });
    }
}

/// Follows the daemon's control lines on a thread of their own; the
/// receiver hears when the daemon has reported the step's end.
fn follow_control_lines(
    control: std::io::BufReader<std::io::Stdin>,
    pids: Arc<Mutex<Vec<i32>>>,
    ender: Ender,
    attach: AttachTo,
) -> std::sync::mpsc::Receiver<()> {
    let (reported_tx, reported_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for line in control.lines() {
            let Ok(line) = line else { return };
            match serde_json::from_str::<TaskdControl>(&line) {
                Ok(TaskdControl::Signal(sig)) => signal_tasks(&pids, sig),
                Ok(TaskdControl::Terminate(kill_wait)) => terminate_tasks(&pids, kill_wait),
                Ok(TaskdControl::End {
                    reason,
                    step,
                    kill_wait,
                }) => {
                    ender.end(reason, step, kill_wait);
                }
                Ok(TaskdControl::Reported) => {
                    let _ = reported_tx.send(());
                }
                Ok(TaskdControl::Attach { addr, token }) => {
                    attach.attach(&addr, token, pids.clone());
                }
                Err(_) => {}
            }
        }
    });
    reported_rx
}

/// Tells srun of the tasks that never ran, then reaps every task as it
/// ends (its group killed, its usage noted, its output drained) and tells
/// srun; returns the step's exit code on this node (the worst).
fn reap_tasks(
    step: &StepSetup,
    mut tasks: Vec<Task>,
    failed_exits: Vec<(u32, i32)>,
    task_cgroups: &BTreeMap<usize, TaskCgroup>,
    pids: &Mutex<Vec<i32>>,
    gather: &Mutex<Gather>,
    spec_epilogs: &(Option<String>, Option<String>),
) -> ExitCode {
    let to = &step.to;
    let mut exit = ExitCode::default();
    for (task, status) in failed_exits {
        exit = engine_like_worse(exit, ExitCode::from_wait_status(status));
        to.send(StepdToSrun::TaskExited { task, status });
    }
    let mut left = tasks.len();
    while left > 0 {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 for any child with live out-parameters.
        let pid = unsafe { libc::wait4(-1, &mut status, 0, &mut ru) };
        if pid < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            break;
        }
        let Some(pos) = tasks.iter().position(|t| t.pid == pid) else {
            continue;
        };
        let t = tasks.swap_remove(pos);
        left -= 1;
        // What is left of the task's group goes with it.
        // SAFETY: kill(2) on the task's own (now zombie-free) group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        pids.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != pid);
        let usec = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        if let Some(local) = step.mine.iter().position(|m| *m == t.id) {
            gather
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .finish_task(
                    local,
                    (
                        usec(ru.ru_utime),
                        usec(ru.ru_stime),
                        ru.ru_maxrss.max(0) as u64,
                    ),
                    task_cgroups.get(&local),
                );
        }
        for r in t.readers {
            let _ = r.join();
        }
        if let Some(p) = &step.pmi {
            p.task_exited(t.id);
        }
        if let Some(p) = &step.pmix {
            p.task_exited(t.id);
        }
        // A task the OOM killer hit ends with Slurm's SIG_OOM status (srun:
        // `Out Of Memory`, exit 0:125), whatever killed or ended it.
        let oom = step
            .mine
            .iter()
            .position(|m| *m == t.id)
            .and_then(|local| task_cgroups.get(&local))
            .is_some_and(|c| c.oom_kills() > 0);
        let status = if oom {
            crate::oom::SIG_OOM_STATUS
        } else {
            status
        };
        // TaskEpilog (srun's --task-epilog, then slurm.conf's), as the
        // user, in the task's environment; its output is not used.
        for epilog in [spec_epilogs.0.as_deref(), spec_epilogs.1.as_deref()]
            .into_iter()
            .flatten()
        {
            if let Err(e) =
                crate::hooks::run_task_script(epilog, &t.env, &step.work_dir, step.switch.as_ref())
            {
                to.send(StepdToSrun::Output {
                    task: t.id,
                    stderr: true,
                    data: format!("slurmstepd: error: {e}\n").into_bytes(),
                });
            }
        }
        exit = engine_like_worse(exit, ExitCode::from_wait_status(status));
        to.send(StepdToSrun::TaskExited { task: t.id, status });
    }
    exit
}

/// The worse of two exits (a signal beats a code, then the higher value).
fn engine_like_worse(a: ExitCode, b: ExitCode) -> ExitCode {
    let key = |e: ExitCode| (e.signal != 0, e.signal, e.code);
    if key(b) > key(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    /// The banner real Slurm 22.05's slurmstepd printed for `srun -t 1`
    /// (its log prefix aside: muster's supervisor says `slurmstepd:`).
    #[test]
    fn the_time_limit_banner_is_slurmstepds() {
        assert_eq!(
            proto::EndReason::TimeLimit.banner("STEP 1.0", "node1", "2026-12-06T14:22:13"),
            "slurmstepd: error: *** STEP 1.0 ON node1 CANCELLED AT 2026-12-06T14:22:13 DUE TO TIME LIMIT ***\n"
        );
    }
}
