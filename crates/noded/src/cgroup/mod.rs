//! Confinement with control groups (Slurm's proctrack/cgroup and the
//! cgroup plugins): one interface, [`Driver`], over a cgroup v1 driver
//! (`v1`) and a cgroup v2 driver (`v2`), chosen by cgroup.conf's
//! `CgroupPlugin` ([`CgroupSettings::from_conf`]).
//!
//! ```text
//!   v1: <mount>/<ctrl>/slurm_<node>-<h>/uid_U/job_J/step_S/task_T
//!         ctrl: freezer (tracking), cpuacct, memory; cpuset, devices when
//!         constrained; the same relative path in every one
//!   v2: <mount>/<base>/job_J/step_S/{slurm, user/task_T}
//!         base: <CgroupSlice>/<node>-<h>_slurmstepd.scope (IgnoreSystemd=yes)
//!               or the daemon's own cgroup (a delegated one)
//! ```
//!
//! `<h>` is a hash of the spool directory: several node daemons of one name
//! on one host (test clusters) never share a cgroup, and a restarted daemon
//! finds its jobs' cgroups again.
//!
//! The supervisors (`stepd`, `taskd`) stay outside the cgroups: tasks
//! join their task cgroup between fork and exec ([`TaskJoin`]), so a
//! freeze or a kill of a job or step never reaches its supervisor.
//!
//! Every path is below a mount root given as a parameter, so both drivers
//! are unit-tested against a fake tree in a temporary directory (plain
//! files where the kernel has control files).
//!
//! A leaf: imports no room. Invariant: nothing here creates a cgroup
//! outside `mount`'s per-node directory (v1) or `base` (v2).

mod v1;
mod v2;

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which cgroup version a driver drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Version {
    /// Legacy hierarchies, one per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Why a cgroup could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// The configured mount is not what the plugin needs.
    #[error("CgroupPlugin={plugin}: {} {what}", mount.display())]
    Mount {
        /// cgroup.conf's plugin, as written there.
        plugin: &'static str,
        /// `CgroupMountpoint`.
        mount: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// A controller the configuration needs is not available.
    #[error("cgroup controller {controller} is not available ({needed_by} needs it): {}", place.display())]
    MissingController {
        /// The controller's name (`freezer`, `memory`, ...).
        controller: String,
        /// What in the configuration needs it (`ConstrainRAMSpace=yes`).
        needed_by: &'static str,
        /// Where it was looked for.
        place: PathBuf,
    },
    /// A file system operation on a cgroup failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was tried (`create`, `write`, `remove`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The device rules could not be applied (ConstrainDevices).
    #[error("cannot confine devices: {what}")]
    Devices {
        /// What went wrong.
        what: String,
    },
    /// A freeze did not complete in time.
    #[error("{} did not freeze within {} ms", path.display(), waited.as_millis())]
    FreezeTimeout {
        /// The cgroup.
        path: PathBuf,
        /// How long we waited.
        waited: Duration,
    },
}

fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> CgroupError + 'a {
    move |source| CgroupError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Where a node's cgroups are and what they control; made by the daemon at
/// start, handed to the supervisors in their specs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupSettings {
    /// The driver.
    pub version: Version,
    /// `CgroupMountpoint`.
    pub mount: PathBuf,
    /// v1: the per-node directory name under each controller
    /// (`slurm_<node>-<hash>`); v2: the base cgroup relative to `mount`.
    pub base: PathBuf,
    /// v1: the controllers used, by name, with their mount directory
    /// (freezer first). v2: the controllers enabled below `base`.
    pub controllers: Vec<(String, PathBuf)>,
    /// How long a freeze, or a cgroup to empty, may take.
    #[serde(default = "default_settle")]
    pub settle: Duration,
    /// cgroup.conf `ConstrainDevices=yes`: the device files of the node's
    /// GPUs, by the node's index (gres.conf `File=`); a job, step or task
    /// may open only those it was given (`confine_devices`). `None`:
    /// devices are not confined.
    #[serde(default)]
    pub devices: Option<Vec<PathBuf>>,
}

