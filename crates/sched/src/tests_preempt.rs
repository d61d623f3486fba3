use super::*;
use crate::placement::{GresPool, NodeAlloc};
use crate::NodeIdx;
use model::{Gres, TimeLimit};
use proptest::prelude::*;

fn node(cpus: u32, gpus: u32) -> NodeView {
    NodeView {
        name: "n".into(),
        cpus,
        real_memory: 8000,
        alloc_cpus: 0,
        alloc_mem: 0,
        gres: if gpus > 0 {
            vec![GresPool {
                name: "gpu".into(),
                type_: None,
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

fn part(n: u32) -> PartView {
    PartView {
        name: "p".into(),
        nodes: (0..n).map(NodeIdx).collect(),
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

fn req(id: u32, nodes: u32, tasks: u32, gpus: u64) -> JobRequest {
    JobRequest {
        job_id: JobId(id),
        priority: 1,
        submit_time: 0,
        partitions: vec![0],
        min_nodes: nodes,
        max_nodes: nodes,
        ntasks: tasks.max(nodes),
        ntasks_per_node: None,
        cpus_per_task: 1,
        mem_per_node: None,
        mem_per_cpu: Some(100),
        mem_per_gpu: None,
        gres_per_node: if gpus > 0 {
            vec![Gres {
                name: "gpu".into(),
                type_: None,
                count: gpus,
            }]
        } else {
            vec![]
        },
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

fn cand(id: u32, node: u32, cpus: u32, cost: u64) -> Candidate {
    Candidate {
        job_id: JobId(id),
        alloc: Allocation {
            partition: 0,
            nodes: vec![NodeAlloc {
                node: NodeIdx(node),
                cpus,
                mem: 100 * u64::from(cpus),
                tasks: cpus,
                gres: vec![],
                cpu_ids: Vec::new(),
            }],
            exclusive: false,
        },
        cost,
        ending: false,
    }
}

/// Nodes with the candidates' use laid on.
fn busy(mut nodes: Vec<NodeView>, cands: &[Candidate]) -> Vec<NodeView> {
    for c in cands {
        apply_alloc(&mut nodes, &c.alloc, true);
    }
    nodes
}

#[test]
fn the_job_that_lost_least_is_preempted() {
    let cands = vec![cand(1, 0, 4, 1000), cand(2, 1, 4, 10)];
    let nodes = busy(vec![node(4, 0), node(4, 0)], &cands);
    let p = select_victims(&req(9, 1, 4, 0), &[part(2)], &nodes, &cands).expect("fits");
    assert_eq!(p.victims, vec![JobId(2)]);
    assert_eq!(p.alloc.nodes[0].node, NodeIdx(1));
}

#[test]
fn no_more_victims_than_needed() {
    // Two small cheap jobs and one big dear one on one node: preempting the
    // two cheap ones frees enough; the dear one stays.
    let cands = vec![cand(1, 0, 1, 5), cand(2, 0, 1, 6), cand(3, 0, 2, 100)];
    let nodes = busy(vec![node(4, 0)], &cands);
    let p = select_victims(&req(9, 1, 2, 0), &[part(1)], &nodes, &cands).expect("fits");
    assert_eq!(p.victims, vec![JobId(1), JobId(2)]);
    // A job needing three CPUs cannot do with the cheap ones alone: the dear
    // one goes and one cheap one is enough beside it.
    let p = select_victims(&req(9, 1, 3, 0), &[part(1)], &nodes, &cands).expect("fits");
    assert_eq!(p.victims.len(), 2);
    assert!(p.victims.contains(&JobId(3)));
}

#[test]
fn ending_jobs_are_awaited_not_preempted() {
    let mut ending = cand(1, 0, 4, 0);
    ending.ending = true;
    let cands = vec![ending, cand(2, 1, 4, 1)];
    let nodes = busy(vec![node(4, 0), node(4, 0)], &cands);
    let p = select_victims(&req(9, 1, 4, 0), &[part(2)], &nodes, &cands).expect("fits");
    assert!(p.victims.is_empty());
    assert_eq!(p.awaited, vec![JobId(1)]);
}

#[test]
fn nothing_when_it_fits_or_never_fits() {
    let cands = vec![cand(1, 0, 2, 1)];
    let nodes = busy(vec![node(4, 0)], &cands);
    assert_eq!(
        select_victims(&req(9, 1, 2, 0), &[part(1)], &nodes, &cands),
        None
    );
    assert_eq!(
        select_victims(&req(9, 1, 8, 0), &[part(1)], &nodes, &cands),
        None
    );
}

#[test]
fn the_answer_does_not_depend_on_candidate_order() {
    let cands = vec![cand(1, 0, 2, 7), cand(2, 0, 2, 7), cand(3, 1, 4, 3)];
    let nodes = busy(vec![node(4, 0), node(4, 0)], &cands);
    let a = select_victims(&req(9, 1, 2, 0), &[part(2)], &nodes, &cands);
    let mut rev = cands.clone();
    rev.reverse();
    assert_eq!(
        a,
        select_victims(&req(9, 1, 2, 0), &[part(2)], &nodes, &rev)
    );
}

proptest! {
    /// A preempted job's resources really go to the preemptor: every CPU,
    /// megabyte and GPU the preemptor is placed on is either free now or
    /// held by a job it preempts (or one already ending), never by a job
    /// that keeps running; and victims are only chosen among candidates.
    #[test]
    fn preempted_resources_go_to_the_preemptor(
        specs in prop::collection::vec((1u32..8, 0u32..3), 1..5),
        running in prop::collection::vec((0usize..5, 1u32..5, 0u64..3, 0u64..1000, any::<bool>(), any::<bool>()), 0..12),
        want in (1u32..3, 1u32..12, 0u64..3),
    ) {
        let mut nodes: Vec<NodeView> = specs.iter().map(|(c, g)| node(*c, *g)).collect();
        let parts = [part(nodes.len() as u32)];
        // Place the running jobs one by one where they fit.
        let mut cands = Vec::new();
        let mut others = Vec::new();
        for (i, (n, cpus, gpus, cost, ending, preemptable)) in running.iter().enumerate() {
            let mut r = req(i as u32 + 1, 1, *cpus, *gpus);
            r.required_nodes = vec![NodeIdx((*n % nodes.len()) as u32)];
            if let Ok(a) = place(&r, &parts, &nodes) {
                apply_alloc(&mut nodes, &a, true);
                let c = Candidate { job_id: r.job_id, alloc: a, cost: *cost, ending: *ending };
                if *preemptable || *ending { cands.push(c) } else { others.push(c) }
            }
        }
        let job = req(99, want.0, want.1, want.2);
        if let Some(p) = select_victims(&job, &parts, &nodes, &cands) {
            // Victims and awaited jobs are candidates; victims never ending.
            for v in &p.victims {
                prop_assert!(cands.iter().any(|c| c.job_id == *v && !c.ending));
            }
            for v in &p.awaited {
                prop_assert!(cands.iter().any(|c| c.job_id == *v && c.ending));
            }
            // Release exactly those: the preemptor's shares then fit.
            let mut after = nodes.clone();
            for c in cands.iter().filter(|c| p.victims.contains(&c.job_id) || p.awaited.contains(&c.job_id)) {
                apply_alloc(&mut after, &c.alloc, false);
            }
            for na in &p.alloc.nodes {
                let n = &after[na.node.0 as usize];
                prop_assert!(n.alloc_cpus + na.cpus <= n.cpus);
                prop_assert!(n.alloc_mem + na.mem <= n.real_memory);
                for (pool, idxs) in &na.gres {
                    for i in idxs {
                        let k = n.gres[*pool].indexes.iter().position(|x| x == i).expect("index");
                        prop_assert!(!n.gres[*pool].used[k], "GPU {} of node {} still held", i, na.node.0);
                    }
                }
            }
            // No job that keeps running loses anything: its GPUs are not the preemptor's.
            for c in others.iter().chain(cands.iter().filter(|c| !p.victims.contains(&c.job_id) && !p.awaited.contains(&c.job_id))) {
                for a in &c.alloc.nodes {
                    for b in p.alloc.nodes.iter().filter(|b| b.node == a.node) {
                        for (pa, ia) in &a.gres {
                            for (pb, ib) in &b.gres {
                                prop_assert!(pa != pb || ia.iter().all(|x| !ib.contains(x)));
                            }
                        }
                    }
                }
            }
            prop_assert!(p.victims.len() + p.awaited.len() > 0);
        }
    }
}
