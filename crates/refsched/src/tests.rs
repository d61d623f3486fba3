//! Hand-checked schedules, and random small traces against a slow,
//! obviously correct implementation (a per-second array of occupied
//! processors, every pass from scratch).

use crate::profile::Profile;
use crate::simulate::{simulate, Job, Options, Policy, REPLAN_WINDOW_S, WIDE_PERCENT};

/// `(submit, run, procs, limit)` to jobs numbered from 0.
fn jobs(spec: &[(i64, i64, u32, i64)]) -> Vec<Job> {
    spec.iter()
        .enumerate()
        .map(|(i, &(submit, run, procs, limit))| Job {
            id: i as u64,
            submit,
            run,
            procs,
            limit,
        })
        .collect()
}

fn starts(spec: &[(i64, i64, u32, i64)], procs: u32, policy: Policy) -> Vec<i64> {
    simulate(&jobs(spec), procs, &Options::new(policy)).start
}

#[test]
fn fcfs_stops_at_the_first_job_that_does_not_fit() {
    let spec = [
        (0, 10, 2, 10), // starts at once; 2 of 4 free
        (0, 5, 3, 5),   // waits for job 0: 10..15
        (1, 3, 1, 3),   // would fit at 1, but waits behind job 1: 10..13
        (2, 4, 4, 4),   // the whole machine: once jobs 1 and 2 end, 15..19
        (20, 2, 1, 2),  // idle machine: 20..22
        (20, 1, 4, 1),  // behind job 4: 22
    ];
    assert_eq!(starts(&spec, 4, Policy::Fcfs), [0, 10, 10, 15, 20, 22]);
}

#[test]
fn easy_backfills_a_job_that_ends_by_the_shadow_time() {
    let spec = [
        (0, 10, 3, 10), // 0..10
        (1, 5, 4, 5),   // blocked: shadow time 10, no extra processor
        (2, 8, 1, 8),   // ends at 10 by its limit: backfilled at 2
    ];
    assert_eq!(starts(&spec, 4, Policy::Easy), [0, 10, 2]);
    // The same under FCFS waits.
    assert_eq!(starts(&spec, 4, Policy::Fcfs), [0, 10, 15]);
}

#[test]
fn easy_backfills_on_the_extra_processors() {
    let spec = [
        (0, 10, 2, 10), // 0..10
        (1, 5, 3, 5),   // blocked: shadow time 10, one extra processor
        (2, 50, 1, 50), // runs past 10 on the extra processor: at 2
        (3, 50, 1, 50), // the extra processor is taken: after job 1
    ];
    assert_eq!(starts(&spec, 4, Policy::Easy), [0, 10, 2, 15]);
}

#[test]
fn easy_refuses_a_backfill_that_would_delay_the_first_job() {
    let spec = [
        (0, 6, 3, 10), // runs 0..6 but is expected to end at 10
        (1, 5, 4, 5),  // blocked: shadow time 10, no extra processor
        (2, 9, 1, 9),  // would end at 11 > 10 on a processor job 1 needs: refused
    ];
    // Job 0 ends early at 6: job 1 starts, job 2 waits for it.
    assert_eq!(starts(&spec, 4, Policy::Easy), [0, 6, 11]);
}

#[test]
fn conservative_compresses_the_schedule_after_an_early_end() {
    let spec = [
        (0, 4, 4, 10), // runs 0..4, expected to end at 10
        (1, 5, 2, 5),  // reserved at 10 (10..15)
        (2, 3, 4, 3),  // reserved at 15, after job 1
        (3, 4, 2, 4),  // reserved at 10 beside job 1 (10..14)
    ];
    let out = simulate(&jobs(&spec), 4, &Options::new(Policy::Conservative));
    assert_eq!(out.first_plan, [Some(0), Some(10), Some(15), Some(10)]);
    // At 4, in priority order: job 1 moves to 4 (and starts); job 2 finds
    // 4 processors for 3 s first at 14 (job 3 still holds 10..14, and its
    // own 15..18 counts as free); job 3 then moves to 4 beside job 1. Job 2
    // keeps 14 though 9 is now free: compression is one pass.
    assert_eq!(out.start, [0, 4, 14, 4]);
}

