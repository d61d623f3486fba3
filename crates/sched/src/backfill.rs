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

use crate::ordering::{priority_order, Decision};
use crate::placement::{
    diagnose, emptied, place_ranked, place_sorted, plain_candidates, Allocation, JobRequest,
    NodeAlloc, NodeView, PartView, Unfit,
};
use crate::profile::Profile;
use crate::NodeIdx;
use model::{JobId, PendingReason, TimeLimit, Timestamp};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Bound;

/// A time far enough away to stand for "never" (an unlimited job's end)
/// while leaving room to add durations to it.
pub const FOREVER: Timestamp = i64::MAX / 4;

/// Which scheduler runs: the same pass with more or fewer plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// First come, first served: jobs start in priority order and the
    /// first job of a partition that does not fit stops that partition
    /// (Slurm's sched/builtin).
    Fcfs,
    /// Textbook EASY backfilling: the first blocked job gets a planned
    /// start; any later job may start now if it does not delay it.
    Easy,
    /// Slurm's backfill: the first blocked jobs of each partition
    /// (`bf_job_part_count_reserve`; every blocked job, conservative
    /// backfilling, when that is unset) and those due for one of their own
    /// (`aged`) get a planned start, and no job delays the plan of a
    /// higher-priority one.
    Backfill,
}

/// In which order a backfill pass tries the jobs that can only start now,
/// where they delay no plan (`bf_order`, muster's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackfillOrder {
    /// In priority order, as Slurm does.
    Priority,
    /// Shortest time limit first (ties in priority order), after the jobs
    /// that may get a plan: the first blocked ones of each partition and
    /// those due for one of their own (`aged`). Those are still tried in
    /// priority order, so which jobs get plans is as with `Priority`; what
    /// changes is which jobs take the holes in front of the plans.
    Shortest,
}

/// How a backfill pass plans the jobs it cannot start now (`bf_plan`,
/// muster's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanOn {
    /// On named nodes, as Slurm does: each plan holds particular nodes.
    Nodes,
    /// Over the partition's CPUs counted together (`Timeline::pool`), in
    /// every pass over one partition: exact for jobs whose tasks may go on
    /// any free CPUs, an estimate for the others.
    Pool,
    /// Over the pool where that is exact (`pool_is_exact`: one partition,
    /// every pending job's tasks may go on any free CPUs, no node that
    /// cannot take new jobs holds running ones), on nodes otherwise.
    Auto,
}

/// Scheduler settings (SchedulerType and SchedulerParameters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    /// Which scheduler.
    pub policy: Policy,
    /// `bf_window` (minutes): how far ahead plans are made. A job that
    /// cannot start within it gets no planned start. Default 43,200 (30
    /// days; Slurm's is 1,440): a queue head beyond the window would get no
    /// reservation and could be starved by backfilled jobs.
    pub bf_window: u32,
    /// `bf_resolution` (seconds): planned times are rounded up to it.
    /// Default 1 (Slurm's is 60, to save time muster does not need to).
    pub bf_resolution: u32,
    /// `bf_max_job_test`: how many jobs one pass tries; `None` is the whole
    /// queue (the default here: the pass is fast enough).
    pub bf_max_job_test: Option<u32>,
    /// `bf_max_job_user`: how many jobs of one user one pass tries.
    pub bf_max_job_user: Option<u32>,
    /// `bf_job_part_count_reserve`: how many of the highest-priority
    /// blocked jobs of each partition get a planned start (a reservation
    /// later jobs must not delay); `None` is every job (Slurm's 0, its
    /// default: conservative backfilling). Default 1 (EASY backfilling):
    /// see docs/simulator.md for why that schedules better.
    pub bf_job_part_count_reserve: Option<u32>,
    /// `bf_age_reserve` (seconds; muster's own): a blocked job that has
    /// waited at least this long since its submission gets a planned start
    /// too, beyond the `bf_job_part_count_reserve` first ones, so later
    /// jobs can no longer delay it (EASY's long waiters get conservative
    /// backfilling's protection). `None` is off.
    pub bf_age_reserve: Option<u32>,
    /// `bf_slowdown_reserve` (muster's own): a blocked job whose expansion
    /// factor, (wait + time limit) / time limit, has reached this value
    /// gets a planned start too (selective reservation), when it asks for
    /// at least `bf_slowdown_reserve_width` percent of a partition; 1 is as
    /// soon as it is blocked. `None` is off. Default 1 (every wide job is
    /// planned as under conservative backfilling): see docs/simulator.md.
    pub bf_slowdown_reserve: Option<u32>,
    /// `bf_slowdown_reserve_width` (percent, muster's own): only jobs that
    /// ask for at least this share of their largest partition's CPUs (of
    /// its nodes, for whole-node jobs) get selective reservation; narrow
    /// jobs find holes under EASY anyway. 0: every job. Default 25.
    pub bf_slowdown_reserve_width: u32,
    /// `bf_order` (muster's own): in which order the jobs that can only
    /// backfill are tried (`BackfillOrder`), backfill policy only.
    /// Default `Shortest`: see docs/simulator.md.
    pub bf_order: BackfillOrder,
    /// `bf_plan=nodes|pool|auto` (muster's own, `PlanOn`): where plans
    /// are made. Default `Auto`: over the partition's CPUs summed (see
    /// `Timeline::pool`) wherever that is exact, which is far cheaper on
    /// big machines, and on named nodes otherwise. Starts are placed on
    /// nodes always.
    pub bf_plan: PlanOn,
    /// `bf_continue`: accepted; a pass here never yields half way, so there
    /// is nothing to continue.
    pub bf_continue: bool,
    /// `bf_interval` (seconds): accepted and range-checked. Slurm plans
    /// at most this often; here a full pass runs at once after every
    /// change (submission, end, update, priority recalculation), and with
    /// nothing changed a pass would decide the same, so there is no
    /// periodic pass.
    pub bf_interval: u32,
    /// `default_queue_depth`: how many jobs the FCFS policy tries per pass.
    pub default_queue_depth: u32,
    /// `sched_interval` (seconds): accepted and checked; passes are driven
    /// by events and `bf_interval`.
    pub sched_interval: u32,
}

impl Default for SchedConfig {
    fn default() -> SchedConfig {
        SchedConfig {
            policy: Policy::Backfill,
            bf_window: 43_200,
            bf_resolution: 1,
            bf_max_job_test: None,
            bf_max_job_user: None,
            bf_job_part_count_reserve: Some(1),
            bf_age_reserve: None,
            bf_slowdown_reserve: Some(1),
            bf_slowdown_reserve_width: 25,
            bf_order: BackfillOrder::Shortest,
            bf_plan: PlanOn::Auto,
            bf_continue: false,
            bf_interval: 30,
            default_queue_depth: 100,
            sched_interval: 60,
        }
    }
}

/// A job holding resources, and when it is expected to give them back.
/// The allocation may be borrowed from the caller's own job table (the
/// controller passes every running job at every pass: a copy of each
/// allocation per pass would cost an allocation per running job).
#[derive(Clone, Debug, PartialEq)]
pub struct RunningJob<'a> {
    /// The job.
    pub job_id: JobId,
    /// Expected end: start plus time limit (`FOREVER` for no limit).
    pub end: Timestamp,
    /// What it holds.
    pub alloc: Cow<'a, Allocation>,
    /// The caller's count of changes to this job's allocation, where it
    /// keeps one (the engine does): the same version as at the last pass
    /// means the same allocation, so a kept timeline need not compare
    /// them. `None`: the allocations are compared.
    pub version: Option<u64>,
}

/// Everything one pass looks at.
#[derive(Clone, Copy, Debug)]
pub struct ClusterView<'a> {
    /// The nodes, with what running jobs use of them now.
    pub nodes: &'a [NodeView],
    /// The partitions.
    pub parts: &'a [PartView],
    /// Eligible pending jobs (not held, begin time reached), in any order.
    pub jobs: &'a [JobRequest],
    /// Jobs holding resources (their use is already in `nodes`).
    pub running: &'a [RunningJob<'a>],
}

/// Where and when a job that cannot start now is planned to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// Expected start.
    pub start: Timestamp,
    /// What it is planned to take, on which nodes.
    pub alloc: Allocation,
}

impl Planned {
    /// The nodes it is planned on.
    pub fn nodes(&self) -> Vec<NodeIdx> {
        self.alloc.nodes.iter().map(|n| n.node).collect()
    }
}

/// A scheduling pass's decisions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// One decision per job passed in, in the order the jobs were tried.
    pub decisions: Vec<(JobId, Decision)>,
    /// Planned starts of jobs that wait.
    pub planned: BTreeMap<JobId, Planned>,
    /// Jobs started with less than their limit (`--time-min`): the limit
    /// they run with, in minutes.
    pub time_limits: BTreeMap<JobId, u32>,
    /// FCFS only: the pass stopped trying jobs at `default_queue_depth`
    /// before a job of theirs blocked some partition, so jobs it did not
    /// try may fit now (Slurm tries the whole queue every `sched_interval`
    /// for them).
    pub depth_reached: bool,
}

/// Seconds of a time limit (`FOREVER` for none).
pub fn limit_secs(limit: TimeLimit) -> i64 {
    match limit {
        TimeLimit::Minutes(m) => i64::from(m) * 60,
        TimeLimit::Unlimited => FOREVER,
    }
}

/// A running job's node share with the end it is held until (a plan's:
/// `PlanHold`).
#[derive(Clone, Debug)]
struct Hold {
    until: Timestamp,
    share: NodeAlloc,
    exclusive: bool,
    /// The running job it is a share of, when the timeline keeps it from
    /// one pass to the next (`Timeline::kept`); `None` for the starts and
    /// plans of the pass.
    job: Option<JobId>,
}

/// A plan's share of one node, held over `[from, until)`: a `Hold`
/// without what a rebuild does not read (the node, tasks and job), its
/// GRES kept aside (`Timeline::plan_gres`). Every pass lays its plans out
/// node by node again, so their size is paid per node of every plan.
#[derive(Clone, Copy, Debug)]
struct PlanHold {
    from: Timestamp,
    until: Timestamp,
    mem: u64,
    cpus: u32,
    /// One more than its index in `Timeline::plan_gres`; 0: no GRES.
    gres: u32,
    /// The node's next share in `Timeline::plans` by end, back from the
    /// last (`NO_PLAN`: none).
    older: u32,
    exclusive: bool,
}

/// `Timeline::plan_head` and `PlanHold::older` where there is none.
const NO_PLAN: u32 = u32::MAX;

/// A node's running holds summed: when they end, first and last, and what
/// they hold together (`gres`: one holds GRES, which only the holds
/// themselves take off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RunSum {
    min_until: Timestamp,
    max_until: Timestamp,
    cpus: u32,
    mem: u64,
    jobs: u32,
    exclusive: bool,
    gres: bool,
}

impl Default for RunSum {
    fn default() -> Self {
        RunSum {
            min_until: Timestamp::MAX,
            max_until: Timestamp::MIN,
            cpus: 0,
            mem: 0,
            jobs: 0,
            exclusive: false,
            gres: false,
        }
    }
}

impl RunSum {
    fn of(holds: &[Hold]) -> RunSum {
        let mut sum = RunSum::default();
        for h in holds {
            sum.add(h);
        }
        sum
    }

    fn add(&mut self, h: &Hold) {
        self.min_until = self.min_until.min(h.until);
        self.max_until = self.max_until.max(h.until);
        self.cpus = self.cpus.saturating_add(h.share.cpus);
        self.mem = self.mem.saturating_add(h.share.mem);
        self.jobs = self.jobs.saturating_add(1);
        self.exclusive |= h.exclusive;
        self.gres |= !h.share.gres.is_empty();
    }
}

/// A running job whose shares the timeline keeps from one pass to the
/// next: its holds in `running_on` and its release times in `releases`.
#[derive(Clone, Debug)]
struct Kept {
    job_id: JobId,
    /// Its shares are held until then: its expected end, at least `now + 1`.
    until: Timestamp,
    alloc: Allocation,
    version: Option<u64>,
}

/// Whether a kept running job holds what `r` holds: by the caller's
/// versions where both have one, else by comparing the allocations.
fn same_alloc(kept: &Kept, r: &RunningJob) -> bool {
    match (kept.version, r.version) {
        (Some(a), Some(b)) => a == b,
        _ => kept.alloc == *r.alloc,
    }
}

/// The running jobs `Timeline::fill` is given.
#[derive(Clone, Copy, Debug)]
enum Running<'a, 'b> {
    /// Every one.
    All(&'a [RunningJob<'b>]),
    /// Those that changed since the last pass (`plan_with_changes`).
    Changes {
        changed: &'a [RunningJob<'b>],
        gone: &'a [JobId],
    },
}

/// Where `Timeline::add_running` puts a running job's release times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Release {
    /// In `releases` (a job that ran before this pass).
    Running,
    /// In `added` (a job this pass starts).
    Pass,
}

fn free_cpus(n: &NodeView) -> i64 {
    if !n.available || n.exclusive_in_use {
        0
    } else {
        i64::from(n.cpus.saturating_sub(n.alloc_cpus))
    }
}

/// The most CPUs of `n` that the end of a share can free: its own, or
/// every one where it held the node exclusively.
fn freed_cpus(n: &NodeView, share: &NodeAlloc, exclusive: bool) -> i64 {
    if exclusive {
        i64::from(n.cpus)
    } else {
        i64::from(share.cpus)
    }
}

fn apply(n: &mut NodeView, h: &Hold, add: bool) {
    let s = &h.share;
    apply_share(n, s.cpus, s.mem, h.exclusive, &s.gres, add);
}

/// `apply` for a plan's share: laid on, never taken off.
fn apply_plan(n: &mut NodeView, h: &PlanHold, plan_gres: &[Vec<(usize, Vec<u32>)>]) {
    let gres = match h.gres {
        0 => &[][..],
        k => &plan_gres[k as usize - 1][..],
    };
    apply_share(n, h.cpus, h.mem, h.exclusive, gres, true);
}

