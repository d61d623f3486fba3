//! Usage gathering (Slurm's jobacct_gather): what a step's tasks use,
//! sampled while they run by the step's supervisor (`stepd` for the batch
//! step, `taskd` for srun's steps).
//!
//! ```text
//!   JobAcctGatherType=jobacct_gather/linux (default)   /proc: every process
//!       whose session is a task's (each task is a session), summed per task
//!   JobAcctGatherType=jobacct_gather/cgroup            a cgroup per task
//!       (<hierarchy>/muster/<node>-<spool hash>/job_<id>/step_<s>/task_<t>,
//!       v1 memory + cpuacct, or v2), joined between fork and exec: memory
//!       from the cgroup (current and the kernel's high-water mark), VMSize
//!       and pages from /proc over the cgroup's processes
//!   JobAcctGatherType=jobacct_gather/none              final rusage only
//! ```
//!
//! A sampler thread reads every task each `JobAcctGatherFrequency` seconds
//! (0: never); when a task is reaped its rusage gives its CPU times and a
//! MaxRSS floor (the largest of the processes it waited for), and a task
//! cgroup's high-water mark gives the peak between samples. Parsing is
//! pure and unit-tested for both cgroup versions.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// JobAcctGatherType.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GatherType {
    /// `jobacct_gather/none`: no sampling.
    None,
    /// `jobacct_gather/linux`: /proc.
    #[default]
    Linux,
    /// `jobacct_gather/cgroup`: per-task cgroups, /proc where none exists.
    Cgroup,
}

/// How a supervisor gathers usage (from slurm.conf, via the daemon).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatherSettings {
    /// The plugin.
    pub kind: GatherType,
    /// Seconds between samples; 0 disables polling.
    pub freq_secs: u32,
    /// Directory name of this daemon's cgroups (under `muster/`).
    pub cgroup_name: String,
    /// cgroup.conf's memory keys, where it constrains RAM or swap: a
    /// step's cgroup then gets its memory limits (`conf::memlimit`).
    #[serde(default)]
    pub memory: Option<conf::memlimit::MemConstraints>,
    /// The node's RealMemory (MB), which MaxRAMPercent and MaxSwapPercent
    /// are percents of.
    #[serde(default)]
    pub real_memory_mb: u64,
}

impl Default for GatherSettings {
    fn default() -> Self {
        GatherSettings {
            kind: GatherType::Linux,
            freq_secs: DEFAULT_FREQ,
            cgroup_name: "muster".into(),
            memory: None,
            real_memory_mb: 0,
        }
    }
}

/// Slurm's default JobAcctGatherFrequency.
/// A job's `--acctg-freq`, where given and readable, replaces it.
pub const DEFAULT_FREQ: u32 = 30;

impl GatherSettings {
    /// From slurm.conf's `JobAcctGatherType` and `JobAcctGatherFrequency`
    /// values (absent: Slurm's defaults, here with /proc gathering).
    pub fn from_conf(kind: Option<&str>, freq: Option<&str>, node: &str, spool: &Path) -> Self {
        let kind = match kind.map(str::trim) {
            Some(k) if k.eq_ignore_ascii_case("jobacct_gather/none") => GatherType::None,
            Some(k) if k.eq_ignore_ascii_case("jobacct_gather/cgroup") => GatherType::Cgroup,
            _ => GatherType::Linux,
        };
        // The spool directory tells apart daemons of one name on one host
        // (test clusters); it is stable across daemon restarts.
        let hash = spool
            .as_os_str()
            .as_encoded_bytes()
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
            });
        GatherSettings {
            kind,
            freq_secs: freq.and_then(parse_frequency).unwrap_or(DEFAULT_FREQ),
            cgroup_name: format!("{node}-{:08x}", hash as u32),
            memory: None,
            real_memory_mb: 0,
        }
    }
}

/// `JobAcctGatherFrequency` (and `--acctg-freq`): `N` or `task=N[,...]`;
/// `None` for anything else.
pub fn parse_frequency(text: &str) -> Option<u32> {
    for part in text.split(',') {
        let part = part.trim();
        let value = match part.split_once('=') {
            Some((k, v)) if k.trim().eq_ignore_ascii_case("task") => v,
            Some(_) => continue,
            None => part,
        };
        if let Ok(n) = value.trim().parse() {
            return Some(n);
        }
    }
    None
}

