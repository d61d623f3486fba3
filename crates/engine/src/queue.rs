//! The job table, which notes the jobs changed since the scheduler last
//! looked, and the queue: what a scheduling pass reads of every pending job,
//! in the order passes try them, kept from one pass to the next.
//!
//! A pass after job ends or submissions looks at thousands of pending jobs
//! to decide which it may leave out (`Engine::freed_prefix`,
//! `Engine::short_pass`). Read from the job records, that is several
//! scattered records per job (the job, its description, its partitions);
//! the queue keeps the few facts a pass reads together, and is brought up
//! to date from the jobs changed since (`JobTable::get_mut` and the other
//! changing calls note them), so that a pass reads no job it does not try.

use crate::{DepStatus, IdHash, Job};
use model::{JobId, JobState, PendingReason, TimeLimit, Timestamp};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

/// The jobs by id. Reads go to the map (`Deref`); every change goes
/// through a call here, which notes the job as changed for the queue.
#[derive(Clone, Debug, Default)]
pub(crate) struct JobTable {
    map: BTreeMap<JobId, Box<Job>>,
    /// Jobs that may have changed since `take_changed`.
    changed: Notes,
    /// The same since `take_wake_changed` (for `deadlines::Deadlines`).
    wake_changed: Notes,
    /// The same for the controller's watch stream, only while one is
    /// wanted (`Engine::set_watch_notes`): nothing is noted otherwise.
    watch_changed: Option<Notes>,
}

/// Job ids noted as changed (repeats allowed).
#[derive(Clone, Debug, Default)]
struct Notes {
    ids: Vec<JobId>,
    /// How long `ids` may grow before its repeats are dropped.
    dedup_at: usize,
}

impl Notes {
    /// Notes `id`. Passes take the notes, but none may come for a while
    /// (nothing to schedule while steps start and end in running jobs):
    /// the repeats are dropped whenever the notes double, so they stay
    /// within twice the jobs noted.
    fn note(&mut self, id: JobId) {
        if self.ids.len() >= self.dedup_at {
            self.ids.sort_unstable();
            self.ids.dedup();
            self.dedup_at = (2 * self.ids.len()).max(1024);
        }
        self.ids.push(id);
    }

    /// The ids noted, each once, in id order, into `out` (emptied first);
    /// none are left. The notes keep `out`'s room for the next ones: the
    /// two lists change places from take to take, and neither is made
    /// again.
    fn take(notes: &mut Notes, out: &mut Vec<JobId>) {
        out.clear();
        std::mem::swap(&mut notes.ids, out);
        notes.dedup_at = 0;
        out.sort_unstable();
        out.dedup();
    }
}

