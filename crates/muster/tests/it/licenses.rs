//! Licenses end to end: `Licenses=` in slurm.conf, `sbatch -L`, a job
//! waiting with reason Licenses until another gives its license back,
//! `scontrol show licenses`, squeue `%W`, `scontrol show job`, sacct TRES,
//! and the refusal of an unknown license.

use crate::{builder, secs};

/// A job that runs until the file `name` appears in the work directory.
fn gate(name: &str) -> String {
    format!("while [ ! -e {name} ]; do sleep 0.1; done")
}

#[test]
fn a_job_waits_for_a_license_and_runs_when_one_frees() {
    let c = builder()
        .nodes(2)
        .conf_extra("Licenses=matlab:1,ansys:3")
        .start();
    let a = c.submit(&["-L", "matlab", "--wrap", &gate("go-a")]);
    c.wait_state(a, "RUNNING", secs(10));
    let b = c.submit(&["--licenses=matlab:1", "--wrap", "true"]);
    c.wait_until("job b waits for Licenses", secs(10), || {
        (c.squeue_field(b, "%T %r") == "PENDING Licenses").then_some(())
    });
    assert_eq!(c.squeue_field(b, "%W"), "matlab:1");
    let lic = c.ok("scontrol", &["show", "licenses"]);
    assert_eq!(
        lic.stdout,
        "LicenseName=ansys\n    Total=3 Used=0 Free=3 Reserved=0 Remote=no\n\
         LicenseName=matlab\n    Total=1 Used=1 Free=0 Reserved=0 Remote=no\n"
    );
    let job = c.ok("scontrol", &["show", "job", &a.to_string()]);
    assert!(job.stdout.contains(" Licenses=matlab:1 "), "{job}");

    // More than configured, or a name slurm.conf does not have: refused.
    for bad in ["matlab:2", "nosuch"] {
        let out = c.run("sbatch", &["-L", bad, "--wrap", "true"]);
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(
            out.stderr,
            "sbatch: error: Batch job submission failed: Invalid license specification\n"
        );
    }

    // srun and salloc take -L too (a standalone srun's allocation).
    let out = c.run("srun", &["-L", "nosuch", "true"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr.contains("Invalid license specification"),
        "{out}"
    );
    let out = c.ok("srun", &["-L", "ansys:2", "echo", "ran"]);
    assert_eq!(out.stdout, "ran\n");
    let out = c.run("salloc", &["-L", "a|b", "true"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("not supported"), "{out}");

    c.write("go-a", "");
    assert_eq!(c.wait_done(a, secs(10)), "COMPLETED");
    assert_eq!(c.wait_done(b, secs(10)), "COMPLETED");
    let out = c.wait_until("b in sacct", secs(10), || {
        let o = c.run(
            "sacct",
            &[
                "-X",
                "-n",
                "-P",
                "-j",
                &b.to_string(),
                "-o",
                "ReqTRES,AllocTRES",
            ],
        );
        o.stdout.contains("license/matlab=1").then_some(o.stdout)
    });
    let row: Vec<&str> = out.trim().split('|').collect();
    assert!(row.iter().all(|t| t.contains("license/matlab=1")), "{out}");
    let lic = c.ok("scontrol", &["-o", "show", "lic", "matlab"]);
    assert_eq!(
        lic.stdout,
        "LicenseName=matlab Total=1 Used=0 Free=1 Reserved=0 Remote=no\n"
    );
}
