//! GPU Xid quarantine (issue 39 item 6, beyond Slurm): the node daemon
//! follows the kernel log (here a file standing for it, named by
//! `HealthCheckParameters=xid_source=`), and a fatal Xid drains the node
//! `GPU Xid N`, requeues the job that ran there and keeps it off the node
//! (`ExcNodeList`). Fake GPUs, as in `gpus.rs`.

use crate::secs;
use e2e::Cluster;
use std::io::Write;
use std::path::Path;

/// A recorded `/dev/kmsg` record of a GPU falling off the bus.
const XID_79: &str = "3,2291,8812093312,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1876, \
                      name=python3, GPU has fallen off the bus.\n";

/// Two nodes with a fake GPU each; each node's daemon follows its own
/// `kmsg-<node>` file in `logs`.
fn cluster(logs: &Path, dev: &Path, extra: &str) -> Cluster {
    std::fs::write(dev.join("nvidia0"), "").unwrap();
    for n in ["node1", "node2"] {
        std::fs::write(logs.join(format!("kmsg-{n}")), "boot\n").unwrap();
    }
    let c = crate::builder()
        .nodes(2)
        .node_extra(1, "Gres=gpu:fake:1")
        .node_extra(2, "Gres=gpu:fake:1")
        .file(
            "gres.conf",
            &format!("Name=gpu Type=fake File={}/nvidia0\n", dev.display()),
        )
        .conf_extra(&format!(
            "HealthCheckParameters=drain_on_failure,xid_source={}/kmsg-%n\n{extra}",
            logs.display()
        ))
        .start();
    for n in ["node1", "node2"] {
        c.wait_until("the Xid watcher following its file", secs(20), || {
            c.log(&format!("noded-{n}"))
                .contains("GPU Xid watcher: following")
                .then_some(())
        });
    }
    c
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// The node's `Reason=` without its `[user@time]`.
fn reason(c: &Cluster, node: &str) -> String {
    let out = c.run("scontrol", &["show", "node", node]);
    out.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Reason="))
        .map(|r| r.split(" [").next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// `ExcNodeList=` of `scontrol show job`.
fn exc_nodes(c: &Cluster, id: u32) -> String {
    let out = c.run("scontrol", &["show", "job", &id.to_string()]);
    out.stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix("ExcNodeList="))
        .unwrap_or("")
        .to_string()
}

#[test]
fn issue_39_a_fatal_xid_drains_the_node_and_requeues_the_job_elsewhere() {
    let logs = tempfile::tempdir().unwrap();
    let dev = tempfile::tempdir().unwrap();
    let c = cluster(logs.path(), dev.path(), "");
    let id = c.submit(&["--requeue", "--gres=gpu:1", "--wrap", "sleep 300"]);
    c.wait_state(id, "RUNNING", secs(20));
    let first = c.squeue_field(id, "%N");
    let other = if first == "node1" { "node2" } else { "node1" };
    // A non-fatal Xid (an application's fault) changes nothing.
    append(
        &logs.path().join(format!("kmsg-{first}")),
        "4,2290,8812000000,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=1876, \
         name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0)\n",
    );
    c.wait_until("the non-fatal Xid seen", secs(20), || {
        c.log(&format!("noded-{first}"))
            .contains("GPU Xid 13 on PCI 0000:3b:00: not fatal")
            .then_some(())
    });
    assert_eq!(reason(&c, &first), "");
    assert_eq!(c.squeue_field(id, "%T"), "RUNNING");
    append(&logs.path().join(format!("kmsg-{first}")), XID_79);
    c.wait_until("the node drained", secs(20), || {
        (reason(&c, &first) == "GPU Xid 79").then_some(())
    });
    // Requeued, and running again on the other node.
    c.wait_until("the job running on the other node", secs(30), || {
        (c.squeue_field(id, "%T|%N") == format!("RUNNING|{other}")).then_some(())
    });
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(exc_nodes(&c, id), first);
    // The quarantined node stays drained (its GPU is gone) once idle.
    c.wait_until("the first node drained and idle", secs(20), || {
        (c.node_state(&first) == "drain").then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
    c.wait_done(id, secs(20));
}

#[test]
fn issue_39_a_job_that_may_not_requeue_ends_node_fail() {
    let logs = tempfile::tempdir().unwrap();
    let dev = tempfile::tempdir().unwrap();
    let c = cluster(logs.path(), dev.path(), "");
    let id = c.submit(&["--no-requeue", "--gres=gpu:1", "--wrap", "sleep 300"]);
    c.wait_state(id, "RUNNING", secs(20));
    let node = c.squeue_field(id, "%N");
    append(&logs.path().join(format!("kmsg-{node}")), XID_79);
    assert_eq!(c.wait_done(id, secs(30)), "NODE_FAIL");
    assert_eq!(reason(&c, &node), "GPU Xid 79");
}

/// A site's verdict through the health check: with `drain_on_failure`, a
/// failing `HealthCheckProgram` whose first line is an Xid line
/// quarantines the node as the kernel log's would.
#[test]
fn issue_39_a_health_check_reporting_a_fatal_xid_quarantines_the_node() {
    let logs = tempfile::tempdir().unwrap();
    let dev = tempfile::tempdir().unwrap();
    let d = logs.path().display().to_string();
    let check = logs.path().join("check");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(
            &check,
            format!(
                "#!/bin/sh\n\
                 if [ -e {d}/sick-$SLURMD_NODENAME ]; then\n\
                 echo 'NVRM: Xid (PCI:0000:86:00): 48, pid=77, name=train, DBE'; exit 1; fi\n\
                 exit 0\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&check, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let c = cluster(
        logs.path(),
        dev.path(),
        &format!(
            "HealthCheckProgram={}\nHealthCheckInterval=1\n",
            check.display()
        ),
    );
    let id = c.submit(&["--requeue", "--gres=gpu:1", "--wrap", "sleep 300"]);
    c.wait_state(id, "RUNNING", secs(20));
    let first = c.squeue_field(id, "%N");
    let other = if first == "node1" { "node2" } else { "node1" };
    std::fs::write(logs.path().join(format!("sick-{first}")), "").unwrap();
    c.wait_until("the node drained by its health check", secs(30), || {
        (reason(&c, &first) == "GPU Xid 48").then_some(())
    });
    c.wait_until("the job running on the other node", secs(30), || {
        (c.squeue_field(id, "%T|%N") == format!("RUNNING|{other}")).then_some(())
    });
    assert_eq!(exc_nodes(&c, id), first);
    c.ok("scancel", &[&id.to_string()]);
    c.wait_done(id, secs(20));
}