#[inline]
fn apply_share(
    n: &mut NodeView,
    cpus: u32,
    mem: u64,
    exclusive: bool,
    gres: &[(usize, Vec<u32>)],
    add: bool,
) {
    if add {
        n.alloc_cpus += cpus;
        n.alloc_mem += mem;
        n.n_jobs += 1;
        n.exclusive_in_use |= exclusive;
    } else {
        n.alloc_cpus = n.alloc_cpus.saturating_sub(cpus);
        n.alloc_mem = n.alloc_mem.saturating_sub(mem);
        n.n_jobs = n.n_jobs.saturating_sub(1);
        if exclusive {
            n.exclusive_in_use = false;
        }
    }
    for (pool, idxs) in gres {
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

/// `to.clone_from(from)`, without the call where both are empty (a plain
/// node's GRES and features: copied for every node at every pass).
#[inline]
fn copy_vec<T: Clone>(to: &mut Vec<T>, from: &Vec<T>) {
    if !(to.is_empty() && from.is_empty()) {
        to.clone_from(from);
    }
}

/// Whether `b` is `n` for a pass: every field `fill` copies (not the name).
fn same_node(b: &NodeView, n: &NodeView) -> bool {
    b.alloc_cpus == n.alloc_cpus
        && b.alloc_mem == n.alloc_mem
        && b.n_jobs == n.n_jobs
        && b.available == n.available
        && b.exclusive_in_use == n.exclusive_in_use
        && b.cpus == n.cpus
        && b.real_memory == n.real_memory
        && b.weight == n.weight
        && b.gres == n.gres
        && b.features == n.features
}

/// Copies what is in use (not the configuration) from `from` to `to`.
#[inline]
fn copy_use(to: &mut NodeView, from: &NodeView) {
    to.alloc_cpus = from.alloc_cpus;
    to.alloc_mem = from.alloc_mem;
    to.n_jobs = from.n_jobs;
    to.exclusive_in_use = from.exclusive_in_use;
    for (t, f) in to.gres.iter_mut().zip(&from.gres) {
        copy_vec(&mut t.used, &f.used);
    }
}

/// The timeline one pass works on.
#[derive(Clone, Debug)]
struct Timeline {
    now: Timestamp,
    resolution: i64,
    /// The nodes now, with the jobs started in this pass.
    base: Vec<NodeView>,
    /// `base` as seen by the job being tried at one time: running jobs that
    /// ended by then are gone, and plans overlapping its run are laid on.
    work: Vec<NodeView>,
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
    /// Outside `earliest`'s sweep, `work` is `base` with the plans of the
    /// first `overlay` entries of `plan_starts` laid on (on the `dirty`
    /// nodes): what a job that may start now sees when its run overlaps
    /// exactly those plans. Jobs tried one after another mostly overlap
    /// the same plans, so `fits_now` changes only the nodes of the plans
    /// that differ instead of laying every plan on and off for each job.
    overlay: usize,
    /// `work` holds, on its dirty nodes, a rebuild of every node for a
    /// later time (`earliest` left it so): not `base` with an overlay.
    /// `reset` puts it back before anything but another rebuild of every
    /// node reads it (wide jobs planned one after another rebuild every
    /// node each, and would put every node back in between).
    stale: bool,
    /// Where `work` is stale and was left by an `earliest` that found a
    /// time: the `(t, d)` every node of it was rebuilt for, the plans
    /// reserved since (`since_stale`: their nodes) not laid on. The next
    /// rebuild of every node then rebuilds only the nodes something
    /// happened to in between (`rebuild_changed`).
    stale_at: Option<(Timestamp, i64)>,
    since_stale: Vec<usize>,
    /// The free CPUs of `work` with the plans of the first `k` entries
    /// laid on, at index `k`, once known (`UNKNOWN`: not yet); cleared by
    /// a start or a plan.
    overlay_free: Vec<i64>,
    /// Scratch for `fill`: the nodes that changed since the last pass.
    changed_nodes: Vec<usize>,
    /// Scratch for `place_at`: the nodes of `moved` (all false between).
    is_moved: Vec<bool>,
    /// Scratch for the nodes a step of `earliest` touches.
    touched: Vec<usize>,
    /// Scratch for `overlay_to`: the nodes in `touched` (all false between).
    in_touched: Vec<bool>,
    /// Per node: the last time `step_until_room` touched it (`MIN`: not).
    touch_at: Vec<Timestamp>,
    /// A bit per node of `base` that takes jobs and has a CPU free
    /// (`placement::room_bits`): a start now passes over the others at
    /// once (`work` then has no more room than `base`).
    room: Vec<u64>,
    /// Per partition: whether the order for starts now (`orders[0]`) is
    /// every node in index order (placement then reads the nodes with room
    /// off `room`).
    index_order: Vec<bool>,
    /// Free CPUs on available nodes of `base`.
    base_free: i64,
    /// Free CPUs on available nodes of `work`: a quick test before placing.
    free: i64,
    /// How many nodes of `work` have each number of free CPUs (the last
    /// entry counts that many or more): a per-node test before placing.
    hist: Vec<u32>,
    /// The highest slot of `hist` any node can reach (its most CPUs).
    hist_top: usize,
    /// Per node: running jobs' shares, held until their end.
    running_on: Vec<Vec<Hold>>,
    /// Per node: `running_on` summed (`RunSum`), so that a rebuild reads
    /// the holds only where some but not all have ended by then.
    run_sum: Vec<RunSum>,
    /// The running jobs whose shares are in `running_on` and `releases`,
    /// by job id, as the last pass was given them: the next pass changes
    /// only the jobs that started, ended or changed since (`kept_ok`: they
    /// are laid out for the present nodes and resolution).
    kept: BTreeMap<JobId, Kept>,
    /// The kept jobs by the time their shares are held until, so that
    /// `update_changes` finds the ones a later `now` moves.
    kept_until: std::collections::BTreeSet<(Timestamp, JobId)>,
    kept_ok: bool,
    /// Nodes on which the pass's starts added shares (`Release::Pass`),
    /// taken off at the next set-up.
    started_on: Vec<usize>,
    /// Nodes of `base` the pass's starts changed (`start`): with the
    /// nodes a caller's hint names, the only ones that can differ from
    /// the next pass's views.
    started_at: Vec<usize>,
    /// Scratch for `fill`: the nodes a hint and `started_at` name.
    maybe_changed: Vec<usize>,
    /// The pass's planned shares, plan after plan (each plan's in its
    /// node order), each node's linked from the one that ends last
    /// (`plan_head`) back through `PlanHold::older`: a wide plan is
    /// written in one run, and a rebuild of every node reads each plan's
    /// shares in order (a list per node scattered them over the heap).
    plans: Vec<PlanHold>,
    /// Per node: its share in `plans` that ends last (`NO_PLAN`: none).
    plan_head: Vec<u32>,
    /// The GRES the plans' shares take (`PlanHold::gres`).
    plan_gres: Vec<Vec<(usize, Vec<u32>)>>,
    /// Per node: the end of its last plan (`MIN`: none).
    plan_last: Vec<Timestamp>,
    /// Times at which something may come free (rounded), with its nodes
    /// and the CPUs that come free there at most (`freed_cpus`).
    /// Those of the running jobs, sorted by time once per pass...
    /// (A multiset: how many releases at that time on that node, and
    /// their CPUs; a map, so that a job's end changes it without moving
    /// the rest.)
    releases: BTreeMap<(Timestamp, usize), (u32, i64)>,
    /// ...and those of the jobs this pass starts and plans.
    added: BTreeMap<Timestamp, Vec<(usize, i64)>>,
    /// Planned starts, with their nodes.
    plan_starts: BTreeMap<Timestamp, Vec<usize>>,
    /// The same summed over nodes, as (entries, CPUs) at each time: the
    /// CPUs plans take at each start time and those that come free from
    /// `added` (for `room_at_least`).
    plan_start_cpus: BTreeMap<Timestamp, (usize, i64)>,
    added_cpus: BTreeMap<Timestamp, (usize, i64)>,
    /// `releases` summed over nodes: (entries, CPUs) at each time.
    release_cpus: BTreeMap<Timestamp, (usize, i64)>,
    /// Scratch for `room_at_least`.
    room_steps: Vec<(Timestamp, i64, bool, usize)>,
    room_low: std::collections::VecDeque<usize>,
    /// Per node: the earliest planned start on it (ranks nodes for jobs
    /// starting now: short jobs go where a plan starts soonest after them).
    next_plan: Vec<u64>,
    /// Per node: free CPUs now (ranks nodes for plans: take the nodes busy
    /// now, leave the free ones for jobs that can start at once).
    free_now: Vec<u64>,
    /// Per rank (0: `next_plan`, for starts now; 1: `free_now`, for plans):
    /// each partition's nodes sorted by (weight, rank, index), and whether
    /// that sort is still true to the rank.
    orders: [Vec<Vec<NodeIdx>>; 2],
    /// Per node: `base`'s weight, which the orders sort by first (read
    /// here, not from the views, when a sort compares them).
    weights: Vec<u32>,
    order_ok: [bool; 2],
    /// Per rank: the nodes whose rank (or weight) changed since its orders
    /// were last sorted, so that only they move (`moved_all`: sort all).
    moved: [Vec<usize>; 2],
    moved_all: [bool; 2],
    /// Pool planning (`SchedConfig::bf_plan`): the CPUs the running jobs,
    /// the pass's starts and its plans hold, summed over the nodes, as a
    /// step function of time (the profile's values are minus the CPUs held
    /// from then on), kept from pass to pass as `releases` is; `None` when
    /// off (`pool_wanted`, set by the caller before `fill`).
    pool: Option<Profile>,
    pool_wanted: bool,
    /// This pass plans over `pool` (`plan_on`): `earliest` and `fits_now`
    /// count CPUs, `reserve_cpus` lays plans on, `work` stays `base`.
    pool_pass: bool,
    /// `base_free` less the profile's value now: the CPUs free at `t` are
    /// `pool_offset` plus its value at `t`.
    pool_offset: i64,
    /// What the pass's plans laid on `pool`, as (from, until, CPUs): taken
    /// off at the next set-up.
    pool_pass_holds: Vec<(Timestamp, Timestamp, i64)>,
    /// What the pass's starts laid on `pool`, the same way. The next
    /// set-up leaves them on (`pool_started`): the started jobs come back
    /// as running ones, held until the same ends.
    pool_start_holds: Vec<(Timestamp, Timestamp, i64)>,
    /// The last pass's starts' holds, still on `pool` while the set-up
    /// takes in the running jobs: a running job held until the same end
    /// with the same CPUs takes one over instead of laying its own on (the
    /// profile is the same either way); those left are taken off.
    pool_started: Vec<(Timestamp, Timestamp, i64)>,
}

/// Whether the CPUs the jobs running on `n` free at their ends are not
/// the pool's to give: it takes no new job (down, drained) or an
/// exclusive job holds all of it.
pub fn gives_back_apart(n: &NodeView) -> bool {
    (!n.available || n.exclusive_in_use) && n.alloc_cpus > 0
}

/// The CPUs of an allocation's shares on nodes of the timeline (`n`).
fn alloc_cpus(alloc: &Allocation, n: usize) -> i64 {
    alloc
        .nodes
        .iter()
        .filter(|na| (na.node.0 as usize) < n)
        .map(|na| i64::from(na.cpus))
        .sum()
}

impl Timeline {
    fn empty() -> Self {
        Timeline {
            now: 0,
            resolution: 1,
            base: Vec::new(),
            work: Vec::new(),
            dirty: Vec::new(),
            is_dirty: Vec::new(),
            overlay: 0,
            stale: false,
            stale_at: None,
            since_stale: Vec::new(),
            overlay_free: Vec::new(),
            touched: Vec::new(),
            is_moved: Vec::new(),
            touch_at: Vec::new(),
            in_touched: Vec::new(),
            room: Vec::new(),
            index_order: Vec::new(),
            base_free: 0,
            free: 0,
            hist: vec![0; HIST_MAX + 1],
            changed_nodes: Vec::new(),
            hist_top: 0,
            running_on: Vec::new(),
            run_sum: Vec::new(),
            plan_last: Vec::new(),
            kept: BTreeMap::new(),
            kept_until: std::collections::BTreeSet::new(),
            kept_ok: false,
            started_on: Vec::new(),
            started_at: Vec::new(),
            maybe_changed: Vec::new(),
            plans: Vec::new(),
            plan_head: Vec::new(),
            plan_gres: Vec::new(),
            releases: BTreeMap::new(),
            added: BTreeMap::new(),
            plan_starts: BTreeMap::new(),
            plan_start_cpus: BTreeMap::new(),
            added_cpus: BTreeMap::new(),
            release_cpus: BTreeMap::new(),
            room_steps: Vec::new(),
            room_low: std::collections::VecDeque::new(),
            next_plan: Vec::new(),
            free_now: Vec::new(),
            orders: [Vec::new(), Vec::new()],
            weights: Vec::new(),
            order_ok: [false, false],
            moved: [Vec::new(), Vec::new()],
            moved_all: [true, true],
            pool: None,
            pool_wanted: false,
            pool_pass: false,
            pool_offset: 0,
            pool_pass_holds: Vec::new(),
            pool_start_holds: Vec::new(),
            pool_started: Vec::new(),
        }
    }

    /// Lays `cpus` held over `[from, until)` on `pool` (the part from now).
    fn pool_take(&mut self, from: Timestamp, until: Timestamp, cpus: i64) {
        if let Some(p) = &mut self.pool {
            let from = from.max(p.now());
            if from < until && cpus > 0 {
                p.occupy(from, until, cpus);
            }
        }
    }

    /// Takes off `pool` what `pool_take` laid on for `[from, until)` (the
    /// part from now; the profile has forgotten the past).
    fn pool_give(&mut self, from: Timestamp, until: Timestamp, cpus: i64) {
        if let Some(p) = &mut self.pool {
            let from = from.max(p.now());
            if from < until && cpus > 0 {
                p.release(from, until, cpus);
            }
        }
    }

    /// Sets the timeline up for a pass over `nodes` and `running` at
    /// `now`, reusing what the last pass allocated (a pass after one event
    /// costs no allocation per node). `orders` are kept: the caller clears
    /// them when the partitions changed; kept, they are nearly sorted.
    ///
    /// With `Running::Changes`, only where the last pass kept its running
    /// jobs for these nodes and this resolution; false (and nothing done)
    /// elsewhere.
    fn fill(
        &mut self,
        nodes: &[NodeView],
        running: Running,
        now: Timestamp,
        resolution: u32,
        hint: Option<&[usize]>,
    ) -> bool {
        let resolution = i64::from(resolution.max(1));
        let rebuilt = self.base.len() != nodes.len();
        // The nodes that differ from `base`, and whether all kept their
        // size; most passes follow an event or two, which change a few.
        let mut changed = std::mem::take(&mut self.changed_nodes);
        changed.clear();
        let mut sizes_kept = !rebuilt;
        if !rebuilt {
            match hint {
                // `base` is the last views taken in, but for the nodes the
                // last pass started jobs on (`started_at`).
                Some(hinted) => {
                    let mut maybe = std::mem::take(&mut self.maybe_changed);
                    maybe.clear();
                    maybe.extend_from_slice(&self.started_at);
                    maybe.extend_from_slice(hinted);
                    maybe.sort_unstable();
                    maybe.dedup();
                    for &i in &maybe {
                        let (b, n) = (&self.base[i], &nodes[i]);
                        if !same_node(b, n) {
                            sizes_kept &= b.cpus == n.cpus;
                            changed.push(i);
                        }
                    }
                    self.maybe_changed = maybe;
                    debug_assert_eq!(
                        changed,
                        (0..nodes.len())
                            .filter(|&i| !same_node(&self.base[i], &nodes[i]))
                            .collect::<Vec<_>>(),
                        "a hint left out a node that changed"
                    );
                }
                None => {
                    for (i, (b, n)) in self.base.iter().zip(nodes).enumerate() {
                        if !same_node(b, n) {
                            sizes_kept &= b.cpus == n.cpus;
                            changed.push(i);
                        }
                    }
                }
            }
        }
        // The kept running jobs are changed, not laid out again, where
        // they were laid out for these nodes (their CPUs count in
        // `releases`) and this resolution and the caller gives the running
        // jobs by job id (the engine does).
        let keeps = !rebuilt && self.kept_ok && self.resolution == resolution && sizes_kept;
        let incremental = match running {
            Running::All(all) => keeps && all.windows(2).all(|w| w[0].job_id < w[1].job_id),
            Running::Changes { .. } if !keeps => {
                self.changed_nodes = changed;
                return false;
            }
            Running::Changes { .. } => true,
        };
        // Taken in from here: `base` becomes `nodes`.
        self.started_at.clear();
        self.now = now;
        self.resolution = resolution;
        if rebuilt {
            // Placement never reads a node's name: copies without it cost
            // no allocation for a plain node.
            self.base = nodes
                .iter()
                .map(|n| NodeView {
                    name: String::new(),
                    features: n.features.clone(),
                    gres: n.gres.clone(),
                    ..*n
                })
                .collect();
            self.work = self.base.clone();
            self.room = crate::placement::room_bits(nodes);
            self.weights = nodes.iter().map(|n| n.weight).collect();
            self.running_on = vec![Vec::new(); nodes.len()];
            self.run_sum = vec![RunSum::default(); nodes.len()];
            self.plan_last = vec![Timestamp::MIN; nodes.len()];
            self.plan_head = vec![NO_PLAN; nodes.len()];
            self.is_dirty = vec![false; nodes.len()];
            self.next_plan = vec![u64::MAX; nodes.len()];
            self.free_now = vec![0; nodes.len()];
            self.moved_all = [true, true];
            self.dirty.clear();
            self.overlay = 0;
            self.stale = false;
            self.stale_at = None;
            self.since_stale.clear();
            self.free = nodes.iter().map(free_cpus).sum();
            self.hist.iter_mut().for_each(|h| *h = 0);
            for (i, n) in nodes.iter().enumerate() {
                let f = free_cpus(n);
                self.hist[hist_slot(f)] += 1;
                self.free_now[i] = f as u64;
            }
        } else {
            // `work` back to `base` on every node (`free` and `hist` with
            // it), then the changed nodes taken from `nodes`; the others
            // are as `nodes` has them already.
            self.reset();
            for &i in &changed {
                let (b, n) = (&mut self.base[i], &nodes[i]);
                if b.weight != n.weight {
                    self.moved_all = [true, true];
                }
                b.cpus = n.cpus;
                b.real_memory = n.real_memory;
                b.alloc_cpus = n.alloc_cpus;
                b.alloc_mem = n.alloc_mem;
                copy_vec(&mut b.gres, &n.gres);
                copy_vec(&mut b.features, &n.features);
                b.weight = n.weight;
                self.weights[i] = n.weight;
                b.available = n.available;
                b.exclusive_in_use = n.exclusive_in_use;
                b.n_jobs = n.n_jobs;
                crate::placement::set_room(&mut self.room, i, b);
                let (w, b) = (&mut self.work[i], &self.base[i]);
                let old = free_cpus(w);
                w.cpus = b.cpus;
                w.real_memory = b.real_memory;
                copy_vec(&mut w.gres, &b.gres);
                copy_vec(&mut w.features, &b.features);
                w.weight = b.weight;
                w.available = b.available;
                copy_use(w, b);
                let new = free_cpus(w);
                self.count_free(old, new);
                // `free_now` is `base`'s free CPUs on every node.
                if self.free_now[i] != new as u64 {
                    self.free_now[i] = new as u64;
                    note_moved(&mut self.moved[1], &mut self.moved_all[1], i);
                }
            }
            // Only nodes with a plan have one to take off.
            for on in self.plan_starts.values() {
                for &i in on {
                    self.plan_head[i] = NO_PLAN;
                    self.plan_last[i] = Timestamp::MIN;
                    if self.next_plan[i] != u64::MAX {
                        self.next_plan[i] = u64::MAX;
                        note_moved(&mut self.moved[0], &mut self.moved_all[0], i);
                    }
                }
            }
        }
        self.changed_nodes = changed;
        debug_assert_eq!(self.free, nodes.iter().map(free_cpus).sum::<i64>());
        debug_assert!(self
            .free_now
            .iter()
            .zip(nodes)
            .all(|(f, n)| *f == free_cpus(n) as u64));
        self.overlay_free.clear();
        self.base_free = self.free;
        if !sizes_kept {
            self.hist_top = nodes
                .iter()
                .map(|n| hist_slot(i64::from(n.cpus)))
                .max()
                .unwrap_or(0);
        }
        self.added.clear();
        self.plan_starts.clear();
        self.plans.clear();
        self.plan_gres.clear();
        self.added_cpus.clear();
        self.plan_start_cpus.clear();
        self.order_ok = [false, false];
        self.pool_pass = false;
        let mut holds = std::mem::take(&mut self.pool_pass_holds);
        for (from, until, cpus) in holds.drain(..) {
            self.pool_give(from, until, cpus);
        }
        self.pool_pass_holds = holds;
        // The starts' holds stay on for the running jobs to take over.
        std::mem::swap(&mut self.pool_started, &mut self.pool_start_holds);
        self.pool_start_holds.clear();
        if !self.pool_wanted {
            self.pool = None;
        }
        if let Some(p) = &mut self.pool {
            p.advance(now.max(p.now()));
        }
        let from_scratch = !matches!(running, Running::Changes { .. }) && !incremental;
        if self.pool.is_none() || from_scratch {
            // No profile, or a new one made below: nothing of theirs is on.
            self.pool_started.clear();
        }
        if self.pool_wanted && (self.pool.is_none() || from_scratch) {
            // Made from the kept jobs (a set-up from scratch lays every
            // job on again below).
            self.pool = Some(Profile::new(0, now));
            if !from_scratch {
                let kept: Vec<(Timestamp, i64)> = self
                    .kept
                    .values()
                    .map(|k| (k.until, alloc_cpus(&k.alloc, self.base.len())))
                    .collect();
                for (until, cpus) in kept {
                    self.pool_take(now, until, cpus);
                }
            }
        }
        let running = match running {
            Running::All(all) if incremental => {
                self.update_running(all);
                self.give_back_started();
                return true;
            }
            Running::Changes { changed, gone } => {
                self.update_changes(changed, gone);
                self.give_back_started();
                return true;
            }
            Running::All(all) => all,
        };
        for v in self.running_on.iter_mut() {
            v.clear();
        }
        self.run_sum.iter_mut().for_each(|r| *r = RunSum::default());
        self.started_on.clear();
        self.releases.clear();
        self.release_cpus.clear();
        self.kept.clear();
        self.kept_until.clear();
        self.kept_ok = running.windows(2).all(|w| w[0].job_id < w[1].job_id);
        for r in running {
            if self.kept_ok {
                self.keep(r);
            } else {
                // A job past its limit is being ended: expect it gone at once.
                let until = r.end.max(now + 1);
                self.add_running(until, &r.alloc, None, Release::Running);
            }
        }
        true
    }

    /// Takes off `pool` the last pass's starts' holds that no running job
    /// took over (`pool_started`).
    fn give_back_started(&mut self) {
        let mut left = std::mem::take(&mut self.pool_started);
        for (from, until, cpus) in left.drain(..) {
            self.pool_give(from, until, cpus);
        }
        self.pool_started = left;
        // Now the profile holds the kept running jobs alone, as one made
        // from them would (checked on small machines).
        debug_assert!(
            self.base.len() > 64 || {
                self.pool.as_ref().is_none_or(|p| {
                    let mut fresh = Profile::new(0, p.now());
                    for k in self.kept.values() {
                        let (from, until) = (p.now(), k.until);
                        let cpus = alloc_cpus(&k.alloc, self.base.len());
                        if from < until && cpus > 0 {
                            fresh.occupy(from, until, cpus);
                        }
                    }
                    fresh.steps() == p.steps()
                })
            }
        );
    }

    /// Lays a running job's shares on until its end (at least `now + 1`:
    /// a job past its limit is being ended, expect it gone at once) and
    /// keeps it for the next pass.
    fn keep(&mut self, r: &RunningJob) {
        let until = r.end.max(self.now + 1);
        self.add_running(until, &r.alloc, Some(r.job_id), Release::Running);
        self.kept_until.insert((until, r.job_id));
        self.kept.insert(
            r.job_id,
            Kept {
                job_id: r.job_id,
                until,
                alloc: r.alloc.clone().into_owned(),
                version: r.version,
            },
        );
    }

    /// Takes a kept job off (its shares and release times too).
    fn unkeep(&mut self, id: JobId) {
        if let Some(o) = self.kept.remove(&id) {
            self.kept_until.remove(&(o.until, id));
            self.drop_running(&o);
        }
    }

    /// Takes off the shares the last pass's starts added.
    fn drop_starts(&mut self) {
        for &i in &self.started_on {
            self.running_on[i].retain(|h| h.job.is_some());
            self.run_sum[i] = RunSum::of(&self.running_on[i]);
        }
        self.started_on.clear();
    }

    /// `fill`'s running jobs from the changes since the last pass alone:
    /// `changed` started or changed, `gone` no longer hold anything, every
    /// other kept job is as the last pass was given it. Kept jobs whose
    /// end has passed are held until `now + 1`, as a set-up from every
    /// job holds them: the same holds and release times.
    fn update_changes(&mut self, changed: &[RunningJob], gone: &[JobId]) {
        self.drop_starts();
        for id in gone {
            self.unkeep(*id);
        }
        for r in changed {
            let until = r.end.max(self.now + 1);
            if let Some(o) = self.kept.get(&r.job_id) {
                if o.until == until && same_alloc(o, r) {
                    continue;
                }
                self.unkeep(r.job_id);
            }
            self.keep(r);
        }
        let soon = self.now + 1;
        while let Some(&(until, id)) = self.kept_until.first() {
            if until >= soon {
                break;
            }
            let Some(mut o) = self.kept.remove(&id) else {
                self.kept_until.pop_first();
                continue;
            };
            self.kept_until.pop_first();
            self.drop_running(&o);
            self.add_running(soon, &o.alloc, Some(id), Release::Running);
            o.until = soon;
            self.kept_until.insert((soon, id));
            self.kept.insert(id, o);
        }
    }

    /// `fill`'s running jobs, from those of the last pass: the shares of
    /// the jobs that ended (or changed) are taken off, those of the jobs
    /// that started (or changed) laid on, the rest stay where they are.
    /// Gives the holds and release times a set-up from scratch gives (in
    /// another order on each node, which nothing reads).
    fn update_running(&mut self, running: &[RunningJob]) {
        // `running` is by job id: the kept jobs not in it are gone.
        let gone: Vec<JobId> = self
            .kept
            .keys()
            .filter(|id| running.binary_search_by_key(*id, |r| r.job_id).is_err())
            .copied()
            .collect();
        self.update_changes(running, &gone);
    }

    /// Takes a kept running job's shares and release times off.
    fn drop_running(&mut self, o: &Kept) {
        self.pool_give(self.now, o.until, alloc_cpus(&o.alloc, self.base.len()));
        let key = self.round_up(o.until);
        for na in &o.alloc.nodes {
            let i = na.node.0 as usize;
            if i >= self.base.len() {
                continue;
            }
            let on = &mut self.running_on[i];
            if let Some(p) = on.iter().position(|h| h.job == Some(o.job_id)) {
                on.swap_remove(p);
                self.run_sum[i] = RunSum::of(on);
            }
            if key < FOREVER {
                let cpus = freed_cpus(&self.base[i], na, o.alloc.exclusive);
                if let Some(c) = self.releases.get_mut(&(key, i)) {
                    c.0 -= 1;
                    c.1 -= cpus;
                    if c.0 == 0 {
                        self.releases.remove(&(key, i));
                        let sum = self.release_cpus.get_mut(&key).expect("summed");
                        sum.0 -= 1;
                        if sum.0 == 0 {
                            self.release_cpus.remove(&key);
                        }
                    }
                    if let Some(sum) = self.release_cpus.get_mut(&key) {
                        sum.1 -= cpus;
                    }
                }
            }
        }
    }

    fn round_up(&self, time: Timestamp) -> Timestamp {
        if time >= FOREVER {
            return FOREVER;
        }
        let r = self.resolution;
        (time + r - 1).div_euclid(r) * r
    }

    /// A running job's shares, until `end` (`job`: kept for the next
    /// pass), with its release times put where `release` says.
    fn add_running(
        &mut self,
        end: Timestamp,
        alloc: &Allocation,
        job: Option<JobId>,
        release: Release,
    ) {
        if self.pool.is_some() {
            let cpus = alloc_cpus(alloc, self.base.len());
            let started = match release {
                Release::Running => self
                    .pool_started
                    .iter()
                    .position(|&(_, until, c)| until == end && c == cpus),
                Release::Pass => None,
            };
            match started {
                // A start of the last pass's, on until this end already.
                Some(k) => {
                    self.pool_started.swap_remove(k);
                }
                None => self.pool_take(self.now, end, cpus),
            }
            if release == Release::Pass {
                self.pool_start_holds.push((self.now, end, cpus));
            }
        }
        let key = self.round_up(end);
        for na in &alloc.nodes {
            let i = na.node.0 as usize;
            if i >= self.base.len() {
                continue;
            }
            let h = Hold {
                until: end,
                share: na.clone(),
                exclusive: alloc.exclusive,
                job,
            };
            self.run_sum[i].add(&h);
            self.running_on[i].push(h);
            if release == Release::Pass {
                self.started_on.push(i);
            }
            if key < FOREVER {
                let cpus = freed_cpus(&self.base[i], na, alloc.exclusive);
                match release {
                    Release::Running => {
                        let r = self.releases.entry((key, i)).or_default();
                        let sum = self.release_cpus.entry(key).or_default();
                        sum.0 += usize::from(r.0 == 0);
                        sum.1 += cpus;
                        r.0 += 1;
                        r.1 += cpus;
                    }
                    Release::Pass => {
                        self.added.entry(key).or_default().push((i, cpus));
                        let sum = self.added_cpus.entry(key).or_default();
                        sum.0 += 1;
                        sum.1 += cpus;
                    }
                }
            }
        }
    }

    /// A node of `work` went from `old` to `new` free CPUs.
    fn count_free(&mut self, old: i64, new: i64) {
        // Most rebuilds leave a node's count as it was: no slot touched
        // (each update waits for the last one to the same slot).
        if old == new {
            return;
        }
        self.free += new - old;
        self.hist[hist_slot(old)] -= 1;
        self.hist[hist_slot(new)] += 1;
    }

    /// A necessary condition for a plain CPU job to fit on `work` (false
    /// only where no placement could succeed): enough nodes with enough
    /// free CPUs for its tasks, counting at most `max_nodes` nodes.
    fn may_fit(&self, job: &JobRequest) -> bool {
        if job.exclusive || !job.gres_per_node.is_empty() || job.gpus_total.is_some() {
            return true;
        }
        if job.gpus_per_task.is_some() || job.cpus_per_gpu.is_some() {
            return true;
        }
        let cpt = job.cpus_per_task.max(1) as usize;
        let min_nodes = job.min_nodes.max(1) as usize;
        if let Some(tpn) = job.ntasks_per_node {
            let need = (tpn.max(1) as usize) * cpt;
            if need > HIST_MAX {
                return true;
            }
            let top = self.hist_top.max(need);
            let enough: u64 = self.hist[need..=top].iter().map(|c| u64::from(*c)).sum();
            return enough >= min_nodes as u64;
        }
        if cpt > HIST_MAX {
            return true;
        }
        // The most tasks `max_nodes` nodes can take, the fullest first.
        let mut nodes_left = job
            .max_nodes
            .max(job.min_nodes)
            .max(job.required_nodes.len() as u32)
            .max(1) as u64;
        let (mut tasks, mut with_room) = (0u64, 0u64);
        for f in (cpt..=self.hist_top).rev() {
            let c = u64::from(self.hist[f]);
            with_room += c;
            if nodes_left == 0 {
                continue;
            }
            let take = c.min(nodes_left);
            nodes_left -= take;
            // The last slot stands for HIST_MAX or more: count it as
            // unbounded, so the test stays a necessary one.
            let per = if f == HIST_MAX {
                u64::MAX / 4
            } else {
                (f / cpt) as u64
            };
            tasks = tasks.saturating_add(take.saturating_mul(per));
        }
        with_room >= min_nodes as u64 && tasks >= u64::from(job.ntasks.max(1))
    }

    fn mark(&mut self, i: usize) {
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(i);
        }
    }

    /// Rebuilds node `i` of `work` for a job running over `[t, t + d)`.
    fn recompute(&mut self, i: usize, t: Timestamp, d: i64) {
        self.mark(i);
        let old = free_cpus(&self.work[i]);
        let (base, work) = (&self.base[i], &mut self.work[i]);
        copy_use(work, base);
        let run = &self.run_sum[i];
        if t >= run.max_until && !run.gres {
            // Every hold ended by then: taken off at once (one saturating
            // subtraction of their sum is theirs one after another).
            work.alloc_cpus = work.alloc_cpus.saturating_sub(run.cpus);
            work.alloc_mem = work.alloc_mem.saturating_sub(run.mem);
            work.n_jobs = work.n_jobs.saturating_sub(run.jobs);
            if run.exclusive {
                work.exclusive_in_use = false;
            }
        } else if t >= run.min_until {
            for h in &self.running_on[i] {
                if h.until <= t {
                    apply(work, h, false);
                }
            }
        }
        // From the last to end: most are over by `t` (the plans of wide
        // jobs before this one, on most nodes).
        if self.plan_last[i] > t {
            let mut k = self.plan_head[i];
            while let Some(h) = self.plans.get(k as usize) {
                if h.until <= t {
                    break;
                }
                if h.from < t + d {
                    apply_plan(work, h, &self.plan_gres);
                }
                k = h.older;
            }
        }
        let new = free_cpus(work);
        self.count_free(old, new);
    }

    /// Puts `work` back to `base`.
    fn reset(&mut self) {
        self.overlay = 0;
        self.stale = false;
        self.stale_at = None;
        self.since_stale.clear();
        let mut dirty = std::mem::take(&mut self.dirty);
        for &i in &dirty {
            self.is_dirty[i] = false;
            let old = free_cpus(&self.work[i]);
            copy_use(&mut self.work[i], &self.base[i]);
            let new = free_cpus(&self.work[i]);
            self.count_free(old, new);
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// Lays on `work` the plans of the first `k` entries of `plan_starts`
    /// instead of the first `self.overlay`: the plans that a run of `d`
    /// seconds from now overlaps when `k` entries start before its end.
    /// Only the nodes of the entries between the two counts change (a
    /// node's state at `now` depends on `d` only through which plans start
    /// before `now + d`).
    fn overlay_to(&mut self, k: usize, d: i64) {
        let k0 = self.overlay;
        if k == k0 {
            return;
        }
        let (lo, hi) = (k.min(k0), k.max(k0));
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        // Each node once: plans of wide jobs share most of their nodes,
        // and a rebuild lays on every plan of the node at once.
        let in_touched = &mut self.in_touched;
        in_touched.resize(self.base.len(), false);
        for nodes in self.plan_starts.values().skip(lo).take(hi - lo) {
            for &i in nodes {
                if !std::mem::replace(&mut in_touched[i], true) {
                    touched.push(i);
                }
            }
        }
        let now = self.now;
        for &i in &touched {
            self.in_touched[i] = false;
            self.recompute(i, now, d);
        }
        self.touched = touched;
        self.overlay = k;
    }

    /// The earliest time up to `horizon` at which `job` fits for `d`
    /// seconds without touching any plan, and where.
    fn earliest(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        d: i64,
        not_before: Timestamp,
        horizon: Timestamp,
    ) -> Option<(Timestamp, Allocation)> {
        if self.pool_pass {
            return self.pool_earliest(job, parts, d, not_before, horizon);
        }
        let now = self.now;
        let demand = demand_cpus(job);
        let mut t = now;
        let mut not_before = not_before;
        let mut rebuilt = false;
        if self.resolution == 1 && !self.plan_starts.is_empty() {
            // No time before this one can have room (the machine's free
            // CPUs over the run, summed: a bound no per-node look can
            // beat): look from there, with every node rebuilt for it at
            // once where the walk there would touch more nodes than that
            // (a wide job behind the plans of other wide ones). Without
            // plans the walk's own bound is as good.
            let Some((least, touches)) = self.room_at_least(demand, d, horizon) else {
                self.reset();
                return None;
            };
            not_before = not_before.max(least);
            if least > now && touches >= self.base.len() {
                // Each rebuild starts from `base`: what the overlay laid
                // on `work` before does not matter.
                if self.rebuild_changed(least, d) {
                    #[cfg(debug_assertions)]
                    self.check_rebuilt(least, d);
                } else {
                    for i in 0..self.base.len() {
                        self.recompute(i, least, d);
                    }
                }
                t = least;
                rebuilt = true;
            }
        }
        if !rebuilt {
            if self.stale {
                self.reset();
            }
            let k = self.plan_starts.range(..now.saturating_add(d)).count();
            self.overlay_to(k, d);
        }
        let found = loop {
            if self.free >= demand && t >= not_before && self.may_fit(job) {
                if let Some(a) = self.place_at(job, parts, t == now) {
                    break Some((t, a));
                }
            }
            if t >= horizon {
                break None;
            }
            match self.step_until_room(t, d, demand, not_before, horizon) {
                Some(next) => t = next,
                None => break None,
            }
        };
        if rebuilt {
            // Every node is dirty: put back when next read, unless the
            // next job rebuilds every node too. Where a time was found,
            // every node is as rebuilt for it (`step_until_room` rebuilt
            // each node it passed something on).
            self.overlay = 0;
            self.stale = true;
            self.stale_at = found.as_ref().map(|(t, _)| (*t, d));
            self.since_stale.clear();
        } else {
            self.reset();
        }
        found
    }

    /// Brings a stale `work` (`stale_at`) to every node rebuilt for
    /// `[t, t + d)`, rebuilding only the nodes whose rebuild can differ:
    /// those of the plans reserved since, those a running job's or a
    /// pass's share ends on between the two times (`releases`, `added`:
    /// plans' ends are there too), and those a plan starts on between the
    /// two runs' ends (a plan is laid on where it starts before the run
    /// ends). False, and nothing done, where there is no such `work`, the
    /// times are not exact (`bf_resolution` above 1), or those nodes are
    /// not fewer than all.
    fn rebuild_changed(&mut self, t: Timestamp, d: i64) -> bool {
        let Some((t0, d0)) = self.stale_at.take() else {
            return false;
        };
        if self.resolution != 1 {
            return false;
        }
        let n = self.base.len();
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        let in_touched = &mut self.in_touched;
        in_touched.resize(n, false);
        let mut add = |i: usize| {
            if !std::mem::replace(&mut in_touched[i], true) {
                touched.push(i);
            }
        };
        self.since_stale.iter().for_each(|&i| add(i));
        let (lo, hi) = (t0.min(t), t0.max(t));
        if lo < hi {
            let span = (
                Bound::Excluded((lo, usize::MAX)),
                Bound::Included((hi, usize::MAX)),
            );
            self.releases.range(span).for_each(|(e, _)| add(e.1));
            let span = (Bound::Excluded(lo), Bound::Included(hi));
            for nodes in self.added.range(span).map(|(_, v)| v) {
                nodes.iter().for_each(|&(i, _)| add(i));
            }
        }
        let (e0, e1) = (t0.saturating_add(d0), t.saturating_add(d));
        for nodes in self
            .plan_starts
            .range(e0.min(e1)..e0.max(e1))
            .map(|(_, v)| v)
        {
            nodes.iter().for_each(|&i| add(i));
        }
        let few = touched.len() < n;
        for &i in &touched {
            self.in_touched[i] = false;
            if few {
                self.recompute(i, t, d);
            }
        }
        self.touched = touched;
        self.since_stale.clear();
        few
    }

    /// That `work`, `free` and `hist` are what rebuilding every node for
    /// `[t, t + d)` makes (and leaves them so).
    #[cfg(debug_assertions)]
    fn check_rebuilt(&mut self, t: Timestamp, d: i64) {
        let (work, free, hist) = (self.work.clone(), self.free, self.hist.clone());
        for i in 0..self.base.len() {
            self.recompute(i, t, d);
        }
        assert!(work.iter().zip(&self.work).all(|(a, b)| same_node(a, b)));
        assert_eq!((free, &hist), (self.free, &self.hist));
    }

    /// From `t`, goes through the times at which something may come free
    /// (as `earliest` looks at them, one after another) up to the first at
    /// which the job could have `demand` CPUs, and brings `work` there.
    /// `None` when there is no such time up to `horizon` (what stepping
    /// to every time and testing would find: nothing fits at any of them).
    ///
    /// At each time, the nodes something happens to are rebuilt for that
    /// time; a node's state depends only on the last time it was rebuilt,
    /// so each node is rebuilt once, at its last time, when the walk stops.
    /// The walk stops at the first time, from `not_before` on, at which
    /// the free CPUs could reach `demand`: a bound that adds the CPUs every
    /// release may free (with `bf_resolution` above 1, a node's CPUs for
    /// every node touched at all: a rounded release time may free a share
    /// before its own time comes).
    fn step_until_room(
        &mut self,
        mut t: Timestamp,
        d: i64,
        demand: i64,
        not_before: Timestamp,
        horizon: Timestamp,
    ) -> Option<Timestamp> {
        if self.touch_at.len() != self.base.len() {
            self.touch_at = vec![Timestamp::MIN; self.base.len()];
        }
        let exact_releases = self.resolution == 1;
        let mut bound = self.free;
        let mut pending = std::mem::take(&mut self.touched);
        pending.clear();
        let landed = loop {
            let after_t = (Bound::Excluded((t, usize::MAX)), Bound::Unbounded);
            let next_running = self.releases.range(after_t).next().map(|(e, _)| e.0);
            let next_added = self
                .added
                .range((Bound::Excluded(t), Bound::Unbounded))
                .next()
                .map(|(k, _)| *k);
            let Some(next) = next_running.into_iter().chain(next_added).min() else {
                break None;
            };
            if next > horizon {
                break None;
            }
            // `freed`: the CPUs a release there frees at most (`None`: a
            // plan's start, which frees nothing at exact times).
            let mut touch = |i: usize, freed: Option<i64>| {
                if self.touch_at[i] == Timestamp::MIN {
                    pending.push(i);
                }
                self.touch_at[i] = next;
                bound += match freed {
                    _ if !exact_releases => i64::from(self.base[i].cpus),
                    Some(cpus) => cpus,
                    None => 0,
                };
            };
            for (e, c) in self.releases.range((next, 0)..=(next, usize::MAX)) {
                touch(e.1, Some(c.1));
            }
            if let Some(nodes) = self.added.get(&next) {
                for &(i, cpus) in nodes {
                    touch(i, Some(cpus));
                }
            }
            for nodes in self
                .plan_starts
                .range(t.saturating_add(d)..next.saturating_add(d))
                .map(|(_, nodes)| nodes)
            {
                for &i in nodes {
                    touch(i, None);
                }
            }
            t = next;
            if bound >= demand && next >= not_before {
                break Some(next);
            }
        };
        for &i in &pending {
            let at = std::mem::replace(&mut self.touch_at[i], Timestamp::MIN);
            if landed.is_some() {
                self.recompute(i, at, d);
            }
        }
        self.touched = pending;
        landed
    }

    /// Where `job` fits on `work`, nodes of equal weight taken by
    /// `next_plan` for a start now, by `free_now` for a plan.
    fn place_at(&mut self, job: &JobRequest, parts: &[PartView], now: bool) -> Option<Allocation> {
        let k = usize::from(!now);
        let rank = if now { &self.next_plan } else { &self.free_now };
        if !plain_candidates(job) {
            return place_ranked(job, parts, &self.work, rank);
        }
        if !self.order_ok[k] {
            let (base, orders, weights) = (&self.base, &mut self.orders[k], &self.weights);
            debug_assert!(base.iter().map(|n| n.weight).eq(weights.iter().copied()));
            let key = |n: &NodeIdx| {
                let i = n.0 as usize;
                (weights[i], rank[i], n.0)
            };
            let moved = &mut self.moved[k];
            let all = self.moved_all[k]
                || orders.len() != parts.len()
                || moved.len().saturating_mul(16) > base.len();
            if orders.len() != parts.len() {
                *orders = parts.iter().map(|p| p.nodes.clone()).collect();
            }
            if all {
                for o in orders.iter_mut() {
                    o.sort_by_key(key);
                }
            } else if !moved.is_empty() {
                // The others keep their keys, so stay in order: take the
                // moved nodes out and put each back where it now belongs.
                let is_moved = &mut self.is_moved;
                is_moved.resize(base.len(), false);
                for &i in moved.iter() {
                    is_moved[i] = true;
                }
                let mut out = Vec::new();
                for o in orders.iter_mut() {
                    out.clear();
                    o.retain(|n| {
                        let m = is_moved[n.0 as usize];
                        if m {
                            out.push(*n);
                        }
                        !m
                    });
                    for n in &out {
                        let at = o.partition_point(|x| key(x) < key(n));
                        o.insert(at, *n);
                    }
                    debug_assert!(o.windows(2).all(|w| key(&w[0]) < key(&w[1])));
                }
                for &i in moved.iter() {
                    is_moved[i] = false;
                }
            }
            let changed = all || !moved.is_empty();
            moved.clear();
            self.moved_all[k] = false;
            self.order_ok[k] = true;
            if now && (changed || self.index_order.len() != parts.len()) {
                let n = self.base.len();
                self.index_order.clear();
                self.index_order.extend(
                    self.orders[0].iter().map(|o| {
                        o.len() == n && o.iter().enumerate().all(|(i, x)| x.0 as usize == i)
                    }),
                );
            }
        }
        let room = now.then_some((self.room.as_slice(), self.index_order.as_slice()));
        debug_assert_eq!(self.room, crate::placement::room_bits(&self.base));
        let placed = place_sorted(job, parts, &self.work, &self.orders[k], room);
        // The order kept gives what the ranked order gives (checked on
        // small machines: it sorts every node).
        debug_assert!(
            self.base.len() > 64 || placed == place_ranked(job, parts, &self.work, rank),
            "the kept order placed job {} elsewhere",
            job.job_id
        );
        placed
    }

    /// Whether `job` can start now for `d` seconds without delaying a plan.
    fn fits_now(&mut self, job: &JobRequest, parts: &[PartView], d: i64) -> Option<Allocation> {
        // What it sees now: the plans that start before its end laid on
        // (`earliest` up to now, without putting `work` back after).
        let demand = demand_cpus(job);
        // Nothing running now leaves enough CPUs: no need to look further.
        if self.base_free < demand {
            return None;
        }
        if self.pool_pass {
            // Every instant of its run keeps the plans' CPUs free.
            let p = self.pool.as_ref()?;
            let need = demand - self.pool_offset;
            let end = self.now.saturating_add(d);
            if p.first_below(self.now, need).is_some_and(|y| y < end) {
                return None;
            }
            return self.place_at(job, parts, true);
        }
        let now = self.now;
        let k = self.plan_starts.range(..now.saturating_add(d)).count();
        // The free CPUs under these plans, when known: no need to lay them on.
        if self
            .overlay_free
            .get(k)
            .is_some_and(|&f| f != UNKNOWN && f < demand)
        {
            return None;
        }
        if self.stale {
            self.reset();
        }
        self.overlay_to(k, d);
        if self.overlay_free.len() <= k {
            self.overlay_free.resize(k + 1, UNKNOWN);
        }
        self.overlay_free[k] = self.free;
        if self.free < demand || !self.may_fit(job) {
            return None;
        }
        self.place_at(job, parts, true)
    }

    fn start(&mut self, d: i64, alloc: &Allocation) {
        self.reset();
        self.overlay_free.clear();
        for na in &alloc.nodes {
            let i = na.node.0 as usize;
            let h = Hold {
                until: self.now + d,
                share: na.clone(),
                exclusive: alloc.exclusive,
                job: None,
            };
            apply(&mut self.base[i], &h, true);
            crate::placement::set_room(&mut self.room, i, &self.base[i]);
            self.started_at.push(i);
            self.free_now[i] = free_cpus(&self.base[i]) as u64;
            note_moved(&mut self.moved[1], &mut self.moved_all[1], i);
            self.order_ok[1] = false;
            let old = free_cpus(&self.work[i]);
            copy_use(&mut self.work[i], &self.base[i]);
            let new = free_cpus(&self.work[i]);
            self.count_free(old, new);
        }
        self.base_free = self.free;
        self.add_running(self.now.saturating_add(d), alloc, None, Release::Pass);
    }

    /// `earliest` in a pool pass: the first time from `not_before` up to
    /// `horizon` at which the partition's free CPUs, summed, stay at least
    /// the job's for `d` seconds. Placed on the nodes where that is now;
    /// later, an allocation without nodes (a plan holds CPUs, not nodes).
    fn pool_earliest(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        d: i64,
        not_before: Timestamp,
        horizon: Timestamp,
    ) -> Option<(Timestamp, Allocation)> {
        let partition = job.partitions.iter().copied().find(|&p| {
            parts
                .get(p)
                .is_some_and(|v| crate::placement::partition_refusal(job, v).is_none())
        })?;
        let need = demand_cpus(job) - self.pool_offset;
        let (now, end) = (self.now, horizon.saturating_add(1));
        let p = self.pool.as_ref()?;
        let mut t = p.earliest_in(need, d, i64::MAX, not_before.max(now), end)?;
        if t == now {
            if let Some(a) = self.place_at(job, parts, true) {
                return Some((t, a));
            }
            // Enough CPUs, not in the shape it asks for: a later time.
            let p = self.pool.as_ref()?;
            t = p.earliest_in(need, d, i64::MAX, now + 1, end)?;
        }
        let alloc = Allocation {
            partition,
            nodes: Vec::new(),
            exclusive: job.exclusive,
        };
        Some((t, alloc))
    }

    /// `reserve` in a pool pass: `cpus` held over `[start, start + d)`.
    fn reserve_cpus(&mut self, start: Timestamp, d: i64, cpus: i64) {
        let end = start.saturating_add(d);
        // `shortened_start` looks for the gaps before plans here.
        self.plan_starts.entry(start).or_default();
        self.pool_take(start, end, cpus);
        self.pool_pass_holds.push((start, end, cpus));
    }

    fn reserve(&mut self, start: Timestamp, d: i64, alloc: &Allocation) {
        // A new entry of `plan_starts` renumbers the overlay's (a stale
        // `work` is put back when next read).
        if !self.stale {
            self.reset();
        }
        self.overlay_free.clear();
        let end = start.saturating_add(d);
        let key = self.round_up(end);
        // One look-up per plan, not per node.
        let starts = self.plan_starts.entry(start).or_default();
        starts.reserve(alloc.nodes.len());
        let mut ends = (key < FOREVER).then(|| self.added.entry(key).or_default());
        if let Some(e) = ends.as_mut() {
            e.reserve(alloc.nodes.len());
        }
        let (mut taken, mut freed) = (0, 0);
        if self.stale_at.is_some() {
            self.since_stale
                .extend(alloc.nodes.iter().map(|na| na.node.0 as usize));
        }
        for na in &alloc.nodes {
            let i = na.node.0 as usize;
            taken += i64::from(na.cpus);
            // By end, so that a rebuild stops at the plans over by then
            // (the node's last end: its first share's, read without it).
            let ends_later = self.plan_last[i] > end;
            self.plan_last[i] = self.plan_last[i].max(end);
            let gres = if na.gres.is_empty() {
                0
            } else {
                self.plan_gres.push(na.gres.clone());
                self.plan_gres.len() as u32
            };
            // After the node's shares that end later (most plans end after
            // those before them: none), before the others.
            let (mut later, mut k) = (NO_PLAN, self.plan_head[i]);
            if ends_later {
                while let Some(h) = self.plans.get(k as usize).filter(|h| h.until > end) {
                    later = k;
                    k = h.older;
                }
            }
            let at = u32::try_from(self.plans.len()).expect("fewer shares than u32::MAX");
            self.plans.push(PlanHold {
                from: start,
                until: end,
                mem: na.mem,
                cpus: na.cpus,
                gres,
                older: k,
                exclusive: alloc.exclusive,
            });
            match self.plans.get_mut(later as usize) {
                Some(h) => h.older = at,
                None => self.plan_head[i] = at,
            }
            starts.push(i);
            if let Some(e) = ends.as_mut() {
                let cpus = freed_cpus(&self.base[i], na, alloc.exclusive);
                freed += cpus;
                e.push((i, cpus));
            }
            if (start as u64) < self.next_plan[i] {
                self.next_plan[i] = start as u64;
                note_moved(&mut self.moved[0], &mut self.moved_all[0], i);
                self.order_ok[0] = false;
            }
        }
        let n = alloc.nodes.len();
        let sum = self.plan_start_cpus.entry(start).or_default();
        (sum.0, sum.1) = (sum.0 + n, sum.1 + taken);
        if key < FOREVER {
            let sum = self.added_cpus.entry(key).or_default();
            (sum.0, sum.1) = (sum.0 + n, sum.1 + freed);
        }
    }

    /// The first time from `now`, up to `horizon`, at which something may
    /// come free (a time `earliest` looks at) and a run of `d` seconds
    /// could have `demand` CPUs, with the nodes a walk there touches on
    /// its way; `None` when there is none. A bound, so no job fits before
    /// it: at each instant, the free CPUs of `base`, plus every release up
    /// to then (`releases`, `added`: what each frees at most), less the
    /// CPUs of the plans started by then (their ends are releases), is at
    /// least what is free on the nodes at that instant; and a node's CPUs
    /// free for a run are at most those free at any instant of it. So
    /// the CPUs `earliest` sees free at a time are at most the least of
    /// that sum over the run. With `bf_resolution` 1 only (the times are
    /// the releases' own).
    fn room_at_least(
        &mut self,
        demand: i64,
        d: i64,
        horizon: Timestamp,
    ) -> Option<(Timestamp, usize)> {
        let mut steps = std::mem::take(&mut self.room_steps);
        let mut low = std::mem::take(&mut self.room_low);
        let found = self.room_at_least_in(&mut steps, &mut low, demand, d, horizon);
        self.room_steps = steps;
        self.room_low = low;
        found
    }

    /// `room_at_least` with its scratch (emptied first): `steps` and `low`.
    /// The steps are made as the look needs them, so that a look that
    /// ends early does not go through every release up to the horizon.
    fn room_at_least_in(
        &self,
        steps: &mut Vec<(Timestamp, i64, bool, usize)>,
        low: &mut std::collections::VecDeque<usize>,
        demand: i64,
        d: i64,
        horizon: Timestamp,
    ) -> Option<(Timestamp, usize)> {
        steps.clear();
        low.clear();
        let mut sums = RoomSteps {
            now: self.now,
            // Steps past `horizon` still bound runs that start by it.
            last: horizon.saturating_add(d),
            next: Some(self.now),
            free: self.base_free,
            touches: 0,
            releases: self.release_cpus.iter().peekable(),
            added: self.added_cpus.iter().peekable(),
            starts: self.plan_start_cpus.iter().peekable(),
        };
        // Each time that may come free, in order, against the least sum
        // over its run (`end`: the first step at or after the run's end;
        // `low`: the steps of the run whose sum is below every later one).
        let mut end = 0;
        let mut k = 0;
        loop {
            if k == steps.len() {
                steps.extend(sums.next());
            }
            let &(t, _, released, touches) = steps.get(k)?;
            // `now` is looked at whatever the horizon, as `earliest` does.
            if k > 0 && t > horizon {
                return None;
            }
            while low.front().is_some_and(|&j| j < k) {
                low.pop_front();
            }
            let until = t.saturating_add(d);
            loop {
                if end == steps.len() {
                    steps.extend(sums.next());
                }
                match steps.get(end) {
                    Some(&(at, free, _, _)) if at < until => {
                        while low.back().is_some_and(|&j| steps[j].1 >= free) {
                            low.pop_back();
                        }
                        low.push_back(end);
                        end += 1;
                    }
                    _ => break,
                }
            }
            let least = low.front().map_or(steps[k].1, |&j| steps[j].1);
            if released && least >= demand {
                return Some((t, touches));
            }
            k += 1;
        }
    }
}

/// The sums `room_at_least` looks at, from `now` on, one time after
/// another: (time, the free CPUs after every event at that time,
/// something comes free then, nodes touched up to then).
struct RoomSteps<'a, I: Iterator<Item = (&'a Timestamp, &'a (usize, i64))>> {
    now: Timestamp,
    /// No step from this time on.
    last: Timestamp,
    /// The next step's time (`None`: no more steps).
    next: Option<Timestamp>,
    free: i64,
    touches: usize,
    releases: std::iter::Peekable<I>,
    added: std::iter::Peekable<I>,
    starts: std::iter::Peekable<I>,
}

impl<'a, I: Iterator<Item = (&'a Timestamp, &'a (usize, i64))>> Iterator for RoomSteps<'a, I> {
    type Item = (Timestamp, i64, bool, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let t = self.next?;
        let mut released = t == self.now;
        while let Some((&at, &(nodes, cpus))) = self.releases.next_if(|e| *e.0 <= t) {
            self.free += cpus;
            self.touches += nodes;
            released |= at == t;
        }
        while let Some((&at, &(nodes, cpus))) = self.added.next_if(|e| *e.0 <= t) {
            self.free += cpus;
            self.touches += nodes;
            released |= at == t;
        }
        while let Some((_, &(nodes, cpus))) = self.starts.next_if(|e| *e.0 <= t) {
            self.free -= cpus;
            self.touches += nodes;
        }
        self.next = [
            self.releases.peek().map(|e| *e.0),
            self.added.peek().map(|e| *e.0),
            self.starts.peek().map(|e| *e.0),
        ]
        .into_iter()
        .flatten()
        .min()
        .filter(|&next| next < self.last);
        Some((t, self.free, released, self.touches))
    }
}

/// Notes that node `i` changed rank (`Timeline::moved`); past a few
/// hundred, the next use sorts every order again instead.
fn note_moved(moved: &mut Vec<usize>, all: &mut bool, i: usize) {
    if *all {
        return;
    }
    if moved.len() >= 256 {
        moved.clear();
        *all = true;
    } else {
        moved.push(i);
    }
}

/// `Timeline::overlay_free` for a count not yet known.
const UNKNOWN: i64 = i64::MIN;

/// Free-CPU counts up to this are told apart by `Timeline::hist`.
const HIST_MAX: usize = 256;

fn hist_slot(free: i64) -> usize {
    free.clamp(0, HIST_MAX as i64) as usize
}

/// CPUs a job needs at the least (a quick necessary test before placing).
pub fn demand_cpus(job: &JobRequest) -> i64 {
    let cpt = i64::from(job.cpus_per_task.max(1));
    let tasks = match job.ntasks_per_node {
        Some(tpn) => i64::from(tpn) * i64::from(job.min_nodes.max(1)),
        None => i64::from(job.ntasks.max(1)),
    };
    if job.exclusive {
        i64::from(job.min_nodes.max(1))
    } else {
        tasks * cpt
    }
}

/// One scheduling pass: which of `view.jobs` start now, and when and where
/// the others are planned to start. Deterministic: the same view, config
/// and `now` give the same plan, whatever order the jobs and running jobs
/// come in.
pub fn plan(view: &ClusterView, cfg: &SchedConfig, now: Timestamp) -> Plan {
    plan_with(view, cfg, now, &mut PassCache::default())
}

/// What one pass keeps for the next (`plan_with`): the timeline's memory,
/// its sorted node orders, and why jobs of each shape wait when they have no
/// plan (that depends only on the nodes' configuration and availability and
/// on the partitions, which are checked against the cache's at every pass).
#[derive(Clone, Debug, Default)]
pub struct PassCache {
    /// Per node: what `diagnose` reads of it, as the cache's entries saw it.
    nodes: Vec<NodeKey>,
    /// The partitions the cache's entries and node orders are for.
    parts: Vec<PartView>,
    /// Their sizes (`PartSize::all`), and whether every node is available,
    /// as of `nodes` and `parts`: made again only when either changes.
    part_sizes: Vec<PartSize>,
    all_up: bool,
    /// Why a job of each shape (time left out) waits when it has no plan.
    diagnosed: BTreeMap<ShapeKey, Unfit>,
    timeline: Option<Box<Timeline>>,
    /// The last pass, to go on with (`plan_more`), and what it learnt
    /// (`PassCache::cannot_start`).
    pass: Option<PassState>,
    /// The spread keys numbered (`Probe`, `PassState::spread_failed`).
    spread_ids: SpreadIds,
    /// What the caller said of the next pass's views
    /// (`PassCache::views_differ_only_on`).
    hint: Option<Vec<usize>>,
    /// Set by a caller that goes on with the next pass (`plan_more`):
    /// that pass leaves the jobs it defers (`BackfillOrder::Shortest`)
    /// undecided, for the caller to try after its own
    /// (`take_deferred`), instead of trying them at its end.
    pub hold_deferred: bool,
    /// Set by the caller before a pass: every pending job, the ones the
    /// pass is not given included (`plan_more`), may put its tasks on any
    /// free CPUs (`spreads`), and no node that holds running jobs refuses
    /// new ones (`gives_back_apart`). With `PlanOn::Auto` the pass plans
    /// over the pool only then (`pool_is_exact`).
    pub pool_exact: bool,
}

/// Whether a job with `ntasks` tasks for `d` seconds is covered by one of
/// the `failed` (tasks, seconds) of its spread shape that could not start:
/// no more tasks and no longer a limit.
fn covered(failed: &[(u32, i64)], ntasks: u32, d: i64) -> bool {
    failed.iter().any(|&(n, t)| n <= ntasks && t <= d)
}

/// What `PassCache::cannot_start` reads of a job, made once
/// (`PassCache::probe`): 16 bytes, so that a caller keeping one per
/// waiting job reads little to ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Its `spread_key`'s number in `SpreadIds` (`NO_SPREAD`: the pass
    /// learns nothing about it), valid in that numbering's `epoch`.
    spread: u32,
    epoch: u32,
    ntasks: u32,
    limit: i64,
}

/// `Probe::spread` of a job without a spread key.
const NO_SPREAD: u32 = u32::MAX;

/// Spread keys numbered, so that a probe and a pass's memo of the shapes
/// that could not start name a shape by a number. Kept by the cache from
/// pass to pass; emptied between passes past `SPREAD_IDS_MAX` keys, which
/// starts a new `epoch` (probes of an older one tell nothing).
#[derive(Clone, Debug, Default)]
struct SpreadIds {
    ids: std::collections::HashMap<ShapeKey, u32, ShapeHash>,
    epoch: u32,
}

/// Shape keys are hashed a word at a time: every job a pass decides looks
/// its shape up, and the keys are the scheduler's own, made from requests.
type ShapeHash = model::hash::WordHash;

/// Distinct spread keys kept at most (a deep queue has a few dozen).
const SPREAD_IDS_MAX: usize = 1 << 16;

impl SpreadIds {
    fn id(&mut self, key: ShapeKey) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(key).or_insert(next)
    }

    /// Empties a numbering grown past `SPREAD_IDS_MAX`: only between
    /// passes (a pass's memo holds numbers).
    fn trim(&mut self) {
        if self.ids.len() > SPREAD_IDS_MAX {
            self.ids.clear();
            self.epoch = self.epoch.wrapping_add(1);
        }
    }
}

