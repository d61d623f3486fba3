//! The reference policies' own loop, and the default's: `--policy fcfs`,
//! `--policy easy` and the default policy (`sched/backfill` with the
//! default settings) on a trace's machine, without the engine, giving the
//! engine's schedule to the digit (every start, every node, every pass
//! counted).
//!
//! Why that is exact: on a trace's machine (one partition over every node,
//! CR_Core, no limits, priority/basic) every job asks for `procs` tasks of
//! one CPU that may go on any nodes, so the engine plans over the
//! partition's CPUs summed (`sched::PlanOn::Auto`, `pool_is_exact`) and
//! places starts on the nodes in index order, each taking as many tasks
//! as it has CPUs free; jobs are tried in submission order. A pass then
//! decides, in that order:
//!
//! - FCFS: each job starts while it fits in the free CPUs; the first that
//!   does not stops the pass.
//! - EASY: the same until the first job that does not fit; it is planned
//!   at its shadow time, the first expected end (start + limit) by which
//!   enough CPUs come free, and every later job starts where it fits now
//!   and either ends (by its limit) by the shadow time or needs no more
//!   than the CPUs left over at that time beside the planned job (`extra`,
//!   less what each such start takes).
//! - The default (`bf_job_part_count_reserve=1`, `bf_slowdown_reserve=1`
//!   for jobs of at least `bf_slowdown_reserve_width`=25 % of the CPUs,
//!   `bf_order=shortest`, `bf_window` 30 days): the same until the first
//!   job that does not fit, which is planned at the first time enough CPUs
//!   are free (a job whose plan would lie beyond the window gets none, and
//!   the next one is tried instead); then every later wide job, in
//!   submission order, starts now or is planned at the earliest time its
//!   CPUs are free for its whole limit beside the running jobs and the
//!   plans made before it (none beyond the window); then every later
//!   narrow job, shortest limit first (ties in submission order), starts
//!   where its CPUs are free from now for its whole limit beside all of
//!   those. The running jobs' expected ends and the pass's plans are a
//!   profile of free CPUs over time (`sched::profile`, as the engine's pool
//!   plans use). A narrow job that could not start rules out every later
//!   one (by limit) that asks for as many CPUs or more, so the narrow jobs
//!   sit in a second tree, in (limit, submission) order, and the pass reads
//!   only those that may still start. This is `refsched --policy
//!   default`'s algorithm, written again over these trees.
//!
//! The engine runs no pass after a batch of events when no waiting job
//! asks for as few CPUs as are free (`Engine::pass_starts_nothing`); that
//! is counted the same way here (`passes`). Waiting jobs sit in a tree over
//! their trace positions that keeps each subtree's least CPUs and least
//! limit, so a pass finds the next job that may start without reading the
//! jobs that may not.
//!
//! `ineligible` says when this loop is taken; everything else (a
//! `--config`, `--topology`, settings other than the defaults, a job that
//! would outlive its limit) goes through `driver::simulate`. The tests
//! compare the two on every shipped trace's head and on random traces,
//! byte for byte.

use crate::driver::{JobRecord, Outcome, Sample};
use crate::swf::Trace;
use sched::profile::Profile;
use sched::{Policy, SchedConfig};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// Why the fast loop cannot stand for the engine on `trace`, or `None`
/// where it can (the policy and configuration are the caller's to check:
/// the trace's own machine, no topology, settings `supports` takes).
pub fn ineligible(trace: &Trace) -> Option<String> {
    let total = trace.machine.procs();
    let mut last = i64::MIN;
    for j in &trace.jobs {
        if j.submit < last {
            return Some(format!("job {} is out of submission order", j.id));
        }
        last = j.submit;
        if j.run < 1 || j.procs == 0 || u64::from(j.procs) > total {
            return Some(format!("job {} has no run time or does not fit", j.id));
        }
        // The engine ends a job at its limit; this loop does not.
        if j.req_time < j.run || j.req_time > MAX_LIMIT_S {
            return Some(format!("job {} runs past its limit", j.id));
        }
        if j.partition.as_deref().is_some_and(|p| p != "batch") {
            return Some(format!("job {} names a partition", j.id));
        }
    }
    None
}

