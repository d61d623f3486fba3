//! Pure scheduling core. No I/O, no clock, no tokio: `now` arrives as an
//! argument. Given the same nodes, partitions, jobs and `now`, `plan()`
//! returns the same `Plan`, whatever order the jobs came in.
//!
//! Two parts, as Slurm splits them:
//! - `placement` (Slurm's select/cons_tres): can this job fit on these
//!   nodes, and with which CPUs, memory and GRES indexes on each?
//! - `ordering` (Slurm's sched plugin): in which order jobs are tried and
//!   which reason a job that does not start is given.
//!
//! The ordering here is the simple one the foundation needs (partition tier,
//! then priority, then submission); multifactor priority, fair-share and
//! backfill grow behind the same `plan()` (TODO(#5)).
#![warn(missing_docs)]

pub mod ordering;
pub mod placement;

pub use ordering::{plan, Decision, Plan};
pub use placement::{
    place, Allocation, Constraint, GresPool, JobRequest, NodeAlloc, NodeView, PartView, Unfit,
};

/// A dense index into the node table the caller passes in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct NodeIdx(pub u32);

#[cfg(test)]
mod tests;
