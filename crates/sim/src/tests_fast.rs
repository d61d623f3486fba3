//! `fast`'s loop against the engine: the same records (starts and nodes),
//! the same per-job CSV byte for byte, the same passes and samples.

use crate::driver::{simulate, Outcome};
use crate::swf::{self, BadLines, Trace};
use proptest::prelude::*;
use sched::Policy;

/// The engine's run, as `muster sim --policy P --engine` makes it.
fn engine_run(trace: &Trace, policy: Policy) -> (Outcome, Vec<String>) {
    let cfg = crate::build_config(&trace.machine, None).unwrap();
    let mut sc = engine::sched_config(&cfg);
    if policy != Policy::Backfill {
        sc.policy = policy;
        sc.bf_resolution = 1;
        sc.default_queue_depth = u32::MAX;
    }
    assert!(crate::fast::supports(&sc), "{sc:?}");
    let names = cfg.nodes.iter().map(|n| n.name.clone()).collect();
    (simulate(trace, &cfg, sc, false, &mut |_, _| {}), names)
}

fn fast_run(trace: &Trace, policy: Policy, want_nodes: bool) -> Outcome {
    assert_eq!(crate::fast::ineligible(trace), None);
    let cfg = crate::build_config(&trace.machine, None).unwrap();
    let cpus: Vec<u32> = cfg.nodes.iter().map(|n| n.cpus).collect();
    crate::fast::simulate(trace, &cpus, policy, want_nodes, &mut |_, _| {})
}

/// Both runs of `trace` under `policy` agree in everything they report;
/// the error names the first difference.
fn compare(trace: &Trace, policy: Policy) -> Result<(), String> {
    let (slow, names) = engine_run(trace, policy);
    let fast = fast_run(trace, policy, true);
    if !slow.refused.is_empty() {
        return Err(format!("the engine refused {:?}", slow.refused));
    }
    if let Some((a, b)) = slow.records.iter().zip(&fast.records).find(|(a, b)| a != b) {
        return Err(format!("{policy:?}: engine {a:?}, fast {b:?}"));
    }
    if slow.records.len() != fast.records.len() {
        return Err(format!(
            "{policy:?}: {} records against {}",
            slow.records.len(),
            fast.records.len()
        ));
    }
    let csv = |o: &Outcome| crate::report::csv(&o.records, &names);
    if csv(&slow) != csv(&fast) {
        return Err(format!("{policy:?}: the CSVs differ"));
    }
    if slow.passes != fast.passes {
        return Err(format!(
            "{policy:?}: {} passes against {}",
            slow.passes, fast.passes
        ));
    }
    if let Some((a, b)) = slow.samples.iter().zip(&fast.samples).find(|(a, b)| a != b) {
        return Err(format!("{policy:?}: samples engine {a:?}, fast {b:?}"));
    }
    if slow.samples.len() != fast.samples.len() {
        return Err(format!("{policy:?}: sample counts differ"));
    }
    // Without nodes asked for, the same schedule.
    let bare = fast_run(trace, policy, false);
    let starts = |o: &Outcome| {
        o.records
            .iter()
            .map(|r| (r.id, r.start))
            .collect::<Vec<_>>()
    };
    if starts(&bare) != starts(&fast) || bare.passes != fast.passes {
        return Err(format!("{policy:?}: the run without nodes differs"));
    }
    Ok(())
}

/// The head of a shipped trace (tests/data: its first 1,000 jobs).
fn shipped(stem: &str) -> Trace {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{stem}-head.swf"));
    let text = crate::read_trace(&path).unwrap_or_else(|e| panic!("{e:#}"));
    swf::parse(&text, BadLines::Reject).unwrap()
}

#[test]
fn fast_loop_schedules_every_shipped_head_as_the_engine() {
    for stem in [
        "KTH-SP2-1996-2.1-cln",
        "NASA-iPSC-1993-3.1-cln",
        "RICC-2010-2",
    ] {
        let trace = shipped(stem);
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Backfill] {
            if let Err(e) = compare(&trace, policy) {
                panic!("{stem}: {e}");
            }
        }
    }
}

/// A trace of `jobs` (submit gap, run, procs, requested time) on `nodes`
/// nodes of `cpus` CPUs.
fn trace_of(nodes: u32, cpus: u32, jobs: &[(i64, i64, u32, i64)]) -> Trace {
    let mut text = format!("; MaxNodes: {nodes}\n; MaxProcs: {}\n", nodes * cpus);
    let mut t = 0;
    for (i, (gap, run, procs, req)) in jobs.iter().enumerate() {
        t += gap;
        text.push_str(&format!(
            "{} {t} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {} 1 -1 -1 -1 -1 -1\n",
            i + 1,
            i % 3
        ));
    }
    swf::parse(&text, BadLines::Reject).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random small traces on machines of several CPUs per node: bursts in
    /// one second, limits exact, rounded up or far above the run time,
    /// narrow and whole-machine jobs.
    #[test]
    fn fast_loop_schedules_random_traces_as_the_engine(
        nodes in 1u32..6,
        cpus in 1u32..5,
        jobs in prop::collection::vec(
            (prop_oneof![Just(0i64), 0i64..400], 1i64..900, 0u32..100, 0u32..3, 0i64..1500),
            1..40,
        ),
    ) {
        let total = nodes * cpus;
        let jobs: Vec<(i64, i64, u32, i64)> = jobs
            .into_iter()
            .map(|(gap, run, p, kind, more)| {
                let procs = if p % 4 == 0 { total } else { 1 + p % total };
                let req = match kind {
                    0 => run,
                    1 => run + more,
                    _ => run.max(60 * (1 + more / 100)),
                };
                (gap, run, procs, req)
            })
            .collect();
        let trace = trace_of(nodes, cpus, &jobs);
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Backfill] {
            if let Err(e) = compare(&trace, policy) {
                return Err(TestCaseError::fail(format!("{nodes}x{cpus} {jobs:?}: {e}")));
            }
        }
    }

    /// The default policy on deep queues: bursts of narrow and wide jobs
    /// (a quarter of the machine or more), limits from a minute to beyond
    /// the 30 days' window, so that passes leave plans beyond it, stop
    /// planning wide jobs whose plans could change nothing
    /// (`plans_matter`), and decide only arrivals between job ends.
    #[test]
    fn fast_loop_schedules_deep_queues_as_the_engine(
        nodes in 1u32..9,
        cpus in 1u32..5,
        jobs in prop::collection::vec(
            (prop_oneof![3 => Just(0i64), 1 => 0i64..3000], 1i64..5000, 0u32..100, 0u32..20, 0i64..5000),
            20..120,
        ),
    ) {
        let total = nodes * cpus;
        let jobs: Vec<(i64, i64, u32, i64)> = jobs
            .into_iter()
            .map(|(gap, run, p, kind, more)| {
                let procs = if p < 30 {
                    total.div_ceil(4) + p % (total - total.div_ceil(4) + 1)
                } else {
                    1 + p % total.div_ceil(4)
                };
                let req = match kind {
                    0 => run + 31 * 86_400 + more,
                    1..=6 => run,
                    _ => run * (1 + i64::from(kind % 5)) + more,
                };
                (gap, run, procs, req)
            })
            .collect();
        let trace = trace_of(nodes, cpus, &jobs);
        if let Err(e) = compare(&trace, Policy::Backfill) {
            return Err(TestCaseError::fail(format!("{nodes}x{cpus} {jobs:?}: {e}")));
        }
    }
}