/// Limits above this (about 190 years) are left to the engine, which
/// reads the largest minute count as INFINITE.
const MAX_LIMIT_S: i64 = 100_000_000 * 60;

/// A job's limit as the engine holds it: its requested time in whole
/// minutes, at least one.
fn limit_s(req_time: i64) -> i64 {
    (req_time.max(1) as u64).div_ceil(60) as i64 * 60
}

/// The waiting jobs by trace position: each node of the tree keeps the
/// least CPUs and the least limit of the jobs below it (`EMPTY` where
/// none waits).
struct Waiting {
    size: usize,
    procs: Vec<u32>,
    limit: Vec<i64>,
}

const EMPTY_PROCS: u32 = u32::MAX;
const EMPTY_LIMIT: i64 = i64::MAX;

impl Waiting {
    fn new(n: usize) -> Waiting {
        let size = n.next_power_of_two().max(1);
        Waiting {
            size,
            procs: vec![EMPTY_PROCS; 2 * size],
            limit: vec![EMPTY_LIMIT; 2 * size],
        }
    }

    fn set(&mut self, k: usize, procs: u32, limit: i64) {
        let mut i = self.size + k;
        self.procs[i] = procs;
        self.limit[i] = limit;
        while i > 1 {
            i /= 2;
            self.procs[i] = self.procs[2 * i].min(self.procs[2 * i + 1]);
            self.limit[i] = self.limit[2 * i].min(self.limit[2 * i + 1]);
        }
    }

    fn clear(&mut self, k: usize) {
        self.set(k, EMPTY_PROCS, EMPTY_LIMIT);
    }

    /// The least CPUs any waiting job asks for.
    fn least_procs(&self) -> u32 {
        self.procs[1]
    }

    /// The first waiting job at or after `from` that asks for at most
    /// `free` CPUs and either at most `spare` CPUs or a limit of at most
    /// `short` (both at most `CAP`).
    fn first(&self, from: usize, free: u32, spare: u32, short: i64) -> Option<usize> {
        if from >= self.size {
            return None;
        }
        let spare = spare.min(free);
        let mut i = self.size + from;
        if self.may(i, free, spare, short) {
            return Some(from);
        }
        // Up the path from `from`'s leaf, into each subtree to its right.
        loop {
            if i == 1 {
                return None;
            }
            if i & 1 == 1 {
                i /= 2;
                continue;
            }
            i += 1;
            if self.may(i, free, spare, short) {
                if let Some(k) = self.down(i, free, spare, short) {
                    return Some(k);
                }
            }
        }
    }

    /// Whether a job under node `i` may be one `first` looks for (at a
    /// leaf: whether it is).
    fn may(&self, i: usize, free: u32, spare: u32, short: i64) -> bool {
        let p = self.procs[i];
        p <= spare || (p <= free && self.limit[i] <= short)
    }

    /// The first leaf under `i` that `first` accepts.
    fn down(&self, i: usize, free: u32, spare: u32, short: i64) -> Option<usize> {
        if i >= self.size {
            return Some(i - self.size);
        }
        for c in [2 * i, 2 * i + 1] {
            if self.may(c, free, spare, short) {
                if let Some(k) = self.down(c, free, spare, short) {
                    return Some(k);
                }
            }
        }
        None
    }
}

/// The nodes, for `--csv`: free CPUs each and a bit per node with one
/// free, so a start takes the first nodes with room in index order.
struct Nodes {
    free: Vec<u32>,
    room: Vec<u64>,
}

