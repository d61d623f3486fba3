//! Placement (Slurm's select/cons_tres): CPUs, memory and GRES counted per
//! node; nodes shared between jobs unless a job or its partition asks for
//! exclusivity; constraints, required and excluded nodes honoured.
//!
//! `place` is pure and side-effect free: it reads the nodes' current use and
//! returns where the job would go, or why it cannot go anywhere.

use crate::NodeIdx;
use model::{Gres, PendingReason, TimeLimit};

/// One pool of a generic resource on a node: all devices with the same
/// name and type, with the node-local indexes they occupy.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GresPool {
    /// GRES name (`gpu`).
    pub name: String,
    /// Type (`a100`), if configured.
    pub type_: Option<String>,
    /// Node-local device indexes of this pool (`CUDA_VISIBLE_DEVICES` values).
    pub indexes: Vec<u32>,
    /// Which of `indexes` are in use.
    pub used: Vec<bool>,
    /// gres.conf `Cores=` of each of `indexes`: the node's CPU ids the
    /// device is near; empty for one without `Cores=` (near every CPU).
    /// Empty altogether where none is known.
    #[serde(default)]
    pub cores: Vec<Vec<u32>>,
}

impl GresPool {
    fn free(&self) -> u64 {
        self.used.iter().filter(|u| !**u).count() as u64
    }

    fn matches(&self, want: &Gres) -> bool {
        self.name == want.name
            && match &want.type_ {
                Some(t) => self.type_.as_deref() == Some(t.as_str()),
                None => true,
            }
    }
}

/// What the scheduler needs to know about a node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeView {
    /// NodeName.
    pub name: String,
    /// Usable CPUs.
    pub cpus: u32,
    /// RealMemory in MB.
    pub real_memory: u64,
    /// CPUs in use.
    pub alloc_cpus: u32,
    /// Memory in use (MB).
    pub alloc_mem: u64,
    /// GRES pools.
    pub gres: Vec<GresPool>,
    /// Features (`-C`).
    pub features: Vec<String>,
    /// Weight: lower is used first.
    pub weight: u32,
    /// Up, registered, not drained: may take new jobs.
    pub available: bool,
    /// An exclusive job runs here: nothing else may start.
    pub exclusive_in_use: bool,
    /// Number of jobs running here.
    pub n_jobs: u32,
    /// The CPU ids jobs hold here, ascending (read for
    /// `--gres-flags=enforce-binding` only; empty where not known).
    pub cpu_ids_in_use: Vec<u32>,
    /// CPUs allocated together as one core: `ThreadsPerCore` where
    /// `SelectTypeParameters=CR_Core` makes cores the unit (Slurm's
    /// select/cons_tres gives a job every thread of each core it takes),
    /// 1 where each CPU is its own unit (`CR_CPU`, one thread per core).
    /// A job's CPUs on the node are a multiple of it (`cpus_on_node`).
    pub threads: u32,
    /// (partition index, CPUs its jobs hold here), for the partitions
    /// with `MaxCPUsPerNode` only (empty where none has one): the cap
    /// counts all of a partition's jobs on the node together.
    pub part_cpus: Vec<(u32, u32)>,
}

/// CPUs the jobs of partition `part` hold on `node` (`NodeView::part_cpus`).
pub fn part_cpus_on(node: &NodeView, part: usize) -> u32 {
    node.part_cpus
        .iter()
        .find(|(p, _)| *p as usize == part)
        .map_or(0, |(_, c)| *c)
}

/// Counts `cpus` more held by partition `part`'s jobs in `held` (a
/// node's `NodeView::part_cpus`).
pub fn add_part_cpus(held: &mut Vec<(u32, u32)>, part: usize, cpus: u32) {
    match held.iter_mut().find(|(p, _)| *p as usize == part) {
        Some((_, c)) => *c += cpus,
        None => held.push((part as u32, cpus)),
    }
}

/// What the scheduler needs to know about a partition.
#[derive(Clone, Debug, PartialEq)]
pub struct PartView {
    /// PartitionName.
    pub name: String,
    /// Member nodes.
    pub nodes: Vec<NodeIdx>,
    /// State=UP.
    pub up: bool,
    /// MaxNodes.
    pub max_nodes: Option<u32>,
    /// MinNodes.
    pub min_nodes: u32,
    /// MaxTime.
    pub max_time: TimeLimit,
    /// OverSubscribe=EXCLUSIVE: every job gets whole nodes.
    pub exclusive: bool,
    /// MaxMemPerNode.
    pub max_mem_per_node: Option<u64>,
    /// PriorityTier: higher tiers are scheduled first.
    pub priority_tier: u32,
    /// MaxCPUsPerNode: the most CPUs the jobs of this partition hold
    /// together on one node (Slurm's "available to all jobs from this
    /// partition"; what they hold is `NodeView::part_cpus`).
    pub max_cpus_per_node: Option<u32>,
    /// LLN=YES (or `SelectTypeParameters=CR_LLN`): the nodes with the
    /// most idle CPUs are taken first (after node weight), instead of
    /// packing jobs onto the first nodes.
    pub lln: bool,
    /// The cluster's network topology (`TopologyPlugin=topology/tree` or
    /// `topology/block`); `None`: placement ignores the fabric.
    pub topology: crate::topology::TopoRef,
}

