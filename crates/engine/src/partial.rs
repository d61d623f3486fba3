//! Scheduling passes over part of the queue: after submissions or job
//! ends alone, a pass may try only the new jobs, the jobs that could use
//! the CPUs that came free, or a prefix of the queue, where it can show
//! that it decides what a pass over every job decides (`freed_prefix`,
//! `short_pass`, `walk`).

use crate::requests::{ArrayWalk, Optional, Pass};
use crate::Engine;
use model::{JobId, JobState, PendingReason, Timestamp};
use sched::{Decision, JobRequest};

impl Engine {
    /// Ends a pass over a prefix of the queue (`freed_prefix`) whose
    /// blocked, planned job keeps the jobs it left out behind it
    /// (`PrefixCheck::behind_plan`): the pass goes on in order over the
    /// ones that must be tried and those that could use the CPUs left
    /// (`walk`), so that it decides what a pass over every job decides.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish_prefix_pass(
        &mut self,
        check: &PrefixCheck,
        plan: &mut sched::Plan,
        requests: &mut Vec<JobRequest>,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        records: &mut ArrayWalk,
        now: Timestamp,
    ) {
        let left = i64::from(records.free_cpus) - started_cpus(plan);
        // Under FCFS every job left out is behind the blocked one: only
        // those that must be tried are (their reasons may change).
        let fcfs = self.sched_cfg.policy == sched::Policy::Fcfs;
        let shortest = self.sched_cfg.policy == sched::Policy::Backfill
            && self.sched_cfg.bf_order == sched::BackfillOrder::Shortest;
        // With one partition (`freed_prefix`'s), settled already, and
        // `bf_order=shortest`, the walk defers every job that may be left
        // out without a look: it reads them from the queue by time limit
        // (`Queue::by_limit`) only once it tries them, as far as the CPUs
        // left go (`LazyLeftOut`). Otherwise they are read here in order.
        let lazy = !fcfs
            && shortest
            && self.parts.len() == 1
            && self.pass_cache.settled_parts(&self.sched_cfg) & 1 != 0;
        let read;
        let left_out = if fcfs || lazy {
            &check.left_out
        } else {
            let aged = self.aged_test(now);
            read = self
                .queue
                .in_order_after(check.last_taken)
                .filter_map(|q| {
                    self.left_out_fact(q, &check.needed, aged.as_ref(), records.limited, now)
                })
                .filter(|c| c.3 || c.2 <= left)
                .collect::<Vec<_>>();
            &read
        };
        // Sized for all of them at once (grown, a deep queue's would be
        // copied over and over).
        let mut entries: Vec<Walked> = Vec::with_capacity(left_out.len());
        entries.extend(
            left_out
                .iter()
                .filter(|c| c.3 || (!fcfs && c.2 <= left))
                .map(|&(key, id, demand, must, parts, limit)| {
                    (
                        key,
                        id,
                        demand,
                        if must {
                            Try::Must
                        } else {
                            Try::Optional(parts, limit)
                        },
                    )
                }),
        );
        // `left_out` is in order already (`freed_prefix`).
        debug_assert!(entries
            .windows(2)
            .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        // The prefix's jobs its pass deferred, tried after the others.
        let held: Vec<Walked> = self
            .pass_cache
            .take_deferred()
            .into_iter()
            .map(|i| {
                let r = &requests[i];
                let key = sched::order_key(r, parts);
                (key, r.job_id, sched::demand_cpus(r), Try::Given(i))
            })
            .collect();
        let must: Vec<JobId> = {
            let mut ids: Vec<JobId> = entries.iter().map(|e| e.1).collect();
            ids.sort_unstable();
            ids
        };
        let lazy = lazy.then_some(LazyLeftOut {
            after: check.last_taken,
            must,
            now,
        });
        let mut more = Vec::new();
        self.walk(
            &entries,
            held,
            plan,
            requests,
            &mut more,
            nodes,
            parts,
            left,
            Some(records),
            lazy,
        );
        requests.append(&mut more);
    }

    /// A pass over `requests` (which it must try) and the jobs `optional`
    /// (which it may leave out), in order (`walk`), from an empty one:
    /// what a pass over all of them decides.
    pub(crate) fn walk_pass(
        &mut self,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        requests: &mut Vec<JobRequest>,
        optional: &[Optional],
        free_cpus: u32,
        now: Timestamp,
    ) -> sched::Plan {
        let mut entries: Vec<Walked> = requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let key = sched::order_key(r, parts);
                (key, r.job_id, sched::demand_cpus(r), Try::Given(i))
            })
            .chain(optional.iter().map(|&(key, id, demand, parts, limit)| {
                (key, id, demand, Try::Optional(parts, limit))
            }))
            .collect();
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        let mut plan = self.plan_pass(nodes, parts, &[], now);
        let mut more = Vec::new();
        self.walk(
            &entries,
            Vec::new(),
            &mut plan,
            requests,
            &mut more,
            nodes,
            parts,
            i64::from(free_cpus),
            None,
            None,
        );
        requests.append(&mut more);
        plan
    }

    /// Goes on with the pass last made (`sched::plan_more`) over
    /// `entries`, in order: those that must be tried (`Try::Given`, the
    /// request at that index of `requests`, or `Try::Must`), and those
    /// that may be left out (`Try::Optional`) where they would wait behind
    /// a planned job with reason Priority (`PassCache::settled`) because
    /// they cannot start: they need more CPUs than are left (`left`, free
    /// CPUs less those the pass started), or a job of the pass with their
    /// spread shape, no more tasks and no longer a limit could not start
    /// (`PassCache::cannot_start_as`; the nodes only fill up further along
    /// a pass). Those keep their decision to wait, and their last
    /// evaluation time, without being tried. The jobs the pass defers
    /// (`PassCache::defers`, `bf_order=shortest`), and `held` (the ones
    /// the pass itself deferred), are tried after the others, by time
    /// limit and then in order, as a full pass tries them. Where
    /// preemption is configured, the requests of the jobs it tries that
    /// `requests` does not hold go to `more` (for `preemptors`); their
    /// decisions, plans and limits go to `plan`. An array's pending
    /// record that must be tried is tried as a full pass tries it, as one
    /// request per task that could start (`records`; their requests go to
    /// `more`).
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        entries: &[Walked],
        held: Vec<Walked>,
        plan: &mut sched::Plan,
        requests: &[JobRequest],
        more: &mut Vec<JobRequest>,
        nodes: &[sched::NodeView],
        parts: &[sched::PartView],
        mut left: i64,
        mut records: Option<&mut ArrayWalk>,
        lazy: Option<LazyLeftOut>,
    ) {
        // The queue, read by `lazy` while the walk changes the engine (it
        // does not change the queue).
        let queue = match lazy {
            Some(_) => std::mem::take(&mut self.queue),
            None => crate::queue::Queue::default(),
        };
        let least = queue.least_demand();
        let limited = records.as_ref().map(|r| r.limited);
        // The most CPUs a job read by limit may ask for and not be left
        // out at once (the loop below would leave it out: settled, and
        // more than are left or than one that could not start): set before
        // each read, tested first, so that most jobs read cost one compare.
        let read_up_to = std::cell::Cell::new(i64::MAX);
        let mut lazy_jobs = lazy.as_ref().map(|l| {
            let after = |q: &crate::queue::Queued| l.after.is_none_or(|a| q.key > a);
            let read_up_to = &read_up_to;
            queue
                .by_limit()
                .filter(move |q| {
                    q.demand <= read_up_to.get()
                        && !q.array
                        && q.by_priority
                        && q.ready(l.now)
                        && after(q)
                        && l.must.binary_search(&q.id()).is_err()
                })
                .peekable()
        });
        // The partitions where the pass has settled that later jobs wait,
        // as of the last job tried.
        let mut settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
        let keep_requests = self.settings.preempt.kind != crate::preempt::PreemptType::None;
        let shortest = self.sched_cfg.policy == sched::Policy::Backfill
            && self.sched_cfg.bf_order == sched::BackfillOrder::Shortest;
        // In a pass over the pool where every pending job spreads
        // (`bf_plan=auto`), whether a job can start now depends only on
        // its CPUs and its limit, and the free CPUs less the plans' only
        // fall along the pass: once the jobs tried by limit (after the
        // others) reach one that could not start, no later one that asks
        // for as many CPUs can (`failed_demand`), and the reading by limit
        // stops once that is the least any pending job asks.
        let pool_spread = self.sched_cfg.bf_plan == sched::PlanOn::Auto
            && self.pass_cache.pool_exact
            && self.pass_cache.last_pooled();
        let mut failed_demand = i64::MAX;
        // The deferred jobs in order (the prefix's come before the jobs it
        // left out), and (time limit, place there) to sort them by: small
        // keys sort faster than whole entries (a queue of 100,000 jobs
        // puts most of them aside), and they are borrowed, not copied.
        let most = held.len() + entries.len();
        let mut deferred: Vec<&Walked> = Vec::with_capacity(most);
        deferred.extend(&held);
        let mut later: Vec<(i64, u32)> = Vec::with_capacity(most);
        later.extend(deferred.iter().enumerate().map(|(k, e)| match e.3 {
            Try::Given(i) => (sched::limit_secs(requests[i].time_limit), k as u32),
            _ => unreachable!("held jobs are the pass's own"),
        }));
        let (mut at, mut deferring) = (0, true);
        loop {
            let (entry, entry_ref) = if deferring {
                if let Some(e) = entries.get(at) {
                    at += 1;
                    (*e, Some(e))
                } else {
                    deferring = false;
                    // Those that may be left out and need more CPUs than
                    // are left would be left out below: CPUs only get
                    // fewer, and where the pass settled it stays settled.
                    debug_assert!(deferred
                        .windows(2)
                        .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
                    later.retain(|&(_, k)| {
                        let e = &deferred[k as usize];
                        !matches!(e.3, Try::Optional(..)) || e.2 <= left
                    });
                    sort_by_limit(&mut later);
                    at = 0;
                    continue;
                }
            } else {
                // The jobs left out that may be, read from the queue by
                // time limit, merged with the deferred ones; none is tried
                // once no job may use the CPUs left (each that may be left
                // out is settled: `finish_prefix_pass`).
                if lazy_jobs.is_some()
                    && settled_parts & 1 != 0
                    && least.is_none_or(|d| left < d || failed_demand <= d)
                {
                    lazy_jobs = None;
                }
                read_up_to.set(if settled_parts & 1 != 0 {
                    left.min(failed_demand.saturating_sub(1))
                } else {
                    i64::MAX
                });
                let next_lazy = lazy_jobs
                    .as_mut()
                    .and_then(|j| j.peek())
                    .map(|q| (sched::limit_secs(q.limit), q.key));
                let next_later = later
                    .get(at)
                    .map(|&(limit, k)| (limit, deferred[k as usize].0));
                match (next_lazy, next_later) {
                    (Some(l), d) if d.is_none_or(|d| l < d) => {
                        let q = lazy_jobs.as_mut().and_then(|j| j.next()).expect("peeked");
                        let may = limited.is_some_and(|l| {
                            !l.blocked.contains_key(&q.id())
                                && !self.preemptor_waits(q.preempted_by)
                        });
                        if !may {
                            continue;
                        }
                        debug_assert_eq!(q.mask(), Some(1));
                        let how = Try::Optional(q.mask(), l.0);
                        ((q.key, q.id(), q.demand, how), None)
                    }
                    (_, Some(_)) => {
                        let e = deferred[later[at].1 as usize];
                        at += 1;
                        (*e, None)
                    }
                    _ => break,
                }
            };
            let (_, id, demand, how) = entry;
            let req = match how {
                Try::Given(i) => &requests[i],
                Try::Must | Try::Optional(..) => {
                    let settled = match how {
                        Try::Optional(Some(mask), _) => mask != 0 && mask & !settled_parts == 0,
                        Try::Optional(None, _) => match self.jobs.get(&id) {
                            Some(job) => self.pass_cache.settled(&job.partitions, &self.sched_cfg),
                            None => continue,
                        },
                        _ => false,
                    };
                    if settled && (demand > left || (!deferring && demand >= failed_demand)) {
                        continue;
                    }
                    // Where the pass has settled, a job that may be left
                    // out (never one due for a plan of its own) is one the
                    // pass defers: put aside without a look at it.
                    if let Try::Optional(_, limit) = how {
                        if deferring && settled && shortest {
                            debug_assert!(self.jobs.get(&id).is_none_or(|j| self
                                .pass_cache
                                .defers(&self.request_for(j), &self.sched_cfg)));
                            later.push((limit, deferred.len() as u32));
                            deferred.push(entry_ref.expect("read in order"));
                            continue;
                        }
                    }
                    let kept = match self.request_cache.get(&id) {
                        Some(kept) => {
                            debug_assert_eq!(
                                Some(&*kept.req),
                                self.jobs.get(&id).map(|j| self.request_for(j)).as_ref(),
                                "kept request of {id}"
                            );
                            kept
                        }
                        None => {
                            let Some(job) = self.jobs.get(&id) else {
                                continue;
                            };
                            let req = self.request_for(job);
                            let probe = self.pass_cache.probe(&req);
                            let kept = crate::KeptRequest {
                                req: Box::new(req),
                                probe,
                            };
                            self.request_cache.entry(id).or_insert(kept)
                        }
                    };
                    if settled && self.pass_cache.cannot_start_as(&kept.probe) {
                        if pool_spread && !deferring {
                            failed_demand = failed_demand.min(demand);
                        }
                        continue;
                    }
                    &kept.req
                }
            };
            if deferring && self.pass_cache.defers(req, &self.sched_cfg) {
                later.push((sched::limit_secs(req.time_limit), deferred.len() as u32));
                deferred.push(entry_ref.expect("read in order"));
                continue;
            }
            let record = match (how, records.as_deref_mut()) {
                (Try::Must, Some(records)) => self
                    .jobs
                    .get(&id)
                    .filter(|j| j.array.as_ref().is_some_and(|a| a.is_meta()))
                    .map(|j| (&**j, records)),
                _ => None,
            };
            if let Some((job, records)) = record {
                // As a full pass does (`collect_requests`): a request for
                // each task that could start now, each standing for the
                // next task.
                let room = records.limited.array_room.get(&id).copied();
                let mut tasks = Vec::new();
                if !self.push_array_requests(
                    job,
                    records.free_cpus,
                    room,
                    &mut tasks,
                    records.arrays,
                ) {
                    records.throttled.push(id);
                    continue;
                }
                for task in tasks {
                    more.push(task);
                    let task = &more[more.len() - 1];
                    let cache = &mut self.pass_cache;
                    if let Some(started) =
                        decide_more(cache, &self.sched_cfg, task, nodes, parts, plan)
                    {
                        left -= started;
                    }
                }
                settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
                continue;
            }
            // The pass's requests are read after it only to look for
            // preemptors: without preemption a kept request is tried
            // where it is.
            let req = match how {
                Try::Must | Try::Optional(..) if keep_requests => {
                    more.push(req.clone());
                    &more[more.len() - 1]
                }
                _ => req,
            };
            let cache = &mut self.pass_cache;
            match decide_more(cache, &self.sched_cfg, req, nodes, parts, plan) {
                Some(started) => {
                    settled_parts = self.pass_cache.settled_parts(&self.sched_cfg);
                    left -= started;
                }
                // Tried by limit, it could not start (no plan is made there).
                None if pool_spread && !deferring => failed_demand = failed_demand.min(demand),
                None => {}
            }
        }
        drop(lazy_jobs);
        if lazy.is_some() {
            self.queue = queue;
        }
    }

    /// Whether a pass may leave the job of `q` out where it would only
    /// wait: a plain pending job (no array) that a pass would try (not
    /// held, not waiting for a dependency, its begin time, a limit or a
    /// preemptor), already waiting for Priority.
    fn leavable(
        &self,
        q: &crate::queue::Queued,
        limited: &crate::limits::LimitCheck,
        now: Timestamp,
    ) -> bool {
        q.ready(now) && self.may_try(q, limited) && !q.array && q.by_priority
    }

    /// Whether neither a limit nor a preemptor it waits for keeps the
    /// pending job of `q` from a pass.
    fn may_try(&self, q: &crate::queue::Queued, limited: &crate::limits::LimitCheck) -> bool {
        !limited.blocked.contains_key(&q.id()) && !self.preemptor_waits(q.preempted_by)
    }

    /// The requests of a short pass: the new jobs `ids`, the planned and
    /// first blocked ones, and `startable` and `aged` (older jobs that
    /// could use the free CPUs, or are due for a plan of their own); `None`
    /// unless every new job comes after every job the last pass tried.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn short_pass(
        &self,
        ids: &[JobId],
        startable: Vec<&crate::queue::Queued>,
        aged: Vec<JobId>,
        parts: &[sched::PartView],
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
    ) -> Option<Pass> {
        let mut only: std::collections::BTreeSet<JobId> = ids.iter().copied().collect();
        only.extend(self.plans.keys().copied());
        only.extend(self.heads.iter().copied());
        only.extend(aged);
        // The older jobs that could use the free CPUs are tried only where
        // the pass has not shown they would wait (`walk_pass`), those that
        // a pass may leave out (plain ones waiting for Priority).
        let mut optional = Vec::new();
        for q in startable {
            if !self.walk_passes_off && !only.contains(&q.id()) && self.leavable(q, limited, now) {
                optional.push((
                    q.key,
                    q.id(),
                    q.demand,
                    q.mask(),
                    sched::limit_secs(q.limit),
                ));
            } else {
                only.insert(q.id());
            }
        }
        let mut pass = self.collect_requests(Some(only.iter().copied()), limited, free_cpus, now);
        pass.optional = optional;
        let last = self.last_order_key;
        let after = pass
            .requests
            .iter()
            .filter(|r| ids.contains(&r.job_id))
            .all(|r| Some(sched::order_key(r, parts)) > last);
        after.then_some(pass)
    }

    /// Whether, in a pass after submissions alone (nothing else since the
    /// last pass: no job ended, nothing was touched), the older jobs that
    /// need no more CPUs than are free cannot start either, so that the
    /// pass need not try them: where the last pass planned over the pool
    /// (`sched::PassCache::last_pooled`; this one does too, since
    /// `pool_exact` did not change, else it would go over every job), no
    /// job is ending (`may_complete`: a job being ended is expected gone a
    /// second after each pass, which moves its CPUs with the clock) and no
    /// running job has reached its time limit (the deadline index's first
    /// is later). Then no running job's expected end lies between the
    /// last pass and now (it would have ended or been ended), so neither
    /// does any plan's start (each starts at such an end or at another
    /// plan's end), and the free CPUs less the plans' stayed what they are
    /// now from the last pass to now. An older job that could not start
    /// then (or was shown so: `cannot_start_as`) found fewer CPUs than its
    /// own at some time of its run; as it needs no more than are free, that
    /// time is after now and within its run from now too; the new jobs,
    /// which come after it, only take CPUs away. (Jobs due for a plan of
    /// their own are tried all the same: `aged_waiting`.)
    pub(crate) fn older_jobs_wait(&mut self, now: Timestamp) -> bool {
        if self.may_complete || !self.pass_cache.last_pooled() {
            return false;
        }
        self.sync_deadlines();
        self.deadlines.first().is_none_or(|t| t > now)
    }

    /// Whether a pass could only tell the new jobs `ids` to wait, with
    /// reason Priority, and leave everything else as the last pass left it:
    /// each comes after every job the last pass tried, needs more CPUs than
    /// are free, and each of its partitions already has as many planned
    /// jobs as the policy plans (so it gets no plan of its own); every node
    /// is up (so it waits on busy nodes, not on down ones); every plan
    /// starts after `now` (so a pass would make each again as it is).
    pub(crate) fn fresh_cannot_start(
        &mut self,
        ids: &[JobId],
        parts: &[sched::PartView],
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
    ) -> bool {
        let reserve = match self.sched_cfg.policy {
            sched::Policy::Fcfs => return false,
            sched::Policy::Easy => 1,
            sched::Policy::Backfill => match self.sched_cfg.bf_job_part_count_reserve {
                Some(m) => m.max(1) as usize,
                None => return false,
            },
        };
        if ids.is_empty() || !self.nodes.iter().all(|n| n.takes_jobs()) {
            return false;
        }
        let mut planned = vec![0usize; parts.len()];
        for p in self.plans.values() {
            // A plan that starts by now was made from holds that time
            // moves: a job ending (completing, or past its limit) is
            // expected to be gone a second after each pass. A later plan
            // stays what a pass would make again: the holds that moved
            // are gone by its start either way.
            if p.start <= now {
                return false;
            }
            if let Some(c) = planned.get_mut(p.alloc.partition) {
                *c += 1;
            }
        }
        let mut last = self.last_order_key;
        for id in ids {
            let Some(job) = self.jobs.get(id) else {
                return false;
            };
            let plain = job.state == JobState::Pending
                && !job.completing
                && job.held.is_none()
                && job.dep_status == crate::DepStatus::Clear
                && job.desc.begin_time.is_none_or(|b| b <= now)
                && !limited.blocked.contains_key(id)
                && job.array.is_none()
                && job.preempted_by.is_none();
            if !plain {
                return false;
            }
            let req = self.request_for(job);
            let key = sched::order_key(&req, parts);
            let blocked = req.partitions.iter().all(|p| {
                planned.get(*p).is_some_and(|c| *c >= reserve)
                    && sched::placement::partition_refusal(&req, &parts[*p]).is_none()
            });
            if Some(key) <= last || sched::demand_cpus(&req) <= i64::from(free_cpus) || !blocked {
                return false;
            }
            last = Some(key);
        }
        self.last_order_key = last;
        true
    }

    /// After job ends (and submissions) only, or under FCFS after
    /// submissions alone, with one partition and the policy's one plan per
    /// partition (none under FCFS): the jobs a pass must try first so
    /// that, gone on with by `finish_prefix_pass`, it decides what a pass
    /// over every job decides. They are the first jobs of the queue in the
    /// order the pass tries jobs, as many as could use the free CPUs, and
    /// one beyond (the next first blocked job). The others are left out
    /// (`PrefixCheck::left_out`), those that must be tried all the same
    /// marked: `needed` (new jobs, planned ones, first blocked ones), the
    /// aged ones (`aged_test`) and the jobs that may not be left out
    /// (arrays, jobs whose reason is not Priority). A pass takes jobs in
    /// that order and a job's decision depends only on the jobs before it,
    /// so the prefix is decided as in a full pass. Only pending jobs a
    /// full pass would try count: held ones, ones waiting on a dependency,
    /// a limit or a preemptor are left out by both; ones waiting for their
    /// begin time are given to the pass (they get no decision). `None`
    /// when no job would be left out. Under FCFS the jobs that may be left
    /// out are never tried after the prefix (every one is behind its
    /// blocked job), so the queue is not walked past the prefix: the jobs
    /// that must be tried are found among `needed` and the queue's notable
    /// ones (`Queue::notable_after`), and the queue's length stands for
    /// the number left out; an FCFS pass over a deep queue then costs what
    /// its head costs, not what its whole queue does.
    pub(crate) fn freed_prefix(
        &self,
        needed: impl Iterator<Item = JobId>,
        limited: &crate::limits::LimitCheck,
        free_cpus: u32,
        now: Timestamp,
        bufs: &mut PrefixBufs,
    ) -> Option<PrefixCheck> {
        if self.prefix_passes_off {
            return None;
        }
        // Sorted, each once: read by binary search, and in id order.
        let PrefixBufs {
            needed: needed_buf,
            only,
            taken,
        } = bufs;
        needed_buf.clear();
        needed_buf.extend(needed);
        needed_buf.sort_unstable();
        needed_buf.dedup();
        let needed: &[JobId] = needed_buf;
        only.clear();
        taken.clear();
        let aged = self.aged_test(now);
        // Under FCFS the jobs left out that may be (`finish_prefix_pass`)
        // are never tried: past the prefix only the notable ones are
        // looked at (`Queue::notable_after`), not the whole queue.
        let fcfs = self.sched_cfg.policy == sched::Policy::Fcfs;
        taken.reserve(self.queue.len().min(free_cpus as usize + 2));
        // Past the prefix, only the jobs that must be tried are gathered
        // here; `finish_prefix_pass` reads the others it may try from the
        // queue.
        let mut rest: Vec<LeftOut> = Vec::new();
        // The first jobs in order, as many as the free CPUs could hold and
        // one beyond (each job needs a CPU at least: this many are enough):
        // `taken` once `prefix_done`.
        let free = i64::from(free_cpus);
        let (mut demand, mut prefix_done) = (0, false);
        let candidate = |q: &crate::queue::Queued, only: &mut Vec<JobId>| {
            let c = self.left_out_fact(q, needed, aged.as_ref(), limited, now);
            let ahead = q.begin().is_some_and(|b| b > now) && q.free && q.dep_clear;
            if c.is_none() && ahead && self.may_try(q, limited) {
                only.push(q.id());
            }
            c
        };
        // In the order a pass tries jobs (`left_out` must be, for
        // `finish_prefix_pass`).
        let mut n_prefix = 0;
        for q in self.queue.in_order() {
            n_prefix += 1;
            let Some(c) = candidate(q, only) else {
                continue;
            };
            let beyond = demand > free;
            demand += c.2;
            taken.push(c);
            prefix_done = beyond || taken.len() >= free_cpus as usize + 2;
            if prefix_done {
                break;
            }
        }
        let last = taken.last().map(|c| (c.0, c.1));
        // The jobs past the prefix a full pass would try (`n_rest`, as
        // many as decide whether the prefix pass is worth it) and the last
        // of them, counted from the queue's end.
        let (mut n_rest, mut rest_max) = (0, None);
        if prefix_done && !fcfs {
            let after = self
                .queue
                .in_order_back()
                .take(self.queue.len() - n_prefix)
                .filter(|q| q.ready(now) && self.may_try(q, limited));
            for q in after.take(self.prefix_min_left_out.max(1)) {
                rest_max = rest_max.max(Some(q.key));
                n_rest += 1;
            }
        }
        if prefix_done {
            // Those that must be tried: notable or needed, after the prefix.
            let after = |q: &&crate::queue::Queued| last.is_none_or(|l| (q.key, q.id()) > l);
            let notable = self.queue.notable_after(last.map(|l| l.0));
            // Jobs due for a plan of their own must be tried too.
            let aged_ids = if aged.is_some() {
                self.aged_waiting(now)
            } else {
                Vec::new()
            };
            let wanted = needed
                .iter()
                .chain(&aged_ids)
                .filter_map(|id| self.queue.get(*id));
            let mut picked: Vec<&crate::queue::Queued> =
                notable.chain(wanted).filter(after).collect();
            picked.sort_unstable_by_key(|q| (q.key, q.id()));
            picked.dedup_by_key(|q| (q.key, q.id()));
            rest.extend(
                picked
                    .into_iter()
                    .filter_map(|q| candidate(q, only))
                    .filter(|c| c.3),
            );
        }
        let max_left_key = if fcfs && prefix_done {
            // The last job a full pass would try, when it is left out.
            self.queue
                .in_order_back()
                .find(|q| q.ready(now) && self.may_try(q, limited))
                .map(|q| q.key)
                .filter(|k| last.is_none_or(|l| *k > l.0))
        } else {
            rest_max
        };
        // Leaving out a few jobs saves little, and when the check fails
        // the pass is made twice: only a long queue's tail is worth it
        // (under FCFS, where the tail is not walked, the queue's length
        // stands for it).
        let left_out = if fcfs && prefix_done {
            self.queue.len().saturating_sub(taken.len())
        } else {
            n_rest
        };
        if left_out < self.prefix_min_left_out.max(1) {
            return None;
        }
        only.extend(taken.iter().map(|c| c.1));
        only.sort_unstable();
        only.dedup();
        let check = PrefixCheck {
            max_left_key,
            last_taken: last.map(|l| l.0),
            needed: needed.to_vec(),
            left_out: rest,
        };
        Some(check)
    }

    /// What a pass over a prefix of the queue notes of the job of `q`
    /// where it leaves it out (`freed_prefix`): `None` where a full pass
    /// would not try it (completing, held, waiting for a dependency, its
    /// begin time, a limit or a preemptor).
    fn left_out_fact(
        &self,
        q: &crate::queue::Queued,
        needed: &[JobId],
        aged: Option<&impl Fn(&crate::queue::Queued) -> bool>,
        limited: &crate::limits::LimitCheck,
        now: Timestamp,
    ) -> Option<LeftOut> {
        if !q.ready(now) || !self.may_try(q, limited) {
            return None;
        }
        let leavable = !q.array && q.by_priority;
        let must = !leavable || needed.binary_search(&q.id()).is_ok() || aged.is_some_and(|a| a(q));
        Some((
            q.key,
            q.id(),
            q.demand,
            must,
            q.mask(),
            sched::limit_secs(q.limit),
        ))
    }

    /// Whether no pending job a full pass would try has a time limit (nor
    /// a --time-min) (`PrefixCheck::behind_plan`).
    pub(crate) fn pending_endless(
        &self,
        limited: &crate::limits::LimitCheck,
        now: Timestamp,
    ) -> bool {
        self.queue
            .in_order()
            .filter(|q| q.ready(now) && self.may_try(q, limited))
            .all(|q| q.endless)
    }

    /// Whether no job holding resources will end by itself: each runs
    /// without a time limit and is not completing.
    pub(crate) fn holders_endless(&self) -> bool {
        self.holding.keys().all(|id| {
            self.jobs.get(id).is_some_and(|j| {
                j.state == JobState::Running && !j.completing && j.limit_end().is_none()
            })
        })
    }

    /// The facts of pending jobs other than `fresh` that need no more CPUs than `free`
    /// (`sched::demand_cpus` of their request; array records always),
    /// neither completing nor held: the only older jobs a pass after
    /// submissions could start.
    pub(crate) fn startable_waiting<'a>(
        &'a self,
        fresh: &'a [JobId],
        free: u32,
    ) -> Vec<&'a crate::queue::Queued> {
        self.startable_waiting_iter(fresh, free).collect()
    }

    /// `startable_waiting`, not collected.
    pub(crate) fn startable_waiting_iter<'a>(
        &'a self,
        fresh: &'a [JobId],
        free: u32,
    ) -> impl Iterator<Item = &'a crate::queue::Queued> {
        self.queue
            .by_demand(..=(i64::from(free), JobId(u32::MAX)))
            .filter(move |q| !fresh.contains(&q.id()))
    }

    /// Pending jobs, neither completing nor held, that have waited at
    /// least `bf_age_reserve` or are due by `bf_slowdown_reserve` (none
    /// when both are off): a pass plans each of them, wherever it is in
    /// the queue.
    pub(crate) fn aged_waiting(&self, now: Timestamp) -> Vec<JobId> {
        let cfg = &self.sched_cfg;
        let Some(aged) = self.aged_test(now) else {
            return Vec::new();
        };
        // By slowdown alone, only jobs asking for at least the width of
        // some partition (CPUs, or nodes for whole-node jobs) can be due;
        // array records (key MIN) are looked at whatever they ask.
        let least = if cfg.bf_age_reserve.is_some() {
            i64::MIN
        } else {
            // The queue's sizes: made for this pass by `refresh_queue`.
            let smallest = self
                .queue
                .sizes()
                .iter()
                .map(|p| p.cpus.min(p.nodes))
                .min()
                .unwrap_or(0);
            smallest.saturating_mul(i64::from(cfg.bf_slowdown_reserve_width)) / 100
        };
        let arrays = self
            .queue
            .by_demand((i64::MIN, JobId(0))..=(i64::MIN, JobId(u32::MAX)));
        let others = self.queue.by_demand((least.max(i64::MIN + 1), JobId(0))..);
        arrays
            .chain(others)
            .filter(|q| aged(q))
            .map(|q| q.id())
            .collect()
    }

    /// Whether a pending job has waited long enough for a plan of its own
    /// (`aged_waiting`), from its facts in the queue; `None` when no
    /// setting gives such plans.
    fn aged_test(&self, now: Timestamp) -> Option<impl Fn(&crate::queue::Queued) -> bool + '_> {
        let cfg = &self.sched_cfg;
        // Only backfill plans a job for its age (FCFS plans none, EASY
        // only the first blocked one).
        if cfg.policy != sched::Policy::Backfill
            || cfg.bf_age_reserve.is_none() && cfg.bf_slowdown_reserve.is_none()
        {
            return None;
        }
        Some(move |q: &crate::queue::Queued| {
            sched::due_reservation(cfg, q.submit(), q.limit, || q.share, now)
        })
    }
}

