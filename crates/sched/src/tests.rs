use super::*;
use model::{Gres, JobId, PendingReason, TimeLimit};
use proptest::prelude::*;
use std::borrow::Cow;

fn node(name: &str, cpus: u32, mem: u64, gpus: u32) -> NodeView {
    NodeView {
        name: name.into(),
        cpus,
        real_memory: mem,
        alloc_cpus: 0,
        alloc_mem: 0,
        gres: if gpus > 0 {
            vec![GresPool {
                name: "gpu".into(),
                type_: Some("a100".into()),
                indexes: (0..gpus).collect(),
                used: vec![false; gpus as usize],
                cores: Vec::new(),
            }]
        } else {
            vec![]
        },
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

/// One partition of the first `n_nodes` nodes (the property tests in
/// `backfill` use it too).
pub(crate) fn part(n_nodes: u32) -> PartView {
    PartView {
        name: "debug".into(),
        nodes: (0..n_nodes).map(NodeIdx).collect(),
        up: true,
        max_nodes: None,
        min_nodes: 0,
        max_time: TimeLimit::Unlimited,
        exclusive: false,
        max_mem_per_node: None,
        priority_tier: 1,
        max_cpus_per_node: None,
        lln: false,
        topology: None,
    }
}

fn job(id: u32, nodes: u32, tasks: u32) -> JobRequest {
    JobRequest {
        job_id: JobId(id),
        priority: 1000 - id,
        submit_time: id as i64,
        partitions: vec![0],
        min_nodes: nodes,
        max_nodes: nodes,
        ntasks: tasks,
        ntasks_per_node: None,
        cpus_per_task: 1,
        mem_per_node: None,
        mem_per_cpu: Some(100),
        mem_per_gpu: None,
        gres_per_node: vec![],
        gpus_total: None,
        gpus_per_task: None,
        cpus_per_gpu: None,
        exclusive: false,
        required_nodes: vec![],
        excluded_nodes: vec![],
        constraint: None,
        time_limit: TimeLimit::Unlimited,
        time_min: None,
        user: 1000,
        memory_consumable: true,
        enforce_binding: false,
        threads_per_core: None,
        ntasks_per_core: None,
        whole_cores: false,
        max_leaves: None,
        segment: None,
    }
}

/// One pass with the default (backfill) policy and nothing running.
fn plan(nodes: &[NodeView], parts: &[PartView], jobs: &[JobRequest], now: i64) -> Plan {
    let view = ClusterView {
        nodes,
        parts,
        jobs,
        running: &[],
    };
    crate::plan(&view, &SchedConfig::default(), now)
}

fn starts(plan: &Plan) -> Vec<(u32, Vec<(u32, u32)>)> {
    plan.decisions
        .iter()
        .filter_map(|(id, d)| match d {
            Decision::Start(a) => {
                Some((id.0, a.nodes.iter().map(|n| (n.node.0, n.cpus)).collect()))
            }
            Decision::Wait(_) => None,
        })
        .collect()
}

fn reason(plan: &Plan, id: u32) -> Option<PendingReason> {
    plan.decisions.iter().find_map(|(j, d)| match d {
        Decision::Wait(r) if j.0 == id => Some(*r),
        _ => None,
    })
}

#[test]
fn jobs_share_nodes_until_cpus_run_out() {
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let jobs = vec![job(1, 1, 1), job(2, 1, 1), job(3, 1, 2), job(4, 1, 1)];
    let plan = plan(&nodes, &[part(2)], &jobs, 0);
    assert_eq!(
        starts(&plan),
        vec![(1, vec![(0, 1)]), (2, vec![(0, 1)]), (3, vec![(1, 2)])]
    );
    assert_eq!(reason(&plan, 4), Some(PendingReason::Resources));
}

#[test]
fn tasks_spread_over_min_nodes_with_at_least_one_each() {
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let plan = plan(&nodes, &[part(2)], &[job(1, 2, 3)], 0);
    assert_eq!(starts(&plan), vec![(1, vec![(0, 2), (1, 1)])]);
    let plan2 = plan_for_two_tasks_two_nodes();
    assert_eq!(starts(&plan2), vec![(1, vec![(0, 1), (1, 1)])]);
}

fn plan_for_two_tasks_two_nodes() -> Plan {
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    plan(&nodes, &[part(2)], &[job(1, 2, 2)], 0)
}

#[test]
fn second_blocked_job_waits_for_priority() {
    let nodes = vec![node("n1", 1, 4000, 0)];
    let plan = plan(
        &nodes,
        &[part(1)],
        &[job(1, 1, 1), job(2, 1, 1), job(3, 1, 1)],
        0,
    );
    assert_eq!(reason(&plan, 2), Some(PendingReason::Resources));
    assert_eq!(reason(&plan, 3), Some(PendingReason::Priority));
}

#[test]
fn drained_nodes_give_the_nodes_down_reason() {
    let mut nodes = vec![node("n1", 1, 4000, 0), node("n2", 1, 4000, 0)];
    nodes[1].available = false;
    let plan = plan(&nodes, &[part(2)], &[job(1, 2, 2)], 0);
    assert_eq!(reason(&plan, 1), Some(PendingReason::NodesDown));
}

/// Issue 35: real Slurm 22.05 left `sbatch -N5` on a partition of four
/// nodes pending with PartitionNodeLimit (after its first pass).
#[test]
fn issue_35_more_nodes_than_the_partition_has_is_partition_node_limit() {
    let nodes = vec![node("n1", 1, 4000, 0)];
    let plan = plan(&nodes, &[part(1)], &[job(1, 4, 4)], 0);
    assert_eq!(reason(&plan, 1), Some(PendingReason::PartitionNodeLimit));
}

#[test]
fn gpus_are_counted_by_index() {
    let nodes = vec![node("n1", 4, 4000, 2)];
    let mut a = job(1, 1, 1);
    a.gres_per_node = vec![Gres::parse("gpu:1").unwrap()];
    let mut b = a.clone();
    b.job_id = JobId(2);
    let mut c = a.clone();
    c.job_id = JobId(3);
    let plan = plan(&nodes, &[part(1)], &[a, b, c], 0);
    let gpus: Vec<Vec<u32>> = plan
        .decisions
        .iter()
        .filter_map(|(_, d)| match d {
            Decision::Start(a) => Some(a.nodes[0].gres[0].1.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(gpus, vec![vec![0], vec![1]]);
    assert_eq!(reason(&plan, 3), Some(PendingReason::Resources));
}

/// Issue 35: `--gpus=3 -n2` on nodes of two GPUs (and two CPUs) takes
/// two nodes, one task and 2 + 1 GPUs, as Slurm does; it used to put both
/// tasks on the first node and find no task left for the third GPU.
#[test]
fn issue_35_gpus_for_the_job_spread_over_nodes_with_a_task_each() {
    let nodes = vec![node("n1", 2, 4000, 2), node("n2", 2, 4000, 2)];
    let mut a = job(1, 1, 2);
    a.max_nodes = u32::MAX;
    a.gpus_total = Some(Gres::parse("gpu:3").unwrap());
    let plan = plan(&nodes, &[part(2)], &[a], 0);
    let placed: Vec<(u32, u32, usize)> = plan
        .decisions
        .iter()
        .filter_map(|(_, d)| match d {
            Decision::Start(a) => Some(a),
            _ => None,
        })
        .flat_map(|a| {
            a.nodes
                .iter()
                .map(|n| (n.node.0, n.tasks, n.gres.iter().map(|g| g.1.len()).sum()))
        })
        .collect();
    assert_eq!(placed, vec![(0, 1, 2), (1, 1, 1)]);
}

#[test]
fn typed_gres_must_match_type() {
    let nodes = vec![node("n1", 4, 4000, 2)];
    let mut a = job(1, 1, 1);
    a.gres_per_node = vec![Gres::parse("gpu:v100:1").unwrap()];
    let plan = plan(&nodes, &[part(1)], &[a], 0);
    assert!(starts(&plan).is_empty());
}

#[test]
fn exclusive_job_takes_the_whole_node() {
    let nodes = vec![node("n1", 4, 4000, 0)];
    let mut a = job(1, 1, 1);
    a.exclusive = true;
    let plan = plan(&nodes, &[part(1)], &[a, job(2, 1, 1)], 0);
    assert_eq!(starts(&plan), vec![(1, vec![(0, 4)])]);
}

#[test]
fn constraints_and_or() {
    let c = Constraint::parse("a&b|c").unwrap();
    assert!(c.satisfied_by(&["a".into(), "b".into()]));
    assert!(c.satisfied_by(&["c".into()]));
    assert!(!c.satisfied_by(&["a".into()]));
    assert!(Constraint::parse("a&").is_none());
}

#[test]
fn required_and_excluded_nodes() {
    let nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let mut a = job(1, 1, 1);
    a.required_nodes = vec![NodeIdx(1)];
    let mut b = job(2, 1, 1);
    b.excluded_nodes = vec![NodeIdx(0)];
    let plan = plan(&nodes, &[part(2)], &[a, b], 0);
    assert_eq!(starts(&plan), vec![(1, vec![(1, 1)]), (2, vec![(1, 1)])]);
}

/// A node of 4 CPUs and two GPUs, one per socket: GPU 0 near CPUs 0-1,
/// GPU 1 near CPUs 2-3 (gres.conf `Cores=`).
fn two_socket_node() -> NodeView {
    let mut n = node("n1", 4, 4000, 2);
    n.gres[0].cores = vec![vec![0, 1], vec![2, 3]];
    n
}

fn gpus_of(plan: &Plan, id: u32) -> Option<Vec<u32>> {
    plan.decisions.iter().find_map(|(j, d)| match d {
        Decision::Start(a) if j.0 == id => {
            Some(a.nodes[0].gres.iter().flat_map(|g| g.1.clone()).collect())
        }
        _ => None,
    })
}

/// Issue 37: `--gres-flags=enforce-binding` takes the GPU whose `Cores=`
/// have the free CPUs the job needs; without it, the lowest free GPU.
#[test]
fn issue_37_enforce_binding_picks_the_gpu_near_free_cpus() {
    let mut n = two_socket_node();
    n.alloc_cpus = 2;
    n.n_jobs = 1;
    n.cpu_ids_in_use = vec![0, 1];
    let mut a = job(1, 1, 1);
    a.gres_per_node = vec![Gres::parse("gpu:1").unwrap()];
    let p = plan(std::slice::from_ref(&n), &[part(1)], &[a.clone()], 0);
    assert_eq!(gpus_of(&p, 1), Some(vec![0]));
    a.enforce_binding = true;
    let p = plan(&[n], &[part(1)], &[a], 0);
    assert_eq!(gpus_of(&p, 1), Some(vec![1]));
}

/// Issue 37: a job whose GPU's cores are taken waits (Resources); one
/// that no choice of GPUs could give its CPUs near them is never placed,
/// and two GPUs of two sockets give it the CPUs of both.
#[test]
fn issue_37_enforce_binding_waits_or_never_fits() {
    let mut n = two_socket_node();
    n.alloc_cpus = 1;
    n.n_jobs = 1;
    n.cpu_ids_in_use = vec![2];
    n.gres[0].used = vec![true, false];
    let mut a = job(1, 1, 2);
    a.gres_per_node = vec![Gres::parse("gpu:1").unwrap()];
    a.enforce_binding = true;
    let p = plan(std::slice::from_ref(&n), &[part(1)], &[a.clone()], 0);
    assert_eq!(reason(&p, 1), Some(PendingReason::Resources));
    // Three CPUs near one GPU: no socket has them.
    let mut b = job(2, 1, 3);
    b.gres_per_node = vec![Gres::parse("gpu:1").unwrap()];
    b.enforce_binding = true;
    assert!(matches!(
        place(&b, &[part(1)], &[two_socket_node()]),
        Err(Unfit::Never(_))
    ));
    b.enforce_binding = false;
    assert!(place(&b, &[part(1)], &[two_socket_node()]).is_ok());
    // With two GPUs the cores of both sockets count.
    let mut c = job(3, 1, 3);
    c.gres_per_node = vec![Gres::parse("gpu:2").unwrap()];
    c.enforce_binding = true;
    assert!(place(&c, &[part(1)], &[two_socket_node()]).is_ok());
    // A GPU without Cores= binds no CPUs.
    let mut free = two_socket_node();
    free.gres[0].cores = vec![vec![0, 1], vec![]];
    b.enforce_binding = true;
    let a = place(&b, &[part(1)], &[free]).unwrap();
    assert_eq!(a.nodes[0].gres[0].1, vec![1]);
}

proptest! {
    /// No node is ever over-allocated in CPUs, memory or GPUs, and no GPU
    /// index is given twice.
    #[test]
    fn no_resource_is_given_twice(
        node_specs in prop::collection::vec((1u32..8, 1000u64..8000, 0u32..4), 1..6),
        job_specs in prop::collection::vec((1u32..3, 1u32..6, 0u64..3, 1u64..3000, any::<bool>()), 0..20),
    ) {
        let nodes: Vec<NodeView> = node_specs.iter().enumerate()
            .map(|(i, (c, m, g))| node(&format!("n{i}"), *c, *m, *g)).collect();
        let jobs: Vec<JobRequest> = job_specs.iter().enumerate().map(|(i, (n, t, g, mem, excl))| {
            let mut j = job(i as u32 + 1, *n, (*t).max(*n));
            j.mem_per_cpu = Some(*mem);
            j.exclusive = *excl;
            if *g > 0 { j.gres_per_node = vec![Gres { name: "gpu".into(), type_: None, count: *g }]; }
            j
        }).collect();
        let p = plan(&nodes, &[part(nodes.len() as u32)], &jobs, 0);
        let mut cpus = vec![0u32; nodes.len()];
        let mut mem = vec![0u64; nodes.len()];
        let mut gpus: Vec<Vec<u32>> = vec![vec![]; nodes.len()];
        let mut excl = vec![0u32; nodes.len()];
        let mut n_jobs = vec![0u32; nodes.len()];
        for (_, d) in &p.decisions {
            if let Decision::Start(a) = d {
                for na in &a.nodes {
                    let i = na.node.0 as usize;
                    cpus[i] += na.cpus;
                    mem[i] += na.mem;
                    n_jobs[i] += 1;
                    if a.exclusive { excl[i] += 1; }
                    for (_, idx) in &na.gres { gpus[i].extend(idx); }
                }
            }
        }
        for i in 0..nodes.len() {
            prop_assert!(cpus[i] <= nodes[i].cpus);
            prop_assert!(mem[i] <= nodes[i].real_memory);
            let mut g = gpus[i].clone();
            g.sort();
            let before = g.len();
            g.dedup();
            prop_assert_eq!(before, g.len());
            prop_assert!(excl[i] == 0 || n_jobs[i] == 1);
        }
    }

    /// Issue 37: under `--gres-flags=enforce-binding` every job placed
    /// takes no more CPUs on a node than its GPUs' `Cores=` hold, free.
    #[test]
    fn enforce_binding_never_takes_more_cpus_than_near_its_gpus(
        in_use in prop::collection::vec(0u32..8, 0..6),
        job_specs in prop::collection::vec((1u32..6, 1u64..4), 1..6),
    ) {
        let mut n = node("n1", 8, 64000, 4);
        n.gres[0].cores = vec![vec![0, 1, 2, 3], vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![4, 5, 6, 7]];
        let mut ids = in_use.clone();
        ids.sort_unstable();
        ids.dedup();
        n.alloc_cpus = ids.len() as u32;
        n.n_jobs = u32::from(!ids.is_empty());
        n.cpu_ids_in_use = ids.clone();
        for (i, (tasks, gpus)) in job_specs.iter().enumerate() {
            let mut j = job(i as u32 + 1, 1, *tasks);
            j.gres_per_node = vec![Gres { name: "gpu".into(), type_: None, count: *gpus }];
            j.enforce_binding = true;
            if let Ok(a) = place(&j, &[part(1)], std::slice::from_ref(&n)) {
                let na = &a.nodes[0];
                let mut near: Vec<u32> = na.gres.iter()
                    .flat_map(|(p, idx)| idx.iter().map(move |g| (*p, *g)))
                    .flat_map(|(p, g)| n.gres[p].cores[g as usize].clone())
                    .collect();
                near.sort_unstable();
                near.dedup();
                let free = near.iter().filter(|c| !ids.contains(c)).count() as u32;
                prop_assert!(na.cpus <= free, "{} CPUs, {} free near {:?}", na.cpus, free, na.gres);
            }
        }
    }

    /// A cache kept between passes (`plan_with`) gives every pass the plan
    /// a fresh pass gives, while nodes go down and come back, partitions
    /// change, and jobs run, end and arrive.
    #[test]
    fn a_kept_pass_cache_plans_as_a_fresh_pass(
        passes in prop::collection::vec(
            (
                prop::collection::vec((1u32..3, 1u32..6, 1u32..120), 0..8),
                prop::collection::vec((0u32..4, 1u32..300), 0..4),
                0u32..5,
                any::<bool>(),
                0i64..600,
            ),
            1..8,
        ),
    ) {
        let mut cache = PassCache::default();
        for (k, (job_specs, run_specs, down, narrow, now)) in passes.into_iter().enumerate() {
            let mut nodes: Vec<NodeView> = (0..4).map(|i| node(&format!("n{i}"), 4, 4000, 0)).collect();
            if (down as usize) < nodes.len() {
                nodes[down as usize].available = false;
            }
            let mut running_jobs = Vec::new();
            for (r, (on, mins)) in run_specs.iter().enumerate() {
                let i = *on as usize;
                if nodes[i].alloc_cpus < nodes[i].cpus {
                    nodes[i].alloc_cpus += 1;
                    nodes[i].n_jobs += 1;
                    running_jobs.push(RunningJob {
                        job_id: JobId(10_000 + r as u32),
                        end: now + i64::from(*mins) * 60,
                        alloc: Cow::Owned(Allocation {
                            partition: 0,
                            nodes: vec![NodeAlloc { node: NodeIdx(*on), cpus: 1, mem: 0, tasks: 1, gres: vec![], cpu_ids: vec![] }],
                            exclusive: false,
                        }),
                        version: None,
                    });
                }
            }
            let parts = [part(if narrow { 3 } else { 4 })];
            let jobs: Vec<JobRequest> = job_specs.iter().enumerate().map(|(i, (n, t, mins))| {
                let mut j = job((k * 100 + i) as u32 + 1, *n, (*t).max(*n));
                j.time_limit = TimeLimit::Minutes(*mins);
                j
            }).collect();
            let view = ClusterView { nodes: &nodes, parts: &parts, jobs: &jobs, running: &running_jobs };
            let cfg = SchedConfig::default();
            prop_assert_eq!(crate::plan_with(&view, &cfg, now, &mut cache), crate::plan(&view, &cfg, now));
        }
    }

    /// plan() does not depend on the order the jobs come in.
    #[test]
    fn plan_is_deterministic_under_permutation(
        job_specs in prop::collection::vec((1u32..3, 1u32..4), 1..10),
        seed in any::<u64>(),
    ) {
        let nodes: Vec<NodeView> = (0..3).map(|i| node(&format!("n{i}"), 4, 4000, 0)).collect();
        let jobs: Vec<JobRequest> = job_specs.iter().enumerate()
            .map(|(i, (n, t))| job(i as u32 + 1, *n, (*t).max(*n))).collect();
        let mut shuffled = jobs.clone();
        let len = shuffled.len();
        let mut s = seed;
        for i in (1..len).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        prop_assert_eq!(plan(&nodes, &[part(3)], &jobs, 0), plan(&nodes, &[part(3)], &shuffled, 0));
    }
}

// ---- backfill ----

fn one_cpu_nodes(n: u32) -> Vec<NodeView> {
    (0..n)
        .map(|i| node(&format!("n{}", i + 1), 1, 4000, 0))
        .collect()
}

/// A job of `nodes` one-task nodes with a limit of `minutes`.
fn timed(id: u32, nodes: u32, minutes: u32) -> JobRequest {
    let mut j = job(id, nodes, nodes);
    j.time_limit = TimeLimit::Minutes(minutes);
    j
}

/// A job running on `on` (one CPU each) until `end`, with its use applied.
fn running(id: u32, nodes: &mut [NodeView], on: &[u32], end: i64) -> RunningJob<'static> {
    let alloc = Allocation {
        partition: 0,
        nodes: on
            .iter()
            .map(|&i| {
                nodes[i as usize].alloc_cpus += 1;
                nodes[i as usize].n_jobs += 1;
                NodeAlloc {
                    node: NodeIdx(i),
                    cpus: 1,
                    mem: 0,
                    tasks: 1,
                    gres: vec![],
                    cpu_ids: Vec::new(),
                }
            })
            .collect(),
        exclusive: false,
    };
    RunningJob {
        job_id: JobId(id),
        end,
        alloc: Cow::Owned(alloc),
        version: None,
    }
}

fn run(
    nodes: &[NodeView],
    jobs: &[JobRequest],
    running: &[RunningJob],
    policy: Policy,
    now: i64,
) -> Plan {
    let parts = [part(nodes.len() as u32)];
    let view = ClusterView {
        nodes,
        parts: &parts,
        jobs,
        running,
    };
    // Every blocked job planned (conservative backfilling): the strongest
    // form of the properties below.
    let cfg = SchedConfig {
        policy,
        bf_resolution: 1,
        bf_window: 1440,
        bf_job_part_count_reserve: None,
        ..SchedConfig::default()
    };
    crate::plan(&view, &cfg, now)
}

/// The plan as text: `start 2 on 1` / `plan 1 at 1800 on 0,1,2,3` / `wait 3`.
fn show(plan: &Plan) -> String {
    plan.decisions
        .iter()
        .map(|(id, d)| {
            let list = |v: Vec<u32>| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
            match d {
                Decision::Start(a) => {
                    let limit = plan
                        .time_limits
                        .get(id)
                        .map(|m| format!(" for {m}m"))
                        .unwrap_or_default();
                    format!(
                        "start {} on {}{limit}",
                        id.0,
                        list(a.nodes.iter().map(|n| n.node.0).collect())
                    )
                }
                Decision::Wait(_) => match plan.planned.get(id) {
                    Some(p) => format!(
                        "plan {} at {} on {}",
                        id.0,
                        p.start,
                        list(p.nodes().iter().map(|n| n.0).collect())
                    ),
                    None => format!("wait {}", id.0),
                },
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn backfill_fills_gap_before_reserved_start() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let jobs = [timed(1, 4, 60), timed(2, 1, 20), timed(3, 1, 60)];
    let plan = run(&nodes, &jobs, &[r], Policy::Backfill, 0);
    assert_eq!(
        show(&plan),
        "plan 1 at 1800 on 0,1,2,3; start 2 on 1; plan 3 at 5400 on 0"
    );
}

#[test]
fn easy_plans_only_the_queue_head() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    // Job 3 is blocked by job 1's plan; job 4 (lower priority) could start
    // in the gap job 3 would have used: EASY lets it, backfill plans job 3
    // first and job 4 may still start because it ends before both plans.
    let jobs = [timed(1, 4, 60), timed(2, 3, 120), timed(3, 1, 20)];
    let easy = run(&nodes, &jobs, std::slice::from_ref(&r), Policy::Easy, 0);
    assert_eq!(easy.planned.len(), 1);
    assert_eq!(
        show(&easy),
        "plan 1 at 1800 on 0,1,2,3; wait 2; start 3 on 1"
    );
    let full = run(&nodes, &jobs, &[r], Policy::Backfill, 0);
    assert_eq!(
        show(&full),
        "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1"
    );
}

#[test]
fn fcfs_stops_at_the_first_blocked_job() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let jobs = [timed(1, 4, 60), timed(2, 1, 20)];
    let plan = run(&nodes, &jobs, &[r], Policy::Fcfs, 0);
    assert_eq!(show(&plan), "wait 1; wait 2");
    assert_eq!(reason(&plan, 1), Some(PendingReason::Resources));
    assert_eq!(reason(&plan, 2), Some(PendingReason::Priority));
}

#[test]
fn long_job_does_not_start_where_it_would_delay_a_plan() {
    let mut nodes = one_cpu_nodes(2);
    let r = running(9, &mut nodes, &[0], 600);
    let jobs = [timed(1, 2, 60), timed(2, 1, 30)];
    let plan = run(&nodes, &jobs, &[r], Policy::Backfill, 0);
    assert_eq!(show(&plan), "plan 1 at 600 on 0,1; plan 2 at 4200 on 0");
}

#[test]
fn time_min_starts_a_job_with_a_shorter_limit_in_a_gap() {
    let mut nodes = one_cpu_nodes(2);
    let r = running(9, &mut nodes, &[0], 1800);
    let mut second = timed(2, 1, 60);
    second.time_min = Some(TimeLimit::Minutes(10));
    let jobs = [timed(1, 2, 60), second];
    let plan = run(&nodes, &jobs, &[r], Policy::Backfill, 0);
    assert_eq!(show(&plan), "plan 1 at 1800 on 0,1; start 2 on 1 for 30m");
}

#[test]
fn a_multi_node_job_is_planned_as_a_whole() {
    let mut nodes = one_cpu_nodes(3);
    let a = running(8, &mut nodes, &[0], 600);
    let b = running(9, &mut nodes, &[1], 1200);
    let jobs = [timed(1, 3, 60)];
    let plan = run(&nodes, &jobs, &[a, b], Policy::Backfill, 0);
    assert_eq!(show(&plan), "plan 1 at 1200 on 0,1,2");
}

#[test]
fn planned_times_are_rounded_up_to_bf_resolution() {
    let mut nodes = one_cpu_nodes(1);
    let r = running(9, &mut nodes, &[0], 601);
    let parts = [part(1)];
    let jobs = [timed(1, 1, 10)];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: &[r],
    };
    let cfg = SchedConfig {
        bf_resolution: 60,
        ..SchedConfig::default()
    };
    let plan = crate::plan(&view, &cfg, 0);
    assert_eq!(plan.planned[&JobId(1)].start, 660);
}

/// Backfill with EASY's one plan per partition: no plan of their own for
/// wide jobs (`bf_slowdown_reserve`), jobs tried in priority order.
fn one_plan() -> SchedConfig {
    SchedConfig {
        bf_slowdown_reserve: None,
        bf_order: BackfillOrder::Priority,
        ..SchedConfig::default()
    }
}

#[test]
fn bf_job_part_count_reserve_limits_the_plans_per_partition() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let parts = [part(4)];
    let jobs = [timed(1, 4, 60), timed(2, 3, 120), timed(3, 1, 20)];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: std::slice::from_ref(&r),
    };
    // One reservation per partition (EASY), job 2 waits without a
    // planned start, job 3 fills the gap.
    let one = crate::plan(&view, &one_plan(), 0);
    assert_eq!(
        show(&one),
        "plan 1 at 1800 on 0,1,2,3; wait 2; start 3 on 1"
    );
    assert_eq!(reason(&one, 2), Some(PendingReason::Priority));
    let two = SchedConfig {
        bf_job_part_count_reserve: Some(2),
        ..one_plan()
    };
    assert_eq!(
        show(&crate::plan(&view, &two, 0)),
        "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1"
    );
}

#[test]
fn bf_age_reserve_plans_the_jobs_that_waited_long() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let parts = [part(4)];
    let mut jobs = [timed(1, 4, 60), timed(2, 3, 120), timed(3, 1, 20)];
    // Job 2 has waited an hour; the others were just submitted.
    jobs[1].submit_time = -3600;
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: std::slice::from_ref(&r),
    };
    let aged = |age| SchedConfig {
        bf_age_reserve: Some(age),
        ..one_plan()
    };
    // Not long enough: EASY.
    assert_eq!(
        show(&crate::plan(&view, &aged(3601), 0)),
        "plan 1 at 1800 on 0,1,2,3; wait 2; start 3 on 1"
    );
    // Long enough: job 2 holds a plan too, and job 3 may not delay it.
    let plan = crate::plan(&view, &aged(3600), 0);
    assert_eq!(
        show(&plan),
        "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1"
    );
    assert_eq!(reason(&plan, 2), Some(PendingReason::Priority));
    // The reference policies ignore it.
    let easy = SchedConfig {
        policy: Policy::Easy,
        ..aged(0)
    };
    assert!(!crate::plan(&view, &easy, 0).planned.contains_key(&JobId(2)));
}

