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
