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
//!
//! # The pass in detail, and what keeps it cheap
//!
//! `placement` (Slurm's select/cons_tres: CPUs, memory, typed GRES per node,
//! exclusivity, constraints, required and excluded nodes; nodes are taken in
//! the caller's order, each with as much of the job as it holds, except that
//! the last node a job may have (`max_nodes`, e.g. `-N1`) must hold all the job
//! still needs, and a job held to a few nodes that the order cannot make whole
//! is tried again with the nodes of most free CPUs first), `ordering` (the
//! order jobs are tried) and `backfill` (`plan(ClusterView, SchedConfig, now)`:
//! one pass over the queue against a timeline of running jobs' expected ends; a
//! job that cannot start now gets a planned start on specific nodes, and a
//! lower-priority job starts now only where it delays none of those plans;
//! `--time-min` shortens a job into a gap. The policies FCFS
//! (`SchedulerType=sched/builtin`), textbook EASY (`sched/easy`) and backfill
//! (`sched/backfill`, the default) are the same pass with fewer plans;
//! `SchedulerParameters` bf_* options tune it, `bf_job_part_count_reserve`
//! (default 1: one reservation per partition, EASY's; 0: every blocked job,
//! conservative) says how many blocked jobs hold a planned start; muster's own
//! `bf_age_reserve=SECONDS`, off by default, gives a planned start to every
//! blocked job that has waited that long since its submission as well, and
//! `bf_slowdown_reserve=F` with `bf_slowdown_reserve_width=P`, on by default
//! with 1 and 25 %, to every blocked job whose expansion factor (wait + limit)
//! / limit has reached F and that asks for at least P % of its largest
//! partition (with F = 1: every wide job as soon as it is blocked); muster's
//! own `bf_order=shortest` (the default; `priority` is Slurm's order) tries the
//! jobs that can no longer get a plan (`PassState::defers`: every partition of
//! theirs has its planned jobs and they are not due for one of their own) after
//! every other job of the pass, shortest time limit first, so the holes in
//! front of the plans go to the jobs that end soonest; see docs/simulator.md).
//!
//! A start now passes over the nodes without room through a bit per node kept
//! beside `base` (`placement::room_bits`), and where the order for starts is
//! every node in index order (no plan names a node) reads the nodes with room
//! off those bits; the partitions' sizes and whether every node is up are kept
//! by the cache, made again only when the nodes or partitions change.
//!
//! Placement takes a partition's nodes in an order the pass sorts once (by
//! weight, read from the timeline's own list of weights, then rank and index)
//! and mends where a start or a plan changes a node's rank (the moved nodes
//! taken out and put back in place), and a per-node histogram of free CPUs
//! refuses jobs no set of nodes could hold before any placement is tried.
//!
//! A pass's set-up finds the nodes that differ from the last pass's (one
//! comparison per node, or, where the caller says which nodes' views changed,
//! `PassCache::views_differ_only_on`, a comparison of those and of the nodes
//! the last pass started jobs on; the engine says so from its refresh of the
//! views, except where suspended jobs' shares are laid on them, and debug
//! builds check it against the full comparison) and copies only those; each
//! node keeps its plans (`PlanHold`: the interval, CPUs, memory and an index to
//! the GRES taken, half a running share's size) in the order of their end
//! (linked from its last through one list of the pass's shares,
//! `Timeline::plans`, in which each plan's shares lie together in its node
//! order) and its running shares summed beside their list (first and last end,
//! CPUs, memory, jobs, exclusive, whether any holds GRES: `RunSum`), so that a
//! node rebuilt for a time reads its shares only where some but not all have
//! ended by then, and its plans back from the last only to the first one over.
//!
//! `plan_with` is `plan` with a `PassCache` kept by the caller: the timeline's
//! buffers and node orders are reused, the running jobs' shares and release
//! times (a multiset by time and node) are kept from pass to pass and changed
//! only for the jobs that started, ended or changed their expected end (when
//! the caller gives the running jobs by job id, as the engine does; they borrow
//! the caller's allocations, and a version the caller keeps per allocation,
//! `RunningJob::version`, says which are unchanged without comparing them), and
//! why a job of each shape waits (Never, NodesUnavailable, Busy) is kept while
//! the nodes' configuration and availability and the partitions are unchanged
//! (checked at every pass).
//!
//! Looking for a job's planned start, the timeline walks the times at which
//! something comes free up to the first at which the free CPUs could suffice,
//! and not before the start found for an identical job earlier in the pass (a
//! bound: each release adds at most the CPUs it frees, its share's or, for an
//! exclusive one, its node's; with `bf_resolution` above 1, its node's) and
//! rebuilds only the nodes touched on the way, each once, at the last time it
//! was touched; with `bf_resolution=1` the walk starts no earlier than the
//! first time at which the machine's free CPUs summed over nodes (those of the
//! nodes now, plus every release by each instant, less the plans started by
//! then), at their least over the run, reach the job's need (`room_at_least`,
//! from per-time sums kept beside the per-node lists: the plans' CPUs at their
//! starts, the running jobs' releases, `release_cpus`, and those the pass adds;
//! a bound, since no node has more free over a run than at any instant of it),
//! and where the walk there would touch more nodes than the machine has (a wide
//! job behind other wide plans) every node is rebuilt for that time at once
//! instead (and left so, `Timeline::stale`, until something other than the next
//! such rebuild reads the nodes: each rebuild starts from the nodes now, so a
//! row of wide jobs planned one after another puts the nodes back once, not
//! after each); jobs that may start now see the plans that start before their
//! end laid on the nodes (each node rebuilt once, however many of those plans
//! it holds), and the next job that overlaps the same plans finds them laid on
//! already (`the_walk_to_room_finds_what_stepping_finds` checks both against
//! stepping through every time).
//!
//! Within a pass, a plain job whose tasks may go on any number of nodes and
//! that cannot start now tells the pass that jobs of the same kind with more
//! tasks and a longer limit cannot either (the nodes only fill up as the pass
//! goes on).
//!
//! The cache keeps the last pass's state (`PassState`: its memos, plans per
//! partition, timeline): `plan_more` goes on with that pass over jobs that come
//! after every job it tried, deciding them as one pass over all would (with
//! `bf_order=shortest` the caller tries the jobs the pass defers,
//! `PassCache::defers`, after the others, by limit; a pass made with
//! `PassCache::hold_deferred` leaves its own deferred jobs undecided for the
//! caller, `take_deferred`), and `PassCache::cannot_start` tells a caller which
//! jobs it may leave out because an earlier job of the pass showed they cannot
//! start (`settled`: and would get no plan there; a caller asking pass after
//! pass keeps each job's `Probe`, from `PassCache::probe`: its spread shape by
//! number, in a numbering the cache keeps from pass to pass and starts again
//! past 65,536 shapes, its tasks and its limit).
//!
//! `plan_with_changes` is `plan_with` given only the running jobs that changed
//! since the last pass (the timeline keeps the others, in a map by job id with
//! an index by end time so that those whose end has passed are held until
//! `now + 1`, as a set-up from every job holds them).
//!
//! `profile` (free CPUs over time, a treap of breakpoints with range addition
//! and subtree minima and maxima: O(log n) per change or search) serves
//! muster's own `SchedulerParameters=bf_plan=auto|nodes|pool`
//! (`SchedConfig::bf_plan`, `PlanOn`; `auto` by default): in a pass over one
//! partition (`plan_on`), plans hold CPUs counted over the partition instead of
//! named nodes, always with `pool`, and with `auto` only where that is exact
//! (`pool_is_exact`: the partition sets no per-job node or memory limit and
//! holds every node, every job of the pass spreads, `spreads`: one CPU per task
//! and nothing that ties tasks to particular nodes, and the caller vouches for
//! the rest of its queue and for its nodes, `PassCache::pool_exact`); a pass's
//! starts stay on the profile for the running jobs they become
//! (`pool_started`), and debug builds check the profile against one made from
//! the running jobs; the timeline keeps the profile from pass to pass beside
//! `releases` (each running job's CPUs laid on until its expected end, changed
//! only for the jobs that started, ended or changed, as the kept shares are;
//! the pass's starts and plans laid on and taken off at the next set-up),
//! `earliest` is the profile's first time from which the free CPUs stay at
//! least the job's for its limit (placed on the nodes where that is now; a
//! later plan's allocation names no nodes), `fits_now` also asks that the free
//! CPUs over the job's run stay enough for the plans, and starts are placed on
//! nodes as always; `refsched`'s tests check it against that crate's pool
//! `default`, start for start.
//!
//! When a wide job's rebuild of every node follows another's plan
//! (`Timeline::stale_at`: every node rebuilt for one time, the plans reserved
//! since noted), only the nodes something happened to between the two times and
//! runs are rebuilt (`rebuild_changed`; debug builds check it against a full
//! rebuild).
//!
//! `preempt` (`select_victims`: given the running jobs a waiting job may
//! preempt, with the work each would lose, the fewest and cheapest whose
//! release lets it fit, and where it then goes; jobs already ending count as
//! free and are awaited, not preempted).
#![warn(missing_docs)]

pub mod backfill;
pub mod ordering;
pub mod placement;
pub mod preempt;
pub mod profile;
pub mod topology;

pub use backfill::{
    demand_cpus, due_reservation, gives_back_apart, limit_secs, plan, plan_more, plan_with,
    plan_with_changes, spreads, BackfillOrder, Block, Blocks, ClusterView, PartSize, PassCache,
    Plan, PlanOn, Planned, Policy, Probe, RunningJob, SchedConfig, Share, FOREVER,
};
pub use ordering::{order_key, priority_order, Decision, OrderKey};
pub use placement::{
    cpus_on_node, place, Allocation, Constraint, GresPool, JobRequest, NodeAlloc, NodeView,
    PartView, Unfit,
};
pub use preempt::{select_victims, Candidate, Preemption};
pub use topology::{Switch, TopoKind, TopoRef, Topology};

/// A dense index into the node table the caller passes in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct NodeIdx(pub u32);

#[cfg(test)]
mod tests;
