//! cgroup v2: one tree below the node's base cgroup,
//! `job_J/step_S/{slurm, user/task_T}`. Processes live in leaves only (the
//! kernel's no-internal-processes rule once controllers are enabled):
//! tasks in `user/task_T`, a step's own helper in `slurm`. A freeze is
//! asynchronous (`frozen 1` in `cgroup.events` says it is done);
//! `cgroup.kill` kills a subtree at once where the kernel has it (5.14).

use super::{
    keyed_value, kill_each, mkdir, pids_below, rmdir_if_unused, rmdir_tree, wait_until, write,
    CgPath, CgroupError, CgroupSettings, Driver, TaskDirs, Version,
};
use std::path::{Path, PathBuf};

/// The v2 driver.
#[derive(Debug)]
pub struct V2 {
    pub(super) settings: CgroupSettings,
}

impl V2 {
    fn base(&self) -> PathBuf {
        self.settings.mount.join(&self.settings.base)
    }

    /// The step's `user` cgroup, where its tasks are.
    fn user_dir(&self, cg: &CgPath) -> PathBuf {
        self.dir(&CgPath {
            task: None,
            ..cg.clone()
        })
        .join("user")
    }

    /// What a freeze of `cg` writes to: the job, a step's `user` part (its
    /// helper in `slurm` keeps running), or a task.
    fn freeze_dir(&self, cg: &CgPath) -> PathBuf {
        match (&cg.step, cg.task) {
            (Some(_), None) => self.user_dir(cg),
            _ => self.dir(cg),
        }
    }

    /// Passes this node's controllers on to the children of `dir`. Where
    /// the kernel refuses (the daemon itself lives in a delegated base)
    /// jobs are still tracked, frozen and killed: those need none.
    fn enable_controllers(&self, dir: &Path) {
        if self.settings.controllers.is_empty() {
            return;
        }
        let line: Vec<String> = self
            .settings
            .controllers
            .iter()
            .map(|(n, _)| format!("+{n}"))
            .collect();
        let _ = std::fs::write(dir.join("cgroup.subtree_control"), line.join(" "));
    }

    fn events(&self, dir: &Path) -> Option<String> {
        std::fs::read_to_string(dir.join("cgroup.events")).ok()
    }
}

impl Driver for V2 {
    fn version(&self) -> Version {
        Version::V2
    }

    fn prepare(&self) -> Result<(), CgroupError> {
        let base = self.base();
        if !base.is_dir() {
            // IgnoreSystemd=yes: the slice and scope are made here (again,
            // should another node daemon's release remove the slice
            // between two mkdirs).
            super::retry_vanished(|| {
                let mut dir = self.settings.mount.clone();
                for part in self.settings.base.iter() {
                    self.enable_controllers(&dir);
                    dir.push(part);
                    mkdir(&dir)?;
                }
                Ok(())
            })?;
        }
        self.enable_controllers(&base);
        Ok(())
    }

    fn release(&self) {
        // A delegated base holds the daemon itself: rmdir refuses, and it
        // stays, as it should. The slice above a scope made here goes too
        // once no other scope is in it.
        let mut dir = self.base();
        for _ in self.settings.base.iter() {
            rmdir_if_unused(&dir);
            if dir.is_dir() || !dir.pop() {
                break;
            }
        }
    }

    fn create_step(&self, cg: &CgPath) -> Result<(), CgroupError> {
        super::retry_vanished(|| self.create_step_once(cg))
    }

    fn create_task(&self, cg: &CgPath) -> Result<TaskDirs, CgroupError> {
        super::retry_vanished(|| self.create_task_once(cg))
    }

    fn add_pid(&self, cg: &CgPath, pid: i32) -> Result<(), CgroupError> {
        let dir = match (&cg.step, cg.task) {
            (Some(_), None) => self.dir(cg).join("slurm"),
            _ => self.dir(cg),
        };
        write(&dir.join("cgroup.procs"), &pid.to_string())
    }

    fn pids(&self, cg: &CgPath) -> Vec<i32> {
        pids_below(&self.dir(cg))
    }

    fn is_empty(&self, cg: &CgPath) -> bool {
        let dir = self.dir(cg);
        match self.events(&dir).and_then(|e| keyed_value(&e, "populated")) {
            Some(populated) => populated == 0,
            None => pids_below(&dir).is_empty(),
        }
    }

