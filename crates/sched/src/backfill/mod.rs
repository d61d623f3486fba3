//! Backfill (Slurm's sched/backfill): one pass over the pending jobs in
//! priority order against a timeline of when resources come free.
//!
//! ```text
//!   running jobs' expected ends (start + time limit)  ----+
//!                                                         v
//!   pending jobs, by priority --> for each job: earliest time T at which it
//!                                 fits on specific nodes for its whole limit,
//!                                 given the ends above and the plans made so far
//!                                   T == now  -> start it
//!                                   T >  now  -> plan it there (a reservation
//!                                                that later jobs must not delay)
//! ```
//!
//! A lower-priority job starts now only where it delays none of the plans
//! made for higher-priority jobs: the plans are laid over the nodes for the
//! interval the job would run, so it fits either beside them or in the gap
//! before they start. The policy chooses how many plans are made: none
//! (FCFS: the queue stops at the first job that does not fit), one for the
//! first blocked job (textbook EASY), or one for every job (Slurm's
//! backfill, the default).
//!
//! Plans only ever hold resources that are free at their start, so a
//! reservation's usage is counted once per node even where it and a
//! running job overlap (a node is then counted as busier than it is: the
//! answer is safe, sometimes later than it could be).
//!
//! Windows that advance reservations hold (`Blocks`, set on the
//! `PassCache` by the caller) are laid on the timeline as plans that hold
//! their nodes whole, after the jobs the caller names first (the
//! reservations' own) and before every other job: those start now only
//! where their run ends before a window or lies on other nodes, and are
//! planned after it otherwise. A pass with windows plans on nodes.
//!
//! The files, one seam each:
//! - `settings`: `SchedConfig` and its policies;
//! - `plans`: what a pass is given (`ClusterView`) and decides (`Plan`);
//! - `timeline`: the availability of the nodes over time;
//! - `walk`: the pass itself, job after job (`plan`, `plan_with`, ...);
//! - `cache`: what one pass keeps for the next (`PassCache`);
//! - `shape`: the keys under which jobs share what a pass learns;
//! - `reserve`: which blocked jobs are due for a plan of their own.

mod cache;
mod plans;
mod reserve;
mod settings;
mod shape;
mod timeline;
mod walk;

pub use cache::{Block, Blocks, PassCache, Probe};
pub use plans::{demand_cpus, limit_secs, ClusterView, Plan, Planned, RunningJob, FOREVER};
pub use reserve::{aged, due_reservation, PartSize, Share};
pub use settings::{BackfillOrder, PlanOn, Policy, SchedConfig};
#[cfg(test)]
pub(crate) use shape::NO_SPREAD_MEMO;
pub use timeline::gives_back_apart;
pub use walk::{plan, plan_more, plan_with, plan_with_changes, spreads};
