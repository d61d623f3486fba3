//! A step's GPUs on this node, per task: which of them each task gets
//! (`--gpu-bind`, or the binding `--gpus-per-task` and `--ntasks-per-gpu`
//! imply) and the variables that name them (srun(1), gres.conf(5)).
//!
//! ```text
//!  StepLaunch.gpus (the step's, global) + StepLaunch.gpu_bind
//!      --task_gpus(local id, task CPUs, Cores=)--> the task's GPUs (global)
//!      --gpu_env(numbering, Flags=)--> SLURM_STEP_GPUS, SLURM_GPUS_ON_NODE,
//!        CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK,
//!        GPU_DEVICE_ORDINAL
//! ```
//!
//! Pure: the node's facts (gres.conf, whether devices are confined) come
//! in as [`GpuSettings`].

use proto::GpuBind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How the indexes in `CUDA_VISIBLE_DEVICES` and its siblings count: the
/// numbers a task's CUDA sees depend on which devices its cgroup lets it
/// open (Slurm's local device index with task/cgroup and
/// `ConstrainDevices=yes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuNumbering {
    /// The node's own indexes: devices are not confined, every task sees
    /// every GPU of the node.
    #[default]
    Global,
    /// Positions among the step's GPUs on this node (the step's device
    /// cgroup shows only those); `map_gpu`/`mask_gpu` ids count the same way.
    Step,
    /// Positions among the task's own GPUs (a device cgroup per task).
    Task,
}

impl GpuNumbering {
    /// The numbering where the step's device cgroup confines what its
    /// tasks can open (`devices_confined`), each task to its own GPUs with
    /// `per_task`.
    pub fn for_confinement(devices_confined: bool, per_task: bool) -> GpuNumbering {
        match (devices_confined, per_task) {
            (false, _) => GpuNumbering::Global,
            (true, false) => GpuNumbering::Step,
            (true, true) => GpuNumbering::Task,
        }
    }
}

/// Which vendor variables name a task's GPUs: gres.conf `Flags=`
/// `nvidia_gpu_env`, `amd_gpu_env`, `intel_gpu_env`, `opencl_env`,
/// `no_gpu_env`; without any of them, all four.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEnvVars {
    /// `CUDA_VISIBLE_DEVICES`.
    pub nvidia: bool,
    /// `ROCR_VISIBLE_DEVICES`.
    pub amd: bool,
    /// `ZE_AFFINITY_MASK`.
    pub intel: bool,
    /// `GPU_DEVICE_ORDINAL`.
    pub opencl: bool,
}

impl Default for GpuEnvVars {
    fn default() -> Self {
        GpuEnvVars {
            nvidia: true,
            amd: true,
            intel: true,
            opencl: true,
        }
    }
}

impl GpuEnvVars {
    /// From the `Flags=` of the node's gpu lines (lowercase, as conf keeps
    /// them): the env flags given on any line, else all four.
    pub fn from_flags<'a>(flags: impl IntoIterator<Item = &'a str>) -> GpuEnvVars {
        let mut vars = GpuEnvVars {
            nvidia: false,
            amd: false,
            intel: false,
            opencl: false,
        };
        let mut any = false;
        for flag in flags {
            match flag {
                "nvidia_gpu_env" => vars.nvidia = true,
                "amd_gpu_env" => vars.amd = true,
                "intel_gpu_env" => vars.intel = true,
                "opencl_env" => vars.opencl = true,
                "no_gpu_env" => {}
                _ => continue,
            }
            any = true;
        }
        if any {
            vars
        } else {
            GpuEnvVars::default()
        }
    }
}

/// What the node knows about its GPUs, for its steps' tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSettings {
    /// How the vendor variables count.
    #[serde(default)]
    pub numbering: GpuNumbering,
    /// Which vendor variables are set.
    #[serde(default)]
    pub env: GpuEnvVars,
    /// gres.conf `Cores=` of each GPU, by the node's index (GPUs count up
    /// over the node's gpu lines in file order, as the controller numbers
    /// them); a GPU without `Cores=` is missing.
    #[serde(default)]
    pub cores: BTreeMap<u32, Vec<u32>>,
    /// gres.conf `File=` of each GPU, by the node's index (a step's
    /// container binds its GPUs' files: [`device_files`]).
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

/// The device files of `gpus` (the node's indexes): gres.conf's `File=`
/// of each (`files`), else `/dev/nvidiaN`; those that exist.
pub fn device_files(gpus: &[u32], files: &[PathBuf]) -> Vec<PathBuf> {
    gpus.iter()
        .map(|&i| match files.get(i as usize) {
            Some(f) => f.clone(),
            None => PathBuf::from(format!("/dev/nvidia{i}")),
        })
        .filter(|p| p.exists())
        .collect()
}

impl GpuSettings {
    /// From the gres.conf lines of this node; `numbering` is the node's
    /// call (whether its cgroups confine devices).
    pub fn from_gres(lines: &[&conf::GresConf], numbering: GpuNumbering) -> GpuSettings {
        let mut cores = BTreeMap::new();
        let mut next = 0u32;
        let gpu_lines: Vec<&&conf::GresConf> = lines.iter().filter(|g| g.name == "gpu").collect();
        for line in &gpu_lines {
            let n = u32::try_from(line.count).unwrap_or(u32::MAX);
            if let Some(list) = line.cores.as_deref().and_then(conf::parse_id_list) {
                for i in next..next.saturating_add(n) {
                    cores.insert(i, list.clone());
                }
            }
            next = next.saturating_add(n);
        }
        GpuSettings {
            numbering,
            env: GpuEnvVars::from_flags(
                gpu_lines
                    .iter()
                    .flat_map(|g| g.flags.iter().map(String::as_str)),
            ),
            cores,
            files: gpu_lines
                .iter()
                .flat_map(|g| g.files.iter().map(PathBuf::from))
                .collect(),
        }
    }
}

