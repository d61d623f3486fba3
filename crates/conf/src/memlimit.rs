//! The memory limits of a job's or step's cgroup on one node, from what it
//! was allocated there and cgroup.conf's task/cgroup keys (cgroup.conf(5):
//! `ConstrainRAMSpace`, `AllowedRAMSpace`, `ConstrainSwapSpace`,
//! `AllowedSwapSpace`, `MinRAMSpace`, `MaxRAMPercent`, `MaxSwapPercent`).
//!
//! ```text
//!   --mem / --mem-per-cpu / --mem-per-gpu --allocated_mb--> MB on the node
//!   MB on the node + MemConstraints + RealMemory --mem_limits--> MemLimits
//!       v1: memory.limit_in_bytes, memory.soft_limit_in_bytes,
//!           memory.memsw.limit_in_bytes (RAM + swap)
//!       v2: memory.max, memory.high, memory.swap.max (swap alone)
//! ```
//!
//! Pure arithmetic: the values arrive as plain numbers, so the caller may
//! take them from whatever holds cgroup.conf.

const MIB: u64 = 1024 * 1024;

/// cgroup.conf's memory keys, as numbers (defaults: Slurm's).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemConstraints {
    /// `ConstrainRAMSpace` (default no).
    pub constrain_ram: bool,
    /// `ConstrainSwapSpace` (default no).
    pub constrain_swap: bool,
    /// `AllowedRAMSpace`: percent of the allocation (default 100).
    pub allowed_ram_percent: f64,
    /// `AllowedSwapSpace`: percent of the allocation on top of the RAM
    /// limit (default 0).
    pub allowed_swap_percent: f64,
    /// `MinRAMSpace`: floor of every limit, in MB (default 30).
    pub min_ram_mb: u64,
    /// `MaxRAMPercent`: ceiling of the RAM limit, percent of the node's
    /// RealMemory (default 100).
    pub max_ram_percent: f64,
    /// `MaxSwapPercent`: ceiling of the swap on top of the RAM ceiling,
    /// percent of the node's RealMemory (default 100).
    pub max_swap_percent: f64,
}

impl Default for MemConstraints {
    fn default() -> Self {
        MemConstraints {
            constrain_ram: false,
            constrain_swap: false,
            allowed_ram_percent: 100.0,
            allowed_swap_percent: 0.0,
            min_ram_mb: 30,
            max_ram_percent: 100.0,
            max_swap_percent: 100.0,
        }
    }
}

/// How a job or step asked for memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemRequest {
    /// No memory asked for (or `--mem=0`): the node's ceiling applies.
    Unset,
    /// `--mem`: MB per node.
    PerNode(u64),
    /// `--mem-per-cpu`: MB per allocated CPU.
    PerCpu(u64),
    /// `--mem-per-gpu`: MB per allocated GPU.
    PerGpu(u64),
}

/// The MB allocated on a node that holds `cpus` CPUs and `gpus` GPUs of
/// the job or step (0: none, so no allocation to scale).
pub fn allocated_mb(request: MemRequest, cpus: u32, gpus: u32) -> u64 {
    match request {
        MemRequest::Unset => 0,
        MemRequest::PerNode(mb) => mb,
        MemRequest::PerCpu(mb) => mb.saturating_mul(u64::from(cpus)),
        MemRequest::PerGpu(mb) => mb.saturating_mul(u64::from(gpus)),
    }
}

/// The limits to write, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemLimits {
    /// Hard RAM limit: v1 `memory.limit_in_bytes`, v2 `memory.max`.
    pub ram_bytes: u64,
    /// Soft limit: v1 `memory.soft_limit_in_bytes`, v2 `memory.high`
    /// (the allocation itself, never above the hard limit).
    pub soft_bytes: u64,
    /// RAM plus swap (v1 `memory.memsw.limit_in_bytes`), with
    /// ConstrainSwapSpace; None: swap is not limited.
    pub ram_swap_bytes: Option<u64>,
}

impl MemLimits {
    /// v2 `memory.swap.max`: the swap alone (RAM + swap less the RAM).
    pub fn swap_only_bytes(&self) -> Option<u64> {
        self.ram_swap_bytes
            .map(|total| total.saturating_sub(self.ram_bytes))
    }
}

/// `percent` of `bytes`, multiplied first so that whole-MB results of
/// percents such as 101.5 stay exact.
fn percent_of(bytes: u64, percent: f64) -> u64 {
    (bytes as f64 * percent / 100.0) as u64
}

/// The limits for `alloc_mb` MB on a node of `real_memory_mb` MB (its
/// RealMemory); None when cgroup.conf constrains neither RAM nor swap.
///
/// As cgroup.conf(5) says: the hard RAM limit is `AllowedRAMSpace` percent
/// of the allocation, the soft limit the allocation; RAM + swap adds
/// `AllowedSwapSpace` percent of the allocation; every limit is at least
/// `MinRAMSpace` and at most `MaxRAMPercent` (RAM) or `MaxRAMPercent` +
/// `MaxSwapPercent` (RAM + swap) of RealMemory; nothing allocated means the
/// ceiling. With ConstrainSwapSpace alone, AllowedRAMSpace counts as 100
/// and the RAM limit is the RAM + swap limit.
pub fn mem_limits(alloc_mb: u64, real_memory_mb: u64, c: &MemConstraints) -> Option<MemLimits> {
    if !c.constrain_ram && !c.constrain_swap {
        return None;
    }
    let total = real_memory_mb.saturating_mul(MIB);
    let floor = c.min_ram_mb.saturating_mul(MIB);
    let max_ram = percent_of(total, c.max_ram_percent);
    let max_ram_swap = max_ram.saturating_add(percent_of(total, c.max_swap_percent));
    let allowed_ram = if c.constrain_ram {
        c.allowed_ram_percent
    } else {
        100.0
    };
    let clamp = |bytes: u64, ceiling: u64| {
        if bytes < floor {
            floor
        } else {
            bytes.min(ceiling)
        }
    };
    let base = if alloc_mb == 0 {
        total
    } else {
        alloc_mb.saturating_mul(MIB)
    };
    let ram = clamp(percent_of(base, allowed_ram), max_ram);
    let soft = clamp(base, max_ram).min(ram);
    let ram_swap = c.constrain_swap.then(|| {
        clamp(
            ram.saturating_add(percent_of(base, c.allowed_swap_percent)),
            max_ram_swap,
        )
    });
    Some(match (c.constrain_ram, ram_swap) {
        (false, Some(rs)) => MemLimits {
            ram_bytes: rs,
            soft_bytes: soft.min(rs),
            ram_swap_bytes: Some(rs),
        },
        _ => MemLimits {
            ram_bytes: ram,
            soft_bytes: soft,
            ram_swap_bytes: ram_swap,
        },
    })
}

#[cfg(test)]
mod tests;
