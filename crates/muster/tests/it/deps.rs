//! Job dependencies, holds and begin times with real daemons and real jobs:
//! `--dependency` types and separators, reasons in squeue, `scontrol update
//! Dependency=`, dependencies on arrays and on jobs long gone.

use crate::{cluster, secs};
use e2e::Cluster;

/// A job that runs until the file `name` appears in the work directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {name} ]; do sleep 0.1; done; exit ${{CODE:-0}}")
}

fn reason(c: &Cluster, id: u32) -> String {
    c.squeue_field(id, "%T %r")
}

#[test]
fn afterok_afternotok_and_any_with_squeue_reasons() {
    let c = cluster(1);
    let a = c.submit(&["--wrap", &gate("go-a")]);
    c.wait_state(a, "RUNNING", secs(10));
    let ok = c.submit(&["-d", &format!("afterok:{a}"), "--wrap", "true"]);
    let notok = c.submit(&["-d", &format!("afternotok:{a}"), "--wrap", "true"]);
    let either = c.submit(&[
        "-d",
        &format!("afternotok:{a}?afterany:{a}"),
        "--wrap",
        "true",
    ]);
    let killed = c.submit(&[
        "--kill-on-invalid-dep=yes",
        "-d",
        &format!("afternotok:{a}"),
        "--wrap",
        "true",
    ]);
    assert_eq!(reason(&c, ok), "PENDING Dependency");
    assert_eq!(
        c.job_field(ok, "Dependency"),
        format!("afterok:{a}(unfulfilled)")
    );
    // squeue's line for a job waiting on a dependency is Slurm's.
    let out = c.ok("squeue", &["-j", &ok.to_string()]);
    let expected = format!(
        "{:>18} {:>9} {:>8} {:>8} PD       0:00      1 (Dependency)\n",
        ok,
        "debug",
        "wrap",
        &e2e::user_name()[..e2e::user_name().len().min(8)]
    );
    assert_eq!(
        out.stdout.lines().nth(1).map(|l| format!("{l}\n")),
        Some(expected),
        "{out}"
    );
    c.write("go-a", "");
    assert_eq!(c.wait_done(a, secs(10)), "COMPLETED");
    assert_eq!(c.wait_done(ok, secs(10)), "COMPLETED");
    assert_eq!(c.wait_done(either, secs(10)), "COMPLETED");
    assert_eq!(c.wait_for(notok, secs(10), |s| s == "PENDING"), "PENDING");
    c.wait_until("DependencyNeverSatisfied", secs(10), || {
        (reason(&c, notok) == "PENDING DependencyNeverSatisfied").then_some(())
    });
    assert_eq!(
        c.job_field(notok, "Dependency"),
        format!("afternotok:{a}(failed)")
    );
    assert_eq!(c.wait_done(killed, secs(10)), "CANCELLED");
    // Cleared with an empty update, it runs.
    c.ok(
        "scontrol",
        &["update", &format!("JobId={notok}"), "Dependency="],
    );
    assert_eq!(c.wait_done(notok, secs(10)), "COMPLETED");
}

