//! Topology-aware placement through the engine (issue 43): a job's nodes
//! under one leaf switch, `--switches` waiting then giving way, `--segment`,
//! and `scontrol show topology`.

use crate::tests::{assert_invariants, config, desc, reg, submit};
use crate::Engine;
use model::{JobId, JobState, PendingReason};
use proto::JobDesc;

/// Four nodes of 2 CPUs: n1, n2 under s0; n3, n4 under s1; both under top.
fn tree_engine(extra: &str) -> Engine {
    let mut cfg = config(&format!(
        "ClusterName=c\nSlurmctldHost=h\nTopologyPlugin=topology/tree\n{extra}\
         NodeName=n[1-4] CPUs=2 RealMemory=4000 Port=7001\n\
         PartitionName=p Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP\n"
    ));
    cfg.topology = Some(
        conf::parse_topology_conf(
            "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4] LinkSpeed=100\n\
             SwitchName=top Switches=s[0-1]\n",
            std::path::Path::new("/x/topology.conf"),
        )
        .unwrap()
        .0,
    );
    let mut e = Engine::new(&cfg, 0);
    for n in 1..=4 {
        e.on_node_registered(reg(&format!("n{n}"), 2, 4000), 0)
            .unwrap();
    }
    e
}

fn nodes(e: &Engine, id: JobId) -> Vec<String> {
    e.job_info(&e.jobs[&id], 0).nodes
}

fn wide(n: u32) -> JobDesc {
    let mut d = desc();
    d.min_nodes = Some(n);
    d.exclusive = true;
    d
}

#[test]
fn a_two_node_job_lands_under_one_leaf() {
    let mut e = tree_engine("");
    // n1 taken: without the topology the next job would get n2 and n3.
    let a = submit(&mut e, wide(1), 0);
    assert_eq!(nodes(&e, a), vec!["n1"]);
    let b = submit(&mut e, wide(2), 0);
    assert_eq!(nodes(&e, b), vec!["n3", "n4"]);
    assert_invariants(&e);
}

/// n1 and n3 taken, each by a one-node job (the second named with `-w`:
/// best fit alone would put it on n2 and leave s1 whole).
fn one_free_node_per_leaf(e: &mut Engine) -> (JobId, JobId) {
    let a = submit(e, wide(1), 0);
    let mut d = wide(1);
    d.nodelist = vec!["n3".into()];
    let b = submit(e, d, 0);
    assert_eq!(nodes(e, a), vec!["n1"]);
    assert_eq!(nodes(e, b), vec!["n3"]);
    (a, b)
}

#[test]
fn switches_waits_then_takes_any() {
    let mut e = tree_engine("SchedulerParameters=max_switch_wait=600\n");
    let _ = one_free_node_per_leaf(&mut e);
    let mut d = wide(2);
    d.switches = Some(1);
    d.switch_wait = Some(120);
    let c = submit(&mut e, d, 0);
    assert_eq!(e.jobs[&c].state, JobState::Pending);
    assert_eq!(e.jobs[&c].reason, PendingReason::Resources);
    let why = e.explain(c, 10).unwrap();
    assert!(
        why.request
            .contains("at most 1 leaf switch (waits for that 110s more"),
        "{}",
        why.request
    );
    // The wait gives way at 120: the engine wakes then and the job takes
    // the two free nodes on two leaves.
    assert_eq!(e.next_wakeup(), Some(120));
    e.apply(crate::Input::Tick, 120);
    assert_eq!(e.jobs[&c].state, JobState::Running);
    assert_eq!(nodes(&e, c), vec!["n2", "n4"]);
    assert_invariants(&e);
}

#[test]
fn switches_runs_under_one_leaf_once_one_is_free() {
    let mut e = tree_engine("");
    let (a, b) = one_free_node_per_leaf(&mut e);
    let mut d = wide(2);
    d.switches = Some(1);
    let c = submit(&mut e, d, 0);
    assert_eq!(e.jobs[&c].state, JobState::Pending);
    // One of the two ends: its leaf is whole again.
    let (first, on) = (a, nodes(&e, a)[0].clone());
    e.on_job_exited(first, &on, model::ExitCode::default(), None, 5)
        .unwrap();
    e.schedule(5);
    assert_eq!(e.jobs[&c].state, JobState::Running);
    let got = nodes(&e, c);
    let leaf = |n: &str| if n == "n1" || n == "n2" { 0 } else { 1 };
    assert_eq!(leaf(&got[0]), leaf(&got[1]), "{got:?}");
    let _ = b;
}

