//! Golden tests: sinfo's rendering against what Slurm 22.05 printed
//! (`/work/shared/reference/slurm-22.05/sinfo*.out`, see its INDEX.md),
//! copied to `tests/golden/sinfo*.txt`.
//!
//! The cluster mirrors the capture: node1-4 with 2 CPUs and 4000 MB, node3
//! and node4 with `gpu:a100:2`; partitions `debug` (default, node[1-4]) and
//! `gpu` (node[3-4]).

use cli::sinfo::{self, Parsed, SinfoArgs};
use model::{Gres, NodeBase, NodeState, TimeLimit, Timestamp};
use proto::{NodeInfo, PartitionInfo};

/// `Wed Dec 02 10:24:12 2026` UTC, when the capture ran.
const NOW: Timestamp = 1_796_207_052;

/// 2026-12-02 10:MM:SS UTC.
fn at(min: i64, sec: i64) -> Timestamp {
    NOW - (24 * 60 + 12) + min * 60 + sec
}

fn utc() {
    // Slurm printed the capture in UTC; the renderers use local time.
    std::env::set_var("TZ", "UTC");
}

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn args(words: &[&str]) -> SinfoArgs {
    let words: Vec<String> = words.iter().map(|s| s.to_string()).collect();
    match sinfo::parse_args(&words).expect("valid sinfo arguments") {
        Parsed::Run(a) => a,
        other => panic!("unexpected {other:?}"),
    }
}

fn partition(name: &str, default: bool, nodes: &[&str], tres: &str) -> PartitionInfo {
    PartitionInfo {
        name: name.into(),
        default,
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        state: "UP".into(),
        max_time: TimeLimit::Unlimited,
        default_time: None,
        max_nodes: None,
        min_nodes: 0,
        priority_tier: 1,
        priority_job_factor: 1,
        oversubscribe: "NO".into(),
        allow_accounts: None,
        allow_groups: None,
        def_mem_per_cpu: None,
        max_mem_per_node: None,
        total_cpus: 2 * nodes.len() as u32,
        total_nodes: nodes.len() as u32,
        tres: tres.into(),
        access: Vec::new(),
    }
}

/// The capture's partitions, in slurm.conf order.
fn parts() -> Vec<PartitionInfo> {
    vec![
        partition(
            "debug",
            true,
            &["node1", "node2", "node3", "node4"],
            "cpu=8,mem=16000M,node=4,billing=8,gres/gpu=4",
        ),
        partition(
            "gpu",
            false,
            &["node3", "node4"],
            "cpu=4,mem=8000M,node=2,billing=4,gres/gpu=4",
        ),
    ]
}

fn node(i: u32, base: NodeBase, alloc_cpus: u32, alloc_mem: u64) -> NodeInfo {
    let name = format!("node{i}");
    let gpu = i >= 3;
    NodeInfo {
        name: name.clone(),
        addr: format!("10.201.0.{}", 10 + i),
        hostname: name,
        port: 6818,
        state: NodeState::new(base),
        cpus: 2,
        boards: 1,
        sockets: 2,
        cores_per_socket: 1,
        threads_per_core: 1,
        real_memory: 4000,
        tmp_disk: 0,
        weight: 1,
        alloc_cpus,
        alloc_mem,
        free_mem: Some(22885),
        cpu_load: Some(0.44),
        gres: if gpu {
            vec![Gres::parse("gpu:a100:2").unwrap()]
        } else {
            Vec::new()
        },
        gres_used: Vec::new(),
        features: Vec::new(),
        partitions: if gpu {
            vec!["debug".into(), "gpu".into()]
        } else {
            vec!["debug".into()]
        },
        reason: None,
        reason_user: None,
        reason_time: None,
        boot_time: Some(at(-81, -12)),
        slurmd_start_time: Some(at(3, 34)),
        last_busy: Some(at(23, 56)),
        version: Some("22.05.8".into()),
        os: Some("Linux 6.18.44-fc-v1098 #1 SMP PREEMPT_DYNAMIC @0".into()),
        arch: Some("x86_64".into()),
        resv: 0,
        reboot_issued: false,
        next_state: None,
    }
}

/// node4 runs the 1-CPU GPU job (mixed); node1-3 are fully allocated.
fn busy_nodes() -> Vec<NodeInfo> {
    let mut node4 = node(4, NodeBase::Mixed, 1, 500);
    node4.gres_used = vec![Gres::parse("gpu:a100:2").unwrap()];
    vec![
        node(1, NodeBase::Allocated, 2, 1000),
        node(2, NodeBase::Allocated, 2, 1000),
        node(3, NodeBase::Allocated, 2, 1000),
        node4,
    ]
}

