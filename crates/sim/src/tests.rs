//! Reference checks: hand-checked schedules, a textbook FCFS/EASY oracle,
//! and invariants on every shipped trace.

use crate::driver::{simulate, JobRecord, Outcome};
use crate::swf::{self, BadLines, Trace, TraceJob};
use sched::Policy;

fn trace_of(nodes: u32, jobs: &[(i64, i64, u32, i64)]) -> Trace {
    let mut text = format!("; MaxNodes: {nodes}\n; MaxProcs: {nodes}\n");
    for (i, (submit, run, procs, req)) in jobs.iter().enumerate() {
        text.push_str(&format!(
            "{} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {} 1 -1 -1 -1 -1 -1\n",
            i + 1,
            i % 3
        ));
    }
    swf::parse(&text, BadLines::Reject).unwrap()
}

fn run_policy(trace: &Trace, policy: Policy) -> Outcome {
    let cfg = crate::build_config(&trace.machine, None).unwrap();
    let mut sc = engine::sched_config(&cfg);
    sc.policy = policy;
    sc.bf_resolution = 1;
    simulate(trace, &cfg, sc, true, &mut |_, _| {})
}

fn starts(out: &Outcome) -> Vec<(u64, i64)> {
    out.records.iter().map(|r| (r.id, r.start)).collect()
}

/// Equal schedules, or the first job where they part (not a wall of numbers).
fn assert_same(ours: &[(u64, i64)], textbook: &[(u64, i64)]) {
    assert_eq!(ours.len(), textbook.len());
    let differ: Vec<_> = ours.iter().zip(textbook).filter(|(a, b)| a != b).collect();
    assert!(
        differ.is_empty(),
        "{} of {} jobs start differently; first (ours, textbook): {:?}",
        differ.len(),
        ours.len(),
        differ.first()
    );
}

/// Five jobs on four one-CPU nodes (times in seconds, limits in whole
/// minutes so that the engine's minute limits are exact):
///
/// ```text
/// job submit  run procs req
///  1      0  6000   2  6000   starts at once
///  2    600  3000   4  3000   needs the whole machine: waits for job 1 (6000)
///  3   1200  1800   1  1800   FCFS: behind job 2 (starts 9000); EASY: ends by 6000, starts at once
///  4   1800 12000   2 18000   FCFS: 9000; EASY: would end after 6000 and no node is spare: 9000
///  5   2400   600   1   600   FCFS: 9000; EASY: ends by 6000, starts at once
/// ```
fn five_jobs() -> Trace {
    trace_of(
        4,
        &[
            (0, 6000, 2, 6000),
            (600, 3000, 4, 3000),
            (1200, 1800, 1, 1800),
            (1800, 12000, 2, 18000),
            (2400, 600, 1, 600),
        ],
    )
}

#[test]
fn fcfs_reproduces_the_hand_checked_schedule() {
    let out = run_policy(&five_jobs(), Policy::Fcfs);
    assert_eq!(
        starts(&out),
        vec![(1, 0), (2, 6000), (3, 9000), (4, 9000), (5, 9000)]
    );
}

#[test]
fn easy_reproduces_the_hand_checked_schedule() {
    let out = run_policy(&five_jobs(), Policy::Easy);
    assert_eq!(
        starts(&out),
        vec![(1, 0), (2, 6000), (3, 1200), (4, 9000), (5, 2400)]
    );
}

