//! Site scripts (issue 39): Prolog and Epilog on the node, with Slurm's
//! environment and failure semantics, and HealthCheckProgram.

use crate::{builder, secs};
use e2e::Cluster;
use std::path::Path;

/// Writes an executable script.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `NAME=value` of an `env` dump.
fn var<'a>(dump: &'a str, name: &str) -> Option<&'a str> {
    dump.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The node's `Reason=` without its `[user@time]`.
fn reason(c: &Cluster, node: &str) -> String {
    let out = c.run("scontrol", &["show", "node", node]);
    out.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Reason="))
        .map(|r| r.split(" [").next().unwrap_or("").to_string())
        .unwrap_or_default()
}

/// A Prolog glob runs its scripts in order before the batch script, as
/// root with Slurm's variables and nothing else; the Epilog after it.
#[test]
fn prolog_and_epilog_run_around_the_job_with_slurms_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    std::fs::create_dir(dir.path().join("prolog.d")).unwrap();
    script(
        &dir.path().join("prolog.d/10-env"),
        &format!("/usr/bin/env > {d}/prolog.env\necho 10 >> {d}/order\n"),
    );
    script(
        &dir.path().join("prolog.d/20-next"),
        &format!("echo 20 >> {d}/order\n"),
    );
    std::fs::write(dir.path().join("prolog.d/README"), "not a script").unwrap();
    script(
        &dir.path().join("epilog"),
        &format!("/usr/bin/env > {d}/epilog.env\necho epilog >> {d}/order\n"),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "Prolog={d}/prolog.d/[0-9]*\nEpilog={d}/epilog\nPrologEpilogTimeout=30\n"
        ))
        .start();
    let id = c.submit(&["--wrap", &format!("echo job >> {d}/order")]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert_eq!(read(&dir.path().join("order")), "10\n20\njob\nepilog\n");
    let env = read(&dir.path().join("prolog.env"));
    let id_text = id.to_string();
    assert_eq!(var(&env, "SLURM_JOB_ID"), Some(id_text.as_str()), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_USER"), Some(e2e::user_name().as_str()));
    let uid = nix_uid();
    assert_eq!(var(&env, "SLURM_JOB_UID"), Some(uid.as_str()), "{env}");
    assert!(var(&env, "SLURM_JOB_GID").is_some(), "{env}");
    assert_eq!(var(&env, "SLURM_JOB_NODELIST"), Some("node1"), "{env}");
    assert!(var(&env, "SLURM_JOB_PARTITION").is_some(), "{env}");
    assert!(var(&env, "SLURM_CLUSTER_NAME").is_some(), "{env}");
    assert_eq!(var(&env, "SLURMD_NODENAME"), Some("node1"), "{env}");
    assert_eq!(var(&env, "SLURM_SCRIPT_CONTEXT"), Some("prolog_slurmd"));
    assert_eq!(
        var(&env, "SLURM_CONF"),
        Some(c.conf().to_str().unwrap()),
        "{env}"
    );
    // Only Slurm's variables: not the daemon's own environment.
    assert_eq!(var(&env, "PATH"), None, "{env}");
    assert_eq!(var(&env, "HOME"), None, "{env}");
    let env = read(&dir.path().join("epilog.env"));
    assert_eq!(var(&env, "SLURM_JOB_ID"), Some(id_text.as_str()), "{env}");
    assert_eq!(var(&env, "SLURM_SCRIPT_CONTEXT"), Some("epilog_slurmd"));
    assert_eq!(c.node_state("node1"), "idle");
}

fn nix_uid() -> String {
    // The tests run as the user the jobs run as.
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A failing Prolog drains the node ("Prolog error") and the job goes
/// back to the queue held, `launch failed requeued held`, its script
/// never run.
#[test]
fn a_failing_prolog_drains_the_node_and_requeues_the_job_held() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(&dir.path().join("prolog"), "exit 1\n");
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("Prolog={d}/prolog\n"))
        .start();
    let id = c.submit(&["--wrap", &format!("touch {d}/ran")]);
    c.wait_until("the node drained", secs(20), || {
        (reason(&c, "node1") == "Prolog error").then_some(())
    });
    c.wait_until("the job requeued held", secs(20), || {
        let s = c.squeue_field(id, "%T|%r");
        (s == "PENDING|launch failed requeued held").then_some(())
    });
    assert_eq!(c.job_field(id, "Restarts"), "1");
    assert_eq!(c.job_field(id, "Priority"), "0");
    assert!(!dir.path().join("ran").exists());
    assert_eq!(c.node_state("node1"), "drain");
    c.ok("scancel", &[&id.to_string()]);
    c.wait_done(id, secs(10));
}