/// A `-C` expression: features joined by `&` (all of) and `|` (any of);
/// `|` binds looser, as in `a&b|c` = (a and b) or c.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Constraint {
    /// Alternatives; each is a set of features that must all be present.
    pub any_of: Vec<Vec<String>>,
}

impl Constraint {
    /// Parses `a&b|c`. A comma is read as `&` (older Slurm spelling).
    /// Returns None for an empty or malformed expression.
    pub fn parse(text: &str) -> Option<Constraint> {
        let mut any_of = Vec::new();
        for alt in text.split('|') {
            let all: Vec<String> = alt
                .split(['&', ','])
                .map(|f| {
                    f.trim()
                        .trim_matches(|c| c == '[' || c == ']' || c == '(' || c == ')')
                })
                .map(str::to_string)
                .collect();
            if all.iter().any(|f| f.is_empty()) {
                return None;
            }
            any_of.push(all);
        }
        (!any_of.is_empty()).then_some(Constraint { any_of })
    }

    /// Whether a node with `features` satisfies it.
    pub fn satisfied_by(&self, features: &[String]) -> bool {
        self.any_of
            .iter()
            .any(|all| all.iter().all(|f| features.iter().any(|g| g == f)))
    }
}

/// A job's resource request, as placement reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRequest {
    /// The job.
    pub job_id: model::JobId,
    /// Priority (higher first).
    pub priority: u32,
    /// Submission time (earlier first among equals).
    pub submit_time: model::Timestamp,
    /// Candidate partitions, in the user's order.
    pub partitions: Vec<usize>,
    /// Minimum nodes.
    pub min_nodes: u32,
    /// Maximum nodes.
    pub max_nodes: u32,
    /// Tasks.
    pub ntasks: u32,
    /// Exactly this many tasks on every node, when given.
    pub ntasks_per_node: Option<u32>,
    /// CPUs per task.
    pub cpus_per_task: u32,
    /// Memory per node (MB); `Some(0)` means all of each node's memory.
    pub mem_per_node: Option<u64>,
    /// Memory per allocated CPU (MB).
    pub mem_per_cpu: Option<u64>,
    /// Memory per allocated GPU (MB).
    pub mem_per_gpu: Option<u64>,
    /// GRES per node.
    pub gres_per_node: Vec<Gres>,
    /// GPUs for the whole job (`-G`).
    pub gpus_total: Option<Gres>,
    /// GPUs per task.
    pub gpus_per_task: Option<Gres>,
    /// CPUs per allocated GPU.
    pub cpus_per_gpu: Option<u32>,
    /// Whole nodes.
    pub exclusive: bool,
    /// `-w`: every one of these must be in the allocation.
    pub required_nodes: Vec<NodeIdx>,
    /// `-x`: none of these.
    pub excluded_nodes: Vec<NodeIdx>,
    /// `-C`.
    pub constraint: Option<Constraint>,
    /// Effective time limit.
    pub time_limit: TimeLimit,
    /// `--time-min`: the job may be started with any limit from this up to
    /// `time_limit` when that lets it run in a gap (backfill).
    pub time_min: Option<TimeLimit>,
    /// Owner's uid (for `bf_max_job_user`).
    pub user: u32,
    /// Whether memory is a consumable resource (SelectTypeParameters has Memory).
    pub memory_consumable: bool,
    /// `--gres-flags=enforce-binding`: on each node, the job's GPUs are
    /// ones whose gres.conf `Cores=` hold as many free CPUs as the job
    /// takes there (`take_gres_bound`).
    pub enforce_binding: bool,
    /// Threads of each core its tasks may use (`--threads-per-core`,
    /// `--hint=nomultithread`: 1); None: all of them. Read on nodes that
    /// allocate whole cores (`NodeView::threads` above 1) only.
    pub threads_per_core: Option<u32>,
    /// `--ntasks-per-core`: at most this many tasks on one core (read on
    /// nodes that allocate whole cores only).
    pub ntasks_per_core: Option<u32>,
    /// Some node of the cluster allocates whole cores of several threads
    /// (`NodeView::threads` above 1): the CPUs the job takes may be more
    /// than its tasks ask for, so a count of CPUs over the pool is not
    /// exact for it (`spreads`).
    pub whole_cores: bool,
    /// `--switches=N`: at most N leaf switches (blocks), while the job
    /// has not waited its max-time (the engine clears it then). Read only
    /// where the partition has a topology.
    pub max_leaves: Option<u32>,
    /// `--segment=N`: the nodes in groups of N, each within one block.
    /// Read only where the partition has a topology.
    pub segment: Option<u32>,
}

