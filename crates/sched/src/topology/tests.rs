use super::*;
use crate::placement::{place, Unfit};
use crate::{plan, ClusterView, Decision, RunningJob, SchedConfig};
use model::{JobId, TimeLimit};
use proptest::prelude::*;
use std::sync::Arc;

fn node(i: u32, cpus: u32) -> NodeView {
    NodeView {
        name: format!("n{i}"),
        cpus,
        real_memory: 64_000,
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

fn sw(name: &str, nodes: std::ops::Range<u32>, children: &[u32]) -> Switch {
    Switch {
        name: name.into(),
        level: 0,
        link_speed: 1,
        parent: None,
        children: children.to_vec(),
        nodes: nodes.map(NodeIdx).collect(),
    }
}

/// Leaves of the given sizes (nodes numbered in order) under one root.
fn tree(sizes: &[u32]) -> Topology {
    let mut switches = Vec::new();
    let mut at = 0;
    for (k, s) in sizes.iter().enumerate() {
        switches.push(sw(&format!("s{k}"), at..at + s, &[]));
        at += s;
    }
    let kids: Vec<u32> = (0..sizes.len() as u32).collect();
    switches.push(sw("top", 0..0, &kids));
    Topology::new(TopoKind::Tree, switches, at as usize, vec![])
}

fn blocks(sizes: &[u32]) -> Topology {
    let mut switches = Vec::new();
    let mut at = 0;
    for (k, s) in sizes.iter().enumerate() {
        switches.push(sw(&format!("b{k}"), at..at + s, &[]));
        at += s;
    }
    Topology::new(TopoKind::Block, switches, at as usize, vec![])
}

fn part_with(n: u32, topo: &Topology) -> PartView {
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
        topology: Some(Arc::new(topo.clone())),
        max_cpus_per_node: None,
        lln: false,
    }
}

fn job(id: u32, nodes: u32, tasks: u32) -> JobRequest {
    JobRequest {
        job_id: JobId(id),
        priority: 1000 - id,
        submit_time: i64::from(id),
        partitions: vec![0],
        min_nodes: nodes,
        max_nodes: nodes,
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
        exclusive: true,
        required_nodes: vec![],
        excluded_nodes: vec![],
        constraint: None,
        time_limit: TimeLimit::Minutes(60),
        time_min: None,
        user: 1000,
        memory_consumable: false,
        enforce_binding: false,
        threads_per_core: None,
        ntasks_per_core: None,
        whole_cores: false,
        max_leaves: None,
        segment: None,
    }
}

fn busy(nodes: &mut [NodeView], which: &[u32]) {
    for i in which {
        let n = &mut nodes[*i as usize];
        n.alloc_cpus = n.cpus;
        n.n_jobs = 1;
    }
}

fn placed(a: &Allocation) -> Vec<u32> {
    a.nodes.iter().map(|x| x.node.0).collect()
}

#[test]
fn levels_parents_and_paths() {
    let t = tree(&[2, 2]);
    assert_eq!(t.switches[2].level, 1);
    assert_eq!(t.switches[0].parent, Some(2));
    assert_eq!(t.path_of(NodeIdx(3)), vec![1, 2]);
    assert_eq!(t.span(&[NodeIdx(0), NodeIdx(1)]), (1, 0, false));
    assert_eq!(t.span(&[NodeIdx(0), NodeIdx(3)]), (2, 1, false));
}

#[test]
fn a_two_node_job_lands_under_one_leaf() {
    // Two leaves of two nodes, node 0 busy: index order would take 1 and 2,
    // one on each leaf; the topology takes 2 and 3.
    let t = tree(&[2, 2]);
    let mut nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0]);
    let a = place(&job(1, 2, 2), &[part_with(4, &t)], &nodes).unwrap();
    assert_eq!(placed(&a), vec![2, 3]);
}