/// Sorts the walk's deferred jobs, (time limit, place), which come in
/// the order of their places, by limit and then place: a counting sort
/// over the few distinct limits (a trace has a few dozen or a hundred)
/// instead of comparing every pair, at every pass, on a deep queue.
fn sort_by_limit(later: &mut Vec<(i64, u32)>) {
    debug_assert!(later.windows(2).all(|w| w[0].1 < w[1].1));
    let mut limits: Vec<(i64, usize)> = Vec::new();
    for &(limit, _) in later.iter() {
        match limits.last_mut() {
            Some(last) if last.0 == limit => last.1 += 1,
            _ => limits.push((limit, 1)),
        }
    }
    if limits.len() == 1 {
        return;
    }
    // Many distinct limits (a synthetic load's): by their minutes.
    if limits.len() > 64 {
        if let Some(sorted) = radix_by_minutes(later) {
            *later = sorted;
            debug_assert!(later.windows(2).all(|w| w[0] < w[1]));
            return;
        }
    }
    limits.sort_unstable_by_key(|l| l.0);
    limits.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 += b.1;
        }
        same
    });
    // Where each limit's run starts, then each entry put in its place in
    // the order it comes (places ascending within a limit).
    let mut start = 0;
    for l in &mut limits {
        let n = l.1;
        l.1 = start;
        start += n;
    }
    let mut sorted = vec![(0, 0); later.len()];
    for &e in later.iter() {
        let at = limits.partition_point(|l| l.0 < e.0);
        let slot = &mut limits[at].1;
        sorted[*slot] = e;
        *slot += 1;
    }
    *later = sorted;
    debug_assert!(later.windows(2).all(|w| w[0] < w[1]));
}