/// What one node gives a job.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeAlloc {
    /// The node.
    pub node: NodeIdx,
    /// CPUs.
    pub cpus: u32,
    /// Memory (MB).
    pub mem: u64,
    /// Tasks placed here.
    pub tasks: u32,
    /// GRES taken: (pool index on the node, device indexes).
    pub gres: Vec<(usize, Vec<u32>)>,
    /// The node's CPU ids given to the job (`scontrol show job -d`
    /// `CPU_IDs`). Placement counts CPUs and leaves this empty; the
    /// engine picks the ids when the job takes its share.
    #[serde(default)]
    pub cpu_ids: Vec<u32>,
}

/// Where a job goes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Allocation {
    /// Index of the partition it runs in.
    pub partition: usize,
    /// Per-node shares, in node order.
    pub nodes: Vec<NodeAlloc>,
    /// The whole nodes are the job's.
    pub exclusive: bool,
}

/// Why a job cannot be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unfit {
    /// Not even an empty, healthy partition could hold it.
    Never(PendingReason),
    /// It would fit if the partition's unavailable nodes were up.
    NodesUnavailable,
    /// It would fit if running jobs ended.
    Busy,
}

/// GRES a job wants on one node carrying `tasks` tasks.
fn gres_wanted(job: &JobRequest, tasks: u32, gpus_here: Option<u64>) -> Vec<Gres> {
    let mut out = job.gres_per_node.clone();
    if let Some(g) = &job.gpus_per_task {
        out.push(Gres {
            count: g.count * tasks as u64,
            ..g.clone()
        });
    }
    if let (Some(g), Some(n)) = (&job.gpus_total, gpus_here) {
        if n > 0 {
            out.push(Gres {
                count: n,
                ..g.clone()
            });
        }
    }
    out
}

/// Takes `wants` from `pools` (lowest free indexes first); None if short.
fn take_gres(
    pools: &[GresPool],
    wants: &[Gres],
    ignore_use: bool,
) -> Option<Vec<(usize, Vec<u32>)>> {
    take_gres_where(pools, wants, ignore_use, &|_, _| true)
}

/// `take_gres` among the devices `allowed` lets through (pool index,
/// position in the pool).
fn take_gres_where(
    pools: &[GresPool],
    wants: &[Gres],
    ignore_use: bool,
    allowed: &dyn Fn(usize, usize) -> bool,
) -> Option<Vec<(usize, Vec<u32>)>> {
    let mut used: Vec<Vec<bool>> = pools
        .iter()
        .map(|p| {
            if ignore_use {
                vec![false; p.used.len()]
            } else {
                p.used.clone()
            }
        })
        .collect();
    let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
    for want in wants {
        let mut left = want.count;
        for (pi, pool) in pools.iter().enumerate() {
            if left == 0 {
                break;
            }
            if !pool.matches(want) {
                continue;
            }
            for (k, u) in used[pi].iter_mut().enumerate() {
                if left == 0 {
                    break;
                }
                if !*u && allowed(pi, k) {
                    *u = true;
                    left -= 1;
                    match out.iter_mut().find(|(p, _)| *p == pi) {
                        Some((_, v)) => v.push(pool.indexes[k]),
                        None => out.push((pi, vec![pool.indexes[k]])),
                    }
                }
            }
        }
        if left > 0 {
            return None;
        }
    }
    Some(out)
}

/// `--gres-flags=enforce-binding`: takes `wants` from `node`'s pools so
/// that the GPUs' gres.conf `Cores=` together hold `need_cpus` CPU ids
/// that are free (all of them, with `ignore_use`). It tries the GPUs near
/// one set of cores at a time (a socket's, in the order the devices
/// come), lowest first, then those without `Cores=` (near every CPU),
/// then any mix. None where no choice has the CPUs: the job waits (or, on an
/// empty node, can never run there).
fn take_gres_bound(
    node: &NodeView,
    wants: &[Gres],
    ignore_use: bool,
    need_cpus: u32,
) -> Option<Vec<(usize, Vec<u32>)>> {
    let cores_of = |pi: usize, k: usize| -> &[u32] {
        node.gres[pi].cores.get(k).map_or(&[][..], Vec::as_slice)
    };
    let enough = |taken: &[(usize, Vec<u32>)]| -> bool {
        let mut near: Vec<u32> = Vec::new();
        for (pi, idxs) in taken {
            let pool = &node.gres[*pi];
            for idx in idxs {
                let Some(k) = pool.indexes.iter().position(|i| i == idx) else {
                    continue;
                };
                let c = cores_of(*pi, k);
                if c.is_empty() {
                    // Near every CPU: no narrower than the node.
                    return true;
                }
                near.extend_from_slice(c);
            }
        }
        near.sort_unstable();
        near.dedup();
        let free = near
            .iter()
            .filter(|id| **id < node.cpus)
            .filter(|id| ignore_use || node.cpu_ids_in_use.binary_search(id).is_err())
            .count();
        free >= need_cpus as usize
    };
    // The distinct core sets of the node's devices, in device order.
    let mut groups: Vec<&[u32]> = Vec::new();
    for (pi, pool) in node.gres.iter().enumerate() {
        for k in 0..pool.indexes.len() {
            let c = cores_of(pi, k);
            if !c.is_empty() && !groups.contains(&c) {
                groups.push(c);
            }
        }
    }
    for group in &groups {
        let within = |pi: usize, k: usize| -> bool {
            let c = cores_of(pi, k);
            !c.is_empty() && c.iter().all(|x| group.contains(x))
        };
        if let Some(taken) = take_gres_where(&node.gres, wants, ignore_use, &within) {
            if enough(&taken) {
                return Some(taken);
            }
        }
    }
    // GPUs without `Cores=` (near every CPU), then any mix.
    let unbound = |pi: usize, k: usize| -> bool { cores_of(pi, k).is_empty() };
    take_gres_where(&node.gres, wants, ignore_use, &unbound)
        .filter(|taken| enough(taken))
        .or_else(|| take_gres(&node.gres, wants, ignore_use).filter(|taken| enough(taken)))
}