#[test]
fn best_fit_keeps_the_large_empty_leaf_whole() {
    // Leaves of 4 and 2 nodes, all free: a 2-node job goes on the small
    // leaf, so a 4-node job still finds one leaf.
    let t = tree(&[4, 2]);
    let nodes: Vec<NodeView> = (0..6).map(|i| node(i, 4)).collect();
    let a = place(&job(1, 2, 2), &[part_with(6, &t)], &nodes).unwrap();
    assert_eq!(placed(&a), vec![4, 5]);
}

#[test]
fn a_job_wider_than_any_leaf_spans_the_fewest() {
    // Leaves of 1, 3 and 3 nodes: a 4-node job takes a whole leaf of 3 and
    // the leaf of 1 (best fit for the rest), leaving the other 3 whole.
    let t = tree(&[1, 3, 3]);
    let nodes: Vec<NodeView> = (0..7).map(|i| node(i, 4)).collect();
    let a = place(&job(1, 4, 4), &[part_with(7, &t)], &nodes).unwrap();
    assert_eq!(
        t.span(&a.nodes.iter().map(|x| x.node).collect::<Vec<_>>())
            .0,
        2
    );
    assert_eq!(placed(&a), vec![1, 2, 3, 0]);
}

#[test]
fn switches_limit_waits_and_is_no_reason_to_refuse() {
    let t = tree(&[2, 2]);
    let mut nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0, 2]);
    let parts = [part_with(4, &t)];
    let mut j = job(1, 2, 2);
    // Without the limit it goes over both leaves.
    assert_eq!(placed(&place(&j, &parts, &nodes).unwrap()), vec![1, 3]);
    j.max_leaves = Some(1);
    assert_eq!(place(&j, &parts, &nodes), Err(Unfit::Busy));
    // A job that no one leaf could ever hold still waits (Busy), it is
    // not refused: the limit gives way after its max-time.
    let wide = JobRequest {
        max_leaves: Some(1),
        ..job(2, 3, 3)
    };
    assert_eq!(place(&wide, &parts, &nodes), Err(Unfit::Busy));
}

#[test]
fn blocks_take_as_few_as_they_can() {
    let t = blocks(&[4, 4, 4]);
    let mut nodes: Vec<NodeView> = (0..12).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0, 1, 4]);
    // 3 nodes: block 1 has 3 free, block 0 has 2: block 1, exactly.
    let a = place(&job(1, 3, 3), &[part_with(12, &t)], &nodes).unwrap();
    assert_eq!(placed(&a), vec![5, 6, 7]);
    // 6 nodes: block 2 (4 free) and 2 of another.
    let a = place(&job(2, 6, 6), &[part_with(12, &t)], &nodes).unwrap();
    assert_eq!(
        t.span(&a.nodes.iter().map(|x| x.node).collect::<Vec<_>>())
            .0,
        2
    );
}

#[test]
fn segments_stay_within_blocks() {
    let t = blocks(&[4, 4, 4]);
    let mut nodes: Vec<NodeView> = (0..12).map(|i| node(i, 4)).collect();
    // Three free in each block: a job of 4 nodes in segments of 2 takes two
    // from each of two blocks, never 3 + 1.
    busy(&mut nodes, &[0, 4, 8]);
    let mut j = job(1, 4, 4);
    j.segment = Some(2);
    let a = place(&j, &[part_with(12, &t)], &nodes).unwrap();
    let mut per = [0; 3];
    for n in placed(&a) {
        per[n as usize / 4] += 1;
    }
    assert!(per.iter().all(|c| c % 2 == 0), "{per:?}");
    // Segments of 4: no block has 4 free.
    j.segment = Some(4);
    assert_eq!(place(&j, &[part_with(12, &t)], &nodes), Err(Unfit::Busy));
}

#[test]
fn no_topology_changes_nothing() {
    let mut nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0]);
    let mut p = part_with(4, &tree(&[2, 2]));
    p.topology = None;
    let a = place(&job(1, 2, 2), &[p], &nodes).unwrap();
    assert_eq!(placed(&a), vec![1, 2]);
}

