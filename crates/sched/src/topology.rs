//! Network topology in placement (Slurm's `topology/tree` and
//! `topology/block`): which nodes sit under which leaf switch (or in which
//! block), and how a job's nodes are chosen so that it spans as few of them
//! as it can.
//!
//! A partition carries the cluster's topology (`PartView::topology`); without
//! one placement is exactly what it was. With one, `placement::pick` hands the
//! job to `pick_topo`:
//!
//! 1. The candidates the caller gives (in its order: weight, rank, index) are
//!    grouped by leaf (a counting sort, the caller's order kept within a
//!    leaf); nodes that could take no task of the job now are left out, and
//!    so are nodes under no switch (block): as in Slurm they take no job
//!    (a job that names one is refused). Each leaf counts the nodes and
//!    tasks it could hold (an estimate: CPUs only, checked by placing for
//!    real afterwards).
//! 2. The counts are summed up the tree. Every switch that could hold the
//!    whole job is a choice, lowest level first, and among one level the one
//!    with the least room first (best fit: a large empty leaf stays whole for
//!    the job that needs it), then in configuration order.
//! 3. Within the switch chosen the leaves are taken greedily: the smallest
//!    leaf that holds the rest of the job, or where none does the largest,
//!    so the job spans as few leaves as it can; the nodes in that order go to
//!    the ordinary placement, which may still refuse (memory, GRES): then the
//!    next choice is tried.
//! 4. `--switches=N` (`JobRequest::max_leaves`): an allocation over more than
//!    N leaves is refused (the job waits, reason Resources; the engine drops
//!    the limit once the job has waited its max-time). A job no switch can
//!    hold is not placed: as topology.conf(5) says, jobs only span nodes
//!    under one switch (two trees without a common top switch never share
//!    a job).
//! 5. Blocks (`topology/block`) are leaves under no switch: a job goes in one
//!    block where one holds it, else over as few as it can. With
//!    `BlockSizes` (`pick_aligned`) it goes in one aligned group of blocks
//!    of the smallest listed size that holds it, using no more groups of
//!    the level below than its size needs, as Slurm's block plugin does.
//!    `--segment=N` (`JobRequest::segment`) asks that the job's nodes come
//!    in groups of N, each group within one block: every block holds a
//!    multiple of N of its nodes.
//!
//! The cost is one walk over the candidates per placement and a sort of the
//! switches that could hold the job; the plain path (no topology) does not
//! change.

use crate::placement::{Allocation, JobRequest, NodeView, PartView};
use crate::NodeIdx;

/// Which plugin the topology is read for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopoKind {
    /// `topology/tree`: switches over switches over nodes.
    Tree,
    /// `topology/block`: blocks of nodes (NVLink domains).
    Block,
}

/// One switch (or block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    /// `SwitchName` (`BlockName`).
    pub name: String,
    /// 0 for a leaf; one more than its highest child switch otherwise.
    pub level: u32,
    /// `LinkSpeed` (1 where not given, as Slurm shows it).
    pub link_speed: u64,
    /// The switch above, if any.
    pub parent: Option<u32>,
    /// Child switches (`Switches=`), by index.
    pub children: Vec<u32>,
    /// Nodes directly below (`Nodes=`).
    pub nodes: Vec<NodeIdx>,
}

/// The cluster's topology, in node indexes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// Tree or blocks.
    pub kind: TopoKind,
    /// Switches (blocks) in configuration order.
    pub switches: Vec<Switch>,
    /// For each node index, the switch with it in `Nodes=` (`NO_LEAF`: none).
    pub leaf_of: Vec<u32>,
    /// `BlockSizes` (blocks only).
    pub block_sizes: Vec<u32>,
    /// Switch indexes, lowest level first: the order counts are summed up.
    by_level: Vec<u32>,
}

/// `Topology::leaf_of` for a node no switch names.
pub const NO_LEAF: u32 = u32::MAX;