fn default_settle() -> Duration {
    Duration::from_secs(5)
}

/// The name of a node's cgroups: the node name and a hash of its spool
/// directory (stable across restarts, different between daemons).
pub fn node_tag(node: &str, spool: &Path) -> String {
    let hash = spool
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{node}-{:08x}", hash as u32)
}

/// v1 controllers and the directory names they may be mounted under.
const V1_MOUNT_NAMES: &[(&str, &[&str])] = &[
    ("freezer", &["freezer"]),
    ("cpuacct", &["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]),
    ("memory", &["memory"]),
    ("cpuset", &["cpuset"]),
    ("devices", &["devices"]),
];

impl CgroupSettings {
    /// Resolves cgroup.conf for this node: the version (autodetect: v2
    /// where `mount` is the unified hierarchy with the controllers needed,
    /// else v1), the controllers and the base. Checks that the mount and
    /// every needed controller are there and that the node's directory can
    /// be made: the error names what is missing.
    pub fn from_conf(
        conf: &conf::CgroupConf,
        node: &str,
        spool: &Path,
    ) -> Result<CgroupSettings, CgroupError> {
        let settings = CgroupSettings::resolve(conf, node, spool)?;
        settings.driver().prepare()?;
        Ok(settings)
    }

    /// [`CgroupSettings::from_conf`] without making the node's directory.
    pub fn resolve(
        conf: &conf::CgroupConf,
        node: &str,
        spool: &Path,
    ) -> Result<CgroupSettings, CgroupError> {
        let mount = PathBuf::from(&conf.mountpoint);
        let tag = node_tag(node, spool);
        // v2 tracks, freezes and kills with the core files of every
        // cgroup (cgroup.procs, cgroup.freeze, cgroup.kill) and confines
        // devices with a BPF program: a mount without controllers does
        // as long as nothing below needs one.
        let mut v2_needed: Vec<(&str, &'static str)> = Vec::new();
        if conf.constrain_cores {
            v2_needed.push(("cpuset", "ConstrainCores=yes"));
        }
        if conf.constrain_ram_space {
            v2_needed.push(("memory", "ConstrainRAMSpace=yes"));
        } else if conf.constrain_swap_space {
            v2_needed.push(("memory", "ConstrainSwapSpace=yes"));
        }
        let unified = std::fs::read_to_string(mount.join("cgroup.controllers")).ok();
        let version = match conf.plugin {
            conf::CgroupPlugin::V1 => Version::V1,
            conf::CgroupPlugin::V2 => Version::V2,
            conf::CgroupPlugin::Disabled | conf::CgroupPlugin::Autodetect => match &unified {
                Some(c) if ["memory", "cpu"].iter().all(|n| has_word(c, n)) => Version::V2,
                _ => Version::V1,
            },
        };
        let settings = match version {
            Version::V1 => {
                let mut wanted = vec![
                    ("freezer", "proctrack/cgroup"),
                    ("cpuacct", "proctrack/cgroup"),
                    ("memory", "proctrack/cgroup"),
                ];
                if conf.constrain_cores {
                    wanted.push(("cpuset", "ConstrainCores=yes"));
                }
                if conf.constrain_devices {
                    wanted.push(("devices", "ConstrainDevices=yes"));
                }
                if !mount.is_dir() {
                    return Err(CgroupError::Mount {
                        plugin: "cgroup/v1",
                        mount,
                        what: "does not exist".into(),
                    });
                }
                let mut controllers = Vec::new();
                for (name, needed_by) in wanted {
                    let dirs = V1_MOUNT_NAMES
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map_or(&[][..], |(_, d)| *d);
                    let found = dirs
                        .iter()
                        .map(|d| mount.join(d))
                        .find(|d| d.join("cgroup.procs").exists());
                    match found {
                        Some(dir) => controllers.push((name.to_string(), dir)),
                        None => {
                            return Err(CgroupError::MissingController {
                                controller: name.to_string(),
                                needed_by,
                                place: mount.join(name),
                            })
                        }
                    }
                }
                CgroupSettings {
                    version,
                    mount,
                    base: PathBuf::from(format!("slurm_{tag}")),
                    controllers,
                    settle: default_settle(),
                    devices: None,
                }
            }
            Version::V2 => {
                let Some(available) = unified else {
                    return Err(CgroupError::Mount {
                        plugin: "cgroup/v2",
                        mount: mount.clone(),
                        what: "is not a cgroup v2 (unified) mount: it has no cgroup.controllers"
                            .into(),
                    });
                };
                for (name, needed_by) in &v2_needed {
                    if !has_word(&available, name) {
                        return Err(CgroupError::MissingController {
                            controller: name.to_string(),
                            needed_by,
                            place: mount.join("cgroup.controllers"),
                        });
                    }
                }
                let base = if conf.ignore_systemd {
                    Path::new(&conf.slice).join(format!("{tag}_slurmstepd.scope"))
                } else {
                    own_v2_cgroup().ok_or_else(|| CgroupError::Mount {
                        plugin: "cgroup/v2",
                        mount: mount.clone(),
                        what:
                            "holds no cgroup of this daemon (/proc/self/cgroup has no 0:: line); \
                               run it in a delegated cgroup or set IgnoreSystemd=yes"
                                .into(),
                    })?
                };
                if base.as_os_str().is_empty() {
                    return Err(CgroupError::Mount {
                        plugin: "cgroup/v2",
                        mount,
                        what: "holds this daemon in its root cgroup, which is not a delegated \
                               one; run it in a delegated cgroup or set IgnoreSystemd=yes"
                            .into(),
                    });
                }
                CgroupSettings {
                    version,
                    controllers: v2_needed
                        .iter()
                        .map(|(n, _)| (n.to_string(), mount.join(&base)))
                        .collect(),
                    mount,
                    base,
                    settle: default_settle(),
                    devices: None,
                }
            }
        };
        Ok(settings)
    }

    /// The driver for these settings.
    pub fn driver(&self) -> Box<dyn Driver> {
        match self.version {
            Version::V1 => Box::new(v1::V1 {
                settings: self.clone(),
            }),
            Version::V2 => Box::new(v2::V2 {
                settings: self.clone(),
            }),
        }
    }
}

fn has_word(text: &str, word: &str) -> bool {
    text.split_whitespace().any(|w| w == word)
}

/// The daemon's own cgroup on the unified hierarchy (`0::/path` in
/// /proc/self/cgroup), relative to the mount.
fn own_v2_cgroup() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    parse_own_v2_cgroup(&text)
}

/// The `0::/path` line of a /proc/PID/cgroup text, relative.
pub fn parse_own_v2_cgroup(text: &str) -> Option<PathBuf> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| PathBuf::from(p.trim().trim_start_matches('/')))
}

