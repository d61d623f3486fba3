//! Issue 34, items 5 and 6: a submission whose answer was lost (the
//! controller journaled the job and died before answering) gets its job
//! once, not twice and not "connect failure"; a request over the
//! controller's 16 MiB limit is refused with a message that says so.

use crate::{cluster, secs};
use std::process::Stdio;

#[test]
fn issue_34_a_submission_whose_answer_was_lost_gets_its_one_job() {
    let mut c = cluster(1);
    // The controller's test fault hook (ctld::fault): it exits right after
    // the first accepted submission is on disk, before answering it.
    c.spawn_ctld_env(&[("MUSTER_TEST_FAULT", "exit_after_submit_commit")]);
    c.wait_until("the controller to answer", secs(20), || {
        c.run("scontrol", &["ping"]).ok().then_some(())
    });
    let mut sbatch = c.command("sbatch");
    sbatch
        .args(["--hold", "--wrap", "true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = sbatch.spawn().expect("starting sbatch");
    let status = c
        .wait_ctld_exit(secs(30))
        .unwrap_or_else(|| panic!("the fault hook did not end the controller\n{}", c.logs()));
    assert_eq!(status.code(), Some(86), "{}", c.logs());
    // sbatch is still trying; the controller comes back and recovers the
    // journaled job.
    c.restart_ctld();
    let out = child.wait_with_output().expect("waiting for sbatch");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}\n{}",
        c.logs()
    );
    assert_eq!(stderr, "");
    let id: u32 = stdout
        .trim()
        .strip_prefix("Submitted batch job ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {stdout:?}"));
    // Exactly one job: the one journaled before the crash.
    let listed = c.ok("squeue", &["-h", "-o", "%i %T"]).stdout;
    assert_eq!(listed, format!("{id} PENDING\n"));
}

#[test]
fn issue_34_a_script_over_the_request_limit_is_refused_with_its_size() {
    let c = cluster(1);
    let script = format!("#!/bin/sh\n#{}\ntrue\n", "x".repeat(17 << 20));
    let path = c.write("big.sh", &script);
    let out = c.run("sbatch", &[path.to_str().expect("a UTF-8 path")]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            format!(
                "sbatch: error: Batch job script is too large ({} bytes, limit 16 MiB)\n",
                script.len()
            )
            .as_str()
        ),
        "{}",
        c.logs()
    );
    // Nothing was made, and the controller serves on.
    assert_eq!(c.ok("squeue", &["-h"]).stdout, "");
    // A small submission is accepted as before.
    let id = c.submit(&["--hold", "--wrap", "true"]);
    assert!(id > 0);
}

#[test]
fn issue_34_srun_forwards_stdin_larger_than_the_request_limit() {
    let c = cluster(1);
    // 20 MiB: more than any one request may carry; srun forwards it to the
    // task in pieces.
    let input = "y".repeat(20 << 20);
    let out = c.run_stdin("srun", &["-n1", "wc", "-c"], &input);
    assert_eq!(
        (out.code, out.stdout.trim()),
        (0, "20971520"),
        "{out}\n{}",
        c.logs()
    );
}
