use crate::placement::PartView;
use model::TimeLimit;
use std::borrow::Cow;
use std::ops::Bound;

use super::*;
use proptest::prelude::*;

fn plain_node() -> NodeView {
    NodeView {
        name: String::new(),
        cpus: 8,
        real_memory: 1000,
        alloc_cpus: 0,
        alloc_mem: 0,
        gres: vec![],
        features: vec![],
        weight: 1,
        available: true,
        exclusive_in_use: false,
        n_jobs: 0,
        cpu_ids_in_use: Vec::new(),
        threads: 1,
        part_cpus: Vec::new(),
    }
}

/// What a timeline holds for its running jobs, in an order of its own:
/// each node's shares (until, node, CPUs, exclusive) sorted, and the
/// release times.
type Held = (
    Vec<Vec<(Timestamp, u32, u32, bool)>>,
    BTreeMap<(Timestamp, usize), (u32, i64)>,
    BTreeMap<Timestamp, (usize, i64)>,
);

/// The per-time sums beside `added` and `plan_starts` are theirs.
fn assert_sums(tl: &Timeline) {
    let added: BTreeMap<Timestamp, (usize, i64)> = tl
        .added
        .iter()
        .map(|(&t, v)| (t, (v.len(), v.iter().map(|e| e.1).sum())))
        .collect();
    assert_eq!(added, tl.added_cpus);
    let starts: Vec<(Timestamp, usize)> =
        tl.plan_starts.iter().map(|(&t, v)| (t, v.len())).collect();
    let summed: Vec<(Timestamp, usize)> =
        tl.plan_start_cpus.iter().map(|(&t, s)| (t, s.0)).collect();
    assert_eq!(starts, summed);
    // Each node's running holds summed, and the end of its last plan.
    for (i, on) in tl.running_on.iter().enumerate() {
        assert_eq!(tl.run_sum[i], RunSum::of(on), "node {i}");
        let last = tl.node_plans(i).map(|h| h.until).max();
        let ends: Vec<Timestamp> = tl.node_plans(i).map(|h| h.until).collect();
        assert!(ends.windows(2).all(|w| w[0] >= w[1]), "node {i}: {ends:?}");
        assert_eq!(tl.plan_last[i], last.unwrap_or(Timestamp::MIN), "node {i}");
    }
}

impl Timeline {
    /// Node `i`'s planned shares, the last to end first.
    fn node_plans(&self, i: usize) -> impl Iterator<Item = &PlanHold> + '_ {
        let mut k = self.plan_head[i];
        std::iter::from_fn(move || {
            let h = self.plans.get(k as usize)?;
            k = h.older;
            Some(h)
        })
    }
}

fn holds(tl: &Timeline) -> Held {
    let on = tl
        .running_on
        .iter()
        .map(|v| {
            let mut v: Vec<_> = v
                .iter()
                .map(|h| (h.until, h.share.node.0, h.share.cpus, h.exclusive))
                .collect();
            v.sort_unstable();
            v
        })
        .collect();
    // The sums by time are the releases', summed.
    let mut sums: BTreeMap<Timestamp, (usize, i64)> = BTreeMap::new();
    for (&(t, _), &(_, cpus)) in &tl.releases {
        let sum = sums.entry(t).or_default();
        sum.0 += 1;
        sum.1 += cpus;
    }
    assert_eq!(sums, tl.release_cpus);
    (on, tl.releases.clone(), tl.release_cpus.clone())
}