    fn freeze(&self, cg: &CgPath) -> Result<(), CgroupError> {
        let dir = self.freeze_dir(cg);
        write(&dir.join("cgroup.freeze"), "1")?;
        let frozen = wait_until(self.settings.settle, || {
            self.events(&dir).and_then(|e| keyed_value(&e, "frozen")) == Some(1)
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
        write(&self.freeze_dir(cg).join("cgroup.freeze"), "0")
    }

    fn kill_all(&self, cg: &CgPath) -> Result<(), CgroupError> {
        let dir = self.dir(cg);
        if !dir.is_dir() {
            return Ok(());
        }
        let kill = dir.join("cgroup.kill");
        if kill.exists() {
            return write(&kill, "1");
        }
        // Before 5.14: the freezer holds the subtree still meanwhile.
        let froze = write(&dir.join("cgroup.freeze"), "1").is_ok();
        if froze {
            wait_until(self.settings.settle, || {
                self.events(&dir).and_then(|e| keyed_value(&e, "frozen")) == Some(1)
            });
        }
        kill_each(&pids_below(&dir));
        if froze {
            write(&dir.join("cgroup.freeze"), "0")?;
        }
        Ok(())
    }

    fn remove(&self, cg: &CgPath) -> Result<(), CgroupError> {
        rmdir_tree(&self.dir(cg), self.settings.settle)?;
        if cg.step.is_some() && cg.task.is_none() {
            rmdir_if_unused(&self.dir(&CgPath::job(cg.uid, cg.job)));
        }
        Ok(())
    }

    fn set_memory_limit(
        &self,
        cg: &CgPath,
        bytes: u64,
        swap: Option<u64>,
    ) -> Result<(), CgroupError> {
        let dir = self.dir(cg);
        write(&dir.join("memory.max"), &bytes.to_string())?;
        if let Some(swap) = swap {
            // v2's swap limit is swap alone, not memory + swap as in v1.
            write(&dir.join("memory.swap.max"), &swap.to_string())?;
        }
        Ok(())
    }

    fn set_cpus(&self, cg: &CgPath, cpus: &[u32]) -> Result<(), CgroupError> {
        if !self.settings.constrains_cores() {
            return Ok(());
        }
        // v2 takes any set: what a cgroup may use is what its parents
        // allow too (cpuset.cpus.effective).
        write(&self.dir(cg).join("cpuset.cpus"), &proto::cpu_list(cpus))
    }

    fn oom_kills(&self, step: &CgPath) -> u64 {
        // memory.events is hierarchical: the user part counts its tasks.
        let file = self.user_dir(step).join("memory.events");
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| keyed_value(&t, "oom_kill"))
            .unwrap_or(0)
    }

    fn jobs(&self) -> Vec<CgPath> {
        // v2 has no user level: the uid is not known here, and no
        // operation of this driver needs it.
        super::subdirs(&self.base())
            .iter()
            .filter_map(|d| super::v1::number_after(d, "job_"))
            .map(|job| CgPath::job(0, job))
            .collect()
    }

    fn dir(&self, cg: &CgPath) -> PathBuf {
        let mut dir = self.base().join(format!("job_{}", cg.job));
        if let Some(step) = &cg.step {
            dir.push(format!("step_{step}"));
            if let Some(task) = cg.task {
                dir.push("user");
                dir.push(format!("task_{task}"));
            }
        }
        dir
    }
}

impl V2 {
    fn create_step_once(&self, cg: &CgPath) -> Result<(), CgroupError> {
        self.prepare()?;
        let job = self.dir(&CgPath::job(cg.uid, cg.job));
        mkdir(&job)?;
        self.enable_controllers(&job);
        let step = self.dir(&CgPath {
            task: None,
            ..cg.clone()
        });
        mkdir(&step)?;
        self.enable_controllers(&step);
        mkdir(&step.join("slurm"))?;
        let user = step.join("user");
        mkdir(&user)?;
        self.enable_controllers(&user);
        Ok(())
    }

    fn create_task_once(&self, cg: &CgPath) -> Result<TaskDirs, CgroupError> {
        let dir = self.dir(cg);
        mkdir(&dir)?;
        Ok(TaskDirs {
            procs: vec![dir.join("cgroup.procs")],
            memory: dir.clone(),
            cpu: dir,
        })
    }
}