/// An idle node in an active reservation reads `resv` (`reserved` in
/// long form), in a MAINT one `maint`; a busy one keeps its state. muster
/// shows them from the reservation's start (Slurm 22.05 flags the nodes at
/// its next periodic reservation check, so it may print `idle` for a few
/// seconds after a MAINT window began).
#[test]
fn reserved_and_maint_nodes() {
    let mut nodes = vec![
        node(1, NodeBase::Idle, 0, 0),
        node(2, NodeBase::Idle, 0, 0),
        node(3, NodeBase::Idle, 0, 0),
        node(4, NodeBase::Mixed, 1, 500),
    ];
    nodes[0].resv = 1;
    nodes[1].resv = 2;
    nodes[3].resv = 2;
    assert_eq!(
        sinfo::render(&args(&[]), &parts(), &nodes, NOW),
        golden("sinfo_resv_maint")
    );
    assert_eq!(
        sinfo::render(&args(&["-h", "-N", "-o", "%N %T %t"]), &parts(), &nodes, NOW),
        "node1 reserved resv\nnode2 maint maint\nnode3 idle idle\nnode3 idle idle\nnode4 mixed mix\nnode4 mixed mix\n"
    );
}

fn drain(node: &mut NodeInfo) {
    node.state.drain = true;
    node.reason = Some("anchor maintenance test".into());
    node.reason_user = Some("root".into());
    node.reason_time = Some(at(24, 13));
}

/// After `scontrol update nodename=node4 state=drain reason="anchor maintenance test"`.
fn drained_nodes() -> Vec<NodeInfo> {
    let mut nodes = busy_nodes();
    drain(&mut nodes[3]);
    nodes
}

/// Nodes waiting for (`@`, `boot`) and in (`^`) a reboot, with sinfo(1)'s
/// NODE STATE CODES (no capture of a reboot in `reference/`).
#[test]
fn reboot_states_and_suffixes() {
    let mut nodes = busy_nodes();
    // node1: `scontrol reboot ASAP` while busy; node2: a plain reboot
    // while busy; node3: idle, waiting; node4: told to reboot.
    nodes[0].state.drain = true;
    nodes[0].state.reboot = true;
    nodes[1] = node(2, NodeBase::Mixed, 1, 500);
    nodes[1].state.reboot = true;
    nodes[2] = node(3, NodeBase::Idle, 0, 0);
    nodes[2].state.reboot = true;
    nodes[3] = node(4, NodeBase::Down, 0, 0);
    nodes[3].state.reboot_issued = true;
    assert_eq!(
        sinfo::render(&args(&[]), &parts(), &nodes, NOW),
        golden("sinfo_reboot")
    );
    let long = sinfo::render(&args(&["-h", "-N", "-o", "%N %T"]), &parts(), &nodes, NOW);
    assert!(long.contains("node4 reboot^\n"), "{long}");
    assert!(long.contains("node1 draining@\n"), "{long}");
}

#[test]
fn default_groups_by_partition_then_decreasing_state() {
    assert_eq!(
        sinfo::render(&args(&[]), &parts(), &busy_nodes(), NOW),
        golden("sinfo")
    );
}

#[test]
fn summarize_counts_allocated_idle_other_total() {
    assert_eq!(
        sinfo::render(&args(&["-s"]), &parts(), &busy_nodes(), NOW),
        golden("sinfo_s")
    );
}

#[test]
fn node_long_prints_banner_and_one_line_per_node_and_partition() {
    utc();
    assert_eq!(
        sinfo::render(&args(&["-N", "-l"]), &parts(), &busy_nodes(), NOW),
        golden("sinfo_N_l")
    );
}

/// Slurm 22.05 collects a node's partitions for `-N` in no fixed order
/// (one thread per partition), so captures of the same cluster list node3's
/// partitions as debug,gpu (`sinfo_N_l`) or gpu,debug (`sinfo_Nel_gres`).
/// muster keeps the order the controller lists partitions in; these
/// fixtures hand them over reversed to reproduce the captured text.
fn parts_reversed() -> Vec<PartitionInfo> {
    let mut p = parts();
    p.reverse();
    p
}

#[test]
fn node_format_with_gres() {
    let a = args(&["-N", "-o", "%N %c %m %G %T %P"]);
    assert_eq!(
        sinfo::render(&a, &parts_reversed(), &busy_nodes(), NOW),
        golden("sinfo_Nel_gres")
    );
}

#[test]
fn issue_35_node_oriented_lists_a_node_once_per_partition_in_any_format() {
    // Real sinfo 22.05 (node1 and node2 in partitions debug and other):
    // `sinfo -N -o "%N %t"` and `sinfo -N -h -o %N` print each such node
    // twice, as `sinfo -N -l` does.
    let a = args(&["-N", "-h", "-o", "%N"]);
    assert_eq!(
        sinfo::render(&a, &parts(), &busy_nodes(), NOW),
        "node1\nnode2\nnode3\nnode3\nnode4\nnode4\n"
    );
}