impl Nodes {
    fn new(cpus: &[u32]) -> Nodes {
        let mut room = vec![0u64; cpus.len().div_ceil(64)];
        for (i, c) in cpus.iter().enumerate() {
            if *c > 0 {
                room[i / 64] |= 1 << (i % 64);
            }
        }
        Nodes {
            free: cpus.to_vec(),
            room,
        }
    }

    /// Lays `procs` tasks on the first nodes with room: (node, tasks).
    fn take(&mut self, mut procs: u32, out: &mut Vec<(u32, u32)>) {
        let mut w = 0;
        while procs > 0 {
            let mut bits = self.room[w];
            while bits != 0 && procs > 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let here = self.free[i].min(procs);
                self.free[i] -= here;
                procs -= here;
                if self.free[i] == 0 {
                    self.room[w] &= !(1 << (i % 64));
                }
                out.push((i as u32, here));
            }
            w += 1;
        }
    }

    fn give_back(&mut self, held: &[(u32, u32)]) {
        for &(i, n) in held {
            let i = i as usize;
            self.free[i] += n;
            self.room[i / 64] |= 1 << (i % 64);
        }
    }
}

/// Whether `sc` is what this loop replays for its policy: FCFS and EASY
/// as `muster sim --policy` sets them (every setting but the policy is
/// read by neither), the default policy only with every default setting.
pub fn supports(sc: &SchedConfig) -> bool {
    match sc.policy {
        Policy::Fcfs => sc.default_queue_depth == u32::MAX,
        Policy::Easy => sc.bf_resolution == 1,
        Policy::Backfill => *sc == SchedConfig::default(),
    }
}

/// The default policy's part of the loop: the running jobs until their
/// expected ends and the pass's plans, the waiting wide jobs, and the
/// waiting narrow ones in the order the pass tries them.
struct Backfill {
    /// Free CPUs over time: the running jobs until their expected ends,
    /// and the plans of the last pass (until a job ends or a pass decides
    /// every job again).
    base: Profile,
    /// The plans in `base`: (start, trace index).
    plans: Vec<(i64, u32)>,
    /// Waiting wide jobs, by trace index.
    wide: BTreeSet<u32>,
    /// Waiting narrow jobs by `rank` (least CPUs per subtree).
    narrow: Waiting,
    /// Each job's place in (limit, trace index) order, and the inverse.
    rank: Vec<u32>,
    by_rank: Vec<u32>,
    /// Whether each job is wide.
    is_wide: Vec<bool>,
    /// How far from now a plan may start (seconds).
    window: i64,
    /// Jobs submitted since the last pass, in submission order.
    arrived: Vec<u32>,
    /// A job ended since the last pass (its plans were taken out then).
    ended: bool,
    /// The last pass made a plan for its first blocked job.
    planned: bool,
    /// The last pass left a job without the plan it would have had, for
    /// being beyond the window (a later `now` may bring it within).
    beyond_window: bool,
    /// The last pass left wide jobs unplanned whose plans could have
    /// changed nothing it decided (`default_full`).
    truncated: bool,
    /// This pass decides every waiting job (else only `arrived`).
    full: bool,
    /// Scratch: the wide jobs of a pass, the least CPUs and limit of each
    /// suffix of them, the waiting jobs before its first plan that got
    /// none.
    buf: Vec<u32>,
    least: Vec<(i64, i64)>,
    passed_over: Vec<u32>,
}

impl Backfill {
    fn new(trace: &Trace, limits: &[i64], total: u64, t0: i64) -> Backfill {
        let jobs = &trace.jobs;
        let n = jobs.len();
        let width = i64::from(SchedConfig::default().bf_slowdown_reserve_width);
        let is_wide: Vec<bool> = jobs
            .iter()
            .map(|j| i64::from(j.procs) * 100 >= total as i64 * width)
            .collect();
        let mut by_rank: Vec<u32> = (0..n as u32).collect();
        by_rank.sort_unstable_by_key(|&k| (limits[k as usize], k));
        let mut rank = vec![0u32; n];
        for (r, &k) in by_rank.iter().enumerate() {
            rank[k as usize] = r as u32;
        }
        Backfill {
            base: Profile::new(total as i64, t0),
            plans: Vec::new(),
            wide: BTreeSet::new(),
            narrow: Waiting::new(n),
            rank,
            by_rank,
            is_wide,
            window: i64::from(SchedConfig::default().bf_window) * 60,
            arrived: Vec::new(),
            ended: false,
            planned: false,
            beyond_window: false,
            truncated: false,
            full: true,
            buf: Vec::new(),
            least: Vec::new(),
            passed_over: Vec::new(),
        }
    }