/// Textbook FCFS and EASY over processor counts, as the literature states
/// them: the queue in submission order; start the head while it fits;
/// EASY then computes the head's shadow time (when enough processors are
/// free, by the running jobs' estimated ends) and the extra processors
/// left at that time, and starts any later job that fits now and either
/// ends by the shadow time or uses no more than the extra processors.
fn textbook(trace: &Trace, easy: bool) -> Vec<(u64, i64)> {
    let total = trace.machine.procs() as i64;
    // The engine's limits are whole minutes.
    let est = |j: &TraceJob| (j.req_time.max(1) + 59) / 60 * 60;
    let mut queue: Vec<usize> = Vec::new();
    let mut running: Vec<(i64, i64, i64)> = Vec::new(); // (end, est_end, procs)
    let mut start = vec![None; trace.jobs.len()];
    let mut next = 0;
    loop {
        let t_sub = trace.jobs.get(next).map(|j| j.submit);
        let t_end = running.iter().map(|r| r.0).min();
        let Some(t) = [t_sub, t_end].into_iter().flatten().min() else {
            break;
        };
        running.retain(|r| r.0 > t);
        while trace.jobs.get(next).is_some_and(|j| j.submit <= t) {
            queue.push(next);
            next += 1;
        }
        let mut free = total - running.iter().map(|r| r.2).sum::<i64>();
        let mut begin = |k: usize, free: &mut i64, running: &mut Vec<(i64, i64, i64)>| {
            let j = &trace.jobs[k];
            start[k] = Some(t);
            *free -= i64::from(j.procs);
            running.push((t + j.run, t + est(j), i64::from(j.procs)));
        };
        while let Some(&k) = queue.first() {
            if i64::from(trace.jobs[k].procs) > free {
                break;
            }
            queue.remove(0);
            begin(k, &mut free, &mut running);
        }
        if easy && !queue.is_empty() {
            let head = i64::from(trace.jobs[queue[0]].procs);
            let mut ends: Vec<(i64, i64)> = running.iter().map(|r| (r.1, r.2)).collect();
            ends.sort();
            let mut avail = free;
            let mut shadow = i64::MAX;
            for &(e, p) in &ends {
                avail += p;
                if avail >= head {
                    shadow = e;
                    break;
                }
            }
            // Everything free at the shadow time, ties included.
            let at_shadow = free
                + ends
                    .iter()
                    .filter(|(e, _)| *e <= shadow)
                    .map(|(_, p)| p)
                    .sum::<i64>();
            let mut extra = at_shadow - head;
            let mut i = 1;
            while i < queue.len() {
                let k = queue[i];
                let j = &trace.jobs[k];
                let p = i64::from(j.procs);
                let short = t + est(j) <= shadow;
                if p <= free && (short || p <= extra) {
                    if !short {
                        extra -= p;
                    }
                    queue.remove(i);
                    begin(k, &mut free, &mut running);
                } else {
                    i += 1;
                }
            }
        }
    }
    trace
        .jobs
        .iter()
        .zip(start)
        .map(|(j, s)| (j.id, s.expect("every job starts")))
        .collect()
}

/// A few dozen jobs of mixed widths and lengths on 8 one-CPU nodes, from a
/// fixed generator.
fn dozens() -> Trace {
    let mut seed = 12345u64;
    let mut rnd = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut jobs = Vec::new();
    let mut t = 0;
    for _ in 0..40 {
        t += rnd(900) as i64;
        let run = 60 + rnd(5400) as i64;
        let req = run + rnd(3) as i64 * 1800;
        jobs.push((t, run, 1 + rnd(8) as u32, req));
    }
    trace_of(8, &jobs)
}

#[test]
fn fcfs_matches_the_textbook_on_a_few_dozen_jobs() {
    let trace = dozens();
    assert_same(
        &starts(&run_policy(&trace, Policy::Fcfs)),
        &textbook(&trace, false),
    );
}

#[test]
fn easy_matches_the_textbook_on_a_few_dozen_jobs() {
    let trace = dozens();
    let ours = starts(&run_policy(&trace, Policy::Easy));
    assert_same(&ours, &textbook(&trace, true));
    // And EASY really backfilled something.
    assert_ne!(ours, textbook(&trace, false));
}