impl std::ops::Deref for JobTable {
    type Target = BTreeMap<JobId, Box<Job>>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl JobTable {
    /// The job, to change: noted as changed.
    pub(crate) fn get_mut(&mut self, id: &JobId) -> Option<&mut Box<Job>> {
        let job = self.map.get_mut(id)?;
        self.changed.note(*id);
        self.wake_changed.note(*id);
        if let Some(w) = &mut self.watch_changed {
            w.note(*id);
        }
        Some(job)
    }

    /// Tells a waiting job why it waits, at a pass at `now`: noted as
    /// changed only where its reason changed (the queue's facts and the
    /// deadlines read its reason, not when a pass last looked at it), so
    /// that the jobs a pass tells to wait again, as most are after each
    /// job end, cost the next pass nothing.
    pub(crate) fn tell_reason(&mut self, id: &JobId, reason: PendingReason, now: Timestamp) {
        let Some(job) = self.map.get_mut(id) else {
            return;
        };
        job.last_sched_eval = Some(now);
        if job.reason != reason {
            job.reason = reason;
            self.note(*id);
        }
    }

    pub(crate) fn insert(&mut self, id: JobId, job: Box<Job>) -> Option<Box<Job>> {
        self.note(id);
        self.map.insert(id, job)
    }

    pub(crate) fn remove(&mut self, id: &JobId) -> Option<Box<Job>> {
        self.note(*id);
        self.map.remove(id)
    }

    fn note(&mut self, id: JobId) {
        self.changed.note(id);
        self.wake_changed.note(id);
        if let Some(w) = &mut self.watch_changed {
            w.note(id);
        }
    }

    /// Starts (or stops) noting changed jobs for the watch stream.
    pub(crate) fn set_watch_notes(&mut self, on: bool) {
        match (on, self.watch_changed.is_some()) {
            (true, false) => self.watch_changed = Some(Notes::default()),
            (false, true) => self.watch_changed = None,
            _ => {}
        }
    }

    /// The jobs changed since the last call, for the watch stream (each
    /// once, in id order; none while it is off).
    pub(crate) fn take_watch_changed(&mut self, out: &mut Vec<JobId>) {
        match &mut self.watch_changed {
            Some(w) => Notes::take(w, out),
            None => out.clear(),
        }
    }

    /// The jobs changed since the last call (each once, in id order: a
    /// job's facts are entered once, from the job as it is now).
    fn take_changed(&mut self, out: &mut Vec<JobId>) {
        Notes::take(&mut self.changed, out)
    }

    /// `take_changed` for the deadlines, which take their own notes.
    pub(crate) fn take_wake_changed(&mut self, out: &mut Vec<JobId>) {
        Notes::take(&mut self.wake_changed, out)
    }

    /// The jobs noted for the deadlines and not yet taken (repeats
    /// allowed).
    pub(crate) fn wake_changed(&self) -> &[JobId] {
        &self.wake_changed.ids
    }

    /// A job, changed without a note (tests of the checks that catch it).
    #[cfg(test)]
    pub(crate) fn map_mut(&mut self, id: &JobId) -> &mut Job {
        self.map.get_mut(id).expect("job")
    }
}

/// What a pass reads of one pending job (`Queue`). Compact (88 bytes, its
/// order key included): passes walk the whole queue, and on a deep one
/// that walk is bound by memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Queued {
    /// Its order key (`sched::order_key` of the request it makes), which
    /// holds its submit time and id.
    pub(crate) key: sched::OrderKey,
    /// The CPUs it asks for (`demand_cpus`).
    pub(crate) demand: i64,
    /// Its partitions as a bit set (`parts_mask`), where `masked`.
    mask: u64,
    masked: bool,
    /// Neither completing nor held.
    pub(crate) free: bool,
    /// No dependency outstanding.
    pub(crate) dep_clear: bool,
    /// Its begin time (`NO_BEGIN`: none).
    begin: Timestamp,
    /// An array record (a whole array or a task with its own record).
    pub(crate) array: bool,
    /// Its reason is Priority.
    pub(crate) by_priority: bool,
    pub(crate) preempted_by: Option<JobId>,
    /// No time limit and no --time-min: it would never end.
    pub(crate) endless: bool,
    pub(crate) limit: TimeLimit,
    /// What it asks for of its partitions (`sched::due_reservation`).
    pub(crate) share: sched::Share,
    /// Its tasks may go on any free CPUs (`spreads`).
    pub(crate) spreads: bool,
}

/// `Queued::begin` of a job without a begin time.
const NO_BEGIN: Timestamp = Timestamp::MIN;

impl Queued {
    pub(crate) fn id(&self) -> JobId {
        self.key.3
    }

    pub(crate) fn submit(&self) -> Timestamp {
        self.key.2
    }

    /// Its partitions as a bit set (`parts_mask`).
    pub(crate) fn mask(&self) -> Option<u64> {
        self.masked.then_some(self.mask)
    }

    pub(crate) fn begin(&self) -> Option<Timestamp> {
        (self.begin != NO_BEGIN).then_some(self.begin)
    }

    /// Whether a pass would try it for its own sake at `now`, but for
    /// limits and preemption: not completing, not held, no dependency
    /// outstanding, its begin time come.
    pub(crate) fn ready(&self, now: Timestamp) -> bool {
        self.free && self.dep_clear && self.begin().is_none_or(|b| b <= now)
    }

    /// Whether a pass over a prefix of the queue must look at it even
    /// where it leaves out the jobs that may be left out (FCFS's, in
    /// `Engine::freed_prefix`): an array record or a job whose reason is
    /// not Priority (it must be tried), or one with a begin time (it may
    /// still be ahead, and the pass tells it).
    fn notable(&self) -> bool {
        self.array || !self.by_priority || self.begin != NO_BEGIN
    }
}