/// A node's configuration and availability: what placement on an empty
/// node reads (`diagnose`).
#[derive(Clone, Debug, PartialEq)]
struct NodeKey {
    cpus: u32,
    real_memory: u64,
    weight: u32,
    available: bool,
    features: Vec<String>,
    gres: Vec<(String, Option<String>, usize)>,
}

fn node_key_matches(k: &NodeKey, n: &NodeView) -> bool {
    k.cpus == n.cpus
        && k.real_memory == n.real_memory
        && k.weight == n.weight
        && k.available == n.available
        && k.features == n.features
        && k.gres.len() == n.gres.len()
        && k.gres
            .iter()
            .zip(&n.gres)
            .all(|(a, b)| a.0 == b.name && a.1 == b.type_ && a.2 == b.indexes.len())
}

impl PassCache {
    /// Whether `job`, had it come after every job of the last pass
    /// (`plan_with` with this cache), could not have started now either:
    /// an earlier job of that pass with its `spread_key`, no more tasks
    /// and no longer a limit could not. False where that is not known
    /// (other jobs: only a pass tells). The nodes only fill up as a pass
    /// goes on, so a caller that left `job` out of a pass may keep its
    /// decision to wait when this holds.
    pub fn cannot_start(&self, job: &JobRequest) -> bool {
        let Some(key) = spread_key(job, &shape_key(job)) else {
            return false;
        };
        // A shape never numbered never failed.
        let Some(&spread) = self.spread_ids.ids.get(&key) else {
            return false;
        };
        self.cannot_start_as(&self.probe_as(job, spread))
    }

