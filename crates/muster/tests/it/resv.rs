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
            "Flags=TIME_FLOAT",
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

/// A `Key=value` field of `scontrol show` output.
fn field(text: &str, key: &str) -> String {
    let at = text
        .find(&format!(" {key}="))
        .or_else(|| text.find(&format!("\n{key}=")))
        .unwrap_or_else(|| panic!("{key} in {text}"));
    let rest = &text[at + key.len() + 2..];
    rest.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn backfill_plans_a_job_after_a_maintenance_window() {
    let c = cluster(1);
    // Two minutes ahead (not one: `--time=0:30` is a minute to Slurm).
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=maint",
            "StartTime=now+2minutes",
            "Duration=10",
            "Nodes=ALL",
            "Flags=MAINT",
            "Users=root",
        ],
    );
    let resv = c.ok("scontrol", &["show", "reservation", "maint"]).stdout;
    let end = field(&resv, "EndTime");
    let long = c.submit(&["-t", "5", "--wrap", "true"]);
    c.wait_until("the job waits for the maintenance", secs(10), || {
        (c.squeue_field(long, "%T %r") == "PENDING ReqNodeNotAvail, Reserved for maintenance")
            .then_some(())
    });
    // Planned for the window's end: squeue --start, scontrol, explain.
    c.wait_until("the job is planned after the window", secs(10), || {
        let out = c.ok(
            "squeue",
            &["--start", "-h", "-j", &long.to_string(), "-o", "%S"],
        );
        (out.stdout.trim() == end).then_some(())
    });
    let job = c.ok("scontrol", &["show", "job", &long.to_string()]).stdout;
    assert_eq!(field(&job, "StartTime"), end, "{job}");
    let why = c.ok("explain", &[&long.to_string()]).stdout;
    assert!(
        why.contains("Reservations in its way: maint (`scontrol show reservation`)."),
        "{why}"
    );
    // Done before the window: runs now.
    let short = c.submit(&["--time=0:30", "--wrap", "true"]);
    assert_eq!(c.wait_done(short, secs(10)), "COMPLETED");
    assert_eq!(c.job_state(long), "PENDING");
    // Not begun: the node is plainly idle.
    let node = c.ok("scontrol", &["show", "node", "node1"]).stdout;
    assert_eq!(field(&node, "State"), "IDLE", "{node}");
    c.ok("scontrol", &["delete", "ReservationName=maint"]);
    assert_eq!(c.wait_done(long, secs(10)), "COMPLETED");
}

#[test]
fn reserved_nodes_show_their_state_and_jobs_find_their_reservation() {
    let c = cluster(2);
    for (name, node, flags) in [("m", "node1", "MAINT"), ("r", "node2", "IGNORE_JOBS")] {
        c.ok(
            "scontrol",
            &[
                "create",
                "reservation",
                &format!("ReservationName={name}"),
                "StartTime=now",
                "Duration=10",
                &format!("Nodes={node}"),
                &format!("Flags={flags}"),
                "Users=root",
            ],
        );
    }
    let state = |n: &str| field(&c.ok("scontrol", &["show", "node", n]).stdout, "State");
    assert_eq!(state("node1"), "IDLE+MAINTENANCE+RESERVED");
    assert_eq!(state("node2"), "IDLE+RESERVED");
    let out = c.ok("sinfo", &["-h", "-N", "-o", "%N %t %T"]);
    assert_eq!(out.stdout, "node1 maint maint\nnode2 resv reserved\n");
    // srun reads SLURM_RESERVATION, salloc SALLOC_RESERVATION, sbatch
    // SBATCH_RESERVATION; the batch job sees SLURM_JOB_RESERVATION.
    let out = c.run_env(
        "srun",
        &["-t", "5", "printenv", "SLURM_JOB_NODELIST"],
        &[("SLURM_RESERVATION", "r")],
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, "node2\n"), "{out}");
    let out = c.run_env(
        "salloc",
        &["-t", "5", "printenv", "SLURM_JOB_NODELIST"],
        &[("SALLOC_RESERVATION", "m")],
    );
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("node1\n"), "{out}");
    let out = c.run_env(
        "sbatch",
        &[
            "--parsable",
            "-o",
            "env.out",
            "-t",
            "5",
            "--wrap",
            "printenv SLURM_JOB_RESERVATION; printenv SLURM_JOB_NODELIST",
        ],
        &[("SBATCH_RESERVATION", "r")],
    );
    assert_eq!(out.code, 0, "{out}");
    let id: u32 = out.stdout.trim().parse().expect("job id");
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.read("env.out"), "r\nnode2\n");
    // The command line wins over the variable.
    let out = c.run_env(
        "srun",
        &[
            "--reservation=m",
            "-t",
            "5",
            "printenv",
            "SLURM_JOB_NODELIST",
        ],
        &[("SLURM_RESERVATION", "r")],
    );
    assert_eq!(out.stdout, "node1\n", "{out}");
}