    /// Job `k` of `procs` CPUs and `limit` starts at `t`.
    fn started(&mut self, k: usize, t: i64, limit: i64, procs: u32) {
        self.base.occupy(t, t + limit, i64::from(procs));
        if self.is_wide[k] {
            self.wide.remove(&(k as u32));
        } else {
            self.narrow.clear(self.rank[k] as usize);
        }
    }

    /// Takes the plans out of `base`.
    fn drop_plans(&mut self, limits: &[i64], trace: &Trace) {
        for (x, k) in self.plans.drain(..) {
            let k = k as usize;
            self.base
                .release(x, x + limits[k], i64::from(trace.jobs[k].procs));
        }
    }
}

/// What the loop keeps while it runs.
struct Run<'a> {
    trace: &'a Trace,
    limits: Vec<i64>,
    policy: Policy,
    free: u64,
    busy: u64,
    queued: u64,
    waiting: Waiting,
    starts: Vec<i64>,
    /// Actual ends (end, trace index).
    ends: BinaryHeap<Reverse<(i64, u32)>>,
    /// The running jobs' CPUs by expected end (start + limit), for EASY.
    expected: BTreeMap<i64, u64>,
    /// The default policy's state.
    bf: Option<Backfill>,
    nodes: Option<Nodes>,
    /// Each started job's (node, tasks), flat, and where each job's lie.
    held: Vec<(u32, u32)>,
    held_at: Vec<(u32, u32)>,
}

