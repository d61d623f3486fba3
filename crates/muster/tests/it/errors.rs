//! Refusals, byte for byte as Slurm 22.05 prints them (the `err_*`
//! references), with Slurm's exit codes.

use crate::{builder, cluster, reference, secs};
use e2e::{Cluster, Output};

/// Checks stdout, stderr and the exit code; when the reference file exists
/// it must say the same as `stderr` (so the expectation is Slurm's).
fn check(out: &Output, code: i32, stderr: &str, reference_name: Option<&str>) {
    if let Some(name) = reference_name {
        if let Some(r) = reference(name) {
            assert_eq!(r, stderr, "reference {name}");
        }
    }
    assert_eq!(out.stderr, stderr, "{out}");
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(out.code, code, "{out}");
}

fn no_jobs(c: &Cluster) {
    assert_eq!(
        c.run("squeue", &["-h", "-t", "all"]).stdout,
        "",
        "a refused job was queued"
    );
}

#[test]
fn sbatch_refusals() {
    let c = cluster(1);
    check(
        &c.run("sbatch", &["-p", "nosuchpart", "--wrap=true"]),
        1,
        "sbatch: error: invalid partition specified: nosuchpart\n\
         sbatch: error: Batch job submission failed: Invalid partition name specified\n",
        Some("err_sbatch_unknown_partition.err"),
    );
    for (arg, name) in [
        ("--time=abc", "err_sbatch_invalid_time.err"),
        ("--time=1:2:3:4", "err_sbatch_invalid_time2.err"),
    ] {
        check(
            &c.run("sbatch", &[arg, "--wrap=true"]),
            255,
            "sbatch: error: Invalid --time specification\n",
            Some(name),
        );
    }
    for (arg, name) in [
        ("--gres=foo:1", "err_sbatch_invalid_gres.err"),
        ("--gres=gpu:x:y:z", "err_sbatch_invalid_gres_syntax.err"),
    ] {
        check(
            &c.run("sbatch", &[arg, "--wrap=true"]),
            1,
            "sbatch: error: Invalid generic resource (gres) specification\n",
            Some(name),
        );
    }
    check(
        &c.run("sbatch", &["--mem=999999", "--wrap=true"]),
        1,
        "sbatch: error: Memory specification can not be satisfied\n\
         sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
        Some("err_sbatch_too_much_mem.err"),
    );
    check(
        &c.run_stdin("sbatch", &[], ""),
        1,
        "sbatch: error: Batch script is empty!\n",
        Some("err_sbatch_no_args.err"),
    );
    check(
        &c.run("sbatch", &["/nonexistent/script.sh"]),
        1,
        "sbatch: error: Unable to open file /nonexistent/script.sh\n",
        Some("err_sbatch_missing_file.err"),
    );
    c.write("noshebang.sh", "echo hi\n");
    check(
        &c.run("sbatch", &["noshebang.sh"]),
        1,
        "sbatch: error: This does not look like a batch script.  The first\n\
         sbatch: error: line must start with #! followed by the path to an interpreter.\n\
         sbatch: error: For instance: #!/bin/sh\n",
        Some("err_sbatch_no_shebang.err"),
    );
    check(
        &c.run("sbatch", &["--bogus", "--wrap=true"]),
        1,
        "sbatch: unrecognized option '--bogus'\n\
         Try \"sbatch --help\" for more information\n",
        None,
    );
    no_jobs(&c);
}

#[test]
fn gres_count_beyond_every_node() {
    let c = builder().nodes(2).node_extra(1, "Gres=gpu:a100:2").start();
    check(
        &c.run("sbatch", &["--gres=gpu:a100:9", "--wrap=true"]),
        1,
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
        Some("err_sbatch_invalid_gres_count.err"),
    );
    no_jobs(&c);
    let id = c.submit(&["--gres=gpu:a100:2", "--wrap=true"]);
    assert_eq!(c.wait_done(id, secs(10)), "COMPLETED");
    assert_eq!(c.job_field(id, "NodeList"), "node1");
}