#[test]
fn backfill_plans_under_one_leaf_too() {
    // All four nodes busy until different times; the two-node job with
    // --switches=1 is planned where a whole leaf comes free, and that is
    // where it will start.
    let t = tree(&[2, 2]);
    let mut nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0, 1, 2, 3]);
    let ends = [100, 400, 200, 300];
    let allocs: Vec<Allocation> = (0..4)
        .map(|i| Allocation {
            partition: 0,
            nodes: vec![crate::NodeAlloc {
                node: NodeIdx(i),
                cpus: 4,
                mem: 0,
                tasks: 4,
                gres: vec![],
                cpu_ids: vec![],
            }],
            exclusive: true,
        })
        .collect();
    let running: Vec<RunningJob<'_>> = allocs
        .iter()
        .enumerate()
        .map(|(i, a)| RunningJob {
            job_id: JobId(100 + i as u32),
            end: ends[i],
            alloc: std::borrow::Cow::Borrowed(a),
            version: None,
        })
        .collect();
    let mut j = job(1, 2, 2);
    j.max_leaves = Some(1);
    let parts = [part_with(4, &t)];
    let jobs = [j];
    let view = ClusterView {
        nodes: &nodes,
        parts: &parts,
        jobs: &jobs,
        running: &running,
    };
    let p = plan(&view, &SchedConfig::default(), 0);
    assert!(matches!(p.decisions[0].1, Decision::Wait(_)));
    // Leaf 1 (nodes 2, 3) is whole at 300, leaf 0 only at 400.
    let planned = &p.planned[&JobId(1)];
    assert_eq!(planned.start, 300);
    let mut on: Vec<u32> = planned.nodes().iter().map(|n| n.0).collect();
    on.sort_unstable();
    assert_eq!(on, vec![2, 3]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Given a free whole leaf that can hold a job, the job never spans two
    /// leaves; and placement never exceeds `--switches`.
    #[test]
    fn a_free_leaf_that_holds_the_job_is_used(
        sizes in prop::collection::vec(1u32..6, 1..6),
        busy_bits in any::<u64>(),
        want in 1u32..8,
        limit in prop::option::of(1u32..3),
    ) {
        let t = tree(&sizes);
        let n: u32 = sizes.iter().sum();
        let mut nodes: Vec<NodeView> = (0..n).map(|i| node(i, 2)).collect();
        let which: Vec<u32> = (0..n).filter(|i| busy_bits >> (i % 64) & 1 == 1).collect();
        busy(&mut nodes, &which);
        let mut j = job(1, want, want);
        j.max_leaves = limit;
        let parts = [part_with(n, &t)];
        let free_leaf = t.switches.iter().any(|s| {
            !s.nodes.is_empty() && s.nodes.len() as u32 >= want
                && s.nodes.iter().all(|x| nodes[x.0 as usize].n_jobs == 0)
        });
        match place(&j, &parts, &nodes) {
            Ok(a) => {
                let on: Vec<NodeIdx> = a.nodes.iter().map(|x| x.node).collect();
                let (leaves, _, _) = t.span(&on);
                if free_leaf {
                    prop_assert_eq!(leaves, 1);
                }
                if let Some(max) = limit {
                    prop_assert!(leaves <= max as usize);
                }
            }
            Err(_) => prop_assert!(!free_leaf),
        }
    }

    /// Segments never straddle blocks: every block holds a multiple of the
    /// segment size of the job's nodes.
    #[test]
    fn segments_never_straddle_blocks(
        sizes in prop::collection::vec(1u32..7, 1..5),
        busy_bits in any::<u64>(),
        segs in 1u32..4,
        seg in 1u32..4,
    ) {
        let t = blocks(&sizes);
        let n: u32 = sizes.iter().sum();
        let mut nodes: Vec<NodeView> = (0..n).map(|i| node(i, 2)).collect();
        let which: Vec<u32> = (0..n).filter(|i| busy_bits >> (i % 64) & 1 == 1).collect();
        busy(&mut nodes, &which);
        let mut j = job(1, segs * seg, segs * seg);
        j.segment = Some(seg);
        if let Ok(a) = place(&j, &[part_with(n, &t)], &nodes) {
            let mut per = vec![0u32; sizes.len()];
            for x in &a.nodes {
                per[t.leaf_of[x.node.0 as usize] as usize] += 1;
            }
            prop_assert!(per.iter().all(|c| c % seg == 0), "{:?}", per);
            prop_assert_eq!(a.nodes.len() as u32, segs * seg);
        }
    }
}