#[test]
fn bf_slowdown_reserve_plans_the_jobs_whose_expansion_factor_is_reached() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let parts = [part(4)];
    let mut jobs = [timed(1, 4, 60), timed(2, 3, 120), timed(3, 1, 20)];
    let view = |jobs: &[JobRequest]| -> Plan {
        let view = ClusterView {
            nodes: &nodes,
            parts: &parts,
            jobs,
            running: std::slice::from_ref(&r),
        };
        let cfg = SchedConfig {
            bf_slowdown_reserve: Some(10),
            ..one_plan()
        };
        crate::plan(&view, &cfg, 0)
    };
    // Job 2 (a 2-hour limit) reaches (wait + 7200) / 7200 = 10 after
    // waiting 64,800 s: one second short, EASY.
    jobs[1].submit_time = -64_799;
    assert_eq!(
        show(&view(&jobs)),
        "plan 1 at 1800 on 0,1,2,3; wait 2; start 3 on 1"
    );
    // Reached: job 2 holds a plan too, and job 3 may not delay it.
    jobs[1].submit_time = -64_800;
    assert_eq!(
        show(&view(&jobs)),
        "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1"
    );
}

#[test]
fn bf_slowdown_reserve_skips_jobs_narrower_than_its_width() {
    let mut nodes = one_cpu_nodes(4);
    let r = running(9, &mut nodes, &[0], 1800);
    let parts = [part(4)];
    let mut jobs = [timed(1, 4, 60), timed(2, 3, 120), timed(3, 1, 20)];
    // Job 2's expansion factor has reached 10; it asks for 3 of the
    // partition's 4 CPUs (75 %).
    jobs[1].submit_time = -64_800;
    let plan = |width: u32| -> String {
        let view = ClusterView {
            nodes: &nodes,
            parts: &parts,
            jobs: &jobs,
            running: std::slice::from_ref(&r),
        };
        let cfg = SchedConfig {
            bf_slowdown_reserve: Some(10),
            bf_slowdown_reserve_width: width,
            ..one_plan()
        };
        show(&crate::plan(&view, &cfg, 0))
    };
    let protected = "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1";
    assert_eq!(plan(0), protected);
    assert_eq!(plan(75), protected);
    // Narrower than the width: EASY's one plan.
    assert_eq!(plan(76), "plan 1 at 1800 on 0,1,2,3; wait 2; start 3 on 1");
    // The defaults: a plan as soon as they are blocked (factor 1) for
    // jobs of at least a quarter, the others tried shortest first.
    let d = SchedConfig::default();
    assert_eq!(
        (
            d.bf_slowdown_reserve,
            d.bf_slowdown_reserve_width,
            d.bf_order
        ),
        (Some(1), 25, BackfillOrder::Shortest)
    );
    assert_eq!(
        show(&crate::plan(
            &ClusterView {
                nodes: &nodes,
                parts: &parts,
                jobs: &jobs,
                running: std::slice::from_ref(&r),
            },
            &d,
            0
        )),
        "plan 1 at 1800 on 0,1,2,3; plan 2 at 5400 on 0,1,2; start 3 on 1"
    );
}