#[test]
fn replan_moves_a_job_later_where_conservative_keeps_its_reservation() {
    let spec = [
        (0, 3, 2, 10), // runs 0..3, expected to end at 10
        (0, 5, 2, 5),  // 0..5
        (1, 6, 4, 6),  // reserved at 10
        (1, 5, 2, 5),  // reserved at 5, in the hole before job 2
    ];
    // At 3, conservative: job 2 cannot start before 10 with job 3 at 5..10
    // in place; job 3 moves to 3.
    let cons = simulate(&jobs(&spec), 4, &Options::new(Policy::Conservative));
    assert_eq!(cons.first_plan, [Some(0), Some(0), Some(10), Some(5)]);
    assert_eq!(cons.start, [0, 0, 10, 3]);
    // At 3, replan: job 2 now fits at 5 (when job 1 ends), and job 3, which
    // cannot run 3..8, goes after it: later than its reservation.
    assert_eq!(starts(&spec, 4, Policy::Replan), [0, 0, 5, 11]);
}

#[test]
fn replan_and_conservative_differ_after_a_compression_in_order() {
    // The schedule of `conservative_compresses_the_schedule_after_an_early_end`:
    // replanning from scratch puts job 2 after job 1 (9), not after job 3's
    // old reservation.
    let spec = [(0, 4, 4, 10), (1, 5, 2, 5), (2, 3, 4, 3), (3, 4, 2, 4)];
    assert_eq!(starts(&spec, 4, Policy::Replan), [0, 4, 9, 4]);
}

#[test]
fn replan_leaves_jobs_beyond_the_window_unplanned() {
    let spec = [
        (0, 10, 1, 10), // 0..10, one of two processors
        (1, 2, 2, 2),   // earliest start 10
        (1, 20, 1, 20), // fits at 1, but would overlap job 1's plan
    ];
    assert_eq!(starts(&spec, 2, Policy::Replan), [0, 10, 12]);
    // Job 1's earliest start is 9 s away, beyond a 3 s window: no plan,
    // and job 2 starts at once; job 1 waits until job 2 ends.
    let narrow = Options {
        policy: Policy::Replan,
        window: 3,
    };
    assert_eq!(simulate(&jobs(&spec), 2, &narrow).start, [0, 21, 1]);
}

#[test]
fn default_keeps_a_wide_jobs_plan_from_later_narrow_jobs() {
    // 8 processors: a job of 2 or more is wide (25 %).
    let spec = [
        (0, 10, 6, 10), // 0..10, 2 processors free
        (1, 10, 4, 10), // first blocked: reserved at 10 (10..20)
        (2, 10, 8, 10), // wide: reserved at 20, after job 1 (20..30)
        (3, 30, 1, 30), // narrow: 3..33 would cross job 2's plan: waits
        (4, 5, 1, 5),   // narrow: 4..9 delays no plan: starts
    ];
    // Job 3 waits for job 2 (30).
    assert_eq!(starts(&spec, 8, Policy::Default), [0, 10, 20, 30, 4]);
    // EASY protects only job 1 (4 processors left over at 10): job 3 runs
    // 3..33 on one of them, and job 2 waits for it.
    assert_eq!(starts(&spec, 8, Policy::Easy), [0, 10, 33, 3, 4]);
}

#[test]
fn default_backfills_shortest_first() {
    let spec = [
        (0, 10, 7, 10), // 0..10, one processor free
        (1, 5, 8, 5),   // first blocked: reserved at 10 (10..15)
        (2, 8, 1, 8),   // narrow, ends by 10: fits in front of job 1
        (2, 4, 1, 4),   // narrow, shorter: tried first, takes the processor
    ];
    // Job 3 runs 2..6; at 6 job 2 would run past 10: it waits for job 1.
    assert_eq!(starts(&spec, 8, Policy::Default), [0, 10, 15, 2]);
    // In priority order (EASY) job 2 takes the processor and job 3 waits.
    assert_eq!(starts(&spec, 8, Policy::Easy), [0, 10, 2, 15]);
}

