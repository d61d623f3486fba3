//! Topology-aware placement with real daemons (issue 43): a two-node job
//! on a cluster of two leaf switches lands under one, `--switches=1`
//! waits with reason Resources until a leaf is whole and then runs there,
//! `scontrol show topology`, and `SLURM_TOPOLOGY_ADDR` in the job.

use crate::{builder, secs};

/// A job that runs until the file `name` appears in the work directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {name} ]; do sleep 0.1; done")
}

const TOPOLOGY: &str = "SwitchName=s0 Nodes=node[1-2]\n\
                        SwitchName=s1 Nodes=node[3-4] LinkSpeed=100\n\
                        SwitchName=top Switches=s[0-1]\n";

#[test]
fn jobs_land_under_one_leaf_and_switches_waits() {
    let c = builder()
        .nodes(4)
        .conf_extra("TopologyPlugin=topology/tree")
        .file("topology.conf", TOPOLOGY)
        .start();
    assert_eq!(
        c.ok("scontrol", &["show", "topology"]).stdout,
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=node[1-2] \n\
         SwitchName=s1 Level=0 LinkSpeed=100 Nodes=node[3-4] \n\
         SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=s[0-1] \n"
    );
    assert_eq!(
        c.ok("scontrol", &["show", "topology", "node2"]).stdout,
        "SwitchName=s0 Level=0 LinkSpeed=1 Nodes=node[1-2] \n\
         SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=s[0-1] \n"
    );

    // node1 busy: index order would give the next two-node job node2 and
    // node3, one per leaf; the topology gives it node3 and node4.
    let a = c.submit(&["-N1", "--exclusive", "-w", "node1", "--wrap", &gate("go-a")]);
    c.wait_state(a, "RUNNING", secs(20));
    let b = c.submit(&[
        "-N2",
        "--exclusive",
        "--wrap",
        "echo $SLURM_TOPOLOGY_ADDR $SLURM_TOPOLOGY_ADDR_PATTERN",
    ]);
    assert_eq!(c.wait_done(b, secs(30)), "COMPLETED");
    assert_eq!(c.job_field(b, "NodeList"), "node[3-4]");
    let out = c.read(&format!("slurm-{b}.out"));
    assert_eq!(out, "top.s1.node3 switch.switch.node\n");

    // node1 and node3 busy: a two-node job held to one leaf waits
    // (Resources) though two nodes are free, and runs once node1's job
    // ends, under s0.
    let d = c.submit(&["-N1", "--exclusive", "-w", "node3", "--wrap", &gate("go-d")]);
    c.wait_state(d, "RUNNING", secs(20));
    let e = c.submit(&["-N2", "--exclusive", "--switches=1@10:00", "--wrap", "true"]);
    c.wait_until("job e waits for one leaf", secs(20), || {
        (c.squeue_field(e, "%T %r") == "PENDING Resources").then_some(())
    });
    let why = c.ok("explain", &[&e.to_string()]).stdout;
    assert!(why.contains("at most 1 leaf switch"), "{why}");
    c.write("go-a", "");
    assert_eq!(c.wait_done(a, secs(20)), "COMPLETED");
    assert_eq!(c.wait_done(e, secs(30)), "COMPLETED");
    assert_eq!(c.job_field(e, "NodeList"), "node[1-2]");
    c.write("go-d", "");
    assert_eq!(c.wait_done(d, secs(20)), "COMPLETED");
}

/// Beyond Slurm: each node daemon runs the site's `MusterTopologyProbe`
/// script at start and sends the switches it names with its registration;
/// `muster check-config --fabric` compares them with topology.conf. Here
/// node3's script names the wrong leaf: the warning names the node and
/// both switches.
#[test]
fn check_config_fabric_warns_where_a_node_reports_another_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    std::fs::write(
        &probe,
        "#!/bin/sh\n\
         case \"$SLURMD_NODENAME\" in\n\
           node1|node2|node3) echo s0 top ;;\n\
           *) echo s1 top ;;\n\
         esac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let c = builder()
        .nodes(4)
        .conf_extra(&format!(
            "TopologyPlugin=topology/tree\nMusterTopologyProbe={}\n",
            probe.display()
        ))
        .file("topology.conf", TOPOLOGY)
        .start();
    let conf = c.conf().display().to_string();
    let out = c.run("check-config", &["-f", &conf, "--fabric"]);
    assert_eq!(out.code, 0, "{out}");
    let warnings: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("topology.conf"))
        .collect();
    assert_eq!(
        warnings,
        vec![
            "topology.conf:2: warning: node node3 reports leaf switch s0 (MusterTopologyProbe), \
             but topology.conf puts it under s1"
        ],
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("fabric: 4 nodes (node[1-4]) reported, 4 naming a leaf switch"),
        "{}",
        out.stdout
    );
    // Without --fabric the controller is not asked.
    let plain = c.run("check-config", &["-f", &conf]);
    assert!(!plain.stdout.contains("node3"), "{}", plain.stdout);
}

/// `scontrol show topology` for a name it does not know, and with no
/// topology plugin: Slurm's error on stderr, exit status 0.
#[test]
fn show_topology_unknown_name_and_no_plugin() {
    let c = builder()
        .nodes(2)
        .conf_extra("TopologyPlugin=topology/tree")
        .file("topology.conf", "SwitchName=s0 Nodes=node[1-2]\n")
        .start();
    let out = c.run("scontrol", &["show", "topology", "nosuch"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "scontrol: error: Topology information contains no switch or node named nosuch\n"
    );
    drop(c);
    let plain = builder().nodes(1).start();
    let out = plain.run("scontrol", &["show", "topology"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stderr,
        "scontrol: error: No topology information available\n"
    );
}
