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

#[test]
fn scancel_signal_reaches_a_trapping_script() {
    let c = cluster(1);
    let id = c.submit(&[
        "--wrap",
        "trap 'echo usr1 >> got.txt' USR1; touch ready; while :; do sleep 0.1; done",
    ]);
    c.wait_until("the script to set its trap", secs(10), || {
        c.work().join("ready").exists().then_some(())
    });
    c.ok("scancel", &["--batch", "--signal=USR1", &id.to_string()]);
    assert_eq!(c.wait_file("got.txt", secs(5)), "usr1\n");
    assert_eq!(c.job_state(id), "RUNNING");
    // Without --batch Slurm signals only the job's steps, not the batch
    // shell; muster has no steps and signals the script's process group.
    // FIXME(divergence): this second USR1 would not reach the script in Slurm.
    c.ok("scancel", &["-s", "USR1", &id.to_string()]);
    c.wait_until("a second USR1", secs(5), || {
        (c.read("got.txt") == "usr1\nusr1\n").then_some(())
    });
    assert_eq!(c.job_state(id), "RUNNING");
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id, secs(5)), "CANCELLED");
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