#[test]
fn no_plan_beyond_bf_window() {
    let mut nodes = one_cpu_nodes(1);
    let r = running(9, &mut nodes, &[0], 7200);
    let parts = [part(1)];
    let jobs = [timed(1, 1, 10)];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: &[r],
    };
    let cfg = SchedConfig {
        bf_window: 60,
        ..SchedConfig::default()
    };
    let plan = crate::plan(&view, &cfg, 0);
    assert!(plan.planned.is_empty());
    assert_eq!(reason(&plan, 1), Some(PendingReason::Resources));
}

#[test]
fn bf_max_job_test_limits_the_jobs_tried() {
    let nodes = one_cpu_nodes(4);
    let parts = [part(4)];
    let jobs = [timed(1, 1, 10), timed(2, 1, 10), timed(3, 1, 10)];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: &[],
    };
    let cfg = SchedConfig {
        bf_max_job_test: Some(2),
        ..SchedConfig::default()
    };
    assert_eq!(
        show(&crate::plan(&view, &cfg, 0)),
        "start 1 on 0; start 2 on 1; wait 3"
    );
    let per_user = SchedConfig {
        bf_max_job_user: Some(1),
        ..SchedConfig::default()
    };
    assert_eq!(
        show(&crate::plan(&view, &per_user, 0)),
        "start 1 on 0; wait 2; wait 3"
    );
}

