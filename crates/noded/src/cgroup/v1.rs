//! cgroup v1: one hierarchy per controller, the same relative path in
//! each (`<ctrl>/slurm_<node>-<h>/uid_U/job_J/step_S/task_T`). The freezer
//! hierarchy tracks the processes; freezing a directory freezes its
//! descendants too.

use super::{
    keyed_value, kill_each, mkdir, pids_below, rmdir_if_unused, rmdir_tree, subdirs, wait_until,
    write, CgPath, CgroupError, CgroupSettings, Driver, TaskDirs, Version,
};
use std::path::{Path, PathBuf};

/// The v1 driver.
#[derive(Debug)]
pub struct V1 {
    pub(super) settings: CgroupSettings,
}

impl V1 {
    /// The mount directory of a controller this driver uses.
    fn ctrl(&self, name: &str) -> Option<&Path> {
        self.settings
            .controllers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.as_path())
    }

    /// The node's directory in a controller's hierarchy.
    fn node_dir(&self, ctrl: &Path) -> PathBuf {
        ctrl.join(&self.settings.base)
    }

    /// `cg`'s path below the node's directory.
    pub(crate) fn rel(cg: &CgPath) -> PathBuf {
        let mut rel = PathBuf::from(format!("uid_{}", cg.uid));
        rel.push(format!("job_{}", cg.job));
        if let Some(step) = &cg.step {
            rel.push(format!("step_{step}"));
            if let Some(task) = cg.task {
                rel.push(format!("task_{task}"));
            }
        }
        rel
    }

    /// `cg`'s directory in every controller used.
    fn dirs(&self, cg: &CgPath) -> Vec<PathBuf> {
        let rel = Self::rel(cg);
        self.settings
            .controllers
            .iter()
            .map(|(_, d)| self.node_dir(d).join(&rel))
            .collect()
    }

    /// Makes `dir` below `node_dir` level by level; in the cpuset
    /// hierarchy each new level gets its parent's CPUs and memory nodes
    /// (v1 refuses to attach a task to an empty cpuset).
    fn make_levels(&self, ctrl_name: &str, node_dir: &Path, rel: &Path) -> Result<(), CgroupError> {
        let mut dir = node_dir.to_path_buf();
        for part in rel.iter() {
            let parent = dir.clone();
            dir.push(part);
            if mkdir(&dir)? && ctrl_name == "cpuset" {
                copy_cpuset(&parent, &dir)?;
            }
        }
        Ok(())
    }

    fn freezer_dir(&self, cg: &CgPath) -> PathBuf {
        self.dir(cg)
    }

    fn state(&self, cg: &CgPath) -> Option<String> {
        std::fs::read_to_string(self.freezer_dir(cg).join("freezer.state"))
            .ok()
            .map(|s| s.trim().to_string())
    }
}

/// Copies `cpuset.cpus` and `cpuset.mems` from `parent` to a new `dir`
/// where it has none yet.
fn copy_cpuset(parent: &Path, dir: &Path) -> Result<(), CgroupError> {
    for file in ["cpuset.cpus", "cpuset.mems"] {
        let Ok(value) = std::fs::read_to_string(parent.join(file)) else {
            continue;
        };
        let mine = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        if mine.trim().is_empty() && !value.trim().is_empty() {
            write(&dir.join(file), value.trim())?;
        }
    }
    Ok(())
}

impl Driver for V1 {
    fn version(&self) -> Version {
        Version::V1
    }

    fn prepare(&self) -> Result<(), CgroupError> {
        for (name, ctrl) in &self.settings.controllers {
            let node_dir = self.node_dir(ctrl);
            if mkdir(&node_dir)? && name == "cpuset" {
                copy_cpuset(ctrl, &node_dir)?;
            }
        }
        Ok(())
    }

    fn release(&self) {
        for (_, ctrl) in &self.settings.controllers {
            rmdir_if_unused(&self.node_dir(ctrl));
        }
    }

    fn create_step(&self, cg: &CgPath) -> Result<(), CgroupError> {
        super::retry_vanished(|| self.create_step_once(cg))
    }

