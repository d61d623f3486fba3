use super::*;
use model::{Gres, JobId, PendingReason, TimeLimit};
use proptest::prelude::*;

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
            }]
        } else {
            vec![]
        },
        features: vec![],
        weight: 1,
        available: true,
        exclusive_in_use: false,
        n_jobs: 0,
    }
}

fn part(n_nodes: u32) -> PartView {
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
        memory_consumable: true,
    }
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

#[test]
fn more_nodes_than_the_partition_has_is_partition_config() {
    let nodes = vec![node("n1", 1, 4000, 0)];
    let plan = plan(&nodes, &[part(1)], &[job(1, 4, 4)], 0);
    assert_eq!(reason(&plan, 1), Some(PendingReason::PartitionConfig));
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