/// A job, step or task cgroup, by name (the driver makes the path).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgPath {
    /// The job's user (v1 has a `uid_U` level).
    pub uid: u32,
    /// The job id.
    pub job: u32,
    /// The step: `batch`, `extern`, `interactive`, `0`, `1+0`...
    pub step: Option<String>,
    /// The task (node-local rank).
    pub task: Option<u32>,
}

impl CgPath {
    /// The job's cgroup.
    pub fn job(uid: u32, job: u32) -> CgPath {
        CgPath {
            uid,
            job,
            step: None,
            task: None,
        }
    }

    /// A step of this job.
    pub fn step(&self, step: &str) -> CgPath {
        CgPath {
            step: Some(step.to_string()),
            task: None,
            ..self.clone()
        }
    }

    /// A task of this step.
    pub fn task(&self, task: u32) -> CgPath {
        CgPath {
            task: Some(task),
            ..self.clone()
        }
    }
}

/// A task cgroup's directories, for joining and for usage gathering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskDirs {
    /// `cgroup.procs` of every hierarchy the task must be in.
    pub procs: Vec<PathBuf>,
    /// Where memory usage is read.
    pub memory: PathBuf,
    /// Where CPU usage is read (v1 cpuacct; v2 the same as `memory`).
    pub cpu: PathBuf,
}

