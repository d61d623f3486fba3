//! The scheduling pass (`Engine::schedule`): starts every pending job
//! that fits and gives every waiting one its reason. A pass after only
//! submissions or job ends may go over part of the queue (`partial`); the
//! requests it tries come from `requests`.
//!
//! ```text
//! schedule -> schedule_pass: prepare -> collect (whole or partial queue)
//!          -> plan_pass (sched::plan) -> [finish a partial pass] -> apply
//! ```

use crate::array::ArrayRequests;
use crate::limits::LimitCheck;
use crate::partial::{freed_pass_holds, PrefixCheck};
use crate::requests::{ArrayWalk, Optional, Pass};
use crate::{Engine, Job};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use sched::{Decision, JobRequest, NodeView, PartView};
use std::sync::Arc;

impl Engine {
    /// Whether the next `schedule` would start no job and do nothing else
    /// that lasts beyond the next pass: every pending job that is neither
    /// held nor completing asks for more CPUs than the nodes that may run
    /// jobs have free (`demand_cpus`, a lower bound of what it needs; an
    /// array record is never counted out), and none of the pass's other
    /// effects can be due (preemption is off, no job is suspended by it,
    /// no pending job has a dependency, limits are not enforced, it is not
    /// the pass over the whole queue that FCFS owes, `depth_wake`, nor an
    /// FCFS pass that could stop at its depth and so arm one). Such a
    /// pass would only give the waiting jobs their reasons and plans,
    /// which the next pass makes again from the same state, with this
    /// batch's submissions and job ends among its own (they stay noted
    /// until then). The simulator skips these passes; a controller runs
    /// them, since its users read the reasons and plans.
    pub fn pass_starts_nothing(&mut self) -> bool {
        self.free_if_pass_may_start().is_none()
    }

    /// The next `schedule`, unless it would start nothing and could be
    /// skipped (`pass_starts_nothing`): whether it was run. The free CPUs
    /// the test counted are the pass's own (nothing changes in between),
    /// so the nodes are swept once instead of twice.
    pub fn schedule_unless_idle(&mut self, now: Timestamp) -> bool {
        match self.free_if_pass_may_start() {
            None => false,
            Some(free) => {
                self.schedule_counted(now, free);
                true
            }
        }
    }

    /// `None` where the next pass would start nothing
    /// (`pass_starts_nothing`); else `Some` of the free CPUs where the test
    /// counted them (`None` within, where it decided without counting).
    /// Where it counts, no job is suspended by preemption and no
    /// dependency is pending, so `schedule_pass` changes no node before it
    /// counts them: the count is the pass's own until the next event.
    fn free_if_pass_may_start(&mut self) -> Option<Option<u32>> {
        if !self.sched_dirty
            || self.full_passes
            || self.resvs.ever
            || self.whole_queue_pass
            || self.may_resume
            || self.may_depend
            || self.settings.enforce.limits
            || self.licenses_on()
            || self.settings.preempt.kind != crate::preempt::PreemptType::None
        {
            return Some(None);
        }
        self.refresh_queue();
        // An FCFS pass that stops at its depth arms the pass over the
        // whole queue (`depth_wake`), which lasts: not to be skipped where
        // it could (more jobs wait than it tries) and none is armed yet.
        let cfg = &self.sched_cfg;
        if cfg.policy == sched::Policy::Fcfs
            && self.depth_wake.is_none()
            && self.queue.len() > cfg.default_queue_depth as usize
        {
            return Some(None);
        }
        let free = self.free_cpus();
        self.queue
            .by_demand(..=(i64::from(free), JobId(u32::MAX)))
            .next()
            .map(|_| Some(free))
    }