/// `Timeline::earliest` as it was before the walk to the first time
/// with room and the kept overlay: from `base`, the plans a run of `d`
/// overlaps laid on, then every time something may come free visited
/// in turn, its nodes rebuilt there, the job tried wherever the free
/// CPUs suffice.
fn earliest_stepping(
    tl: &mut Timeline,
    job: &JobRequest,
    parts: &[PartView],
    d: i64,
    not_before: Timestamp,
    horizon: Timestamp,
) -> Option<(Timestamp, Allocation)> {
    tl.reset();
    let (now, demand) = (tl.now, demand_cpus(job));
    let overlapping: Vec<usize> = tl
        .plan_starts
        .range(..now.saturating_add(d))
        .flat_map(|(_, n)| n.iter().copied())
        .collect();
    for i in overlapping {
        tl.recompute(i, now, d);
    }
    let mut t = now;
    let found = loop {
        if tl.free >= demand && t >= not_before && tl.may_fit(job) {
            if let Some(a) = tl.place_at(job, parts, t == now) {
                break Some((t, a));
            }
        }
        if t >= horizon {
            break None;
        }
        let after_t = (Bound::Excluded((t, usize::MAX)), Bound::Unbounded);
        let next_running = tl.releases.range(after_t).next().map(|(e, _)| e.0);
        let next_added = tl
            .added
            .range((Bound::Excluded(t), Bound::Unbounded))
            .next()
            .map(|(k, _)| *k);
        let Some(next) = next_running.into_iter().chain(next_added).min() else {
            break None;
        };
        if next > horizon {
            break None;
        }
        let mut touched: Vec<usize> = tl
            .releases
            .range((next, 0)..=(next, usize::MAX))
            .map(|(e, _)| e.1)
            .collect();
        if let Some(nodes) = tl.added.get(&next) {
            touched.extend(nodes.iter().map(|n| n.0));
        }
        touched.extend(
            tl.plan_starts
                .range(t.saturating_add(d)..next.saturating_add(d))
                .flat_map(|(_, n)| n.iter().copied()),
        );
        for i in touched {
            tl.recompute(i, next, d);
        }
        t = next;
    };
    tl.reset();
    found
}

fn plain_job(id: u32, tasks: u32, minutes: u32) -> JobRequest {
    JobRequest {
        job_id: JobId(id),
        priority: 1,
        submit_time: 0,
        partitions: vec![0],
        min_nodes: 1,
        max_nodes: tasks,
        ntasks: tasks,
        ntasks_per_node: None,
        cpus_per_task: 1,
        mem_per_node: None,
        mem_per_cpu: None,
        mem_per_gpu: None,
        gres_per_node: vec![],
        gpus_total: None,
        gpus_per_task: None,
        cpus_per_gpu: None,
        exclusive: false,
        required_nodes: vec![],
        excluded_nodes: vec![],
        constraint: None,
        time_limit: TimeLimit::Minutes(minutes),
        time_min: None,
        user: 1,
        memory_consumable: false,
        enforce_binding: false,
        threads_per_core: None,
        ntasks_per_core: None,
        whole_cores: false,
        max_leaves: None,
        segment: None,
    }
}

