//! The event loop and the five policies.
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
    /// muster's default (`bf_job_part_count_reserve=1`,
    /// `bf_slowdown_reserve=1`, `bf_slowdown_reserve_width=25`,
    /// `bf_order=shortest`, `bf_resolution=1`), over the pool. At every
    /// pass, in priority order: jobs start while they fit now; the first
    /// that does not gets a reservation at the earliest time it fits (EASY's
    /// shadow time), and so does every later waiting job that asks for at
    /// least 25 % of the machine (`WIDE_PERCENT`), each at the earliest
    /// time it fits given the running jobs and the reservations made before
    /// it in this pass (one whose earliest time is now starts). Then every
    /// other waiting job, shortest limit first (ties in priority order),
    /// starts now where its processors are free for its whole limit without
    /// touching a reservation. All reservations are remade at every pass;
    /// one more than `Options::window` after now is not made (and while
    /// none is made, every blocked job in priority order may get the one).
    Default,
}

/// `default`: a job asking for at least this share of the machine's
/// processors (percent) is planned like conservative backfilling's jobs
/// (muster's `bf_slowdown_reserve_width`).
pub const WIDE_PERCENT: i64 = 25;

impl Policy {
    /// `fcfs`, `easy`, `conservative`, `replan` or `default`.
    pub fn parse(text: &str) -> Option<Policy> {
        match text.to_ascii_lowercase().as_str() {
            "fcfs" => Some(Policy::Fcfs),
            "easy" => Some(Policy::Easy),
            "conservative" => Some(Policy::Conservative),
            "replan" => Some(Policy::Replan),
            "default" => Some(Policy::Default),
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
            Policy::Default => "default",
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
    /// `replan` and `default`: the farthest a reservation may start after
    /// now (seconds); `REPLAN_WINDOW_S` by default.
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
    /// `default`: the state of the last pass (`DefaultState`).
    dflt: DefaultState,
    passes: u64,
}

/// What `default` keeps from one pass to the next. Its reservations are
/// held in `Sim::base`, beside the running jobs, until the next full pass
/// takes them out again.
#[derive(Debug, Default)]
struct DefaultState {
    /// The machine's processors.
    total: i64,
    /// The reservations in `base`: (start, job).
    plans: Vec<(i64, u32)>,
    /// The job that got the pass's first reservation: every narrow job
    /// after it in priority order was left to the shortest-first part.
    first_planned: Option<u32>,
    /// Waiting wide jobs, in priority order.
    wide: BTreeSet<u32>,
    /// Waiting narrow jobs by limit.
    narrow: BTreeMap<i64, NarrowGroup>,
    /// Started jobs still in `Sim::waiting` (taken out lazily).
    stale: usize,
    /// Scratch: the wide jobs a pass plans.
    buf: Vec<u32>,
}

/// Waiting narrow jobs of one limit.
#[derive(Debug, Default)]
struct NarrowGroup {
    /// In priority order.
    jobs: BTreeSet<u32>,
    /// How many ask for each number of processors (the least first).
    procs: BTreeMap<u32, u32>,
}

impl<'a> Sim<'a> {
    fn new(jobs: &'a [Job], procs: u32, opts: Options) -> Sim<'a> {
        let total = i64::from(procs);
        let t0 = jobs.first().map_or(0, |j| j.submit);
        let base = matches!(opts.policy, Policy::Easy | Policy::Replan | Policy::Default);
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
            dflt: DefaultState {
                total,
                ..DefaultState::default()
            },
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
                Policy::Default => self.default_pass(first_new, ended),
            }
            self.passes += 1;
        }
        debug_assert!(self
            .waiting
            .iter()
            .all(|&j| self.start[j as usize] != UNSTARTED));
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

    /// `default`. A full pass (after any job ended, or while a job is
    /// beyond the window) takes the last pass's reservations out of `base`
    /// and decides every waiting job again; with only arrivals since the
    /// last pass, only they are decided, against what that pass left
    /// (`default_arrivals`).
    fn default_pass(&mut self, first_new: usize, ended: bool) {
        for i in first_new..self.waiting.len() {
            let j = self.waiting[i];
            self.default_add(j);
        }
        if !ended && !self.beyond_window && self.dflt.first_planned.is_some() {
            self.default_arrivals(first_new);
        } else {
            self.default_full();
        }
        // Started jobs leave the queue lazily: from its front at once, the
        // others when they are more than half of it.
        while let Some(&j) = self.waiting.front() {
            if self.start[j as usize] == UNSTARTED {
                break;
            }
            self.waiting.pop_front();
            self.dflt.stale -= 1;
        }
        if self.dflt.stale * 2 > self.waiting.len() {
            self.drop_started();
            self.dflt.stale = 0;
        }
    }

    fn is_wide(&self, j: u32) -> bool {
        i64::from(self.jobs[j as usize].procs) * 100 >= self.dflt.total * WIDE_PERCENT
    }

    /// Files waiting job `j` as wide or narrow.
    fn default_add(&mut self, j: u32) {
        let job = self.jobs[j as usize];
        if self.is_wide(j) {
            self.dflt.wide.insert(j);
        } else {
            let g = self.dflt.narrow.entry(job.limit).or_default();
            g.jobs.insert(j);
            *g.procs.entry(job.procs).or_default() += 1;
        }
    }

    /// Starts waiting job `j` now, taking it out of the wide and narrow
    /// sets (`Sim::waiting` later).
    fn default_start(&mut self, j: u32) {
        self.start_job(j, false);
        self.dflt.stale += 1;
        if !self.dflt.wide.remove(&j) {
            self.default_narrow_started(j);
        }
    }

    /// Starts job `j` if its earliest start in `base` (the running jobs and
    /// this pass's reservations) is now, or reserves it there, unless that
    /// is beyond the window. Whether it got a reservation.
    fn default_plan(&mut self, j: u32) -> bool {
        let job = self.jobs[j as usize];
        let procs = i64::from(job.procs);
        let base = self.base.as_mut().expect("default keeps a profile");
        let x = base.earliest(procs, job.limit);
        if x == self.now {
            self.default_start(j);
            false
        } else if x - self.now > self.opts.window {
            self.beyond_window = true;
            false
        } else {
            base.occupy(x, x + job.limit, procs);
            self.dflt.plans.push((x, j));
            true
        }
    }

    /// Whether narrow job `j` may start now: its processors are free in
    /// `base` from now for its whole limit.
    fn default_fits_now(&self, j: u32) -> bool {
        let job = self.jobs[j as usize];
        let base = self.base.as_ref().expect("default keeps a profile");
        base.first_below(self.now, i64::from(job.procs))
            .is_none_or(|t| t >= self.now + job.limit)
    }

    /// The whole pass.
    fn default_full(&mut self) {
        let base = self.base.as_mut().expect("default keeps a profile");
        for (x, j) in self.dflt.plans.drain(..) {
            let job = self.jobs[j as usize];
            // Every reservation starts at a running job's expected end or
            // at another's end, so not before the next event.
            debug_assert!(x >= self.now, "reservation of job {j} passed");
            base.release(x, x + job.limit, i64::from(job.procs));
        }
        self.dflt.first_planned = None;
        self.beyond_window = false;
        // Priority order up to the first reservation. With no reservation
        // yet, `base` holds only running jobs and never loses processors
        // later on: a job fits now if its processors are free now, and its
        // earliest start is the first time that many are free.
        let mut i = 0;
        while i < self.waiting.len() {
            let j = self.waiting[i];
            i += 1;
            if self.start[j as usize] != UNSTARTED {
                continue;
            }
            let job = self.jobs[j as usize];
            let procs = i64::from(job.procs);
            if procs <= self.free {
                self.default_start(j);
                continue;
            }
            let base = self.base.as_mut().expect("default keeps a profile");
            let x = base
                .first_at_least(self.now, procs)
                .expect("every running job ends");
            if x - self.now > self.opts.window {
                self.beyond_window = true;
                continue;
            }
            base.occupy(x, x + job.limit, procs);
            self.dflt.plans.push((x, j));
            self.dflt.first_planned = Some(j);
            break;
        }
        let Some(first) = self.dflt.first_planned else {
            return;
        };
        // The wide jobs after it, in priority order.
        let mut wide = std::mem::take(&mut self.dflt.buf);
        wide.clear();
        wide.extend(self.dflt.wide.range(first + 1..));
        for &j in &wide {
            self.default_plan(j);
        }
        self.dflt.buf = wide;
        // The narrow ones after it, shortest first.
        let narrow = std::mem::take(&mut self.dflt.narrow);
        let mut started = Vec::new();
        let mut failed = u32::MAX;
        // Only a job of fewer processors than this may fit: than are free
        // now, and than one that did not fit (with a limit no longer: the
        // profile only loses processors as the pass goes on).
        let bound = |free: i64, failed: u32| failed.min(u32::try_from(free).unwrap_or(0) + 1);
        'groups: for g in narrow.values() {
            if bound(self.free, failed) <= 1 {
                break;
            }
            let least = *g.procs.keys().next().expect("no empty group");
            if least >= bound(self.free, failed) {
                continue;
            }
            for &j in g.jobs.range(first + 1..) {
                let below = bound(self.free, failed);
                if below <= 1 {
                    break 'groups;
                }
                let procs = self.jobs[j as usize].procs;
                if procs >= below {
                    continue;
                }
                if self.default_fits_now(j) {
                    self.start_job(j, false);
                    self.dflt.stale += 1;
                    started.push(j);
                } else {
                    failed = procs;
                }
            }
        }
        self.dflt.narrow = narrow;
        for j in started {
            self.default_narrow_started(j);
        }
    }

    /// Takes started narrow job `j` out of its group.
    fn default_narrow_started(&mut self, j: u32) {
        let job = self.jobs[j as usize];
        let g = self.dflt.narrow.get_mut(&job.limit).expect("a narrow job");
        g.jobs.remove(&j);
        let n = g.procs.get_mut(&job.procs).expect("a narrow job");
        *n -= 1;
        if *n == 0 {
            g.procs.remove(&job.procs);
        }
        if g.jobs.is_empty() {
            self.dflt.narrow.remove(&job.limit);
        }
    }

    /// Only arrivals since the last pass, which made a reservation and
    /// left every job with one or none within the window: a full pass
    /// would decide every other job as that pass did. Nothing ended, so no
    /// processor came free; every reservation starts at a running job's
    /// expected end or later, and no running job ends before the next
    /// event, so from the last pass's `now` to this one `base` stays as it
    /// was. The first blocked job and the wide ones get the same
    /// reservations (the jobs the last pass started after them fitted
    /// around them), the narrow ones that could not start still cannot
    /// (their windows now begin in the same state and reach later), and
    /// the arrivals come after all of them in priority order: the wide ones
    /// are planned after the other reservations, and the narrow ones tried
    /// shortest first among themselves (every other narrow job is refused
    /// wherever it falls in that order, changing nothing).
    fn default_arrivals(&mut self, first_new: usize) {
        let mut narrow = Vec::new();
        for i in first_new..self.waiting.len() {
            let j = self.waiting[i];
            if self.is_wide(j) {
                self.default_plan(j);
            } else {
                narrow.push(j);
            }
        }
        narrow.sort_unstable_by_key(|&j| (self.jobs[j as usize].limit, j));
        let mut failed = u32::MAX;
        for j in narrow {
            let procs = self.jobs[j as usize].procs;
            if i64::from(procs) > self.free || procs >= failed {
                continue;
            }
            if self.default_fits_now(j) {
                self.default_start(j);
            } else {
                failed = procs;
            }
        }
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