#[test]
fn default_reserves_for_the_first_blocked_narrow_job() {
    // 16 processors: a job of 3 is narrow (under 25 %).
    let spec = [
        (0, 10, 2, 10),  // 0..10
        (0, 50, 13, 50), // 0..50: one processor free until 10, three after
        (1, 10, 3, 10),  // narrow, first blocked: reserved at 10 (10..20)
        (2, 20, 1, 20),  // narrow: 2..22 would take a processor job 1 needs
        (2, 8, 1, 8),    // narrow: 2..10 does not: starts
    ];
    assert_eq!(starts(&spec, 16, Policy::Default), [0, 0, 10, 20, 2]);
}

#[test]
fn default_leaves_narrow_jobs_after_the_first_blocked_unplanned() {
    // 16 processors: a job of 3 is narrow.
    let spec = [
        (0, 100, 12, 100), // 0..100
        (0, 10, 4, 10),    // 0..10: nothing free until 10, then 4
        (1, 50, 16, 50),   // first blocked: reserved at 100
        (2, 20, 3, 20),    // narrow, blocked behind job 2: no reservation
        (3, 10, 3, 10),    // narrow, shorter
    ];
    // At 10, shortest first: job 4 takes 3 of the 4 free processors
    // (10..20) and job 3, before it in priority order, waits until 20.
    assert_eq!(starts(&spec, 16, Policy::Default), [0, 0, 100, 20, 10]);
    // EASY, in priority order: job 3 at 10, job 4 when it ends.
    assert_eq!(starts(&spec, 16, Policy::Easy), [0, 0, 100, 10, 30]);
}

#[test]
fn limits_are_whole_minutes_unless_exact() {
    assert_eq!(crate::limit_of(1, false), 60);
    assert_eq!(crate::limit_of(60, false), 60);
    assert_eq!(crate::limit_of(61, false), 120);
    assert_eq!(crate::limit_of(61, true), 61);
}

/// splitmix64: a seeded, deterministic generator for the random traces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

#[test]
fn the_profile_matches_an_array() {
    let mut rng = Rng(7);
    for _ in 0..50 {
        let total = rng.range(1, 12);
        let mut p = Profile::new(total, 0);
        let horizon = 400usize;
        let mut free = vec![total; horizon];
        let mut held: Vec<(i64, i64, i64)> = Vec::new();
        for _ in 0..300 {
            match rng.range(0, 9) {
                0 => {
                    let t = p.now() + rng.range(0, 3);
                    // Time passes no interval's end (a job ends by its
                    // expected end), but may pass starts (running jobs).
                    if held.iter().all(|&(_, e, _)| e >= t) {
                        p.advance(t);
                    }
                }
                1..=3 if !held.is_empty() => {
                    let (s, e, n) = held.swap_remove(rng.range(0, held.len() as i64 - 1) as usize);
                    // A running job gives back the rest of its interval.
                    let s = s.max(p.now());
                    p.release(s, e, n);
                    for f in &mut free[s as usize..e as usize] {
                        *f += n;
                    }
                }
                _ => {
                    let need = rng.range(1, total);
                    let len = rng.range(1, 40);
                    let x = p.earliest(need, len);
                    let slow = (p.now()..)
                        .find(|&s| (s..s + len).all(|t| free[t as usize] >= need))
                        .unwrap();
                    assert_eq!(x, slow);
                    if (x + len) < horizon as i64 - 50 {
                        p.occupy(x, x + len, need);
                        for f in &mut free[x as usize..(x + len) as usize] {
                            *f -= need;
                        }
                        held.push((x, x + len, need));
                    }
                }
            }
            p.check();
            for (k, v) in p.steps() {
                assert_eq!(v, free[k as usize], "value at {k}");
            }
            let now = p.now();
            for t in now..horizon as i64 {
                assert_eq!(p.value_at(t), free[t as usize]);
            }
            assert!(
                p.breakpoints() <= 2 * held.len() + 1,
                "breakpoints are dropped"
            );
        }
    }
}

