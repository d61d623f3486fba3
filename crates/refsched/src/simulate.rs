//! The event loop and the four policies.
//!
//! Time jumps from one event to the next: a job's submission, a running
//! job's end (`start + run`), a reservation's start. At each time `t`,
//! first every job ending at `t` ends, then every job submitted at `t`
//! arrives (in trace order), then one scheduling pass runs. Jobs are tried
//! in priority order, which is trace order (the trace is sorted by
//! submission, ties in trace order): the waiting queue is kept in that
//! order, arrivals appended.
//!
//! A job occupies the profile (`crate::profile`) over `[start, start +
//! limit)`; it really ends at `start + run` (`run <= limit`), and gives back
//! the rest of its interval then.

use crate::profile::Profile;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

/// How far ahead `replan` plans: muster's `bf_window` default, 30 days.
pub const REPLAN_WINDOW_S: i64 = 43_200 * 60;

/// A scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Start jobs in priority order while the first one fits; stop at the
    /// first that does not.
    Fcfs,
    /// EASY backfilling: the first job that does not fit gets a reservation
    /// at its "shadow time", the earliest time enough processors come free
    /// by the running jobs' expected ends; later jobs start now when they
    /// fit and end by the shadow time or use only the processors the first
    /// job leaves over then (the "extra" processors). Recomputed at every
    /// pass.
    Easy,
    /// Conservative backfilling (Mu'alem & Feitelson 2001): every job gets a
    /// reservation when it arrives, at the earliest time it fits for its
    /// whole limit without delaying any other reservation, and starts when
    /// that time comes. When a job ends before its expected end the
    /// schedule is compressed: each waiting job in priority order moves to
    /// the earliest time it then fits, the others' reservations in place
    /// (never later than it was).
    Conservative,
    /// What muster's engine does with every blocked job planned
    /// (`bf_job_part_count_reserve=0`, `bf_resolution=1`): at every pass all
    /// reservations are thrown away and, in priority order, each waiting
    /// job gets the earliest start in the profile of the running jobs and
    /// the reservations made before it in this pass; one whose earliest
    /// start is now starts. A job's start may move later. A job whose
    /// earliest start is more than `Options::window` (muster's `bf_window`,
    /// 30 days) after now gets no reservation in that pass; with real traces
    /// this almost never happens.
    Replan,
}

impl Policy {
    /// `fcfs`, `easy`, `conservative` or `replan`.
    pub fn parse(text: &str) -> Option<Policy> {
        match text.to_ascii_lowercase().as_str() {
            "fcfs" => Some(Policy::Fcfs),
            "easy" => Some(Policy::Easy),
            "conservative" => Some(Policy::Conservative),
            "replan" => Some(Policy::Replan),
            _ => None,
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Easy => "easy",
            Policy::Conservative => "conservative",
            Policy::Replan => "replan",
        }
    }
}

/// One job, as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// The trace's job number.
    pub id: u64,
    /// Submission (seconds).
    pub submit: i64,
    /// How long it really runs (> 0).
    pub run: i64,
    /// Processors (1 to the machine's).
    pub procs: u32,
    /// The time limit the scheduler plans with (>= `run`).
    pub limit: i64,
}

/// How to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The policy.
    pub policy: Policy,
    /// `replan` only: the farthest a reservation may start after now
    /// (seconds); `REPLAN_WINDOW_S` by default.
    pub window: i64,
}

impl Options {
    /// `policy` with the default window.
    pub fn new(policy: Policy) -> Options {
        Options {
            policy,
            window: REPLAN_WINDOW_S,
        }
    }
}

/// What a simulation produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Each job's start, by index in the input.
    pub start: Vec<i64>,
    /// `conservative`: the first start each job was given (its reservation
    /// on arrival, which may be its start).
    pub first_plan: Vec<Option<i64>>,
    /// Scheduling passes (event times).
    pub passes: u64,
}

/// Not started yet.
const UNSTARTED: i64 = i64::MIN;

/// `replan` checks whether a job not placed yet could start now once every
/// this many placements.
const STOP_CHECK_EVERY: usize = 8;

/// A search that has to look at more freed regions than this looks
/// everywhere instead.
const MAX_REGIONS: usize = 16;

/// The freed regions kept: beyond, the older half is forgotten (and the
/// memos that need it with it).
const MAX_FREED: usize = 1 << 20;