impl Run<'_> {
    /// Job `k`, submitted, waits.
    fn arrive(&mut self, k: usize) {
        let job = &self.trace.jobs[k];
        self.waiting.set(k, job.procs, self.limits[k]);
        self.queued += 1;
        if let Some(bf) = self.bf.as_mut() {
            bf.arrived.push(k as u32);
            if bf.is_wide[k] {
                bf.wide.insert(k as u32);
            } else {
                bf.narrow
                    .set(bf.rank[k] as usize, job.procs, self.limits[k]);
            }
        }
    }

    fn start(&mut self, k: usize, t: i64) {
        let job = &self.trace.jobs[k];
        let p = u64::from(job.procs);
        self.free -= p;
        self.busy += p;
        self.queued -= 1;
        self.waiting.clear(k);
        self.starts[k] = t;
        self.ends.push(Reverse((t + job.run, k as u32)));
        match self.policy {
            Policy::Fcfs => {}
            Policy::Easy => *self.expected.entry(t + self.limits[k]).or_default() += p,
            Policy::Backfill => {
                // Out of `self` during a pass (`start_in`).
                if let Some(bf) = self.bf.as_mut() {
                    bf.started(k, t, self.limits[k], job.procs);
                }
            }
        }
        if let Some(nodes) = self.nodes.as_mut() {
            let at = self.held.len() as u32;
            nodes.take(job.procs, &mut self.held);
            self.held_at[k] = (at, self.held.len() as u32 - at);
        }
    }

    /// Job `k` ends at `t`.
    fn end(&mut self, k: usize, t: i64) {
        let p = u64::from(self.trace.jobs[k].procs);
        self.free += p;
        self.busy -= p;
        let expected = self.starts[k] + self.limits[k];
        match self.policy {
            Policy::Fcfs => {}
            Policy::Easy => {
                if let Some(c) = self.expected.get_mut(&expected) {
                    *c -= p;
                    if *c == 0 {
                        self.expected.remove(&expected);
                    }
                }
            }
            Policy::Backfill => {
                let bf = self.bf.as_mut().expect("the default policy's state");
                // The rest of its limit comes free (and its breakpoint at
                // `expected` loses its reference even where nothing does).
                bf.base.release(t, expected, p as i64);
            }
        }
        if let Some(nodes) = self.nodes.as_mut() {
            let (at, len) = self.held_at[k];
            nodes.give_back(&self.held[at as usize..(at + len) as usize]);
        }
    }

    /// One pass at `t` from the first waiting job (none before `head`);
    /// returns the new `head`.
    ///
    /// The default policy's plans stay in its profile from one pass to the
    /// next. Where nothing ended since the last pass, which planned its
    /// first blocked job and left no job unplanned (beyond the window, or
    /// where the plan could have changed nothing), a pass decides only the
    /// jobs submitted since, against those plans (`default_arrivals`);
    /// otherwise the plans are taken out and the pass decides every job
    /// again (`default_full`).
    fn pass(&mut self, t: i64, head: usize) -> usize {
        if let Some(bf) = self.bf.as_mut() {
            bf.full = bf.ended || !bf.planned || bf.beyond_window || bf.truncated;
            if bf.full {
                bf.drop_plans(&self.limits, self.trace);
                bf.planned = false;
                bf.beyond_window = false;
                bf.truncated = false;
            }
        }
        let head = self.pass_from(t, head);
        if let Some(bf) = self.bf.as_mut() {
            bf.arrived.clear();
            bf.ended = false;
        }
        head
    }

    fn pass_from(&mut self, t: i64, mut head: usize) -> usize {
        loop {
            let Some(h) = self.waiting.first(head, CAP, CAP, i64::MAX) else {
                // None waits: the next one will be submitted after `head`.
                return head;
            };
            head = h;
            let p = u64::from(self.trace.jobs[h].procs);
            if p <= self.free {
                self.start(h, t);
                continue;
            }
            match self.policy {
                Policy::Fcfs => {}
                Policy::Easy => self.easy_backfill(t, h),
                Policy::Backfill => self.default_backfill(t, h),
            }
            return head;
        }
    }

    /// EASY after the first blocked job, `h`.
    fn easy_backfill(&mut self, t: i64, h: usize) {
        let p = u64::from(self.trace.jobs[h].procs);
        // Its shadow time and the CPUs spare then.
        let mut avail = self.free;
        let mut shadow = None;
        for (&e, &c) in self.expected.iter() {
            if shadow.is_some_and(|s| e > s) {
                break;
            }
            avail += c;
            if shadow.is_none() && avail >= p {
                shadow = Some(e);
            }
        }
        let Some(shadow) = shadow else {
            debug_assert!(false, "job {h} fits no time");
            return;
        };
        let mut extra = avail - p;
        let mut from = h + 1;
        while self.free > 0 {
            let fit = self.free.min(u64::from(CAP)) as u32;
            let spare = extra.min(u64::from(CAP)) as u32;
            let Some(k) = self.waiting.first(from, fit, spare, shadow - t) else {
                break;
            };
            if t + self.limits[k] > shadow {
                extra -= u64::from(self.trace.jobs[k].procs);
            }
            self.start(k, t);
            from = k + 1;
        }
    }

    /// The default policy after the first blocked job, `h`.
    fn default_backfill(&mut self, t: i64, h: usize) {
        let mut bf = self.bf.take().expect("the default policy's state");
        if bf.full {
            self.default_full(&mut bf, t, h);
        } else {
            self.default_arrivals(&mut bf, t);
        }
        self.bf = Some(bf);
    }

    /// Starts job `k` at `t` while the default policy's state is out of
    /// `self` (in `bf`).
    fn start_in(&mut self, bf: &mut Backfill, k: usize, t: i64) {
        debug_assert!(self.bf.is_none());
        self.start(k, t);
        bf.started(k, t, self.limits[k], self.trace.jobs[k].procs);
    }

    /// Starts wide job `k` where the earliest time its CPUs are free for
    /// its whole limit, beside the running jobs and the plans so far, is
    /// now; else plans it then, unless that is beyond the window.
    fn default_plan(&mut self, bf: &mut Backfill, k: usize, t: i64) {
        let p = i64::from(self.trace.jobs[k].procs);
        let x = bf.base.earliest(p, self.limits[k]);
        if x == t {
            self.start_in(bf, k, t);
        } else if x - t > bf.window {
            bf.beyond_window = true;
        } else {
            bf.base.occupy(x, x + self.limits[k], p);
            bf.plans.push((x, k as u32));
        }
    }

    /// Whether plans of wide jobs that ask for at least `least` (CPUs,
    /// limit) could change what the pass at `t` decides. None of them
    /// starts before `x`, the earliest time a window of that many CPUs for
    /// that long opens in the profile as it is (plans only take CPUs away);
    /// so none starts now, and only a narrow job whose limit reaches past
    /// `x` could be refused for them, and only one that could start in the
    /// profile as it is. Where no waiting narrow job is such, the plans
    /// change nothing.
    ///
    /// The least free CPUs from `t` over a limit is a step function of
    /// the limit, falling at each time the profile falls below its last
    /// step: the narrow jobs of each step's limits (those past `x`) are
    /// asked whether one asks for no more than that step's CPUs.
    fn plans_matter(&self, bf: &Backfill, least: (i64, i64), t: i64) -> bool {
        let (p, l) = least;
        let x = bf.base.earliest(p, l);
        if x == t {
            return true;
        }
        let reach = x - t;
        // The narrow jobs' ranks from the first whose limit is above `len`.
        let rank_above = |len: i64| {
            bf.by_rank
                .partition_point(|&k| self.limits[k as usize] <= len)
        };
        // Limits in (lo, hi] see at least `v` CPUs free all along.
        let mut lo = 0i64;
        let mut v = bf.base.value_at(t);
        loop {
            if v <= 0 {
                return false;
            }
            let drop = bf.base.first_below(t, v);
            let hi = drop.map_or(i64::MAX, |d| d - t);
            if hi > reach {
                let (from, to) = (rank_above(lo.max(reach)), rank_above(hi));
                let v = v.min(i64::from(CAP)) as u32;
                if bf
                    .narrow
                    .first(from, v, v, i64::MIN)
                    .is_some_and(|r| r < to)
                {
                    return true;
                }
            }
            let Some(d) = drop else {
                return false;
            };
            lo = hi;
            v = bf.base.value_at(d);
        }
    }

    /// Whether job `k`'s CPUs are free from `t` for its whole limit.
    fn default_fits_now(&self, bf: &Backfill, k: usize, t: i64) -> bool {
        let p = i64::from(self.trace.jobs[k].procs);
        bf.base
            .first_below(t, p)
            .is_none_or(|y| y >= t + self.limits[k])
    }

    /// A pass over every waiting job from the first blocked one, `h`: its
    /// plan (or the next job's, where its own would lie beyond the window),
    /// the wide jobs', the narrow jobs shortest first.
    fn default_full(&mut self, bf: &mut Backfill, t: i64, h: usize) {
        let mut passed_over = std::mem::take(&mut bf.passed_over);
        passed_over.clear();
        // The first job that gets a plan; before it, in submission order,
        // jobs start while they fit and are passed over where their plan
        // would lie beyond the window. `base` holds only running jobs
        // here, so free CPUs only grow with time.
        let mut k = h;
        let first = loop {
            let p = i64::from(self.trace.jobs[k].procs);
            if p as u64 <= self.free {
                self.start_in(bf, k, t);
            } else {
                let x = bf
                    .base
                    .first_at_least(t, p)
                    .expect("every running job ends");
                if x - t <= bf.window {
                    bf.base.occupy(x, x + self.limits[k], p);
                    bf.plans.push((x, k as u32));
                    break Some(k);
                }
                bf.beyond_window = true;
                passed_over.push(k as u32);
            }
            match self.waiting.first(k + 1, CAP, CAP, i64::MAX) {
                Some(next) => k = next,
                None => break None,
            }
        };
        bf.planned = first.is_some();
        let Some(first) = first else {
            bf.passed_over = passed_over;
            return;
        };
        // The wide jobs after it, in submission order, as long as a plan
        // could change what the pass decides (`plans_matter`).
        let mut wide = std::mem::take(&mut bf.buf);
        wide.clear();
        wide.extend(bf.wide.range(first as u32 + 1..));
        // The least CPUs and limit of each suffix of `wide`.
        let mut least = std::mem::take(&mut bf.least);
        least.clear();
        least.resize(wide.len() + 1, (i64::MAX, i64::MAX));
        for i in (0..wide.len()).rev() {
            let k = wide[i] as usize;
            let (p, l) = least[i + 1];
            least[i] = (
                p.min(i64::from(self.trace.jobs[k].procs)),
                l.min(self.limits[k]),
            );
        }
        let mut check_at = 1;
        for (i, &k) in wide.iter().enumerate() {
            if i == check_at {
                check_at += check_at.div_ceil(2);
                if !self.plans_matter(bf, least[i], t) {
                    bf.truncated = true;
                    break;
                }
            }
            self.default_plan(bf, k as usize, t);
        }
        bf.buf = wide;
        bf.least = least;
        // The narrow ones after it, shortest first: those before it (passed
        // over, or the planned job itself) leave the tree for the while.
        passed_over.push(first as u32);
        passed_over.retain(|&k| !bf.is_wide[k as usize]);
        for &k in &passed_over {
            bf.narrow.clear(bf.rank[k as usize] as usize);
        }
        // Only a job of fewer CPUs than `below` may fit: than are free
        // now, and than one that did not (with a limit no longer: the
        // profile only loses CPUs as the pass goes on).
        let mut below = u64::from(CAP).min(self.free + 1);
        let mut from = 0usize;
        while below > 1 {
            let b = (below - 1) as u32;
            let Some(r) = bf.narrow.first(from, b, b, i64::MIN) else {
                break;
            };
            from = r + 1;
            let k = bf.by_rank[r] as usize;
            if self.default_fits_now(bf, k, t) {
                self.start_in(bf, k, t);
                below = below.min(self.free + 1);
            } else {
                below = u64::from(self.trace.jobs[k].procs);
            }
        }
        for &k in &passed_over {
            let k = k as usize;
            bf.narrow.set(
                bf.rank[k] as usize,
                self.trace.jobs[k].procs,
                self.limits[k],
            );
        }
        bf.passed_over = passed_over;
    }

    /// A pass after only submissions since the last one, which planned its
    /// first blocked job and left none beyond the window: a pass over
    /// every job would decide every older one as that pass did, so only
    /// the new ones are decided, after them. Nothing ended, so no CPU came
    /// free, and every plan starts at a running job's expected end or
    /// later (at another plan's start or end), which no event before this
    /// one reached: the profile is as that pass left it. The first blocked
    /// job and the wide ones get the same plans (the jobs that pass started
    /// after them fitted around them); the narrow ones that could not
    /// start still cannot (their windows begin in the same state and reach
    /// later); the new ones come after all of them in submission order, so
    /// the wide ones are planned after the other plans and the narrow ones
    /// are tried shortest first among themselves (each older narrow job is
    /// refused wherever it falls in that order, changing nothing).
    fn default_arrivals(&mut self, bf: &mut Backfill, t: i64) {
        let mut arrived = std::mem::take(&mut bf.arrived);
        arrived.retain(|&k| {
            let k = k as usize;
            if bf.is_wide[k] {
                self.default_plan(bf, k, t);
                false
            } else {
                true
            }
        });
        arrived.sort_unstable_by_key(|&k| bf.rank[k as usize]);
        let mut failed = u32::MAX;
        for &k in &arrived {
            let k = k as usize;
            let p = self.trace.jobs[k].procs;
            if u64::from(p) > self.free || p >= failed {
                continue;
            }
            if self.default_fits_now(bf, k, t) {
                self.start_in(bf, k, t);
            } else {
                failed = p;
            }
        }
        bf.arrived = arrived;
    }
}

