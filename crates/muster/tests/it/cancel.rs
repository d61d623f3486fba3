//! scancel, signals and time limits.

use crate::{cluster, reference, secs};
use std::path::Path;
use std::time::Instant;

fn pid_alive(pid: i32) -> bool {
    // A zombie is gone for our purposes; /proc/PID/stat's third field says.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn scancel_ends_a_running_job_and_its_processes() {
    let c = cluster(1);
    let id = c.submit(&["--wrap", "sleep 300 & echo $! > sleep.pid; wait"]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid: i32 = c
        .wait_file("sleep.pid", secs(5))
        .trim()
        .parse()
        .expect("a pid");
    assert!(pid_alive(pid));
    let out = c.run("scancel", &[&id.to_string()]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "{out}"
    );
    assert_eq!(c.wait_done(id, secs(5)), "CANCELLED");
    c.wait_until("the job's sleep to die", secs(5), || {
        (!pid_alive(pid)).then_some(())
    });
    assert_eq!(c.job_field(id, "ExitCode"), "0:15");
}

#[test]
fn scancel_of_an_unknown_job() {
    let c = cluster(1);
    let out = c.run("scancel", &["999999"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "{out}"
    );
    let out = c.run("scancel", &["-v", "999999"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "");
    let want = "scancel: Terminating job 999999\n\
                scancel: error: Kill job error on job id 999999: Invalid job id specified\n";
    if let Some(r) = reference("err_scancel_nonexistent_v.err") {
        assert_eq!(r, want, "the reference changed");
    }
    assert_eq!(out.stderr, want);
}

#[test]
fn scancel_user_cancels_all_of_them() {
    let c = cluster(1);
    let ids: Vec<u32> = (0..3).map(|_| c.submit(&["--wrap", "sleep 300"])).collect();
    c.wait_state(ids[0], "RUNNING", secs(10));
    c.wait_state(ids[1], "RUNNING", secs(10));
    assert_eq!(c.job_state(ids[2]), "PENDING");
    c.ok("scancel", &["-u", &e2e::user_name()]);
    for id in ids {
        assert_eq!(c.wait_done(id, secs(5)), "CANCELLED", "job {id}");
    }
    assert_eq!(c.run("squeue", &["-h"]).stdout, "");
}

/// Issue 44: `scancel -u USER -n NAME` cancels every matching pending job
/// (one request to the controller), leaves the others, prints nothing,
/// and sacct shows each matching job CANCELLED.
#[test]
fn issue_44_scancel_user_and_name_cancels_many_pending_jobs() {
    let c = cluster(1);
    let me = e2e::user_name();
    let many: Vec<u32> = (0..40)
        .map(|_| c.submit(&["-H", "-J", "many", "--wrap", "true"]))
        .collect();
    let other = c.submit(&["-H", "-J", "other", "--wrap", "true"]);
    let out = c.run("scancel", &["-u", &me, "-n", "many"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "{out}"
    );
    assert_eq!(
        c.ok("squeue", &["-h", "-o", "%i"]).stdout,
        format!("{other}\n")
    );
    let rows = c.wait_until("every cancelled job in sacct", secs(10), || {
        let o = c.run("sacct", &["-X", "-n", "-P", "-o", "JobID,JobName,State"]);
        let cancelled = o
            .stdout
            .lines()
            .filter(|l| l.contains("|many|CANCELLED"))
            .count();
        (cancelled == many.len()).then_some(o.stdout)
    });
    for id in &many {
        assert!(
            rows.contains(&format!("{id}|many|CANCELLED")),
            "{id}: {rows}"
        );
    }
    assert!(rows.contains(&format!("{other}|other|PENDING")), "{rows}");
    // -v names each job it acts on, as single cancels did; a filter that
    // matches nothing says nothing.
    let out = c.run("scancel", &["-v", "-n", "other"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (0, format!("scancel: Terminating job {other}\n").as_str()),
        "{out}"
    );
    let out = c.run("scancel", &["-u", &me, "-n", "many"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
}

/// Which processes `scancel --signal` reaches: the steps alone by
/// default, the batch shell alone with `-b`, both with `-f`, one step
/// with `JOB.STEP`. The batch shell and the step's task each log what
/// they got.
#[test]
fn scancel_signal_reaches_what_b_and_f_name() {
    let c = cluster(1);
    let id = c.submit(&[
        "--wrap",
        "trap 'echo usr1 >> got.txt' USR1; trap 'echo usr2 >> got.txt' USR2; \
         srun sh -c 'trap \"echo step usr1 >> step.txt\" USR1; touch step.ready; \
         while :; do sleep 0.1; done' & \
         touch ready; while :; do sleep 0.1; done",
    ]);
    let job = id.to_string();
    c.wait_until(
        "the script and its step to set their traps",
        secs(10),
        || (c.work().join("ready").exists() && c.work().join("step.ready").exists()).then_some(()),
    );
    c.ok("scancel", &["--batch", "--signal=USR1", &job]);
    assert_eq!(c.wait_file("got.txt", secs(5)), "usr1\n");
    // Without -b or -f: the step, not the batch shell. USR2 to the shell
    // afterwards shows that no second USR1 came before it.
    c.ok("scancel", &["-s", "USR1", &job]);
    assert_eq!(c.wait_file("step.txt", secs(5)), "step usr1\n");
    c.ok("scancel", &["-b", "-s", "USR2", &job]);
    c.wait_until("USR2 in the batch shell", secs(5), || {
        c.read("got.txt").contains("usr2").then_some(())
    });
    assert_eq!(c.read("got.txt"), "usr1\nusr2\n");
    // One step by its id.
    c.ok("scancel", &["-s", "USR1", &format!("{id}.0")]);
    c.wait_until("a second USR1 in the step", secs(5), || {
        (c.read("step.txt") == "step usr1\nstep usr1\n").then_some(())
    });
    // -f: the batch shell, its children and the step. srun is one of
    // the children and forwards the signal to its step too, so the step
    // may see it twice (as under Slurm).
    c.ok("scancel", &["--full", "--signal=USR1", &job]);
    c.wait_until("USR1 in both", secs(5), || {
        (c.read("got.txt") == "usr1\nusr2\nusr1\n" && c.read("step.txt").lines().count() >= 3)
            .then_some(())
    });
    assert_eq!(c.job_state(id), "RUNNING");
    c.ok("scancel", &[&job]);
    assert_eq!(c.wait_done(id, secs(5)), "CANCELLED");
}

/// submitit's checkpoint path: the batch script runs `srun python3`, the
/// task bypasses SIGTERM and on USR2 saves a checkpoint and requeues its
/// own job; the second run (SLURM_RESTART_COUNT=1) finds the checkpoint
/// and ends well.
#[test]
fn submitit_checkpoint_requeue_with_srun_and_python() {
    let c = cluster(1);
    c.write(
        "handler.py",
        r#"import os, signal, subprocess, sys, time

def log(name, text):
    with open(name, "a") as f:
        f.write(text + "\n")

restart = os.environ.get("SLURM_RESTART_COUNT", "0")
if os.path.exists("ckpt.txt"):
    with open("ckpt.txt") as f:
        state = f.read().strip()
    log("resumed.txt", f"restart {restart} from {state}")
    sys.exit(0)

def bypass(signum, frame):
    log("term.txt", "bypassed SIGTERM")

def checkpoint(signum, frame):
    with open("ckpt.txt", "w") as f:
        f.write("step 42\n")
    log("requeue.txt", "requeuing")
    subprocess.run(["scontrol", "requeue", os.environ["SLURM_JOB_ID"]])

signal.signal(signal.SIGTERM, bypass)
signal.signal(signal.SIGUSR2, checkpoint)
log("ready.txt", "ready")
while True:
    time.sleep(0.1)
"#,
    );
    c.write(
        "job.sh",
        "#!/bin/sh\n\
         echo $$ > shell.pid\n\
         srun python3 handler.py\n\
         echo \"srun exited $?\" >> shell.txt\n",
    );
    let id = c.submit(&["-o", "job.out", "job.sh"]);
    let job = id.to_string();
    c.wait_file("ready.txt", secs(15));
    let shell: i32 = c.read("shell.pid").trim().parse().expect("a pid");
    c.ok("scancel", &["--signal", "SIGTERM", &job]);
    assert_eq!(c.wait_file("term.txt", secs(5)), "bypassed SIGTERM\n");
    // The batch shell was not signalled (it would have died of it).
    assert!(pid_alive(shell), "{}", c.read("job.out"));
    assert_eq!(c.job_state(id), "RUNNING");
    c.ok("scancel", &["--signal", "USR2", &job]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(c.read("requeue.txt"), "requeuing\n");
    assert_eq!(c.read("resumed.txt"), "restart 1 from step 42\n");
    assert_eq!(c.read("shell.txt"), "srun exited 0\n");
    let out = c.wait_until("both runs in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &["-X", "-P", "-n", "-D", "-j", &job, "--format=JobID,State"],
        );
        (o.stdout.lines().count() == 2).then_some(o.stdout)
    });
    assert_eq!(out, format!("{id}|REQUEUED\n{id}|COMPLETED\n"));
}

/// The batch shell requeues its own job from a USR2 trap (`scancel -b`);
/// the second run ends well.
#[test]
fn batch_shell_requeues_itself_on_a_batch_signal() {
    let c = cluster(1);
    c.write(
        "job.sh",
        "#!/bin/sh\n\
         if [ -n \"$SLURM_RESTART_COUNT\" ]; then echo \"run $SLURM_RESTART_COUNT\" >> shell.txt; exit 0; fi\n\
         trap 'echo requeuing >> shell.txt; scontrol requeue $SLURM_JOB_ID' USR2\n\
         sleep 300 &\n\
         touch ready\n\
         wait $!\n\
         sleep 300 &\n\
         wait $!\n",
    );
    let id = c.submit(&["-o", "job.out", "job.sh"]);
    let job = id.to_string();
    c.wait_until("the script to set its trap", secs(15), || {
        c.work().join("ready").exists().then_some(())
    });
    c.ok("scancel", &["-b", "--signal", "USR2", &job]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED", "{}", c.logs());
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(c.read("shell.txt"), "requeuing\nrun 1\n");
}

#[test]
fn signal_before_the_time_limit() {
    let c = cluster(1);
    let start = Instant::now();
    let id = c.submit(&[
        "-t",
        "1",
        "--signal=B:USR1@55",
        "--wrap",
        "trap 'date +%s > warned.txt' USR1; while :; do sleep 0.1; done",
    ]);
    // 55 s before a 60 s limit: about 5 s after the start.
    c.wait_file("warned.txt", secs(15));
    let took = start.elapsed();
    assert!(took >= secs(3) && took < secs(10), "USR1 after {took:?}");
    assert_eq!(c.job_state(id), "RUNNING");
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(5)), "CANCELLED");
}

/// The one slow test: waits for a one-minute time limit (about 65 s).
#[test]
fn time_limit_really_times_out() {
    let c = cluster(1);
    let id = c.submit(&[
        "-t",
        "1",
        "--wrap",
        "trap '' TERM; echo $$ > shell.pid; while :; do sleep 0.2; done",
    ]);
    c.wait_state(id, "RUNNING", secs(10));
    let pid: i32 = c
        .wait_file("shell.pid", secs(5))
        .trim()
        .parse()
        .expect("a pid");
    let state = c.wait_done(id, secs(80));
    assert_eq!(state, "TIMEOUT", "{}", c.logs());
    assert_eq!(c.squeue_field(id, "%r"), "TimeLimit");
    // The job's own start and end, not when this test saw them (under
    // load a poll can see RUNNING seconds late).
    let run_time = c.job_field(id, "RunTime");
    let secs_of = |t: &str| {
        t.split(':')
            .try_fold(0u64, |acc, p| p.parse::<u64>().ok().map(|v| acc * 60 + v))
    };
    assert!(
        secs_of(&run_time).is_some_and(|s| s >= 60),
        "timed out after only RunTime={run_time}"
    );
    // The script ignored SIGTERM, so KillWait later it got SIGKILL.
    assert!(!pid_alive(pid));
    let code = c.job_field(id, "ExitCode");
    assert!(code == "0:9" || code == "0:15", "ExitCode={code}");
    assert!(Path::new(&c.work().join(format!("slurm-{id}.out"))).exists());
}