// ---- backfill properties ----

/// A random cluster: nodes (some down), jobs already running (placed by a
/// first pass, with random expected ends) and a pending queue.
#[derive(Clone, Debug)]
struct Scenario {
    nodes: Vec<NodeView>,
    running: Vec<RunningJob<'static>>,
    jobs: Vec<JobRequest>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    scenario_with(1)
}

/// `scenario` on nodes of `threads` threads per core that give whole
/// cores (`NodeView::threads`; CPUs `threads` times as many), some jobs
/// asking for one task per core (`--threads-per-core=1`).
fn scenario_with(threads: u32) -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec((1u32..5, 0u32..3, prop::bool::weighted(0.85)), 1..7),
        prop::collection::vec((1u32..3, 1u32..5, 1i64..200), 0..8),
        prop::collection::vec((1u32..4, 1u32..6, 1u32..120, 0u32..3, 0u64..2), 0..14),
    )
        .prop_map(move |(node_specs, run_specs, job_specs)| {
            let mut nodes: Vec<NodeView> = node_specs
                .iter()
                .enumerate()
                .map(|(i, (c, g, _))| {
                    let mut n = node(&format!("n{i}"), *c * threads, 16_000, *g);
                    n.threads = threads;
                    n
                })
                .collect();
            let parts = [part(nodes.len() as u32)];
            // Running jobs: what a first pass on the empty cluster starts.
            let first: Vec<JobRequest> = run_specs
                .iter()
                .enumerate()
                .map(|(i, (n, t, _))| {
                    let mut j = job(900 + i as u32, *n, (*t).max(*n));
                    j.whole_cores = threads > 1;
                    j
                })
                .collect();
            let p = plan(&nodes, &parts, &first, 0);
            let mut running = Vec::new();
            for (id, d) in p.decisions {
                if let Decision::Start(a) = d {
                    let k = (id.0 - 900) as usize;
                    for na in &a.nodes {
                        let n = &mut nodes[na.node.0 as usize];
                        n.alloc_cpus += na.cpus;
                        n.alloc_mem += na.mem;
                        n.n_jobs += 1;
                        for (pool, idxs) in &na.gres {
                            for i in idxs {
                                n.gres[*pool].used[*i as usize] = true;
                            }
                        }
                    }
                    running.push(RunningJob {
                        job_id: id,
                        end: run_specs[k].2 * 60,
                        alloc: Cow::Owned(a),
                        version: None,
                    });
                }
            }
            // Some nodes go down or drain after their jobs started.
            for (n, (_, _, up)) in nodes.iter_mut().zip(&node_specs) {
                n.available = *up;
            }
            let jobs = job_specs
                .iter()
                .enumerate()
                .map(|(i, (n, t, minutes, prio, g))| {
                    let mut j = timed(i as u32 + 1, *n, 1);
                    j.ntasks = (*t).max(*n);
                    j.time_limit = TimeLimit::Minutes(*minutes);
                    j.priority = 100 + prio;
                    j.user = 1000 + (i as u32 % 3);
                    j.whole_cores = threads > 1;
                    if threads > 1 && *prio == 2 {
                        j.threads_per_core = Some(1);
                    }
                    if *g > 0 {
                        j.gres_per_node = vec![Gres {
                            name: "gpu".into(),
                            type_: None,
                            count: *g,
                        }];
                    }
                    j
                })
                .collect();
            Scenario {
                nodes,
                running,
                jobs,
            }
        })
}