fn gres_count(gres: &[(usize, Vec<u32>)], pools: &[GresPool], name: &str) -> u64 {
    gres.iter()
        .filter(|(p, _)| pools[*p].name == name)
        .map(|(_, v)| v.len() as u64)
        .sum()
}

/// The most tasks (up to `limit`) this node can take for `job` and the
/// share they need, given its current use (or as if empty with `ignore_use`),
/// pushed on `picked`: whether there was one.
#[allow(clippy::too_many_arguments)]
fn fit_on_node(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    node_idx: NodeIdx,
    node: &NodeView,
    want_tasks: u32,
    min_tasks: u32,
    gpus_here: Option<u64>,
    ignore_use: bool,
    picked: &mut Vec<NodeAlloc>,
) -> bool {
    let exclusive = job.exclusive || part.exclusive;
    if !ignore_use && (node.exclusive_in_use || (exclusive && node.n_jobs > 0)) {
        return false;
    }
    let (free_cpus, free_mem) = if ignore_use {
        (node.cpus, node.real_memory)
    } else {
        (
            node.cpus.saturating_sub(node.alloc_cpus),
            node.real_memory.saturating_sub(node.alloc_mem),
        )
    };
    // MaxCPUsPerNode: the job's CPUs here, whole node or not, with those
    // the partition's other jobs hold here, stay within it.
    let cap = match part.max_cpus_per_node {
        None => u32::MAX,
        Some(max) if ignore_use => max,
        Some(max) => max.saturating_sub(part_cpus_on(node, part_idx)),
    };
    let free_cpus = free_cpus.min(cap);
    let cpt = job.cpus_per_task.max(1);
    let mut tasks = want_tasks.min(free_cpus / cpt);
    // No GRES asked for (`gres_wanted` would be empty): none taken.
    let no_gres = job.gres_per_node.is_empty()
        && job.gpus_per_task.is_none()
        && gpus_here.is_none_or(|n| n == 0);
    // The CPUs and memory of `tasks` tasks with `n_gpus` GPUs here, where
    // they fit.
    let share = |tasks: u32, n_gpus: u64| -> Option<(u32, u64)> {
        let mut cpus = cpus_on_node(job, node.threads, tasks, n_gpus);
        if exclusive {
            cpus = node.cpus.min(cap);
        }
        if !(cpus <= free_cpus || (exclusive && cpus == node.cpus.min(cap))) {
            return None;
        }
        let mem = match (job.mem_per_node, job.mem_per_cpu, job.mem_per_gpu) {
            (Some(0), _, _) => node.real_memory,
            (Some(m), _, _) => m,
            (None, Some(m), _) => m * cpus as u64,
            (None, None, Some(m)) => m * n_gpus,
            (None, None, None) => 0,
        };
        let mem_ok = !job.memory_consumable || mem <= free_mem;
        let max_ok = part.max_mem_per_node.is_none_or(|max| mem <= max);
        if !(mem_ok && max_ok && mem <= node.real_memory) {
            return None;
        }
        let mem = if job.memory_consumable {
            mem
        } else {
            mem.min(node.real_memory)
        };
        Some((cpus, mem))
    };
    while tasks >= min_tasks.max(1) {
        // Without GRES the share is built only once it fits, and written
        // where it goes once the list has room (`resize_with`): `push`
        // made it on the stack first, to keep it over the call that grows
        // the list, and copied it from there at once, a store-forwarding
        // stall on every node of a wide placement.
        if no_gres {
            if let Some((cpus, mem)) = share(tasks, 0) {
                picked.resize_with(picked.len() + 1, || NodeAlloc {
                    node: node_idx,
                    cpus,
                    mem,
                    tasks,
                    gres: Vec::new(),
                    cpu_ids: Vec::new(),
                });
                return true;
            }
        } else if let Some((cpus, mem, gres)) = {
            let wants = gres_wanted(job, tasks, gpus_here);
            if job.enforce_binding && !exclusive {
                let n_gpus: u64 = wants
                    .iter()
                    .filter(|w| w.name == "gpu")
                    .map(|w| w.count)
                    .sum();
                let need = cpus_on_node(job, node.threads, tasks, n_gpus);
                take_gres_bound(node, &wants, ignore_use, need)
            } else {
                take_gres(&node.gres, &wants, ignore_use)
            }
        }
        .and_then(|gres| {
            let n_gpus = gres_count(&gres, &node.gres, "gpu");
            share(tasks, n_gpus).map(|(cpus, mem)| (cpus, mem, gres))
        }) {
            picked.push(NodeAlloc {
                node: node_idx,
                cpus,
                mem,
                tasks,
                gres,
                cpu_ids: Vec::new(),
            });
            return true;
        }
        if tasks == 0 {
            break;
        }
        tasks -= 1;
    }
    false
}