/// `later` (in the order of its places) sorted by limit and then place,
/// where every limit is whole minutes or `FOREVER` (`sched::limit_secs`'s
/// values; `None` elsewhere): a radix sort over the minutes, a byte at a
/// time from the lowest, each round keeping the order of the one before.
fn radix_by_minutes(later: &[(i64, u32)]) -> Option<Vec<(i64, u32)>> {
    let mut most = 0u64;
    for &(limit, _) in later {
        if limit == sched::FOREVER {
            continue;
        }
        if limit < 0 || limit % 60 != 0 {
            return None;
        }
        most = most.max((limit / 60) as u64);
    }
    // `FOREVER` after every limit in minutes.
    let key = |limit: i64| {
        if limit == sched::FOREVER {
            most + 1
        } else {
            (limit / 60) as u64
        }
    };
    let bits = u64::BITS - (most + 1).leading_zeros();
    let mut from = later.to_vec();
    let mut to = vec![(0, 0); later.len()];
    let mut shift = 0;
    while shift < bits {
        let digit = |limit: i64| ((key(limit) >> shift) & 0xff) as usize;
        let mut at = [0usize; 257];
        for e in &from {
            at[digit(e.0) + 1] += 1;
        }
        for d in 0..256 {
            at[d + 1] += at[d];
        }
        for &e in &from {
            let d = digit(e.0);
            to[at[d]] = e;
            at[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        shift += 8;
    }
    Some(from)
}

/// Whether a pass after job ends that tried only the jobs that could use
/// the free CPUs (and the new and first blocked ones) decided what a pass
/// over every job decides. With one partition and one planned job, every
/// job it left out needs more CPUs than are free (so cannot start) and
/// waits behind the last pass's first blocked jobs (so gets no plan, and
/// keeps its reason): that holds while each of those is still blocked and
/// planned.
pub(crate) fn freed_pass_holds(plan: &sched::Plan, old_heads: &[JobId]) -> bool {
    old_heads.iter().all(|h| plan.planned.contains_key(h))
}

/// The lists `Engine::freed_prefix` fills, kept from pass to pass
/// (`Engine::prefix_bufs`) so that none is made again.
#[derive(Clone, Debug, Default)]
pub(crate) struct PrefixBufs {
    /// The jobs the pass must try, sorted.
    needed: Vec<JobId>,
    /// The jobs the pass over the prefix tries, sorted (each once).
    pub(crate) only: Vec<JobId>,
    /// The prefix.
    taken: Vec<LeftOut>,
}

/// What must hold after a pass over a prefix of the queue
/// (`Engine::freed_prefix`) for the jobs it left out to keep their
/// decisions.
pub(crate) struct PrefixCheck {
    /// The order key of the last job left out.
    pub(crate) max_left_key: Option<sched::OrderKey>,
    /// The order key of the last job of the prefix: the jobs after it are
    /// left out.
    last_taken: Option<sched::OrderKey>,
    /// The jobs the pass must try wherever they are (new, planned, first
    /// blocked ones), sorted.
    needed: Vec<JobId>,
    /// The jobs left out that must be tried all the same, in the order a
    /// pass tries them (`finish_prefix_pass` reads those that may be left
    /// out from the queue).
    left_out: Vec<LeftOut>,
}

/// A job a pass over a prefix of the queue left out: (order key, id, CPUs
/// it needs, whether it must be tried all the same, its `parts_mask`, its
/// time limit in seconds).
type LeftOut = (sched::OrderKey, JobId, i64, bool, Option<u64>, i64);

/// The jobs left out of a pass over a prefix of the queue that may be
/// left out (`Engine::finish_prefix_pass`), where `Engine::walk` reads
/// them from the queue by time limit as it tries the jobs it defers: the
/// pending jobs after `after` in the order a pass tries them that a full
/// pass would try, leavable (no array, reason Priority) and not among
/// `must` (the jobs it must try, by id, sorted).
struct LazyLeftOut {
    after: Option<sched::OrderKey>,
    must: Vec<JobId>,
    now: Timestamp,
}

/// A job `Engine::walk` goes over: (order key, id, CPUs it needs, how).
type Walked = (sched::OrderKey, JobId, i64, Try);

/// How `Engine::walk` tries a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Try {
    /// Always, with the caller's request at this index.
    Given(usize),
    /// Always, with its own request.
    Must,
    /// Unless the pass has shown it would wait; with the job's
    /// partitions (`parts_mask`) and time limit in seconds. Never a job
    /// due for a plan of its own (`aged`: those must be tried).
    Optional(Option<u64>, i64),
}

impl PrefixCheck {
    /// True when the jobs left out that cannot start keep their decisions
    /// after `plan`: none gets a plan (one was made, which the policy's one
    /// per partition allows, or none can be) and each is behind a blocked
    /// job (the pass left one waiting for Resources), so its reason is
    /// Priority. Under FCFS (`fcfs`) no job gets a plan and every job
    /// behind a blocked one waits, so a blocked job is enough.
    /// `endless`: whether no job holding resources and no pending job the
    /// pass may start has a time limit (nor a --time-min), so that nothing
    /// comes free later and nothing can be planned (asked only where no
    /// plan was made).
    pub(crate) fn behind_plan(
        &self,
        plan: &sched::Plan,
        fcfs: bool,
        endless: impl FnOnce() -> bool,
    ) -> bool {
        let blocked = plan
            .decisions
            .iter()
            .any(|(_, d)| matches!(d, Decision::Wait(PendingReason::Resources)));
        blocked && (fcfs || !plan.planned.is_empty() || endless())
    }
}

/// Decides `req` after the jobs of the pass `cache` last made
/// (`sched::plan_more`), into `plan`: the CPUs it started, `None` when the
/// cache holds no pass.
fn decide_more(
    cache: &mut sched::PassCache,
    cfg: &sched::SchedConfig,
    req: &JobRequest,
    nodes: &[sched::NodeView],
    parts: &[sched::PartView],
    plan: &mut sched::Plan,
) -> Option<i64> {
    let view = sched::ClusterView {
        nodes,
        parts,
        jobs: std::slice::from_ref(req),
        // The pass's timeline holds the running jobs already.
        running: &[],
    };
    let next = sched::plan_more(&view, cfg, cache)?;
    let started = started_cpus(&next);
    plan.decisions.extend(next.decisions);
    plan.planned.extend(next.planned);
    plan.time_limits.extend(next.time_limits);
    plan.depth_reached |= next.depth_reached;
    Some(started)
}

/// The CPUs of the jobs `plan` starts.
fn started_cpus(plan: &sched::Plan) -> i64 {
    plan.decisions
        .iter()
        .map(|(_, d)| match d {
            Decision::Start(a) => a.nodes.iter().map(|n| i64::from(n.cpus)).sum(),
            Decision::Wait(_) => 0,
        })
        .sum()
}

/// The fewest jobs a pass over the head of the queue after job ends must
/// leave out to be tried (`Engine::freed_prefix`).
pub(crate) const PREFIX_MIN_LEFT_OUT: usize = 64;

#[cfg(test)]
mod tests {
    use super::sort_by_limit;
    use proptest::prelude::*;

    proptest! {
        /// The counting sort orders as sorting the pairs does.
        #[test]
        fn sort_by_limit_sorts_as_the_pairs_sort(
            limits in proptest::collection::vec(prop_oneof![Just(60i64), Just(3600), Just(i64::MAX / 4), 0..100_000i64], 0..300)
        ) {
            let mut later: Vec<(i64, u32)> =
                limits.iter().enumerate().map(|(k, &l)| (l, k as u32 * 2)).collect();
            let mut want = later.clone();
            want.sort_unstable();
            sort_by_limit(&mut later);
            prop_assert_eq!(later, want);
        }

        /// Also with many distinct limits in minutes (the radix sort).
        #[test]
        fn sort_by_limit_sorts_many_minutes_as_the_pairs_sort(
            minutes in proptest::collection::vec(prop_oneof![Just(None), (0..70_000i64).prop_map(Some)], 0..600)
        ) {
            let mut later: Vec<(i64, u32)> = minutes
                .iter()
                .enumerate()
                .map(|(k, m)| (m.map_or(sched::FOREVER, |m| m * 60), k as u32 * 3))
                .collect();
            let mut want = later.clone();
            want.sort_unstable();
            sort_by_limit(&mut later);
            prop_assert_eq!(later, want);
        }
    }
}