#[test]
fn show_topology_as_slurm_prints_it() {
    let e = tree_engine("");
    assert_eq!(
        e.show_topology(None).unwrap(),
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=n[1-2] \n\
         SwitchName=s1 Level=0 LinkSpeed=100 Nodes=n[3-4] \n\
         SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[0-1] \n"
    );
    assert_eq!(
        e.show_topology(Some("n3")).unwrap(),
        "SwitchName=s1 Level=0 LinkSpeed=100 Nodes=n[3-4] \n\
         SwitchName=top Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[0-1] \n"
    );
}

#[test]
fn without_a_plugin_nothing_changes() {
    let cfg = config(
        "ClusterName=c\nSlurmctldHost=h\n\
         NodeName=n[1-4] CPUs=2 RealMemory=4000 Port=7001\n\
         PartitionName=p Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP\n",
    );
    let mut e = Engine::new(&cfg, 0);
    for n in 1..=4 {
        e.on_node_registered(reg(&format!("n{n}"), 2, 4000), 0)
            .unwrap();
    }
    assert!(e.show_topology(None).is_none());
    let a = submit(&mut e, wide(1), 0);
    assert_eq!(nodes(&e, a), vec!["n1"]);
    let b = submit(&mut e, wide(2), 0);
    assert_eq!(nodes(&e, b), vec!["n2", "n3"]);
}

#[test]
fn blocks_and_segments() {
    let mut cfg = config(
        "ClusterName=c\nSlurmctldHost=h\nTopologyPlugin=topology/block\n\
         NodeName=n[1-8] CPUs=2 RealMemory=4000 Port=7001\n\
         PartitionName=p Nodes=n[1-8] Default=YES MaxTime=INFINITE State=UP\n",
    );
    cfg.topology = Some(
        conf::parse_topology_conf(
            "BlockName=b0 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\nBlockSizes=4,8\n",
            std::path::Path::new("/x/topology.conf"),
        )
        .unwrap()
        .0,
    );
    let mut e = Engine::new(&cfg, 0);
    for n in 1..=8 {
        e.on_node_registered(reg(&format!("n{n}"), 2, 4000), 0)
            .unwrap();
    }
    assert_eq!(
        e.show_topology(None).unwrap(),
        "BlockName=b0 BlockIndex=0 Nodes=n[1-4] BlockSize=4\n\
         BlockName=b1 BlockIndex=1 Nodes=n[5-8] BlockSize=4\n\
         BlockSizes=4,8\n"
    );
    let a = submit(&mut e, wide(1), 0);
    assert_eq!(nodes(&e, a), vec!["n1"]);
    // Four nodes in segments of two: two from each block or four from
    // b1; never three and one.
    let mut d = wide(4);
    d.segment = Some(2);
    let b = submit(&mut e, d, 0);
    let got = nodes(&e, b);
    let in_b0 = got
        .iter()
        .filter(|n| ["n1", "n2", "n3", "n4"].contains(&n.as_str()))
        .count();
    assert_eq!(in_b0 % 2, 0, "{got:?}");
    assert_invariants(&e);
}

#[test]
fn a_segment_that_does_not_divide_the_job_is_refused_at_submission() {
    let mut cfg = config(
        "ClusterName=c\nSlurmctldHost=h\nTopologyPlugin=topology/block\n\
         NodeName=n[1-8] CPUs=2 RealMemory=4000 Port=7001\n\
         PartitionName=p Nodes=n[1-8] Default=YES MaxTime=INFINITE State=UP\n",
    );
    cfg.topology = Some(
        conf::parse_topology_conf(
            "BlockName=b0 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\nBlockSizes=4,8\n",
            std::path::Path::new("/x/topology.conf"),
        )
        .unwrap()
        .0,
    );
    let mut e = Engine::new(&cfg, 0);
    for n in 1..=8 {
        e.on_node_registered(reg(&format!("n{n}"), 2, 4000), 0)
            .unwrap();
    }
    let refused = |e: &mut Engine, nodes: u32, seg: u32| {
        let mut d = wide(nodes);
        d.segment = Some(seg);
        e.on_submit(d, &crate::tests::user(), 0).err()
    };
    // 3 nodes in segments of 2; segments of 8, larger than the base block.
    for (nodes, seg) in [(3, 2), (8, 8)] {
        let err = refused(&mut e, nodes, seg).expect("refused");
        assert_eq!(err, proto::SlurmError::RequestedTopoConfigUnavailable);
        assert_eq!(
            err.as_slurm_str(),
            "Requested topology configuration is not available"
        );
    }
    assert!(refused(&mut e, 4, 2).is_none());
}