    /// `job`'s probe, for `cannot_start_as`.
    pub fn probe(&mut self, job: &JobRequest) -> Probe {
        let spread = spread_key(job, &shape_key(job)).map_or(NO_SPREAD, |k| self.spread_ids.id(k));
        self.probe_as(job, spread)
    }

    /// `job`'s probe, its spread key numbered `spread`.
    fn probe_as(&self, job: &JobRequest, spread: u32) -> Probe {
        Probe {
            spread,
            epoch: self.spread_ids.epoch,
            ntasks: job.ntasks,
            limit: limit_secs(job.time_limit),
        }
    }

    /// Whether a job on `partitions` that cannot start, had it come after
    /// every job of the last pass, would only have been told to wait there
    /// with reason Priority, without a plan: a blocked job waits before it
    /// in each of its partitions, and each has as many planned jobs as
    /// `cfg` plans (so it would get a plan only for its age, which the
    /// caller checks: `aged`).
    pub fn settled(&self, partitions: &[usize], cfg: &SchedConfig) -> bool {
        let Some(pass) = &self.pass else {
            return false;
        };
        let reserve = match cfg.policy {
            Policy::Fcfs => return false,
            Policy::Easy => {
                if pass.n_planned == 0 {
                    return false;
                }
                0
            }
            Policy::Backfill => match cfg.bf_job_part_count_reserve {
                Some(m) => m,
                None => return false,
            },
        };
        pass.blocked_with(partitions, reserve)
    }