proptest! {

    /// A timeline kept from the last pass, given nodes of which some
    /// changed (CPUs in use, availability), holds after `fill` what a
    /// new one holds: every node's state, the free CPUs and their
    /// histogram, each node's rank for plans and for starts now; and
    /// after plans and starts, both find the same for a job.
    #[test]
    fn a_kept_timeline_takes_the_nodes_a_new_one_takes(
        passes in prop::collection::vec(
            (
                // Per node: CPUs in use, available.
                prop::collection::vec((0u32..9, prop::bool::weighted(0.9)), 6),
                // Plans: (node, CPUs, start from now, length).
                prop::collection::vec((0u32..6, 1u32..5, 0i64..300, 1i64..300), 0..4),
                // Starts: (node, CPUs, limit).
                prop::collection::vec((0u32..6, 1u32..3, 1i64..400), 0..3),
                // A job tried after them: (tasks, minutes).
                (1u32..20, 1u32..8),
                1i64..100,
            ),
            1..8,
        )
    ) {
        let parts = vec![crate::tests::part(6)];
        let on = |node: u32, cpus: u32| Allocation {
            partition: 0,
            nodes: vec![NodeAlloc { node: NodeIdx(node), cpus, mem: 0, tasks: cpus, gres: vec![], cpu_ids: vec![] }],
            exclusive: false,
        };
        let state = |tl: &Timeline| {
            let uses = |v: &[NodeView]| -> Vec<(u32, u64, u32, bool, bool)> {
                v.iter()
                    .map(|n| (n.alloc_cpus, n.alloc_mem, n.n_jobs, n.available, n.exclusive_in_use))
                    .collect()
            };
            let planned: Vec<usize> =
                (0..tl.plan_head.len()).map(|i| tl.node_plans(i).count()).collect();
            (
                (uses(&tl.base), uses(&tl.work), tl.free, tl.base_free),
                (tl.hist.clone(), tl.hist_top, tl.free_now.clone(), tl.next_plan.clone()),
                (planned, tl.dirty.len(), tl.overlay),
            )
        };
        let mut kept = Timeline::empty();
        let mut now = 0;
        for (states, plans, starts, (tasks, minutes), step) in passes {
            now += step;
            let nodes: Vec<NodeView> = states
                .iter()
                .map(|&(used, up)| NodeView {
                    alloc_cpus: used,
                    n_jobs: u32::from(used > 0),
                    cpu_ids_in_use: Vec::new(),
                    threads: 1,
                    part_cpus: Vec::new(),
                    available: up,
                    ..plain_node()
                })
                .collect();
            let mut fresh = Timeline::empty();
            fresh.fill(&nodes, Running::All(&[]), now, 1, None);
            kept.fill(&nodes, Running::All(&[]), now, 1, None);
            prop_assert_eq!(state(&kept), state(&fresh));
            let job = plain_job(1, tasks, minutes);
            let d = i64::from(minutes) * 60;
            let mut found = Vec::new();
            for tl in [&mut kept, &mut fresh] {
                for &(node, cpus, from, len) in &plans {
                    tl.reserve(now + from, len, &on(node, cpus));
                }
                for &(node, cpus, limit) in &starts {
                    tl.start(limit, &on(node, cpus));
                }
                let start = tl.fits_now(&job, &parts, d);
                found.push((start, tl.earliest(&job, &parts, d, now, FOREVER)));
            }
            prop_assert_eq!(&found[0], &found[1]);
            prop_assert_eq!(state(&kept), state(&fresh));
            assert_sums(&kept);
        }
    }


    /// The walk to the first time a job could have room, and the plans
    /// kept laid on from one job that may start now to the next, find
    /// what stepping through every time finds: the same start and
    /// nodes for every job tried and planned in turn, with
    /// `bf_resolution` 1 (exact release times) and above (rounded).
    #[test]
    fn the_walk_to_room_finds_what_stepping_finds(
        run_specs in prop::collection::vec((0u32..6, 1u32..9, 1i64..3000, any::<bool>()), 0..30),
        tries in prop::collection::vec((1u32..49, 1u32..60, any::<bool>(), 0i64..4000), 1..12),
        resolution in prop::sample::select(vec![1u32, 60]),
    ) {
        let nodes: Vec<NodeView> = (0..6).map(|_| plain_node()).collect();
        let parts = vec![crate::tests::part(6)];
        let now = 1_000;
        let mut nodes = nodes;
        let mut running = Vec::new();
        for (k, (on, cpus, end, exclusive)) in run_specs.into_iter().enumerate() {
            let n = &mut nodes[on as usize];
            let cpus = cpus.min(n.cpus - n.alloc_cpus);
            if cpus == 0 || n.exclusive_in_use {
                continue;
            }
            // A job alone on its node may hold it whole, with fewer CPUs.
            let exclusive = exclusive && n.n_jobs == 0;
            n.alloc_cpus += cpus;
            n.n_jobs += 1;
            n.exclusive_in_use = exclusive;
            running.push(RunningJob {
                job_id: JobId(k as u32 + 1),
                end: now + end,
                alloc: Cow::Owned(Allocation {
                    partition: 0,
                    nodes: vec![NodeAlloc { node: NodeIdx(on), cpus, mem: 0, tasks: cpus, gres: vec![], cpu_ids: vec![] }],
                    exclusive,
                }),
                version: None,
            });
        }
        let mut tl = Timeline::empty();
        tl.fill(&nodes, Running::All(&running), now, resolution, None);
        for (k, (tasks, minutes, plan, after)) in tries.into_iter().enumerate() {
            let job = plain_job(100 + k as u32, tasks, minutes);
            let d = i64::from(minutes) * 60;
            let mut reference = tl.clone();
            if plan {
                let from = now + after;
                let want = earliest_stepping(&mut reference, &job, &parts, d, from, FOREVER);
                let got = tl.earliest(&job, &parts, d, from, FOREVER);
                prop_assert_eq!(&got, &want);
                if let Some((start, alloc)) = got {
                    tl.reserve(start, d, &alloc);
                    assert_sums(&tl);
                }
            } else {
                let want = earliest_stepping(&mut reference, &job, &parts, d, now, now)
                    .map(|(_, a)| a);
                let got = tl.fits_now(&job, &parts, d);
                prop_assert_eq!(&got, &want);
                if let Some(alloc) = got {
                    tl.start(d, &alloc);
                }
            }
        }
    }
    /// A timeline kept from pass to pass, changed by the jobs that
    /// started, ended or changed their end since, holds what one set
    /// up from scratch for the same running jobs holds, also after the
    /// starts a pass made (which the next pass is given as running).
    #[test]
    fn a_kept_timeline_holds_what_a_rebuilt_one_holds(
        passes in prop::collection::vec(
            (
                // Running jobs: (id, first node, nodes, cpus, end from now).
                prop::collection::vec((0u32..12, 0u32..6, 1u32..3, 1u32..4, -5i64..400), 0..10),
                // Starts made in the pass: (first node, cpus, limit).
                prop::collection::vec((0u32..6, 1u32..4, 1i64..400), 0..3),
                1i64..100,
                1u32..3,
            ),
            1..8,
        )
    ) {
        let nodes: Vec<NodeView> = (0..6).map(|_| plain_node()).collect();
        let mut kept = Timeline::empty();
        // Given only the changes since the last pass, where it can be.
        let mut delta = Timeline::empty();
        let mut last: Vec<RunningJob<'static>> = Vec::new();
        let mut now = 0;
        for (run_specs, starts, step, resolution) in passes {
            now += step;
            // One entry per id (the first), by id, as the engine gives them.
            let mut running: Vec<RunningJob<'static>> = Vec::new();
            let mut specs = run_specs.clone();
            specs.sort_by_key(|s| s.0);
            specs.dedup_by_key(|s| s.0);
            for (id, first, n, cpus, end) in specs {
                let alloc = Allocation {
                    partition: 0,
                    nodes: (first..(first + n).min(6))
                        .map(|i| NodeAlloc { node: NodeIdx(i), cpus, mem: 0, tasks: cpus, gres: vec![], cpu_ids: vec![] })
                        .collect(),
                    exclusive: false,
                };
                running.push(RunningJob {
                    job_id: JobId(id),
                    end: if end > 390 { FOREVER } else { now + end },
                    alloc: Cow::Owned(alloc),
                    version: None,
                });
            }
            let mut fresh = Timeline::empty();
            fresh.fill(&nodes, Running::All(&running), now, resolution, None);
            kept.fill(&nodes, Running::All(&running), now, resolution, None);
            prop_assert_eq!(holds(&kept), holds(&fresh));
            assert_sums(&kept);
            prop_assert_eq!(kept.kept.len(), running.len());
            let changed: Vec<RunningJob> = running
                .iter()
                .filter(|r| !last.iter().any(|l| l.job_id == r.job_id && l.end == r.end && l.alloc == r.alloc))
                .cloned()
                .collect();
            let gone: Vec<JobId> = last
                .iter()
                .filter(|l| !running.iter().any(|r| r.job_id == l.job_id))
                .map(|l| l.job_id)
                .collect();
            let changes = Running::Changes { changed: &changed, gone: &gone };
            if !delta.fill(&nodes, changes, now, resolution, None) {
                delta.fill(&nodes, Running::All(&running), now, resolution, None);
            }
            prop_assert_eq!(holds(&delta), holds(&fresh));
            assert_sums(&delta);
            prop_assert_eq!(delta.kept.len(), running.len());
            for (first, cpus, limit) in starts {
                let alloc = Allocation {
                    partition: 0,
                    nodes: vec![NodeAlloc { node: NodeIdx(first), cpus, mem: 0, tasks: cpus, gres: vec![], cpu_ids: vec![] }],
                    exclusive: false,
                };
                kept.start(limit, &alloc);
                delta.start(limit, &alloc);
            }
            last = running;
        }
    }
}