#[test]
fn node_long_after_drain_and_down() {
    utc();
    let mut nodes = drained_nodes();
    // ReturnToService=2 had already brought node2 back; its job and node3's had ended.
    nodes[1] = node(2, NodeBase::Idle, 0, 0);
    nodes[2] = node(3, NodeBase::Idle, 0, 0);
    let text = sinfo::render(&args(&["-N", "-l"]), &parts_reversed(), &nodes, at(24, 15));
    assert_eq!(text, golden("sinfo_N_l_drain_down"));
}

#[test]
fn list_reasons_shows_drained_nodes_only() {
    utc();
    assert_eq!(
        sinfo::render(&args(&["-R"]), &parts(), &drained_nodes(), NOW),
        golden("sinfo_R_drain")
    );
}

#[test]
fn draining_node_sorts_before_allocated() {
    assert_eq!(
        sinfo::render(&args(&[]), &parts(), &drained_nodes(), NOW),
        golden("sinfo_with_drain")
    );
}

#[test]
fn partition_format_codes() {
    let a = args(&[
        "-h",
        "-o",
        "%P|%R|%a|%l|%D|%t|%T|%N|%c|%C|%m|%G|%F|%z|%w|%E",
    ]);
    assert_eq!(
        sinfo::render(&a, &parts(), &drained_nodes(), NOW),
        "debug*|debug|up|infinite|1|drng|draining|node4|2|1/0/1/2|4000|gpu:a100:2|0/0/1/1|2:1:1|1|anchor maintenance test\n\
         debug*|debug|up|infinite|2|alloc|allocated|node[1-2]|2|4/0/0/4|4000|(null)|2/0/0/2|2:1:1|1|none\n\
         debug*|debug|up|infinite|1|alloc|allocated|node3|2|2/0/0/2|4000|gpu:a100:2|1/0/0/1|2:1:1|1|none\n\
         gpu|gpu|up|infinite|1|drng|draining|node4|2|1/0/1/2|4000|gpu:a100:2|0/0/1/1|2:1:1|1|anchor maintenance test\n\
         gpu|gpu|up|infinite|1|alloc|allocated|node3|2|2/0/0/2|4000|gpu:a100:2|1/0/0/1|2:1:1|1|none\n"
    );
}

#[test]
fn partition_only_format_lists_each_partition_once() {
    assert_eq!(
        sinfo::render(&args(&["-o", "%P"]), &parts(), &busy_nodes(), NOW),
        "PARTITION\ndebug*\ngpu\n"
    );
    assert_eq!(
        sinfo::render(&args(&["-aho", "%F/%C"]), &parts(), &busy_nodes(), NOW),
        "4/0/0/4/7/1/0/8\n"
    );
}

#[test]
fn long_format_names_and_widths() {
    let a = args(&[
        "-N",
        "-h",
        "-O",
        "nodehost:8,gres:12,statelong:.10,CPUsState",
    ]);
    let text = sinfo::render(&a, &parts(), &busy_nodes(), NOW);
    let first = text.lines().next().unwrap();
    // -O fields have no separator: each is padded to its width (20 by default).
    assert_eq!(first, "node1   (null)       allocated2/0/0/2             ");
}

#[test]
fn state_and_partition_filters() {
    let text = sinfo::render(
        &args(&["-p", "gpu", "-t", "mix"]),
        &parts(),
        &busy_nodes(),
        NOW,
    );
    assert_eq!(
        text,
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n\
         gpu          up   infinite      1    mix node4\n"
    );
    let text = sinfo::render(
        &args(&["-h", "-n", "node[1-2]", "-o", "%N"]),
        &parts(),
        &busy_nodes(),
        NOW,
    );
    assert_eq!(text, "node[1-2]\n");
    let text = sinfo::render(&args(&["-h", "-t", "drain"]), &parts(), &busy_nodes(), NOW);
    assert_eq!(text, "");
}

#[test]
fn long_partition_format() {
    utc();
    let text = sinfo::render(&args(&["-l"]), &parts(), &busy_nodes(), NOW);
    assert_eq!(
        text,
        "Wed Dec 02 10:24:12 2026\n\
         PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST\n\
         debug*       up   infinite 1-infinite   no       NO        all      1       mixed node4\n\
         debug*       up   infinite 1-infinite   no       NO        all      3   allocated node[1-3]\n\
         gpu          up   infinite 1-infinite   no       NO        all      1       mixed node4\n\
         gpu          up   infinite 1-infinite   no       NO        all      1   allocated node3\n"
    );
}

#[test]
fn json_lists_nodes_and_partitions() {
    let text = sinfo::render(&args(&["--json"]), &parts(), &busy_nodes(), NOW);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(v["nodes"][3]["state"], "mixed");
    assert_eq!(v["partitions"][0]["name"], "debug");
    assert_eq!(v["partitions"][0]["flags"][0], "default");
}

#[test]
fn bad_state_is_refused() {
    let words = vec!["-t".to_string(), "bogus".to_string()];
    assert_eq!(
        sinfo::parse_args(&words),
        Err(sinfo::ArgsError::InvalidState("bogus".into()))
    );
}
