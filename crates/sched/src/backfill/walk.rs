//! The walk: one pass over the pending jobs in priority order
//! (`plan_on`), each job decided by `PassState::decide` against the
//! timeline: start now, plan for later, or wait with a reason.

use super::cache::{covered, PassCache, SpreadIds};
use super::shape::{shape_key, spread_key, without_time, ShapeKey, ShapeMemo};
use super::timeline::{Running, Timeline};
use super::{
    aged, demand_cpus, gives_back_apart, limit_secs, BackfillOrder, ClusterView, PartSize, Plan,
    PlanOn, Planned, Policy, RunningJob, SchedConfig, FOREVER,
};
use crate::ordering::{priority_order, Decision};
use crate::placement::{diagnose, emptied, Allocation, JobRequest, NodeView, PartView, Unfit};
use model::{JobId, PendingReason, Timestamp};
use std::collections::BTreeMap;

/// One scheduling pass: which of `view.jobs` start now, and when and where
/// the others are planned to start. Deterministic: the same view, config
/// and `now` give the same plan, whatever order the jobs and running jobs
/// come in.
pub fn plan(view: &ClusterView, cfg: &SchedConfig, now: Timestamp) -> Plan {
    plan_with(view, cfg, now, &mut PassCache::default())
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
/// constraint or `--time-min`, and no node that gives whole cores of
/// several threads (a task there takes more than one CPU).
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
        && !job.whole_cores
        && job.max_leaves.is_none()
        && job.segment.is_none()
}