/// One reading of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskSample {
    /// Resident set size, KiB.
    pub rss_kib: u64,
    /// Peak memory the kernel saw (cgroup high-water mark), KiB.
    pub peak_kib: u64,
    /// Virtual memory size, KiB.
    pub vsize_kib: u64,
    /// Major page faults.
    pub pages: u64,
    /// CPU time (user + system, microseconds) of its live processes and
    /// the children they reaped; the cgroup's where there is one.
    pub cpu_usec: u64,
}

/// The fields of `/proc/PID/stat` that gathering needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// Session id.
    pub session: i32,
    /// Major faults.
    pub majflt: u64,
    /// Virtual size in bytes.
    pub vsize: u64,
    /// Resident pages.
    pub rss_pages: u64,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub cpu_ticks: u64,
}

/// Parses `/proc/PID/stat` (the command name may hold spaces and
/// parentheses: fields are counted after the last `)`).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field N is f[N - 3].
    let num = |n: usize| f.get(n - 3)?.parse::<i64>().ok();
    Some(ProcStat {
        session: num(6)? as i32,
        majflt: num(12)?.max(0) as u64,
        vsize: num(23)?.max(0) as u64,
        rss_pages: num(24)?.max(0) as u64,
        cpu_ticks: (14..=17).map(|n| num(n).unwrap_or(0).max(0) as u64).sum(),
    })
}

fn page_kib() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as u64 / 1024
    } else {
        4
    }
}

fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

fn read_stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Adds one process to a task's sample.
fn add_proc(s: &mut TaskSample, st: &ProcStat, page_kib: u64) {
    s.rss_kib += st.rss_pages * page_kib;
    s.vsize_kib += st.vsize / 1024;
    s.pages += st.majflt;
    s.cpu_usec += st.cpu_ticks * 1_000_000 / clock_ticks();
}

/// Samples tasks that are sessions: every process in /proc whose session
/// is one of `sessions`, summed per session. `None` for a session with no
/// process left.
pub fn sample_sessions(sessions: &[i32]) -> Vec<Option<TaskSample>> {
    let mut out = vec![None; sessions.len()];
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    let pk = page_kib();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(st) = read_stat(pid) else { continue };
        if let Some(i) = sessions.iter().position(|s| *s == st.session) {
            add_proc(out[i].get_or_insert_with(TaskSample::default), &st, pk);
        }
    }
    out
}

/// Samples one session task from its leader's process tree: the leader
/// and its descendants (`/proc/PID/task/TID/children`) that are still in
/// its session. Cheaper than [`sample_sessions`], which reads every
/// process on the host, but blind to a process of the session that was
/// orphaned (reparented outside the tree); for the first sample, taken as
/// the task starts, when it has had no time to leave any. `None` when
/// the kernel lists no children (no CONFIG_PROC_CHILDREN): then the
/// caller scans. `Some(None)` when the leader is gone (already reaped).
fn sample_session_tree(leader: i32) -> Option<Option<TaskSample>> {
    let pk = page_kib();
    let mut out: Option<TaskSample> = None;
    let mut todo = vec![leader];
    let mut seen = 0usize;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > 100_000 {
            return None;
        }
        let Some(st) = read_stat(pid) else {
            if pid == leader {
                // Reaped: the task ended before its first sample (a short
                // job; wait4 gives its figures). Nothing of it to look for.
                return Some(None);
            }
            continue;
        };
        if st.session == leader {
            add_proc(out.get_or_insert_with(TaskSample::default), &st, pk);
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            if pid == leader {
                return None;
            }
            continue;
        };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
                if pid == leader {
                    return None;
                }
                continue;
            };
            todo.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    Some(out)
}

/// The cgroup hierarchies of this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hierarchy {
    /// cgroup v1: the memory and cpuacct controllers' mounts.
    V1 { memory: PathBuf, cpuacct: PathBuf },
    /// cgroup v2: the unified mount.
    V2 { root: PathBuf },
}