/// The CPUs `tasks` tasks of `job` (with `n_gpus` GPUs) take on a node
/// that allocates `threads` CPUs per core (`NodeView::threads`): their
/// CPUs per task (or `--cpus-per-gpu` for the GPUs, where more), and on
/// a node of several threads per core whole cores, as Slurm's
/// select/cons_tres does under `CR_Core`: `-n1` takes the two CPUs of a
/// core of two threads, `-n2` the same two; with `--threads-per-core=1`
/// (`--hint=nomultithread`) each CPU a task asks for is a core of its
/// own, and `--ntasks-per-core=N` puts at most N tasks on a core.
pub fn cpus_on_node(job: &JobRequest, threads: u32, tasks: u32, n_gpus: u64) -> u32 {
    let threads = threads.max(1);
    let cpt = job.cpus_per_task.max(1);
    let per_core = job
        .threads_per_core
        .map_or(threads, |t| t.clamp(1, threads));
    let mut cores = if threads > 1 {
        (tasks * cpt).div_ceil(per_core)
    } else {
        tasks * cpt
    };
    if let (Some(k), true) = (job.ntasks_per_core, threads > 1) {
        cores = cores.max(tasks.div_ceil(k.max(1)));
    }
    let mut cpus = cores * threads;
    if let Some(cpg) = job.cpus_per_gpu {
        cpus = cpus.max((cpg * n_gpus as u32).next_multiple_of(threads));
    }
    cpus
}

/// Tries to place `job` in partition `part_idx` on `nodes`. With `ignore_use`
/// the nodes are taken as empty and healthy (to ask "could this ever run?").
fn place_in(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    nodes: &[NodeView],
    ignore_use: bool,
    rank: Option<&[u64]>,
) -> Option<Allocation> {
    // The common case: no nodes or features named, and the partition's
    // nodes already in (weight, index) order: they are the candidates, in
    // the order the sort below would give, without building a list.
    if rank.is_none() && plain_candidates(job) && !part.lln {
        let key = |n: &NodeIdx| (nodes[n.0 as usize].weight, n.0);
        if part.nodes.windows(2).all(|w| key(&w[0]) < key(&w[1])) {
            return pick(job, part_idx, part, nodes, &part.nodes, ignore_use, None);
        }
    }
    let mut candidates: Vec<NodeIdx> = part
        .nodes
        .iter()
        .copied()
        .filter(|n| !job.excluded_nodes.contains(n))
        .filter(|n| {
            let node = &nodes[n.0 as usize];
            (ignore_use || node.available)
                && job
                    .constraint
                    .as_ref()
                    .is_none_or(|c| c.satisfied_by(&node.features))
        })
        .collect();
    // Required nodes first, then by weight, then by the caller's rank
    // (backfill packs jobs where they disturb its plan least), then in
    // configuration order.
    candidates.sort_by_key(|n| {
        (
            !job.required_nodes.contains(n),
            nodes[n.0 as usize].weight,
            lln_key(part, &nodes[n.0 as usize], ignore_use),
            rank.map_or(0, |r| r[n.0 as usize]),
            n.0,
        )
    });
    if job.required_nodes.iter().any(|r| !candidates.contains(r)) {
        return None;
    }
    let min_nodes = job.min_nodes.max(job.required_nodes.len() as u32).max(1);
    if candidates.len() < min_nodes as usize {
        return None;
    }
    pick(job, part_idx, part, nodes, &candidates, ignore_use, None)
}

/// Under LLN the node with the most idle CPUs sorts first; 0 (no order)
/// otherwise, or when the nodes are taken as empty.
fn lln_key(part: &PartView, node: &NodeView, ignore_use: bool) -> std::cmp::Reverse<u32> {
    std::cmp::Reverse(if part.lln && !ignore_use {
        node.cpus.saturating_sub(node.alloc_cpus)
    } else {
        0
    })
}

/// Takes nodes for `job` from `candidates`, in that order, each as much of
/// the job as it holds, until the job is whole. Where that fails because
/// the job may have only so many nodes (`max_nodes`) and the first ones
/// taken held too little of it, the candidates are tried again with the
/// most free CPUs first (in order among equals): the nodes that hold the
/// most tasks are the ones that make the job whole on the fewest nodes.
fn pick(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    nodes: &[NodeView],
    candidates: &[NodeIdx],
    ignore_use: bool,
    room: Option<Room>,
) -> Option<Allocation> {
    if let Some(topo) = part.topology.as_deref() {
        let plain = |order: &[NodeIdx]| {
            let room = room.map(|r| Room {
                in_index_order: false,
                ..r
            });
            pick_plain(job, part_idx, part, nodes, order, ignore_use, room)
        };
        return crate::topology::pick_topo(
            topo,
            job,
            part,
            nodes,
            candidates,
            ignore_use,
            room.map(|r| r.bits),
            &plain,
        );
    }
    pick_plain(job, part_idx, part, nodes, candidates, ignore_use, room)
}

