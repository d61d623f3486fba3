//! Ordering (Slurm's sched plugin): which pending job is tried first, and
//! the reason a job that cannot start is given.
//!
//! Jobs are tried by partition PriorityTier (highest first), then priority
//! (highest first), then submission time and id. A job that fits starts; a
//! job that does not fit waits with `Resources` when it is the first blocked
//! job of its partitions, `Priority` when a higher-priority job of a shared
//! partition is already waiting, and a configuration reason when no healthy
//! empty partition could hold it.

use crate::placement::{place, Allocation, JobRequest, NodeView, PartView, Unfit};
use model::{JobId, PendingReason, Timestamp};

/// The outcome for one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start it now with this allocation.
    Start(Allocation),
    /// Keep it pending for this reason.
    Wait(PendingReason),
}

/// A scheduling pass's decisions, in the order the jobs were considered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// One decision per job passed in.
    pub decisions: Vec<(JobId, Decision)>,
}

/// Applies an allocation to the working copy of the nodes.
fn commit(nodes: &mut [NodeView], a: &Allocation) {
    for na in &a.nodes {
        let node = &mut nodes[na.node.0 as usize];
        node.alloc_cpus += na.cpus;
        node.alloc_mem += na.mem;
        node.n_jobs += 1;
        if a.exclusive {
            node.exclusive_in_use = true;
        }
        for (pool, idxs) in &na.gres {
            let pool = &mut node.gres[*pool];
            for idx in idxs {
                if let Some(k) = pool.indexes.iter().position(|i| i == idx) {
                    pool.used[k] = true;
                }
            }
        }
    }
}

/// Decides which of `jobs` start now. `jobs` holds only jobs that are
/// eligible (not held, begin time reached); the order they come in does not
/// matter. `now` is unused by this simple ordering but is part of the
/// interface the backfill scheduler will use.
pub fn plan(nodes: &[NodeView], parts: &[PartView], jobs: &[JobRequest], _now: Timestamp) -> Plan {
    let mut order: Vec<&JobRequest> = jobs.iter().collect();
    let tier = |j: &JobRequest| {
        j.partitions
            .iter()
            .map(|p| parts[*p].priority_tier)
            .max()
            .unwrap_or(0)
    };
    order.sort_by(|a, b| {
        tier(b)
            .cmp(&tier(a))
            .then(b.priority.cmp(&a.priority))
            .then(a.submit_time.cmp(&b.submit_time))
            .then(a.job_id.cmp(&b.job_id))
    });
    let mut work: Vec<NodeView> = nodes.to_vec();
    let mut blocked_parts: Vec<bool> = vec![false; parts.len()];
    let mut plan = Plan::default();
    for job in order {
        let decision = match place(job, parts, &work) {
            Ok(a) => {
                commit(&mut work, &a);
                Decision::Start(a)
            }
            Err(Unfit::Never(reason)) => Decision::Wait(reason),
            Err(Unfit::NodesUnavailable) => Decision::Wait(PendingReason::NodesDown),
            Err(Unfit::Busy) => {
                let behind = job.partitions.iter().any(|p| blocked_parts[*p]);
                for p in &job.partitions {
                    blocked_parts[*p] = true;
                }
                Decision::Wait(if behind {
                    PendingReason::Priority
                } else {
                    PendingReason::Resources
                })
            }
        };
        plan.decisions.push((job.job_id, decision));
    }
    plan
}
