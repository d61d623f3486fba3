//! Laying the pass's decisions on the timeline: a start holds its nodes
//! from now (`start`), a plan holds them over its interval on nodes
//! (`reserve`) or its CPUs over the pool (`reserve_cpus`).

use super::*;

impl Timeline {
    pub(in crate::backfill) fn start(&mut self, d: i64, alloc: &Allocation) {
        self.reset();
        self.overlay_free.clear();
        for na in &alloc.nodes {
            let i = na.node.0 as usize;
            let h = Hold {
                until: self.now + d,
                share: na.clone(),
                exclusive: alloc.exclusive,
                job: None,
                part: alloc.partition as u32,
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

    /// `reserve` in a pool pass: `cpus` held over `[start, start + d)`.
    pub(in crate::backfill) fn reserve_cpus(&mut self, start: Timestamp, d: i64, cpus: i64) {
        let end = start.saturating_add(d);
        // `shortened_start` looks for the gaps before plans here.
        self.plan_starts.entry(start).or_default();
        self.pool_take(start, end, cpus);
        self.pool_pass_holds.push((start, end, cpus));
    }

    pub(in crate::backfill) fn reserve(&mut self, start: Timestamp, d: i64, alloc: &Allocation) {
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

    /// `MaxCPUsPerNode`: the CPUs of a start or a plan of a partition with
    /// the cap, counted against the partition's budget on each node
    /// (`NodeView::part_cpus`): a start's until its end (as a running
    /// job's, `apply`), a plan's from now to the end of the pass, before
    /// it starts and after it ends as well (conservative: the pass never
    /// plans a job of the partition beyond the cap, and may plan one later
    /// than it could; the next pass takes the nodes' counts from the views
    /// again).
    pub(in crate::backfill) fn hold_part_cpus(&mut self, alloc: &Allocation) {
        for na in &alloc.nodes {
            let i = na.node.0 as usize;
            if i >= self.base.len() {
                continue;
            }
            crate::placement::add_part_cpus(&mut self.base[i].part_cpus, alloc.partition, na.cpus);
            crate::placement::add_part_cpus(&mut self.work[i].part_cpus, alloc.partition, na.cpus);
            // Compared with the views again at the next pass's set-up.
            self.started_at.push(i);
        }
    }
}