/// A Prolog that outlives PrologEpilogTimeout is killed and counts as
/// failed.
#[test]
fn a_prolog_past_its_timeout_fails() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(&dir.path().join("prolog"), "exec sleep 600\n");
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("Prolog={d}/prolog\nPrologEpilogTimeout=1\n"))
        .start();
    let id = c.submit(&["--wrap", "true"]);
    c.wait_until("the job requeued held", secs(30), || {
        let s = c.squeue_field(id, "%T|%r");
        (s == "PENDING|launch failed requeued held").then_some(())
    });
    assert_eq!(reason(&c, "node1"), "Prolog error");
    c.ok("scancel", &[&id.to_string()]);
    c.wait_done(id, secs(10));
}

/// A failing Epilog drains the node after the job ended, and the job
/// keeps its own end (COMPLETED).
#[test]
fn a_failing_epilog_drains_the_node_after_the_job_completes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(&dir.path().join("epilog"), "exit 3\n");
    let c = builder()
        .nodes(1)
        .conf_extra(&format!("Epilog={d}/epilog\n"))
        .start();
    let id = c.submit(&["--wrap", "true"]);
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert_eq!(reason(&c, "node1"), "Epilog error");
    assert_eq!(c.node_state("node1"), "drain");
    let acct = c.wait_until("the job's record", secs(10), || {
        let o = c.run(
            "sacct",
            &["-n", "-X", "-P", "-o", "State", "-j", &id.to_string()],
        );
        (!o.stdout.trim().is_empty()).then_some(o.stdout)
    });
    assert_eq!(acct.trim(), "COMPLETED");
}

/// The dashboard's node page (restd, as the cluster's user with a token).
fn node_page(restd: &crate::rest::Restd, token: &str, node: &str) -> String {
    let (status, body) = restd.call(
        "GET",
        &format!("/nodes/{node}"),
        &[("X-SLURM-USER-TOKEN", token)],
        "",
    );
    assert_eq!(status, 200, "{body}");
    body
}

/// `HealthCheckParameters=drain_on_failure`: a failing check drains the
/// node with its first output line; the node is resumed once it passes.
/// The node's dashboard page lists the runs (issue 41): the failure, its
/// output, the drain, then the pass that resumed it.
#[test]
fn health_check_drain_on_failure_drains_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    std::fs::write(dir.path().join("sick"), "").unwrap();
    script(
        &dir.path().join("health"),
        &format!(
            "echo run >> {d}/runs\n\
             if [ -e {d}/sick ]; then echo 'disk /scratch full'; echo more; exit 1; fi\nexit 0\n"
        ),
    );
    let key = crate::rest::jwt_key();
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "HealthCheckProgram={d}/health\nHealthCheckInterval=1\n\
             HealthCheckParameters=drain_on_failure\n\
             AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={}\n",
            key.path.display()
        ))
        .start();
    let restd = crate::rest::Restd::start(&c);
    let token = crate::rest::token_of(&c.run("scontrol", &["token"]));
    c.wait_until("the node drained by its health check", secs(20), || {
        (reason(&c, "node1") == "disk /scratch full").then_some(())
    });
    assert_eq!(c.node_state("node1"), "drain");
    // The page shows the failed run, its output and the drain it made
    // (the report follows the drain, so wait for it).
    let page = c.wait_until("the failed check on the node page", secs(20), || {
        let page = node_page(&restd, &token, "node1");
        page.contains("drained the node").then_some(page)
    });
    assert!(page.contains("Recent health checks"), "{page}");
    assert!(page.contains("failed</strong> (exit code 1)"), "{page}");
    assert!(page.contains("<td>disk /scratch full</td>"), "{page}");
    assert!(page.contains("drained: disk /scratch full"), "{page}");
    std::fs::remove_file(dir.path().join("sick")).unwrap();
    c.wait_node_state("node1", "idle", secs(20));
    let page = c.wait_until("the passing check on the node page", secs(20), || {
        let page = node_page(&restd, &token, "node1");
        page.contains("resumed the node").then_some(page)
    });
    // Newest first: the pass that resumed the node above the failures.
    let resumed = page.find("resumed the node").unwrap();
    let drained = page.find("drained the node").unwrap();
    assert!(resumed < drained, "{page}");
    // An administrator's drain is not the check's to lift.
    c.ok(
        "scontrol",
        &["update", "nodename=node1", "state=drain", "reason=admin"],
    );
    // Two more passing checks after it: the drain stays.
    let runs = || read(&dir.path().join("runs")).lines().count();
    let before = runs();
    c.wait_until("two more health checks", secs(20), || {
        (runs() >= before + 2).then_some(())
    });
    assert_eq!(reason(&c, "node1"), "admin");
}