/// Whether a pass over `view` plans over the pool exactly what planning
/// on nodes could at best (`PlanOn::Auto`): one partition, up, holding
/// every node and setting no per-job node, CPU or memory limit (MaxNodes,
/// MinNodes above one, MaxCPUsPerNode, MaxMemPerNode,
/// OverSubscribe=EXCLUSIVE); every job
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
        && part.max_cpus_per_node.is_none()
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
    // Pool plans count every node of the one partition (and none holds a
    // window).
    let windows = !cache.blocks.windows.is_empty();
    let pool_ok = !windows
        && match cfg.bf_plan {
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
    let mut order = priority_order(view.jobs, view.parts);
    if windows {
        let first = &cache.blocks.first;
        let (before, after): (Vec<usize>, Vec<usize>) = order
            .into_iter()
            .partition(|&i| first.contains(&view.jobs[i].job_id));
        for idx in before {
            pass.decide(
                &view.jobs[idx],
                view,
                cfg,
                &mut tl,
                &mut plan,
                &mut cache.spread_ids,
            );
        }
        lay_blocks(&mut tl, &cache.blocks.windows, now);
        order = after;
    }
    for idx in order {
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

/// Lays each window of `Blocks` still ahead on the timeline: a plan that
/// holds its nodes whole (exclusive, no CPUs counted: the nodes read as
/// full) over what of it is left from `now`.
fn lay_blocks(tl: &mut Timeline, windows: &[super::Block], now: Timestamp) {
    for w in windows {
        let from = w.from.max(now);
        if w.until <= from || w.nodes.is_empty() {
            continue;
        }
        let mut nodes: Vec<crate::NodeIdx> = w.nodes.clone();
        nodes.sort_unstable();
        nodes.dedup();
        let alloc = Allocation {
            partition: 0,
            nodes: nodes
                .into_iter()
                .map(|node| crate::NodeAlloc {
                    node,
                    cpus: 0,
                    mem: 0,
                    tasks: 0,
                    gres: Vec::new(),
                    cpu_ids: Vec::new(),
                })
                .collect(),
            exclusive: true,
        };
        tl.reserve(from, w.until - from, &alloc);
    }
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
pub(super) struct PassState {
    now: Timestamp,
    horizon: Timestamp,
    part_sizes: Vec<PartSize>,
    healthy_empty: Option<Vec<NodeView>>,
    all_up: bool,
    pub(super) blocked_parts: Vec<bool>,
    pub(super) n_planned: u32,
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
    pub(super) spread_failed: BTreeMap<u32, Vec<(u32, i64)>>,
    /// Why jobs wait does not depend on their time limit once every
    /// partition of theirs takes that limit: one diagnosis per shape (kept
    /// between passes while the nodes and partitions stay as they are:
    /// `PassCache::diagnosed` between passes).
    diagnosed: BTreeMap<ShapeKey, Unfit>,
    /// The jobs (indices in the pass's view) it deferred and left
    /// undecided, in priority order (`PassCache::hold_deferred`).
    pub(super) deferred: Vec<usize>,
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
    pub(super) fn defers(&self, job: &JobRequest, cfg: &SchedConfig) -> bool {
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
    pub(super) fn blocked_with(&self, partitions: &[usize], reserve: u32) -> bool {
        !partitions.is_empty()
            && partitions.iter().all(|&p| {
                self.blocked_parts.get(p).copied().unwrap_or(false)
                    && self.reserved.get(p).is_some_and(|r| *r >= reserve)
            })
    }

    /// Decides `job`, the next in the order the pass tries jobs (priority
    /// order, the deferred ones last: `defers`), into `plan`: it starts
    /// now where it may be tried and fits, else it gets a plan where it
    /// is due one and one is found, and waits with a reason.
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
        let shape = shape_key(job);
        let known = self.memo.get(&shape).cloned().unwrap_or_default();
        let behind = job.partitions.iter().any(|p| self.blocked_parts[*p]);
        let d = limit_secs(job.time_limit);
        let may_try = self.may_try(job, cfg, behind, plan);
        if may_try && self.start_now(job, view.parts, tl, plan, spread_ids, &shape, &known, d) {
            return;
        }
        let wants_plan = may_try && self.wants_plan(job, cfg);
        let planned = wants_plan && self.plan_later(job, view.parts, tl, plan, &shape, &known, d);
        let unfit = match (planned.then_some(Unfit::Busy), known.unfit) {
            (Some(u), _) | (None, Some(u)) => u,
            (None, None) => {
                let u = self.diagnose(job, view, &shape);
                self.memo.entry(shape).or_default().unfit = Some(u);
                u
            }
        };
        let reason = self.wait_reason(job, unfit, behind);
        plan.decisions.push((job.job_id, Decision::Wait(reason)));
    }

    /// Whether the pass tries `job` at all (FCFS: not behind a blocked job
    /// of its partitions, within `default_queue_depth`; the others: within
    /// `bf_max_job_test` and `bf_max_job_user`), counting it as tried
    /// where it does.
    fn may_try(
        &mut self,
        job: &JobRequest,
        cfg: &SchedConfig,
        behind: bool,
        plan: &mut Plan,
    ) -> bool {
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
        }
        may_try
    }

    /// Starts `job` now where it fits without delaying a plan, for its
    /// limit or one shortened down to its `--time-min`, unless an earlier
    /// job of its shape could not start, or one its spread key covers;
    /// where it does not, the memos learn that. True where it started.
    #[allow(clippy::too_many_arguments)]
    fn start_now(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        tl: &mut Timeline,
        plan: &mut Plan,
        spread_ids: &mut SpreadIds,
        shape: &ShapeKey,
        known: &ShapeMemo,
        d: i64,
    ) -> bool {
        let mut start = None;
        let spread = spread_key(job, shape).map(|k| spread_ids.id(k));
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
        let Some((alloc, minutes)) = start else {
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
            return false;
        };
        let run_for = minutes.map_or(d, |m| i64::from(m) * 60);
        tl.start(run_for, &alloc);
        if parts[alloc.partition].max_cpus_per_node.is_some() {
            tl.hold_part_cpus(&alloc);
        }
        if let Some(m) = minutes {
            plan.time_limits.insert(job.job_id, m);
        }
        plan.decisions.push((job.job_id, Decision::Start(alloc)));
        true
    }

    /// Whether `job`, tried and not started, gets a plan: under EASY the
    /// first blocked job, under backfill the first ones of each partition
    /// (`bf_job_part_count_reserve`) and those due one of their own.
    fn wants_plan(&self, job: &JobRequest, cfg: &SchedConfig) -> bool {
        match cfg.policy {
            Policy::Fcfs => false,
            Policy::Easy => self.n_planned == 0,
            Policy::Backfill => {
                cfg.bf_job_part_count_reserve
                    .is_none_or(|m| job.partitions.iter().any(|p| self.reserved[*p] < m))
                    || aged(cfg, job, &self.part_sizes, self.now)
            }
        }
    }

    /// Plans `job` at the earliest time it fits for `d` seconds from the
    /// time an earlier job of its shape was planned (none where that job
    /// found no time), and lays the plan on the timeline. True where it
    /// got one.
    #[allow(clippy::too_many_arguments)]
    fn plan_later(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        tl: &mut Timeline,
        plan: &mut Plan,
        shape: &ShapeKey,
        known: &ShapeMemo,
        d: i64,
    ) -> bool {
        let found = match known.planned_from {
            // An identical job found no plan: neither will this one.
            Some(None) => None,
            not_before => {
                let from = not_before.flatten().unwrap_or(self.now);
                let found = tl.earliest(job, parts, d, from, self.horizon);
                self.memo.entry(shape.clone()).or_default().planned_from =
                    Some(found.as_ref().map(|(t, _)| *t));
                found
            }
        };
        let Some((start, alloc)) = found else {
            return false;
        };
        if tl.pool_pass {
            tl.reserve_cpus(start, d, demand_cpus(job));
        } else {
            tl.reserve(start, d, &alloc);
            if parts[alloc.partition].max_cpus_per_node.is_some() {
                tl.hold_part_cpus(&alloc);
            }
        }
        self.n_planned += 1;
        self.reserved[alloc.partition] += 1;
        plan.planned.insert(job.job_id, Planned { start, alloc });
        true
    }

    /// The reason `job` waits, given why it does not fit (`Busy`: it
    /// blocks its partitions for the jobs after it).
    fn wait_reason(&mut self, job: &JobRequest, unfit: Unfit, behind: bool) -> PendingReason {
        match unfit {
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
        }
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
