//! `PrologSlurmctld` and `EpilogSlurmctld` (issue 39): run by the
//! controller on its host, with Slurm's environment; the job is
//! CONFIGURING while the prolog runs and its script starts only after it;
//! a failing prolog requeues the job held; the epilog runs after the end.

use crate::{builder, secs};
use e2e::Cluster;
use std::path::Path;

fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn var<'a>(dump: &'a str, name: &str) -> Option<&'a str> {
    dump.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn wait_file(c: &Cluster, path: &Path) -> String {
    c.wait_until(&format!("{}", path.display()), secs(30), || {
        let t = read(path);
        (!t.is_empty()).then_some(t)
    })
}

#[test]
fn issue_39_prolog_slurmctld_runs_before_the_script_and_epilog_slurmctld_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    // The prolog records its environment, then waits for `go`. Each dump
    // is renamed into place whole, so the test never reads half of one; the
    // epilog appends to `order` before its dump, so the dump's arrival
    // means `order` is complete.
    script(
        &dir.path().join("pc"),
        &format!(
            "/usr/bin/env > {d}/prolog.tmp; /bin/mv {d}/prolog.tmp {d}/prolog.env\n\
             i=0; while [ ! -e {d}/go ] && [ $i -lt 600 ]; do /bin/sleep 0.1; i=$((i+1)); done\n\
             echo prolog >> {d}/order\n"
        ),
    );
    script(
        &dir.path().join("ec"),
        &format!(
            "echo epilog >> {d}/order\n\
             /usr/bin/env > {d}/epilog.tmp; /bin/mv {d}/epilog.tmp {d}/epilog.env\n"
        ),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "PrologSlurmctld={d}/pc\nEpilogSlurmctld={d}/ec\nPrologEpilogTimeout=60\n"
        ))
        .start();
    let id = c.submit(&[
        "-J",
        "cf",
        "--wrap",
        &format!("echo job >> {d}/order; exit 3"),
    ]);
    let env = wait_file(&c, &dir.path().join("prolog.env"));
    // While it runs: CONFIGURING (CF), nothing launched.
    assert_eq!(c.squeue_field(id, "%T|%t"), "CONFIGURING|CF");
    assert_eq!(c.job_field(id, "JobState"), "CONFIGURING");
    assert!(!dir.path().join("order").exists());
    let id_text = id.to_string();
    assert_eq!(var(&env, "SLURM_JOB_ID"), Some(id_text.as_str()), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_USER"), Some(e2e::user_name().as_str()));
    assert!(var(&env, "SLURM_JOB_UID").is_some(), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_NODELIST"), Some("node1"), "{env}");
    assert!(var(&env, "SLURM_JOB_PARTITION").is_some(), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_NAME"), Some("cf"), "{env}");
    assert_eq!(var(&env, "SLURM_SCRIPT_CONTEXT"), Some("prolog_slurmctld"));
    assert_eq!(var(&env, "SLURM_CONF"), Some(c.conf().to_str().unwrap()));
    assert_eq!(var(&env, "PATH"), None, "{env}");
    std::fs::write(dir.path().join("go"), "").unwrap();
    assert_eq!(c.wait_done(id, secs(30)), "FAILED");
    let env = wait_file(&c, &dir.path().join("epilog.env"));
    assert_eq!(read(&dir.path().join("order")), "prolog\njob\nepilog\n");
    assert_eq!(var(&env, "SLURM_SCRIPT_CONTEXT"), Some("epilog_slurmctld"));
    assert_eq!(var(&env, "SLURM_JOB_ID"), Some(id_text.as_str()), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_EXIT_CODE2"), Some("3:0"), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_EXIT_CODE"), Some("768"), "{env}");
}

#[test]
fn issue_39_a_failing_prolog_slurmctld_requeues_the_job_held() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(&dir.path().join("pc"), "exit 1\n");
    script(&dir.path().join("ec"), "exit 2\n");
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("PrologSlurmctld={d}/pc\nEpilogSlurmctld={d}/ec\n"))
        .start();
    let id = c.submit(&["--wrap", &format!("touch {d}/ran")]);
    c.wait_until("the job requeued held", secs(30), || {
        (c.squeue_field(id, "%T|%r") == "PENDING|launch failed requeued held").then_some(())
    });
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(c.job_field(id, "Priority"), "0");
    assert!(!dir.path().join("ran").exists());
    // The node is not to blame: it stays in service.
    assert_eq!(c.node_state("node1"), "idle");
    // A job that may not be requeued is cancelled.
    let no = c.submit(&["--no-requeue", "--wrap", &format!("touch {d}/ran2")]);
    assert_eq!(c.wait_done(no, secs(30)), "CANCELLED");
    assert!(!dir.path().join("ran2").exists());
    // A failing EpilogSlurmctld is logged.
    c.wait_until("the epilog's failure logged", secs(30), || {
        c.log("ctld")
            .contains("EpilogSlurmctld failed")
            .then_some(())
    });
    c.ok("scancel", &[&id.to_string()]);
}

/// salloc is granted its allocation only once the PrologSlurmctld ended;
/// one that fails cancels the allocation (an interactive job is never
/// requeued).
#[test]
fn issue_39_salloc_waits_for_prolog_slurmctld() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(
        &dir.path().join("pc"),
        &format!(
            "/bin/sleep 1\n\
             if [ -e {d}/fail ]; then exit 1; fi\n\
             echo $SLURM_JOB_ID > {d}/prolog-done\n"
        ),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("PrologSlurmctld={d}/pc\n"))
        .start();
    let out = c.ok("salloc", &["-N1", "cat", &format!("{d}/prolog-done")]);
    assert!(out.stdout.trim().parse::<u32>().is_ok(), "{out}");
    assert!(out.stderr.contains("Granted job allocation"), "{out}");
    std::fs::write(dir.path().join("fail"), "").unwrap();
    let out = c.run("salloc", &["-N1", "true"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("has been revoked"), "{out}");
}
