//! Waiting for resources, and changing jobs with scontrol.

use crate::{builder, cluster, parse_time, secs};

#[test]
fn jobs_wait_for_resources_and_start_back_to_back() {
    let c = cluster(1);
    let ids: Vec<u32> = (0..3)
        .map(|_| c.submit(&["-c", "2", "--wrap", "sleep 2"]))
        .collect();
    c.wait_state(ids[0], "RUNNING", secs(10));
    assert_eq!(c.squeue_field(ids[1], "%T %r"), "PENDING Resources");
    assert_eq!(c.squeue_field(ids[2], "%T %r"), "PENDING Priority");
    for id in &ids {
        assert_eq!(c.wait_done(*id, secs(15)), "COMPLETED", "job {id}");
    }
    let times: Vec<(i64, i64)> = ids
        .iter()
        .map(|id| {
            (
                parse_time(&c.job_field(*id, "StartTime")),
                parse_time(&c.job_field(*id, "EndTime")),
            )
        })
        .collect();
    for w in times.windows(2) {
        let ((_, end), (start, _)) = (w[0], w[1]);
        assert!(
            start >= end && start - end <= 1,
            "the next job should start as the previous ends: {times:?}"
        );
    }
    for (start, end) in &times {
        assert!((2..=3).contains(&(end - start)), "{times:?}");
    }
}

#[test]
fn update_a_held_job() {
    let c = e2e::Cluster::builder()
        .binary(env!("CARGO_BIN_EXE_muster"))
        .nodes(2)
        .conf_tail("PartitionName=other Nodes=node2 MaxTime=INFINITE State=UP")
        .start();
    let id = c.submit(&["-H", "-t", "10", "--wrap", "true"]);
    let sid = id.to_string();
    assert_eq!(c.squeue_field(id, "%T %r"), "PENDING JobHeldUser");
    let j = format!("JobId={sid}");
    c.ok("scontrol", &["update", &j, "TimeLimit=20"]);
    assert_eq!(c.job_field(id, "TimeLimit"), "00:20:00");
    c.ok("scontrol", &["update", &j, "Partition=other"]);
    assert_eq!(c.job_field(id, "Partition"), "other");
    c.ok("scontrol", &["update", &j, "Partition=debug", "NumNodes=2"]);
    assert_eq!(c.job_field(id, "NumNodes"), "2");
    c.ok("scontrol", &["release", &sid]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(id, "NodeList"), "node[1-2]");
}

#[test]
fn hold_release_and_requeue() {
    let c = builder().nodes(1).cred_expire(6).start();
    // A pending job held and released.
    let blocker = c.submit(&["-c", "2", "--wrap", "sleep 300"]);
    let waiting = c.submit(&["--wrap", "true"]);
    c.wait_state(blocker, "RUNNING", secs(10));
    c.ok("scontrol", &["hold", &waiting.to_string()]);
    assert_eq!(c.squeue_field(waiting, "%T %r"), "PENDING JobHeldAdmin");
    c.ok("scontrol", &["release", &waiting.to_string()]);
    assert_eq!(c.squeue_field(waiting, "%T %r"), "PENDING Resources");

    c.ok("scancel", &[&blocker.to_string()]);
    assert_eq!(c.wait_done(waiting, secs(10)), "COMPLETED");

    // Requeue of a running job: the same id runs again, and knows it.
    let id = c.submit(&[
        "--wrap",
        "echo \"run ${SLURM_RESTART_COUNT:-0}\" >> runs.txt; [ -n \"$SLURM_RESTART_COUNT\" ] || sleep 300",
    ]);
    c.wait_file("runs.txt", secs(10));
    // A running job may be held (real scontrol 22.05 as root: `scontrol
    // hold <running>` exits 0, then Priority=0, JobState=RUNNING
    // Reason=JobHeldAdmin, EligibleTime=Unknown; after `scontrol release`,
    // Reason=None). It runs on.
    c.ok("scontrol", &["hold", &id.to_string()]);
    assert_eq!(c.job_state(id), "RUNNING");
    assert_eq!(c.job_field(id, "Priority"), "0");
    assert_eq!(c.job_field(id, "Reason"), "JobHeldAdmin");
    assert_eq!(c.job_field(id, "EligibleTime"), "Unknown");
    c.ok("scontrol", &["release", &id.to_string()]);
    assert_eq!(c.job_field(id, "Reason"), "None");
    assert_ne!(c.job_field(id, "Priority"), "0");
    c.ok("scontrol", &["requeue", &id.to_string()]);
    // Back in the queue, it waits out cred_expire first, as Slurm's do.
    // (COMPLETING while the old run's processes end.)
    c.wait_until("the requeued job pending", secs(5), || {
        let now = c.squeue_field(id, "%T %r");
        (now != "COMPLETING BeginTime").then_some(())
    });
    assert_eq!(c.squeue_field(id, "%T %r"), "PENDING BeginTime");
    c.wait_until("the second run", secs(20), || {
        (c.read("runs.txt") == "run 0\nrun 1\n").then_some(())
    });
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(id, "Restarts"), "1");
}