/// Random small traces on machines of one-CPU nodes (where a pool of
/// processors and nodes are the same machine): FCFS and EASY give the
/// textbook's start for every job, and the invariants hold. The traces mix
/// bursts in one second, exact and overestimated limits, limits that are
/// not whole minutes (the engine rounds them up, as the textbook here
/// does), narrow and whole-machine jobs.
#[test]
fn random_traces_schedule_as_the_textbook() {
    let mut seed = 2026u64;
    let mut rnd = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    };
    for case in 0..300 {
        let nodes = 1 + rnd(8) as u32;
        let n = 1 + rnd(30);
        let mut t = 0;
        let jobs: Vec<(i64, i64, u32, i64)> = (0..n)
            .map(|_| {
                if rnd(3) > 0 {
                    t += rnd(400) as i64;
                }
                let run = 1 + rnd(900) as i64;
                let req = match rnd(3) {
                    0 => run,
                    1 => run + rnd(1200) as i64,
                    _ => run.max([60, 600, 1800][rnd(3) as usize]),
                };
                let procs = match rnd(4) {
                    0 => nodes,
                    _ => 1 + rnd(u64::from(nodes.div_ceil(2))) as u32,
                };
                (t, run, procs, req)
            })
            .collect();
        let trace = trace_of(nodes, &jobs);
        for (policy, easy) in [(Policy::Fcfs, false), (Policy::Easy, true)] {
            let out = run_policy(&trace, policy);
            check_invariants(&trace, &out);
            let ours = starts(&out);
            let want = textbook(&trace, easy);
            assert!(
                ours == want,
                "case {case} ({policy:?}, {nodes} nodes): {jobs:?}\nours {ours:?}\ntextbook {want:?}"
            );
        }
    }
}

/// Capacity never exceeded, no job before its submission, every job ran.
fn check_invariants(trace: &Trace, out: &Outcome) {
    assert!(out.refused.is_empty(), "{:?}", out.refused);
    assert_eq!(out.records.len(), trace.jobs.len());
    let mut events: Vec<(i64, i64)> = Vec::new();
    for r in &out.records {
        assert!(r.start >= r.submit, "job {} starts before submission", r.id);
        events.push((r.start, i64::from(r.procs)));
        events.push((r.end, -i64::from(r.procs)));
    }
    // Ends before starts at the same second.
    events.sort();
    let mut used = 0;
    for (t, d) in events {
        used += d;
        assert!(
            used <= trace.machine.procs() as i64,
            "{used} processors in use at {t}"
        );
    }
}

/// The head of a shipped trace (tests/data/README.md: the header and the
/// first 1,000 jobs of `../shared/data/traces/NAME`, kept in the repository).
fn shipped(name: &str, prefix: usize) -> Trace {
    let stem = name.trim_end_matches(".swf.gz");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{stem}-head.swf"));
    let text = crate::read_trace(&path).unwrap_or_else(|e| panic!("{e:#}"));
    let mut t = swf::parse(&text, BadLines::Reject).unwrap();
    t.jobs.truncate(prefix);
    t
}

/// Every shipped trace (a prefix, so that a debug build stays quick; the
/// full traces run in the release benchmark, docs/performance-history.md),
/// under every policy; EASY's head job is never started later than the
/// first start it was planned for.
#[test]
fn invariants_hold_on_every_shipped_trace() {
    for name in [
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "NASA-iPSC-1993-3.1-cln.swf.gz",
        "RICC-2010-2.swf.gz",
    ] {
        let trace = shipped(name, 400);
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Backfill] {
            let out = run_policy(&trace, policy);
            check_invariants(&trace, &out);
            // Only EASY promises this: full backfill plans afresh in every
            // pass, and a plan may move later when the jobs ahead of it
            // are re-planned onto other nodes (Slurm's backfill does too).
            if policy == Policy::Easy {
                for (id, planned) in &out.first_plans {
                    let r: &JobRecord = out
                        .records
                        .iter()
                        .find(|r| r.id == *id)
                        .expect("planned job ran");
                    assert!(
                        r.start <= *planned,
                        "{name} {policy:?}: job {id} planned at {planned}, started {}",
                        r.start
                    );
                }
            }
        }
    }
}