#[test]
fn purge_comp_magnetic_and_daily_reservations() {
    let c = cluster(2);
    // MAGNETIC: a job that names no reservation runs in it.
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=mag",
            "StartTime=now",
            "Duration=10",
            "Nodes=ALL",
            "Flags=MAGNETIC",
            "Users=root",
        ],
    );
    let j = c.submit(&["-t", "5", "--wrap", "true"]);
    assert_eq!(c.wait_done(j, secs(10)), "COMPLETED");
    c.ok("scontrol", &["delete", "ReservationName=mag"]);
    // PURGE_COMP=0:03: gone three seconds after its last job ended.
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=p",
            "StartTime=now",
            "Duration=10",
            "Nodes=node1",
            "Flags=PURGE_COMP=0:03",
            "Users=root",
        ],
    );
    assert!(
        shown(&c, "p").contains(" Flags=SPEC_NODES,PURGE_COMP=00:00:03\n"),
        "{}",
        shown(&c, "p")
    );
    let j = c.submit(&["-t", "5", "--reservation=p", "--wrap", "sleep 1"]);
    assert_eq!(c.wait_done(j, secs(10)), "COMPLETED");
    c.wait_until("the idle reservation is purged", secs(20), || {
        let out = c.run("scontrol", &["show", "reservation", "p"]);
        (out.code == 1).then_some(())
    });
    // DAILY: shown with its flag; a flag muster does not carry out is
    // refused with a clear message.
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=d",
            "StartTime=now+1hour",
            "Duration=60",
            "Nodes=node2",
            "Flags=DAILY",
            "Users=root",
        ],
    );
    assert!(shown(&c, "d").contains(" Flags=DAILY,SPEC_NODES\n"));
    let out = c.run(
        "scontrol",
        &[
            "create",
            "reservation",
            "StartTime=now",
            "Duration=5",
            "Nodes=node1",
            "Flags=TIME_FLOAT",
            "Users=root",
        ],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .starts_with("Flags=TIME_FLOAT is not supported by muster (supported: MAINT,"),
        "{out}"
    );
}

#[test]
fn reservations_are_kept_in_accounting() {
    let c = cluster(1);
    c.ok(
        "scontrol",
        &[
            "create",
            "reservation",
            "ReservationName=acct",
            "StartTime=now",
            "Duration=10",
            "Nodes=node1",
            "Users=root",
        ],
    );
    let j = c.submit(&["-t", "5", "--reservation=acct", "--wrap", "sleep 1"]);
    assert_eq!(c.wait_done(j, secs(10)), "COMPLETED");
    // Current windows by default, with Slurm's default columns.
    let out = c.ok("sacctmgr", &["show", "reservation"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "   Cluster            Name                           TRES           TimeStart             TimeEnd UnusedWall "
    );
    assert!(
        lines[2].starts_with("       e2e            acct                          cpu=2 "),
        "{out}"
    );
    c.ok("scontrol", &["delete", "ReservationName=acct"]);
    // Deleted: its window ends then, and what its job used is counted.
    let out = c.ok(
        "sacctmgr",
        &[
            "-nP",
            "show",
            "reservation",
            "start=now-1hour",
            "format=Cluster,Name,Nodes,TRES,Flags,UnusedWall",
        ],
    );
    let fields: Vec<&str> = out.stdout.trim_end().split('|').collect();
    assert_eq!(
        &fields[..5],
        ["e2e", "acct", "node1", "cpu=2", "SPEC_NODES"],
        "{out}"
    );
    let unused: f64 = fields[5].parse().expect("UnusedWall");
    assert!((0.0..600.0).contains(&unused), "{out}");
    // sreport's reservation report: the window this hour, its CPUs' time
    // split into what the job used and the rest.
    let out = c.ok(
        "sreport",
        &[
            "-nP",
            "-t",
            "seconds",
            "reservation",
            "utilization",
            "start=now-1hour",
            "end=now",
            "format=Cluster,Name,TresName,TresTime,Allocated,Idle",
        ],
    );
    let fields: Vec<&str> = out.stdout.trim_end().split('|').collect();
    assert_eq!(&fields[..3], ["e2e", "acct", "cpu"], "{out}");
    let secs: Vec<i64> = fields[3..]
        .iter()
        .map(|f| f.parse().expect("seconds"))
        .collect();
    assert!(secs[1] >= 1, "the job's time is allocated: {out}");
    assert_eq!(secs[0], secs[1] + secs[2], "{out}");
    // Not among the current ones any more.
    let out = c.ok("sacctmgr", &["-nP", "show", "reservation"]);
    assert_eq!(out.stdout, "");
}