impl Hierarchy {
    /// What `/sys/fs/cgroup` holds: v2 when it is the unified hierarchy
    /// with the memory controller, else v1 with memory and cpuacct.
    pub fn detect() -> Option<Hierarchy> {
        let root = Path::new("/sys/fs/cgroup");
        if let Ok(c) = std::fs::read_to_string(root.join("cgroup.controllers")) {
            return c
                .split_whitespace()
                .any(|w| w == "memory")
                .then(|| Hierarchy::V2 {
                    root: root.to_path_buf(),
                });
        }
        let memory = root.join("memory");
        let cpuacct = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]
            .iter()
            .map(|d| root.join(d))
            .find(|d| d.join("cpuacct.usage").exists())?;
        memory
            .join("memory.usage_in_bytes")
            .exists()
            .then_some(Hierarchy::V1 { memory, cpuacct })
    }

    /// The directories of one cgroup path, one per hierarchy used.
    fn dirs(&self, rel: &Path) -> Vec<PathBuf> {
        match self {
            Hierarchy::V1 { memory, cpuacct } => vec![memory.join(rel), cpuacct.join(rel)],
            Hierarchy::V2 { root } => vec![root.join(rel)],
        }
    }
}

/// A step's cgroups: `muster/<name>/job_<id>/step_<s>` and a `task_<t>`
/// below it per task.
#[derive(Clone, Debug)]
pub struct StepCgroup {
    hierarchy: Hierarchy,
    /// Relative path of the step.
    step: PathBuf,
}

impl StepCgroup {
    /// Creates the step's cgroup; `None` (gathering falls back to /proc)
    /// where the host has no usable hierarchy or it cannot be written.
    pub fn create(settings: &GatherSettings, job: u32, step: &str) -> Option<StepCgroup> {
        let hierarchy = Hierarchy::detect()?;
        let rel = Path::new("muster")
            .join(&settings.cgroup_name)
            .join(format!("job_{job}"))
            .join(format!("step_{step}"));
        if let Hierarchy::V2 { root } = &hierarchy {
            // Each level must pass the controllers on to its children.
            let mut dir = root.clone();
            for part in rel.iter() {
                let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+memory +cpu");
                dir.push(part);
                if let Err(e) = std::fs::create_dir(&dir) {
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return None;
                    }
                }
            }
            let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+memory +cpu");
        } else {
            for d in hierarchy.dirs(&rel) {
                std::fs::create_dir_all(&d).ok()?;
            }
        }
        Some(StepCgroup {
            hierarchy,
            step: rel,
        })
    }

    /// Limits the step's memory (its cgroup and so all its tasks), to what
    /// cgroup.conf's memory keys make of `alloc_mb`, the MB the step holds
    /// on this node; nothing where cgroup.conf constrains no memory. A file
    /// the kernel lacks (`memory.memsw.*` without swap accounting) is
    /// skipped: the other limits still hold.
    pub fn limit_memory(&self, settings: &GatherSettings, alloc_mb: u64) {
        let Some(limits) = settings
            .memory
            .as_ref()
            .and_then(|c| conf::memlimit::mem_limits(alloc_mb, settings.real_memory_mb, c))
        else {
            return;
        };
        let dir = &self.hierarchy.dirs(&self.step)[0];
        let write = |file: &str, bytes: u64| {
            if let Err(e) = std::fs::write(dir.join(file), bytes.to_string()) {
                tracing::warn!("cannot write {}: {e}", dir.join(file).display());
            }
        };
        match &self.hierarchy {
            // A fresh cgroup has no limits: RAM first, then RAM + swap,
            // which must never be below it.
            Hierarchy::V1 { .. } => {
                write("memory.limit_in_bytes", limits.ram_bytes);
                write("memory.soft_limit_in_bytes", limits.soft_bytes);
                if let Some(total) = limits.ram_swap_bytes {
                    write("memory.memsw.limit_in_bytes", total);
                }
            }
            Hierarchy::V2 { .. } => {
                write("memory.max", limits.ram_bytes);
                write("memory.high", limits.soft_bytes);
                if let Some(swap) = limits.swap_only_bytes() {
                    write("memory.swap.max", swap);
                }
            }
        }
    }

    /// How many of the step's processes the OOM killer killed: v1 sums the
    /// step's and its tasks' counters, v2's step counter covers its tasks.
    /// Read before [`StepCgroup::remove`].
    pub fn oom_kills(&self) -> u64 {
        let dir = &self.hierarchy.dirs(&self.step)[0];
        match &self.hierarchy {
            Hierarchy::V1 { .. } => crate::oom::v1_oom_kills(dir),
            Hierarchy::V2 { .. } => crate::oom::v2_oom_kills(dir),
        }
    }

    /// Creates task `task`'s cgroup; `None` if it cannot be.
    pub fn task(&self, task: u32) -> Option<TaskCgroup> {
        let dirs = self.hierarchy.dirs(&self.step.join(format!("task_{task}")));
        for d in &dirs {
            if let Err(e) = std::fs::create_dir(d) {
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return None;
                }
            }
        }
        let join = crate::cgroup::TaskJoin::new(
            &dirs
                .iter()
                .map(|d| d.join("cgroup.procs"))
                .collect::<Vec<_>>(),
        );
        Some(TaskCgroup {
            v2: matches!(self.hierarchy, Hierarchy::V2 { .. }),
            dirs,
            join,
        })
    }

    /// Removes the step's cgroups (its processes are gone), and the job's
    /// and the daemon's directories when nothing else is left in them. A
    /// cgroup still busy (a killed process not yet gone) is retried for up
    /// to a second; one that a process escaped into stays.
    pub fn remove(&self) {
        fn rmdir(path: &Path) {
            for _ in 0..20 {
                match std::fs::remove_dir(path) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    _ => return,
                }
            }
        }
        for d in self.hierarchy.dirs(&self.step) {
            if let Ok(entries) = std::fs::read_dir(&d) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        rmdir(&e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(&d);
            // The job's directory, then the daemon's: rmdir refuses while
            // another step or job is in them.
            if let Some(job) = d.parent() {
                if std::fs::remove_dir(job).is_ok() {
                    if let Some(daemon) = job.parent() {
                        let _ = std::fs::remove_dir(daemon);
                    }
                }
            }
        }
    }
}