/// What the last search for a job shape (processors, limit) showed: in
/// the profile as it was when `seen` freed regions had been logged, every
/// window of the shape starting in `[then, bound)` held an instant with
/// too few processors free before `bound`.
///
/// So now, for a job of that shape holding `[own, own + len)` (whose own
/// processors count as free there): a start before `bound` can fit only
/// if its window meets a region freed since (the profile only lost
/// processors elsewhere), or, when `own < bound`, reaches `own`. The first
/// case: the instant that lacked processors is still there and still
/// before `own`; the second is the only way the job's own processors can
/// make up for it.
#[derive(Clone, Copy, Debug, Default)]
struct Memo {
    bound: i64,
    seen: usize,
    /// Valid while equal to `Sim::epoch` (`replan` forgets every memo at
    /// once by moving on to the next epoch).
    epoch: u64,
}

/// Simulates `jobs` (sorted by submission; each no wider than `procs`,
/// `0 < run <= limit`) on a pool of `procs` processors.
pub fn simulate(jobs: &[Job], procs: u32, opts: &Options) -> Outcome {
    for w in jobs.windows(2) {
        assert!(w[0].submit <= w[1].submit, "jobs sorted by submission");
    }
    for j in jobs {
        assert!(
            j.procs >= 1 && j.procs <= procs && 0 < j.run && j.run <= j.limit,
            "job {} cannot run: {j:?} on {procs} processors",
            j.id
        );
    }
    let mut sim = Sim::new(jobs, procs, *opts);
    sim.run();
    Outcome {
        start: sim.start,
        first_plan: sim.first_plan,
        passes: sim.passes,
    }
}

struct Sim<'a> {
    jobs: &'a [Job],
    opts: Options,
    now: i64,
    /// Free processors now.
    free: i64,
    start: Vec<i64>,
    first_plan: Vec<Option<i64>>,
    /// Waiting jobs in priority order.
    waiting: VecDeque<u32>,
    /// Running jobs by real end.
    ends: BinaryHeap<Reverse<(i64, u32)>>,
    /// `easy` and `replan`: the running jobs until their expected ends.
    base: Option<Profile>,
    /// `conservative` and `replan`: running jobs and reservations.
    plan: Option<Profile>,
    /// Reservations by start.
    planned: BTreeSet<(i64, u32)>,
    /// Each waiting job's reservation.
    res: Vec<Option<i64>>,
    /// `replan`: some job got no reservation for the window.
    beyond_window: bool,
    /// `easy`: the first blocked job's shadow time and the extra processors
    /// left at the end of the last pass.
    easy_blocked: Option<(i64, i64)>,
    /// `conservative`: where processors came free (early ends, the places
    /// moved jobs left), in order; `freed_dropped` older ones forgotten.
    freed: VecDeque<(i64, i64)>,
    freed_dropped: usize,
    /// Each job's shape (processors, limit), numbered.
    shape: Vec<u32>,
    /// `conservative` and `replan`: per shape, the last search's lesson.
    memo: Vec<Memo>,
    epoch: u64,
    /// Where a search looks: disjoint ranges of starts, in order.
    ranges: Vec<(i64, i64)>,
    /// `replan`: the first `placed` waiting jobs are placed in the plan; the
    /// others, by processors and limit (with their number), are not, since
    /// none of them could start now.
    placed: usize,
    unplaced: BTreeMap<u32, BTreeMap<i64, u32>>,
    passes: u64,
}

