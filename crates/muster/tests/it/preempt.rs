//! Preemption with real daemons and real job processes: preempt/qos with
//! REQUEUE, CANCEL (with GraceTime) and SUSPEND,GANG, and `scontrol
//! suspend/resume`.

use crate::auth::{is_root, set_mode, TestUser};
use crate::{builder, secs};
use e2e::Cluster;

/// A one-node cluster (two CPUs) with preempt/qos in `mode`, where QOS
/// `high` may preempt `normal`.
fn qos_cluster(mode: &str) -> Cluster {
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("PreemptType=preempt/qos\nPreemptMode={mode}\n"))
        .start();
    c.ok("sacctmgr", &["-i", "add", "qos", "high"]);
    c.ok(
        "sacctmgr",
        &["-i", "modify", "qos", "high", "set", "Preempt=normal"],
    );
    c
}

/// The process state letter of a pid (`R`, `S`, `T` ...) from /proc.
fn proc_state(pid: &str) -> String {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("State:"))
        .map(|s| s.trim().chars().next().unwrap_or('?').to_string())
        .unwrap_or_default()
}

fn sacct_runs(c: &Cluster, id: u32, n: usize) -> String {
    c.wait_until("the runs in sacct", secs(15), || {
        let o = c.run(
            "sacct",
            &[
                "-X",
                "-P",
                "-n",
                "-D",
                "-j",
                &id.to_string(),
                "--format=JobID,State",
            ],
        );
        (o.stdout.lines().count() == n && !o.stdout.contains("RUNNING")).then_some(o.stdout)
    })
}

#[test]
fn preempt_qos_requeue_keeps_the_id_and_runs_again() {
    let c = qos_cluster("REQUEUE");
    let script = "echo run ${SLURM_RESTART_COUNT:-0} $SLURM_JOB_ID\n\
                  if [ -z \"$SLURM_RESTART_COUNT\" ]; then sleep 60; fi";
    let low = c.submit(&["-n", "2", "-o", "low.out", "--wrap", script]);
    c.wait_state(low, "RUNNING", secs(10));
    // Its first line is out before it is preempted (RUNNING is the
    // controller's word; under load the script may not have started yet).
    assert_eq!(c.wait_file("low.out", secs(10)), format!("run 0 {low}\n"));
    let high = c.submit(&["-n", "2", "--qos=high", "--wrap", "sleep 2"]);
    // The low job gives its CPUs up and waits again, with its id.
    c.wait_state(high, "RUNNING", secs(15));
    assert_eq!(c.job_state(low), "PENDING");
    assert_eq!(c.job_field(low, "Restarts"), "1");
    assert_eq!(c.wait_done(high, secs(20)), "COMPLETED");
    assert_eq!(c.wait_done(low, secs(20)), "COMPLETED");
    assert_eq!(
        c.wait_file("low.out", secs(5)),
        format!("run 0 {low}\nrun 1 {low}\n")
    );
    // sacct: the preempted run, then the one that completed.
    assert_eq!(
        sacct_runs(&c, low, 2),
        format!("{low}|PREEMPTED\n{low}|COMPLETED\n")
    );
}

#[test]
fn preempt_qos_cancel_ends_the_job_preempted_after_its_grace_time() {
    let c = qos_cluster("CANCEL");
    c.ok(
        "sacctmgr",
        &["-i", "modify", "qos", "normal", "set", "GraceTime=10"],
    );
    // The job catches SIGTERM and saves its work for 4 s: longer than the
    // cluster's KillWait (2 s), within the QOS GraceTime (10 s).
    let script = "trap 'echo got TERM; sleep 4; echo saved; exit 0' TERM\n\
                  echo started\nsleep 60 &\nwait";
    let low = c.submit(&["-n", "2", "-o", "low.out", "--wrap", script]);
    c.wait_state(low, "RUNNING", secs(10));
    c.wait_until("the job started", secs(10), || {
        c.read("low.out").contains("started").then_some(())
    });
    let high = c.submit(&["-n", "2", "--qos=high", "--wrap", "true"]);
    assert_eq!(c.wait_done(low, secs(20)), "PREEMPTED");
    assert_eq!(c.wait_done(high, secs(20)), "COMPLETED");
    // Slurm's log has slurmstepd's banner for the preemption too (issue 35).
    let log = c.wait_file("low.out", secs(5));
    assert!(
        crate::steps::has_banner(&log, &format!("JOB {low}"), "node1", " DUE TO PREEMPTION"),
        "{log}"
    );
    let own: Vec<&str> = log
        .lines()
        .filter(|l| !l.starts_with("slurmstepd: "))
        .collect();
    assert_eq!(own, ["started", "got TERM", "saved"], "{log}");
    assert_eq!(sacct_runs(&c, low, 1), format!("{low}|PREEMPTED\n"));
    assert_eq!(c.squeue_field(low, "%t"), "PR");
}