    fn create_task(&self, cg: &CgPath) -> Result<TaskDirs, CgroupError> {
        super::retry_vanished(|| self.create_task_once(cg))
    }

    fn add_pid(&self, cg: &CgPath, pid: i32) -> Result<(), CgroupError> {
        for dir in self.dirs(cg) {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    fn pids(&self, cg: &CgPath) -> Vec<i32> {
        pids_below(&self.freezer_dir(cg))
    }

    fn is_empty(&self, cg: &CgPath) -> bool {
        self.pids(cg).is_empty()
    }

    fn freeze(&self, cg: &CgPath) -> Result<(), CgroupError> {
        let dir = self.freezer_dir(cg);
        write(&dir.join("freezer.state"), "FROZEN")?;
        // FREEZING until every task stopped; writing again nudges tasks
        // that were busy in the kernel.
        let frozen = wait_until(self.settings.settle, || {
            let s = self.state(cg);
            if s.as_deref() == Some("FREEZING") {
                let _ = std::fs::write(dir.join("freezer.state"), "FROZEN");
            }
            s.as_deref() == Some("FROZEN")
        });
        if frozen {
            Ok(())
        } else {
            Err(CgroupError::FreezeTimeout {
                path: dir,
                waited: self.settings.settle,
            })
        }
    }

    fn thaw(&self, cg: &CgPath) -> Result<(), CgroupError> {
        write(&self.freezer_dir(cg).join("freezer.state"), "THAWED")
    }

    fn kill_all(&self, cg: &CgPath) -> Result<(), CgroupError> {
        if !self.freezer_dir(cg).is_dir() {
            return Ok(());
        }
        // Frozen, nothing forks while the pids are read and signalled;
        // SIGKILL is delivered on the thaw.
        let frozen = self.freeze(cg);
        kill_each(&self.pids(cg));
        self.thaw(cg)?;
        if frozen.is_err() {
            // A task that did not freeze may have forked: once more.
            kill_each(&self.pids(cg));
        }
        Ok(())
    }

    fn remove(&self, cg: &CgPath) -> Result<(), CgroupError> {
        let mut first_err = None;
        for (_, ctrl) in &self.settings.controllers {
            let node_dir = self.node_dir(ctrl);
            let dir = node_dir.join(Self::rel(cg));
            if let Err(e) = rmdir_tree(&dir, self.settings.settle) {
                first_err.get_or_insert(e);
                continue;
            }
            let job_dir = node_dir.join(Self::rel(&CgPath::job(cg.uid, cg.job)));
            if cg.step.is_some() {
                rmdir_if_unused(&job_dir);
            }
            if let Some(uid_dir) = job_dir.parent() {
                rmdir_if_unused(uid_dir);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    fn set_memory_limit(
        &self,
        cg: &CgPath,
        bytes: u64,
        swap: Option<u64>,
    ) -> Result<(), CgroupError> {
        let Some(memory) = self.ctrl("memory") else {
            return Err(CgroupError::MissingController {
                controller: "memory".into(),
                needed_by: "ConstrainRAMSpace=yes",
                place: self.settings.mount.join("memory"),
            });
        };
        let dir = self.node_dir(memory).join(Self::rel(cg));
        let limit = dir.join("memory.limit_in_bytes");
        let Some(swap) = swap else {
            return write(&limit, &bytes.to_string());
        };
        // memory.memsw.limit_in_bytes (memory + swap) may never be below
        // the memory limit: which goes first depends on the old values.
        let memsw = dir.join("memory.memsw.limit_in_bytes");
        let total = bytes.saturating_add(swap).to_string();
        if write(&memsw, &total).is_ok() {
            write(&limit, &bytes.to_string())
        } else {
            write(&limit, &bytes.to_string())?;
            write(&memsw, &total)
        }
    }

    fn set_cpus(&self, cg: &CgPath, cpus: &[u32]) -> Result<(), CgroupError> {
        let Some(cpuset) = self.ctrl("cpuset") else {
            return Ok(());
        };
        let dir = self.node_dir(cpuset).join(Self::rel(cg));
        let list = proto::cpu_list(cpus);
        let current = std::fs::read_to_string(dir.join("cpuset.cpus")).unwrap_or_default();
        if current.trim() == list {
            return Ok(());
        }
        narrow_below(&dir, cpus);
        write(&dir.join("cpuset.cpus"), &list)
    }

    fn oom_kills(&self, step: &CgPath) -> u64 {
        let Some(memory) = self.ctrl("memory") else {
            return 0;
        };
        let step = CgPath {
            task: None,
            ..step.clone()
        };
        let dir = self.node_dir(memory).join(Self::rel(&step));
        // v1 counts a kill in the cgroup of the killed task only.
        let count = |d: &Path| {
            std::fs::read_to_string(d.join("memory.oom_control"))
                .ok()
                .and_then(|t| keyed_value(&t, "oom_kill"))
                .unwrap_or(0)
        };
        count(&dir)
            + subdirs(&dir)
                .iter()
                .map(|d| count(d.as_path()))
                .sum::<u64>()
    }

    fn jobs(&self) -> Vec<CgPath> {
        let Some((_, freezer)) = self.settings.controllers.first() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for uid_dir in subdirs(&self.node_dir(freezer)) {
            let Some(uid) = number_after(&uid_dir, "uid_") else {
                continue;
            };
            for job_dir in subdirs(&uid_dir) {
                if let Some(job) = number_after(&job_dir, "job_") {
                    out.push(CgPath::job(uid, job));
                }
            }
        }
        out
    }

    fn dir(&self, cg: &CgPath) -> PathBuf {
        let ctrl = self
            .settings
            .controllers
            .first()
            .map(|(_, d)| d.clone())
            .unwrap_or_default();
        self.node_dir(&ctrl).join(Self::rel(cg))
    }
}

impl V1 {
    fn create_step_once(&self, cg: &CgPath) -> Result<(), CgroupError> {
        self.prepare()?;
        let rel = Self::rel(&CgPath {
            task: None,
            ..cg.clone()
        });
        for (name, ctrl) in &self.settings.controllers {
            self.make_levels(name, &self.node_dir(ctrl), &rel)?;
        }
        Ok(())
    }

    fn create_task_once(&self, cg: &CgPath) -> Result<TaskDirs, CgroupError> {
        let rel = Self::rel(cg);
        let mut procs = Vec::new();
        for (name, ctrl) in &self.settings.controllers {
            self.make_levels(name, &self.node_dir(ctrl), &rel)?;
            procs.push(self.node_dir(ctrl).join(&rel).join("cgroup.procs"));
        }
        let at = |name: &str| {
            self.ctrl(name)
                .map(|c| self.node_dir(c).join(&rel))
                .unwrap_or_default()
        };
        Ok(TaskDirs {
            procs,
            memory: at("memory"),
            cpu: at("cpuacct"),
        })
    }
}

/// Narrows every cpuset below `dir`, deepest first, to what it has of
/// `cpus` (all of `cpus` where it has none of them), so that `dir` may
/// then take `cpus`. Best effort: what the kernel refuses below shows as
/// the refusal of `dir` itself.
fn narrow_below(dir: &Path, cpus: &[u32]) {
    for sub in subdirs(dir) {
        narrow_below(&sub, cpus);
        let file = sub.join("cpuset.cpus");
        let current =
            crate::affinity::parse_cpu_list(&std::fs::read_to_string(&file).unwrap_or_default());
        let mut want: Vec<u32> = current
            .iter()
            .copied()
            .filter(|c| cpus.contains(c))
            .collect();
        if want.is_empty() {
            want = cpus.to_vec();
        }
        if want != current {
            let _ = write(&file, &proto::cpu_list(&want));
        }
    }
}

/// `uid_5` with prefix `uid_` gives 5.
pub(super) fn number_after(dir: &Path, prefix: &str) -> Option<u32> {
    dir.file_name()?
        .to_str()?
        .strip_prefix(prefix)?
        .parse()
        .ok()
}