/// The slow implementation: the same event loop, every decision made on a
/// per-second array of occupied processors, every pass from scratch (no
/// shortcut for arrivals, nothing kept from the last pass but
/// `conservative`'s reservations).
fn slow(jobs: &[Job], procs: u32, opts: &Options) -> Vec<i64> {
    let total = i64::from(procs);
    let horizon = (jobs.last().unwrap().submit
        + jobs.iter().map(|j| j.limit).sum::<i64>()
        + opts.window.min(1_000)
        + 2) as usize;
    // Processors taken at each second by running jobs (until their
    // expected ends) and reservations.
    let mut used = vec![0i64; horizon];
    let mut running_used = vec![0i64; horizon];
    let mark = |v: &mut Vec<i64>, s: i64, e: i64, n: i64| {
        for u in &mut v[s as usize..e as usize] {
            *u += n;
        }
    };
    let fits = |v: &Vec<i64>, s: i64, len: i64, need: i64| {
        (s..s + len).all(|t| total - v[t as usize] >= need)
    };
    let earliest = |v: &Vec<i64>, now: i64, len: i64, need: i64| {
        (now..).find(|&s| fits(v, s, len, need)).unwrap()
    };
    let n = jobs.len();
    let mut start = vec![i64::MIN; n];
    let mut res: Vec<Option<i64>> = vec![None; n];
    let mut waiting: Vec<usize> = Vec::new();
    let mut running: Vec<usize> = Vec::new();
    let mut next = 0;
    loop {
        let t = jobs
            .get(next)
            .map(|j| j.submit)
            .into_iter()
            .chain(running.iter().map(|&j| start[j] + jobs[j].run))
            .chain(waiting.iter().filter_map(|&j| res[j]))
            .min();
        let Some(now) = t else { break };
        let mut early = false;
        running.retain(|&j| {
            let job = jobs[j];
            if start[j] + job.run != now {
                return true;
            }
            let expected = start[j] + job.limit;
            mark(&mut used, now, expected, -i64::from(job.procs));
            mark(&mut running_used, now, expected, -i64::from(job.procs));
            early |= expected > now;
            false
        });
        let first_new = waiting.len();
        while next < n && jobs[next].submit == now {
            waiting.push(next);
            next += 1;
        }
        // Starts job `j` now (`planned`: `used` holds it already).
        let begin = |j: usize,
                     used: &mut Vec<i64>,
                     running_used: &mut Vec<i64>,
                     start: &mut Vec<i64>,
                     running: &mut Vec<usize>,
                     planned: bool| {
            let job = jobs[j];
            start[j] = now;
            if !planned {
                mark(used, now, now + job.limit, i64::from(job.procs));
            }
            mark(running_used, now, now + job.limit, i64::from(job.procs));
            running.push(j);
        };
        let mut started = Vec::new();
        match opts.policy {
            Policy::Fcfs => {
                for &j in &waiting {
                    if total - used[now as usize] < i64::from(jobs[j].procs) {
                        break;
                    }
                    begin(
                        j,
                        &mut used,
                        &mut running_used,
                        &mut start,
                        &mut running,
                        false,
                    );
                    started.push(j);
                }
            }
            Policy::Easy => {
                let mut shadow: Option<(i64, i64)> = None;
                for &j in &waiting {
                    let job = jobs[j];
                    let need = i64::from(job.procs);
                    let free = total - used[now as usize];
                    match &mut shadow {
                        None if need <= free => {}
                        None => {
                            let s = (now..).find(|&t| total - used[t as usize] >= need).unwrap();
                            shadow = Some((s, total - used[s as usize] - need));
                            continue;
                        }
                        Some((s, extra)) => {
                            let in_time = now + job.limit <= *s;
                            if need > free || !(in_time || need <= *extra) {
                                continue;
                            }
                            if !in_time {
                                *extra -= need;
                            }
                        }
                    }
                    begin(
                        j,
                        &mut used,
                        &mut running_used,
                        &mut start,
                        &mut running,
                        false,
                    );
                    started.push(j);
                }
            }
            Policy::Default => {
                // Every pass from scratch: the running jobs only, then in
                // priority order, until a reservation is made every job
                // starts if it fits now or is reserved at its earliest
                // start (within the window); after it, the wide jobs do
                // the same and the narrow ones wait for the last part:
                // shortest limit first, start if they fit now.
                used.clone_from(&running_used);
                for &j in &waiting {
                    res[j] = None;
                }
                let mut reserved = false;
                let mut deferred = Vec::new();
                for &j in &waiting {
                    let job = jobs[j];
                    let need = i64::from(job.procs);
                    if reserved && need * 100 < total * WIDE_PERCENT {
                        deferred.push(j);
                        continue;
                    }
                    let x = earliest(&used, now, job.limit, need);
                    if x == now {
                        begin(
                            j,
                            &mut used,
                            &mut running_used,
                            &mut start,
                            &mut running,
                            false,
                        );
                        started.push(j);
                    } else if x - now <= opts.window {
                        // Recorded so that the plan's start is an event
                        // here (the fast one has no such event).
                        mark(&mut used, x, x + job.limit, need);
                        res[j] = Some(x);
                        reserved = true;
                    }
                }
                deferred.sort_by_key(|&j| (jobs[j].limit, j));
                for j in deferred {
                    let job = jobs[j];
                    if fits(&used, now, job.limit, i64::from(job.procs)) {
                        begin(
                            j,
                            &mut used,
                            &mut running_used,
                            &mut start,
                            &mut running,
                            false,
                        );
                        started.push(j);
                    }
                }
            }
            Policy::Conservative | Policy::Replan => {
                let replan = opts.policy == Policy::Replan;
                if replan {
                    used.clone_from(&running_used);
                    for &j in &waiting {
                        res[j] = None;
                    }
                } else if early {
                    for &j in &waiting[..first_new] {
                        let (job, r) = (jobs[j], res[j].unwrap());
                        mark(&mut used, r, r + job.limit, -i64::from(job.procs));
                        let x = earliest(&used, now, job.limit, i64::from(job.procs));
                        assert!(x <= r, "compression never delays");
                        mark(&mut used, x, x + job.limit, i64::from(job.procs));
                        res[j] = Some(x);
                    }
                }
                let from = if replan { 0 } else { first_new };
                for &j in &waiting[from..] {
                    let job = jobs[j];
                    let x = earliest(&used, now, job.limit, i64::from(job.procs));
                    if replan && x - now > opts.window {
                        continue;
                    }
                    mark(&mut used, x, x + job.limit, i64::from(job.procs));
                    res[j] = Some(x);
                }
                for &j in &waiting {
                    if res[j] == Some(now) {
                        res[j] = None;
                        begin(
                            j,
                            &mut used,
                            &mut running_used,
                            &mut start,
                            &mut running,
                            true,
                        );
                        started.push(j);
                    }
                }
            }
        }
        waiting.retain(|j| !started.contains(j));
    }
    start
}