#[test]
fn several_jobs_arrays_tasks_and_update() {
    let c = cluster(2);
    let a = c.submit(&["--wrap", &gate("go-a")]);
    let arr = c.submit(&["--array=0-2", "-o", "/dev/null", "--wrap", &gate("go-arr")]);
    let both = c.submit(&["-d", &format!("afterok:{a}:{arr}"), "--wrap", "true"]);
    let task1 = c.submit(&["-d", &format!("afterany:{arr}_1"), "--wrap", "true"]);
    let later = c.submit(&["-H", "--wrap", "true"]);
    assert_eq!(reason(&c, later), "PENDING JobHeldUser");
    // Point the held job at the array, then release it.
    c.ok(
        "scontrol",
        &[
            "update",
            &format!("JobId={later}"),
            &format!("Dependency=afterany:{arr}"),
        ],
    );
    c.ok("scontrol", &["release", &later.to_string()]);
    assert_eq!(reason(&c, later), "PENDING Dependency");
    // A cycle is refused.
    let x = c.submit(&["-H", "--wrap", "true"]);
    let y = c.submit(&["-d", &format!("afterany:{x}"), "--wrap", "true"]);
    let out = c.run(
        "scontrol",
        &[
            "update",
            &format!("JobId={x}"),
            &format!("Dependency=afterok:{y}"),
        ],
    );
    assert_eq!(out.code, 1, "{out}");
    // Real scontrol 22.05: "Circular job dependency for job 14".
    assert_eq!(out.stderr, format!("Circular job dependency for job {x}\n"));
    c.ok("scancel", &[&x.to_string(), &y.to_string()]);
    c.write("go-arr", "");
    assert_eq!(c.wait_done(task1, secs(15)), "COMPLETED");
    assert_eq!(c.wait_done(later, secs(15)), "COMPLETED");
    assert_eq!(reason(&c, both), "PENDING Dependency");
    c.write("go-a", "");
    assert_eq!(c.wait_done(both, secs(15)), "COMPLETED");
}

