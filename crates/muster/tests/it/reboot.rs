//! `scontrol reboot` and `cancel_reboot` with real daemons. A virtual node
//! "reboots" as the harness plays it: its RebootProgram (a script in the
//! cluster's directory) leaves a marker file, and the test then starts the
//! node daemon again with a new boot id (`Cluster::reboot_node`).

use crate::{builder, secs};
use e2e::Cluster;
use std::os::unix::fs::PermissionsExt;

/// Leaves `work/rebooted-NODE` (one line per reboot) where the test sees it.
const REBOOT_SCRIPT: &str = "#!/bin/sh\n\
    echo rebooted >> \"$(dirname \"$0\")/work/rebooted-$SLURMD_NODENAME\"\n";

/// A cluster of `n` nodes whose RebootProgram is [`REBOOT_SCRIPT`].
fn reboot_cluster(n: u32, resume_timeout: u32) -> Cluster {
    let c = builder()
        .nodes(n)
        .file("reboot.sh", REBOOT_SCRIPT)
        .conf_extra(&format!(
            "RebootProgram={{root}}/reboot.sh\nResumeTimeout={resume_timeout}"
        ))
        .start();
    let script = c.root().join("reboot.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
        .expect("making the reboot script executable");
    c
}

fn quiet_ok(c: &Cluster, args: &[&str]) {
    let out = c.run("scontrol", args);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "scontrol {args:?}: {out}"
    );
}

fn show_node(c: &Cluster, name: &str) -> String {
    c.ok("scontrol", &["show", "node", name]).stdout
}

/// How many times the controller's log says `name` registered.
fn registrations(c: &Cluster, name: &str) -> usize {
    c.log("ctld")
        .matches(&format!("node {name} registered"))
        .count()
}

