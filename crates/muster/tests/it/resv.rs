//! Advance reservations end to end: `scontrol create|update|delete|show
//! reservation`, `sbatch --reservation`, jobs outside a reservation kept
//! off its nodes, a job that would run into a maintenance window waiting,
//! and reservations kept across a controller restart.

use crate::{cluster, secs};

/// A job that runs until the file `name` appears in the work directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {name} ]; do sleep 0.1; done")
}

/// `scontrol show reservation` with the times (which move) taken out.
fn shown(c: &e2e::Cluster, name: &str) -> String {
    let out = c.ok("scontrol", &["show", "reservation", name]).stdout;
    let (head, rest) = out.split_once(" StartTime=").expect("StartTime");
    let (_, rest) = rest.split_once(" Duration=").expect("Duration");
    format!("{head} Duration={rest}")
}

#[test]
fn reservations_are_made_shown_used_and_deleted() {
    let mut c = cluster(2);
    let out = c.ok("scontrol", &["show", "reservation"]);
    assert_eq!(out.stdout, "No reservations in the system\n");
    let out = c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=r1",
            "StartTime=now",
            "Duration=60",
            "Nodes=node1",
            "Users=root",
        ],
    );
    assert_eq!(out.stdout, "Reservation created: r1\n");
    assert_eq!(
        shown(&c, "r1"),
        "ReservationName=r1 Duration=01:00:00\n   \
         Nodes=node1 NodeCnt=1 CoreCnt=2 Features=(null) PartitionName=(null) Flags=SPEC_NODES\n   \
         TRES=cpu=2\n   \
         Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a\n   \
         MaxStartDelay=(null)\n\n"
    );
    // sinfo: the idle reserved node reads `resv`, the other `idle`.
    let out = c.ok("sinfo", &["-h", "-N", "-o", "%N %t"]);
    assert_eq!(out.stdout, "node1 resv\nnode2 idle\n");
    // The name is taken.
    let out = c.run(
        "scontrol",
        &[
            "create",
            "res",
            "ReservationName=r1",
            "StartTime=now",
            "Duration=5",
            "Nodes=node2",
            "Users=root",
        ],
    );
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "Error creating the reservation: Duplicate reservation name\n"
    );

    // Outside the reservation: node2, then none (node1 is reserved).
    let a = c.submit(&["-n2", "-t", "10", "--wrap", &gate("go-a")]);
    c.wait_state(a, "RUNNING", secs(10));
    assert_eq!(c.squeue_field(a, "%N"), "node2");
    let b = c.submit(&["-n2", "-t", "10", "--wrap", "true"]);
    // In it: node1, while b waits.
    let r = c.submit(&[
        "-n2",
        "-t",
        "10",
        "--reservation=r1",
        "--wrap",
        &gate("go-r"),
    ]);
    c.wait_state(r, "RUNNING", secs(10));
    assert_eq!(c.squeue_field(r, "%N"), "node1");
    assert_eq!(c.squeue_field(r, "%v"), "r1");
    assert_eq!(c.squeue_field(a, "%v"), "(null)");
    let out = c.ok("squeue", &["-h", "-R", "r1", "-o", "%i"]);
    assert_eq!(out.stdout, format!("{r}\n"));
    assert_eq!(c.job_state(b), "PENDING");

    // Unknown, and not allowed.
    let out = c.run("sbatch", &["--reservation=nosuch", "--wrap", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "sbatch: error: Batch job submission failed: Requested reservation is invalid\n"
    );
    let out = c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=r2",
            "StartTime=now+1day",
            "Duration=1:00:00",
            "Nodes=node2",
            "Users=nobody",
        ],
    );
    assert_eq!(out.stdout, "Reservation created: r2\n");
    let out = c.run("sbatch", &["--reservation=r2", "--wrap", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "sbatch: error: Batch job submission failed: Access denied to requested reservation\n"
    );
    let out = c.ok("scontrol", &["update", "ReservationName=r2", "Users=+root"]);
    assert_eq!(out.stdout, "Reservation updated.\n");
    assert!(
        shown(&c, "r2").contains(" Users=nobody,root "),
        "{}",
        shown(&c, "r2")
    );
    assert!(shown(&c, "r2").contains(" State=INACTIVE "));

    // Busy while a job runs in it.
    let out = c.run("scontrol", &["delete", "ReservationName=r1"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.starts_with("Error deleting the reservation: "),
        "{out}"
    );

    // Kept across a restart.
    let before = c.ok("scontrol", &["show", "reservation"]).stdout;
    c.kill_ctld();
    c.restart_ctld();
    assert_eq!(c.ok("scontrol", &["show", "reservation"]).stdout, before);

    c.write("go-r", "");
    assert_eq!(c.wait_done(r, secs(10)), "COMPLETED");
    // srun's allocation runs in it too.
    let out = c.ok(
        "srun",
        &[
            "--reservation=r1",
            "-t",
            "5",
            "printenv",
            "SLURM_JOB_NODELIST",
        ],
    );
    assert_eq!(out.stdout, "node1\n");
    c.ok("scontrol", &["delete", "ReservationName=r1"]);
    // b takes node1 once it is no longer reserved.
    c.write("go-a", "");
    assert_eq!(c.wait_done(a, secs(10)), "COMPLETED");
    assert_eq!(c.wait_done(b, secs(10)), "COMPLETED");
    c.ok("scontrol", &["delete", "ReservationName=r2"]);
    let out = c.ok("scontrol", &["show", "reservation"]);
    assert_eq!(out.stdout, "No reservations in the system\n");
    let out = c.run("scontrol", &["show", "reservation", "r1"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "Reservation r1 not found\n")
    );
}

#[test]
fn a_job_that_would_run_into_a_maintenance_window_waits() {
    let mut c = cluster(1);
    let out = c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now+1hour",
            "Duration=60",
            "Nodes=ALL",
            "Flags=MAINT",
            "Users=root",
        ],
    );
    assert_eq!(out.stdout, "Reservation created: maint\n");
    // Not begun: the node is idle still.
    assert_eq!(c.ok("sinfo", &["-h", "-o", "%t"]).stdout, "idle\n");
    let long = c.submit(&["-t", "120", "--wrap", "true"]);
    c.wait_until("the long job waits for the maintenance", secs(10), || {
        (c.squeue_field(long, "%T %r") == "PENDING ReqNodeNotAvail, Reserved for maintenance")
            .then_some(())
    });
    // One that ends before the window runs.
    let short = c.submit(&["-t", "30", "--wrap", "true"]);
    assert_eq!(c.wait_done(short, secs(10)), "COMPLETED");
    assert!(
        shown(&c, "maint").contains(" Flags=MAINT,SPEC_NODES,ALL_NODES\n"),
        "{}",
        shown(&c, "maint")
    );
    // Unsupported flags are refused, not ignored.
    let out = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "StartTime=now",
            "Duration=5",
            "Nodes=ALL",
            "Flags=DAILY",
            "Users=root",
        ],
    );
    assert_eq!(out.code, 1, "{out}");
    c.kill_ctld();
    c.restart_ctld();
    c.wait_until("the long job still waits after a restart", secs(10), || {
        (c.squeue_field(long, "%T %r") == "PENDING ReqNodeNotAvail, Reserved for maintenance")
            .then_some(())
    });
    assert!(shown(&c, "maint").contains("ReservationName=maint "));
    c.ok("scontrol", &["delete", "ReservationName=maint"]);
    c.run("scancel", &[&long.to_string()]);
}