/// The files a process writes `0` into to join a task cgroup, prepared
/// before fork: [`TaskJoin::join_self`] is async-signal-safe.
#[derive(Clone, Debug)]
pub struct TaskJoin {
    procs: Vec<CString>,
}

impl TaskJoin {
    /// For the `procs` files of a task cgroup.
    pub fn new(procs: &[PathBuf]) -> TaskJoin {
        TaskJoin {
            procs: procs
                .iter()
                .filter_map(|p| CString::new(p.clone().into_os_string().into_encoded_bytes()).ok())
                .collect(),
        }
    }

    /// Moves the calling process into the task cgroup; false if any write
    /// failed. Only system calls on memory prepared before fork: for
    /// between fork and exec.
    pub fn join_self(&self) -> bool {
        let mut ok = true;
        for path in &self.procs {
            // SAFETY: open/write/close on a NUL-terminated path made before
            // fork and a static buffer.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    ok = false;
                    continue;
                }
                if libc::write(fd, c"0".as_ptr().cast(), 1) != 1 {
                    ok = false;
                }
                libc::close(fd);
            }
        }
        ok
    }
}

/// One cgroup version's way of doing what the node daemon needs.
pub trait Driver: Send + Sync + std::fmt::Debug {
    /// The version driven.
    fn version(&self) -> Version;
    /// Makes the node's own directory (v1: in each controller; v2: the
    /// base, with the controllers enabled below it); the daemon's start
    /// check.
    fn prepare(&self) -> Result<(), CgroupError>;
    /// Removes the node's own directory where no job is left in it (a
    /// daemon that stops in order leaves nothing behind).
    fn release(&self);
    /// Makes the job's and the step's cgroups (`cg` names a step).
    fn create_step(&self, cg: &CgPath) -> Result<(), CgroupError>;
    /// Makes a task's cgroup below its step (`cg` names a task).
    fn create_task(&self, cg: &CgPath) -> Result<TaskDirs, CgroupError>;
    /// Moves `pid` into `cg` (a task's or, v1, a step's cgroup).
    fn add_pid(&self, cg: &CgPath, pid: i32) -> Result<(), CgroupError>;
    /// Every process in `cg` and below.
    fn pids(&self, cg: &CgPath) -> Vec<i32>;
    /// True when no process is left in `cg` or below (also when it does
    /// not exist).
    fn is_empty(&self, cg: &CgPath) -> bool;
    /// Freezes `cg` and below, and waits until the kernel says frozen.
    fn freeze(&self, cg: &CgPath) -> Result<(), CgroupError>;
    /// Thaws `cg` and below.
    fn thaw(&self, cg: &CgPath) -> Result<(), CgroupError>;
    /// SIGKILLs every process in `cg` and below (v2 `cgroup.kill` where
    /// the kernel has it; else freeze, kill each, thaw).
    fn kill_all(&self, cg: &CgPath) -> Result<(), CgroupError>;
    /// Removes `cg` and everything below it (leaves first, retrying while
    /// the kernel still counts dying tasks), then the job's and (v1) the
    /// user's directory where nothing else is left in them.
    fn remove(&self, cg: &CgPath) -> Result<(), CgroupError>;
    /// Sets the memory limit of `cg` (bytes), and what it may use of swap
    /// beyond it (`None`: unchanged).
    fn set_memory_limit(
        &self,
        cg: &CgPath,
        bytes: u64,
        swap: Option<u64>,
    ) -> Result<(), CgroupError>;
    /// ConstrainCores: holds `cg` (a job or a step) to the host CPUs
    /// `cpus`. v1, where a cgroup's CPUs must hold its children's: the
    /// cgroups below are narrowed first (each to what it has of `cpus`, or
    /// all of them where it has none). Nothing without a cpuset controller.
    fn set_cpus(&self, cg: &CgPath, cpus: &[u32]) -> Result<(), CgroupError>;
    /// How many processes the kernel killed for want of memory in a step
    /// (v1: summed over the step's and its tasks' cgroups).
    fn oom_kills(&self, step: &CgPath) -> u64;
    /// The jobs that have a cgroup of this node.
    fn jobs(&self) -> Vec<CgPath>;
    /// The directory of `cg` in the tracking hierarchy (v1 freezer).
    fn dir(&self, cg: &CgPath) -> PathBuf;
}