/// `pick` without a topology.
fn pick_plain(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    nodes: &[NodeView],
    candidates: &[NodeIdx],
    ignore_use: bool,
    room: Option<Room>,
) -> Option<Allocation> {
    let at_limit = match pick_in_order(job, part_idx, part, nodes, candidates, ignore_use, room) {
        Ok(a) => return Some(a),
        Err(at_limit) => at_limit,
    };
    if !at_limit || job.ntasks_per_node.is_some() {
        return None;
    }
    let free = |n: &NodeIdx| {
        let node = &nodes[n.0 as usize];
        if ignore_use {
            node.cpus
        } else {
            node.cpus.saturating_sub(node.alloc_cpus)
        }
    };
    let mut roomiest = candidates.to_vec();
    roomiest.sort_by_key(|n| std::cmp::Reverse(free(n)));
    // Sorted again: no longer in index order.
    let room = room.map(|r| Room {
        in_index_order: false,
        ..r
    });
    pick_in_order(job, part_idx, part, nodes, &roomiest, ignore_use, room).ok()
}

/// `pick`'s one pass over `candidates` in the order given; `Err(true)`
/// where the job, allowed more than one node, is not whole because of its
/// node limit (all the nodes it may have were taken, or the last one
/// allowed could not hold the rest). `room`: a bit per node, clear where
/// the node is known to take no job or to have no CPU free in `nodes`
/// (`room_bits`), passed over without a look at it, as the first tests
/// below would.
fn pick_in_order(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    nodes: &[NodeView],
    candidates: &[NodeIdx],
    ignore_use: bool,
    room: Option<Room>,
) -> Result<Allocation, bool> {
    let min_nodes = job.min_nodes.max(job.required_nodes.len() as u32).max(1);
    let max_nodes = job.max_nodes.max(min_nodes);
    // GPUs for the whole job are spread over the nodes it gets; here each
    // node takes what it can, until the total is met.
    let mut gpus_left = job.gpus_total.as_ref().map(|g| g.count);
    // The usual count of nodes taken, so that the list grows at most once.
    let expect = job.ntasks.max(min_nodes).min(max_nodes) as usize;
    let mut picked: Vec<NodeAlloc> = Vec::with_capacity(expect.min(candidates.len()));
    let mut tasks_left = job.ntasks;
    // The node limit turned a node away: every node allowed was taken, or
    // the last one allowed could not hold the rest of the job.
    let mut limited = false;
    // Where the candidates are every node in index order, the ones with
    // room are read off the bits (`Room::in_index_order`).
    let by_bits = room.filter(|r| r.in_index_order);
    let mut looked = match by_bits {
        Some(r) => Looked::Bits(BitsSet::new(r.bits, candidates.len())),
        None => Looked::All(candidates.iter()),
    };
    // With the bits, the last node looked at (to tell whether nodes
    // without room came after it).
    let mut last_seen = None;
    loop {
        let n = match &mut looked {
            Looked::All(it) => match it.next() {
                Some(n) => n,
                None => break,
            },
            Looked::Bits(bits) => match bits.next() {
                Some(i) => {
                    last_seen = Some(i);
                    &candidates[i]
                }
                None => {
                    // A node passed over after the last one looked at
                    // would have met the node limit first.
                    let after = last_seen.map_or(0, |i| i + 1);
                    if after < candidates.len() && picked.len() as u32 >= max_nodes {
                        limited = true;
                    }
                    break;
                }
            },
        };
        let n_picked = picked.len() as u32;
        if n_picked >= max_nodes {
            limited = true;
            break;
        }
        if room.is_some_and(|r| r.bits[n.0 as usize / 64] & (1 << (n.0 % 64)) == 0) {
            debug_assert!({
                let node = &nodes[n.0 as usize];
                !node.available || node.cpus <= node.alloc_cpus
            });
            continue;
        }
        if !ignore_use && !nodes[n.0 as usize].available {
            continue;
        }
        let must_take = job.required_nodes.contains(n);
        let node = &nodes[n.0 as usize];
        let gpus_here = gpus_left.map(|g| {
            let on_node = node
                .gres
                .iter()
                .filter(|p| p.name == "gpu")
                .map(|p| {
                    if ignore_use {
                        p.used.len() as u64
                    } else {
                        p.free()
                    }
                })
                .sum::<u64>();
            g.min(on_node)
        });
        // GPUs for the job that this node cannot all hold need another
        // node, which needs a task: one is kept for it (Slurm spreads
        // `--gpus=3 -n2` over two nodes of two GPUs, 2 + 1).
        let gpus_need_more = gpus_left
            .zip(gpus_here)
            .is_some_and(|(left, here)| here < left);
        let nodes_still_needed = min_nodes
            .saturating_sub(n_picked + 1)
            .max(u32::from(gpus_need_more));
        let (want, min_here) = match job.ntasks_per_node {
            Some(tpn) => (tpn, tpn),
            None => {
                if tasks_left == 0 && n_picked >= min_nodes {
                    break;
                }
                // The last node the job may have must hold all it still
                // needs: a part there would leave the rest nowhere (a
                // one-node job on a node with room for half of it, while a
                // later one has room for all of it).
                let min_here = if n_picked + 1 >= max_nodes {
                    tasks_left.max(1)
                } else {
                    1
                };
                (
                    tasks_left.saturating_sub(nodes_still_needed).max(1),
                    min_here,
                )
            }
        };
        if !ignore_use && node.cpus.saturating_sub(node.alloc_cpus) < job.cpus_per_task.max(1) {
            // Not one task fits here: what `fit_on_node` would find, sooner.
            if must_take {
                return Err(false);
            }
            continue;
        }
        let fits = fit_on_node(
            job,
            part_idx,
            part,
            *n,
            node,
            want,
            min_here,
            gpus_here,
            ignore_use,
            &mut picked,
        );
        match picked.last().filter(|_| fits) {
            Some(a) => {
                tasks_left = tasks_left.saturating_sub(a.tasks);
                if let Some(g) = gpus_left.as_mut() {
                    *g = g.saturating_sub(gres_count(&a.gres, &node.gres, "gpu"));
                }
            }
            None if must_take => return Err(false),
            None => limited |= n_picked + 1 >= max_nodes,
        }
        let done_tasks = job.ntasks_per_node.is_some() || tasks_left == 0;
        let done_gpus = gpus_left.is_none_or(|g| g == 0);
        if picked.len() as u32 >= min_nodes && done_tasks && done_gpus {
            break;
        }
    }
    let enough_nodes = picked.len() as u32 >= min_nodes;
    let enough_tasks = job.ntasks_per_node.is_some() || tasks_left == 0;
    let enough_gpus = gpus_left.is_none_or(|g| g == 0);
    if !(enough_nodes && enough_tasks && enough_gpus) {
        return Err(max_nodes > 1 && limited);
    }
    Ok(Allocation {
        partition: part_idx,
        nodes: picked,
        exclusive: job.exclusive || part.exclusive,
    })
}