#[test]
fn more_nodes_than_the_partition_is_accepted_and_waits() {
    let c = cluster(2);
    let out = c.run("sbatch", &["-N", "10", "--wrap=true"]);
    assert_eq!(out.code, 0, "{out}");
    let id: u32 = out
        .stdout
        .strip_prefix("Submitted batch job ")
        .and_then(|s| s.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(out.stderr, "");
    // Real Slurm 22.05 (`sbatch -N5` on four nodes) showed PartitionConfig
    // until its scheduler's first pass, PartitionNodeLimit from then on.
    assert_eq!(c.squeue_field(id, "%T %r"), "PENDING PartitionNodeLimit");
    c.ok("scancel", &[&id.to_string()]);
}

#[test]
fn unknown_job_ids() {
    let c = cluster(1);
    let want = "slurm_load_jobs error: Invalid job id specified\n";
    check(
        &c.run("squeue", &["-j", "999999"]),
        1,
        want,
        Some("err_squeue_nonexistent.err"),
    );
    check(
        &c.run("scontrol", &["show", "job", "999999"]),
        1,
        want,
        Some("err_scontrol_show_job_nonexistent.err"),
    );
}

#[test]
fn issue_35_bad_user_and_node_filters_are_errors() {
    // Expected output from real Slurm 22.05.8 (slurmctld and slurmd run
    // here with -f on a 4-node test config): `scancel -u nosuchuser`,
    // `squeue -w node9`, `squeue -w node[1-9]`, `squeue -u nosuchuser`.
    let c = cluster(2);
    let id = c.submit(&["--hold", "--wrap=true"]);
    check(
        &c.run("scancel", &["-u", "nosuchuser"]),
        1,
        "scancel: error: Invalid user name: nosuchuser\n",
        None,
    );
    check(
        &c.run("scancel", &["-u", "nosuchuser", &id.to_string()]),
        1,
        "scancel: error: Invalid user name: nosuchuser\n",
        None,
    );
    check(
        &c.run("squeue", &["-w", "node9"]),
        1,
        "squeue: error: Invalid node name node9\n",
        None,
    );
    check(
        &c.run("squeue", &["-w", "node[1-9]"]),
        1,
        "squeue: error: Invalid node name node3\n",
        None,
    );
    // An unknown user is only complained about; the filter matches nothing.
    let out = c.run("squeue", &["-h", "-u", "nosuchuser"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", "squeue: error: Invalid user: nosuchuser\n\n"),
        "{out}"
    );
    assert_eq!(c.job_state(id), "PENDING");
    c.ok("scancel", &[&id.to_string()]);
}

#[test]
fn issue_35_test_only_fails_for_a_job_that_could_never_run() {
    // Real Slurm 22.05.8 on 4 nodes: `sbatch --test-only -N 5 --wrap=true`
    // prints this and exits 1 (`sbatch -N 5` itself is queued).
    let c = cluster(2);
    check(
        &c.run("sbatch", &["--test-only", "-N", "3", "--wrap=true"]),
        1,
        "allocation failure: Requested node configuration is not available\n",
        None,
    );
    no_jobs(&c);
}

#[test]
fn a_bad_slurm_conf_stops_the_controller() {
    let dir = tempfile_dir();
    let conf = dir.join("slurm.conf");
    let text = format!(
        "ClusterName=bad\nSlurmctldHost={}(127.0.0.1)\nSlurmctldPort={}\nNodeName=node1 CPUs=abc\nPartitionName=debug Nodes=node1\n",
        e2e::hostname(),
        e2e::free_port()
    );
    std::fs::write(&conf, text).expect("writing slurm.conf");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_muster"))
        .args(["ctld", "-f"])
        .arg(&conf)
        .env_remove("SLURM_CONF")
        .output()
        .expect("running muster ctld");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(out.status.code().is_some(), "killed by a signal: {stderr}");
    let place = format!("{}:4", conf.display());
    assert!(stderr.contains(&place), "no {place} in: {stderr}");
    assert!(stderr.contains("abc"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "muster-e2e-badconf-{}-{}",
        std::process::id(),
        e2e::free_port()
    ));
    std::fs::create_dir_all(&d).expect("creating a temp dir");
    d
}

/// Issue 38 item 1: an option muster cannot honour is refused before
/// anything is queued, a hint is warned about and ignored, and a
/// slurm.conf key that does nothing here is logged by the daemons at start.
#[test]
fn issue_38_unsupported_options_are_refused_or_warned() {
    let c = builder()
        .nodes(1)
        .conf_extra("ResvProlog=/bin/true")
        .start();
    check(
        &c.run("sbatch", &["--mincpus=2", "--wrap=true"]),
        1,
        "sbatch: error: --mincpus is not supported here: nodes are not chosen by a minimum CPU count\n",
        None,
    );
    check(
        &c.run("srun", &["--relative=1", "true"]),
        1,
        "srun: error: -r/--relative is not supported here: steps are not placed relative to a node\n",
        None,
    );
    check(
        &c.run("salloc", &["--tmp=1G", "true"]),
        1,
        "salloc: error: --tmp is not supported here: temporary disk space is not a resource\n",
        None,
    );
    no_jobs(&c);
    let out = c.run("sbatch", &["--wckey=w", "--wrap=true"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stderr,
        "sbatch: warning: --wckey is ignored here: wckeys are not tracked\n"
    );
    assert!(out.stdout.starts_with("Submitted batch job "), "{out}");
    let logged = |name: &str| {
        c.log(name)
            .lines()
            .filter(|l| l.contains("ResvProlog=/bin/true does nothing here"))
            .count()
    };
    assert_eq!(logged("ctld"), 1, "{}", c.logs());
    assert_eq!(logged("noded-node1"), 1, "{}", c.logs());
}