#[test]
fn preemption_prefers_victims_under_one_leaf() {
    use crate::preempt::{select_victims, Candidate};
    let t = tree(&[2, 2]);
    let mut nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0, 1, 2, 3]);
    let costs = [1, 5, 2, 6];
    let candidates: Vec<Candidate> = (0..4u32)
        .map(|i| Candidate {
            job_id: JobId(100 + i),
            alloc: Allocation {
                partition: 0,
                nodes: vec![crate::NodeAlloc {
                    node: NodeIdx(i),
                    cpus: 4,
                    mem: 0,
                    tasks: 4,
                    gres: vec![],
                    cpu_ids: vec![],
                }],
                exclusive: true,
            },
            cost: costs[i as usize],
            ending: false,
        })
        .collect();
    let j = job(1, 2, 2);
    // Without a topology: the two cheapest, one on each leaf.
    let mut flat = part_with(4, &t);
    flat.topology = None;
    let p = select_victims(&j, &[flat], &nodes, &candidates).unwrap();
    assert_eq!(p.victims, vec![JobId(100), JobId(102)]);
    // With one: the cheaper leaf's two (1 + 5 against 2 + 6).
    let p = select_victims(&j, &[part_with(4, &t)], &nodes, &candidates).unwrap();
    assert_eq!(p.victims, vec![JobId(100), JobId(101)]);
    assert_eq!(placed(&p.alloc), vec![0, 1]);
}

#[test]
fn nodes_under_no_switch_take_no_job() {
    // Leaves of 2 and 2, and node 4 under no switch (Slurm: "switches lack
    // access"): a one-node job never lands there, even when it is the
    // only free node.
    let mut switches = vec![
        sw("s0", 0..2, &[]),
        sw("s1", 2..4, &[]),
        sw("top", 0..0, &[0, 1]),
    ];
    let t = Topology::new(TopoKind::Tree, std::mem::take(&mut switches), 5, vec![]);
    let mut nodes: Vec<NodeView> = (0..5).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &[0, 1, 2, 3]);
    let parts = [part_with(5, &t)];
    assert!(place(&job(1, 1, 1), &parts, &nodes).is_err());
    // Asked for by name: refused, as Slurm's "requires nodes that do not
    // have shared network".
    let mut j = job(2, 1, 1);
    j.required_nodes = vec![NodeIdx(4)];
    assert!(place(&j, &parts, &vec![node(0, 4); 5]).is_err());
}

#[test]
fn no_job_spans_switches_without_a_common_parent() {
    // Two trees (no top switch): a job of 3 nodes fits neither leaf of 2,
    // and is not spread over both.
    let t = Topology::new(
        TopoKind::Tree,
        vec![sw("s0", 0..2, &[]), sw("s1", 2..4, &[])],
        4,
        vec![],
    );
    let nodes: Vec<NodeView> = (0..4).map(|i| node(i, 4)).collect();
    let parts = [part_with(4, &t)];
    assert!(place(&job(1, 3, 3), &parts, &nodes).is_err());
    assert_eq!(
        placed(&place(&job(2, 2, 2), &parts, &nodes).unwrap()).len(),
        2
    );
}

/// Blocks of 4 nodes with `BlockSizes`.
fn sized_blocks(n_blocks: u32, sizes: &[u32]) -> Topology {
    let switches = (0..n_blocks)
        .map(|k| sw(&format!("b{k}"), k * 4..k * 4 + 4, &[]))
        .collect();
    Topology::new(
        TopoKind::Block,
        switches,
        (n_blocks * 4) as usize,
        sizes.to_vec(),
    )
}