/// Waits until `cg` is empty, up to `within`; whether it is.
pub fn wait_empty(driver: &dyn Driver, cg: &CgPath, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if driver.is_empty(cg) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills what is left in a step's cgroup, waits until it is empty and
/// removes it (and the job's where that was the last). What the step's
/// supervisor does once its tasks were reaped.
pub fn end_step(driver: &dyn Driver, cg: &CgPath, settle: Duration) -> Result<(), CgroupError> {
    if !driver.is_empty(cg) {
        driver.kill_all(cg)?;
        wait_empty(driver, cg, settle);
    }
    driver.remove(cg)
}

/// ConstrainDevices: lets the processes of `cg` (a job, a step or a task)
/// open only the GPUs `gpus` (the node's indexes) of the node's GPU device
/// files; the other device files stay as they were. Nothing where devices
/// are not confined. Levels are written top down (job, then its steps,
/// then their tasks), each after its directory was made.
pub fn confine_devices(
    settings: &CgroupSettings,
    cg: &CgPath,
    gpus: &[u32],
) -> Result<(), crate::devices::DeviceError> {
    let Some(files) = &settings.devices else {
        return Ok(());
    };
    let node = files
        .iter()
        .map(|f| crate::devices::Device::from_path(f))
        .collect::<Result<Vec<_>, _>>()?;
    let allocated: Vec<crate::devices::Device> = gpus
        .iter()
        .filter_map(|i| node.get(*i as usize).copied())
        .collect();
    let level = match (&cg.step, cg.task) {
        (None, _) => crate::devices::Level::Job,
        (Some(_), None) => crate::devices::Level::Step,
        (Some(_), Some(_)) => crate::devices::Level::Task,
    };
    match settings.version {
        Version::V1 => {
            let Some((_, ctrl)) = settings.controllers.iter().find(|(n, _)| n == "devices") else {
                return Ok(());
            };
            let dir = ctrl.join(&settings.base).join(v1::V1::rel(cg));
            crate::devices::confine_v1(&dir, &node, &allocated)
        }
        Version::V2 => {
            let mut dir = settings
                .mount
                .join(&settings.base)
                .join(format!("job_{}", cg.job));
            if let Some(step) = &cg.step {
                dir.push(format!("step_{step}"));
                dir.push("user");
                if let Some(task) = cg.task {
                    dir.push(format!("task_{task}"));
                }
            }
            crate::devices::confine_v2(&dir, level, &node, &allocated)
        }
    }
}

/// ConstrainCores: holds a job to its CPU ids on this node (`job_ids`, the
/// node's) and its step `step` to the step's (`step_ids`; empty: the
/// job's), on the host CPUs those ids stand for (`affinity::to_host` of
/// `host`). Call it after `create_step` and before the step's tasks are
/// made: v1 task cgroups copy their step's CPUs when made. Nothing where
/// cores are not confined or the controller sent no ids (an older one).
pub fn confine_cpus(
    driver: &dyn Driver,
    settings: &CgroupSettings,
    step: &CgPath,
    job_ids: &[u32],
    step_ids: &[u32],
    host: &[u32],
) -> Result<(), CgroupError> {
    if !settings.constrains_cores() || job_ids.is_empty() {
        return Ok(());
    }
    let job_cpus = crate::affinity::to_host(job_ids, host);
    let step_cpus = if step_ids.is_empty() {
        job_cpus.clone()
    } else {
        crate::affinity::to_host(step_ids, host)
    };
    let job = CgPath::job(step.uid, step.job);
    let step = CgPath {
        task: None,
        ..step.clone()
    };
    // The step within the job's CPUs first, then the job (v1 narrows what
    // is below it; v2 takes either order).
    driver.set_cpus(&step, &step_cpus)?;
    driver.set_cpus(&job, &job_cpus)
}

impl CgroupSettings {
    /// cgroup.conf `ConstrainCores=yes`: the cpuset controller is used.
    pub fn constrains_cores(&self) -> bool {
        self.controllers.iter().any(|(n, _)| n == "cpuset")
    }
}

// ---- helpers the drivers share ----

/// The numbers in a `cgroup.procs` file.
pub(crate) fn read_pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// The pids in `dir`'s `cgroup.procs` and in every cgroup below it.
pub(crate) fn pids_below(dir: &Path) -> Vec<i32> {
    let mut out = read_pids(&dir.join("cgroup.procs"));
    for sub in subdirs(dir) {
        out.extend(pids_below(&sub));
    }
    out
}

/// The child cgroups (directories) of `dir`.
pub(crate) fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Writes `value` into the control file `file`.
pub(crate) fn write(file: &Path, value: &str) -> Result<(), CgroupError> {
    std::fs::write(file, value).map_err(io_err("write", file))
}

/// Makes the directory `dir` (one level); already there is fine. Whether
/// it was made now.
pub(crate) fn mkdir(dir: &Path) -> Result<bool, CgroupError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_err("create", dir)(e)),
    }
}

