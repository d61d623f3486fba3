//! Ordering (Slurm's sched plugin): which pending job is tried first, and
//! the reason a job that cannot start is given.
//!
//! Jobs are tried by partition PriorityTier (highest first), then priority
//! (highest first), then submission time and id. A job that does not start
//! waits with `Resources` when it is the first blocked job of its
//! partitions, `Priority` when a higher-priority job of a shared partition
//! is already waiting, and a configuration reason when no healthy empty
//! partition could hold it.

use crate::placement::{JobRequest, PartView};

/// The outcome for one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start it now with this allocation.
    Start(crate::Allocation),
    /// Keep it pending for this reason.
    Wait(model::PendingReason),
}

/// The highest PriorityTier among a job's candidate partitions.
fn tier(job: &JobRequest, parts: &[PartView]) -> u32 {
    job.partitions
        .iter()
        .map(|p| parts[*p].priority_tier)
        .max()
        .unwrap_or(0)
}

/// Where a job stands in the order the scheduler tries jobs: a job with
/// a smaller key is tried first.
pub type OrderKey = (
    std::cmp::Reverse<u32>,
    std::cmp::Reverse<u32>,
    i64,
    model::JobId,
);

/// `job`'s place in the order (`priority_order` sorts by it).
pub fn order_key(job: &JobRequest, parts: &[PartView]) -> OrderKey {
    (
        std::cmp::Reverse(tier(job, parts)),
        std::cmp::Reverse(job.priority),
        job.submit_time,
        job.job_id,
    )
}

/// Indexes into `jobs` in the order the scheduler tries them. The order is
/// total (job ids are unique), so it does not depend on the input order.
pub fn priority_order(jobs: &[JobRequest], parts: &[PartView]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let tiers: Vec<u32> = jobs.iter().map(|j| tier(j, parts)).collect();
    order.sort_by(|&a, &b| {
        let (ja, jb) = (&jobs[a], &jobs[b]);
        tiers[b]
            .cmp(&tiers[a])
            .then(jb.priority.cmp(&ja.priority))
            .then(ja.submit_time.cmp(&jb.submit_time))
            .then(ja.job_id.cmp(&jb.job_id))
    });
    order
}