    /// One scheduling pass: starts every job that fits, sets the reason of
    /// every job that waits. Called after each batch of events.
    ///
    /// When the only change since the last pass is new submissions that
    /// all come after every job that pass tried (in priority order), the
    /// pass tries only the new jobs and the jobs holding a planned start:
    /// nothing came free, so no other waiting job can start now, and the
    /// plans the new jobs must not delay are the ones re-made here.
    pub fn schedule(&mut self, now: Timestamp) {
        self.schedule_counted(now, None);
    }

    /// `schedule`, with the free CPUs where the caller counted them since
    /// the last change.
    fn schedule_counted(&mut self, now: Timestamp, known_free: Option<u32>) {
        if !self.sched_dirty {
            return;
        }
        // The periodic pass over the whole queue (`on_timer`, after an
        // FCFS pass stopped at `default_queue_depth`) tries every job.
        if std::mem::take(&mut self.whole_queue_pass) {
            let depth = self.sched_cfg.default_queue_depth;
            self.sched_cfg.default_queue_depth = u32::MAX;
            self.schedule_pass(now, known_free);
            self.sched_cfg.default_queue_depth = depth;
        } else {
            self.schedule_pass(now, known_free);
        }
    }

    /// `known_free`: the free CPUs where the caller counted them since the
    /// last change (`free_if_pass_may_start`).
    ///
    /// ```text
    /// pass_input -> reducible -> collect_pass (part of the queue, or all)
    ///   -> tell_collected -> plan_collected -> finish_collected -> apply_plan
    /// ```
    fn schedule_pass(&mut self, now: Timestamp, known_free: Option<u32>) {
        self.sched_dirty = false;
        let (fresh, input) = self.pass_input(now, known_free);
        let fresh = self.reducible(fresh, &input);
        let Some(collected) = self.collect_pass(fresh, &input, now) else {
            // Decided without a pass: every new job waits.
            return;
        };
        let Collected {
            pass:
                Pass {
                    requests,
                    arrays,
                    throttled,
                    waiting_to_begin,
                    optional,
                },
            prefix_check,
            reduced,
        } = collected;
        self.tell_collected(throttled, waiting_to_begin, &input.limited, now);
        if requests.is_empty() && optional.is_empty() {
            return;
        }
        let prefix = prefix_check.is_some();
        let mut work = self.plan_collected(&input, requests, arrays, &optional, prefix, now);
        self.finish_collected(&input, prefix_check.as_ref(), reduced, &mut work, now);
        self.apply_plan(work, input.parts.len(), now);
        self.tell_license_cut(&input.limited, now);
    }

    /// What a pass reads first: the new jobs since the last pass where
    /// only submissions (and job ends) came (`Engine::fresh`; `None`: it
    /// must try every job), with what it fixes for the rest of the pass.
    /// Resumes the jobs preemption let go and evaluates dependencies.
    fn pass_input(
        &mut self,
        now: Timestamp,
        known_free: Option<u32>,
    ) -> (Option<Vec<JobId>>, PassInput) {
        let fresh = self.fresh.replace(Vec::new());
        if fresh.is_none() {
            // Something other than submissions and job ends happened.
            self.request_cache.clear();
        }
        let freed = std::mem::take(&mut self.freed);
        self.resume_suspended(now);
        let had_dependencies = self.evaluate_dependencies(now);
        // A job end may meet a dependency: every job is looked at then.
        let fresh = fresh.filter(|_| !freed || !had_dependencies);
        let mut limited = self.limit_blocked();
        self.license_blocked(&mut limited, now);
        self.resv_blocked(&mut limited.blocked);
        // A job a limit held after the last pass that none holds now (a job
        // let through before it then, counted against it, started or not)
        // must be tried: only a pass over every job does.
        let fresh = fresh.filter(|_| !limited.released);
        let free_cpus = match known_free {
            Some(free) => {
                debug_assert_eq!(free, self.free_cpus());
                free
            }
            None => self.free_cpus(),
        };
        // FCFS passes are reduced only to a prefix of the queue (below).
        let fcfs = self.sched_cfg.policy == sched::Policy::Fcfs;
        let old_heads = if freed {
            self.heads.clone()
        } else {
            Vec::new()
        };
        let input = PassInput {
            freed,
            limited,
            free_cpus,
            fcfs,
            parts: self.part_views(),
            old_heads,
        };
        (fresh, input)
    }