/// What the queue's facts depend on beyond the job: the partitions'
/// priority tiers and sizes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) tiers: Vec<u32>,
    pub(crate) sizes: Vec<sched::PartSize>,
    /// Memory is a consumable resource (`Settings::memory_consumable`).
    pub(crate) memory_consumable: bool,
    /// Per partition: a job that asks for no memory gets a default that
    /// no node can run short of (none, or 0: the whole node's, while
    /// memory is not consumable), `Engine::mem_request`.
    pub(crate) no_mem_spreads: Vec<bool>,
    /// Some node gives whole cores of several threads
    /// (`Settings::smt_whole_cores`): no job spreads.
    pub(crate) whole_cores: bool,
}

/// Every pending job's facts but held jobs' (`queued`), in the order a
/// pass tries jobs and by the CPUs it asks for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Queue {
    by_order: BTreeMap<sched::OrderKey, Queued>,
    /// The same by (`pending_key`, id).
    by_demand: BTreeMap<(i64, JobId), Queued>,
    /// The same by (time limit in seconds, `sched::limit_secs`, order
    /// key): the order in which a pass tries the jobs it defers
    /// (`bf_order=shortest`), read by `Engine::walk` as far as the CPUs
    /// left go, instead of collecting and sorting every job it defers.
    by_limit: BTreeMap<(i64, sched::OrderKey), Queued>,
    /// Where each job is entered.
    at: HashMap<JobId, (sched::OrderKey, i64), IdHash>,
    /// How many of the jobs do not spread (`Queued::spreads`).
    unspread: usize,
    /// The order keys of the jobs a pass over a prefix of the queue may
    /// not leave out unlooked at (`Queued::notable`).
    notable: BTreeSet<sched::OrderKey>,
    setting: Setting,
    /// The last update's changed jobs (a buffer kept for the next).
    changed: Vec<JobId>,
}

impl Queue {
    /// Brings the queue up to date with `jobs` under `setting`: only the
    /// jobs changed since the last call, unless the setting changed.
    /// `setting` is `None` where it is the queue's own (`has_setting`).
    pub(crate) fn update(&mut self, jobs: &mut JobTable, setting: Option<Setting>) {
        let mut changed = std::mem::take(&mut self.changed);
        jobs.take_changed(&mut changed);
        self.update_with(jobs, &changed, setting);
        self.changed = changed;
    }

    /// Whether the facts were made with these partitions' tiers and sizes.
    pub(crate) fn has_setting(
        &self,
        tiers: impl Iterator<Item = u32>,
        sizes: impl Iterator<Item = sched::PartSize>,
        memory_consumable: bool,
        no_mem_spreads: impl Iterator<Item = bool>,
        whole_cores: bool,
    ) -> bool {
        self.setting.whole_cores == whole_cores
            && self.setting.tiers.iter().copied().eq(tiers)
            && self.setting.sizes.iter().copied().eq(sizes)
            && self.setting.memory_consumable == memory_consumable
            && self
                .setting
                .no_mem_spreads
                .iter()
                .copied()
                .eq(no_mem_spreads)
    }

    /// Whether every pending job's tasks may go on any free CPUs
    /// (`sched::spreads`): what `sched::PassCache::queue_spreads` says.
    pub(crate) fn all_spread(&self) -> bool {
        self.unspread == 0
    }

    fn update_with(&mut self, jobs: &JobTable, changed: &[JobId], setting: Option<Setting>) {
        if let Some(setting) = setting.filter(|s| *s != self.setting) {
            self.setting = setting;
            self.by_order.clear();
            self.by_demand.clear();
            self.by_limit.clear();
            self.at.clear();
            self.notable.clear();
            self.unspread = 0;
            for job in jobs.values() {
                self.enter(job);
            }
            return;
        }
        for &id in changed {
            let job = jobs.get(&id).filter(|j| queued(j));
            let entered = self.at.get(&id).copied();
            if let (Some(job), Some((key, pkey))) = (job, entered) {
                // Most jobs a pass notes keep their place (a pass notes
                // every job it tells a reason): changed in place.
                let (new_pkey, q) = facts(job, &self.setting);
                let same_limit = self.by_order.get(&key).is_some_and(|o| o.limit == q.limit);
                if q.key == key && new_pkey == pkey && same_limit {
                    self.set_in_place(q, pkey);
                    continue;
                }
            }
            if let Some((key, pkey)) = entered {
                self.at.remove(&id);
                if let Some(old) = self.by_order.remove(&key) {
                    self.by_limit.remove(&(sched::limit_secs(old.limit), key));
                    self.unspread -= usize::from(!old.spreads);
                }
                self.by_demand.remove(&(pkey, id));
                self.notable.remove(&key);
            }
            if let Some(job) = job {
                self.enter(job);
            }
        }
    }