/// True where `dir` is on a cgroup file system (v1 or v2).
fn on_cgroupfs(dir: &Path) -> bool {
    const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    nix::sys::statfs::statfs(dir).is_ok_and(|s| {
        // The field's type (`__fsword_t`) differs between targets.
        #[allow(clippy::unnecessary_cast)]
        let t = s.filesystem_type().0 as i64;
        t == CGROUP_SUPER_MAGIC || t == CGROUP2_SUPER_MAGIC
    })
}

/// Removes one cgroup directory, retrying for up to `settle` while the
/// kernel says busy (a killed task not yet gone). Outside a cgroup file
/// system (the tests' fake trees) its plain control files go first.
/// Gone already is fine.
pub(crate) fn rmdir(dir: &Path, settle: Duration) -> Result<(), CgroupError> {
    let deadline = Instant::now() + settle;
    let mut plain_files_removed = false;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e)
                if e.raw_os_error() == Some(libc::ENOTEMPTY)
                    && !plain_files_removed
                    && !on_cgroupfs(dir) =>
            {
                plain_files_removed = true;
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for entry in entries.flatten() {
                        if entry.file_type().is_ok_and(|t| t.is_file()) {
                            let _ = std::fs::remove_file(entry.path());
                        }
                    }
                }
                if !subdirs(dir).is_empty() {
                    return Err(io_err("remove", dir)(e));
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io_err("remove", dir)(e)),
        }
    }
}

/// Removes `dir` and every cgroup below it, leaves first.
pub(crate) fn rmdir_tree(dir: &Path, settle: Duration) -> Result<(), CgroupError> {
    for sub in subdirs(dir) {
        rmdir_tree(&sub, settle)?;
    }
    rmdir(dir, settle)
}

/// Removes `dir` if it holds no cgroup any more (another job or step may
/// be in it: then it stays, and that is no error).
pub(crate) fn rmdir_if_unused(dir: &Path) {
    if dir.is_dir() && subdirs(dir).is_empty() {
        let _ = rmdir(dir, Duration::ZERO);
    }
}

/// Runs `make` again (twice at most) when it failed for a directory that
/// vanished: another step of the job, ending meanwhile, may remove the
/// job's (or the user's) directory between two of its mkdirs.
pub(crate) fn retry_vanished<T>(
    mut make: impl FnMut() -> Result<T, CgroupError>,
) -> Result<T, CgroupError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match make() {
            Err(CgroupError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && tries < 3 => {}
            other => return other,
        }
    }
}

/// SIGKILL to each pid.
pub(crate) fn kill_each(pids: &[i32]) {
    for &pid in pids {
        if pid > 0 {
            // SAFETY: kill(2) on a process id; no memory involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Polls until `done()` or `settle` passed.
pub(crate) fn wait_until(settle: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + settle;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The value of `key` in a flat-keyed file (`cgroup.events`,
/// `memory.events`, `memory.oom_control`): `key value` lines.
pub fn keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests;