    /// `fresh` where the pass may go over part of the queue, else `None`.
    /// Brings the queue up to date.
    fn reducible(&mut self, fresh: Option<Vec<JobId>>, input: &PassInput) -> Option<Vec<JobId>> {
        let (freed, fcfs) = (input.freed, input.fcfs);
        let cfg = &self.sched_cfg;
        let may_reduce = cfg.bf_max_job_test.is_none()
            && cfg.bf_max_job_user.is_none()
            && self.settings.preempt.kind == crate::preempt::PreemptType::None
            && self.last_order_key.is_some()
            && !self.full_passes
            && !self.resvs.ever;
        // After job ends, only with one partition and one planned job (the
        // first blocked one), and no limits that an end could lift: see
        // `freed_pass_holds`.
        let one_reservation = match cfg.policy {
            // None at all: the jobs behind the first blocked one wait.
            sched::Policy::Fcfs => true,
            sched::Policy::Easy => true,
            sched::Policy::Backfill => cfg.bf_job_part_count_reserve == Some(1),
        };
        let may_reduce = may_reduce
            && (!(freed || fcfs)
                || (one_reservation && self.parts.len() == 1 && !self.settings.enforce.limits));
        self.refresh_queue();
        // Plans over the pool (`bf_plan=auto`) only where every job the
        // pass may go on with spreads, and no node, preemption or
        // suspended job holds CPUs the pool would count as coming free.
        // Where that changed since the last pass, its plans were made the
        // other way: a pass over every job makes them again.
        let pool_exact = self.queue.all_spread()
            && self.settings.preempt.kind == crate::preempt::PreemptType::None
            && self.preempt_suspended.is_empty()
            && !self.nodes.any_apart()
            && !self.resvs.ever;
        let switched = self.sched_cfg.bf_plan == sched::PlanOn::Auto
            && pool_exact != self.pass_cache.pool_exact;
        self.pass_cache.pool_exact = pool_exact;
        // Licenses: see `crate::licenses`.
        fresh.filter(|_| may_reduce && !switched && !self.licenses_on())
    }