#[test]
fn a_qos_preempt_exempt_time_delays_preemption() {
    let c = qos_cluster("CANCEL");
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "qos",
            "normal",
            "set",
            "PreemptExemptTime=8",
        ],
    );
    let shown = c.ok(
        "sacctmgr",
        &[
            "-n",
            "-P",
            "show",
            "qos",
            "normal",
            "format=Name,PreemptExemptTime",
        ],
    );
    assert_eq!(shown.stdout, "normal|00:00:08\n");
    let low = c.submit(&["-n", "2", "--wrap", "sleep 60"]);
    c.wait_state(low, "RUNNING", secs(10));
    let high = c.submit(&["-n", "2", "--qos=high", "--wrap", "true"]);
    // Exempt for its first 8 s: the preemptor waits, then takes its CPUs.
    assert_eq!(c.job_state(high), "PENDING");
    assert_eq!(c.job_state(low), "RUNNING");
    assert_eq!(c.wait_done(low, secs(30)), "PREEMPTED");
    assert_eq!(c.wait_done(high, secs(20)), "COMPLETED");
}

#[test]
fn preempt_qos_suspend_gang_stops_the_job_and_resumes_it() {
    let c = qos_cluster("SUSPEND,GANG");
    let low = c.submit(&[
        "-n",
        "2",
        "-o",
        "low.out",
        "--wrap",
        "echo $$ > low.pid; sleep 6; echo finished",
    ]);
    c.wait_state(low, "RUNNING", secs(10));
    let pid = c.wait_until("the job's pid", secs(10), || {
        let p = c.read("low.pid");
        (!p.trim().is_empty()).then_some(p)
    });
    let high = c.submit(&["-n", "2", "--qos=high", "--wrap", "sleep 4"]);
    c.wait_state(high, "RUNNING", secs(15));
    assert_eq!(c.job_state(low), "SUSPENDED");
    assert_eq!(c.squeue_field(low, "%t"), "S");
    // Its processes are really stopped.
    c.wait_until("the job's shell stopped", secs(10), || {
        (proc_state(&pid) == "T").then_some(())
    });
    // The preemptor ends: the job continues and completes.
    assert_eq!(c.wait_done(high, secs(20)), "COMPLETED");
    c.wait_state(low, "RUNNING", secs(10));
    // SIGCONT reaches the node after the controller records the resume.
    c.wait_until("the job's shell continued", secs(10), || {
        (proc_state(&pid) != "T").then_some(())
    });
    assert_eq!(c.wait_done(low, secs(30)), "COMPLETED");
    assert_eq!(c.wait_file("low.out", secs(5)), "finished\n");
    // sacct's Suspended: the preemptor's 4 s, left out of Elapsed.
    let row = c.wait_until("the record", secs(15), || {
        let out = c.run(
            "sacct",
            &[
                "-n",
                "-P",
                "-X",
                "-j",
                &low.to_string(),
                "-o",
                "State,Suspended",
            ],
        );
        out.stdout.starts_with("COMPLETED|").then_some(out.stdout)
    });
    let suspended = row.trim().trim_start_matches("COMPLETED|");
    assert!(
        ("00:00:03".."00:00:30").contains(&suspended),
        "Suspended: {row}"
    );
}

#[test]
fn scontrol_suspend_and_resume_are_for_administrators() {
    if !is_root() {
        eprintln!("scontrol_suspend_and_resume_are_for_administrators: not run: needs root");
        return;
    }
    let base = tempfile::Builder::new()
        .prefix("muster-suspend-")
        .tempdir()
        .expect("a temp dir");
    set_mode(base.path(), 0o755);
    let user = TestUser::create("s", base.path());
    // A hard link, not a copy: a copy open for writing while another test
    // forks makes exec fail with ETXTBSY.
    let muster_bin = base.path().join("muster");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_muster"), &muster_bin).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_muster"), &muster_bin).expect("copying muster");
    }
    let c = builder().binary(&muster_bin).nodes(1).start();
    set_mode(c.root(), 0o755);
    let out = user.run(
        &c,
        "sbatch",
        &[
            "--parsable",
            "--wrap",
            "echo $$ > /tmp/muster-suspend-$SLURM_JOB_ID.pid; sleep 300",
        ],
    );
    assert!(out.ok(), "{out}");
    let id: u32 = out.stdout.trim().parse().expect("a job id");
    c.wait_state(id, "RUNNING", secs(20));
    let pid_file = format!("/tmp/muster-suspend-{id}.pid");
    let pid = c.wait_until("the job's pid", secs(10), || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .filter(|p| !p.trim().is_empty())
    });
    // Its owner may not suspend it: only root and SlurmUser may.
    let out = user.run(&c, "scontrol", &["suspend", &id.to_string()]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        format!("Access/permission denied for job {id}\n")
    );
    assert_eq!(c.job_state(id), "RUNNING");
    // Root may.
    c.ok("scontrol", &["suspend", &id.to_string()]);
    assert_eq!(c.job_state(id), "SUSPENDED");
    assert_ne!(c.job_field(id, "SuspendTime"), "None");
    c.wait_until("the job stopped", secs(10), || {
        (proc_state(&pid) == "T").then_some(())
    });
    let out = c.run("scontrol", &["suspend", &id.to_string()]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        format!("Requested operation is presently disabled for job {id}\n")
    );
    let out = user.run(&c, "scontrol", &["resume", &id.to_string()]);
    assert_eq!(
        out.stderr,
        format!("Access/permission denied for job {id}\n")
    );
    c.ok("scontrol", &["resume", &id.to_string()]);
    assert_eq!(c.job_state(id), "RUNNING");
    c.wait_until("the job continued", secs(10), || {
        (proc_state(&pid) != "T").then_some(())
    });
    // A pending job is not running.
    let pending = c.submit(&["-n", "2", "--wrap", "true"]);
    let out = c.run("scontrol", &["suspend", &pending.to_string()]);
    assert_eq!(
        out.stderr,
        format!("Job is pending execution for job {pending}\n")
    );
    c.ok("scancel", &[&id.to_string(), &pending.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "CANCELLED");
    let _ = std::fs::remove_file(&pid_file);
}