    /// The partitions below 64 that `settled` holds for, as a bit set:
    /// `settled(ps)` for partitions all below 64 is `ps` not empty and
    /// every one of its bits set here.
    pub fn settled_parts(&self, cfg: &SchedConfig) -> u64 {
        let n = self
            .pass
            .as_ref()
            .map_or(0, |s| s.blocked_parts.len().min(64));
        (0..n)
            .filter(|&p| self.settled(&[p], cfg))
            .fold(0, |m, p| m | 1 << p)
    }

    /// Whether the last pass, gone on with `plan_more`, would try `job`
    /// only after every job it does not defer (`BackfillOrder::Shortest`):
    /// the caller then tries it after them, by its time limit.
    pub fn defers(&self, job: &JobRequest, cfg: &SchedConfig) -> bool {
        self.pass.as_ref().is_some_and(|p| p.defers(job, cfg))
    }

    /// The jobs the last pass deferred and left undecided
    /// (`hold_deferred`), as indices in its view's jobs, in priority
    /// order.
    pub fn take_deferred(&mut self) -> Vec<usize> {
        self.pass
            .as_mut()
            .map(|p| std::mem::take(&mut p.deferred))
            .unwrap_or_default()
    }

    /// Whether the last pass planned over the pool (`PlanOn`).
    pub fn last_pooled(&self) -> bool {
        self.timeline.as_ref().is_some_and(|t| t.pool_pass)
    }