fn plan_of(s: &Scenario, policy: Policy) -> Plan {
    run(&s.nodes, &s.jobs, &s.running, policy, 0)
}

/// EASY's one reservation plus one for every job that waited `age`
/// (`bf_age_reserve`), the jobs' submit times spread over the past.
fn aged_plan_of(s: &Scenario, age: u32) -> Plan {
    let parts = [part(s.nodes.len() as u32)];
    let jobs: Vec<JobRequest> = s
        .jobs
        .iter()
        .map(|j| JobRequest {
            submit_time: -(i64::from(j.job_id.0) * 37 % 200),
            ..j.clone()
        })
        .collect();
    let view = ClusterView {
        nodes: &s.nodes,
        parts: &parts,
        jobs: &jobs,
        running: &s.running,
    };
    let cfg = SchedConfig {
        bf_resolution: 1,
        bf_window: 1440,
        bf_age_reserve: Some(age),
        ..SchedConfig::default()
    };
    crate::plan(&view, &cfg, 0)
}

/// Every hold the plan implies: (node, from, until, share), running jobs
/// included.
fn holds(s: &Scenario, p: &Plan) -> Vec<(usize, i64, i64, NodeAlloc)> {
    let limit = |id: JobId| {
        let j = s.jobs.iter().find(|j| j.job_id == id).expect("job");
        p.time_limits
            .get(&id)
            .map_or(limit_secs(j.time_limit), |m| i64::from(*m) * 60)
    };
    let mut out = Vec::new();
    for r in &s.running {
        for na in &r.alloc.nodes {
            out.push((na.node.0 as usize, 0, r.end, na.clone()));
        }
    }
    for (id, d) in &p.decisions {
        if let Decision::Start(a) = d {
            for na in &a.nodes {
                out.push((na.node.0 as usize, 0, limit(*id), na.clone()));
            }
        }
    }
    out
}

proptest! {
    /// Neither now nor at any later moment of the plan does a node give
    /// more CPUs or memory than it has, or one GPU to two jobs.
    #[test]
    fn backfill_gives_no_tres_twice(s in scenario()) {
        let p = plan_of(&s, Policy::Backfill);
        let mut all = holds(&s, &p);
        // Planned jobs hold their planned shares over their planned interval.
        for (id, pl) in &p.planned {
            let j = s.jobs.iter().find(|j| j.job_id == *id).expect("job");
            for na in &pl.alloc.nodes {
                all.push((na.node.0 as usize, pl.start, pl.start + limit_secs(j.time_limit), na.clone()));
            }
        }
        let mut times: Vec<i64> = all.iter().map(|h| h.1).collect();
        times.sort();
        times.dedup();
        for t in times {
            for (i, n) in s.nodes.iter().enumerate() {
                let here: Vec<&(usize, i64, i64, NodeAlloc)> =
                    all.iter().filter(|h| h.0 == i && h.1 <= t && t < h.2).collect();
                let cpus: u32 = here.iter().map(|h| h.3.cpus).sum();
                let mem: u64 = here.iter().map(|h| h.3.mem).sum();
                prop_assert!(cpus <= n.cpus, "node {i} at {t}: {cpus} cpus of {}", n.cpus);
                prop_assert!(mem <= n.real_memory);
                let mut gpus: Vec<u32> = here.iter().flat_map(|h| h.3.gres.iter().flat_map(|g| g.1.clone())).collect();
                let before = gpus.len();
                gpus.sort();
                gpus.dedup();
                prop_assert_eq!(before, gpus.len());
            }
        }
    }

    /// No job starts, or is planned, on a node that is down or drained.
    #[test]
    fn backfill_never_uses_unavailable_nodes(s in scenario()) {
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Backfill] {
            let p = plan_of(&s, policy);
            for (_, d) in &p.decisions {
                if let Decision::Start(a) = d {
                    for na in &a.nodes {
                        prop_assert!(s.nodes[na.node.0 as usize].available);
                    }
                }
            }
            for pl in p.planned.values() {
                for n in &pl.nodes() {
                    prop_assert!(s.nodes[n.0 as usize].available);
                }
            }
        }
    }

    /// Lower-priority jobs never delay a higher-priority job: each job's
    /// start or planned start is the same as when only it and the jobs
    /// before it in priority order are queued.
    #[test]
    fn backfill_never_delays_a_higher_priority_plan(s in scenario()) {
        let full = plan_of(&s, Policy::Backfill);
        let order: Vec<JobId> = full.decisions.iter().map(|(id, _)| *id).collect();
        for (k, id) in order.iter().enumerate() {
            let prefix: Vec<JobRequest> = s
                .jobs
                .iter()
                .filter(|j| order[..=k].contains(&j.job_id))
                .cloned()
                .collect();
            let alone = plan_of(&Scenario { jobs: prefix, ..s.clone() }, Policy::Backfill);
            let started = |p: &Plan| p.decisions.iter().any(|(j, d)| j == id && matches!(d, Decision::Start(_)));
            prop_assert_eq!(started(&full), started(&alone));
            prop_assert_eq!(full.planned.get(id), alone.planned.get(id));
        }
    }

    /// With plans for the jobs that waited long (`bf_age_reserve`), no
    /// resource is given twice, now or later, and no job delays the plan
    /// or start of a job before it in priority order.
    #[test]
    fn aged_reservations_give_nothing_twice_and_delay_no_plan(s in scenario(), age in 0u32..220) {
        let full = aged_plan_of(&s, age);
        let mut all = holds(&s, &full);
        for (id, pl) in &full.planned {
            let j = s.jobs.iter().find(|j| j.job_id == *id).expect("job");
            for na in &pl.alloc.nodes {
                all.push((na.node.0 as usize, pl.start, pl.start + limit_secs(j.time_limit), na.clone()));
            }
        }
        for (i, n) in s.nodes.iter().enumerate() {
            for t in all.iter().map(|h| h.1) {
                let cpus: u32 = all.iter().filter(|h| h.0 == i && h.1 <= t && t < h.2).map(|h| h.3.cpus).sum();
                prop_assert!(cpus <= n.cpus, "node {i} at {t}: {cpus} cpus of {}", n.cpus);
            }
        }
        let order: Vec<JobId> = full.decisions.iter().map(|(id, _)| *id).collect();
        for (k, id) in order.iter().enumerate() {
            let prefix = Scenario {
                jobs: s.jobs.iter().filter(|j| order[..=k].contains(&j.job_id)).cloned().collect(),
                ..s.clone()
            };
            let alone = aged_plan_of(&prefix, age);
            let started = |p: &Plan| p.decisions.iter().any(|(j, d)| j == id && matches!(d, Decision::Start(_)));
            prop_assert_eq!(started(&full), started(&alone));
            prop_assert_eq!(full.planned.get(id), alone.planned.get(id));
        }
    }

    /// The plan depends neither on the order of the pending jobs nor on the
    /// order of the running ones.
    #[test]
    fn backfill_is_deterministic_in_any_input_order(s in scenario(), seed in any::<u64>()) {
        let mut shuffled = s.clone();
        let mut x = seed;
        let mut next = |len: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as usize % len
        };
        for i in (1..shuffled.jobs.len()).rev() {
            let k = next(i + 1);
            shuffled.jobs.swap(i, k);
        }
        for i in (1..shuffled.running.len()).rev() {
            let k = next(i + 1);
            shuffled.running.swap(i, k);
        }
        for policy in [Policy::Fcfs, Policy::Easy, Policy::Backfill] {
            prop_assert_eq!(plan_of(&s, policy), plan_of(&shuffled, policy));
        }
    }
}