impl<'a> Sim<'a> {
    fn new(jobs: &'a [Job], procs: u32, opts: Options) -> Sim<'a> {
        let total = i64::from(procs);
        let t0 = jobs.first().map_or(0, |j| j.submit);
        let base = matches!(opts.policy, Policy::Easy | Policy::Replan);
        let plan = matches!(opts.policy, Policy::Conservative | Policy::Replan);
        let mut shapes: Vec<(u32, i64)> = jobs.iter().map(|j| (j.procs, j.limit)).collect();
        shapes.sort_unstable();
        shapes.dedup();
        let n_shapes = shapes.len();
        let shape = jobs
            .iter()
            .map(|j| {
                shapes
                    .binary_search(&(j.procs, j.limit))
                    .expect("every shape is listed") as u32
            })
            .collect();
        Sim {
            jobs,
            opts,
            now: t0,
            free: total,
            start: vec![UNSTARTED; jobs.len()],
            first_plan: vec![None; jobs.len()],
            waiting: VecDeque::new(),
            ends: BinaryHeap::new(),
            base: base.then(|| Profile::new(total, t0)),
            plan: plan.then(|| Profile::new(total, t0)),
            planned: BTreeSet::new(),
            res: vec![None; jobs.len()],
            beyond_window: false,
            easy_blocked: None,
            freed: VecDeque::new(),
            freed_dropped: 0,
            shape,
            memo: vec![Memo::default(); n_shapes],
            epoch: 1,
            ranges: Vec::new(),
            placed: 0,
            unplaced: BTreeMap::new(),
            passes: 0,
        }
    }

    fn run(&mut self) {
        let mut next = 0;
        loop {
            let mut t = i64::MAX;
            if let Some(j) = self.jobs.get(next) {
                t = j.submit;
            }
            if let Some(Reverse((end, _))) = self.ends.peek() {
                t = t.min(*end);
            }
            if let Some(&(r, _)) = self.planned.first() {
                t = t.min(r);
            }
            if t == i64::MAX {
                break;
            }
            self.now = t;
            for p in [&mut self.base, &mut self.plan].into_iter().flatten() {
                p.advance(t);
            }
            let (mut ended, mut early) = (false, false);
            while let Some(&Reverse((end, j))) = self.ends.peek() {
                if end != t {
                    break;
                }
                self.ends.pop();
                ended = true;
                early |= self.finish(j);
            }
            let first_new = self.waiting.len();
            while let Some(job) = self.jobs.get(next) {
                if job.submit != t {
                    break;
                }
                self.waiting.push_back(next as u32);
                next += 1;
            }
            match self.opts.policy {
                Policy::Fcfs => self.fcfs_pass(),
                Policy::Easy => self.easy_pass(first_new, ended),
                Policy::Conservative => self.conservative_pass(first_new, early),
                Policy::Replan => self.replan_pass(first_new, early),
            }
            self.passes += 1;
        }
        debug_assert!(self.waiting.is_empty());
    }

    /// Job `j` ends now; whether before its expected end.
    fn finish(&mut self, j: u32) -> bool {
        let job = self.jobs[j as usize];
        let expected = self.start[j as usize] + job.limit;
        self.free += i64::from(job.procs);
        for p in [&mut self.base, &mut self.plan].into_iter().flatten() {
            p.release(self.now, expected, i64::from(job.procs));
        }
        if expected > self.now && self.opts.policy == Policy::Conservative {
            self.log_freed(self.now, expected);
        }
        expected > self.now
    }

    /// Starts job `j` now; `planned`: its interval is in `plan` already.
    fn start_job(&mut self, j: u32, planned: bool) {
        let job = self.jobs[j as usize];
        let procs = i64::from(job.procs);
        debug_assert!(procs <= self.free);
        self.start[j as usize] = self.now;
        self.free -= procs;
        self.ends.push(Reverse((self.now + job.run, j)));
        let end = self.now + job.limit;
        if let Some(b) = &mut self.base {
            b.occupy(self.now, end, procs);
        }
        if !planned {
            if let Some(p) = &mut self.plan {
                p.occupy(self.now, end, procs);
            }
        }
    }

    fn drop_started(&mut self) {
        let start = &self.start;
        self.waiting.retain(|&j| start[j as usize] == UNSTARTED);
    }

    fn fcfs_pass(&mut self) {
        while let Some(&j) = self.waiting.front() {
            if i64::from(self.jobs[j as usize].procs) > self.free {
                break;
            }
            self.waiting.pop_front();
            self.start_job(j, false);
        }
    }

    /// With nothing ended since the last pass, the jobs that pass tried
    /// would be refused again (as many processors free, the same shadow
    /// time and extra processors, a later `now`): only the arrivals are
    /// tried, against the state the last pass left.
    fn easy_pass(&mut self, first_new: usize, ended: bool) {
        let (begin, mut blocked) = if ended {
            (0, None)
        } else {
            (first_new, self.easy_blocked)
        };
        let mut any = false;
        for i in begin..self.waiting.len() {
            let j = self.waiting[i];
            let job = self.jobs[j as usize];
            let procs = i64::from(job.procs);
            match &mut blocked {
                None if procs <= self.free => {
                    self.start_job(j, false);
                    any = true;
                }
                None => {
                    let base = self.base.as_ref().expect("easy keeps the running jobs");
                    let shadow = base
                        .first_at_least(self.now, procs)
                        .expect("every running job ends");
                    blocked = Some((shadow, base.value_at(shadow) - procs));
                }
                Some((shadow, extra)) => {
                    if self.free == 0 {
                        break;
                    }
                    let ends_in_time = self.now + job.limit <= *shadow;
                    if procs <= self.free && (ends_in_time || procs <= *extra) {
                        if !ends_in_time {
                            *extra -= procs;
                        }
                        self.start_job(j, false);
                        any = true;
                    }
                }
            }
        }
        self.easy_blocked = blocked;
        if any {
            self.drop_started();
        }
    }

    /// Gives job `j` its reservation at the earliest time it fits in
    /// `plan`, or none (`replan`, beyond the window).
    fn place(&mut self, j: u32) {
        let job = self.jobs[j as usize];
        let procs = i64::from(job.procs);
        let x = self
            .search(j, i64::MAX)
            .expect("a job no wider than the machine fits at the end");
        let plan = self.plan.as_mut().expect("a reservation profile");
        if self.opts.policy == Policy::Replan && x - self.now > self.opts.window {
            self.res[j as usize] = None;
            self.beyond_window = true;
            return;
        }
        plan.occupy(x, x + job.limit, procs);
        self.res[j as usize] = Some(x);
        self.planned.insert((x, j));
        if self.opts.policy == Policy::Conservative {
            self.first_plan[j as usize].get_or_insert(x);
        }
    }

    /// Starts the jobs whose reservation is now.
    fn start_due(&mut self) {
        let mut any = false;
        while let Some(&(r, j)) = self.planned.first() {
            debug_assert!(r >= self.now, "reservation of job {j} passed");
            if r != self.now {
                break;
            }
            self.planned.pop_first();
            self.res[j as usize] = None;
            self.start_job(j, true);
            any = true;
        }
        if any {
            self.drop_started();
        }
    }

    /// Arrivals only (or ends at the expected time) leave every reservation
    /// as it was: only the arrivals are placed, after the others. An early
    /// end compresses the schedule first.
    fn conservative_pass(&mut self, first_new: usize, early: bool) {
        if early {
            self.compress(first_new);
        }
        for i in first_new..self.waiting.len() {
            self.place(self.waiting[i]);
        }
        self.start_due();
    }

    /// Moves each of the first `n` waiting jobs, in priority order, to the
    /// earliest time it fits if that is earlier than its reservation. Each
    /// move frees the place the job left, which later jobs may take.
    fn compress(&mut self, n: usize) {
        for i in 0..n {
            let j = self.waiting[i];
            let job = self.jobs[j as usize];
            let Some(r) = self.res[j as usize] else {
                continue;
            };
            if r == self.now {
                continue;
            }
            let Some(x) = self.search(j, r) else {
                continue;
            };
            let procs = i64::from(job.procs);
            let plan = self.plan.as_mut().expect("conservative keeps a plan");
            plan.release(r, r + job.limit, procs);
            plan.occupy(x, x + job.limit, procs);
            self.log_freed(r, r + job.limit);
            self.learn(j, x);
            self.planned.remove(&(r, j));
            self.planned.insert((x, j));
            self.res[j as usize] = Some(x);
        }
    }

    /// Notes that processors came free over `[start, end)`.
    fn log_freed(&mut self, start: i64, end: i64) {
        if self.freed.len() >= MAX_FREED {
            let half = MAX_FREED / 2;
            self.freed.drain(..half);
            self.freed_dropped += half;
        }
        self.freed.push_back((start, end));
    }

    /// Freed regions logged so far, forgotten ones included.
    fn freed_seen(&self) -> usize {
        self.freed_dropped + self.freed.len()
    }

    /// The earliest start before `own` of `job`, which holds
    /// `[own, own + limit)` (`i64::MAX`: nothing, then always found), in
    /// the plan; only where its shape's memo allows one. Updates the memo
    /// when nothing is found; `learn` does when the caller moves the job.
    fn search(&mut self, j: u32, own: i64) -> Option<i64> {
        let job = self.jobs[j as usize];
        let len = job.limit;
        let now = self.now;
        let memo = Some(self.memo[self.shape[j as usize] as usize]).filter(|m| {
            m.epoch == self.epoch
                && m.seen >= self.freed_dropped
                && self.freed_seen() - m.seen <= MAX_REGIONS
        });
        self.ranges.clear();
        match memo {
            None => self.ranges.push((now, own)),
            Some(m) => {
                let from = if own >= m.bound {
                    m.bound
                } else {
                    own - len + 1
                };
                self.ranges.push((from.max(now), own));
                let cap = m.bound.min(own);
                for &(a, b) in self.freed.range(m.seen - self.freed_dropped..) {
                    let (lo, hi) = ((a - len + 1).max(now), b.min(cap));
                    if lo < hi {
                        self.ranges.push((lo, hi));
                    }
                }
                if self.ranges.len() > 1 {
                    self.ranges.sort_unstable();
                    let mut merged = 0;
                    for k in 1..self.ranges.len() {
                        let (lo, hi) = self.ranges[k];
                        if lo <= self.ranges[merged].1 {
                            self.ranges[merged].1 = self.ranges[merged].1.max(hi);
                        } else {
                            merged += 1;
                            self.ranges[merged] = (lo, hi);
                        }
                    }
                    self.ranges.truncate(merged + 1);
                }
            }
        }
        let plan = self.plan.as_ref().expect("a reservation profile");
        let procs = i64::from(job.procs);
        let found = self
            .ranges
            .iter()
            .find_map(|&(lo, hi)| plan.earliest_in(procs, len, own, lo, hi));
        match found {
            Some(x) if own == i64::MAX => self.learn(j, x),
            Some(_) => {}
            None => {
                if memo.is_none_or(|m| own >= m.bound) {
                    self.learn(j, own);
                }
            }
        }
        found
    }

    /// Remembers that no window of job `j`'s shape starting before `bound`
    /// fits in the plan as it is now.
    fn learn(&mut self, j: u32, bound: i64) {
        self.memo[self.shape[j as usize] as usize] = Memo {
            bound,
            seen: self.freed_seen(),
            epoch: self.epoch,
        };
    }

    /// `replan`. The plan holds the reservations of the first `placed`
    /// waiting jobs, made in priority order as a full pass makes them; the
    /// others are left out while none of them could start now (a job's
    /// earliest start is now only if its processors are free from now for
    /// its whole limit in the plan of the jobs before it, and every job
    /// placed takes processors away), so they change nothing a pass
    /// decides. Nor do their reservations' starts: the earliest
    /// reservation of a plan starts at a running job's expected end, a job
    /// end (and a pass) in any case. After an early end (or while a job is
    /// beyond the window, which a later `now` may bring in) the plan is
    /// made again from the running jobs; otherwise it stands (nothing came
    /// free, so each placed job's earliest start is where it was) and the
    /// placing goes on where it stopped, the arrivals last.
    fn replan_pass(&mut self, first_new: usize, early: bool) {
        for i in first_new..self.waiting.len() {
            let j = self.waiting[i];
            self.unplaced_add(j);
        }
        if early || self.beyond_window {
            let base = self.base.as_ref().expect("replan keeps the running jobs");
            self.plan
                .as_mut()
                .expect("replan keeps a plan")
                .copy_from(base);
            for &(_, j) in &self.planned {
                self.res[j as usize] = None;
            }
            self.planned.clear();
            // Processors came free: what the searches showed is void.
            self.epoch += 1;
            self.beyond_window = false;
            for i in 0..self.placed {
                let j = self.waiting[i];
                self.unplaced_add(j);
            }
            self.placed = 0;
        }
        let mut tried = 0usize;
        while self.placed < self.waiting.len() {
            // The check costs a few descents: not before every job.
            if tried.is_multiple_of(STOP_CHECK_EVERY) && !self.unplaced_could_start() {
                break;
            }
            tried += 1;
            let j = self.waiting[self.placed];
            self.unplaced_remove(j);
            self.place(j);
            self.placed += 1;
        }
        let before = self.waiting.len();
        self.start_due();
        // Only placed jobs hold reservations: the started ones were among them.
        self.placed -= before - self.waiting.len();
    }

    fn unplaced_add(&mut self, j: u32) {
        let job = self.jobs[j as usize];
        *self
            .unplaced
            .entry(job.procs)
            .or_default()
            .entry(job.limit)
            .or_default() += 1;
    }

    fn unplaced_remove(&mut self, j: u32) {
        let job = self.jobs[j as usize];
        let limits = self.unplaced.get_mut(&job.procs).expect("an unplaced job");
        let n = limits.get_mut(&job.limit).expect("an unplaced job");
        *n -= 1;
        if *n == 0 {
            limits.remove(&job.limit);
            if limits.is_empty() {
                self.unplaced.remove(&job.procs);
            }
        }
    }

    /// Whether some job not placed yet could start now, in the plan as it
    /// is: one whose processors are free from now for its whole limit
    /// (the jobs placed after it only take processors away).
    fn unplaced_could_start(&self) -> bool {
        let plan = self.plan.as_ref().expect("replan keeps a plan");
        let free = plan.value_at(self.now);
        let free = u32::try_from(free).unwrap_or(0);
        self.unplaced.range(..=free).any(|(&procs, limits)| {
            let shortest = *limits.keys().next().expect("no empty classes");
            match plan.first_below(self.now, i64::from(procs)) {
                Some(t) => self.now + shortest <= t,
                None => true,
            }
        })
    }
}