/// A random small trace: bursts of arrivals at the same second, runs often
/// ending exactly at their limits.
fn random_trace(rng: &mut Rng, procs: u32) -> Vec<Job> {
    let n = rng.range(1, 45) as usize;
    let mut t = 0;
    (0..n)
        .map(|i| {
            if rng.range(0, 2) == 0 {
                t += rng.range(0, 8);
            }
            let run = rng.range(1, 30);
            // Exact, overestimated, or one of a few common requests (many
            // jobs of the same shape, as in real traces).
            let limit = match rng.range(0, 3) {
                0 => run,
                1 => run + rng.range(1, 25),
                _ => run.max([10, 30, 45][rng.range(0, 2) as usize]),
            };
            let wide = if rng.range(0, 3) == 0 {
                i64::from(procs)
            } else {
                (i64::from(procs) + 2) / 3
            };
            Job {
                id: i as u64,
                submit: t,
                run,
                procs: rng.range(1, wide) as u32,
                limit,
            }
        })
        .collect()
}

/// Busy processors never exceed the machine, and no job starts before it
/// is submitted.
fn check_feasible(jobs: &[Job], procs: u32, start: &[i64]) {
    let mut edges: Vec<(i64, i64)> = Vec::new();
    for (j, &s) in jobs.iter().zip(start) {
        assert!(
            s >= j.submit,
            "job {} starts at {s} before {}",
            j.id,
            j.submit
        );
        edges.push((s, i64::from(j.procs)));
        edges.push((s + j.run, -i64::from(j.procs)));
    }
    // Ends before starts at the same second.
    edges.sort();
    let mut busy = 0;
    for (t, d) in edges {
        busy += d;
        assert!(busy <= i64::from(procs), "{busy} processors busy at {t}");
    }
}