    /// The requests the pass tries: over part of the queue where `fresh`
    /// allows and that part shows what the whole would decide, else over
    /// every pending job. `None` where the pass is decided without
    /// planning (the new jobs were told their reasons).
    fn collect_pass(
        &mut self,
        fresh: Option<Vec<JobId>>,
        input: &PassInput,
        now: Timestamp,
    ) -> Option<Collected> {
        let PassInput {
            freed,
            fcfs,
            ref limited,
            free_cpus,
            ref parts,
            ..
        } = *input;
        // Every first blocked job holds a plan (else the pass would plan
        // the next one, which a pass over new jobs does not try). A pass
        // over a prefix of the queue after job ends checks what it left
        // out instead.
        let heads_planned = self.heads.iter().all(|h| self.plans.contains_key(h));
        let mut reduced = false;
        let mut prefix_check = None;
        let pass = match fresh {
            // An FCFS pass after submissions alone goes over a prefix too:
            // its jobs behind the first blocked one wait whatever came.
            Some(ids) if freed || fcfs => {
                // Jobs old enough for a plan of their own (bf_age_reserve)
                // are needed too: a full pass plans them wherever they are
                // in the queue (`freed_prefix` tells them on its way).
                let needed = ids
                    .iter()
                    .chain(self.plans.keys())
                    .chain(&self.heads)
                    .copied();
                let mut bufs = std::mem::take(&mut self.prefix_bufs);
                let prefix = self.freed_prefix(needed, limited, free_cpus, now, &mut bufs);
                let pass = match prefix {
                    Some(check) => {
                        prefix_check = Some(check);
                        let only = bufs.only.iter().copied();
                        Some(self.collect_requests(Some(only), limited, free_cpus, now))
                    }
                    None if fcfs || !heads_planned => None,
                    None => {
                        let startable = self.startable_waiting(&ids, free_cpus);
                        let aged = self.aged_waiting(now);
                        let pass =
                            self.short_pass(&ids, startable, aged, parts, limited, free_cpus, now);
                        reduced = pass.is_some();
                        pass
                    }
                };
                self.prefix_bufs = bufs;
                pass
            }
            Some(ids) if heads_planned => {
                // Older jobs that the CPUs free now could hold: only they
                // could start where the plans made again now leave room.
                let none_startable = self
                    .startable_waiting_iter(&ids, free_cpus)
                    .next()
                    .is_none();
                // Jobs old enough for a plan of their own (bf_age_reserve):
                // a full pass plans them wherever they are in the queue.
                let aged = self.aged_waiting(now);
                if !freed
                    && none_startable
                    && aged.iter().all(|id| self.plans.contains_key(id))
                    && self.fresh_cannot_start(&ids, parts, limited, free_cpus, now)
                {
                    // What the pass would decide, without the pass: every
                    // new job waits behind a planned job of its partitions.
                    for id in &ids {
                        self.jobs.tell_reason(id, PendingReason::Priority, now);
                    }
                    return None;
                }
                let startable = if self.older_jobs_wait(now) {
                    Vec::new()
                } else {
                    self.startable_waiting(&ids, free_cpus)
                };
                let pass = self.short_pass(&ids, startable, aged, parts, limited, free_cpus, now);
                reduced = pass.is_some();
                pass
            }
            _ => None,
        };
        let pass = pass.unwrap_or_else(|| self.collect_requests(ALL_JOBS, limited, free_cpus, now));
        Some(Collected {
            pass,
            prefix_check,
            reduced,
        })
    }

    /// Tells the jobs the pass will not try why they wait, and forgets the
    /// last pass's plans and first blocked jobs.
    fn tell_collected(
        &mut self,
        throttled: Vec<JobId>,
        waiting_to_begin: Vec<JobId>,
        limited: &LimitCheck,
        now: Timestamp,
    ) {
        self.mark_throttled(throttled);
        self.mark_waiting_to_begin(waiting_to_begin);
        for (id, reason) in &limited.blocked {
            self.jobs.tell_reason(id, *reason, now);
        }
        self.plans.clear();
        self.heads.clear();
    }

    /// The scheduler's plan for `requests` (and, in order, the `optional`
    /// jobs it has not shown would wait: `walk_pass`) over the nodes as
    /// they are now. `prefix`: the pass is over a prefix of the queue.
    fn plan_collected(
        &mut self,
        input: &PassInput,
        mut requests: Vec<JobRequest>,
        arrays: ArrayRequests,
        optional: &[Optional],
        prefix: bool,
        now: Timestamp,
    ) -> Planning {
        let parts = &input.parts;
        let lowest = requests.iter().map(|r| sched::order_key(r, parts)).max();
        self.last_order_key = self.last_order_key.max(lowest);
        let mut nodes = self.refreshed_node_views();
        self.hold_suspended_shares(&mut nodes);
        // The views the scheduler gets now are those just refreshed.
        self.views_plain = self.preempt_suspended.is_empty();
        if !self.views_plain {
            self.view_hint = None;
        }
        let plan = if optional.is_empty() {
            // A pass over a prefix goes on over the jobs it left out
            // (`finish_prefix_pass`): the jobs it defers come after them.
            self.pass_cache.hold_deferred = prefix;
            let plan = self.plan_pass(&nodes, parts, &requests, now);
            self.pass_cache.hold_deferred = false;
            plan
        } else {
            self.walk_pass(&nodes, parts, &mut requests, optional, input.free_cpus, now)
        };
        Planning {
            requests,
            arrays,
            nodes,
            plan,
        }
    }