/// One task's cgroup.
#[derive(Clone, Debug)]
pub struct TaskCgroup {
    v2: bool,
    /// Its directory in each hierarchy (v1: memory first, then cpuacct).
    dirs: Vec<PathBuf>,
    /// `cgroup.procs` of each, for the child to join.
    join: crate::cgroup::TaskJoin,
}

impl TaskCgroup {
    /// A task cgroup the confinement layer (`cgroup`) made: joined through
    /// its `procs` files, usage read from `memory` and (v1) `cpu`.
    pub fn from_dirs(v2: bool, memory: PathBuf, cpu: PathBuf, procs: &[PathBuf]) -> TaskCgroup {
        TaskCgroup {
            v2,
            dirs: if v2 { vec![memory] } else { vec![memory, cpu] },
            join: crate::cgroup::TaskJoin::new(procs),
        }
    }

    /// Moves the calling process into the task's cgroups. Async-signal-safe
    /// (system calls on memory prepared before fork): for between fork and
    /// exec, before the user switch. Failure is ignored: the task then is
    /// sampled from /proc.
    pub fn join_self(&self) {
        self.join.join_self();
    }

    fn read(&self, i: usize, file: &str) -> Option<String> {
        std::fs::read_to_string(self.dirs.get(i)?.join(file)).ok()
    }

