//! Preemption (Slurm's preempt/qos and preempt/partition_prio victim
//! choice): which running jobs a waiting job must displace so that it fits,
//! losing as little work as possible.
//!
//! ```text
//!   candidates (jobs the preemptor may preempt, already filtered by QOS
//!   or partition tier and PreemptExemptTime by the caller)
//!        | cheapest first: jobs already ending (free), then least lost work
//!        v
//!   release one by one on a copy of the nodes until the preemptor fits
//!        | then put back every victim it fits without, dearest first
//!        v
//!   victims = the ones left that share a node with its placement
//! ```
//!
//! Pure: the caller says who may be preempted and what each would lose;
//! this module only answers which of them, and where the preemptor goes.

use crate::placement::{place, Allocation, JobRequest, NodeView, PartView};
use model::JobId;

/// A job the preemptor may displace.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The job.
    pub job_id: JobId,
    /// What it holds.
    pub alloc: Allocation,
    /// The work lost if it is preempted (for instance CPU-seconds run).
    pub cost: u64,
    /// Its resources are already on their way back (it is ending): taking
    /// them costs nothing and preempts nobody.
    pub ending: bool,
}

/// The answer: whom to preempt, and where the preemptor then runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preemption {
    /// Jobs to preempt (never an `ending` candidate), by job id.
    pub victims: Vec<JobId>,
    /// Ending candidates whose resources the placement counts on.
    pub awaited: Vec<JobId>,
    /// Where the preemptor fits once the victims and awaited jobs are gone.
    pub alloc: Allocation,
}

/// Adds (or, with `add` false, removes) an allocation's use on `nodes`.
pub fn apply_alloc(nodes: &mut [NodeView], alloc: &Allocation, add: bool) {
    for na in &alloc.nodes {
        let Some(n) = nodes.get_mut(na.node.0 as usize) else {
            continue;
        };
        if add {
            n.alloc_cpus += na.cpus;
            n.alloc_mem += na.mem;
            n.n_jobs += 1;
            n.exclusive_in_use |= alloc.exclusive;
        } else {
            n.alloc_cpus = n.alloc_cpus.saturating_sub(na.cpus);
            n.alloc_mem = n.alloc_mem.saturating_sub(na.mem);
            n.n_jobs = n.n_jobs.saturating_sub(1);
            if alloc.exclusive {
                n.exclusive_in_use = false;
            }
        }
        for (pool, idxs) in &na.gres {
            let Some(pool) = n.gres.get_mut(*pool) else {
                continue;
            };
            for idx in idxs {
                if let Some(k) = pool.indexes.iter().position(|i| i == idx) {
                    pool.used[k] = add;
                }
            }
        }
    }
}

/// Whom `job` must preempt to fit on `nodes` (their use now), or None when
/// it fits without anyone (nothing to preempt) or not even with every
/// candidate gone. Deterministic: the same candidates in any order give the
/// same answer.
pub fn select_victims(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
    candidates: &[Candidate],
) -> Option<Preemption> {
    if place(job, parts, nodes).is_ok() {
        return None;
    }
    // Only jobs on the nodes of the preemptor's partitions can help.
    let mut usable = vec![false; nodes.len()];
    for &p in &job.partitions {
        for n in &parts.get(p)?.nodes {
            if let Some(u) = usable.get_mut(n.0 as usize) {
                *u = true;
            }
        }
    }
    let mut order: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| {
            c.alloc
                .nodes
                .iter()
                .any(|na| usable.get(na.node.0 as usize).copied().unwrap_or(false))
        })
        .collect();
    // Ending jobs first (free), then least lost work, then the youngest
    // (highest id) first among equals.
    order.sort_by(|a, b| {
        b.ending
            .cmp(&a.ending)
            .then(a.cost.cmp(&b.cost))
            .then(b.job_id.cmp(&a.job_id))
    });
    // With a topology, victims under one switch first (the lowest level
    // that holds an answer, the cheapest switch of that level): the
    // preemptor then runs compactly, as it would have on free nodes.
    if let Some(topo) = job
        .partitions
        .first()
        .and_then(|p| parts.get(*p))
        .and_then(|p| p.topology.as_deref())
    {
        let mut best: Option<(u32, u64, Preemption)> = None;
        for (s, sw) in topo.switches.iter().enumerate() {
            if best.as_ref().is_some_and(|(level, _, _)| *level < sw.level) {
                continue;
            }
            let under: Vec<&Candidate> = order
                .iter()
                .copied()
                .filter(|c| {
                    c.alloc
                        .nodes
                        .iter()
                        .all(|na| topo.path_of(na.node).contains(&(s as u32)))
                })
                .collect();
            if under.is_empty() {
                continue;
            }
            let Some(p) = release_until_fits(job, parts, nodes, &under) else {
                continue;
            };
            let on: Vec<crate::NodeIdx> = p.alloc.nodes.iter().map(|a| a.node).collect();
            if !on.iter().all(|n| topo.path_of(*n).contains(&(s as u32))) {
                continue;
            }
            let cost: u64 = candidates
                .iter()
                .filter(|c| p.victims.contains(&c.job_id))
                .map(|c| c.cost)
                .sum();
            let better = best
                .as_ref()
                .is_none_or(|(level, c, _)| sw.level < *level || cost < *c);
            if better {
                best = Some((sw.level, cost, p));
            }
        }
        if let Some((_, _, p)) = best {
            return Some(p);
        }
    }
    release_until_fits(job, parts, nodes, &order)
}

/// Releases `order`'s jobs one by one until `job` fits, then puts back
/// every one it fits without (the dearest first); the victims are the
/// ones left that share a node with its placement.
fn release_until_fits(
    job: &JobRequest,
    parts: &[PartView],
    nodes: &[NodeView],
    order: &[&Candidate],
) -> Option<Preemption> {
    let mut work = nodes.to_vec();
    let mut taken: Vec<&Candidate> = Vec::new();
    let mut fits = false;
    for &c in order {
        apply_alloc(&mut work, &c.alloc, false);
        taken.push(c);
        if place(job, parts, &work).is_ok() {
            fits = true;
            break;
        }
    }
    if !fits {
        return None;
    }
    // Put back every job the preemptor fits without, the dearest first
    // (ending jobs cost nothing, so they are the last to be put back).
    let mut keep: Vec<bool> = vec![true; taken.len()];
    for i in (0..taken.len()).rev() {
        apply_alloc(&mut work, &taken[i].alloc, true);
        if place(job, parts, &work).is_ok() {
            keep[i] = false;
        } else {
            apply_alloc(&mut work, &taken[i].alloc, false);
        }
    }
    let alloc = place(job, parts, &work).ok()?;
    // A kept job that shares no node with the placement frees nothing it uses.
    let on_alloc = |c: &Candidate| {
        c.alloc
            .nodes
            .iter()
            .any(|na| alloc.nodes.iter().any(|a| a.node == na.node))
    };
    let mut victims = Vec::new();
    let mut awaited = Vec::new();
    for (c, k) in taken.iter().zip(&keep) {
        if *k && on_alloc(c) {
            if c.ending {
                awaited.push(c.job_id);
            } else {
                victims.push(c.job_id);
            }
        }
    }
    victims.sort();
    awaited.sort();
    Some(Preemption {
        victims,
        awaited,
        alloc,
    })
}

#[cfg(test)]
#[path = "tests_preempt.rs"]
mod tests;
