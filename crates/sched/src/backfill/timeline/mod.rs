//! The timeline one pass works on: the nodes now (`base`), the nodes as a
//! job tried at some time sees them (`work`), the running jobs' shares
//! and release times kept from pass to pass, the pass's starts and plans,
//! and the CPUs summed over the partition (`pool`) for pool planning.
//!
//! - `fill`: setting it up for a pass, keeping the running jobs that did
//!   not change since the last one;
//! - `search`: where and when a job fits (`earliest`, `fits_now`);
//! - `holds`: laying the pass's starts and plans on.

mod fill;
mod holds;
mod search;

use crate::backfill::{demand_cpus, RunningJob, FOREVER};
use crate::placement::{Allocation, JobRequest, NodeAlloc, NodeView};
use crate::profile::Profile;
use crate::NodeIdx;
use model::{JobId, Timestamp};
use std::collections::BTreeMap;

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
    /// The partition the job runs in: its end gives its CPUs back to the
    /// partition's `MaxCPUsPerNode` budget on the node
    /// (`NodeView::part_cpus`, where the node counts one for it).
    part: u32,
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
pub(super) enum Running<'a, 'b> {
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
    // A capped partition's count (`NodeView::part_cpus`) is raised by
    // `Timeline::hold_part_cpus` (and the caller's views), lowered here
    // at the hold's end.
    if !add && !n.part_cpus.is_empty() {
        if let Some((_, c)) = n.part_cpus.iter_mut().find(|(p, _)| *p == h.part) {
            *c = c.saturating_sub(s.cpus);
        }
    }
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
        && b.cpu_ids_in_use == n.cpu_ids_in_use
        && b.threads == n.threads
        && b.part_cpus == n.part_cpus
}

/// Copies what is in use (not the configuration) from `from` to `to`.
#[inline]
fn copy_use(to: &mut NodeView, from: &NodeView) {
    to.alloc_cpus = from.alloc_cpus;
    to.alloc_mem = from.alloc_mem;
    to.n_jobs = from.n_jobs;
    to.exclusive_in_use = from.exclusive_in_use;
    copy_vec(&mut to.cpu_ids_in_use, &from.cpu_ids_in_use);
    copy_vec(&mut to.part_cpus, &from.part_cpus);
    for (t, f) in to.gres.iter_mut().zip(&from.gres) {
        copy_vec(&mut t.used, &f.used);
    }
}

/// The timeline one pass works on.
#[derive(Clone, Debug)]
pub(super) struct Timeline {
    pub(super) now: Timestamp,
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
    pub(super) base_free: i64,
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
    pub(super) plan_starts: BTreeMap<Timestamp, Vec<usize>>,
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
    pub(super) orders: [Vec<Vec<NodeIdx>>; 2],
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
    pub(super) pool: Option<Profile>,
    pub(super) pool_wanted: bool,
    /// This pass plans over `pool` (`plan_on`): `earliest` and `fits_now`
    /// count CPUs, `reserve_cpus` lays plans on, `work` stays `base`.
    pub(super) pool_pass: bool,
    /// `base_free` less the profile's value now: the CPUs free at `t` are
    /// `pool_offset` plus its value at `t`.
    pub(super) pool_offset: i64,
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
    pub(super) fn empty() -> Self {
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

    fn round_up(&self, time: Timestamp) -> Timestamp {
        if time >= FOREVER {
            return FOREVER;
        }
        let r = self.resolution;
        (time + r - 1).div_euclid(r) * r
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
        if t >= run.max_until && !run.gres && work.part_cpus.is_empty() {
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

#[cfg(test)]
mod kept_timeline_tests;