    /// After a pass over part of the queue: goes on over the jobs a prefix
    /// left out where its blocked, planned job keeps them behind it, else
    /// (or where a first blocked job started or lost its plan) plans again
    /// over every job.
    fn finish_collected(
        &mut self,
        input: &PassInput,
        prefix_check: Option<&PrefixCheck>,
        reduced: bool,
        work: &mut Planning,
        now: Timestamp,
    ) {
        let PassInput {
            freed,
            fcfs,
            ref limited,
            free_cpus,
            ref parts,
            ref old_heads,
        } = *input;
        let prefix_failed = match prefix_check {
            Some(check)
                if check.behind_plan(&work.plan, fcfs, || {
                    self.holders_endless() && self.pending_endless(limited, now)
                }) =>
            {
                let mut records = ArrayWalk {
                    arrays: &mut work.arrays,
                    limited,
                    free_cpus,
                    throttled: Vec::new(),
                };
                self.finish_prefix_pass(
                    check,
                    &mut work.plan,
                    &mut work.requests,
                    &work.nodes,
                    parts,
                    &mut records,
                    now,
                );
                let throttled = records.throttled;
                self.mark_throttled(throttled);
                // The jobs left out come after every job tried.
                self.last_order_key = self.last_order_key.max(check.max_left_key);
                false
            }
            Some(_) => true,
            None => false,
        };
        if prefix_failed || (reduced && freed && !freed_pass_holds(&work.plan, old_heads)) {
            // A first blocked job started (or lost its plan): the next one
            // in line, which this pass did not try, may need a plan. Look
            // at every job.
            let Pass {
                requests: all,
                arrays: all_arrays,
                throttled,
                waiting_to_begin,
                ..
            } = self.collect_requests(ALL_JOBS, limited, free_cpus, now);
            self.mark_throttled(throttled);
            self.mark_waiting_to_begin(waiting_to_begin);
            work.requests = all;
            work.arrays = all_arrays;
            let lowest = work
                .requests
                .iter()
                .map(|r| sched::order_key(r, parts))
                .max();
            self.last_order_key = self.last_order_key.max(lowest);
            work.plan = self.plan_pass(&work.nodes, parts, &work.requests, now);
        }
    }

    /// Carries out the pass's plan: starts the jobs it starts, tells the
    /// others why they wait, keeps its plans and first blocked jobs, and
    /// preempts for the jobs that may.
    fn apply_plan(&mut self, work: Planning, n_parts: usize, now: Timestamp) {
        let Planning {
            requests,
            arrays,
            nodes,
            plan,
        } = work;
        self.node_view_cache = nodes;
        self.view_hint = None;
        if plan.depth_reached && self.depth_wake.is_none() {
            // Slurm tries the whole queue every sched_interval.
            self.depth_wake = Some(now + i64::from(self.sched_cfg.sched_interval.max(1)));
        }
        self.plans = plan.planned;
        for (id, minutes) in plan.time_limits {
            // --time-min: it starts with the limit that fits the gap.
            if let Some(job) = self.jobs.get_mut(&id) {
                job.time_limit = TimeLimit::Minutes(minutes);
            }
        }
        self.pass_stats
            .note_pass(plan.decisions.iter().map(|(_, d)| d));
        self.heads = self.first_blocked(&plan.decisions, &arrays, n_parts);
        let preemptors = self.preemptors(&plan.decisions, &requests);
        for (id, decision) in plan.decisions {
            let starting = matches!(decision, Decision::Start(_));
            let Some(id) = self.array_decision_target(id, &arrays, starting, now) else {
                continue;
            };
            match decision {
                Decision::Start(alloc) => self.start_job(id, alloc, now),
                Decision::Wait(reason) => {
                    let reason = match self.jobs.get(&id) {
                        Some(job) if self.resvs.ever => self.resv_reason(job, reason),
                        _ => reason,
                    };
                    self.jobs.tell_reason(&id, reason, now)
                }
            }
        }
        self.preempt_pass(&preemptors, now);
    }

