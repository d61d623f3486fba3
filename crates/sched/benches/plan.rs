//! `sched::plan` cost per full scheduling pass (priority order, start what
//! fits, plan a start for every other job: backfill over the whole queue),
//! parameterised by (pending jobs, nodes).
//!
//! Nodes: 16 CPUs and 64 GB each, one partition with all of them. Every
//! node runs one 8-CPU job with an expected end spread over the next day,
//! so half of each node is free now and more comes free over time.
//! Pending jobs: 1 to 4 nodes of 1 to 16 tasks, limits from 10 minutes to
//! a day, so some start, most get a planned start, and many short ones are
//! tried in the gaps before those plans (the backfill path).
//!
//! `cargo bench -p sched --bench plan`

use model::{JobId, TimeLimit};
use sched::{
    plan, Allocation, ClusterView, JobRequest, NodeAlloc, NodeIdx, NodeView, PartView, RunningJob,
    SchedConfig,
};

fn main() {
    divan::main();
}

const CPUS_PER_NODE: u32 = 16;

/// A small deterministic generator (no RNG crate in a pure bench).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

fn cluster(n: u32) -> (Vec<NodeView>, Vec<RunningJob<'static>>) {
    let mut seed = 7;
    let mut nodes = Vec::new();
    let mut running = Vec::new();
    for i in 0..n {
        nodes.push(NodeView {
            name: format!("node{:05}", i + 1),
            cpus: CPUS_PER_NODE,
            real_memory: 64_000,
            alloc_cpus: 8,
            alloc_mem: 800,
            gres: vec![],
            features: vec![],
            weight: 1,
            available: true,
            exclusive_in_use: false,
            n_jobs: 1,
            cpu_ids_in_use: Vec::new(),
            threads: 1,
            part_cpus: Vec::new(),
        });
        running.push(RunningJob {
            job_id: JobId(1_000_000 + i),
            end: 60 + (lcg(&mut seed) % 86_400) as i64,
            alloc: std::borrow::Cow::Owned(Allocation {
                partition: 0,
                nodes: vec![NodeAlloc {
                    node: NodeIdx(i),
                    cpus: 8,
                    mem: 800,
                    tasks: 8,
                    gres: vec![],
                    cpu_ids: Vec::new(),
                }],
                exclusive: false,
            }),
            version: None,
        });
    }
    (nodes, running)
}

fn parts(n_nodes: u32) -> Vec<PartView> {
    vec![PartView {
        name: "batch".into(),
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
    }]
}

fn jobs(n: u32) -> Vec<JobRequest> {
    let mut seed = 11;
    (0..n)
        .map(|i| {
            let nodes = 1 + (lcg(&mut seed) % 4) as u32;
            let tasks = nodes * (1 + (lcg(&mut seed) % 16) as u32);
            JobRequest {
                job_id: JobId(i + 1),
                priority: 1000 + (i % 7),
                submit_time: i64::from(i),
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
                time_limit: TimeLimit::Minutes(10 + (lcg(&mut seed) % 1430) as u32),
                time_min: None,
                user: 1000 + i % 50,
                memory_consumable: true,
                enforce_binding: false,
                threads_per_core: None,
                ntasks_per_core: None,
                whole_cores: false,
                max_leaves: None,
                segment: None,
            }
        })
        .collect()
}

/// (pending jobs, nodes)
const SIZES: &[(u32, u32)] = &[(1_000, 100), (10_000, 1_000), (100_000, 10_000)];

#[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
fn full_pass(bencher: divan::Bencher, &(n_jobs, n_nodes): &(u32, u32)) {
    let (nodes, running) = cluster(n_nodes);
    let parts = parts(n_nodes);
    let jobs = jobs(n_jobs);
    let cfg = SchedConfig::default();
    bencher
        .counter(divan::counter::ItemsCount::new(n_jobs))
        .bench(|| {
            let view = ClusterView {
                nodes: &nodes,
                parts: &parts,
                jobs: divan::black_box(&jobs),
                running: &running,
            };
            plan(&view, &cfg, 0)
        });
}

/// A three-level tree over `n` nodes: leaves of 20 nodes, 10 leaves under
/// each middle switch, every middle switch under one top switch.
fn tree(n: u32) -> std::sync::Arc<sched::Topology> {
    use sched::{Switch, TopoKind, Topology};
    let mut switches = Vec::new();
    let leaves = n.div_ceil(20);
    for l in 0..leaves {
        switches.push(Switch {
            name: format!("leaf{l}"),
            level: 0,
            link_speed: 1,
            parent: None,
            children: vec![],
            nodes: (l * 20..((l + 1) * 20).min(n)).map(NodeIdx).collect(),
        });
    }
    let mids = leaves.div_ceil(10);
    for m in 0..mids {
        switches.push(Switch {
            name: format!("mid{m}"),
            level: 0,
            link_speed: 1,
            parent: None,
            children: (m * 10..((m + 1) * 10).min(leaves)).collect(),
            nodes: vec![],
        });
    }
    switches.push(Switch {
        name: "top".into(),
        level: 0,
        link_speed: 1,
        parent: None,
        children: (leaves..leaves + mids).collect(),
        nodes: vec![],
    });
    std::sync::Arc::new(Topology::new(TopoKind::Tree, switches, n as usize, vec![]))
}

/// `full_pass` with `TopologyPlugin=topology/tree`: the same cluster and
/// queue under a three-level tree (`tree`).
#[divan::bench(args = SIZES, sample_count = 5, sample_size = 1)]
fn full_pass_tree(bencher: divan::Bencher, &(n_jobs, n_nodes): &(u32, u32)) {
    let (nodes, running) = cluster(n_nodes);
    let mut parts = parts(n_nodes);
    parts[0].topology = Some(tree(n_nodes));
    let jobs = jobs(n_jobs);
    let cfg = SchedConfig::default();
    bencher
        .counter(divan::counter::ItemsCount::new(n_jobs))
        .bench(|| {
            let view = ClusterView {
                nodes: &nodes,
                parts: &parts,
                jobs: divan::black_box(&jobs),
                running: &running,
            };
            plan(&view, &cfg, 0)
        });
}
