//! `sched::plan` cost per scheduling pass, parameterised by (jobs, nodes).
//!
//! Nodes: 16 CPUs and 64 GB each, one partition with all of them, all idle.
//! Jobs: 1 node, 1 to 4 tasks of 1 CPU with 100 MB per CPU, so about two
//! thirds of the queue starts and the rest waits (Resources, then Priority),
//! which exercises both the placement and the waiting paths.
//!
//! `cargo bench -p sched --bench plan`

use model::{JobId, TimeLimit};
use sched::{plan, JobRequest, NodeIdx, NodeView, PartView};

fn main() {
    divan::main();
}

const CPUS_PER_NODE: u32 = 16;

fn nodes(n: u32) -> Vec<NodeView> {
    (0..n)
        .map(|i| NodeView {
            name: format!("node{:04}", i + 1),
            cpus: CPUS_PER_NODE,
            real_memory: 64_000,
            alloc_cpus: 0,
            alloc_mem: 0,
            gres: vec![],
            features: vec![],
            weight: 1,
            available: true,
            exclusive_in_use: false,
            n_jobs: 0,
        })
        .collect()
}

fn parts(n_nodes: u32) -> Vec<PartView> {
    vec![PartView {
        name: "debug".into(),
        nodes: (0..n_nodes).map(NodeIdx).collect(),
        up: true,
        max_nodes: None,
        min_nodes: 0,
        max_time: TimeLimit::Unlimited,
        exclusive: false,
        max_mem_per_node: None,
        priority_tier: 1,
    }]
}

fn jobs(n: u32) -> Vec<JobRequest> {
    (0..n)
        .map(|i| JobRequest {
            job_id: JobId(i + 1),
            priority: 1000 + (i % 7),
            submit_time: i64::from(i),
            partitions: vec![0],
            min_nodes: 1,
            max_nodes: 1,
            ntasks: 1 + i % 4,
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
        })
        .collect()
}

/// (jobs, nodes)
const SIZES: &[(u32, u32)] = &[(100, 10), (1000, 100), (10000, 1000)];

#[divan::bench(args = SIZES, sample_count = 20)]
fn plan_pass(bencher: divan::Bencher, &(n_jobs, n_nodes): &(u32, u32)) {
    let nodes = nodes(n_nodes);
    let parts = parts(n_nodes);
    let jobs = jobs(n_jobs);
    bencher
        .counter(divan::counter::ItemsCount::new(n_jobs))
        .bench(|| plan(&nodes, &parts, divan::black_box(&jobs), 0));
}

/// A full cluster: every node busy, so every job is tried and waits. This
/// is the steady state of a deep queue, which the controller re-plans after
/// every batch of messages.
#[divan::bench(args = SIZES, sample_count = 20)]
fn plan_pass_full_cluster(bencher: divan::Bencher, &(n_jobs, n_nodes): &(u32, u32)) {
    let mut nodes = nodes(n_nodes);
    for n in &mut nodes {
        n.alloc_cpus = n.cpus;
        n.n_jobs = 1;
    }
    let parts = parts(n_nodes);
    let jobs = jobs(n_jobs);
    bencher
        .counter(divan::counter::ItemsCount::new(n_jobs))
        .bench(|| plan(&nodes, &parts, divan::black_box(&jobs), 0));
}