    /// The scheduler's pass over `requests`, given the running jobs that
    /// changed since the last pass (`running_changed`) where nothing else
    /// could have changed since (no `touch` but for plain job ends) and the
    /// pass cache kept the others (`sched::plan_with_changes`), else every
    /// running job.
    pub(crate) fn plan_pass(
        &mut self,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        requests: &[JobRequest],
        now: Timestamp,
    ) -> sched::Plan {
        let mut view = sched::ClusterView {
            nodes,
            parts,
            jobs: requests,
            running: &[],
        };
        // The partitions never change (`Engine::new`); the nodes that did
        // since the last pass are known. Later passes over the same views
        // (the same `schedule_pass`) change none.
        if let Some(changed) = self.view_hint.replace(Vec::new()) {
            self.pass_cache.views_differ_only_on(changed);
        }
        // Reservations' windows, laid on the timeline (`resv_blocks`).
        self.pass_cache.blocks = self.resv_blocks(now);
        if !self.running_all && !self.full_passes && !self.resvs.ever {
            let mut changed = Vec::new();
            let mut gone = Vec::new();
            for id in &self.running_changed {
                let view = self
                    .holding
                    .get(id)
                    .and_then(|v| running_view(self.jobs.get(id)?, *v, now));
                match view {
                    Some(r) => changed.push(r),
                    None => gone.push(*id),
                }
            }
            let cfg = &self.sched_cfg;
            let cache = &mut self.pass_cache;
            if let Some(plan) = sched::plan_with_changes(&view, &changed, &gone, cfg, now, cache) {
                self.running_changed.clear();
                return plan;
            }
        }
        let running = running_views(&self.jobs, &self.holding, now);
        view.running = &running;
        let plan = sched::plan_with(&view, &self.sched_cfg, now, &mut self.pass_cache);
        self.running_changed.clear();
        self.running_all = false;
        plan
    }

    /// Gives jobs whose begin time is still ahead their reason.
    fn mark_waiting_to_begin(&mut self, ids: Vec<JobId>) {
        for id in ids {
            if let Some(job) = self.jobs.get_mut(&id) {
                job.reason = PendingReason::BeginTime;
            }
        }
    }

    /// Brings `queue` up to date with the jobs changed since a pass last
    /// read it (and with the partitions, when they changed).
    pub(crate) fn refresh_queue(&mut self) {
        let tiers = self.parts.iter().map(|p| p.conf.priority_tier);
        let sizes = self.part_sizes.iter().copied();
        let consumable = self.settings.memory_consumable;
        // What a job that asks for no memory gets (`mem_request`).
        let no_mem = self.parts.iter().map(|p| {
            !consumable
                && p.conf
                    .def_mem_per_cpu
                    .or(self.settings.def_mem_per_cpu)
                    .is_none()
                && self.settings.def_mem_per_node.is_none_or(|m| m == 0)
        });
        // Compared where they are: built only when they changed.
        let same = self.queue.has_setting(
            tiers.clone(),
            sizes.clone(),
            consumable,
            no_mem.clone(),
            self.settings.smt_whole_cores,
        );
        let setting = (!same).then(|| crate::queue::Setting {
            tiers: tiers.collect(),
            sizes: sizes.collect(),
            memory_consumable: consumable,
            no_mem_spreads: no_mem.collect(),
            whole_cores: self.settings.smt_whole_cores,
        });
        self.queue.update(&mut self.jobs, setting);
    }