    /// Replaces the facts of a job entered with the same order key and
    /// demand key.
    fn set_in_place(&mut self, q: Queued, pkey: i64) {
        let Some(old) = self.by_order.get_mut(&q.key) else {
            return;
        };
        if *old == q {
            return;
        }
        let was_notable = old.notable();
        self.unspread = self.unspread + usize::from(!q.spreads) - usize::from(!old.spreads);
        *old = q;
        if let Some(d) = self.by_demand.get_mut(&(pkey, q.id())) {
            *d = q;
        }
        if let Some(l) = self.by_limit.get_mut(&(sched::limit_secs(q.limit), q.key)) {
            *l = q;
        }
        if was_notable != q.notable() {
            if q.notable() {
                self.notable.insert(q.key);
            } else {
                self.notable.remove(&q.key);
            }
        }
    }

    fn enter(&mut self, job: &Job) {
        if !queued(job) {
            return;
        }
        let (pkey, q) = facts(job, &self.setting);
        self.by_order.insert(q.key, q);
        self.by_demand.insert((pkey, job.id), q);
        self.by_limit.insert((sched::limit_secs(q.limit), q.key), q);
        self.at.insert(job.id, (q.key, pkey));
        self.unspread += usize::from(!q.spreads);
        if q.notable() {
            self.notable.insert(q.key);
        }
    }

    /// The pending jobs in the order a pass tries them.
    pub(crate) fn in_order(&self) -> impl Iterator<Item = &Queued> {
        self.by_order.values()
    }

    /// The pending jobs after `key` (all: `None`) in the order a pass
    /// tries them.
    pub(crate) fn in_order_after(
        &self,
        key: Option<sched::OrderKey>,
    ) -> impl Iterator<Item = &Queued> {
        let from = key.map_or(Bound::Unbounded, Bound::Excluded);
        self.by_order
            .range((from, Bound::Unbounded))
            .map(|(_, q)| q)
    }

    /// The pending jobs by time limit (`sched::limit_secs`) and then in
    /// the order a pass tries them: the order of the jobs a pass defers.
    pub(crate) fn by_limit(&self) -> impl Iterator<Item = &Queued> {
        self.by_limit.values()
    }

    /// The fewest CPUs a pending job that is not an array record asks for
    /// (`None`: there is none).
    pub(crate) fn least_demand(&self) -> Option<i64> {
        self.by_demand
            .range((i64::MIN + 1, JobId(0))..)
            .next()
            .map(|((d, _), _)| *d)
    }

    /// The pending jobs from the last a pass tries to the first.
    pub(crate) fn in_order_back(&self) -> impl Iterator<Item = &Queued> {
        self.by_order.values().rev()
    }

    /// How many jobs are pending.
    pub(crate) fn len(&self) -> usize {
        self.by_order.len()
    }

    /// The notable jobs (`Queued::notable`) after `key` (all: `None`), in
    /// the order a pass tries them.
    pub(crate) fn notable_after(
        &self,
        key: Option<sched::OrderKey>,
    ) -> impl Iterator<Item = &Queued> {
        let from = key.map_or(Bound::Unbounded, Bound::Excluded);
        self.notable
            .range((from, Bound::Unbounded))
            .filter_map(|k| self.by_order.get(k))
    }

    /// The pending jobs, neither completing nor held, whose
    /// (`pending_key`, id) is in `range`.
    pub(crate) fn by_demand(
        &self,
        range: impl std::ops::RangeBounds<(i64, JobId)>,
    ) -> impl Iterator<Item = &Queued> {
        self.by_demand
            .range(range)
            .map(|(_, q)| q)
            .filter(|q| q.free)
    }

    /// The partitions' sizes the facts were made with.
    pub(crate) fn sizes(&self) -> &[sched::PartSize] {
        &self.setting.sizes
    }

    /// A pending job's facts.
    pub(crate) fn get(&self, id: JobId) -> Option<&Queued> {
        self.by_order.get(&self.at.get(&id)?.0)
    }