/// The GPUs (the node's indexes) of the task with node-local id `local`,
/// among the step's `step_gpus` on this node, under `bind`. `task_cpus`
/// are the CPUs (the node's ids) the task may run on, where known:
/// `closest` gives the GPUs whose `Cores=` hold one of them ([`closest`]);
/// without them every GPU of the step, as Slurm does when it knows of no
/// affinity.
pub fn task_gpus(
    step_gpus: &[u32],
    bind: &GpuBind,
    local: u32,
    settings: &GpuSettings,
    task_cpus: Option<&[u32]>,
) -> Vec<u32> {
    let len = step_gpus.len();
    if len == 0 {
        return Vec::new();
    }
    let local = local as usize;
    // A `map_gpu`/`mask_gpu` id: a position among the step's GPUs where
    // the task's view is confined, else the node's index.
    let resolve = |id: u32| -> Option<u32> {
        match settings.numbering {
            GpuNumbering::Global => step_gpus.contains(&id).then_some(id),
            GpuNumbering::Step | GpuNumbering::Task => step_gpus.get(id as usize).copied(),
        }
    };
    let mut out: Vec<u32> = match bind {
        GpuBind::None => step_gpus.to_vec(),
        GpuBind::PerTask(n) => {
            let n = (*n as usize).min(len);
            (0..n).map(|k| step_gpus[(local * n + k) % len]).collect()
        }
        GpuBind::Single(k) => vec![step_gpus[(local / (*k).max(1) as usize) % len]],
        GpuBind::Map(ids) => resolve(ids[local % ids.len()]).into_iter().collect(),
        GpuBind::Mask(masks) => {
            let mask = masks[local % masks.len()];
            (0..64u32)
                .filter(|bit| mask & (1u64 << bit) != 0)
                .filter_map(resolve)
                .collect()
        }
        GpuBind::Closest => match task_cpus {
            Some(cpus) if !cpus.is_empty() => closest(step_gpus, &settings.cores, cpus),
            _ => step_gpus.to_vec(),
        },
    };
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|g| seen.insert(*g));
    out
}

/// `--gpu-bind=closest` for a task that may run on `cpus` (the node's
/// ids): the GPUs of `step_gpus` whose gres.conf `Cores=` hold one of
/// them. A GPU without `Cores=` is near every CPU (gres.conf(5): usable
/// from any core). Where none is, the GPUs whose `Cores=` come nearest to
/// the task's CPUs (the least distance between ids: the next socket over),
/// so a task always gets a GPU where the step has one.
pub fn closest(step_gpus: &[u32], cores: &BTreeMap<u32, Vec<u32>>, cpus: &[u32]) -> Vec<u32> {
    let distance = |g: &u32| -> u32 {
        match cores.get(g) {
            None => 0,
            Some(c) => c
                .iter()
                .flat_map(|x| cpus.iter().map(move |y| x.abs_diff(*y)))
                .min()
                .unwrap_or(0),
        }
    };
    let Some(best) = step_gpus.iter().map(distance).min() else {
        return Vec::new();
    };
    step_gpus
        .iter()
        .copied()
        .filter(|g| distance(g) == best)
        .collect()
}

/// The GPU variables of a task that got `task` (node indexes) of the
/// step's `step_gpus` on this node: `SLURM_STEP_GPUS` (the step's, node
/// indexes) and `SLURM_GPUS_ON_NODE` (their count), and the vendor
/// variables that `settings.env` selects, listing the task's GPUs counted
/// as `settings.numbering` says. Nothing without GPUs.
pub fn gpu_env(step_gpus: &[u32], task: &[u32], settings: &GpuSettings) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if step_gpus.is_empty() {
        return env;
    }
    let join = |ids: &mut dyn Iterator<Item = u32>| -> String {
        ids.map(|i| i.to_string()).collect::<Vec<_>>().join(",")
    };
    env.push((
        "SLURM_STEP_GPUS".to_string(),
        join(&mut step_gpus.iter().copied()),
    ));
    env.push((
        "SLURM_GPUS_ON_NODE".to_string(),
        step_gpus.len().to_string(),
    ));
    if task.is_empty() {
        return env;
    }
    let list = match settings.numbering {
        GpuNumbering::Global => join(&mut task.iter().copied()),
        GpuNumbering::Step => join(
            &mut task
                .iter()
                .filter_map(|g| step_gpus.iter().position(|s| s == g))
                .map(|p| p as u32),
        ),
        GpuNumbering::Task => join(&mut (0..task.len() as u32)),
    };
    let vars = settings.env;
    for (on, name) in [
        (vars.nvidia, "CUDA_VISIBLE_DEVICES"),
        (vars.amd, "ROCR_VISIBLE_DEVICES"),
        (vars.intel, "ZE_AFFINITY_MASK"),
        (vars.opencl, "GPU_DEVICE_ORDINAL"),
    ] {
        if on {
            env.push((name.to_string(), list.clone()));
        }
    }
    env
}

#[cfg(test)]
mod tests;