/// An NHC-style HealthCheckProgram drains its node itself with scontrol.
#[test]
fn a_health_check_program_drains_its_node_with_scontrol() {
    let dir = tempfile::tempdir().unwrap();
    let muster = env!("CARGO_BIN_EXE_muster");
    script(
        &dir.path().join("nhc"),
        &format!(
            "exec {muster} scontrol update nodename=$SLURMD_NODENAME state=drain \
             reason='NHC: check_fs_mount failed'\n"
        ),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "HealthCheckProgram={}/nhc\nHealthCheckInterval=60\n",
            dir.path().display()
        ))
        .start();
    c.wait_until("the node drained by NHC", secs(20), || {
        (reason(&c, "node1") == "NHC: check_fs_mount failed").then_some(())
    });
    assert_eq!(c.node_state("node1"), "drain");
}

/// A key muster does not act on is refused, with its file and line.
#[test]
fn unsupported_script_keys_are_refused_by_check_config() {
    let c = builder().nodes(1).start();
    let conf = c.conf().parent().unwrap().join("refused.conf");
    let text = std::fs::read_to_string(c.conf()).unwrap();
    std::fs::write(&conf, format!("{text}PrologFlags=Contain,X11\n")).unwrap();
    let out = c.run("check-config", &["-f", conf.to_str().unwrap()]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("X11") || out.stdout.contains("X11"),
        "{out}"
    );
}

/// TaskProlog (slurm.conf's, then srun's `--task-prolog`) runs before each
/// task as the user: its `export`, `unset` and `print` lines act on the
/// task; TaskEpilog and `--task-epilog` run after it.
#[test]
fn task_prolog_exports_reach_the_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(
        &dir.path().join("task_prolog"),
        "echo \"export GREETING=hello-$SLURM_PROCID\"\n\
         echo 'export WHO=conf'\n\
         echo 'unset DROP_ME'\n\
         echo 'print from the task prolog'\n",
    );
    script(
        &dir.path().join("task_epilog"),
        &format!("echo \"$GREETING\" > {d}/epilog.$SLURM_PROCID\n"),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "TaskProlog={d}/task_prolog\nTaskEpilog={d}/task_epilog\n"
        ))
        .start();
    c.write("srun_prolog", "#!/bin/sh\necho 'export WHO=srun'\n");
    c.write(
        "srun_epilog",
        &format!("#!/bin/sh\necho done > {d}/srun_epilog.$SLURM_PROCID\n"),
    );
    let out = c.run_env(
        "srun",
        &[
            "-n2",
            "--task-prolog=srun_prolog",
            "--task-epilog=srun_epilog",
            "sh",
            "-c",
            "echo \"$SLURM_PROCID $GREETING $WHO ${DROP_ME:-unset}\"",
        ],
        &[("DROP_ME", "kept")],
    );
    assert_eq!(out.code, 0, "{out}");
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "0 hello-0 srun unset",
            "1 hello-1 srun unset",
            "from the task prolog",
            "from the task prolog",
        ],
        "{out}"
    );
    assert_eq!(read(&dir.path().join("epilog.0")), "hello-0\n");
    assert_eq!(read(&dir.path().join("epilog.1")), "hello-1\n");
    assert_eq!(read(&dir.path().join("srun_epilog.1")), "done\n");
}