    /// What is wrong with the queue against `jobs` (for
    /// `Engine::check_invariants`): it must hold what entering every
    /// pending job afresh gives, once the changed jobs are brought in.
    pub(crate) fn problems(&self, jobs: &JobTable) -> Vec<String> {
        let mut now = self.clone();
        now.update_with(jobs, &jobs.changed.ids, None);
        let mut fresh = Queue {
            setting: self.setting.clone(),
            ..Queue::default()
        };
        for job in jobs.values() {
            fresh.enter(job);
        }
        let mut problems = Vec::new();
        if now.by_order != fresh.by_order {
            let stale = now
                .by_order
                .iter()
                .filter(|(k, q)| fresh.by_order.get(k) != Some(q))
                .map(|(_, q)| q.id());
            let missing = fresh
                .by_order
                .iter()
                .filter(|(k, q)| now.by_order.get(k) != Some(q))
                .map(|(_, q)| q.id());
            problems.push(format!(
                "the queue holds stale facts of {:?} and lacks {:?}",
                stale.collect::<Vec<_>>(),
                missing.collect::<Vec<_>>()
            ));
        }
        if now.by_demand != fresh.by_demand
            || now.by_limit != fresh.by_limit
            || now.at != fresh.at
            || now.notable != fresh.notable
        {
            problems.push("the queue's indexes disagree with its jobs".into());
        }
        problems
    }
}

/// Whether the queue holds `job`: pending and not held. A pass never
/// tries a held job, and the queue's three orders and index cost about
/// 850 bytes a job: 10,000 held jobs entered at the first pass after a
/// restart made the restarted controller 8 MB larger than the one before
/// it, which had run no pass since they came (issue 44). Holding and
/// releasing go through the job table, so the next pass takes a job out
/// or puts it back.
fn queued(job: &Job) -> bool {
    job.state == JobState::Pending && job.held.is_none()
}

/// A pending job's `pending_key` and facts (its order key too:
/// `sched::order_key` of the request it makes, without making it).
fn facts(job: &Job, setting: &Setting) -> (i64, Queued) {
    let tier = job
        .partitions
        .iter()
        .filter_map(|p| setting.tiers.get(*p))
        .copied()
        .max()
        .unwrap_or(0);
    let key = (
        std::cmp::Reverse(tier),
        std::cmp::Reverse(job.priority),
        job.submit_time,
        job.id,
    );
    let demand = demand_cpus(job);
    let mine = job
        .partitions
        .iter()
        .filter_map(|&p| setting.sizes.get(p).copied());
    let mask = parts_mask(&job.partitions);
    let q = Queued {
        key,
        demand,
        mask: mask.unwrap_or(0),
        masked: mask.is_some(),
        free: !job.completing && job.held.is_none(),
        dep_clear: job.dep_status == DepStatus::Clear,
        begin: job.desc.begin_time.unwrap_or(NO_BEGIN),
        array: job.array.is_some(),
        by_priority: job.reason == PendingReason::Priority,
        preempted_by: job.preempted_by,
        endless: job.time_limit == TimeLimit::Unlimited && job.desc.time_min.is_none(),
        limit: job.time_limit,
        share: sched::Share::of(demand, job.desc.exclusive, mine),
        spreads: spreads(job, setting),
    };
    (pending_key(job), q)
}

/// Whether `job`'s request (`Engine::request_for`) spreads
/// (`sched::spreads`), read from what the job asked for: a job that does
/// is one that asked for no node counts, tasks per node, CPUs per task
/// above one, whole nodes, GRES, nodes, exclusions, constraints or
/// `--time-min`, and for memory only where none binds (`Setting`). A job
/// whose request spreads only because its node list names no known node
/// is counted as not spreading.
fn spreads(job: &Job, setting: &Setting) -> bool {
    let d = &job.desc;
    let mem = match (d.mem_per_node, d.mem_per_cpu, d.mem_per_gpu) {
        (Some(0), _, _) => !setting.memory_consumable,
        (None, None, None) => setting.no_mem_spreads.get(job.partition) == Some(&true),
        _ => false,
    };
    mem && !d.exclusive
        && !setting.whole_cores
        && d.ntasks_per_node.is_none()
        && job.min_nodes <= 1
        && job.max_nodes >= job.ntasks
        && d.cpus_per_task.unwrap_or(1) <= 1
        && d.gres.is_empty()
        && d.gpus.is_none()
        && d.gpus_per_node.is_none()
        && d.gpus_per_task.is_none()
        && d.cpus_per_gpu.is_none()
        && d.nodelist.is_empty()
        && d.exclude.is_empty()
        && d.constraint.is_none()
        && d.time_min.is_none()
}