/// Where `job` can start now, trying its partitions in order; or why not.
pub fn place(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
) -> Result<Allocation, Unfit> {
    for &pi in &job.partitions {
        let part = &parts[pi];
        if partition_refusal(job, part).is_some() {
            continue;
        }
        if let Some(a) = place_in(job, pi, part, nodes, false, None) {
            return Ok(a);
        }
    }
    Err(diagnose(job, parts, nodes, &emptied(nodes)))
}

/// The nodes with nothing running on them (down and drained ones stay
/// unavailable): what `diagnose` compares against.
pub fn emptied(nodes: &[NodeView]) -> Vec<NodeView> {
    let mut healthy_empty: Vec<NodeView> = nodes.to_vec();
    for n in healthy_empty.iter_mut() {
        n.alloc_cpus = 0;
        n.alloc_mem = 0;
        n.n_jobs = 0;
        n.exclusive_in_use = false;
        n.cpu_ids_in_use.clear();
        for p in n.gres.iter_mut() {
            p.used.iter_mut().for_each(|u| *u = false);
        }
    }
    healthy_empty
}

/// Why a job that does not fit now waits: it never could
/// (`Never`), only on nodes that are down or drained (`NodesUnavailable`),
/// or on busy nodes (`Busy`). `healthy_empty` is `emptied(nodes)`; it is
/// read only when some node of a candidate partition is unavailable.
pub fn diagnose(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
    healthy_empty: &[NodeView],
) -> Unfit {
    let mut best = Unfit::Never(PendingReason::PartitionConfig);
    for &pi in &job.partitions {
        let part = &parts[pi];
        if let Some(reason) = partition_refusal(job, part) {
            if matches!(best, Unfit::Never(_)) {
                best = Unfit::Never(reason);
            }
            continue;
        }
        if place_in(job, pi, part, nodes, true, None).is_some() {
            // It fits an empty partition: is it waiting on busy nodes or on
            // nodes that are down/drained? With every node up, busy ones.
            let all_up = part.nodes.iter().all(|n| nodes[n.0 as usize].available);
            if all_up || place_in(job, pi, part, healthy_empty, false, None).is_some() {
                return Unfit::Busy;
            } else if best != Unfit::Busy {
                best = Unfit::NodesUnavailable;
            }
        }
    }
    best
}

/// Where `job` fits on `nodes` as they are, trying its partitions in
/// order, with nodes of equal weight taken by ascending `rank`.
pub fn place_ranked(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
    rank: &[u64],
) -> Option<Allocation> {
    job.partitions.iter().find_map(|&pi| {
        let part = &parts[pi];
        if partition_refusal(job, part).is_some() {
            return None;
        }
        place_in(job, pi, part, nodes, false, Some(rank))
    })
}