#[test]
fn random_traces_match_the_slow_implementation() {
    let mut rng = Rng(2026);
    for case in 0..2500 {
        let procs = rng.range(1, 10) as u32;
        let jobs = random_trace(&mut rng, procs);
        let window = match rng.range(0, 3) {
            0 => rng.range(0, 15),
            _ => REPLAN_WINDOW_S,
        };
        for policy in [
            Policy::Fcfs,
            Policy::Easy,
            Policy::Conservative,
            Policy::Replan,
            Policy::Default,
        ] {
            let opts = Options { policy, window };
            let out = simulate(&jobs, procs, &opts);
            check_feasible(&jobs, procs, &out.start);
            let expected = slow(&jobs, procs, &opts);
            assert_eq!(
                out.start, expected,
                "case {case}, {policy:?}, window {window}, {procs} processors: {jobs:?}"
            );
            if policy == Policy::Conservative {
                for (j, (&s, plan)) in out.start.iter().zip(&out.first_plan).enumerate() {
                    let plan = plan.expect("every job has a reservation");
                    assert!(s <= plan, "case {case}: job {j} starts at {s} after {plan}");
                }
            }
        }
    }
}

/// A trace of `jobs` (in seconds) on `nodes` nodes of `cpus` CPUs, as
/// `sim::swf` reads it.
fn swf_trace(nodes: u32, cpus: u32, jobs: &[Job]) -> sim::swf::Trace {
    let mut text = format!("; MaxNodes: {nodes}\n; MaxProcs: {}\n", nodes * cpus);
    for (i, j) in jobs.iter().enumerate() {
        text.push_str(&format!(
            "{} {} -1 {} {} -1 -1 {} {} -1 1 {} 1 -1 -1 -1 -1 -1\n",
            i + 1,
            j.submit,
            j.run,
            j.procs,
            j.procs,
            j.limit,
            i % 3
        ));
    }
    sim::swf::parse(&text, sim::swf::BadLines::Reject).unwrap()
}

/// `muster sim`'s starts with `SchedulerParameters=bf_plan=pool` (the
/// controller's engine and scheduler, planning over the pool) and this
/// crate's `default`'s, by trace id.
/// Start times by trace id.
type Starts = Vec<(u64, i64)>;

fn muster_pool_and_default(trace: &sim::swf::Trace) -> (Starts, Starts) {
    let cfg = sim::build_config(&trace.machine, None).unwrap();
    let mut sc = engine::sched_config(&cfg);
    sc.bf_plan = sched::PlanOn::Pool;
    let out = sim::driver::simulate(trace, &cfg, sc, false, &mut |_, _| {});
    let ours = out.records.iter().map(|r| (r.id, r.start)).collect();
    let jobs = crate::jobs_of(trace, false);
    let procs = trace.machine.procs() as u32;
    let reference = simulate(&jobs, procs, &Options::new(Policy::Default));
    let theirs = jobs
        .iter()
        .zip(&reference.start)
        .map(|(j, &s)| (j.id, s))
        .collect();
    (ours, theirs)
}

#[test]
fn muster_planning_over_the_pool_schedules_as_the_default_here() {
    // Small machines of nodes with several CPUs (where named nodes and a
    // pool part), times in half minutes so that whole-minute limits and
    // the seconds between them both occur.
    let mut rng = Rng(6);
    for case in 0..300 {
        let nodes = rng.range(1, 4) as u32;
        let cpus = rng.range(1, 4) as u32;
        let mut jobs = random_trace(&mut rng, nodes * cpus);
        for j in &mut jobs {
            (j.submit, j.run, j.limit) = (j.submit * 30, j.run * 30, j.limit * 30);
        }
        let (ours, theirs) = muster_pool_and_default(&swf_trace(nodes, cpus, &jobs));
        assert_eq!(ours, theirs, "case {case}, {nodes} x {cpus}: {jobs:?}");
    }
    // The head of every shipped trace (the copies `sim`'s tests read).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/tests/data");
    for stem in [
        "KTH-SP2-1996-2.1-cln",
        "NASA-iPSC-1993-3.1-cln",
        "RICC-2010-2",
    ] {
        let text = sim::read_trace(&dir.join(format!("{stem}-head.swf"))).unwrap();
        let mut trace = sim::swf::parse(&text, sim::swf::BadLines::Reject).unwrap();
        trace.jobs.truncate(3000);
        let (ours, theirs) = muster_pool_and_default(&trace);
        let first = ours.iter().zip(&theirs).find(|(a, b)| a != b);
        assert!(
            first.is_none(),
            "{stem}: first start that differs (muster, here): {first:?}"
        );
    }
}