#[test]
fn block_sizes_hold_jobs_to_aligned_groups() {
    // Base blocks of 4, aggregated by 4 (BlockSizes=4,16): blocks 0-3 and
    // 4-7 are the two groups of 16.
    let t = sized_blocks(8, &[4, 16]);
    let mut nodes: Vec<NodeView> = (0..32).map(|i| node(i, 4)).collect();
    // Blocks 2 and 3 free, 0, 1 busy; blocks 4 and 5 free, 6 and 7 half busy.
    busy(&mut nodes, &(0..8).collect::<Vec<_>>());
    busy(&mut nodes, &[24, 25, 28, 29]);
    let parts = [part_with(32, &t)];
    // 8 nodes need two base blocks, in one group of four, and at most two
    // blocks of it. Group 0 has 8 free (blocks 2, 3); group 1 has 12 free
    // but its two largest blocks hold 8 too. Best fit: group 0.
    let a = place(&job(1, 8, 8), &parts, &nodes).unwrap();
    assert_eq!(placed(&a), (8..16).collect::<Vec<_>>());
    // Blocks 3 and 4 are adjacent but in different groups: with only those
    // free, an 8-node job waits.
    let mut nodes: Vec<NodeView> = (0..32).map(|i| node(i, 4)).collect();
    busy(&mut nodes, &(0..12).chain(20..32).collect::<Vec<_>>());
    assert!(place(&job(2, 8, 8), &parts, &nodes).is_err());
    // A job of 3 stays in one base block.
    let a = place(&job(3, 3, 3), &parts, &nodes).unwrap();
    assert_eq!(
        t.span(&a.nodes.iter().map(|x| x.node).collect::<Vec<_>>())
            .0,
        1
    );
}

proptest! {
    /// With `BlockSizes=4,8,16` a job of up to 16 nodes always sits in one
    /// aligned group of the smallest level that could hold it.
    #[test]
    fn block_size_groups_are_never_straddled(
        busy_bits in proptest::collection::vec(any::<bool>(), 32),
        n in 1u32..=16,
    ) {
        let t = sized_blocks(8, &[4, 8, 16]);
        let mut nodes: Vec<NodeView> = (0..32).map(|i| node(i, 4)).collect();
        let which: Vec<u32> = (0..32).filter(|i| busy_bits[*i as usize]).collect();
        busy(&mut nodes, &which);
        if let Ok(a) = place(&job(1, n, n), &[part_with(32, &t)], &nodes) {
            let group_nodes = 4 * n.div_ceil(4).next_power_of_two();
            let groups: std::collections::BTreeSet<u32> =
                placed(&a).iter().map(|x| x / group_nodes).collect();
            prop_assert_eq!(groups.len(), 1, "{:?}", placed(&a));
        }
    }
}

#[test]
fn whole_nodes_are_picked_as_an_exclusive_job_would_be() {
    let idx = |v: &[u32]| v.iter().map(|i| NodeIdx(*i)).collect::<Vec<_>>();
    // Node 0 taken: a leaf of two free nodes is whole.
    let t = tree(&[2, 2]);
    assert_eq!(
        pick_whole_nodes(&t, &idx(&[1, 2, 3]), 2),
        Some(idx(&[2, 3]))
    );
    assert_eq!(pick_whole_nodes(&t, &idx(&[1, 2, 3]), 4), None);
    // Blocks: the whole second block rather than the first free four.
    let b = blocks(&[4, 4]);
    let free = idx(&[1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(pick_whole_nodes(&b, &free, 4), Some(idx(&[4, 5, 6, 7])));
    // More than a block: the fuller block first, then the rest.
    let got = pick_whole_nodes(&b, &free, 5).unwrap();
    assert_eq!(b.leaves_of(got.iter().copied()).len(), 2);
    // Two roots: no switch holds nodes of both.
    let two = vec![sw("a", 0..2, &[]), sw("b", 2..4, &[])];
    let t2 = Topology::new(TopoKind::Tree, two, 4, vec![]);
    assert_eq!(pick_whole_nodes(&t2, &idx(&[0, 1, 2, 3]), 3), None);
}
