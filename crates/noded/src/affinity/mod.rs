//! CPUs: a node's CPU ids on this host's CPUs, and Slurm's task/affinity
//! (srun(1) `--cpu-bind`): which CPUs each task of a step is bound to, the
//! `SLURM_CPU_BIND*` variables it gets, the `verbose` line, and the
//! binding itself (`sched_setaffinity` between fork and exec).
//!
//! A node's CPU ids are the controller's (`0..CPUs` of slurm.conf); on a
//! real node they are the host's. A test cluster runs several node
//! daemons on one host, each claiming CPUs the host may not have: id `i`
//! is then the host's `i mod n`th usable CPU ([`to_host`]), so that
//! confinement and binding still work and a job never fails for it (two
//! jobs of one node share a host CPU only where the node claims more CPUs
//! than the host has).
//!
//! A leaf: imports no room. Pure but for [`host_cpus`] and [`CpuMask`].

use proto::{mask_hex, CpuBind, CpuBindType};

/// The CPUs this process may run on (its affinity): the host's usable CPUs
/// for a daemon or supervisor that nothing bound, in the order Slurm
/// numbers a node's CPUs ([`in_core_order`]): the node's id `i` is the
/// `i`th of them, so a core's threads (ids `c*T ..`) are one core's here.
pub fn host_cpus() -> Vec<u32> {
    in_core_order(affinity_cpus(), |c| {
        let dir = format!("/sys/devices/system/cpu/cpu{c}/topology");
        let read = |f: &str| -> Option<u32> {
            std::fs::read_to_string(format!("{dir}/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some((
            read("physical_package_id")?,
            read("die_id").unwrap_or(0),
            read("core_id")?,
        ))
    })
}

/// Where a host CPU is: (package, die, core).
pub type CorePlace = (u32, u32, u32);

/// Orders host CPUs as Slurm numbers a node's CPUs (its abstract ids):
/// socket by socket, core by core, a core's threads together, by `key`
/// (package, die, core) and then by number. Where a CPU's place is not
/// known (`key` None), ascending, as listed.
pub fn in_core_order(cpus: Vec<u32>, key: impl Fn(u32) -> Option<CorePlace>) -> Vec<u32> {
    let keyed: Option<Vec<(CorePlace, u32)>> =
        cpus.iter().map(|c| key(*c).map(|k| (k, *c))).collect();
    match keyed {
        Some(mut k) => {
            k.sort_unstable();
            k.into_iter().map(|(_, c)| c).collect()
        }
        None => cpus,
    }
}

/// The CPUs of this process's affinity, ascending.
fn affinity_cpus() -> Vec<u32> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|c| libc::CPU_ISSET(*c, &set))
            .map(|c| c as u32)
            .collect()
    }
}

/// The host CPUs that stand for a node's CPU `ids`: id `i` is `host[i mod
/// len]` (the same where the node's ids are the host's), ascending and
/// without repeats. No host CPUs known: the ids themselves.
pub fn to_host(ids: &[u32], host: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = if host.is_empty() {
        ids.to_vec()
    } else {
        ids.iter().map(|i| host[*i as usize % host.len()]).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// The ids in a kernel CPU list (`0-3,8`), as cpusets and sysfs write it.
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<u32>().ok()),
        }
    }
    out
}

/// How the tasks of a step are bound on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Each local task's host CPUs; `None`: not bound.
    pub tasks: Vec<Option<Vec<u32>>>,
    /// The same CPUs by the node's ids (those gres.conf `Cores=` name,
    /// for `--gpu-bind=closest`), ascending.
    pub node_tasks: Vec<Option<Vec<u32>>>,
    /// `SLURM_CPU_BIND*` for every task of the node.
    pub env: Vec<(String, String)>,
    /// `verbose`: each task's line on its stderr.
    pub verbose: bool,
}

/// task/affinity's binding for `n_local` tasks of `cpus_per_task` CPUs
/// each, on the step's CPU ids `step_ids` (the node's) of host CPUs
/// `host`, by srun's `--cpu-bind` text `asked` (`None`: Slurm's default,
/// cores where the tasks fit). A text that does not parse binds nothing.
#[cfg(test)]
pub fn plan(
    asked: Option<&str>,
    step_ids: &[u32],
    host: &[u32],
    n_local: usize,
    cpus_per_task: u32,
) -> Binding {
    plan_smt(asked, step_ids, host, n_local, cpus_per_task, 1)
}

