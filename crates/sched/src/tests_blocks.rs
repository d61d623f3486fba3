//! Windows in which nodes take no job (`Blocks`: advance reservations as
//! the jobs outside them see them): a job outside never starts or is
//! planned into one on its nodes, and is planned after it; the jobs
//! decided first (a reservation's own) use its nodes.

use super::*;

/// One pass over `jobs` with `blocks`, every blocked job planned.
fn run_blocked(
    nodes: &[NodeView],
    jobs: &[JobRequest],
    running: &[RunningJob],
    blocks: Blocks,
    now: i64,
) -> Plan {
    let parts = [part(nodes.len() as u32)];
    let view = ClusterView {
        nodes,
        parts: &parts,
        jobs,
        running,
    };
    let cfg = SchedConfig {
        bf_resolution: 1,
        bf_window: 1440,
        bf_job_part_count_reserve: None,
        ..SchedConfig::default()
    };
    let mut cache = PassCache::default();
    cache.blocks = blocks;
    crate::plan_with(&view, &cfg, now, &mut cache)
}

fn window(nodes: &[u32], from: i64, until: i64) -> Block {
    Block {
        nodes: nodes.iter().map(|&n| NodeIdx(n)).collect(),
        from,
        until,
    }
}

#[test]
fn a_job_that_would_run_into_a_window_is_planned_after_it() {
    // Maintenance on both nodes from 60 s to 660 s: a 5-minute job waits
    // for its end, a 1-minute one (done by 60 s) runs now.
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let jobs = vec![timed(1, 1, 5), timed(2, 1, 1)];
    let blocks = Blocks {
        windows: vec![window(&[0, 1], 60, 660)],
        first: Default::default(),
    };
    let p = run_blocked(&nodes, &jobs, &[], blocks, 0);
    assert_eq!(starts(&p), vec![(2, vec![(0, 1)])]);
    assert_eq!(reason(&p, 1), Some(PendingReason::Resources));
    assert_eq!(p.planned[&JobId(1)].start, 660);
}

#[test]
fn a_window_on_some_nodes_sends_jobs_to_the_others() {
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let jobs = vec![timed(1, 1, 60)];
    let blocks = Blocks {
        windows: vec![window(&[0], 0, 600)],
        first: Default::default(),
    };
    let p = run_blocked(&nodes, &jobs, &[], blocks, 0);
    assert_eq!(starts(&p), vec![(1, vec![(1, 1)])]);
}

#[test]
fn the_jobs_decided_first_use_the_window_nodes() {
    // Job 2 is the reservation's (kept to node 0 as the engine keeps it);
    // job 1, of higher priority, is not, and goes to node 1.
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let mut own = timed(2, 1, 60);
    own.excluded_nodes = vec![NodeIdx(1)];
    let jobs = vec![timed(1, 1, 60), own];
    let blocks = Blocks {
        windows: vec![window(&[0], 0, 600)],
        first: [JobId(2)].into_iter().collect(),
    };
    let p = run_blocked(&nodes, &jobs, &[], blocks, 0);
    let mut s = starts(&p);
    s.sort();
    assert_eq!(s, vec![(1, vec![(1, 1)]), (2, vec![(0, 1)])]);
}

/// Random windows over `scenario()`s nodes, and which jobs are decided
/// first (kept to the nodes of the first window, as a reservation's own).
fn blocked_scenario() -> impl Strategy<Value = (Scenario, Vec<Block>, Vec<bool>)> {
    (
        scenario(),
        prop::collection::vec((0u32..64, 0i64..150, 1i64..150), 0..3),
        prop::collection::vec(prop::bool::weighted(0.2), 14),
    )
        .prop_map(|(s, specs, members)| {
            let n = s.nodes.len() as u32;
            let windows = specs
                .into_iter()
                .map(|(mask, from, len)| {
                    let nodes: Vec<u32> = (0..n).filter(|i| mask & (1 << (i % 6)) != 0).collect();
                    window(&nodes, from * 60, (from + len) * 60)
                })
                .collect();
            (s, windows, members)
        })
}

proptest! {
    /// No job outside the windows starts or is planned on a window's node
    /// for a run that meets the window; no node gives more CPUs than it
    /// has at any time; the jobs decided first stay on their nodes.
    #[test]
    fn no_job_is_planned_into_a_window_it_may_not_use(
        (mut s, windows, members) in blocked_scenario(),
    ) {
        let first_nodes: Vec<NodeIdx> = windows.first().map_or(Vec::new(), |w| w.nodes.clone());
        let mut first = std::collections::BTreeSet::new();
        for (j, m) in s.jobs.iter_mut().zip(&members) {
            if *m && !windows.is_empty() {
                first.insert(j.job_id);
                j.excluded_nodes = (0..s.nodes.len() as u32)
                    .map(NodeIdx)
                    .filter(|i| !first_nodes.contains(i))
                    .collect();
            }
        }
        let blocks = Blocks { windows: windows.clone(), first: first.clone() };
        let p = run_blocked(&s.nodes, &s.jobs, &s.running, blocks, 0);
        let limit = |id: JobId| {
            let j = s.jobs.iter().find(|j| j.job_id == id).expect("job");
            p.time_limits.get(&id).map_or(limit_secs(j.time_limit), |m| i64::from(*m) * 60)
        };
        let mut runs: Vec<(JobId, i64, Vec<NodeIdx>)> = Vec::new();
        for (id, d) in &p.decisions {
            if let Decision::Start(a) = d {
                runs.push((*id, 0, a.nodes.iter().map(|n| n.node).collect()));
            }
        }
        for (id, pl) in &p.planned {
            runs.push((*id, pl.start, pl.nodes()));
        }
        for (id, start, on) in &runs {
            let end = start.saturating_add(limit(*id));
            if first.contains(id) {
                prop_assert!(on.iter().all(|n| first_nodes.contains(n)), "job {id} left its nodes");
                continue;
            }
            for w in &windows {
                let meets = w.from < end && *start < w.until;
                let shared = on.iter().any(|n| w.nodes.contains(n));
                prop_assert!(
                    !(meets && shared),
                    "job {id} on {on:?} over [{start}, {end}) meets window {w:?}"
                );
            }
        }
        // Nothing given twice (the windows hold no CPUs of their own).
        let mut all = holds(&s, &p);
        for (id, pl) in &p.planned {
            for na in &pl.alloc.nodes {
                all.push((na.node.0 as usize, pl.start, pl.start + limit(*id), na.clone()));
            }
        }
        let mut times: Vec<i64> = all.iter().map(|h| h.1).collect();
        times.sort();
        times.dedup();
        for t in times {
            for (i, n) in s.nodes.iter().enumerate() {
                let cpus: u32 = all
                    .iter()
                    .filter(|h| h.0 == i && h.1 <= t && t < h.2)
                    .map(|h| h.3.cpus)
                    .sum();
                prop_assert!(cpus <= n.cpus, "node {i} at {t}: {cpus} cpus of {}", n.cpus);
            }
        }
    }
}