    /// `cannot_start` for the job `probe` was made of (a caller that asks
    /// about the same jobs pass after pass keeps their probes).
    pub fn cannot_start_as(&self, probe: &Probe) -> bool {
        if probe.spread == NO_SPREAD || probe.epoch != self.spread_ids.epoch {
            return false;
        }
        self.pass
            .as_ref()
            .and_then(|p| p.spread_failed.get(&probe.spread))
            .is_some_and(|f| covered(f, probe.ntasks, probe.limit))
    }

    /// Forgets what no longer holds for `view`.
    /// Tells the cache that the views the next pass gets (`plan_with`,
    /// `plan_with_changes`) differ from the ones the last pass got only on
    /// the nodes at these indices, and that its partitions are the same:
    /// the pass then looks only at those nodes for what changed, instead
    /// of comparing every node and partition. Kept until a pass takes the
    /// views in. (Debug builds compare every node and check the hint.)
    pub fn views_differ_only_on(&mut self, nodes: Vec<usize>) {
        self.hint = Some(nodes);
    }

    fn check(&mut self, view: &ClusterView, hint: Option<&[usize]>) {
        let same_size = self.nodes.len() == view.nodes.len();
        let (same_nodes, same_parts) = match hint {
            // Only the nodes named can differ, and the partitions do not.
            Some(changed) if same_size => (
                changed
                    .iter()
                    .all(|&i| node_key_matches(&self.nodes[i], &view.nodes[i])),
                true,
            ),
            _ => (
                same_size
                    && self
                        .nodes
                        .iter()
                        .zip(view.nodes)
                        .all(|(k, n)| node_key_matches(k, n)),
                self.parts.as_slice() == view.parts,
            ),
        };
        debug_assert!(
            hint.is_none()
                || !same_size
                || (same_nodes
                    == self
                        .nodes
                        .iter()
                        .zip(view.nodes)
                        .all(|(k, n)| node_key_matches(k, n))
                    && self.parts.as_slice() == view.parts),
            "a hint left out a node or partition that changed"
        );
        if same_nodes && same_parts {
            return;
        }
        self.diagnosed.clear();
        if !same_parts {
            self.parts = view.parts.to_vec();
            if let Some(tl) = self.timeline.as_mut() {
                tl.orders = [Vec::new(), Vec::new()];
            }
        }
        if !same_nodes {
            self.nodes = view
                .nodes
                .iter()
                .map(|n| NodeKey {
                    cpus: n.cpus,
                    real_memory: n.real_memory,
                    weight: n.weight,
                    available: n.available,
                    features: n.features.clone(),
                    gres: n
                        .gres
                        .iter()
                        .map(|g| (g.name.clone(), g.type_.clone(), g.indexes.len()))
                        .collect(),
                })
                .collect();
        }
        self.part_sizes = PartSize::all(view.nodes, view.parts);
        self.all_up = view.nodes.iter().all(|n| n.available);
    }
}

/// `plan`, keeping what can be kept for the next pass in `cache` (the
/// controller passes the same cache every time). The plan is the one
/// `plan` makes.
pub fn plan_with(
    view: &ClusterView,
    cfg: &SchedConfig,
    now: Timestamp,
    cache: &mut PassCache,
) -> Plan {
    plan_on(view, Running::All(view.running), cfg, now, cache).expect("every running job given")
}

/// `plan_with`, given only the running jobs that changed since the last
/// pass made with `cache`: `changed` started or hold something else or
/// until another time, `gone` hold nothing any more; every other running
/// job holds what, and until when, that pass was given (`view.running` is
/// not read). The plan is the one `plan` makes with every running job.
/// `None` (and nothing planned) where the cache did not keep the last
/// pass's running jobs for these nodes: call `plan_with` with every one.
pub fn plan_with_changes(
    view: &ClusterView,
    changed: &[RunningJob],
    gone: &[JobId],
    cfg: &SchedConfig,
    now: Timestamp,
    cache: &mut PassCache,
) -> Option<Plan> {
    plan_on(view, Running::Changes { changed, gone }, cfg, now, cache)
}

/// Whether a job's tasks may go on any free CPUs of its partition, so
/// that a plan counting CPUs over the pool is exact for it: one CPU per
/// task, no node counts or tasks per node, no whole nodes, no memory that
/// a node could run out of (memory not a consumable resource, and no more
/// asked than any node has), no GRES, no node list, exclusion, feature
/// constraint or `--time-min`.
pub fn spreads(job: &JobRequest) -> bool {
    !job.memory_consumable
        && matches!(job.mem_per_node, None | Some(0))
        && job.mem_per_cpu.is_none()
        && job.mem_per_gpu.is_none()
        && !job.exclusive
        && job.ntasks_per_node.is_none()
        && job.min_nodes <= 1
        && job.max_nodes >= job.ntasks
        && job.cpus_per_task == 1
        && job.gres_per_node.is_empty()
        && job.gpus_total.is_none()
        && job.gpus_per_task.is_none()
        && job.cpus_per_gpu.is_none()
        && job.required_nodes.is_empty()
        && job.excluded_nodes.is_empty()
        && job.constraint.is_none()
        && job.time_min.is_none()
}

/// Whether a pass over `view` plans over the pool exactly what planning
/// on nodes could at best (`PlanOn::Auto`): one partition, up, holding
/// every node and setting no per-job node or memory limit (MaxNodes,
/// MinNodes above one, MaxMemPerNode, OverSubscribe=EXCLUSIVE); every job
/// of the pass spreads (`spreads`); and the caller vouches for the jobs it
/// may add with `plan_more` and for the nodes (`PassCache::pool_exact`:
/// no node that holds running jobs refuses new ones, whose jobs' CPUs
/// would not come back to the pool at their ends). Then
/// each task is an interval of time on one CPU, and intervals that never
/// overlap more than there are CPUs can be laid on the CPUs in the order
/// they start, the running jobs' first: jobs fit on the nodes over time
/// exactly where their CPUs at every instant fit the pool.
fn pool_is_exact(view: &ClusterView, cache: &PassCache) -> bool {
    let [part] = view.parts else {
        return false;
    };
    let exact = cache.pool_exact
        && part.up
        && part.max_nodes.is_none()
        && part.min_nodes <= 1
        && !part.exclusive
        && part.max_mem_per_node.is_none()
        && part.nodes.len() == view.nodes.len()
        && view.jobs.iter().all(spreads);
    debug_assert!(!exact || !view.nodes.iter().any(gives_back_apart));
    exact
}

fn plan_on(
    view: &ClusterView,
    running: Running,
    cfg: &SchedConfig,
    now: Timestamp,
    cache: &mut PassCache,
) -> Option<Plan> {
    if let Some(last) = cache.pass.take() {
        cache.diagnosed = last.diagnosed;
    }
    // The last pass's memo, which holds numbers, is gone.
    cache.spread_ids.trim();
    let hint = cache.hint.take();
    cache.check(view, hint.as_deref());
    let mut tl = cache
        .timeline
        .take()
        .unwrap_or_else(|| Box::new(Timeline::empty()));
    tl.pool_wanted = cfg.bf_plan != PlanOn::Nodes && cfg.policy != Policy::Fcfs;
    if !tl.fill(view.nodes, running, now, cfg.bf_resolution, hint.as_deref()) {
        cache.timeline = Some(tl);
        // Not taken in: the views the next pass gets are still compared
        // with the last ones taken in.
        cache.hint = hint;
        return None;
    }
    // Pool plans count every node of the one partition.
    let pool_ok = match cfg.bf_plan {
        PlanOn::Nodes => false,
        PlanOn::Pool => view.parts.len() == 1,
        PlanOn::Auto => pool_is_exact(view, cache),
    };
    if let Some(p) = tl.pool.as_ref().filter(|_| pool_ok) {
        tl.pool_offset = tl.base_free - p.value_at(now);
        tl.pool_pass = true;
    }
    let diagnosed = std::mem::take(&mut cache.diagnosed);
    debug_assert_eq!(cache.part_sizes, PartSize::all(view.nodes, view.parts));
    debug_assert_eq!(cache.all_up, view.nodes.iter().all(|n| n.available));
    let mut pass = PassState::new(view, cfg, now, diagnosed, &cache.part_sizes, cache.all_up);
    let mut plan = Plan::default();
    let mut deferred = Vec::new();
    for idx in priority_order(view.jobs, view.parts) {
        let job = &view.jobs[idx];
        if pass.defers(job, cfg) {
            deferred.push(idx);
            continue;
        }
        pass.decide(job, view, cfg, &mut tl, &mut plan, &mut cache.spread_ids);
    }
    if cache.hold_deferred {
        pass.deferred = deferred;
    } else {
        // Stable: equal limits stay in priority order.
        deferred.sort_by_key(|&i| limit_secs(view.jobs[i].time_limit));
        for idx in deferred {
            pass.decide(
                &view.jobs[idx],
                view,
                cfg,
                &mut tl,
                &mut plan,
                &mut cache.spread_ids,
            );
        }
    }
    cache.timeline = Some(tl);
    cache.pass = Some(pass);
    Some(plan)
}

/// Goes on with the pass `plan_with` last made with `cache`, as if the
/// jobs of `view` had been in it after every job it tried (the caller
/// knows that they come after them in the order the pass tries jobs: in
/// priority order, and with `BackfillOrder::Shortest` those the pass
/// `defers` after the others, by their time limit): their decisions, and
/// the plans and shortened limits they get. They are decided in priority
/// order, none deferred. `view` must hold the nodes, partitions and
/// running jobs of that pass; `None` when `cache` holds no pass.
pub fn plan_more(view: &ClusterView, cfg: &SchedConfig, cache: &mut PassCache) -> Option<Plan> {
    let pass = cache.pass.as_mut()?;
    let tl = cache.timeline.as_mut()?;
    let ids = &mut cache.spread_ids;
    let mut plan = Plan::default();
    for idx in priority_order(view.jobs, view.parts) {
        // A pass over the pool under `Auto` was vouched for every job.
        debug_assert!(
            !(tl.pool_pass && cfg.bf_plan == PlanOn::Auto) || spreads(&view.jobs[idx]),
            "job {} does not spread",
            view.jobs[idx].job_id
        );
        pass.decide(&view.jobs[idx], view, cfg, tl, &mut plan, ids);
    }
    Some(plan)
}

/// One pass's state from one job to the next (`PassState::decide`).
#[derive(Clone, Debug)]
struct PassState {
    now: Timestamp,
    horizon: Timestamp,
    part_sizes: Vec<PartSize>,
    healthy_empty: Option<Vec<NodeView>>,
    all_up: bool,
    blocked_parts: Vec<bool>,
    n_planned: u32,
    /// Planned starts per partition (`bf_job_part_count_reserve`).
    reserved: Vec<u32>,
    n_tested: u32,
    tested_per_user: BTreeMap<u32, u32>,
    /// What earlier jobs of the same shape learnt in this pass. The nodes
    /// only fill up as the pass goes on (starts and plans are added, never
    /// removed), so a later job of the same shape cannot start where an
    /// earlier one could not, nor be planned earlier than it was: arrays
    /// and loops of identical jobs cost one test each, not a sweep each.
    memo: BTreeMap<ShapeKey, ShapeMemo>,
    /// The same for jobs that differ only in their number of tasks and
    /// time limit, where tasks may go on any number of nodes
    /// (`spread_key`): one that could not start now with `n` tasks for `d`
    /// seconds tells that none with more tasks and a longer limit can,
    /// later in the pass (and `PassCache::cannot_start`).
    /// (By the key's number in the cache's `SpreadIds`.)
    spread_failed: BTreeMap<u32, Vec<(u32, i64)>>,
    /// Why jobs wait does not depend on their time limit once every
    /// partition of theirs takes that limit: one diagnosis per shape (kept
    /// between passes while the nodes and partitions stay as they are:
    /// `PassCache::diagnosed` between passes).
    diagnosed: BTreeMap<ShapeKey, Unfit>,
    /// The jobs (indices in the pass's view) it deferred and left
    /// undecided, in priority order (`PassCache::hold_deferred`).
    deferred: Vec<usize>,
}

impl PassState {
    /// `sizes` and `all_up`: the partitions' sizes and whether every node
    /// is available (`PassCache::check` keeps them).
    fn new(
        view: &ClusterView,
        cfg: &SchedConfig,
        now: Timestamp,
        diagnosed: BTreeMap<ShapeKey, Unfit>,
        sizes: &[PartSize],
        all_up: bool,
    ) -> PassState {
        let parts = view.parts;
        PassState {
            now,
            horizon: match cfg.policy {
                Policy::Backfill => now.saturating_add(i64::from(cfg.bf_window) * 60),
                // The reference policies plan without a window, as the textbook.
                Policy::Fcfs | Policy::Easy => FOREVER,
            },
            part_sizes: if cfg.bf_slowdown_reserve.is_some() {
                sizes.to_vec()
            } else {
                Vec::new()
            },
            healthy_empty: None,
            all_up,
            blocked_parts: vec![false; parts.len()],
            n_planned: 0,
            reserved: vec![0; parts.len()],
            n_tested: 0,
            tested_per_user: BTreeMap::new(),
            memo: BTreeMap::new(),
            spread_failed: BTreeMap::new(),
            diagnosed,
            deferred: Vec::new(),
        }
    }