/// A job's partitions as a bit set (`sched::PassCache::settled_parts`),
/// where every index is below 64: `Engine::walk` reads them without a look
/// at the job.
pub(crate) fn parts_mask(partitions: &[usize]) -> Option<u64> {
    partitions
        .iter()
        .try_fold(0u64, |m, &p| (p < 64).then(|| m | 1 << p))
}

/// A pending job's key in `Engine::queue`'s index by demand: the CPUs it asks for
/// (`demand_cpus`), `i64::MIN` for an array record (each pass may start
/// some of its tasks whatever one asks).
pub(crate) fn pending_key(j: &Job) -> i64 {
    if j.array.is_some() {
        i64::MIN
    } else {
        demand_cpus(j)
    }
}

/// The CPUs a pending job asks for, counted as `sched::demand_cpus` counts
/// its request (nodes for whole-node jobs).
pub(crate) fn demand_cpus(j: &Job) -> i64 {
    let d = &j.desc;
    let cpt = i64::from(d.cpus_per_task.unwrap_or(1).max(1));
    let tasks = match d.ntasks_per_node {
        Some(tpn) => i64::from(tpn) * i64::from(j.min_nodes.max(1)),
        None => i64::from(j.ntasks.max(1)),
    };
    if d.exclusive {
        i64::from(j.min_nodes.max(1))
    } else {
        tasks * cpt
    }
}

#[cfg(test)]
mod tests {
    use super::parts_mask;
    use crate::tests::{desc, engine, submit, submit_blocker, user};
    use model::JobState;

    #[test]
    fn the_queue_follows_every_change_made_through_the_table() {
        let mut e = engine();
        let a = submit_blocker(&mut e, 0);
        let b = submit(&mut e, desc(), 1);
        let c = submit(&mut e, desc(), 2);
        e.on_hold(c, true, &user()).unwrap();
        e.refresh_queue();
        let order: Vec<_> = e.queue.in_order().map(|q| q.id()).collect();
        // a holds every CPU; b waits; c, held, is not queued.
        assert_eq!(e.jobs[&a].state, JobState::Running);
        assert_eq!(order, vec![b]);
        assert!(e.queue.get(c).is_none(), "held");
        assert_eq!(
            e.queue.by_demand(..).map(|q| q.id()).collect::<Vec<_>>(),
            vec![b]
        );
        // Released, it is queued again, in its place.
        e.on_release(c, &user()).unwrap();
        e.refresh_queue();
        let order: Vec<_> = e.queue.in_order().map(|q| q.id()).collect();
        assert_eq!(order, vec![b, c]);
        assert!(e.queue.get(c).unwrap().free);
        assert!(
            e.check_invariants().is_empty(),
            "{:?}",
            e.check_invariants()
        );
    }

    #[test]
    fn notes_of_one_job_stay_few_without_a_pass() {
        let mut notes = super::Notes::default();
        for _ in 0..100_000 {
            notes.note(model::JobId(7));
        }
        assert!(notes.ids.len() <= 1024, "{}", notes.ids.len());
        notes.note(model::JobId(8));
        let mut ids = notes.ids.clone();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids, vec![model::JobId(7), model::JobId(8)]);
    }

    #[test]
    fn a_change_that_bypasses_the_table_is_caught() {
        let mut e = engine();
        submit_blocker(&mut e, 0);
        let a = submit(&mut e, desc(), 1);
        e.refresh_queue();
        assert!(e.check_invariants().is_empty());
        e.jobs.map_mut(&a).priority += 1;
        let problems = e.check_invariants();
        assert!(
            problems.iter().any(|p| p.contains("stale facts")),
            "{problems:?}"
        );
    }

    #[test]
    fn parts_mask_is_a_bit_per_partition_below_64() {
        assert_eq!(parts_mask(&[]), Some(0));
        assert_eq!(parts_mask(&[0, 2]), Some(0b101));
        assert_eq!(parts_mask(&[2, 0, 2]), Some(0b101));
        assert_eq!(parts_mask(&[63]), Some(1 << 63));
        assert_eq!(parts_mask(&[1, 64]), None);
    }
}