/// [`plan`] on a node of `threads` threads per core (its ids core by
/// core: core `c` holds `c*threads ..`): `cores` gives each task whole
/// cores (as many as its CPUs fill), and so does the default where the
/// node's tasks fit its cores (else, as Slurm's auto binding, threads).
pub fn plan_smt(
    asked: Option<&str>,
    step_ids: &[u32],
    host: &[u32],
    n_local: usize,
    cpus_per_task: u32,
    threads: u32,
) -> Binding {
    let bind = asked
        .map(|t| CpuBind::parse(t).unwrap_or_default())
        .unwrap_or_default();
    let cpt = cpus_per_task.max(1) as usize;
    let mut step: Vec<u32> = step_ids.to_vec();
    step.sort_unstable();
    step.dedup();
    if step.is_empty() {
        // An older controller sends no ids: all the host's CPUs.
        step = (0..host.len() as u32).collect();
    }
    let nth = |k: usize| -> u32 { step[k % step.len().max(1)] };
    // The step's CPUs core by core, and how many cores a task fills.
    let t = threads.max(1);
    let mut cores: Vec<Vec<u32>> = Vec::new();
    for id in &step {
        match cores.last_mut() {
            Some(c) if c[0] / t == id / t => c.push(*id),
            _ => cores.push(vec![*id]),
        }
    }
    let per_task = (cpt as u32).div_ceil(t).max(1) as usize;
    let whole_cores = t > 1
        && match &bind.kind {
            CpuBindType::Cores => true,
            CpuBindType::Auto => n_local * per_task <= cores.len(),
            _ => false,
        };
    let node_ids: Vec<Option<Vec<u32>>> = if step.is_empty() {
        vec![None; n_local]
    } else if whole_cores {
        (0..n_local)
            .map(|task| {
                Some(
                    (0..per_task)
                        .flat_map(|j| cores[(task * per_task + j) % cores.len()].clone())
                        .collect(),
                )
            })
            .collect()
    } else {
        match &bind.kind {
            CpuBindType::None => vec![None; n_local],
            CpuBindType::Auto if n_local * cpt > step.len() => vec![None; n_local],
            CpuBindType::Auto | CpuBindType::Cores | CpuBindType::Threads => (0..n_local)
                .map(|t| Some((0..cpt).map(|k| nth(t * cpt + k)).collect()))
                .collect(),
            CpuBindType::Sockets => vec![Some(step.clone()); n_local],
            CpuBindType::Rank => (0..n_local).map(|t| Some(vec![nth(t)])).collect(),
            CpuBindType::MapCpu(ids) => (0..n_local)
                .map(|t| Some(vec![ids[t % ids.len()]]))
                .collect(),
            CpuBindType::MaskCpu(masks) => (0..n_local)
                .map(|t| Some(masks[t % masks.len()].clone()))
                .collect(),
        }
    };
    let tasks: Vec<Option<Vec<u32>>> = node_ids
        .iter()
        .map(|ids| ids.as_ref().map(|ids| to_host(ids, host)))
        .collect();
    let node_tasks: Vec<Option<Vec<u32>>> = node_ids
        .into_iter()
        .map(|ids| {
            ids.map(|mut ids| {
                ids.sort_unstable();
                ids.dedup();
                ids
            })
        })
        .collect();
    let verbose = if bind.verbose { "verbose" } else { "quiet" };
    let bound = tasks.iter().any(Option::is_some);
    let (kind, list) = if bound {
        let masks: Vec<String> = tasks
            .iter()
            .map(|t| t.as_deref().map_or_else(|| mask_hex(host), mask_hex))
            .collect();
        ("mask_cpu:".to_string(), masks.join(","))
    } else {
        ("none".to_string(), String::new())
    };
    let env = vec![
        (
            "SLURM_CPU_BIND".to_string(),
            format!("{verbose},{kind}{list}"),
        ),
        ("SLURM_CPU_BIND_LIST".to_string(), list),
        ("SLURM_CPU_BIND_TYPE".to_string(), kind),
        ("SLURM_CPU_BIND_VERBOSE".to_string(), verbose.to_string()),
    ];
    Binding {
        tasks,
        node_tasks,
        env,
        verbose: bind.verbose,
    }
}

/// The line `verbose` writes to a task's stderr, as Slurm's task/affinity
/// does: `cpu-bind=MASK - node1, task  0  0 [4242]: mask 0x1 set`
/// (`cpu-bind=NULL` and the CPUs it may use where it is not bound).
pub fn verbose_line(
    node: &str,
    task: u32,
    local: usize,
    pid: i32,
    cpus: Option<&[u32]>,
    all: &[u32],
) -> String {
    let (kind, mask) = match cpus {
        Some(c) => ("MASK", mask_hex(c)),
        None => ("NULL", mask_hex(all)),
    };
    format!("cpu-bind={kind} - {node}, task {task:2} {local:2} [{pid}]: mask {mask} set\n")
}

/// A CPU set prepared before fork; [`CpuMask::apply`] is async-signal-safe.
#[derive(Clone, Copy)]
pub struct CpuMask(libc::cpu_set_t);

impl CpuMask {
    /// The set of host CPUs `cpus` (ids past the kernel's set size are
    /// left out).
    pub fn new(cpus: &[u32]) -> CpuMask {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET is
        // given ids below CPU_SETSIZE only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for c in cpus {
                if (*c as usize) < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(*c as usize, &mut set);
                }
            }
            CpuMask(set)
        }
    }

    /// Binds the calling process; false where the kernel refused.
    pub fn apply(&self) -> bool {
        // SAFETY: one system call on memory this value owns.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0) == 0 }
    }
}

#[cfg(test)]
mod tests;