    /// The processes in the task's cgroup.
    pub fn pids(&self) -> Vec<i32> {
        self.read(0, "cgroup.procs")
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// A sample: memory from the cgroup, the rest from its processes in
    /// /proc. `None` once no process is left in it.
    pub fn sample(&self) -> Option<TaskSample> {
        let pids = self.pids();
        if pids.is_empty() {
            return None;
        }
        let pk = page_kib();
        let mut s = TaskSample::default();
        for pid in pids {
            if let Some(st) = read_stat(pid) {
                add_proc(&mut s, &st, pk);
            }
        }
        let (current, peak) = self.memory();
        if let Some(c) = current {
            s.rss_kib = c / 1024;
        }
        s.peak_kib = peak.map_or(s.rss_kib, |p| p / 1024);
        if let Some((u, sys)) = self.cpu_usec() {
            s.cpu_usec = s.cpu_usec.max(u + sys);
        }
        Some(s)
    }

    /// (current, high-water mark) memory in bytes.
    pub fn memory(&self) -> (Option<u64>, Option<u64>) {
        if self.v2 {
            (
                self.read(0, "memory.current").and_then(|t| parse_u64(&t)),
                self.read(0, "memory.peak").and_then(|t| parse_u64(&t)),
            )
        } else {
            (
                self.read(0, "memory.usage_in_bytes")
                    .and_then(|t| parse_u64(&t)),
                self.read(0, "memory.max_usage_in_bytes")
                    .and_then(|t| parse_u64(&t)),
            )
        }
    }

    /// How many of its processes the OOM killer killed (v1: in it alone;
    /// v2: in it and below).
    pub fn oom_kills(&self) -> u64 {
        let Some(dir) = self.dirs.first() else {
            return 0;
        };
        if self.v2 {
            crate::oom::v2_oom_kills(dir)
        } else {
            crate::oom::v1_oom_kills(dir)
        }
    }

    /// (user, system) CPU microseconds of everything that ran in it.
    pub fn cpu_usec(&self) -> Option<(u64, u64)> {
        if self.v2 {
            parse_v2_cpu_stat(&self.read(0, "cpu.stat")?)
        } else {
            let ns = |f: &str| self.read(1, f).and_then(|t| parse_u64(&t));
            Some((
                ns("cpuacct.usage_user")? / 1000,
                ns("cpuacct.usage_sys")? / 1000,
            ))
        }
    }
}

/// A number alone in a cgroup file (`max` and garbage: `None`).
pub fn parse_u64(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// cgroup v2 `cpu.stat`: (user_usec, system_usec).
pub fn parse_v2_cpu_stat(text: &str) -> Option<(u64, u64)> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok()).flatten()
        })
    };
    Some((field("user_usec")?, field("system_usec")?))
}

/// What one task used, accumulated over samples.
#[derive(Clone, Debug, Default)]
struct TaskAcc {
    /// Global task id.
    id: u32,
    max_rss: u64,
    rss_sum: u64,
    max_vsize: u64,
    vsize_sum: u64,
    max_pages: u64,
    pages_sum: u64,
    samples: u64,
    /// User and system CPU microseconds, once reaped.
    cpu: Option<(u64, u64)>,
    /// CPU microseconds at the newest sample, while it runs.
    live_cpu: u64,
}

/// The usage of a step's tasks on this node.
#[derive(Clone, Debug, Default)]
pub struct Gather {
    node: String,
    tasks: Vec<TaskAcc>,
    /// How long the step's container took to be ready on this node
    /// (microseconds, import included), where it has one.
    pub container_start_usec: Option<u64>,
}

impl Gather {
    /// For the tasks `ids` (global task ids) on `node`.
    pub fn new(node: &str, ids: &[u32]) -> Gather {
        Gather {
            node: node.to_string(),
            tasks: ids
                .iter()
                .map(|&id| TaskAcc {
                    id,
                    ..TaskAcc::default()
                })
                .collect(),
            container_start_usec: None,
        }
    }

    /// Records a sample of the task at `idx`.
    pub fn add(&mut self, idx: usize, s: TaskSample) {
        let Some(t) = self.tasks.get_mut(idx) else {
            return;
        };
        t.max_rss = t.max_rss.max(s.rss_kib).max(s.peak_kib);
        t.rss_sum += s.rss_kib;
        t.max_vsize = t.max_vsize.max(s.vsize_kib);
        t.vsize_sum += s.vsize_kib;
        t.max_pages = t.max_pages.max(s.pages);
        t.pages_sum += s.pages;
        t.samples += 1;
        t.live_cpu = t.live_cpu.max(s.cpu_usec);
    }