/// The nodes a `NodeCnt=` reservation from now on gets, with n1 taken by
/// a job without a limit (busy through the whole window).
fn resv_of(e: &mut Engine, count: u32) -> String {
    let a = submit(e, wide(1), 0);
    assert_eq!(nodes(e, a), vec!["n1"]);
    let spec = proto::resv::ResvSpec {
        name: "r".into(),
        start: Some(0),
        duration_mins: Some(60),
        node_cnt: Some(count),
        users: Some("alice".into()),
        ..proto::resv::ResvSpec::default()
    };
    let req = proto::CtldRequest::CreateReservation(spec);
    let who = crate::tests::admin();
    let reply = e.apply(
        crate::Input::Request {
            req: Box::new(req),
            who,
        },
        0,
    );
    assert!(
        matches!(
            reply.reply,
            Some(proto::CtldResponse::ReservationCreated(_))
        ),
        "{:?}",
        reply.reply
    );
    assert_invariants(e);
    match e.apply(
        crate::Input::Request {
            req: Box::new(proto::CtldRequest::ListReservations),
            who: crate::tests::user(),
        },
        0,
    ) {
        crate::apply::Applied {
            reply: Some(proto::CtldResponse::Reservations(l)),
            ..
        } => l[0].nodes.clone(),
        other => panic!("{:?}", other.reply),
    }
}

#[test]
fn a_node_count_reservation_is_placed_as_a_job_would_be() {
    // n1 busy: the first free nodes would be n2 (s0) and n3 (s1); the
    // reservation takes s1 whole, as a 2-node job would.
    let mut e = tree_engine("");
    assert_eq!(resv_of(&mut e, 2), "n[3-4]");
    // Three nodes: no leaf holds them; top does, over both leaves.
    let mut e = tree_engine("");
    assert_eq!(resv_of(&mut e, 3), "n[2-4]");
    // Without a topology: the first free nodes, as before.
    let mut e = Engine::new(
        &config(
            "ClusterName=c\nSlurmctldHost=h\n\
             NodeName=n[1-4] CPUs=2 RealMemory=4000 Port=7001\n\
             PartitionName=p Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP\n",
        ),
        0,
    );
    for n in 1..=4 {
        e.on_node_registered(reg(&format!("n{n}"), 2, 4000), 0)
            .unwrap();
    }
    assert_eq!(resv_of(&mut e, 2), "n[2-3]");
}

/// A blocked two-node job is planned under the tree (over the top switch
/// where it may span leaves; with `--switches=1` where a whole leaf comes
/// free), and when the running jobs end at their limits it starts at the
/// planned time on the planned nodes.
#[test]
fn a_planned_start_under_a_tree_is_the_start_the_job_gets() {
    for (switches, want_start, want_nodes) in
        [(None, 120, ["n1", "n3"]), (Some(1), 180, ["n3", "n4"])]
    {
        let mut e = tree_engine("");
        // One node each, ending at 60 (n1), 240 (n2), 120 (n3), 180 (n4).
        let mut running = Vec::new();
        for (mins, on) in [(1, "n1"), (4, "n2"), (2, "n3"), (3, "n4")] {
            let mut d = wide(1);
            d.time_limit = Some(model::TimeLimit::Minutes(mins));
            let id = submit(&mut e, d, 0);
            assert_eq!(nodes(&e, id), vec![on]);
            running.push((id, on, i64::from(mins) * 60));
        }
        let mut d = wide(2);
        d.time_limit = Some(model::TimeLimit::Minutes(10));
        d.switches = switches;
        d.switch_wait = Some(3600);
        let w = submit(&mut e, d, 0);
        let info = |e: &Engine, now| {
            let l = e.job_list(now);
            let j = l.jobs.into_iter().find(|j| j.job_id == w).unwrap();
            let mut on = j.sched_nodes;
            on.sort();
            (j.start_time, on)
        };
        let first = info(&e, 0);
        assert_eq!(
            first,
            (Some(want_start), want_nodes.map(String::from).to_vec()),
            "{switches:?}"
        );
        // The running jobs end at their limits, in time order.
        running.sort_by_key(|r| r.2);
        for (id, on, end) in running {
            if e.jobs[&w].state == JobState::Running {
                break;
            }
            e.on_job_exited(id, on, model::ExitCode::default(), None, end)
                .unwrap();
            e.schedule(end);
            assert_invariants(&e);
            if e.jobs[&w].state == JobState::Pending {
                assert!(end < want_start, "{switches:?}: still waits at {end}");
                assert_eq!(
                    info(&e, end),
                    first,
                    "{switches:?}: the plan holds at {end}"
                );
            }
        }
        assert_eq!(e.jobs[&w].state, JobState::Running, "{switches:?}");
        assert_eq!(e.jobs[&w].start_time, Some(want_start), "{switches:?}");
        assert_eq!(nodes(&e, w), want_nodes.to_vec(), "{switches:?}");
    }
}