#[test]
fn pending_jobs_show_their_planned_start_and_explain_says_why() {
    let c = cluster(2);
    let blocker = c.submit(&["-N", "2", "--exclusive", "-t", "10", "--wrap", "sleep 300"]);
    c.wait_state(blocker, "RUNNING", secs(10));
    let waiting = c.submit(&["-N", "2", "-t", "5", "--wrap", "true"]);
    let (w, b) = (waiting.to_string(), blocker.to_string());
    // The plan: when the blocker reaches its 10-minute limit, on both nodes.
    let start = parse_time(&c.job_field(waiting, "StartTime"));
    let blocker_start = parse_time(&c.job_field(blocker, "StartTime"));
    assert!(
        (600..=660).contains(&(start - blocker_start)),
        "planned {start}, blocker started {blocker_start}"
    );
    let out = c.ok("squeue", &["--start", "-h", "-j", &w, "-o", "%Y %r"]);
    assert_eq!(out.stdout.trim(), "node[1-2] Resources");
    let show = c.ok("scontrol", &["show", "job", &w]).stdout;
    assert!(show.contains(" SchedNodeList=node[1-2]\n"), "{show}");
    let explained = c.ok("explain", &[&w]).stdout;
    assert!(explained.contains(&format!("Job {w} (")), "{explained}");
    assert!(
        explained.contains(&format!("when job {b} reaches its time limit")),
        "{explained}"
    );
    assert!(explained.contains("Expected start: "), "{explained}");
    let unknown = c.run("explain", &["999999"]);
    assert!(!unknown.ok());
    assert!(
        unknown.stderr.contains("Invalid job id specified"),
        "{unknown}"
    );
    c.ok("scancel", &[&b]);
    assert_eq!(c.wait_done(waiting, secs(15)), "COMPLETED");
}

/// Under EASY with two partitions, a job in both that waits behind the
/// blocked job of one is the first blocked job of the other: a job
/// submitted later to that other partition alone waits for Priority, as
/// a pass over every job says (the pass over the new job told it
/// Resources until the twenty-first session).
#[test]
fn a_job_in_two_partitions_blocks_the_second_for_later_jobs() {
    let c = builder()
        .nodes(4)
        .conf_extra("SchedulerType=sched/easy\n")
        .conf_tail("PartitionName=second Nodes=node[1-4] MaxTime=60 State=UP")
        .start();
    let fill: Vec<u32> = (0..8)
        .map(|_| c.submit(&["-n", "1", "-t", "30", "--wrap", "sleep 300"]))
        .collect();
    for id in &fill {
        c.wait_state(*id, "RUNNING", secs(10));
    }
    let wide = c.submit(&["-p", "debug", "-n", "8", "-t", "30", "--wrap", "true"]);
    let both = c.submit(&[
        "-p",
        "debug,second",
        "-n",
        "2",
        "-t",
        "30",
        "--wrap",
        "true",
    ]);
    let second = c.submit(&["-p", "second", "-n", "1", "-t", "30", "--wrap", "true"]);
    assert_eq!(c.squeue_field(wide, "%T %r"), "PENDING Resources");
    assert_eq!(c.squeue_field(both, "%T %r"), "PENDING Priority");
    assert_eq!(c.squeue_field(second, "%T %r"), "PENDING Priority");
    c.end_all_jobs(secs(20));
}

