//! Setting the timeline up for a pass: the nodes taken in, and the
//! running jobs' shares and release times, kept from the last pass where
//! only some changed.

use super::*;

impl Timeline {
    /// Sets the timeline up for a pass over `nodes` and `running` at
    /// `now`, reusing what the last pass allocated (a pass after one event
    /// costs no allocation per node). `orders` are kept: the caller clears
    /// them when the partitions changed; kept, they are nearly sorted.
    ///
    /// With `Running::Changes`, only where the last pass kept its running
    /// jobs for these nodes and this resolution; false (and nothing done)
    /// elsewhere.
    pub(in crate::backfill) fn fill(
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
        let sizes_kept = !rebuilt && self.find_changed(nodes, hint, &mut changed);
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
            self.take_in_all(nodes);
        } else {
            self.take_in_changed(nodes, &changed);
        }
        self.changed_nodes = changed;
        debug_assert_eq!(self.free, nodes.iter().map(free_cpus).sum::<i64>());
        debug_assert!(self
            .free_now
            .iter()
            .zip(nodes)
            .all(|(f, n)| *f == free_cpus(n) as u64));
        self.forget_last_pass(nodes, sizes_kept);
        let from_scratch = !matches!(running, Running::Changes { .. }) && !incremental;
        self.set_up_pool(now, from_scratch);
        match running {
            Running::All(all) if incremental => {
                self.update_running(all);
                self.give_back_started();
            }
            Running::Changes { changed, gone } => {
                self.update_changes(changed, gone);
                self.give_back_started();
            }
            Running::All(all) => self.lay_out_running(all, now),
        }
        true
    }

    /// Puts in `changed` the nodes of `nodes` that differ from `base`
    /// (of the same length), looking only where `hint` and the last
    /// pass's starts say they may; whether each kept its CPUs.
    fn find_changed(
        &mut self,
        nodes: &[NodeView],
        hint: Option<&[usize]>,
        changed: &mut Vec<usize>,
    ) -> bool {
        let mut sizes_kept = true;
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
                    *changed,
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
        sizes_kept
    }

    /// Takes in nodes of another count: `base` and `work` made again, and
    /// every per-node table with them.
    fn take_in_all(&mut self, nodes: &[NodeView]) {
        // Placement never reads a node's name: copies without it cost
        // no allocation for a plain node.
        self.base = nodes
            .iter()
            .map(|n| NodeView {
                name: String::new(),
                features: n.features.clone(),
                gres: n.gres.clone(),
                cpu_ids_in_use: n.cpu_ids_in_use.clone(),
                part_cpus: n.part_cpus.clone(),
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
    }

    /// Takes in nodes of the same count: `work` back to `base`, the
    /// `changed` nodes copied, and the last pass's plans taken off their
    /// nodes.
    fn take_in_changed(&mut self, nodes: &[NodeView], changed: &[usize]) {
        // `work` back to `base` on every node (`free` and `hist` with
        // it), then the changed nodes taken from `nodes`; the others
        // are as `nodes` has them already.
        self.reset();
        for &i in changed {
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
            copy_vec(&mut b.cpu_ids_in_use, &n.cpu_ids_in_use);
            copy_vec(&mut b.part_cpus, &n.part_cpus);
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

    /// Forgets the last pass's starts and plans (`added`, `plan_starts`
    /// and their sums), its overlay counts and node orders, and takes the
    /// free CPUs of `base` and the largest node (`hist_top`) as they are.
    fn forget_last_pass(&mut self, nodes: &[NodeView], sizes_kept: bool) {
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
    }

    /// Takes the last pass's plans off `pool` and brings it to `now`, or
    /// makes it anew (`from_scratch`: every running job is laid out
    /// again; else from the kept jobs).
    fn set_up_pool(&mut self, now: Timestamp, from_scratch: bool) {
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
        if self.pool.is_none() || from_scratch {
            // No profile, or a new one made here: nothing of theirs is on.
            self.pool_started.clear();
        }
        if self.pool_wanted && (self.pool.is_none() || from_scratch) {
            // Made from the kept jobs (a set-up from scratch lays every
            // job on again: `lay_out_running`).
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
    }

    /// Lays out every running job from scratch, keeping them for the next
    /// pass where they come by job id.
    fn lay_out_running(&mut self, running: &[RunningJob], now: Timestamp) {
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
    }

    /// Takes off `pool` the last pass's starts' holds that no running job
    /// took over (`pool_started`).
    pub(super) fn give_back_started(&mut self) {
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
    pub(super) fn keep(&mut self, r: &RunningJob) {
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
    pub(super) fn unkeep(&mut self, id: JobId) {
        if let Some(o) = self.kept.remove(&id) {
            self.kept_until.remove(&(o.until, id));
            self.drop_running(&o);
        }
    }

    /// Takes off the shares the last pass's starts added.
    pub(super) fn drop_starts(&mut self) {
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
    pub(super) fn update_changes(&mut self, changed: &[RunningJob], gone: &[JobId]) {
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
    pub(super) fn update_running(&mut self, running: &[RunningJob]) {
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
    pub(super) fn drop_running(&mut self, o: &Kept) {
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

    /// A running job's shares, until `end` (`job`: kept for the next
    /// pass), with its release times put where `release` says.
    pub(super) fn add_running(
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
                part: alloc.partition as u32,
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
}