/// `s` with the jobs `spread` marks (and that ask for no GRES) free to put
/// their tasks on any number of nodes (`spread_key`).
fn spread_some(mut s: Scenario, spread: &[bool]) -> Scenario {
    for (j, sp) in s.jobs.iter_mut().zip(spread) {
        if *sp && j.gres_per_node.is_empty() {
            j.min_nodes = 1;
            j.max_nodes = j.ntasks;
        }
    }
    s
}

/// EASY, backfill with one plan (in both backfill orders) and with a plan
/// for every job, FCFS: to the second, over a day.
fn every_policy() -> Vec<SchedConfig> {
    use BackfillOrder::{Priority, Shortest};
    [
        (Policy::Easy, Some(1), Priority),
        (Policy::Backfill, Some(1), Shortest),
        (Policy::Backfill, Some(1), Priority),
        (Policy::Backfill, None, Shortest),
        (Policy::Fcfs, Some(1), Priority),
    ]
    .into_iter()
    .map(|(policy, reserve, bf_order)| SchedConfig {
        policy,
        bf_resolution: 1,
        bf_window: 1440,
        bf_job_part_count_reserve: reserve,
        bf_order,
        ..SchedConfig::default()
    })
    .collect()
}

proptest! {
    /// What a pass learns from a job that cannot start now about jobs with
    /// more tasks and longer limits (`spread_key`) changes no decision and
    /// no plan, under every policy: the pass decides as one that tries
    /// every job.
    #[test]
    fn the_spread_memo_plans_as_trying_every_job(s in scenario(), spread in prop::collection::vec(any::<bool>(), 14)) {
        let s = spread_some(s, &spread);
        let parts = [part(s.nodes.len() as u32)];
        let view = ClusterView { nodes: &s.nodes, parts: &parts, jobs: &s.jobs, running: &s.running };
        for cfg in every_policy() {
            let with = crate::backfill::plan(&view, &cfg, 0);
            crate::backfill::NO_SPREAD_MEMO.with(|c| c.set(true));
            let without = crate::backfill::plan(&view, &cfg, 0);
            crate::backfill::NO_SPREAD_MEMO.with(|c| c.set(false));
            prop_assert_eq!(with, without);
        }
    }
}

proptest! {
    /// A pass over some jobs continued with `plan_more` over the rest
    /// (which come after them in priority order) decides what one pass
    /// over all of them decides, and `PassCache::cannot_start` after the
    /// first part holds only for jobs of the rest that wait. With
    /// `BackfillOrder::Shortest` the caller tries the jobs the pass defers
    /// (`PassCache::hold_deferred`, `defers`) after the others, by time
    /// limit, as the engine's `walk` does.
    #[test]
    fn a_pass_continued_decides_as_one_pass(s in scenario(), split in 0usize..14, spread in prop::collection::vec(any::<bool>(), 14)) {
        let s = spread_some(s, &spread);
        let parts = [part(s.nodes.len() as u32)];
        let mut ordered = s.jobs.clone();
        let order = priority_order(&ordered, &parts);
        ordered = order.iter().map(|i| s.jobs[*i].clone()).collect();
        let (head, rest) = ordered.split_at(split.min(ordered.len()));
        for cfg in every_policy() {
            let all = ClusterView { nodes: &s.nodes, parts: &parts, jobs: &ordered, running: &s.running };
            let whole = crate::backfill::plan(&all, &cfg, 0);
            let mut cache = PassCache::default();
            cache.hold_deferred = true;
            let first = ClusterView { jobs: head, ..all };
            let mut split_plan = plan_with(&first, &cfg, 0, &mut cache);
            cache.hold_deferred = false;
            let cannot: Vec<JobId> = rest.iter().filter(|j| cache.cannot_start(j)).map(|j| j.job_id).collect();
            // The deferred jobs, by (time limit, place in priority order).
            let mut later: Vec<usize> = cache.take_deferred();
            let go_on = |job: &JobRequest, cache: &mut PassCache, plan: &mut Plan| {
                let one = ClusterView { jobs: std::slice::from_ref(job), running: &[], ..all };
                let more = plan_more(&one, &cfg, cache).expect("a pass was made");
                plan.decisions.extend(more.decisions);
                plan.planned.extend(more.planned);
                plan.time_limits.extend(more.time_limits);
            };
            for (k, job) in rest.iter().enumerate() {
                if cache.defers(job, &cfg) {
                    later.push(head.len() + k);
                } else {
                    go_on(job, &mut cache, &mut split_plan);
                }
            }
            later.sort_by_key(|&i| (limit_secs(ordered[i].time_limit), i));
            for i in later {
                go_on(&ordered[i], &mut cache, &mut split_plan);
            }
            prop_assert_eq!(&split_plan, &whole);
            for id in cannot {
                let started = whole.decisions.iter().any(|(j, d)| *j == id && matches!(d, Decision::Start(_)));
                prop_assert!(!started, "{:?} started", id);
            }
        }
    }
}