    /// The jobs `decisions` left waiting that were the first to block one
    /// of their partitions: each waits for Resources, or for Priority
    /// where another partition of its was blocked before it (a job in two
    /// partitions behind the first blocked job of one is the first blocked
    /// job of the other). A pass over new jobs tries them again, so that
    /// the new jobs of those partitions wait behind them. With one
    /// partition, the job that waits for Resources.
    fn first_blocked(
        &self,
        decisions: &[(JobId, Decision)],
        arrays: &crate::array::ArrayRequests,
        n_parts: usize,
    ) -> Vec<JobId> {
        if n_parts <= 1 {
            return decisions
                .iter()
                .filter(|(_, d)| matches!(d, Decision::Wait(PendingReason::Resources)))
                .map(|(id, _)| *id)
                .collect();
        }
        let mut blocked = vec![false; n_parts];
        let mut open = n_parts;
        let mut heads = Vec::new();
        for (id, d) in decisions {
            if open == 0 {
                break;
            }
            // Only a job that waits on busy nodes blocks its partitions.
            if !matches!(
                d,
                Decision::Wait(PendingReason::Resources | PendingReason::Priority)
            ) {
                continue;
            }
            let Some(job) = self.jobs.get(&arrays.record_of(*id)) else {
                continue;
            };
            let mut first = false;
            for &p in &job.partitions {
                if let Some(b) = blocked.get_mut(p).filter(|b| !**b) {
                    *b = true;
                    open -= 1;
                    first = true;
                }
            }
            if first {
                heads.push(*id);
            }
        }
        heads
    }
}

/// Jobs holding resources, with when they are expected to give them back
/// (start plus time limit), for the backfill timeline; their allocations
/// are borrowed, not copied.
fn running_views<'a>(
    jobs: &'a std::collections::BTreeMap<JobId, Box<Job>>,
    holding: &std::collections::BTreeMap<JobId, u64>,
    now: Timestamp,
) -> Vec<sched::RunningJob<'a>> {
    holding
        .iter()
        .filter_map(|(id, version)| running_view(jobs.get(id)?, *version, now))
        .collect()
}

/// What the scheduler sees of a job holding resources (`None`: it holds
/// none): until its time limit, or `now` for one that is ending or not
/// running.
fn running_view(j: &Job, version: u64, now: Timestamp) -> Option<sched::RunningJob<'_>> {
    let alloc = j.alloc.as_ref()?;
    let end = if j.completing || j.state != JobState::Running {
        now
    } else {
        j.limit_end().unwrap_or(sched::FOREVER)
    };
    Some(sched::RunningJob {
        job_id: j.id,
        end,
        alloc: std::borrow::Cow::Borrowed(alloc),
        version: Some(version),
    })
}

/// `collect_requests` over every pending job.
const ALL_JOBS: Option<std::iter::Empty<JobId>> = None;

/// What a pass fixes before it collects its requests
/// (`Engine::pass_input`).
struct PassInput {
    /// A job ended since the last pass (`Engine::freed`).
    freed: bool,
    /// The jobs limits hold, and the room they leave.
    limited: LimitCheck,
    /// The CPUs free before the pass.
    free_cpus: u32,
    /// The policy is FCFS.
    fcfs: bool,
    /// Every partition as the scheduler sees it.
    parts: Arc<[PartView]>,
    /// After job ends, the last pass's first blocked jobs
    /// (`freed_pass_holds`); else none.
    old_heads: Vec<JobId>,
}

/// The requests a pass tries (`Engine::collect_pass`).
struct Collected {
    pass: Pass,
    /// Where the pass is over a prefix of the queue: what must hold after
    /// it for the jobs it left out to keep their decisions.
    prefix_check: Option<PrefixCheck>,
    /// The pass is over the new jobs and those the free CPUs could hold
    /// (`Engine::short_pass`).
    reduced: bool,
}

/// What a pass plans over, and its plan (`Engine::plan_collected`).
struct Planning {
    requests: Vec<JobRequest>,
    arrays: ArrayRequests,
    nodes: Vec<NodeView>,
    plan: sched::Plan,
}