/// The most CPUs a query asks about (`EMPTY_PROCS` is above).
const CAP: u32 = u32::MAX - 1;

/// Replays `trace` under `policy` (FCFS, EASY, or the default policy with
/// the default settings: `supports`) on nodes of `cpus` CPUs each (the
/// configuration's, in order); with `want_nodes` each record names its
/// nodes (`--csv`), else none (the summary does not read them). The
/// caller checked `ineligible`.
pub fn simulate(
    trace: &Trace,
    cpus: &[u32],
    policy: Policy,
    want_nodes: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Outcome {
    let jobs = &trace.jobs;
    let n = jobs.len();
    let limits: Vec<i64> = jobs.iter().map(|j| limit_s(j.req_time)).collect();
    let total: u64 = cpus.iter().map(|&c| u64::from(c)).sum();
    let t0 = jobs.first().map_or(0, |j| j.submit);
    let bf = (policy == Policy::Backfill).then(|| Backfill::new(trace, &limits, total, t0));
    let mut run = Run {
        trace,
        limits,
        policy,
        free: total,
        busy: 0,
        queued: 0,
        waiting: Waiting::new(n),
        starts: vec![0; n],
        ends: BinaryHeap::new(),
        expected: BTreeMap::new(),
        bf,
        nodes: want_nodes.then(|| Nodes::new(cpus)),
        held: Vec::new(),
        held_at: if want_nodes {
            vec![(0, 0); n]
        } else {
            Vec::new()
        },
    };
    let mut out = Outcome::default();
    let (mut next, mut done, mut head, mut batches) = (0usize, 0usize, 0usize, 0u64);
    loop {
        let t_sub = jobs.get(next).map(|j| j.submit);
        let t_end = run.ends.peek().map(|e| e.0 .0);
        let t = match (t_sub, t_end) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
        if let Some(bf) = run.bf.as_mut() {
            // A job ends now: the next pass makes every plan again, and
            // the old ones may start before now.
            if run.ends.peek().is_some_and(|e| e.0 .0 == t) {
                bf.drop_plans(&run.limits, trace);
                bf.ended = true;
            }
            bf.base.advance(t);
        }
        while let Some(&Reverse((end, k))) = run.ends.peek() {
            if end > t {
                break;
            }
            run.ends.pop();
            run.end(k as usize, t);
            done += 1;
        }
        while let Some(job) = jobs.get(next) {
            if job.submit > t {
                break;
            }
            run.arrive(next);
            next += 1;
        }
        // The engine's pass, where it runs one.
        if u64::from(run.waiting.least_procs()) <= run.free {
            out.passes += 1;
            head = run.pass(t, head);
        }
        out.samples.push(Sample {
            t,
            busy: run.busy,
            queued: run.queued,
        });
        batches += 1;
        if batches & 4095 == 0 {
            progress(done, n);
        }
    }
    progress(done, n);
    out.records.reserve(n);
    for (k, job) in jobs.iter().enumerate() {
        let start = run.starts[k];
        let nodes = if want_nodes {
            let (at, len) = run.held_at[k];
            run.held[at as usize..(at + len) as usize]
                .iter()
                .map(|&(i, _)| i)
                .collect()
        } else {
            Vec::new()
        };
        out.records.push(JobRecord {
            id: job.id,
            submit: job.submit,
            start,
            end: start + job.run,
            procs: job.procs,
            nodes,
        });
    }
    out
}
