//! Pure scheduling core. No I/O, no clock, no tokio: `now` arrives as an
//! argument. Given the same nodes, partitions, jobs and `now`, `plan()`
//! returns the same `Plan`, whatever order the jobs came in.
//!
//! Two parts, as Slurm splits them:
//! - `placement` (Slurm's select/cons_tres): can this job fit on these
//!   nodes, and with which CPUs, memory and GRES indexes on each?
//! - `ordering` (Slurm's sched plugin): in which order jobs are tried and
//!   which reason a job that does not start is given.
//! - `preempt` (preempt/qos, preempt/partition_prio): which running jobs a
//!   waiting job displaces, losing the least work.
//! - `backfill` (Slurm's sched/backfill): `plan()`, one pass over the queue
//!   against a timeline of expected ends; FCFS, textbook EASY and full
//!   backfill are policies of that one pass.
//!
//! Multifactor priority and fair-share grow behind the same `plan()`
//! (TODO(#5)).
#![warn(missing_docs)]

pub mod backfill;
pub mod ordering;
pub mod placement;
pub mod preempt;
pub mod profile;

pub use backfill::{
    demand_cpus, due_reservation, gives_back_apart, limit_secs, plan, plan_more, plan_with,
    plan_with_changes, spreads, BackfillOrder, ClusterView, PartSize, PassCache, Plan, PlanOn,
    Planned, Policy, Probe, RunningJob, SchedConfig, Share, FOREVER,
};
pub use ordering::{order_key, priority_order, Decision, OrderKey};
pub use placement::{
    place, Allocation, Constraint, GresPool, JobRequest, NodeAlloc, NodeView, PartView, Unfit,
};
pub use preempt::{select_victims, Candidate, Preemption};

/// A dense index into the node table the caller passes in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct NodeIdx(pub u32);

#[cfg(test)]
mod tests;