#[test]
fn an_idle_node_reboots_and_comes_back_idle() {
    let mut c = reboot_cluster(2, 300);
    quiet_ok(
        &c,
        &["reboot", "nextstate=resume", "reason=new bios", "node1"],
    );
    // Idle: issued at once, and DOWN while it boots.
    c.wait_node_state("node1", "boot^", secs(20));
    assert_eq!(c.node_state("node2"), "idle");
    let show = show_node(&c, "node1");
    assert!(show.contains("   State=DOWN+REBOOT_ISSUED "), "{show}");
    assert!(show.contains("\n   NextState=RESUME\n"), "{show}");
    assert!(show.contains("Reason=new bios : reboot issued ["), "{show}");
    let long = c
        .ok("sinfo", &["-h", "-N", "-n", "node1", "-o", "%T"])
        .stdout;
    assert_eq!(long, "reboot^\n");
    assert_eq!(c.wait_file("rebooted-node1", secs(20)), "rebooted\n");

    // An issued reboot cannot be cancelled.
    let out = c.run("scontrol", &["cancel_reboot", "node1"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "slurm_update error: Reboot already in progress\n"),
        "{out}"
    );

    // The daemon starting again on the same boot is not the host back.
    let before = registrations(&c, "node1");
    c.start_node_with("node1", &[]);
    c.wait_until("node1 to register again", secs(30), || {
        (registrations(&c, "node1") > before).then_some(())
    });
    assert_eq!(c.node_state("node1"), "boot^");

    // A new boot id is.
    c.reboot_node("node1", "e2e-boot-2");
    c.wait_node_state("node1", "idle", secs(30));
    let show = show_node(&c, "node1");
    assert!(show.contains("   State=IDLE "), "{show}");
    assert!(!show.contains("NextState="), "{show}");
    assert!(!show.contains("Reason="), "{show}");
    let id = c.submit(&["-w", "node1", "--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
}

#[test]
fn reboot_asap_drains_waits_for_the_job_and_survives_a_controller_restart() {
    let mut c = reboot_cluster(1, 300);
    let job = c.submit(&["-c", "2", "--wrap", "while [ ! -e go ]; do sleep 0.2; done"]);
    c.wait_state(job, "RUNNING", secs(20));
    quiet_ok(&c, &["reboot", "ASAP", "node1"]);
    assert_eq!(c.node_state("node1"), "drng@");
    let show = show_node(&c, "node1");
    assert!(
        show.contains("   State=ALLOCATED+DRAIN+REBOOT_REQUESTED "),
        "{show}"
    );
    assert!(show.contains("Reason=Reboot ASAP ["), "{show}");
    // Drained: a new job waits.
    let next = c.submit(&["--wrap", "true"]);
    c.wait_for(next, secs(10), |s| s == "PENDING");

    // The request is durable.
    c.kill_ctld();
    c.restart_ctld();
    assert_eq!(c.node_state("node1"), "drng@");
    assert!(show_node(&c, "node1").contains("Reason=Reboot ASAP ["));
    assert_eq!(c.job_state(job), "RUNNING");
    assert_eq!(c.job_state(next), "PENDING");

    // Once the job ends the node reboots.
    c.write("go", "");
    assert_eq!(c.wait_done(job, secs(20)), "COMPLETED");
    c.wait_node_state("node1", "boot^", secs(20));
    let show = show_node(&c, "node1");
    assert!(
        show.contains("   State=DOWN+DRAIN+REBOOT_ISSUED "),
        "{show}"
    );
    assert!(
        show.contains("Reason=Reboot ASAP : reboot issued ["),
        "{show}"
    );
    c.wait_file("rebooted-node1", secs(20));
    assert_eq!(c.job_state(next), "PENDING");
    c.reboot_node("node1", "e2e-boot-2");
    // ASAP: back without its DRAIN and reason; the waiting job runs.
    assert_eq!(c.wait_done(next, secs(30)), "COMPLETED");
    c.wait_node_state("node1", "idle", secs(10));
    assert!(!show_node(&c, "node1").contains("Reason="));
}

#[test]
fn a_node_that_does_not_come_back_goes_down_after_resume_timeout() {
    let c = reboot_cluster(1, 3);
    quiet_ok(&c, &["reboot", "node1"]);
    c.wait_file("rebooted-node1", secs(20));
    // Its daemon never comes back with a new boot id.
    c.wait_node_state("node1", "down", secs(30));
    let show = show_node(&c, "node1");
    assert!(show.contains("Reason=reboot timed out ["), "{show}");
    assert!(show.contains("   State=DOWN "), "{show}");
    let r = c.ok("sinfo", &["-h", "-R", "-o", "%E|%N"]).stdout;
    assert_eq!(r, "reboot timed out|node1\n");
}

#[test]
fn cancel_reboot_forgets_a_pending_reboot() {
    let c = reboot_cluster(1, 300);
    let job = c.submit(&["-c", "2", "--wrap", "while [ ! -e go ]; do sleep 0.2; done"]);
    c.wait_state(job, "RUNNING", secs(20));
    // Without ASAP the busy node only waits for its reboot: `@`.
    quiet_ok(&c, &["reboot", "node1"]);
    assert_eq!(c.node_state("node1"), "alloc@");
    quiet_ok(&c, &["cancel_reboot", "node1"]);
    assert_eq!(c.node_state("node1"), "alloc");
    // ASAP's DRAIN and reason go with it.
    quiet_ok(&c, &["reboot", "asap", "node1"]);
    assert_eq!(c.node_state("node1"), "drng@");
    quiet_ok(&c, &["cancel_reboot", "node1"]);
    assert_eq!(c.node_state("node1"), "alloc");
    assert!(!show_node(&c, "node1").contains("Reason="));
    c.write("go", "");
    assert_eq!(c.wait_done(job, secs(20)), "COMPLETED");
    c.wait_node_state("node1", "idle", secs(10));
    assert!(!c.work().join("rebooted-node1").exists());
    // Refusals.
    let out = c.run("scontrol", &["reboot", "asap"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "Missing node list. Specify ALL|<NodeList>\n"),
        "{out}"
    );
}