    /// Whether the pass tries `job` only after every job it does not
    /// defer (`BackfillOrder::Shortest`): it can no longer get a plan
    /// (every partition of its has as many as `cfg` plans, and it is not
    /// due for one of its own), so it can only start where it fits now.
    fn defers(&self, job: &JobRequest, cfg: &SchedConfig) -> bool {
        let Some(m) = cfg.bf_job_part_count_reserve else {
            return false;
        };
        cfg.policy == Policy::Backfill
            && cfg.bf_order == BackfillOrder::Shortest
            && self.blocked_with(&job.partitions, m)
            && !aged(cfg, job, &self.part_sizes, self.now)
    }

    /// Whether each of `partitions` (at least one) has a blocked job and
    /// at least `reserve` planned ones.
    fn blocked_with(&self, partitions: &[usize], reserve: u32) -> bool {
        !partitions.is_empty()
            && partitions.iter().all(|&p| {
                self.blocked_parts.get(p).copied().unwrap_or(false)
                    && self.reserved.get(p).is_some_and(|r| *r >= reserve)
            })
    }

    /// Decides `job`, the next in the order the pass tries jobs (priority
    /// order, the deferred ones last: `defers`), into `plan`.
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &mut self,
        job: &JobRequest,
        view: &ClusterView,
        cfg: &SchedConfig,
        tl: &mut Timeline,
        plan: &mut Plan,
        spread_ids: &mut SpreadIds,
    ) {
        let (parts, now) = (view.parts, self.now);
        let shape = shape_key(job);
        let known = self.memo.get(&shape).cloned().unwrap_or_default();
        let behind = job.partitions.iter().any(|p| self.blocked_parts[*p]);
        let d = limit_secs(job.time_limit);
        let may_try = match cfg.policy {
            Policy::Fcfs => {
                let deep = !behind && self.n_tested >= cfg.default_queue_depth;
                plan.depth_reached |= deep;
                !behind && !deep
            }
            Policy::Easy | Policy::Backfill => {
                cfg.bf_max_job_test.is_none_or(|m| self.n_tested < m)
                    && cfg.bf_max_job_user.is_none_or(|m| {
                        self.tested_per_user.get(&job.user).copied().unwrap_or(0) < m
                    })
            }
        };
        if may_try {
            self.n_tested += 1;
            // Counted only where `bf_max_job_user` reads the counts.
            if cfg.bf_max_job_user.is_some() {
                *self.tested_per_user.entry(job.user).or_default() += 1;
            }
            let mut start = None;
            let spread = spread_key(job, &shape).map(|k| spread_ids.id(k));
            let dominated = spread.is_some_and(|k| {
                self.spread_failed
                    .get(&k)
                    .is_some_and(|f| covered(f, job.ntasks, d))
            });
            let tried = !known.failed_now && !dominated;
            if tried {
                start = tl.fits_now(job, parts, d).map(|a| (a, None));
                if start.is_none() {
                    start = shortened_start(tl, job, parts, d);
                }
            }
            if start.is_none() {
                self.memo.entry(shape.clone()).or_default().failed_now = true;
                // Only a job no partition refuses (a refusal may depend on
                // its node counts) failed for want of room.
                let refused = || {
                    job.partitions
                        .iter()
                        .any(|p| crate::placement::partition_refusal(job, &parts[*p]).is_some())
                };
                if let Some(k) = spread.filter(|_| tried && !refused()) {
                    let f = self.spread_failed.entry(k).or_default();
                    f.retain(|&(n, t)| !(n >= job.ntasks && t >= d));
                    f.push((job.ntasks, d));
                }
            }
            if let Some((alloc, minutes)) = start {
                let run_for = minutes.map_or(d, |m| i64::from(m) * 60);
                tl.start(run_for, &alloc);
                if let Some(m) = minutes {
                    plan.time_limits.insert(job.job_id, m);
                }
                plan.decisions.push((job.job_id, Decision::Start(alloc)));
                return;
            }
        }
        let wants_plan = may_try
            && match cfg.policy {
                Policy::Fcfs => false,
                Policy::Easy => self.n_planned == 0,
                Policy::Backfill => {
                    cfg.bf_job_part_count_reserve
                        .is_none_or(|m| job.partitions.iter().any(|p| self.reserved[*p] < m))
                        || aged(cfg, job, &self.part_sizes, now)
                }
            };
        let mut unfit = None;
        let found = match known.planned_from {
            // An identical job found no plan: neither will this one.
            Some(None) => None,
            not_before if wants_plan => {
                let from = not_before.flatten().unwrap_or(now);
                let found = tl.earliest(job, parts, d, from, self.horizon);
                self.memo.entry(shape.clone()).or_default().planned_from =
                    Some(found.as_ref().map(|(t, _)| *t));
                found
            }
            _ => None,
        };
        if wants_plan {
            if let Some((start, alloc)) = found {
                if tl.pool_pass {
                    tl.reserve_cpus(start, d, demand_cpus(job));
                } else {
                    tl.reserve(start, d, &alloc);
                }
                self.n_planned += 1;
                self.reserved[alloc.partition] += 1;
                plan.planned.insert(job.job_id, Planned { start, alloc });
                unfit = Some(Unfit::Busy);
            }
        }
        let unfit = match (unfit, known.unfit) {
            (Some(u), _) | (None, Some(u)) => u,
            (None, None) => {
                let u = self.diagnose(job, view, &shape);
                self.memo.entry(shape).or_default().unfit = Some(u);
                u
            }
        };
        let reason = match unfit {
            Unfit::Never(reason) => reason,
            Unfit::NodesUnavailable => PendingReason::NodesDown,
            Unfit::Busy => {
                for p in &job.partitions {
                    self.blocked_parts[*p] = true;
                }
                if behind {
                    PendingReason::Priority
                } else {
                    PendingReason::Resources
                }
            }
        };
        plan.decisions.push((job.job_id, Decision::Wait(reason)));
    }

    /// Why `job` (of `shape`) waits when it got no plan.
    fn diagnose(&mut self, job: &JobRequest, view: &ClusterView, shape: &ShapeKey) -> Unfit {
        let parts = view.parts;
        let timeless = job
            .partitions
            .iter()
            .all(|p| crate::placement::partition_refusal(job, &parts[*p]).is_none());
        let key = timeless.then(|| without_time(shape));
        if let Some(u) = key.as_ref().and_then(|k| self.diagnosed.get(k)) {
            return *u;
        }
        let empty: &[NodeView] = if self.all_up {
            &[]
        } else {
            self.healthy_empty
                .get_or_insert_with(|| emptied(view.nodes))
        };
        let u = diagnose(job, parts, view.nodes, empty);
        if let Some(k) = key {
            self.diagnosed.insert(k, u);
        }
        u
    }
}

/// Whether `job` has waited long enough for a plan of its own
/// (`bf_age_reserve`, `bf_slowdown_reserve`; backfill only).
/// `sizes`: each partition's, from [`PartSize::all`].
pub fn aged(cfg: &SchedConfig, job: &JobRequest, sizes: &[PartSize], now: Timestamp) -> bool {
    let share = || {
        let mine = job.partitions.iter().map(|&p| sizes[p]);
        Share::of(demand_cpus(job), job.exclusive, mine)
    };
    due_reservation(cfg, job.submit_time, job.time_limit, share, now)
}

/// A partition's size, for [`Share`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartSize {
    /// Its nodes' CPUs.
    pub cpus: i64,
    /// Its nodes.
    pub nodes: i64,
}

impl PartSize {
    /// Every partition's size, in `parts`' order.
    pub fn all(nodes: &[NodeView], parts: &[PartView]) -> Vec<PartSize> {
        parts
            .iter()
            .map(|p| PartSize {
                cpus: p
                    .nodes
                    .iter()
                    .map(|n| i64::from(nodes[n.0 as usize].cpus))
                    .sum(),
                nodes: p.nodes.len() as i64,
            })
            .collect()
    }
}

/// What a job asks for against the largest of its partitions: CPUs of CPUs,
/// or nodes of nodes for whole-node jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    asks: i64,
    of: i64,
}

impl Share {
    /// `demand` as [`demand_cpus`] counts it (nodes when `exclusive`).
    pub fn of(demand: i64, exclusive: bool, parts: impl Iterator<Item = PartSize>) -> Share {
        let of = parts
            .map(|p| if exclusive { p.nodes } else { p.cpus })
            .max()
            .unwrap_or(0);
        Share { asks: demand, of }
    }

    /// At least `percent` percent.
    fn at_least(self, percent: u32) -> bool {
        self.asks.saturating_mul(100) >= self.of.saturating_mul(i64::from(percent))
    }
}

/// Whether a blocked job submitted at `submit` with `limit`, asking for
/// `share` of its partitions (computed only when needed), has waited long
/// enough at `now` for a plan of its own (`bf_age_reserve`,
/// `bf_slowdown_reserve`; backfill only).
pub fn due_reservation(
    cfg: &SchedConfig,
    submit: Timestamp,
    limit: TimeLimit,
    share: impl FnOnce() -> Share,
    now: Timestamp,
) -> bool {
    if cfg.policy != Policy::Backfill {
        return false;
    }
    let waited = now.saturating_sub(submit);
    let by_age = cfg.bf_age_reserve.is_some_and(|a| waited >= i64::from(a));
    let by_slowdown = || {
        cfg.bf_slowdown_reserve.is_some_and(|f| {
            let l = limit_secs(limit).max(1);
            l != FOREVER && waited.saturating_add(l) >= l.saturating_mul(i64::from(f))
        }) && share().at_least(cfg.bf_slowdown_reserve_width)
    };
    by_age || by_slowdown()
}

/// What one pass learnt about jobs of one shape.
#[derive(Clone, Debug, Default)]
struct ShapeMemo {
    /// One could not start now.
    failed_now: bool,
    /// One was planned from this time on (`Some(None)`: no plan found).
    planned_from: Option<Option<Timestamp>>,
    /// Why one waits, when it had no plan.
    unfit: Option<Unfit>,
}

/// Everything about a job's request that placement reads: jobs with the
/// same key fit in the same places. Plain CPU jobs (the common case, and
/// every simulated trace job) get a key of numbers; the rest their whole
/// request in text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum ShapeKey {
    Plain {
        partitions: Parts,
        numbers: [u64; 9],
        flags: (bool, bool),
    },
    Other(String),
}

fn limit_key(t: Option<TimeLimit>) -> u64 {
    match t {
        None => 0,
        Some(TimeLimit::Unlimited) => u64::MAX,
        Some(TimeLimit::Minutes(m)) => u64::from(m) + 1,
    }
}

/// The key with the time limits left out (plain jobs only; others keep
/// theirs, so they are diagnosed per limit).
fn without_time(key: &ShapeKey) -> ShapeKey {
    match key {
        ShapeKey::Plain {
            partitions,
            numbers,
            flags,
        } => {
            let mut numbers = *numbers;
            numbers[7] = 0;
            numbers[8] = 0;
            ShapeKey::Plain {
                partitions: partitions.clone(),
                numbers,
                flags: *flags,
            }
        }
        other => other.clone(),
    }
}

/// A job's candidate partitions in a shape key: one partition (the usual
/// case) without an allocation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Parts {
    One(usize),
    Many(Vec<usize>),
}

fn parts_key(parts: &[usize]) -> Parts {
    match parts {
        [one] => Parts::One(*one),
        _ => Parts::Many(parts.to_vec()),
    }
}

fn shape_key(job: &JobRequest) -> ShapeKey {
    let plain = job.gres_per_node.is_empty()
        && job.gpus_total.is_none()
        && job.gpus_per_task.is_none()
        && job.cpus_per_gpu.is_none()
        && job.mem_per_gpu.is_none()
        && job.required_nodes.is_empty()
        && job.excluded_nodes.is_empty()
        && job.constraint.is_none();
    if plain {
        return ShapeKey::Plain {
            partitions: parts_key(&job.partitions),
            numbers: [
                u64::from(job.min_nodes),
                u64::from(job.max_nodes),
                u64::from(job.ntasks),
                job.ntasks_per_node.map_or(0, |n| u64::from(n) + 1),
                u64::from(job.cpus_per_task),
                job.mem_per_node.map_or(0, |m| m.saturating_add(1)),
                job.mem_per_cpu.map_or(0, |m| m.saturating_add(1)),
                limit_key(Some(job.time_limit)),
                limit_key(job.time_min),
            ],
            flags: (job.exclusive, job.memory_consumable),
        };
    }
    let shape = JobRequest {
        job_id: JobId(0),
        priority: 0,
        submit_time: 0,
        user: 0,
        ..job.clone()
    };
    ShapeKey::Other(format!("{shape:?}"))
}

