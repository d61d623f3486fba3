use super::*;

fn parse(text: &str) -> Result<(TopologyConf, Vec<Warning>), ConfError> {
    parse_topology_conf(text, Path::new("/etc/slurm/topology.conf"))
}

#[test]
fn a_tree_of_switches() {
    let (topo, warnings) = parse(
        "# leaf switches\n\
         SwitchName=s0 Nodes=tux[0-3] LinkSpeed=100\n\
         SwitchName=s1 Nodes=tux[4-7]\n\
         SwitchName=s2 Switches=s[0-1]\n",
    )
    .unwrap();
    assert!(warnings.is_empty());
    assert_eq!(topo.switches.len(), 3);
    assert_eq!(topo.switches[0].link_speed, Some(100));
    assert_eq!(topo.switches[0].line, 2);
    assert_eq!(topo.switches[2].switches, vec!["s0", "s1"]);
    assert_eq!(topo.node_names().len(), 8);
}

#[test]
fn blocks_and_their_sizes() {
    let (topo, _) =
        parse("BlockName=b0 Nodes=n[0-7]\nBlockName=b1 Nodes=n[8-15]\nBlockSizes=8,16\n").unwrap();
    assert_eq!(topo.blocks.len(), 2);
    assert_eq!(topo.block_sizes, vec![8, 16]);
}

#[test]
fn mistakes_are_errors_at_their_line() {
    let err = |text: &str| parse(text).unwrap_err().to_string();
    assert_eq!(
        err("SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=s[0-2]\n"),
        "/etc/slurm/topology.conf:2: invalid value \"s2\" for Switches: no such switch in this file"
    );
    assert_eq!(
        err("\nNodeName=n1\n"),
        "/etc/slurm/topology.conf:2: expected a SwitchName=, BlockName= or BlockSizes= line, not NodeName="
    );
    assert_eq!(
        err("SwitchName=s0\n"),
        "/etc/slurm/topology.conf:1: switch s0 has neither Switches= nor Nodes="
    );
    assert!(err("SwitchName=s0 Nodes=n[1-\n")
        .contains(":1: invalid value \"n[1-\" for Nodes: bad hostlist"));
    assert!(err("SwitchName=s0 Nodes=n1 LinkSpeed=fast\n")
        .contains("for LinkSpeed: expected a whole number"));
    assert!(err("SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n")
        .contains(":2: invalid value \"s0\" for SwitchName: switch defined twice"));
    assert!(err("BlockSizes=8,x\n").contains("for BlockSizes"));
    assert!(err("SwitchName=s0 Nodes=n1\nBlockName=b0 Nodes=n2\n")
        .contains(":2: switch lines and block lines mixed"));
}

#[test]
fn unknown_keys_and_nodes_are_warnings() {
    let (topo, warnings) = parse("SwitchName=s0 Nodes=n[1-3] Speed=1\n").unwrap();
    assert_eq!(warnings.len(), 1);
    assert_eq!(
        warnings[0].to_string(),
        "/etc/slurm/topology.conf:1: unknown key Speed"
    );
    let known: BTreeSet<&str> = ["n1", "n2"].into_iter().collect();
    let w = check_topology_nodes(&topo, &known, Path::new("topology.conf"));
    assert_eq!(w.len(), 1);
    assert_eq!(
        w[0].to_string(),
        "topology.conf:1: node n3 not in slurm.conf"
    );
}

#[test]
fn topology_addresses_of_nodes() {
    let mut cfg = crate::parse_str(
        "ClusterName=c\nSlurmctldHost=h\nTopologyPlugin=topology/tree\nNodeName=n[1-5]\n",
        Path::new("/etc/slurm/slurm.conf"),
        &mut |_| Err(std::io::Error::other("no includes")),
    )
    .unwrap()
    .config;
    assert_eq!(cfg.topology_plugin(), Some("topology/tree"));
    // Without topology.conf read: the node alone.
    assert_eq!(cfg.topology_addr("n1"), ("n1".into(), "node".into()));
    cfg.topology = Some(
        parse("SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n")
            .unwrap()
            .0,
    );
    assert_eq!(
        cfg.topology_addr("n3"),
        ("top.s1.n3".into(), "switch.switch.node".into())
    );
    assert_eq!(cfg.topology_addr("n5"), ("n5".into(), "node".into()));
    let (blocks, _) = parse("BlockName=b0 Nodes=n[1-4]\n").unwrap();
    assert!(check_kind(&blocks, "topology/tree", Path::new("t.conf")).is_err());
    assert!(check_kind(&blocks, "topology/block", Path::new("t.conf")).is_ok());
}

#[test]
fn block_sizes_follow_the_man_page() {
    let err = |text: &str| parse(text).unwrap_err().to_string();
    // Successive sizes a power of two times the one before.
    assert!(err("BlockName=b0 Nodes=n[0-7]\nBlockSizes=8,24\n")
        .contains(":2: invalid value \"8,24\" for BlockSizes: each size must be the one before it times a power of two"));
    assert!(err("BlockName=b0 Nodes=n[0-7]\nBlockSizes=8,8\n").contains("for BlockSizes"));
    // Every block at least the base block size.
    assert_eq!(
        err("BlockName=b0 Nodes=n[0-7]\nBlockName=b1 Nodes=n[8-13]\nBlockSizes=8,16\n"),
        "/etc/slurm/topology.conf:2: block b1 has 6 nodes, fewer than the base block size 8 (BlockSizes= at line 3)"
    );
    // The man page's example: blocks of 32, planned as 30 and 120.
    let (topo, _) = parse(
        "BlockName=block1 Nodes=node[1-32]\nBlockName=block2 Nodes=node[33-64]\n\
         BlockName=block3 Nodes=node[65-96]\nBlockName=block4 Nodes=node[97-128]\n\
         BlockSizes=30,120\n",
    )
    .unwrap();
    assert_eq!(topo.block_sizes, vec![30, 120]);
}

#[test]
fn nodes_under_no_switch_are_warned_as_slurm_does() {
    let (topo, _) = parse("\nSwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n4\n").unwrap();
    let w =
        check_unreached_nodes(&topo, &["n1", "n2", "n3", "n4", "n5"], Path::new("t.conf")).unwrap();
    assert_eq!(w.line, 2);
    assert_eq!(w.message, "switches lack access to 2 nodes: n[3,5]");
    assert!(check_unreached_nodes(&topo, &["n1", "n4"], Path::new("t.conf")).is_none());
    let (blocks, _) = parse("BlockName=b0 Nodes=n1\n").unwrap();
    assert!(check_unreached_nodes(&blocks, &["n1", "n2"], Path::new("t.conf")).is_none());
}