    /// Records a reaped task: its rusage (CPU microseconds and the largest
    /// RSS of the processes it waited for, KiB) and, with a cgroup, the
    /// kernel's high-water mark of its memory (KiB).
    pub fn finish(&mut self, idx: usize, user: u64, sys: u64, maxrss: u64, peak: Option<u64>) {
        let Some(t) = self.tasks.get_mut(idx) else {
            return;
        };
        t.cpu = Some((user, sys));
        t.max_rss = t.max_rss.max(maxrss).max(peak.unwrap_or(0));
    }

    /// Records a reaped task from its rusage (user and system CPU
    /// microseconds, largest RSS in KiB) and its cgroup, if any: the
    /// cgroup's high-water mark, and its CPU time where larger (it also
    /// counts descendants the task did not wait for).
    pub fn finish_task(&mut self, idx: usize, ru: (u64, u64, u64), cgroup: Option<&TaskCgroup>) {
        let (mut user, mut sys, maxrss) = ru;
        if let Some((cu, cs)) = cgroup.and_then(TaskCgroup::cpu_usec) {
            user = user.max(cu);
            sys = sys.max(cs);
        }
        let peak = cgroup.and_then(|c| c.memory().1).map(|b| b / 1024);
        self.finish(idx, user, sys, maxrss, peak);
    }

    /// The node's report for the step.
    pub fn usage(&self) -> proto::StepUsage {
        let n = self.tasks.len() as u64;
        if n == 0 {
            return proto::StepUsage::default();
        }
        let node = Some(self.node.clone());
        let argmax = |key: &dyn Fn(&TaskAcc) -> u64| {
            let t = self
                .tasks
                .iter()
                .max_by_key(|t| (key(t), std::cmp::Reverse(t.id)))
                .expect("tasks");
            (key(t), t.id)
        };
        let mean =
            |t: &TaskAcc, sum: u64, fallback: u64| sum.checked_div(t.samples).unwrap_or(fallback);
        let ave = |f: &dyn Fn(&TaskAcc) -> u64| self.tasks.iter().map(f).sum::<u64>() / n;
        // A task still running counts the CPU time of its newest sample.
        let cpu = |t: &TaskAcc| t.cpu.map_or(t.live_cpu, |(u, s)| u + s);
        let (max_rss, rss_task) = argmax(&|t| t.max_rss);
        let (max_vsize, vsize_task) = argmax(&|t| t.max_vsize);
        let (max_pages, pages_task) = argmax(&|t| t.max_pages);
        let min_cpu = self
            .tasks
            .iter()
            .min_by_key(|t| (cpu(t), t.id))
            .expect("tasks");
        let sampled = self.tasks.iter().any(|t| t.samples > 0);
        proto::StepUsage {
            user_cpu_usec: Some(self.tasks.iter().map(|t| t.cpu.map_or(0, |c| c.0)).sum()),
            sys_cpu_usec: Some(self.tasks.iter().map(|t| t.cpu.map_or(0, |c| c.1)).sum()),
            max_rss_kib: Some(max_rss),
            max_rss_node: node.clone(),
            max_rss_task: Some(rss_task),
            ave_rss_kib: Some(ave(&|t| mean(t, t.rss_sum, t.max_rss))),
            max_vmsize_kib: sampled.then_some(max_vsize),
            max_vmsize_node: sampled.then(|| self.node.clone()),
            max_vmsize_task: sampled.then_some(vsize_task),
            ave_vmsize_kib: sampled.then(|| ave(&|t| mean(t, t.vsize_sum, t.max_vsize))),
            max_pages: sampled.then_some(max_pages),
            max_pages_node: sampled.then(|| self.node.clone()),
            max_pages_task: sampled.then_some(pages_task),
            ave_pages: sampled.then(|| ave(&|t| mean(t, t.pages_sum, t.max_pages))),
            min_cpu_usec: Some(cpu(min_cpu)),
            min_cpu_node: node,
            min_cpu_task: Some(min_cpu.id),
            ave_cpu_usec: Some(ave(&cpu)),
            n_tasks: Some(n as u32),
            container_start_usec: self.container_start_usec,
        }
    }
}