/// The same with a small generated tree (leaves of 8 nodes under one top
/// switch) on the head of a shipped trace: placement under the topology
/// keeps the invariants, and EASY's head job still starts no later than
/// its first plan (backfill plans with the placement jobs get).
#[test]
fn invariants_hold_under_a_tree_topology() {
    let trace = shipped("KTH-SP2-1996-2.1-cln.swf.gz", 300);
    let mut cfg = crate::build_config(&trace.machine, None).unwrap();
    let names: Vec<&str> = cfg.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut text = String::new();
    for (k, leaf) in names.chunks(8).enumerate() {
        text.push_str(&format!("SwitchName=s{k} Nodes={}\n", leaf.join(",")));
    }
    let leaves = names.len().div_ceil(8);
    text.push_str(&format!("SwitchName=top Switches=s[0-{}]\n", leaves - 1));
    let topo = conf::parse_topology_conf(&text, std::path::Path::new("topology.conf"))
        .unwrap()
        .0;
    cfg.other.insert(
        "topologyplugin".into(),
        ("TopologyPlugin".into(), "topology/tree".into()),
    );
    cfg.topology = Some(topo);
    for policy in [Policy::Easy, Policy::Backfill] {
        let mut sc = engine::sched_config(&cfg);
        sc.policy = policy;
        sc.bf_resolution = 1;
        let out = simulate(&trace, &cfg, sc, true, &mut |_, _| {});
        check_invariants(&trace, &out);
        if policy == Policy::Easy {
            assert!(!out.first_plans.is_empty());
            for (id, planned) in &out.first_plans {
                let r = out.records.iter().find(|r| r.id == *id).unwrap();
                assert!(
                    r.start <= *planned,
                    "job {id} planned at {planned}, started {}",
                    r.start
                );
            }
        }
    }
}

#[test]
fn fcfs_and_easy_match_the_textbook_on_a_kth_prefix() {
    let trace = shipped("KTH-SP2-1996-2.1-cln.swf.gz", 1000);
    let fcfs = starts(&run_policy(&trace, Policy::Fcfs));
    let easy = starts(&run_policy(&trace, Policy::Easy));
    assert_same(&fcfs, &textbook(&trace, false));
    assert_same(&easy, &textbook(&trace, true));
}

#[test]
fn the_simulation_is_deterministic() {
    let trace = dozens();
    let a = run_policy(&trace, Policy::Backfill);
    let b = run_policy(&trace, Policy::Backfill);
    assert_eq!(a.records, b.records);
}

/// The pass after submissions only (`Engine::schedule`'s shortcut) gives
/// the schedule a full pass after every batch gives, on the head of every
/// shipped trace (RICC-2010-2's nodes have 8 CPUs: which nodes a plan
/// takes matters there), under EASY and the default, with and without
/// plans for long waiters, and with both backfill orders; and so does
/// the simulation that skips the passes that can start nothing.
#[test]
fn short_passes_schedule_as_full_passes_do() {
    for name in [
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "NASA-iPSC-1993-3.1-cln.swf.gz",
        "RICC-2010-2.swf.gz",
    ] {
        let trace = shipped(name, 1000);
        // The default, FCFS, EASY, and the default with a plan for every
        // job that waited an hour (bf_age_reserve), each backfill one with
        // both backfill orders; EASY and the default planning over the
        // pool too (bf_plan=pool).
        use sched::BackfillOrder::{Priority, Shortest};
        for (policy, age, order, pool) in [
            (Policy::Fcfs, None, Priority, false),
            (Policy::Easy, None, Priority, false),
            (Policy::Backfill, None, Priority, false),
            (Policy::Backfill, Some(3600), Priority, false),
            (Policy::Backfill, None, Shortest, false),
            (Policy::Backfill, Some(3600), Shortest, false),
            (Policy::Easy, None, Priority, true),
            (Policy::Backfill, None, Shortest, true),
            (Policy::Backfill, Some(3600), Priority, true),
        ] {
            let cfg = crate::build_config(&trace.machine, None).unwrap();
            let mut sc = engine::sched_config(&cfg);
            sc.policy = policy;
            sc.bf_age_reserve = age;
            sc.bf_order = order;
            sc.bf_plan = if pool {
                sched::PlanOn::Pool
            } else {
                sched::PlanOn::Nodes
            };
            let run = |full, track| {
                crate::driver::simulate_with(&trace, &cfg, sc.clone(), track, full, &mut |_, _| {})
            };
            let (short, full) = (run(false, true), run(true, true));
            let what = format!("{name} {policy:?} {age:?} {order:?} pool {pool}");
            assert_eq!(short.records, full.records, "{what}");
            // The plans shown (squeue --start) are the same too.
            assert_eq!(short.first_plans, full.first_plans, "{what}");
            // Without plans tracked, the passes that can start nothing
            // are skipped (`Engine::pass_starts_nothing`): the same starts.
            let skipping = run(false, false);
            assert_eq!(skipping.records, full.records, "{what}: skipping");
            assert!(skipping.passes < short.passes, "{what}: none skipped");
        }
    }
}

