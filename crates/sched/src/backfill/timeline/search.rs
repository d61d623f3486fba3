//! Where and when a job fits on the timeline: now, beside the plans
//! (`fits_now`), or at the earliest time something comes free
//! (`earliest`, bounded by `room_at_least`), on nodes or over the pool.

use super::*;
use crate::placement::{place_ranked, place_sorted, plain_candidates, PartView};
use std::ops::Bound;

impl Timeline {
    /// The earliest time up to `horizon` at which `job` fits for `d`
    /// seconds without touching any plan, and where.
    pub(in crate::backfill) fn earliest(
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
    pub(super) fn rebuild_changed(&mut self, t: Timestamp, d: i64) -> bool {
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
    pub(super) fn check_rebuilt(&mut self, t: Timestamp, d: i64) {
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
    pub(super) fn step_until_room(
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
    pub(super) fn place_at(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        now: bool,
    ) -> Option<Allocation> {
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
    pub(in crate::backfill) fn fits_now(
        &mut self,
        job: &JobRequest,
        parts: &[PartView],
        d: i64,
    ) -> Option<Allocation> {
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

    /// `earliest` in a pool pass: the first time from `not_before` up to
    /// `horizon` at which the partition's free CPUs, summed, stay at least
    /// the job's for `d` seconds. Placed on the nodes where that is now;
    /// later, an allocation without nodes (a plan holds CPUs, not nodes).
    pub(super) fn pool_earliest(
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
    pub(super) fn room_at_least(
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
    pub(super) fn room_at_least_in(
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