impl Topology {
    /// A topology from switches whose `level` and `parent` are to be
    /// worked out here; `n_nodes` is the size of the node table. A switch
    /// named under two parents keeps the first; a cycle leaves its levels
    /// at what was found before it closed.
    pub fn new(
        kind: TopoKind,
        mut switches: Vec<Switch>,
        n_nodes: usize,
        block_sizes: Vec<u32>,
    ) -> Topology {
        let n = switches.len();
        for s in 0..n {
            for k in 0..switches[s].children.len() {
                let c = switches[s].children[k] as usize;
                if c < n && c != s && switches[c].parent.is_none() {
                    switches[c].parent = Some(s as u32);
                }
            }
        }
        // Levels: at most `n` rounds of raising a parent over its children.
        for s in switches.iter_mut() {
            s.level = 0;
        }
        for _ in 0..n {
            let mut changed = false;
            for s in 0..n {
                let want = switches[s]
                    .children
                    .iter()
                    .filter(|c| (**c as usize) < n)
                    .map(|c| switches[*c as usize].level + 1)
                    .max()
                    .unwrap_or(0)
                    .min(n as u32);
                if want > switches[s].level {
                    switches[s].level = want;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut leaf_of = vec![NO_LEAF; n_nodes];
        for (i, s) in switches.iter().enumerate() {
            for node in &s.nodes {
                if let Some(l) = leaf_of.get_mut(node.0 as usize) {
                    if *l == NO_LEAF {
                        *l = i as u32;
                    }
                }
            }
        }
        let mut by_level: Vec<u32> = (0..n as u32).collect();
        by_level.sort_by_key(|s| (switches[*s as usize].level, *s));
        Topology {
            kind,
            switches,
            leaf_of,
            block_sizes,
            by_level,
        }
    }

    /// The base block size (the first of `BlockSizes`), blocks only.
    pub fn base_block(&self) -> Option<u32> {
        self.block_sizes.first().copied().filter(|b| *b > 0)
    }

    /// With `BlockSizes`: the aggregation levels jobs are held to, as
    /// powers of two of base blocks (`BlockSizes=30,120`: levels 0 and 2,
    /// one block or an aligned group of four). Sizes that are not a power
    /// of two of the base block are left out (conf refuses them).
    fn block_levels(&self) -> Vec<u32> {
        let Some(bs) = self.base_block() else {
            return Vec::new();
        };
        let mut out: Vec<u32> = self
            .block_sizes
            .iter()
            .filter(|s| s.is_multiple_of(bs) && (*s / bs).is_power_of_two())
            .map(|s| (s / bs).trailing_zeros())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The switches from the leaf of `node` up to its root, leaf first.
    pub fn path_of(&self, node: NodeIdx) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = self.leaf_of.get(node.0 as usize).copied();
        while let Some(s) = at.filter(|s| *s != NO_LEAF) {
            if out.contains(&s) || out.len() > self.switches.len() {
                break;
            }
            out.push(s);
            at = self.switches[s as usize].parent;
        }
        out
    }

    /// The leaves (blocks) `nodes` sit under, each once, ascending
    /// (nodes outside the topology left out).
    pub fn leaves_of(&self, nodes: impl IntoIterator<Item = NodeIdx>) -> Vec<u32> {
        let mut out: Vec<u32> = nodes
            .into_iter()
            .filter_map(|n| self.leaf_of.get(n.0 as usize).copied())
            .filter(|l| *l != NO_LEAF)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The switches spanned by a job on `nodes`: the leaves it uses, the
    /// level of the lowest switch over all of them (0: one leaf), and
    /// whether some node sits outside the topology.
    pub fn span(&self, nodes: &[NodeIdx]) -> (usize, u32, bool) {
        let leaves = self.leaves_of(nodes.iter().copied());
        let outside = nodes
            .iter()
            .any(|n| self.leaf_of.get(n.0 as usize).is_none_or(|l| *l == NO_LEAF));
        let level = match leaves.as_slice() {
            [] | [_] => 0,
            [first, rest @ ..] => {
                let mut at = Some(*first);
                let mut level = 0;
                while let Some(s) = at {
                    if rest.iter().all(|l| self.is_below(*l, s)) {
                        level = self.switches[s as usize].level;
                        break;
                    }
                    at = self.switches[s as usize].parent;
                    level = u32::MAX;
                }
                level
            }
        };
        (leaves.len(), level, outside)
    }

    fn is_below(&self, leaf: u32, switch: u32) -> bool {
        let mut at = Some(leaf);
        let mut steps = 0;
        while let Some(s) = at {
            if s == switch {
                return true;
            }
            steps += 1;
            if steps > self.switches.len() {
                return false;
            }
            at = self.switches[s as usize].parent;
        }
        false
    }
}

/// A topology shared by every partition's view: compared by pointer first
/// (the cache compares partitions at every pass).
pub type TopoRef = Option<std::sync::Arc<Topology>>;

/// What one leaf (or switch, summed) could hold of the job now.
#[derive(Clone, Copy, Debug, Default)]
struct Room {
    nodes: u32,
    tasks: u64,
}

/// Tasks of `job` `node` could take now (`ignore_use`: empty), by CPUs
/// alone; 0 where it takes none.
fn tasks_on(job: &JobRequest, part: &PartView, node: &NodeView, ignore_use: bool) -> u64 {
    let exclusive = job.exclusive || part.exclusive;
    if !ignore_use && (!node.available || node.exclusive_in_use || (exclusive && node.n_jobs > 0)) {
        return 0;
    }
    let free = if ignore_use || exclusive {
        node.cpus
    } else {
        node.cpus.saturating_sub(node.alloc_cpus)
    };
    let t = u64::from(free / job.cpus_per_task.max(1));
    match job.ntasks_per_node {
        Some(tpn) if t < u64::from(tpn) => 0,
        Some(tpn) => u64::from(tpn),
        None => t,
    }
}

/// Whether `room` could hold the job's nodes and tasks (an estimate).
fn holds(job: &JobRequest, room: Room, nodes_needed: u32) -> bool {
    room.nodes >= nodes_needed && room.tasks >= u64::from(job.ntasks).max(1)
}

/// Placement with a topology (module docs): `pick` calls it in place of
/// its plain walk where the partition has a topology. `plain` is `pick`
/// without the topology, for the candidates in the order given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pick_topo(
    topo: &Topology,
    job: &JobRequest,
    part: &PartView,
    nodes: &[NodeView],
    candidates: &[NodeIdx],
    ignore_use: bool,
    room_bits: Option<&[u64]>,
    plain: &dyn Fn(&[NodeIdx]) -> Option<Allocation>,
) -> Option<Allocation> {
    let n_sw = topo.switches.len();
    // Group the usable candidates by leaf; `n_sw` is the bucket of nodes
    // outside the topology.
    let mut leaf_room = vec![Room::default(); n_sw + 1];
    let mut usable: Vec<(u32, NodeIdx)> = Vec::with_capacity(candidates.len());
    let must: &[NodeIdx] = &job.required_nodes;
    for &n in candidates {
        let i = n.0 as usize;
        if room_bits.is_some_and(|b| b[i / 64] & (1 << (i % 64)) == 0) && !must.contains(&n) {
            continue;
        }
        let t = tasks_on(job, part, &nodes[i], ignore_use);
        if t == 0 && !must.contains(&n) {
            continue;
        }
        let leaf = topo.leaf_of.get(i).copied().unwrap_or(NO_LEAF);
        if leaf == NO_LEAF {
            // Nodes under no switch (block) take no job: Slurm restricts
            // the candidates to the chosen switch's nodes.
            if must.contains(&n) {
                return None;
            }
            continue;
        }
        let b = leaf as usize;
        leaf_room[b].nodes += 1;
        leaf_room[b].tasks += t;
        usable.push((b as u32, n));
    }
    // Counting sort by leaf, the caller's order kept within each.
    let mut start = vec![0usize; n_sw + 2];
    for (b, _) in &usable {
        start[*b as usize + 1] += 1;
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut grouped = vec![NodeIdx(0); usable.len()];
    {
        let mut at = start.clone();
        for (b, n) in &usable {
            grouped[at[*b as usize]] = *n;
            at[*b as usize] += 1;
        }
    }
    let leaf_nodes = |b: usize| &grouped[start[b]..start[b + 1]];
    let min_nodes = job.min_nodes.max(job.required_nodes.len() as u32).max(1);
    let nodes_needed = match job.segment {
        Some(seg) => min_nodes.next_multiple_of(seg.max(1)),
        None => min_nodes,
    };
    if let Some(seg) = job.segment {
        return pick_segments(topo, job, &leaf_room, &leaf_nodes, seg.max(1), plain);
    }
    if topo.kind == TopoKind::Block && topo.base_block().is_some() {
        return pick_aligned(topo, job, &leaf_room, &leaf_nodes, nodes_needed, plain);
    }
    // Sums up the tree.
    let mut sw_room: Vec<Room> = leaf_room[..n_sw].to_vec();
    for &s in &topo.by_level {
        if let Some(p) = topo.switches[s as usize].parent {
            let r = sw_room[s as usize];
            sw_room[p as usize].nodes += r.nodes;
            sw_room[p as usize].tasks += r.tasks;
        }
    }
    let mut choices: Vec<u32> = (0..n_sw as u32)
        .filter(|s| holds(job, sw_room[*s as usize], nodes_needed))
        .collect();
    choices.sort_by_key(|s| {
        let r = sw_room[*s as usize];
        (topo.switches[*s as usize].level, r.nodes, r.tasks, *s)
    });
    // `--switches` is a limit on waiting, not on fitting: a look at the
    // empty cluster (`ignore_use`) leaves it out.
    let max_leaves = job.max_leaves.filter(|_| !ignore_use);
    let within = |a: &Allocation| {
        max_leaves.is_none_or(|max| {
            topo.leaves_of(a.nodes.iter().map(|x| x.node)).len() <= max.max(1) as usize
        })
    };
    let mut order: Vec<NodeIdx> = Vec::new();
    let mut leaves: Vec<u32> = Vec::new();
    for &s in &choices {
        leaves.clear();
        leaves_below(topo, s, &mut leaves);
        if !must.is_empty() && !must.iter().all(|m| leaves.contains(&leaf_bucket(topo, *m))) {
            continue;
        }
        order.clear();
        greedy_order(job, &leaves, &leaf_room, &leaf_nodes, &mut order);
        if let Some(a) = plain(&order).filter(within) {
            return Some(a);
        }
    }
    if topo.kind == TopoKind::Tree {
        // Jobs span only nodes under one switch (topology.conf(5)).
        return None;
    }
    // Blocks: no one holds the job: every block, greedily.
    leaves.clear();
    leaves.extend(0..n_sw as u32);
    order.clear();
    greedy_order(job, &leaves, &leaf_room, &leaf_nodes, &mut order);
    plain(&order).filter(within)
}

/// `count` whole nodes of `candidates` for what is not a job (a
/// reservation's `NodeCnt=`), chosen as `pick_topo` places an exclusive
/// job of `count` nodes: under the lowest switch that holds them, best
/// fit, over the fewest leaves (blocks; with `BlockSizes`, in one aligned
/// group). `candidates` are the free nodes in the caller's order (which
/// is kept within a leaf). None where no choice holds them: for a tree,
/// no one switch has `count` of them.
pub fn pick_whole_nodes(
    topo: &Topology,
    candidates: &[NodeIdx],
    count: u32,
) -> Option<Vec<NodeIdx>> {
    let count = count.max(1);
    let size = candidates.iter().map(|n| n.0 as usize + 1).max()?;
    // Every candidate as a free node of one CPU: one task each, so the
    // counts are of nodes alone.
    let one = NodeView {
        name: String::new(),
        cpus: 1,
        real_memory: 0,
        alloc_cpus: 0,
        alloc_mem: 0,
        gres: Vec::new(),
        features: Vec::new(),
        weight: 1,
        available: true,
        exclusive_in_use: false,
        n_jobs: 0,
        cpu_ids_in_use: Vec::new(),
        threads: 1,
        part_cpus: Vec::new(),
    };
    let nodes = vec![one; size];
    let job = JobRequest {
        job_id: model::JobId(0),
        priority: 0,
        submit_time: 0,
        partitions: vec![0],
        min_nodes: count,
        max_nodes: count,
        ntasks: count,
        ntasks_per_node: Some(1),
        cpus_per_task: 1,
        mem_per_node: None,
        mem_per_cpu: None,
        mem_per_gpu: None,
        gres_per_node: Vec::new(),
        gpus_total: None,
        gpus_per_task: None,
        cpus_per_gpu: None,
        exclusive: true,
        required_nodes: Vec::new(),
        excluded_nodes: Vec::new(),
        constraint: None,
        time_limit: model::TimeLimit::Unlimited,
        time_min: None,
        user: 0,
        memory_consumable: false,
        enforce_binding: false,
        threads_per_core: None,
        ntasks_per_core: None,
        whole_cores: false,
        max_leaves: None,
        segment: None,
    };
    let part = PartView {
        name: String::new(),
        nodes: candidates.to_vec(),
        up: true,
        max_nodes: None,
        min_nodes: 0,
        max_time: model::TimeLimit::Unlimited,
        exclusive: true,
        max_mem_per_node: None,
        priority_tier: 0,
        max_cpus_per_node: None,
        lln: false,
        topology: None,
    };
    // What placement does with the order chosen: the first `count` nodes.
    let plain = |order: &[NodeIdx]| {
        (order.len() >= count as usize).then(|| Allocation {
            partition: 0,
            nodes: order[..count as usize]
                .iter()
                .map(|&node| crate::placement::NodeAlloc {
                    node,
                    cpus: 1,
                    mem: 0,
                    tasks: 1,
                    gres: Vec::new(),
                    cpu_ids: Vec::new(),
                })
                .collect(),
            exclusive: true,
        })
    };
    let a = pick_topo(topo, &job, &part, &nodes, candidates, true, None, &plain)?;
    Some(a.nodes.into_iter().map(|x| x.node).collect())
}

fn leaf_bucket(topo: &Topology, n: NodeIdx) -> u32 {
    match topo.leaf_of.get(n.0 as usize).copied() {
        Some(l) if l != NO_LEAF => l,
        _ => topo.switches.len() as u32,
    }
}

/// The switches with nodes at or below `s` (itself included).
fn leaves_below(topo: &Topology, s: u32, out: &mut Vec<u32>) {
    let mut stack = vec![s];
    let mut seen = 0;
    while let Some(x) = stack.pop() {
        seen += 1;
        if seen > topo.switches.len() * 2 {
            break;
        }
        let sw = &topo.switches[x as usize];
        if !sw.nodes.is_empty() && !out.contains(&x) {
            out.push(x);
        }
        stack.extend(sw.children.iter().rev().copied());
    }
    out.sort_unstable();
}

/// `leaves`' nodes in the order that spans the fewest: repeatedly the
/// smallest leaf that holds what is left of the job, or the largest where
/// none does (ties: configuration order).
fn greedy_order<'a>(
    job: &JobRequest,
    leaves: &[u32],
    leaf_room: &[Room],
    leaf_nodes: &dyn Fn(usize) -> &'a [NodeIdx],
    out: &mut Vec<NodeIdx>,
) {
    let min_nodes = job.min_nodes.max(1);
    let mut left_nodes = min_nodes;
    let mut left_tasks = u64::from(job.ntasks.max(1));
    let mut taken = vec![false; leaves.len()];
    let take =
        |k: usize, taken: &mut [bool], out: &mut Vec<NodeIdx>, ln: &mut u32, lt: &mut u64| {
            taken[k] = true;
            let r = leaf_room[leaves[k] as usize];
            *ln = ln.saturating_sub(r.nodes);
            *lt = lt.saturating_sub(r.tasks);
            out.extend_from_slice(leaf_nodes(leaves[k] as usize));
        };
    // Leaves holding nodes the job must have come first.
    for (k, l) in leaves.iter().enumerate() {
        if leaf_nodes(*l as usize)
            .iter()
            .any(|n| job.required_nodes.contains(n))
        {
            take(k, &mut taken, out, &mut left_nodes, &mut left_tasks);
        }
    }
    loop {
        let room = |k: &usize| leaf_room[leaves[*k] as usize];
        let open: Vec<usize> = (0..leaves.len())
            .filter(|k| !taken[*k] && room(k).nodes > 0)
            .collect();
        let fits = open
            .iter()
            .copied()
            .filter(|k| room(k).nodes >= left_nodes && room(k).tasks >= left_tasks)
            .min_by_key(|k| (room(k).nodes, room(k).tasks, *k));
        // Once the job is held, the other leaves follow by the same rule
        // (placement may still refuse some node of the chosen ones).
        let next = fits.or_else(|| {
            open.iter()
                .copied()
                .max_by_key(|k| (room(k).nodes, room(k).tasks, std::cmp::Reverse(*k)))
        });
        let Some(k) = next else { break };
        take(k, &mut taken, out, &mut left_nodes, &mut left_tasks);
    }
}

/// `BlockSizes` (topology/block): the job goes in one aligned group of
/// blocks, the smallest level of `BlockSizes` that could hold it (a job of
/// 40 nodes with `BlockSizes=30,120` in blocks 0-3, 4-7, ...: never 2-5),
/// the group with the least room that holds it first (best fit). Within
/// the group it uses no more groups of the level below than its size
/// needs (`ceil(nodes / lower size)`), taken as leaves are (the smallest
/// that holds the rest, else the largest). A job larger than the largest
/// level may use every block.
fn pick_aligned<'a>(
    topo: &Topology,
    job: &JobRequest,
    leaf_room: &[Room],
    leaf_nodes: &dyn Fn(usize) -> &'a [NodeIdx],
    nodes_needed: u32,
    plain: &dyn Fn(&[NodeIdx]) -> Option<Allocation>,
) -> Option<Allocation> {
    let n_sw = topo.switches.len() as u32;
    let bs = topo.base_block()?;
    let levels = topo.block_levels();
    let want = nodes_needed
        .max(1)
        .div_ceil(bs)
        .next_power_of_two()
        .trailing_zeros();
    // The level the job is held to (None: all blocks are one group), and
    // the level below it whose groups the job counts.
    let level = levels.iter().copied().find(|l| *l >= want);
    let lower = levels
        .iter()
        .copied()
        .filter(|l| *l < want)
        .max()
        .unwrap_or(0);
    let group = level.map_or(n_sw.max(1), |l| 1u32 << l.min(31));
    let sub = 1u32 << lower.min(31);
    let max_subs = nodes_needed.max(1).div_ceil(bs.saturating_mul(sub).max(1)) as usize;
    let sum = |from: u32, to: u32| {
        (from..to.min(n_sw)).fold(Room::default(), |r, l| Room {
            nodes: r.nodes + leaf_room[l as usize].nodes,
            tasks: r.tasks + leaf_room[l as usize].tasks,
        })
    };
    // Each group's lower-level parts, the largest first; the group holds
    // the job where its `max_subs` largest parts do.
    // (what its best parts hold, first block, its parts: room and first block)
    type Group = (Room, u32, Vec<(Room, u32)>);
    let mut groups: Vec<Group> = Vec::new();
    for g in (0..n_sw).step_by(group as usize) {
        let mut subs: Vec<(Room, u32)> = (g..(g + group).min(n_sw))
            .step_by(sub as usize)
            .map(|s| (sum(s, s + sub), s))
            .filter(|(r, _)| r.nodes > 0)
            .collect();
        subs.sort_by_key(|(r, s)| (std::cmp::Reverse((r.nodes, r.tasks)), *s));
        let best = subs
            .iter()
            .take(max_subs)
            .fold(Room::default(), |a, (r, _)| Room {
                nodes: a.nodes + r.nodes,
                tasks: a.tasks + r.tasks,
            });
        if holds(job, best, nodes_needed) {
            groups.push((best, g, subs));
        }
    }
    groups.sort_by_key(|(r, g, _)| (r.nodes, r.tasks, *g));
    let must = &job.required_nodes;
    let mut order: Vec<NodeIdx> = Vec::new();
    for (_, _, subs) in &groups {
        // The parts as leaves: smallest that holds the rest, else largest,
        // at most `max_subs` of them.
        order.clear();
        let mut left = nodes_needed.max(1);
        let mut open: Vec<(Room, u32)> = subs.clone();
        let mut used = 0;
        while left > 0 && used < max_subs && !open.is_empty() {
            let k = open
                .iter()
                .enumerate()
                .filter(|(_, (r, _))| r.nodes >= left)
                .min_by_key(|(_, (r, s))| (r.nodes, *s))
                .map(|(k, _)| k)
                .unwrap_or(0);
            let (r, s) = open.remove(k);
            for l in s..(s + sub).min(n_sw) {
                order.extend_from_slice(leaf_nodes(l as usize));
            }
            left = left.saturating_sub(r.nodes);
            used += 1;
        }
        if !must.iter().all(|m| order.contains(m)) {
            continue;
        }
        if let Some(a) = plain(&order) {
            return Some(a);
        }
    }
    None
}

/// `--segment=N`: the job's nodes in groups of N, each within one block.
/// Blocks are chosen as leaves are (fewest first), each giving as many
/// whole segments as its usable nodes make; the candidate list holds
/// exactly the job's nodes, so placement takes all or none of them.
fn pick_segments<'a>(
    topo: &Topology,
    job: &JobRequest,
    leaf_room: &[Room],
    leaf_nodes: &dyn Fn(usize) -> &'a [NodeIdx],
    seg: u32,
    plain: &dyn Fn(&[NodeIdx]) -> Option<Allocation>,
) -> Option<Allocation> {
    let n_sw = topo.switches.len();
    let min_nodes = job.min_nodes.max(1).next_multiple_of(seg);
    let segs_in = |l: usize| leaf_room[l].nodes / seg;
    let mut left = min_nodes / seg;
    let mut taken = vec![false; n_sw];
    let mut order: Vec<NodeIdx> = Vec::new();
    while left > 0 {
        let open = || (0..n_sw).filter(|l| !taken[*l] && segs_in(*l) > 0);
        let next = open()
            .filter(|l| segs_in(*l) >= left)
            .min_by_key(|l| (segs_in(*l), *l))
            .or_else(|| open().max_by_key(|l| (segs_in(*l), std::cmp::Reverse(*l))));
        let l = next?;
        taken[l] = true;
        let give = segs_in(l).min(left);
        left -= give;
        order.extend_from_slice(&leaf_nodes(l)[..(give * seg) as usize]);
    }
    let a = plain(&order)?;
    // Placement takes nodes in order and may pass over one (memory, GRES):
    // the segments hold only where each block has a multiple of N.
    let mut per_block = vec![0u32; n_sw];
    for x in &a.nodes {
        match topo.leaf_of.get(x.node.0 as usize) {
            Some(l) if *l != NO_LEAF => per_block[*l as usize] += 1,
            _ => return None,
        }
    }
    per_block.iter().all(|c| c % seg == 0).then_some(a)
}

#[cfg(test)]
mod tests;