/// Whether `place_sorted` gives the same answer as `place_ranked` for
/// this job: it names no nodes and no features, so its candidates are
/// every available node of the partition in the caller's order.
pub fn plain_candidates(job: &JobRequest) -> bool {
    job.required_nodes.is_empty() && job.excluded_nodes.is_empty() && job.constraint.is_none()
}

/// `place_ranked` for a job with `plain_candidates`, where `orders[pi]`
/// holds partition `pi`'s nodes sorted by (weight, rank, index): the sort
/// is the caller's, done once for many jobs. `room`: the bits of
/// `room_bits`, and per partition whether its order is every node in
/// index order (see `Room`).
pub fn place_sorted(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
    orders: &[Vec<NodeIdx>],
    room: Option<(&[u64], &[bool])>,
) -> Option<Allocation> {
    debug_assert!(plain_candidates(job), "job {} names nodes", job.job_id);
    job.partitions.iter().find_map(|&pi| {
        let part = &parts[pi];
        if partition_refusal(job, part).is_some() {
            return None;
        }
        if part.lln {
            // The least loaded first: the caller's order, sorted again
            // (stable: its order among equals stays).
            let mut order = orders[pi].clone();
            order.sort_by_key(|n| {
                let node = &nodes[n.0 as usize];
                (node.weight, lln_key(part, node, false))
            });
            let room = room.map(|(bits, _)| Room {
                bits,
                in_index_order: false,
            });
            return pick(job, pi, part, nodes, &order, false, room);
        }
        let room = room.map(|(bits, index_order)| Room {
            bits,
            in_index_order: index_order.get(pi).copied().unwrap_or(false),
        });
        pick(job, pi, part, nodes, &orders[pi], false, room)
    })
}

/// What `pick_in_order` may pass over at once: the nodes whose bit is
/// clear (`room_bits`), and, where the candidates are every node in index
/// order (`in_index_order`), it reads the nodes with room off the bits.
#[derive(Clone, Copy, Debug)]
struct Room<'a> {
    bits: &'a [u64],
    in_index_order: bool,
}

/// The candidates `pick_in_order` looks at.
enum Looked<'a> {
    All(std::slice::Iter<'a, NodeIdx>),
    Bits(BitsSet<'a>),
}

/// The set bits of a bit set below `len`, in order.
struct BitsSet<'a> {
    bits: &'a [u64],
    len: usize,
    word: usize,
    left: u64,
}

impl<'a> BitsSet<'a> {
    fn new(bits: &'a [u64], len: usize) -> BitsSet<'a> {
        BitsSet {
            bits,
            len,
            word: 0,
            left: bits.first().copied().unwrap_or(0),
        }
    }
}

impl Iterator for BitsSet<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.left != 0 {
                let i = self.word * 64 + self.left.trailing_zeros() as usize;
                self.left &= self.left - 1;
                return (i < self.len).then_some(i);
            }
            self.word += 1;
            self.left = *self.bits.get(self.word)?;
        }
    }
}

/// A bit per node of `nodes`, set where the node takes jobs and has a CPU
/// free: `place_sorted` passes over the others at once. A set of nodes
/// that has no more room than `nodes` (fewer CPUs free, none available
/// that was not) may be placed on with these bits too.
pub fn room_bits(nodes: &[NodeView]) -> Vec<u64> {
    let mut bits = vec![0u64; nodes.len().div_ceil(64)];
    for (i, n) in nodes.iter().enumerate() {
        set_room(&mut bits, i, n);
    }
    bits
}

/// Sets node `i`'s bit in `bits` (`room_bits`) from `n`.
pub fn set_room(bits: &mut [u64], i: usize, n: &NodeView) {
    let has = n.available && n.cpus > n.alloc_cpus;
    if has {
        bits[i / 64] |= 1 << (i % 64);
    } else {
        bits[i / 64] &= !(1 << (i % 64));
    }
}

/// A partition-level reason the job may not run there, independent of nodes.
pub fn partition_refusal(job: &JobRequest, part: &PartView) -> Option<PendingReason> {
    if !part.up {
        return Some(PendingReason::PartitionDown);
    }
    // More nodes than the partition has: real Slurm 22.05 shows
    // PartitionNodeLimit once its scheduler has looked at the job
    // (PartitionConfig only until then).
    if job.min_nodes as usize > part.nodes.len() {
        return Some(PendingReason::PartitionNodeLimit);
    }
    if let Some(max) = part.max_nodes {
        if job.min_nodes > max {
            return Some(PendingReason::PartitionNodeLimit);
        }
    }
    if job.max_nodes < part.min_nodes {
        return Some(PendingReason::PartitionNodeLimit);
    }
    if job.time_limit > part.max_time {
        return Some(PendingReason::PartitionTimeLimit);
    }
    None
}

/// Whether `job` could ever run in partition `part_idx` if every node were
/// up and empty; used to refuse impossible submissions at once.
pub fn could_ever_fit(
    job: &JobRequest,
    part_idx: usize,
    part: &PartView,
    nodes: &[NodeView],
) -> bool {
    place_in(job, part_idx, part, nodes, true, None).is_some()
}
