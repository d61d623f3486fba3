//! The batch script's environment: exactly what the controller sent, plus
//! what only the node knows (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES").
//! The daemon's own environment is never inherited.
//!
//! `SLURM_TASK_PID` is not here: the pid exists only once the process does,
//! so the launcher's `/bin/sh` wrapper sets it from `$$` before exec.

use proto::BatchLaunch;

/// What the node adds to a job's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEnv<'a> {
    /// This node's NodeName (`SLURMD_NODENAME`, `SLURM_TOPOLOGY_ADDR`).
    pub node_name: &'a str,
    /// The absolute path of slurm.conf (`SLURM_CONF`).
    pub conf_path: &'a str,
    /// (`SLURM_TOPOLOGY_ADDR`, `SLURM_TOPOLOGY_ADDR_PATTERN`); None: the
    /// node's name and `node`.
    pub topology_addr: Option<(&'a str, &'a str)>,
    /// Which vendor variables name the job's GPUs (gres.conf `Flags=`).
    pub gpu_env: crate::gpus::GpuEnvVars,
    /// ConstrainDevices: the job sees only its GPUs, so the vendor
    /// variables count them from 0 (`SLURM_JOB_GPUS` keeps the node's
    /// indexes).
    pub gpus_relative: bool,
}

/// An ordered environment in which setting a name replaces its old value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct EnvList(Vec<(String, String)>);

impl EnvList {
    fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }

    fn set(&mut self, name: &str, value: String) {
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name.to_string(), value)),
        }
    }

    fn remove(&mut self, name: &str) {
        self.0.retain(|(k, _)| k != name);
    }

    fn set_default(&mut self, name: &str, value: String) {
        if !self.contains(name) {
            self.0.push((name.to_string(), value));
        }
    }
}

/// The environment of `launch`'s batch script on this node.
///
/// The controller's list comes first, in its order (a name given twice
/// keeps its last value, as `env` would). Then the node's facts, which
/// replace anything sent: `SLURMD_NODENAME`, `SLURM_TOPOLOGY_ADDR`,
/// `SLURM_TOPOLOGY_ADDR_PATTERN`, `SLURM_CONF`. Then values the controller
/// may already have set, added only when absent: `SLURM_CPUS_ON_NODE`, the
/// GPU variables when GPUs are allocated, and the batch step's constant
/// task ids (`SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NODEID`, `SLURM_GTIDS`)
/// and `ENVIRONMENT=BATCH`, as a real Slurm batch job sees them.
pub fn job_env(launch: &BatchLaunch, node: &NodeEnv<'_>) -> Vec<(String, String)> {
    let mut env = EnvList::default();
    for (name, value) in &launch.env {
        // A name with '=' or NUL cannot be passed to execve; drop it rather
        // than fail the whole launch.
        if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0') {
            continue;
        }
        env.set(name, value.clone());
    }
    env.set("SLURMD_NODENAME", node.node_name.to_string());
    let (addr, pattern) = node.topology_addr.unwrap_or((node.node_name, "node"));
    env.set("SLURM_TOPOLOGY_ADDR", addr.to_string());
    env.set("SLURM_TOPOLOGY_ADDR_PATTERN", pattern.to_string());
    env.set("SLURM_CONF", node.conf_path.to_string());
    env.set_default("SLURM_CPUS_ON_NODE", launch.cpus.to_string());
    if !launch.gpus.is_empty() {
        let ids = launch
            .gpus
            .iter()
            .map(|g| g.to_string())
            .collect::<Vec<_>>()
            .join(",");
        env.set_default("SLURM_GPUS_ON_NODE", launch.gpus.len().to_string());
        env.set_default("SLURM_JOB_GPUS", ids.clone());
        // The vendor variables gres.conf `Flags=` selects (all four
        // without env flags); the others are dropped, also when sent.
        let vars = node.gpu_env;
        let vendor = if node.gpus_relative {
            (0..launch.gpus.len())
                .map(|g| g.to_string())
                .collect::<Vec<_>>()
                .join(",")
        } else {
            ids.clone()
        };
        for (on, name) in [
            (vars.nvidia, "CUDA_VISIBLE_DEVICES"),
            (vars.amd, "ROCR_VISIBLE_DEVICES"),
            (vars.intel, "ZE_AFFINITY_MASK"),
            (vars.opencl, "GPU_DEVICE_ORDINAL"),
        ] {
            if on && node.gpus_relative {
                // The node's indexes, where sent, mean nothing here.
                env.set(name, vendor.clone());
            } else if on {
                env.set_default(name, vendor.clone());
            } else {
                env.remove(name);
            }
        }
    }
    for name in [
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NODEID",
        "SLURM_GTIDS",
    ] {
        env.set_default(name, "0".to_string());
    }
    env.set_default("ENVIRONMENT", "BATCH".to_string());
    env.0
}

#[cfg(test)]
mod tests;