#[test]
fn singleton_and_unknown_and_bad_dependencies() {
    let c = cluster(2);
    let first = c.submit(&["-J", "solo", "-d", "singleton", "--wrap", &gate("go-1")]);
    let second = c.submit(&["-J", "solo", "-d", "singleton", "--wrap", "true"]);
    c.wait_state(first, "RUNNING", secs(10));
    assert_eq!(reason(&c, second), "PENDING Dependency");
    c.write("go-1", "");
    assert_eq!(c.wait_done(second, secs(10)), "COMPLETED");

    // A job id the controller never had: accepted, as Slurm does
    // (err_sbatch_bad_dependency), and the condition is dropped.
    let out = c.run("sbatch", &["--dependency=afterok:999999", "--wrap=true"]);
    assert_eq!(out.code, 0, "{out}");
    let id: u32 = out
        .stdout
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");

    let out = c.run("sbatch", &["-d", "afterok:", "--wrap=true"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        "sbatch: error: Batch job submission failed: Job dependency problem\n"
    );
    let out = c.run("sbatch", &["-d", "afterburstbuffer:1", "--wrap=true"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("burst buffer"), "{out}");
}

#[test]
fn dependency_on_a_purged_job_uses_its_recorded_result() {
    let c = crate::builder()
        .nodes(1)
        .conf_extra("MinJobAge=1\n")
        .start();
    let failed = c.submit(&["--wrap", "exit 1"]);
    assert_eq!(c.wait_done(failed, secs(10)), "FAILED");
    // Gone from the controller's table...
    c.wait_until("the job to be purged", secs(20), || {
        c.job_state(failed).is_empty().then_some(())
    });
    // ...but its result still decides.
    let never = c.submit(&["-d", &format!("afterok:{failed}"), "--wrap", "true"]);
    let runs = c.submit(&["-d", &format!("afternotok:{failed}"), "--wrap", "true"]);
    assert_eq!(c.wait_done(runs, secs(10)), "COMPLETED");
    assert_eq!(reason(&c, never), "PENDING DependencyNeverSatisfied");
}

#[test]
fn holds_begin_times_and_deadlines() {
    let c = cluster(1);
    let held = c.submit(&["--hold", "--wrap", "true"]);
    assert_eq!(reason(&c, held), "PENDING JobHeldUser");
    assert_eq!(c.job_field(held, "Priority"), "0");
    c.ok("scontrol", &["release", &held.to_string()]);
    assert_eq!(c.wait_done(held, secs(10)), "COMPLETED");

    // An administrator's hold (this user is SlurmUser), then a user hold.
    let later = c.submit(&["--begin=now+1hour", "--wrap", "true"]);
    assert_eq!(reason(&c, later), "PENDING BeginTime");
    c.ok("scontrol", &["hold", &later.to_string()]);
    assert_eq!(reason(&c, later), "PENDING JobHeldAdmin");
    c.ok("scontrol", &["uhold", &later.to_string()]);
    assert_eq!(reason(&c, later), "PENDING JobHeldUser");
    c.ok("scontrol", &["release", &later.to_string()]);
    assert_eq!(reason(&c, later), "PENDING BeginTime");
    // Slurm's time forms: an ISO timestamp far ahead, then now.
    c.ok(
        "scontrol",
        &[
            "update",
            &format!("JobId={later}"),
            "StartTime=2099-01-01T00:00:00",
        ],
    );
    assert_eq!(c.job_field(later, "EligibleTime"), "2099-01-01T00:00:00");
    c.ok(
        "scontrol",
        &["update", &format!("JobId={later}"), "StartTime=now"],
    );
    assert_eq!(c.wait_done(later, secs(10)), "COMPLETED");
    let tomorrow = c.submit(&["--begin=tomorrow", "--wrap", "true"]);
    assert_eq!(reason(&c, tomorrow), "PENDING BeginTime");
    c.ok("scancel", &[&tomorrow.to_string()]);

    // A job that cannot end before its deadline is removed: DEADLINE.
    let late = c.submit(&["-t", "10", "--deadline=now+5minutes", "--wrap", "true"]);
    assert_eq!(c.wait_done(late, secs(10)), "DEADLINE");
    assert_ne!(c.job_field(late, "Deadline"), "N/A");
    let fits = c.submit(&["-t", "1", "--deadline=now+1hour", "--wrap", "true"]);
    assert_eq!(c.wait_done(fits, secs(10)), "COMPLETED");
}

#[test]
fn requeue_from_inside_the_job_appends_and_keeps_the_id() {
    let c = cluster(1);
    let muster = c.binary().display().to_string();
    // submitit's pattern: the job requeues itself, then is killed and
    // runs again with the same id and SLURM_RESTART_COUNT set.
    let script = format!(
        "echo run ${{SLURM_RESTART_COUNT:-0}} $SLURM_JOB_ID\n\
         if [ -z \"$SLURM_RESTART_COUNT\" ]; then {muster} scontrol requeue $SLURM_JOB_ID; sleep 60; fi\n\
         exit 0"
    );
    let id = c.submit(&["-o", "requeue.out", "--wrap", &script]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(
        c.wait_file("requeue.out", secs(5)),
        format!("run 0 {id}\nrun 1 {id}\n")
    );
    // requeuehold: back to pending, held, until released.
    let held = c.submit(&["--wrap", "echo $SLURM_RESTART_COUNT >> rq.txt; sleep 60"]);
    c.wait_state(held, "RUNNING", secs(10));
    c.ok("scontrol", &["requeuehold", &held.to_string()]);
    // Real Slurm 22.05 after `scontrol requeuehold`: squeue's %r "job
    // requeued in held state", scontrol's Reason=job_requeued_in_held_state.
    c.wait_until("the requeued job held", secs(10), || {
        (reason(&c, held) == "PENDING job requeued in held state").then_some(())
    });
    assert_eq!(c.job_field(held, "Reason"), "job_requeued_in_held_state");
    // --no-requeue refuses.
    let fixed = c.submit(&["--no-requeue", "--wrap", "sleep 60"]);
    let out = c.run("scontrol", &["requeue", &fixed.to_string()]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(
        out.stderr,
        format!("Requested operation is presently disabled for job {fixed}\n")
    );
    c.ok("scancel", &[&fixed.to_string(), &held.to_string()]);
    // sacct: the last run only, and with -D the REQUEUED run before it.
    let fmt = "--format=JobID,State";
    let out = c.wait_until("both runs in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &["-X", "-P", "-n", "-D", "-j", &id.to_string(), fmt],
        );
        (o.stdout.lines().count() == 2).then_some(o.stdout)
    });
    assert_eq!(out, format!("{id}|REQUEUED\n{id}|COMPLETED\n"));
    let out = c.ok("sacct", &["-X", "-P", "-n", "-j", &id.to_string(), fmt]);
    assert_eq!(out.stdout, format!("{id}|COMPLETED\n"));
}