proptest! {
    /// `PassCache::settled_parts` is `PassCache::settled` as a bit set:
    /// after a pass over jobs of three partitions, a set of partitions is
    /// settled exactly where all its bits are.
    #[test]
    fn settled_parts_agrees_with_settled(
        s in scenario(),
        of in prop::collection::vec(1usize..8, 14),
        reserve in prop::sample::select(vec![Some(0u32), Some(1), Some(2), None]),
    ) {
        let parts = [part(s.nodes.len() as u32), part(s.nodes.len() as u32), part(s.nodes.len() as u32)];
        let mut jobs = s.jobs.clone();
        for (j, set) in jobs.iter_mut().zip(&of) {
            j.partitions = (0..3).filter(|p| set & (1 << p) != 0).collect();
        }
        for mut cfg in every_policy() {
            cfg.bf_job_part_count_reserve = reserve.or(cfg.bf_job_part_count_reserve);
            let view = ClusterView { nodes: &s.nodes, parts: &parts, jobs: &jobs, running: &s.running };
            let mut cache = PassCache::default();
            plan_with(&view, &cfg, 0, &mut cache);
            let bits = cache.settled_parts(&cfg);
            for set in 0u64..8 {
                let ps: Vec<usize> = (0..3).filter(|p| set & (1 << p) != 0).collect();
                let by_bits = set != 0 && set & !bits == 0;
                prop_assert_eq!(cache.settled(&ps, &cfg), by_bits, "{:?}", ps);
            }
        }
    }
}

/// A job held to one node goes where all of it fits, not on the first node
/// with room for part of it; held to two nodes, it takes the two that hold
/// it whole, past a first node with room for one task.
#[test]
fn a_job_held_to_few_nodes_goes_where_it_fits_whole() {
    let nodes = vec![
        node("n1", 2, 4000, 0),
        node("n2", 2, 4000, 0),
        node("n3", 2, 4000, 0),
    ];
    // Job 1 takes one CPU of n1; job 2 (two tasks, one node) fits on n2.
    let one = plan(&nodes, &[part(3)], &[job(1, 1, 1), job(2, 1, 2)], 0);
    assert_eq!(starts(&one), vec![(1, vec![(0, 1)]), (2, vec![(1, 2)])]);
    // Four tasks on at most two nodes: n2 and n3, not n1's one CPU.
    let two = plan(&nodes, &[part(3)], &[job(1, 1, 1), job(2, 2, 4)], 0);
    assert_eq!(
        starts(&two),
        vec![(1, vec![(0, 1)]), (2, vec![(1, 2), (2, 2)])]
    );
    // With room for it nowhere, it waits for Resources, as before.
    let none = plan(&nodes, &[part(3)], &[job(1, 3, 5), job(2, 1, 2)], 0);
    assert_eq!(reason(&none, 2), Some(PendingReason::Resources));
}

/// The machine and queue of the pool tests: two nodes of two CPUs, one
/// CPU of each busy until 600 and 1200; jobs 10 (three tasks, 30
/// minutes), 11 (one, an hour) and 12 (one, ten minutes), whose tasks may
/// go on any CPUs.
fn pool_case() -> (Vec<NodeView>, [RunningJob<'static>; 2], Vec<JobRequest>) {
    let mut nodes = vec![node("n1", 2, 4000, 0), node("n2", 2, 4000, 0)];
    let r1 = running(1, &mut nodes, &[0], 600);
    let r2 = running(2, &mut nodes, &[1], 1200);
    let mut jobs = vec![timed(10, 1, 30), timed(11, 1, 60), timed(12, 1, 10)];
    jobs[0].ntasks = 3;
    jobs[0].max_nodes = 3;
    for j in &mut jobs {
        j.mem_per_cpu = None;
        j.memory_consumable = false;
    }
    (nodes, [r1, r2], jobs)
}

/// `bf_plan=pool`: plans hold CPUs counted over the partition, not named
/// nodes, and a job starts now only where the count stays enough for them.
#[test]
fn pool_plans_count_cpus_and_name_no_nodes() {
    let (nodes, running, jobs) = pool_case();
    let parts = [part(2)];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: &running,
    };
    let cfg = SchedConfig {
        bf_job_part_count_reserve: None,
        bf_plan: PlanOn::Pool,
        ..SchedConfig::default()
    };
    let plan = crate::plan(&view, &cfg, 0);
    // Three CPUs are free from 600 on: job 10 is planned there, on no node.
    let p10 = &plan.planned[&JobId(10)];
    assert_eq!((p10.start, p10.alloc.nodes.len()), (600, 0));
    // Job 11 (an hour) would leave two CPUs at 600: it waits for 1200,
    // when job 10's three leave it one.
    assert_eq!(plan.planned[&JobId(11)].start, 1200);
    // Job 12 (ten minutes) ends by 600: it starts now, on a node.
    assert_eq!(starts(&plan).len(), 1);
    assert_eq!(starts(&plan)[0].0, 12);
}

/// `bf_plan=auto` (the default): over the pool only where that is exact,
/// every job spreading and the caller vouching for the rest
/// (`PassCache::pool_exact`); on nodes otherwise.
#[test]
fn auto_plans_over_the_pool_only_where_every_job_spreads() {
    let (nodes, running, jobs) = pool_case();
    assert!(jobs.iter().all(crate::spreads));
    let parts = [part(2)];
    let cfg = SchedConfig {
        bf_job_part_count_reserve: None,
        ..SchedConfig::default()
    };
    assert_eq!(cfg.bf_plan, PlanOn::Auto);
    let plan_of = |jobs: &[JobRequest], vouched: bool| {
        let view = ClusterView {
            nodes: &nodes,
            parts: &parts,
            jobs,
            running: &running,
        };
        let mut cache = PassCache::default();
        cache.pool_exact = vouched;
        crate::plan_with(&view, &cfg, 0, &mut cache)
    };
    // Every job spreads and the rest of the queue too: job 10's plan
    // counts CPUs and names no node, as under `bf_plan=pool`.
    let pooled = plan_of(&jobs, true);
    assert_eq!(pooled.planned[&JobId(10)].alloc.nodes.len(), 0);
    assert_eq!(pooled.planned[&JobId(11)].start, 1200);
    // The caller does not vouch for the rest of the queue: on nodes.
    let on_nodes = plan_of(&jobs, false);
    assert_ne!(on_nodes.planned[&JobId(10)].alloc.nodes.len(), 0);
    // One job of the pass does not spread (two CPUs per task): on nodes.
    let mut wide = jobs.clone();
    wide[2].cpus_per_task = 2;
    assert!(!crate::spreads(&wide[2]));
    let mixed = plan_of(&wide, true);
    assert_ne!(mixed.planned[&JobId(10)].alloc.nodes.len(), 0);
    // What spreads: memory that binds, node counts, whole nodes, GRES do not.
    let plain = jobs[1].clone();
    let not = [
        JobRequest {
            memory_consumable: true,
            ..plain.clone()
        },
        JobRequest {
            mem_per_node: Some(100),
            ..plain.clone()
        },
        JobRequest {
            min_nodes: 2,
            ..plain.clone()
        },
        JobRequest {
            exclusive: true,
            ..plain.clone()
        },
        JobRequest {
            ntasks_per_node: Some(1),
            ..plain.clone()
        },
        JobRequest {
            gres_per_node: vec![Gres {
                name: "gpu".into(),
                type_: None,
                count: 1,
            }],
            ..plain.clone()
        },
        JobRequest {
            time_min: Some(TimeLimit::Minutes(1)),
            ..plain.clone()
        },
    ];
    assert!(crate::spreads(&plain));
    for j in &not {
        assert!(!crate::spreads(j), "{j:?}");
    }
}

