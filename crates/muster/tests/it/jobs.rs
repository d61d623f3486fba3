//! Submitting batch jobs and what they leave behind: ids, states, exit
//! codes, output files, `#SBATCH` lines.

use crate::{cluster, secs};

#[test]
fn submit_runs_the_job_and_writes_slurm_out() {
    let c = cluster(1);
    let out = c.run("sbatch", &["--wrap", "echo hello; exit 0"]);
    assert_eq!(out.code, 0, "{out}\n{}", c.logs());
    assert_eq!(out.stderr, "", "{out}");
    let id: u32 = out
        .stdout
        .strip_prefix("Submitted batch job ")
        .and_then(|r| r.strip_suffix('\n'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected sbatch output {:?}", out.stdout));
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    let text = c.wait_file(&format!("slurm-{id}.out"), secs(5));
    assert_eq!(text, "hello\n");
    assert_eq!(c.job_field(id, "ExitCode"), "0:0");

    let out = c.ok("sbatch", &["--parsable", "--wrap", "true"]);
    assert_eq!(out.stdout, format!("{}\n", id + 1), "{out}");
    assert_eq!(c.wait_done(id + 1, secs(10)), "COMPLETED");
}

#[test]
fn exit_codes_and_signals() {
    let c = cluster(1);
    let failed = c.submit(&["--wrap", "exit 3"]);
    let killed = c.submit(&["--wrap", "kill -9 $$"]);
    assert_eq!(c.wait_done(failed, secs(10)), "FAILED");
    assert_eq!(c.job_field(failed, "ExitCode"), "3:0");
    assert_eq!(c.job_field(failed, "JobState"), "FAILED");
    assert_eq!(c.squeue_field(failed, "%T %r"), "FAILED NonZeroExitCode");
    let state = c.wait_done(killed, secs(10));
    assert_eq!(c.job_field(killed, "ExitCode"), "0:9", "state {state}");
    assert_eq!(state, "FAILED");
    assert_eq!(c.job_field(killed, "Reason"), "RaisedSignal:9(Killed)");
}

#[test]
fn output_patterns_and_append() {
    let c = cluster(1);
    let id = c.submit(&[
        "-o",
        "out-%j-%x.txt",
        "-e",
        "err-%j.txt",
        "-J",
        "myname",
        "--wrap",
        "echo to-out; echo to-err >&2",
    ]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(
        c.wait_file(&format!("out-{id}-myname.txt"), secs(5)),
        "to-out\n"
    );
    assert_eq!(c.wait_file(&format!("err-{id}.txt"), secs(5)), "to-err\n");
    assert!(!c.work().join(format!("slurm-{id}.out")).exists());
    let show = c.run("scontrol", &["show", "job", &id.to_string()]).stdout;
    let work = c.work().display().to_string();
    assert!(
        show.contains(&format!("StdOut={work}/out-{id}-myname.txt")),
        "{show}"
    );
    assert!(
        show.contains(&format!("StdErr={work}/err-{id}.txt")),
        "{show}"
    );

    // Two jobs appending to one file, one after the other.
    let a = c.submit(&[
        "-o",
        "shared.txt",
        "--open-mode=append",
        "--wrap",
        "echo first",
    ]);
    assert_eq!(c.wait_done(a, secs(10)), "COMPLETED");
    let b = c.submit(&[
        "-o",
        "shared.txt",
        "--open-mode=append",
        "--wrap",
        "echo second",
    ]);
    assert_eq!(c.wait_done(b, secs(10)), "COMPLETED");
    assert_eq!(c.read("shared.txt"), "first\nsecond\n");
    // Without append the next job truncates it.
    let t = c.submit(&["-o", "shared.txt", "--wrap", "echo third"]);
    assert_eq!(c.wait_done(t, secs(10)), "COMPLETED");
    assert_eq!(c.read("shared.txt"), "third\n");
}

#[test]
fn sbatch_lines_in_the_script_and_command_line_overrides() {
    let c = cluster(1);
    let script = c.write(
        "job.sh",
        "#!/bin/sh\n#SBATCH -J fromscript\n#SBATCH --time=5\n#SBATCH --hold\nsleep 30\n",
    );
    let script = script.display().to_string();
    let id = c.submit(&["-J", "cli", &script]);
    assert_eq!(c.squeue_field(id, "%j %l"), "cli 5:00");
    let plain = c.submit(&[&script]);
    assert_eq!(
        c.squeue_field(plain, "%j %l %T %r"),
        "fromscript 5:00 PENDING JobHeldUser"
    );
    c.ok("scancel", &[&id.to_string(), &plain.to_string()]);
}

#[test]
fn issue_35_scontrol_top_and_notify() {
    // Expected texts from real scontrol 22.05.8 (slurmctld and slurmd run
    // here with -f on a test config): `scontrol top 999` "Invalid job id
    // specified for job 999", `top <running>` "Job is no longer pending
    // execution for job N", `notify <pending> hi` "job notify failure:
    // Requested operation is presently disabled", `notify 999 hi` "job
    // notify failure: Invalid job id specified", `notify 7` "too few
    // arguments for keyword:notify" (each exit 1); `notify <running> hello
    // world` exits 0 and the job's output gets "slurmstepd-node1: error:
    // hello world".
    let c = cluster(1);
    let blocker = c.submit(&[
        "-n",
        "2",
        "-o",
        "out-%j.txt",
        "--wrap",
        "echo started; sleep 300",
    ]);
    let out_file = format!("out-{blocker}.txt");
    c.wait_file(&out_file, secs(10));
    let a = c.submit(&["--wrap", "true"]);
    let b = c.submit(&["--wrap", "true"]);
    let prio = |id: u32| -> u64 { c.job_field(id, "Priority").parse().unwrap() };
    assert!(prio(a) > prio(b));
    c.ok("scontrol", &["top", &b.to_string()]);
    assert!(prio(b) > prio(a), "{} {}", prio(b), prio(a));
    let fails = |args: &[&str], stderr: String| {
        let out = c.run("scontrol", args);
        assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{out}");
        assert_eq!(out.stderr, stderr, "{out}");
    };
    fails(
        &["top", "999999"],
        "Invalid job id specified for job 999999\n".into(),
    );
    fails(
        &["top", &blocker.to_string()],
        format!("Job is no longer pending execution for job {blocker}\n"),
    );
    fails(
        &["notify", &a.to_string(), "hi"],
        "job notify failure: Requested operation is presently disabled\n".into(),
    );
    fails(
        &["notify", "999999", "hi"],
        "job notify failure: Invalid job id specified\n".into(),
    );
    fails(
        &["notify", &a.to_string()],
        "too few arguments for keyword:notify\n".into(),
    );
    c.ok(
        "scontrol",
        &["notify", &blocker.to_string(), "hello", "world"],
    );
    let text = c.wait_until("the notice in the job's output", secs(10), || {
        let t = c.read(&out_file);
        t.contains("error: hello world").then_some(t)
    });
    assert_eq!(text, "started\nslurmstepd-node1: error: hello world\n");
    c.ok(
        "scancel",
        &[&blocker.to_string(), &a.to_string(), &b.to_string()],
    );
}

#[test]
fn issue_35_array_output_names_and_paths_shown_before_the_start() {
    let c = cluster(1);
    // Real sbatch 22.05: an array's default output is slurm-%A_%a.out.
    let a = c.submit(&["--array=1-2", "--wrap", "echo task $SLURM_ARRAY_TASK_ID"]);
    assert_eq!(
        c.wait_file(&format!("slurm-{a}_1.out"), secs(10)),
        "task 1\n"
    );
    assert_eq!(
        c.wait_file(&format!("slurm-{a}_2.out"), secs(10)),
        "task 2\n"
    );
    // StdOut= from submission on, with %N as written (Slurm's job query
    // expands only %A %a %j %u %x).
    let h = c.submit(&["-H", "-o", "o-%j-%N.txt", "--wrap", "true"]);
    let work = c.work().display().to_string();
    assert_eq!(c.job_field(h, "StdOut"), format!("{work}/o-{h}-%N.txt"));
    assert_eq!(c.job_field(h, "StdErr"), format!("{work}/o-{h}-%N.txt"));
    // squeue -j of a finished job: the header alone, exit 0.
    c.wait_done(a, secs(10));
    let out = c.ok("squeue", &["-j", &a.to_string()]);
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
    c.ok("scancel", &[&h.to_string()]);
}

#[test]
fn issue_35_scontrol_listpids() {
    // Real scontrol 22.05.8: with no job here, the header, then "No job
    // steps exist on this node." (exit 1); for a job, its batch script
    // (`0 0`) and what the script started (`- -`).
    let c = cluster(1);
    let out = c.run("scontrol", &["listpids", "*", "node1"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stdout, "PID      JOBID    STEPID   LOCALID GLOBALID\n");
    assert_eq!(out.stderr, "No job steps exist on this node.\n");
    let id = c.submit(&["-o", "out.txt", "--wrap", "echo $$; sleep 300"]);
    let script_pid = c.wait_file("out.txt", secs(10)).trim().to_string();
    let lines = c.wait_until("the script and its sleep", secs(10), || {
        let out = c.run("scontrol", &["listpids", &id.to_string(), "node1"]);
        (out.code == 0 && out.stdout.lines().count() == 3).then_some(out.stdout)
    });
    let rows: Vec<Vec<&str>> = lines
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let idt = id.to_string();
    assert_eq!(
        rows[0],
        [script_pid.as_str(), &idt, "batch", "0", "0"],
        "{lines}"
    );
    assert_eq!(&rows[1][1..], [idt.as_str(), "batch", "-", "-"], "{lines}");
    let out = c.run("scontrol", &["listpids", "999999", "node1"]);
    assert_eq!(out.code, 1, "{out}");
    assert_eq!(out.stderr, "JobId=999999 does not exist on node node1.\n");
    c.ok("scancel", &[&idt]);
}