#[test]
fn max_cpus_per_node_and_lln_shape_where_a_partitions_jobs_run() {
    let c = builder()
        .nodes(2)
        .node_line_override(1, "CPUs=4 RealMemory=2000")
        .node_line_override(2, "CPUs=4 RealMemory=2000")
        .conf_tail(
            "PartitionName=capped Nodes=node[1-2] MaxCPUsPerNode=2\n\
             PartitionName=spread Nodes=node[1-2] LLN=YES\n",
        )
        .start();
    let show = c.ok("scontrol", &["show", "partition", "capped"]);
    assert!(show.stdout.contains(" LLN=NO MaxCPUsPerNode=2\n"), "{show}");
    let show = c.ok("scontrol", &["show", "partition", "spread"]);
    assert!(
        show.stdout.contains(" LLN=YES MaxCPUsPerNode=UNLIMITED\n"),
        "{show}"
    );
    // Four tasks of one CPU: two per node at most, so both nodes.
    let four = c.submit(&[
        "-p",
        "capped",
        "-n4",
        "--wrap",
        "srun hostname | sort | uniq -c",
    ]);
    assert_eq!(c.wait_done(four, secs(30)), "COMPLETED");
    assert_eq!(c.job_field(four, "NumNodes"), "2");
    assert_eq!(c.job_field(four, "NumCPUs"), "4");
    // Three CPUs on one node never fit there: refused at submission.
    let out = c.run("sbatch", &["-p", "capped", "-N1", "-n3", "--wrap", "true"]);
    assert!(!out.ok(), "{out}");
    assert!(
        out.stderr
            .contains("Requested node configuration is not available"),
        "{out}"
    );
    // The cap counts the partition's jobs together: two of one CPU hold
    // node1's share of it, a third waits though node1 has two CPUs free,
    // and a job of another partition takes those.
    let sleep = ["-n1", "-w", "node1", "--wrap", "sleep 60"];
    let a = c.submit(&[&["-p", "capped"][..], &sleep[..]].concat());
    let b = c.submit(&[&["-p", "capped"][..], &sleep[..]].concat());
    c.wait_state(a, "RUNNING", secs(20));
    c.wait_state(b, "RUNNING", secs(20));
    let third = c.submit(&[&["-p", "capped"][..], &sleep[..]].concat());
    let other = c.submit(&["-p", "spread", "-n2", "-w", "node1", "--wrap", "sleep 60"]);
    c.wait_state(other, "RUNNING", secs(20));
    assert_eq!(c.squeue_field(third, "%T %r"), "PENDING Resources");
    let ids = [a, b, third, other].map(|j| j.to_string());
    c.ok(
        "scancel",
        &ids.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    for j in [a, b, third, other] {
        c.wait_done(j, secs(30));
    }
    // LLN: with one CPU busy on node1, the next job goes to node2 (the
    // default partition packs it onto node1).
    let busy = c.submit(&["-p", "spread", "-n1", "-w", "node1", "--wrap", "sleep 60"]);
    c.wait_state(busy, "RUNNING", secs(20));
    let lln = c.submit(&["-p", "spread", "-n1", "--wrap", "sleep 60"]);
    c.wait_state(lln, "RUNNING", secs(20));
    assert_eq!(c.job_field(lln, "NodeList"), "node2");
    let packed = c.submit(&["-n1", "--wrap", "sleep 60"]);
    c.wait_state(packed, "RUNNING", secs(20));
    assert_eq!(c.job_field(packed, "NodeList"), "node1");
    c.ok(
        "scancel",
        &[&busy.to_string(), &lln.to_string(), &packed.to_string()],
    );
}
