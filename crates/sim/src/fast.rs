//! The reference policies' own loop: `--policy fcfs` and `--policy easy`
//! on a trace's machine, without the engine, giving the engine's schedule
//! to the digit (every start, every node, every pass counted).
//!
//! Why that is exact: on a trace's machine (one partition over every node,
//! CR_Core, no limits, priority/basic) every job asks for `procs` tasks of
//! one CPU that may go on any nodes, so the engine's EASY plans over the
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
//!
//! The engine runs no pass after a batch of events when no waiting job
//! asks for as few CPUs as are free (`Engine::pass_starts_nothing`); that
//! is counted the same way here (`passes`). Waiting jobs sit in a tree over
//! their trace positions that keeps each subtree's least CPUs and least
//! limit, so a pass finds the next job that may start without reading the
//! jobs that may not.
//!
//! `eligible` says when this loop is taken; everything else (a
//! `--config`, `--topology`, the default policy, a job that would outlive
//! its limit) goes through `driver::simulate`. The tests compare the two
//! on every shipped trace's head and on random traces, byte for byte.

use crate::driver::{JobRecord, Outcome, Sample};
use crate::swf::Trace;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Why the fast loop cannot stand for the engine on `trace`, or `None`
/// where it can (the policy and configuration are the caller's to check:
/// `--policy fcfs|easy` on the trace's own machine, no topology).
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

/// What the loop keeps while it runs.
struct Run<'a> {
    trace: &'a Trace,
    limits: Vec<i64>,
    easy: bool,
    free: u64,
    busy: u64,
    queued: u64,
    waiting: Waiting,
    starts: Vec<i64>,
    /// Actual ends (end, trace index).
    ends: BinaryHeap<Reverse<(i64, u32)>>,
    /// The running jobs' CPUs by expected end (start + limit), for EASY.
    expected: BTreeMap<i64, u64>,
    nodes: Option<Nodes>,
    /// Each started job's (node, tasks), flat, and where each job's lie.
    held: Vec<(u32, u32)>,
    held_at: Vec<(u32, u32)>,
}

impl Run<'_> {
    fn start(&mut self, k: usize, t: i64) {
        let job = &self.trace.jobs[k];
        let p = u64::from(job.procs);
        self.free -= p;
        self.busy += p;
        self.queued -= 1;
        self.waiting.clear(k);
        self.starts[k] = t;
        self.ends.push(Reverse((t + job.run, k as u32)));
        if self.easy {
            *self.expected.entry(t + self.limits[k]).or_default() += p;
        }
        if let Some(nodes) = self.nodes.as_mut() {
            let at = self.held.len() as u32;
            nodes.take(job.procs, &mut self.held);
            self.held_at[k] = (at, self.held.len() as u32 - at);
        }
    }

    fn end(&mut self, k: usize) {
        let p = u64::from(self.trace.jobs[k].procs);
        self.free += p;
        self.busy -= p;
        if self.easy {
            let e = self.starts[k] + self.limits[k];
            if let Some(c) = self.expected.get_mut(&e) {
                *c -= p;
                if *c == 0 {
                    self.expected.remove(&e);
                }
            }
        }
        if let Some(nodes) = self.nodes.as_mut() {
            let (at, len) = self.held_at[k];
            nodes.give_back(&self.held[at as usize..(at + len) as usize]);
        }
    }

    /// One pass at `t` from the first waiting job (none before `head`);
    /// returns the new `head`.
    fn pass(&mut self, t: i64, mut head: usize) -> usize {
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
            if !self.easy {
                return head;
            }
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
                return head;
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
            return head;
        }
    }
}

/// The most CPUs a query asks about (`EMPTY_PROCS` is above).
const CAP: u32 = u32::MAX - 1;

/// Replays `trace` under FCFS (`easy` false) or EASY on nodes of `cpus`
/// CPUs each (the configuration's, in order); with `want_nodes` each
/// record names its nodes (`--csv`), else none (the summary does not read
/// them). The caller checked `ineligible`.
pub fn simulate(
    trace: &Trace,
    cpus: &[u32],
    easy: bool,
    want_nodes: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Outcome {
    let jobs = &trace.jobs;
    let n = jobs.len();
    let mut run = Run {
        trace,
        limits: jobs.iter().map(|j| limit_s(j.req_time)).collect(),
        easy,
        free: cpus.iter().map(|&c| u64::from(c)).sum(),
        busy: 0,
        queued: 0,
        waiting: Waiting::new(n),
        starts: vec![0; n],
        ends: BinaryHeap::new(),
        expected: BTreeMap::new(),
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
        while let Some(&Reverse((end, k))) = run.ends.peek() {
            if end > t {
                break;
            }
            run.ends.pop();
            run.end(k as usize);
            done += 1;
        }
        while let Some(job) = jobs.get(next) {
            if job.submit > t {
                break;
            }
            run.waiting.set(next, job.procs, run.limits[next]);
            run.queued += 1;
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