#[test]
fn partition_prio_requeues_jobs_of_a_lower_tier() {
    let c = builder()
        .nodes(1)
        .conf_extra("PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n")
        .conf_tail("PartitionName=urgent Nodes=node1 PriorityTier=10 State=UP\n")
        .start();
    let low = c.submit(&["-n", "2", "--wrap", "sleep 60"]);
    c.wait_state(low, "RUNNING", secs(10));
    let urgent = c.submit(&["-n", "2", "-p", "urgent", "--wrap", "true"]);
    assert_eq!(c.wait_done(urgent, secs(20)), "COMPLETED");
    c.wait_state(low, "RUNNING", secs(20));
    assert_eq!(c.job_field(low, "Restarts"), "1");
    c.ok("scancel", &[&low.to_string()]);
}

#[test]
fn a_suspended_job_stays_suspended_across_a_controller_restart() {
    let mut c = builder().nodes(1).start();
    let id = c.submit(&[
        "-o",
        "s.out",
        "--wrap",
        "echo $$ > s.pid; sleep 4; echo finished",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid = c.wait_until("the job's pid", secs(10), || {
        let p = c.read("s.pid");
        (!p.trim().is_empty()).then_some(p)
    });
    c.ok("scontrol", &["suspend", &id.to_string()]);
    c.wait_until("the job stopped", secs(10), || {
        (proc_state(&pid) == "T").then_some(())
    });
    c.kill_ctld();
    c.restart_ctld();
    assert_eq!(c.job_state(id), "SUSPENDED");
    assert_eq!(proc_state(&pid), "T");
    c.ok("scontrol", &["resume", &id.to_string()]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert_eq!(c.wait_file("s.out", secs(5)), "finished\n");
}

#[test]
fn partition_grace_time_lets_a_preempted_job_finish_its_work() {
    let c = builder()
        .nodes(1)
        .conf_extra("PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\n")
        .conf_tail(
            "PartitionName=low Nodes=node1 PriorityTier=1 GraceTime=10\n\
             PartitionName=urgent Nodes=node1 PriorityTier=10\n",
        )
        .start();
    let show = c.ok("scontrol", &["show", "partition", "low"]);
    assert!(show.stdout.contains(" GraceTime=10 "), "{show}");
    // The job catches SIGTERM and saves its work for 4 s: longer than the
    // cluster's KillWait (2 s), within the partition's GraceTime (10 s).
    let script = "trap 'echo got TERM; sleep 4; echo saved; exit 0' TERM\n\
                  echo started\nsleep 60 &\nwait";
    let low = c.submit(&["-p", "low", "-n", "2", "-o", "low.out", "--wrap", script]);
    c.wait_state(low, "RUNNING", secs(10));
    c.wait_until("the job started", secs(10), || {
        c.read("low.out").contains("started").then_some(())
    });
    let urgent = c.submit(&["-p", "urgent", "-n", "2", "--wrap", "true"]);
    assert_eq!(c.wait_done(low, secs(30)), "PREEMPTED");
    assert_eq!(c.wait_done(urgent, secs(30)), "COMPLETED");
    let log = c.wait_file("low.out", secs(5));
    let own: Vec<&str> = log
        .lines()
        .filter(|l| !l.starts_with("slurmstepd: "))
        .collect();
    assert_eq!(own, ["started", "got TERM", "saved"], "{log}");
}