/// Where the sampler finds a task.
#[derive(Clone, Debug)]
pub enum TaskSource {
    /// The task is the session of this pid.
    Session(i32),
    /// The task's cgroup.
    Cgroup(TaskCgroup),
}

/// Samples every task's source once into `gather`. `starting`: the
/// tasks have just started, so a session is looked for in its leader's
/// process tree (`sample_session_tree`) rather than among every process
/// of the host. Returns whether any task was found.
pub fn sample_into(
    gather: &Mutex<Gather>,
    sources: &[(usize, TaskSource)],
    starting: bool,
) -> bool {
    let sessions: Vec<i32> = sources
        .iter()
        .filter_map(|(_, s)| match s {
            TaskSource::Session(pid) => Some(*pid),
            TaskSource::Cgroup(_) => None,
        })
        .collect();
    let from_trees = if starting {
        sessions
            .iter()
            .map(|leader| sample_session_tree(*leader))
            .collect::<Option<Vec<_>>>()
    } else {
        None
    };
    let mut by_session = match from_trees {
        Some(samples) => samples,
        None if sessions.is_empty() => Vec::new(),
        None => sample_sessions(&sessions),
    }
    .into_iter();
    let mut samples = Vec::new();
    for (idx, src) in sources {
        let s = match src {
            TaskSource::Session(_) => by_session.next().flatten(),
            TaskSource::Cgroup(cg) => cg.sample(),
        };
        if let Some(s) = s {
            samples.push((*idx, s));
        }
    }
    let found = !samples.is_empty();
    let mut g = gather.lock().unwrap_or_else(|p| p.into_inner());
    for (idx, s) in samples {
        g.add(idx, s);
    }
    found
}

/// Where a supervisor publishes its step's usage after every sample, for
/// sstat (the daemon reads the file when the controller asks).
#[derive(Clone, Debug)]
pub struct Publish {
    /// The file (written whole: a temporary file, then a rename).
    pub path: PathBuf,
    /// The step.
    pub step: proto::StepId,
    /// Its tasks' pids on this node.
    pub pids: Vec<u32>,
}

impl Publish {
    fn write(&self, gather: &Mutex<Gather>) {
        let usage = gather.lock().unwrap_or_else(|p| p.into_inner()).usage();
        let stat = proto::NodeStepStat {
            step: self.step,
            usage,
            pids: self.pids.clone(),
        };
        let Ok(bytes) = serde_json::to_vec(&stat) else {
            return;
        };
        let mut tmp = self.path.as_os_str().to_owned();
        tmp.push(".tmp");
        // No fsync: the file lives as long as the step, and a torn one
        // after a crash is simply not read.
        // Owner-only, as everything of a job in the spool (`spool`).
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&bytes));
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        }
    }
}

/// A supervisor's published usage, if the file holds one.
pub fn read_live(path: &Path) -> Option<proto::NodeStepStat> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// A thread sampling the tasks every `freq` seconds until stopped.
pub struct Sampler {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling (nothing with frequency 0 or gathering off). The
    /// first sample is taken at once; with `publish`, the usage is written
    /// there after every sample.
    pub fn start(
        settings: &GatherSettings,
        gather: Arc<Mutex<Gather>>,
        sources: Vec<(usize, TaskSource)>,
        publish: Option<Publish>,
    ) -> Sampler {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let handle = (settings.freq_secs > 0 && settings.kind != GatherType::None).then(|| {
            let stop = stop.clone();
            let every = Duration::from_secs(u64::from(settings.freq_secs));
            let mut starting = true;
            std::thread::spawn(move || loop {
                let found = sample_into(&gather, &sources, starting);
                // A step whose tasks ended before the first sample (a short
                // job) publishes nothing: the file would be removed at once.
                if let Some(p) = publish.as_ref().filter(|_| found || !starting) {
                    p.write(&gather);
                }
                starting = false;
                let (lock, cv) = &*stop;
                let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
                if !*stopped {
                    stopped = cv
                        .wait_timeout(stopped, every)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                if *stopped {
                    break;
                }
            })
        });
        Sampler { stop, handle }
    }

    /// Stops sampling and waits for the thread.
    pub fn stop(mut self) {
        let (lock, cv) = &*self.stop;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests;