/// `--config` with only the settings to try: ClusterName and SlurmctldHost
/// get placeholders; a full slurm.conf is read as the controller reads it.
#[test]
fn a_config_of_scheduler_settings_alone_is_enough() {
    let dir = std::env::temp_dir().join(format!("muster-sim-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let partial = dir.join("partial.conf");
    std::fs::write(&partial, "SchedulerParameters=bf_age_reserve=3600\n").unwrap();
    let cfg = crate::load_config(&partial).unwrap();
    assert_eq!(cfg.scheduler_params.bf_age_reserve, Some(3600));
    let named = dir.join("named.conf");
    std::fs::write(
        &named,
        "clustername = site\nSlurmctldHost=ctl\nSchedulerParameters=bf_max_job_test=7\n",
    )
    .unwrap();
    let cfg = crate::load_config(&named).unwrap();
    assert_eq!(cfg.cluster_name, "site");
    assert_eq!(cfg.scheduler_params.bf_max_job_test, Some(7));
    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "SchedulerParameters=bf_age_reserve=-1\n").unwrap();
    let err = crate::load_config(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.conf"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(crate::has_key("  ClusterName=x", "clustername"));
    assert!(!crate::has_key("#ClusterName=x", "ClusterName"));
    assert!(!crate::has_key("ClusterNames=x", "ClusterName"));
}

/// Issue 39: the simulator runs no site programs. A slurm.conf with
/// `PrologSlurmctld` (and `EpilogSlurmctld`) simulates exactly as one
/// without, and `muster sim` says that they were not run.
#[test]
fn issue_39_controller_scripts_are_not_run_in_a_simulation() {
    let trace = five_jobs();
    let plain = run_policy(&trace, Policy::Backfill);
    let mut cfg = crate::build_config(&trace.machine, None).unwrap();
    for k in ["prologslurmctld", "epilogslurmctld"] {
        cfg.other
            .insert(k.to_string(), (k.to_string(), "/bin/false".to_string()));
    }
    let said = crate::programs_not_run(&cfg);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].starts_with("PrologSlurmctld is not run in a simulation"));
    let mut sc = engine::sched_config(&cfg);
    sc.policy = Policy::Backfill;
    sc.bf_resolution = 1;
    let with = simulate(&trace, &cfg, sc, true, &mut |_, _| {});
    assert_eq!(starts(&with), starts(&plain));
    assert_eq!(with.records.len(), 5);
}

#[test]
fn topology_report_counts_leaves_spanned_and_fragmentation() {
    use crate::driver::JobRecord;
    let rec = |id: u64, nodes: Vec<u32>| JobRecord {
        id,
        submit: 0,
        start: 0,
        end: 10,
        procs: nodes.len() as u32,
        nodes,
    };
    // Leaves of 2 nodes: 0-1, 2-3; node 4 under none.
    let leaf_of = [Some(0), Some(0), Some(1), Some(1), None];
    let records = [
        rec(1, vec![0]),       // one node: not counted
        rec(2, vec![0, 1]),    // one leaf
        rec(3, vec![1, 2]),    // two leaves where one would do: fragmented
        rec(4, vec![0, 2, 3]), // two leaves, the fewest for three nodes
        rec(5, vec![3, 4]),    // a leaf and a node outside: two
    ];
    let r = crate::report::topology(&records, &leaf_of, 2, "switches");
    assert_eq!(r.multi_node_jobs, 4);
    assert_eq!(r.spanned, [1, 3, 0, 0]);
    assert!((r.mean_spanned - 1.75).abs() < 1e-9);
    assert!((r.fragmented - 0.5).abs() < 1e-9);
    assert_eq!(
        r.text(),
        "multi-node jobs 4\n\
         switches spanned mean 1.75; 1: 1, 2: 3, 3: 0, 4+: 0\n\
         fragmented      50.0 % (more switches than their node count needs)\n"
    );
}