proptest! {
    /// Nodes of two threads per core under `CR_Core`: every share, now or
    /// planned, is whole cores (never half of one, so two jobs never
    /// share a core), holds each task's CPUs (a core per CPU asked with
    /// `--threads-per-core=1`), and no node gives more cores than it has
    /// at any moment of the plan.
    #[test]
    fn smt_nodes_give_whole_cores_and_no_core_twice(s in scenario_with(2)) {
        let p = plan_of(&s, Policy::Backfill);
        let mut all = holds(&s, &p);
        for (id, pl) in &p.planned {
            let j = s.jobs.iter().find(|j| j.job_id == *id).expect("job");
            for na in &pl.alloc.nodes {
                all.push((na.node.0 as usize, pl.start, pl.start + limit_secs(j.time_limit), na.clone()));
            }
        }
        let starts = p.decisions.iter().filter_map(|(id, d)| match d {
            Decision::Start(a) => Some((*id, a)),
            _ => None,
        });
        let planned = p.planned.iter().map(|(id, pl)| (*id, &pl.alloc));
        for (id, a) in starts.chain(planned) {
            let j = s.jobs.iter().find(|j| j.job_id == id).expect("job");
            for na in &a.nodes {
                prop_assert_eq!(na.cpus % 2, 0, "job {} takes half a core", id);
                let per_task = if j.threads_per_core == Some(1) { 2 } else { 1 };
                prop_assert!(na.cpus >= na.tasks * j.cpus_per_task * per_task);
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

/// `cpus_on_node`: whole cores on a node of two threads per core, as
/// many CPUs as asked on one of one.
#[test]
fn cpus_on_node_rounds_to_whole_cores() {
    let mut j = job(1, 1, 1);
    assert_eq!(cpus_on_node(&j, 1, 3, 0), 3);
    assert_eq!(cpus_on_node(&j, 2, 1, 0), 2);
    assert_eq!(cpus_on_node(&j, 2, 2, 0), 2);
    assert_eq!(cpus_on_node(&j, 2, 3, 0), 4);
    j.threads_per_core = Some(1);
    assert_eq!(cpus_on_node(&j, 2, 2, 0), 4);
    assert_eq!(cpus_on_node(&j, 1, 2, 0), 2);
    j.threads_per_core = None;
    j.ntasks_per_core = Some(1);
    assert_eq!(cpus_on_node(&j, 2, 2, 0), 4);
    j.ntasks_per_core = None;
    j.cpus_per_task = 3;
    assert_eq!(cpus_on_node(&j, 2, 1, 0), 4);
    j.cpus_per_task = 1;
    j.cpus_per_gpu = Some(3);
    assert_eq!(cpus_on_node(&j, 2, 1, 1), 4);
}

#[path = "tests_blocks.rs"]
mod blocks;
#[test]
fn max_cpus_per_node_caps_a_jobs_cpus_on_each_node() {
    let nodes = vec![node("n1", 4, 4000, 0), node("n2", 4, 4000, 0)];
    let mut p = part(2);
    p.max_cpus_per_node = Some(2);
    // Four tasks, one CPU each, may use up to two nodes: two on each.
    let mut j = job(1, 1, 4);
    j.max_nodes = 2;
    let plan1 = plan(&nodes, std::slice::from_ref(&p), &[j.clone()], 0);
    assert_eq!(starts(&plan1), vec![(1, vec![(0, 2), (1, 2)])]);
    // Three CPUs on one node never fit: refused as impossible.
    let one = job(2, 1, 3);
    assert!(!crate::placement::could_ever_fit(&one, 0, &p, &nodes));
    assert!(crate::placement::could_ever_fit(&one, 0, &part(2), &nodes));
    // An exclusive job gets the capped count of the node.
    let mut ex = job(3, 1, 1);
    ex.exclusive = true;
    let a = place(&ex, std::slice::from_ref(&p), &nodes).unwrap();
    assert_eq!(a.nodes[0].cpus, 2);
}

#[test]
fn lln_places_on_the_least_loaded_node_first() {
    let mut nodes = vec![
        node("n1", 4, 4000, 0),
        node("n2", 4, 4000, 0),
        node("n3", 4, 4000, 0),
    ];
    nodes[0].alloc_cpus = 1;
    nodes[1].alloc_cpus = 3;
    let mut p = part(3);
    // Packing (the default) takes the first node with room.
    let j = job(1, 1, 1);
    let a = place(&j, std::slice::from_ref(&p), &nodes).unwrap();
    assert_eq!(a.nodes[0].node, NodeIdx(0));
    p.lln = true;
    let a = place(&j, std::slice::from_ref(&p), &nodes).unwrap();
    assert_eq!(a.nodes[0].node, NodeIdx(2));
    // The backfill pass does the same.
    let plan1 = plan(&nodes, std::slice::from_ref(&p), &[j], 0);
    assert_eq!(starts(&plan1), vec![(1, vec![(2, 1)])]);
    // Weight still comes first.
    nodes[2].weight = 10;
    let a = place(&job(2, 1, 1), std::slice::from_ref(&p), &nodes).unwrap();
    assert_eq!(a.nodes[0].node, NodeIdx(0));
}

/// A CPU partition capped at four CPUs per node and an uncapped GPU
/// partition over the same eight-CPU node.
fn capped_and_open() -> (Vec<NodeView>, Vec<PartView>) {
    let nodes = vec![node("n1", 8, 8000, 0)];
    let mut cpu = part(1);
    cpu.max_cpus_per_node = Some(4);
    let mut gpu = part(1);
    gpu.name = "gpu".into();
    (nodes, vec![cpu, gpu])
}

#[test]
fn max_cpus_per_node_counts_all_of_a_partitions_jobs_on_a_node() {
    let (mut nodes, parts) = capped_and_open();
    // Running jobs of the capped partition hold three CPUs of the node.
    nodes[0].alloc_cpus = 3;
    nodes[0].part_cpus = vec![(0, 3)];
    // Two more CPUs of it would go beyond the cap: refused, though the
    // node has five free.
    let two = job(1, 1, 2);
    assert_eq!(place(&two, &parts, &nodes), Err(Unfit::Busy));
    let one = job(2, 1, 1);
    let a = place(&one, &parts, &nodes).unwrap();
    assert_eq!(a.nodes[0].cpus, 1);
    // A job of the other partition gets the rest of the node.
    let mut other = job(3, 1, 5);
    other.partitions = vec![1];
    let a = place(&other, &parts, &nodes).unwrap();
    assert_eq!((a.partition, a.nodes[0].cpus), (1, 5));
    // Could it ever run: the cap, not what is held, decides.
    assert!(crate::placement::could_ever_fit(&two, 0, &parts[0], &nodes));
}

#[test]
fn max_cpus_per_node_holds_across_the_starts_of_one_pass() {
    let (nodes, parts) = capped_and_open();
    // Two jobs of three CPUs of the capped partition: together they would
    // hold six of its four; the second waits. The other partition's job
    // of four gets the node's remaining CPUs beside the first.
    let a = job(1, 1, 3);
    let b = job(2, 1, 3);
    let mut c = job(3, 1, 4);
    c.partitions = vec![1];
    let p = plan(&nodes, &parts, &[a, b, c], 0);
    assert_eq!(starts(&p), vec![(1, vec![(0, 3)]), (3, vec![(0, 4)])]);
    assert_eq!(reason(&p, 2), Some(PendingReason::Resources));
    // Two jobs of two CPUs share the cap exactly.
    let p = plan(
        &nodes,
        &parts,
        &[job(4, 1, 2), job(5, 1, 2), job(6, 1, 1)],
        0,
    );
    assert_eq!(starts(&p), vec![(4, vec![(0, 2)]), (5, vec![(0, 2)])]);
    // Without the cap the same jobs all start: nothing else changes.
    let mut open = parts.clone();
    open[0].max_cpus_per_node = None;
    let p = plan(
        &nodes,
        &open,
        &[job(4, 1, 2), job(5, 1, 2), job(6, 1, 1)],
        0,
    );
    assert_eq!(starts(&p).len(), 3);
}

#[test]
fn max_cpus_per_node_budget_comes_back_at_the_partitions_job_ends_in_backfill() {
    let (mut nodes, parts) = capped_and_open();
    // Three one-CPU jobs of the capped partition, ending at 600, 1200 and
    // 1800: one CPU of its four left now.
    let running_jobs: Vec<RunningJob> = [600, 1200, 1800]
        .iter()
        .enumerate()
        .map(|(k, end)| running(100 + k as u32, &mut nodes, &[0], *end))
        .collect();
    nodes[0].part_cpus = vec![(0, 3)];
    // Three CPUs of the capped partition: not now (the node has five free,
    // the partition one), planned when two of its jobs have ended.
    let mut wide = job(1, 1, 3);
    wide.time_limit = TimeLimit::Minutes(10);
    // The other partition's job of four starts now beside them.
    let mut other = job(2, 1, 4);
    other.partitions = vec![1];
    other.time_limit = TimeLimit::Minutes(10);
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &[wide, other],
        running: &running_jobs,
    };
    let cfg = SchedConfig {
        bf_resolution: 1,
        bf_job_part_count_reserve: None,
        ..SchedConfig::default()
    };
    let p = crate::plan(&view, &cfg, 0);
    assert_eq!(starts(&p), vec![(2, vec![(0, 4)])]);
    assert_eq!(p.planned.get(&JobId(1)).map(|pl| pl.start), Some(1200));
}
