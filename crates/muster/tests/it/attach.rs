//! `sattach`: a second client attached to a running step gets its output
//! from then on (labelled with `-l`) and can write to its stdin.

use crate::{cluster, secs};
use std::io::Write;
use std::process::Stdio;

/// Waits until step `step` (`J.S`) is listed by `squeue -s`.
fn wait_step(c: &e2e::Cluster, step: &str) {
    c.wait_until(&format!("step {step}"), secs(30), || {
        let out = c.run("squeue", &["-s", "-h", "-o", "%i"]);
        out.stdout.lines().any(|l| l.trim() == step).then_some(())
    });
}

#[test]
fn sattach_gets_the_lines_printed_after_it_attached_with_labels() {
    let c = cluster(1);
    let id = c.submit(&[
        "-n",
        "2",
        "-o",
        "job.out",
        "--wrap",
        "srun -n2 bash -c 'for i in $(seq 1 40); do echo line $i; sleep 0.2; done'",
    ]);
    let step = format!("{id}.0");
    wait_step(&c, &step);
    // Some lines went by before sattach came.
    c.wait_until("the step's first lines", secs(30), || {
        c.read("job.out").contains("line 2\n").then_some(())
    });
    let out = c.run("sattach", &["-l", &step]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stderr, "", "{out}");
    let mut last = [0u32; 2];
    for line in out.stdout.lines() {
        let (task, rest) = line
            .split_once(": line ")
            .unwrap_or_else(|| panic!("{out}"));
        let task: usize = task.parse().unwrap_or_else(|_| panic!("{out}"));
        let n: u32 = rest.parse().unwrap_or_else(|_| panic!("{out}"));
        assert!(task < 2 && n > last[task], "{out}");
        last[task] = n;
    }
    // The lines after it attached, to the end, but not the first ones.
    assert_eq!(last, [40, 40], "{out}");
    assert!(!out.stdout.contains(": line 1\n"), "{out}");
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED");
}

#[test]
fn sattach_writes_to_the_steps_stdin() {
    let c = cluster(1);
    // An interactive srun whose stdin stays open and silent.
    let mut srun = c
        .command("srun")
        .args(["-n1", "bash", "-c", "read x; echo got $x"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("starting srun");
    let id = c.wait_until("srun's job", secs(30), || {
        let out = c.run("squeue", &["-s", "-h", "-o", "%i"]);
        out.stdout
            .lines()
            .find_map(|l| l.trim().strip_suffix(".0").map(str::to_string))
    });
    let mut sattach = c
        .command("sattach")
        .arg(format!("{id}.0"))
        .stdin(Stdio::piped())
        .spawn()
        .expect("starting sattach");
    // Once sattach is attached, its line reaches the task.
    sattach
        .stdin
        .as_mut()
        .expect("sattach's stdin")
        .write_all(b"hello\n")
        .expect("writing to sattach");
    let out = sattach.wait_with_output().expect("sattach");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got hello\n");
    assert!(out.status.success());
    drop(srun.stdin.take());
    let out = srun.wait_with_output().expect("srun");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got hello\n");
}