/// The other nodes of a batch job run the Prolog at the job's first step
/// there and the Epilog at its end; a job without a batch script (a
/// standalone srun) runs them on its nodes the same way.
#[test]
fn steps_run_the_prolog_and_epilog_on_their_other_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(
        &dir.path().join("prolog"),
        &format!("echo $SLURM_JOB_ID >> {d}/prolog.$SLURMD_NODENAME\n"),
    );
    script(
        &dir.path().join("epilog"),
        &format!("echo $SLURM_JOB_ID >> {d}/epilog.$SLURMD_NODENAME\n"),
    );
    let c = builder()
        .nodes(2)
        .conf_extra(&format!("Prolog={d}/prolog\nEpilog={d}/epilog\n"))
        .start();
    let id = c.submit(&["-N2", "--wrap", "srun -N2 true; srun -N2 true"]);
    assert_eq!(c.wait_done(id, secs(30)), "COMPLETED");
    let once = format!("{id}\n");
    for node in ["node1", "node2"] {
        let path = dir.path().join(format!("epilog.{node}"));
        c.wait_until(&format!("the epilog on {node}"), secs(20), || {
            (read(&path) == once).then_some(())
        });
        // Once per node, though two steps ran there.
        assert_eq!(read(&dir.path().join(format!("prolog.{node}"))), once);
    }
    let out = c.run("srun", &["-N1", "-w", "node2", "true"]);
    assert_eq!(out.code, 0, "{out}");
    let path = dir.path().join("epilog.node2");
    c.wait_until("the standalone srun's epilog", secs(20), || {
        (read(&path).lines().count() == 2).then_some(())
    });
    assert_eq!(read(&dir.path().join("prolog.node2")).lines().count(), 2);
}

/// The batch script is a task too: TaskProlog's exports reach it, and
/// TaskEpilog runs after it in its environment.
#[test]
fn task_prolog_exports_reach_the_batch_script() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    script(
        &dir.path().join("task_prolog"),
        "echo \"export GREETING=hello-$SLURM_JOB_ID\"\necho 'unset DROP_ME'\n",
    );
    script(
        &dir.path().join("task_epilog"),
        &format!("echo \"$GREETING\" > {d}/epilog.batch\n"),
    );
    let c = builder()
        .nodes(1)
        .conf_extra(&format!(
            "TaskProlog={d}/task_prolog\nTaskEpilog={d}/task_epilog\n"
        ))
        .start();
    let out = c.run_env(
        "sbatch",
        &[
            "--parsable",
            "-o",
            "out.txt",
            "--wrap",
            "echo \"$GREETING ${DROP_ME:-unset}\"",
        ],
        &[("DROP_ME", "kept")],
    );
    assert_eq!(out.code, 0, "{out}");
    let id: u32 = out.stdout.trim().parse().unwrap();
    assert_eq!(c.wait_done(id, secs(20)), "COMPLETED");
    assert_eq!(c.read("out.txt"), format!("hello-{id} unset\n"));
    assert_eq!(
        read(&dir.path().join("epilog.batch")),
        format!("hello-{id}\n")
    );
}

/// srun's `--prolog` and `--epilog` run where srun runs, with the step's
/// command line as arguments; a failing `--prolog` aborts srun.
#[test]
fn srun_prolog_and_epilog_run_locally() {
    let c = builder().nodes(1).start();
    c.write(
        "sp",
        "#!/bin/sh\necho \"prolog $SLURM_JOB_ID $*\" >> hooks.log\n",
    );
    c.write(
        "se",
        "#!/bin/sh\necho \"epilog $SLURM_JOB_ID $SLURM_STEP_ID $*\" >> hooks.log\n",
    );
    let out = c.run(
        "srun",
        &[
            "--prolog=./sp",
            "--epilog=./se",
            "sh",
            "-c",
            "echo task >> hooks.log",
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    let log = c.read("hooks.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(
        lines[0].starts_with("prolog ") && lines[0].ends_with(" sh -c echo task >> hooks.log"),
        "{log}"
    );
    assert_eq!(lines[1], "task");
    assert!(
        lines[2].starts_with("epilog ") && lines[2].contains(" 0 sh -c"),
        "{log}"
    );
    c.write("bad", "#!/bin/sh\nexit 3\n");
    let out = c.run("srun", &["--prolog=./bad", "true"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("srun prolog failed: status=3"), "{out}");
}