#[cfg(test)]
thread_local! {
    /// Tests turn the memo of `spread_key` off to compare plans with it
    /// and without it.
    pub(crate) static NO_SPREAD_MEMO: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The key under which jobs that differ only in tasks and time limit share
/// what a pass learns about starting now, for jobs whose room now is the
/// sum over nodes of the tasks each can take (which does not depend on how
/// many tasks the job has): plain CPU jobs (no GRES, node lists or
/// constraints), not exclusive, with no `--time-min`, no tasks-per-node,
/// at least one node and as many nodes as tasks allowed (so each node that
/// takes a task may be used). For two such jobs with the same key, the
/// one with more tasks and a longer limit fits now only where the other
/// does: its interval overlaps every plan the other's does, and the nodes
/// only fill up as the pass goes on.
fn spread_key(job: &JobRequest, shape: &ShapeKey) -> Option<ShapeKey> {
    #[cfg(test)]
    if NO_SPREAD_MEMO.with(|c| c.get()) {
        return None;
    }
    let ShapeKey::Plain {
        partitions,
        numbers,
        flags,
    } = shape
    else {
        return None;
    };
    let spread = !job.exclusive
        && job.time_min.is_none()
        && job.ntasks_per_node.is_none()
        && job.min_nodes <= 1
        && job.max_nodes >= job.ntasks
        && job.cpus_per_gpu.is_none()
        && job.mem_per_gpu.is_none();
    if !spread {
        return None;
    }
    let mut numbers = *numbers;
    // Max nodes, tasks and time limit.
    numbers[1] = 0;
    numbers[2] = 0;
    numbers[7] = 0;
    Some(ShapeKey::Plain {
        partitions: partitions.clone(),
        numbers,
        flags: *flags,
    })
}

/// `--time-min`: the longest limit between the job's minimum and its limit
/// that lets it start now in the gap before a plan, with that limit.
fn shortened_start(
    tl: &mut Timeline,
    job: &JobRequest,
    parts: &[PartView],
    d: i64,
) -> Option<(Allocation, Option<u32>)> {
    let min = limit_secs(job.time_min?);
    if min >= d {
        return None;
    }
    let now = tl.now;
    // The gaps end where plans start; try the longest first.
    let gaps: Vec<i64> = tl
        .plan_starts
        .range(now.saturating_add(min + 1)..now.saturating_add(d))
        .rev()
        .map(|(s, _)| (s - now) / 60 * 60)
        .filter(|g| *g >= min && *g > 0)
        .take(16)
        .collect();
    gaps.into_iter().find_map(|g| {
        tl.fits_now(job, parts, g)
            .map(|a| (a, Some((g / 60) as u32)))
    })
}

#[cfg(test)]
mod kept_timeline_tests {
    use super::*;
    use proptest::prelude::*;

    fn plain_node() -> NodeView {
        NodeView {
            name: String::new(),
            cpus: 8,
            real_memory: 1000,
            alloc_cpus: 0,
            alloc_mem: 0,
            gres: vec![],
            features: vec![],
            weight: 1,
            available: true,
            exclusive_in_use: false,
            n_jobs: 0,
        }
    }

    /// What a timeline holds for its running jobs, in an order of its own:
    /// each node's shares (until, node, CPUs, exclusive) sorted, and the
    /// release times.
    type Held = (
        Vec<Vec<(Timestamp, u32, u32, bool)>>,
        BTreeMap<(Timestamp, usize), (u32, i64)>,
        BTreeMap<Timestamp, (usize, i64)>,
    );

    /// The per-time sums beside `added` and `plan_starts` are theirs.
    fn assert_sums(tl: &Timeline) {
        let added: BTreeMap<Timestamp, (usize, i64)> = tl
            .added
            .iter()
            .map(|(&t, v)| (t, (v.len(), v.iter().map(|e| e.1).sum())))
            .collect();
        assert_eq!(added, tl.added_cpus);
        let starts: Vec<(Timestamp, usize)> =
            tl.plan_starts.iter().map(|(&t, v)| (t, v.len())).collect();
        let summed: Vec<(Timestamp, usize)> =
            tl.plan_start_cpus.iter().map(|(&t, s)| (t, s.0)).collect();
        assert_eq!(starts, summed);
        // Each node's running holds summed, and the end of its last plan.
        for (i, on) in tl.running_on.iter().enumerate() {
            assert_eq!(tl.run_sum[i], RunSum::of(on), "node {i}");
            let last = tl.node_plans(i).map(|h| h.until).max();
            let ends: Vec<Timestamp> = tl.node_plans(i).map(|h| h.until).collect();
            assert!(ends.windows(2).all(|w| w[0] >= w[1]), "node {i}: {ends:?}");
            assert_eq!(tl.plan_last[i], last.unwrap_or(Timestamp::MIN), "node {i}");
        }
    }

    impl Timeline {
        /// Node `i`'s planned shares, the last to end first.
        fn node_plans(&self, i: usize) -> impl Iterator<Item = &PlanHold> + '_ {
            let mut k = self.plan_head[i];
            std::iter::from_fn(move || {
                let h = self.plans.get(k as usize)?;
                k = h.older;
                Some(h)
            })
        }
    }

    fn holds(tl: &Timeline) -> Held {
        let on = tl
            .running_on
            .iter()
            .map(|v| {
                let mut v: Vec<_> = v
                    .iter()
                    .map(|h| (h.until, h.share.node.0, h.share.cpus, h.exclusive))
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        // The sums by time are the releases', summed.
        let mut sums: BTreeMap<Timestamp, (usize, i64)> = BTreeMap::new();
        for (&(t, _), &(_, cpus)) in &tl.releases {
            let sum = sums.entry(t).or_default();
            sum.0 += 1;
            sum.1 += cpus;
        }
        assert_eq!(sums, tl.release_cpus);
        (on, tl.releases.clone(), tl.release_cpus.clone())
    }

    /// `Timeline::earliest` as it was before the walk to the first time
    /// with room and the kept overlay: from `base`, the plans a run of `d`
    /// overlaps laid on, then every time something may come free visited
    /// in turn, its nodes rebuilt there, the job tried wherever the free
    /// CPUs suffice.
    fn earliest_stepping(
        tl: &mut Timeline,
        job: &JobRequest,
        parts: &[PartView],
        d: i64,
        not_before: Timestamp,
        horizon: Timestamp,
    ) -> Option<(Timestamp, Allocation)> {
        tl.reset();
        let (now, demand) = (tl.now, demand_cpus(job));
        let overlapping: Vec<usize> = tl
            .plan_starts
            .range(..now.saturating_add(d))
            .flat_map(|(_, n)| n.iter().copied())
            .collect();
        for i in overlapping {
            tl.recompute(i, now, d);
        }
        let mut t = now;
        let found = loop {
            if tl.free >= demand && t >= not_before && tl.may_fit(job) {
                if let Some(a) = tl.place_at(job, parts, t == now) {
                    break Some((t, a));
                }
            }
            if t >= horizon {
                break None;
            }
            let after_t = (Bound::Excluded((t, usize::MAX)), Bound::Unbounded);
            let next_running = tl.releases.range(after_t).next().map(|(e, _)| e.0);
            let next_added = tl
                .added
                .range((Bound::Excluded(t), Bound::Unbounded))
                .next()
                .map(|(k, _)| *k);
            let Some(next) = next_running.into_iter().chain(next_added).min() else {
                break None;
            };
            if next > horizon {
                break None;
            }
            let mut touched: Vec<usize> = tl
                .releases
                .range((next, 0)..=(next, usize::MAX))
                .map(|(e, _)| e.1)
                .collect();
            if let Some(nodes) = tl.added.get(&next) {
                touched.extend(nodes.iter().map(|n| n.0));
            }
            touched.extend(
                tl.plan_starts
                    .range(t.saturating_add(d)..next.saturating_add(d))
                    .flat_map(|(_, n)| n.iter().copied()),
            );
            for i in touched {
                tl.recompute(i, next, d);
            }
            t = next;
        };
        tl.reset();
        found
    }

    fn plain_job(id: u32, tasks: u32, minutes: u32) -> JobRequest {
        JobRequest {
            job_id: JobId(id),
            priority: 1,
            submit_time: 0,
            partitions: vec![0],
            min_nodes: 1,
            max_nodes: tasks,
            ntasks: tasks,
            ntasks_per_node: None,
            cpus_per_task: 1,
            mem_per_node: None,
            mem_per_cpu: None,
            mem_per_gpu: None,
            gres_per_node: vec![],
            gpus_total: None,
            gpus_per_task: None,
            cpus_per_gpu: None,
            exclusive: false,
            required_nodes: vec![],
            excluded_nodes: vec![],
            constraint: None,
            time_limit: TimeLimit::Minutes(minutes),
            time_min: None,
            user: 1,
            memory_consumable: false,
        }
    }

    proptest! {

        /// A timeline kept from the last pass, given nodes of which some
        /// changed (CPUs in use, availability), holds after `fill` what a
        /// new one holds: every node's state, the free CPUs and their
        /// histogram, each node's rank for plans and for starts now; and
        /// after plans and starts, both find the same for a job.
        #[test]
        fn a_kept_timeline_takes_the_nodes_a_new_one_takes(
            passes in prop::collection::vec(
                (
                    // Per node: CPUs in use, available.
                    prop::collection::vec((0u32..9, prop::bool::weighted(0.9)), 6),
                    // Plans: (node, CPUs, start from now, length).
                    prop::collection::vec((0u32..6, 1u32..5, 0i64..300, 1i64..300), 0..4),
                    // Starts: (node, CPUs, limit).
                    prop::collection::vec((0u32..6, 1u32..3, 1i64..400), 0..3),
                    // A job tried after them: (tasks, minutes).
                    (1u32..20, 1u32..8),
                    1i64..100,
                ),
                1..8,
            )
        ) {
            let parts = vec![crate::tests::part(6)];
            let on = |node: u32, cpus: u32| Allocation {
                partition: 0,
                nodes: vec![NodeAlloc { node: NodeIdx(node), cpus, mem: 0, tasks: cpus, gres: vec![] }],
                exclusive: false,
            };
            let state = |tl: &Timeline| {
                let uses = |v: &[NodeView]| -> Vec<(u32, u64, u32, bool, bool)> {
                    v.iter()
                        .map(|n| (n.alloc_cpus, n.alloc_mem, n.n_jobs, n.available, n.exclusive_in_use))
                        .collect()
                };
                let planned: Vec<usize> =
                    (0..tl.plan_head.len()).map(|i| tl.node_plans(i).count()).collect();
                (
                    (uses(&tl.base), uses(&tl.work), tl.free, tl.base_free),
                    (tl.hist.clone(), tl.hist_top, tl.free_now.clone(), tl.next_plan.clone()),
                    (planned, tl.dirty.len(), tl.overlay),
                )
            };
            let mut kept = Timeline::empty();
            let mut now = 0;
            for (states, plans, starts, (tasks, minutes), step) in passes {
                now += step;
                let nodes: Vec<NodeView> = states
                    .iter()
                    .map(|&(used, up)| NodeView {
                        alloc_cpus: used,
                        n_jobs: u32::from(used > 0),
                        available: up,
                        ..plain_node()
                    })
                    .collect();
                let mut fresh = Timeline::empty();
                fresh.fill(&nodes, Running::All(&[]), now, 1, None);
                kept.fill(&nodes, Running::All(&[]), now, 1, None);
                prop_assert_eq!(state(&kept), state(&fresh));
                let job = plain_job(1, tasks, minutes);
                let d = i64::from(minutes) * 60;
                let mut found = Vec::new();
                for tl in [&mut kept, &mut fresh] {
                    for &(node, cpus, from, len) in &plans {
                        tl.reserve(now + from, len, &on(node, cpus));
                    }
                    for &(node, cpus, limit) in &starts {
                        tl.start(limit, &on(node, cpus));
                    }
                    let start = tl.fits_now(&job, &parts, d);
                    found.push((start, tl.earliest(&job, &parts, d, now, FOREVER)));
                }
                prop_assert_eq!(&found[0], &found[1]);
                prop_assert_eq!(state(&kept), state(&fresh));
                assert_sums(&kept);
            }
        }


        /// The walk to the first time a job could have room, and the plans
        /// kept laid on from one job that may start now to the next, find
        /// what stepping through every time finds: the same start and
        /// nodes for every job tried and planned in turn, with
        /// `bf_resolution` 1 (exact release times) and above (rounded).
        #[test]
        fn the_walk_to_room_finds_what_stepping_finds(
            run_specs in prop::collection::vec((0u32..6, 1u32..9, 1i64..3000, any::<bool>()), 0..30),
            tries in prop::collection::vec((1u32..49, 1u32..60, any::<bool>(), 0i64..4000), 1..12),
            resolution in prop::sample::select(vec![1u32, 60]),
        ) {
            let nodes: Vec<NodeView> = (0..6).map(|_| plain_node()).collect();
            let parts = vec![crate::tests::part(6)];
            let now = 1_000;
            let mut nodes = nodes;
            let mut running = Vec::new();
            for (k, (on, cpus, end, exclusive)) in run_specs.into_iter().enumerate() {
                let n = &mut nodes[on as usize];
                let cpus = cpus.min(n.cpus - n.alloc_cpus);
                if cpus == 0 || n.exclusive_in_use {
                    continue;
                }
                // A job alone on its node may hold it whole, with fewer CPUs.
                let exclusive = exclusive && n.n_jobs == 0;
                n.alloc_cpus += cpus;
                n.n_jobs += 1;
                n.exclusive_in_use = exclusive;
                running.push(RunningJob {
                    job_id: JobId(k as u32 + 1),
                    end: now + end,
                    alloc: Cow::Owned(Allocation {
                        partition: 0,
                        nodes: vec![NodeAlloc { node: NodeIdx(on), cpus, mem: 0, tasks: cpus, gres: vec![] }],
                        exclusive,
                    }),
                    version: None,
                });
            }
            let mut tl = Timeline::empty();
            tl.fill(&nodes, Running::All(&running), now, resolution, None);
            for (k, (tasks, minutes, plan, after)) in tries.into_iter().enumerate() {
                let job = plain_job(100 + k as u32, tasks, minutes);
                let d = i64::from(minutes) * 60;
                let mut reference = tl.clone();
                if plan {
                    let from = now + after;
                    let want = earliest_stepping(&mut reference, &job, &parts, d, from, FOREVER);
                    let got = tl.earliest(&job, &parts, d, from, FOREVER);
                    prop_assert_eq!(&got, &want);
                    if let Some((start, alloc)) = got {
                        tl.reserve(start, d, &alloc);
                        assert_sums(&tl);
                    }
                } else {
                    let want = earliest_stepping(&mut reference, &job, &parts, d, now, now)
                        .map(|(_, a)| a);
                    let got = tl.fits_now(&job, &parts, d);
                    prop_assert_eq!(&got, &want);
                    if let Some(alloc) = got {
                        tl.start(d, &alloc);
                    }
                }
            }
        }
        /// A timeline kept from pass to pass, changed by the jobs that
        /// started, ended or changed their end since, holds what one set
        /// up from scratch for the same running jobs holds, also after the
        /// starts a pass made (which the next pass is given as running).
        #[test]
        fn a_kept_timeline_holds_what_a_rebuilt_one_holds(
            passes in prop::collection::vec(
                (
                    // Running jobs: (id, first node, nodes, cpus, end from now).
                    prop::collection::vec((0u32..12, 0u32..6, 1u32..3, 1u32..4, -5i64..400), 0..10),
                    // Starts made in the pass: (first node, cpus, limit).
                    prop::collection::vec((0u32..6, 1u32..4, 1i64..400), 0..3),
                    1i64..100,
                    1u32..3,
                ),
                1..8,
            )
        ) {
            let nodes: Vec<NodeView> = (0..6).map(|_| plain_node()).collect();
            let mut kept = Timeline::empty();
            // Given only the changes since the last pass, where it can be.
            let mut delta = Timeline::empty();
            let mut last: Vec<RunningJob<'static>> = Vec::new();
            let mut now = 0;
            for (run_specs, starts, step, resolution) in passes {
                now += step;
                // One entry per id (the first), by id, as the engine gives them.
                let mut running: Vec<RunningJob<'static>> = Vec::new();
                let mut specs = run_specs.clone();
                specs.sort_by_key(|s| s.0);
                specs.dedup_by_key(|s| s.0);
                for (id, first, n, cpus, end) in specs {
                    let alloc = Allocation {
                        partition: 0,
                        nodes: (first..(first + n).min(6))
                            .map(|i| NodeAlloc { node: NodeIdx(i), cpus, mem: 0, tasks: cpus, gres: vec![] })
                            .collect(),
                        exclusive: false,
                    };
                    running.push(RunningJob {
                        job_id: JobId(id),
                        end: if end > 390 { FOREVER } else { now + end },
                        alloc: Cow::Owned(alloc),
                        version: None,
                    });
                }
                let mut fresh = Timeline::empty();
                fresh.fill(&nodes, Running::All(&running), now, resolution, None);
                kept.fill(&nodes, Running::All(&running), now, resolution, None);
                prop_assert_eq!(holds(&kept), holds(&fresh));
                assert_sums(&kept);
                prop_assert_eq!(kept.kept.len(), running.len());
                let changed: Vec<RunningJob> = running
                    .iter()
                    .filter(|r| !last.iter().any(|l| l.job_id == r.job_id && l.end == r.end && l.alloc == r.alloc))
                    .cloned()
                    .collect();
                let gone: Vec<JobId> = last
                    .iter()
                    .filter(|l| !running.iter().any(|r| r.job_id == l.job_id))
                    .map(|l| l.job_id)
                    .collect();
                let changes = Running::Changes { changed: &changed, gone: &gone };
                if !delta.fill(&nodes, changes, now, resolution, None) {
                    delta.fill(&nodes, Running::All(&running), now, resolution, None);
                }
                prop_assert_eq!(holds(&delta), holds(&fresh));
                assert_sums(&delta);
                prop_assert_eq!(delta.kept.len(), running.len());
                for (first, cpus, limit) in starts {
                    let alloc = Allocation {
                        partition: 0,
                        nodes: vec![NodeAlloc { node: NodeIdx(first), cpus, mem: 0, tasks: cpus, gres: vec![] }],
                        exclusive: false,
                    };
                    kept.start(limit, &alloc);
                    delta.start(limit, &alloc);
                }
                last = running;
            }
        }
    }
}
