use super::*;

/// Every option of each command's getopt table has a row in exactly one
/// place that decides it, and no row names an option the command lacks.
#[test]
fn every_option_has_one_decision() {
    let sbatch: Vec<&str> = crate::sbatch::opts::SPECS.iter().map(|s| s.long).collect();
    for (name, _) in SBATCH {
        assert!(sbatch.contains(name), "sbatch has no --{name}");
        assert_eq!(
            SBATCH.iter().filter(|(n, _)| n == name).count(),
            1,
            "{name}"
        );
    }
    for long in &sbatch {
        assert!(SBATCH.iter().any(|(n, _)| n == long), "--{long} has no row");
    }
    for (cmd, table) in [("srun", SRUN), ("salloc", SALLOC)] {
        let specs = crate::options(cmd).unwrap();
        for (name, _) in table {
            assert!(
                specs.iter().any(|s| s.long == *name),
                "{cmd} has no --{name}"
            );
        }
        for s in &specs {
            assert!(
                table.iter().any(|(n, _)| *n == s.long) || SBATCH.iter().any(|(n, _)| *n == s.long),
                "{cmd} --{} has no row",
                s.long
            );
        }
    }
}

#[test]
fn each_command_has_each_disposition() {
    assert_eq!(disposition("sbatch", "time"), Disposition::Implemented);
    assert!(matches!(
        disposition("sbatch", "wckey"),
        Disposition::Warn(_)
    ));
    assert!(matches!(
        disposition("sbatch", "mincpus"),
        Disposition::Refuse(_)
    ));
    assert_eq!(disposition("srun", "label"), Disposition::Implemented);
    assert_eq!(
        disposition("srun", "distribution"),
        Disposition::Implemented
    );
    assert!(matches!(
        disposition("srun", "slurmd-debug"),
        Disposition::Warn(_)
    ));
    assert!(matches!(
        disposition("srun", "no-allocate"),
        Disposition::Refuse(_)
    ));
    assert_eq!(disposition("salloc", "no-shell"), Disposition::Implemented);
    assert!(matches!(
        disposition("salloc", "bell"),
        Disposition::Warn(_)
    ));
    assert!(matches!(
        disposition("salloc", "kill-command"),
        Disposition::Refuse(_)
    ));
    // salloc takes sbatch's job options and their decisions.
    assert!(matches!(
        disposition("salloc", "tmp"),
        Disposition::Refuse(_)
    ));
}

/// Options that the client programs of client-surface.md pass are never
/// refused (submitit, dask-jobqueue, Parsl, Snakemake, Nextflow, OnDemand).
#[test]
fn options_client_programs_send_are_not_refused() {
    for long in [
        "job-name",
        "output",
        "error",
        "time",
        "mem",
        "mem-per-cpu",
        "ntasks",
        "ntasks-per-node",
        "nodes",
        "cpus-per-task",
        "gpus-per-node",
        "gres",
        "gpus",
        "constraint",
        "qos",
        "partition",
        "account",
        "exclude",
        "signal",
        "open-mode",
        "wckey",
        "comment",
        "export",
        "chdir",
        "requeue",
        "no-requeue",
        "exclusive",
        "hold",
        "begin",
        "dependency",
        "array",
        "parsable",
        "wrap",
        "clusters",
    ] {
        assert!(
            !matches!(disposition("sbatch", long), Disposition::Refuse(_)),
            "sbatch --{long}"
        );
    }
    // Also what Open MPI's mpirun and MPICH's hydra pass to srun.
    for long in [
        "unbuffered",
        "output",
        "error",
        "label",
        "exclusive",
        "cpu-bind",
        "cpu_bind",
        "nodelist",
        "external-launcher",
        "kill-on-bad-exit",
        "mpi",
        "input",
        "ntasks-per-node",
    ] {
        assert!(
            !matches!(disposition("srun", long), Disposition::Refuse(_)),
            "srun --{long}"
        );
    }
}

#[test]
fn golden_warning_and_refusal_lines() {
    assert_eq!(
        check("sbatch", ["time", "wckey", "wckey", "profile", "mail-type"]).unwrap(),
        "sbatch: warning: --wckey is ignored here: wckeys are not tracked\n\
         sbatch: warning: --profile is ignored here: no AcctGatherProfile plugin\n"
    );
    assert_eq!(
        check("sbatch", ["wckey", "mincpus", "bb"]).unwrap_err(),
        "sbatch: error: --mincpus is not supported here: nodes are not chosen by a minimum CPU count\n"
    );
    assert_eq!(
        check("srun", ["no-allocate"]).unwrap_err(),
        "srun: error: -Z/--no-allocate is not supported here: steps always run in an allocation\n"
    );
}

#[test]
fn markdown_counts_and_rows() {
    let md = markdown("sbatch");
    assert!(md.starts_with("120 options: "), "{md}");
    assert!(md.contains("| `--switches` | implemented |\n"));
    assert!(md.contains("| `--container-image` | implemented |\n"));
    assert!(md.contains("| `--mincpus` | refused: nodes are not chosen by a minimum CPU count |\n"));
    assert!(md.contains("| `--reservation` | implemented |\n"));
    assert!(md.contains("| `-t/--time` | implemented |\n"));
    assert!(md.contains("| `--wckey` | warned and ignored: wckeys are not tracked |\n"));
    assert!(md.contains("| `--mail-type` | implemented |\n"));
}

/// pyxis's options land in the job's description as pairs, in order; a
/// bad value is refused with pyxis's words before anything is sent.
#[test]
fn container_options_are_checked_and_kept() {
    let st = crate::alloc::job_state(
        "srun",
        &[
            ("container-image", Some("/img.sqsh".into())),
            ("container-mounts", Some("/data:/data:ro".into())),
            ("container-readonly", None),
        ],
        "/",
        0,
    )
    .unwrap();
    assert_eq!(
        st.desc.container,
        vec![
            ("container-image".to_string(), "/img.sqsh".to_string()),
            ("container-mounts".to_string(), "/data:/data:ro".to_string()),
            ("container-readonly".to_string(), String::new()),
        ]
    );
    let e = crate::alloc::job_state(
        "srun",
        &[("container-mounts", Some("data:/data".into()))],
        "/",
        0,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "srun: error: pyxis: mount source must be an absolute or relative path, or \"tmpfs\": data:/data\n"
    );
}

#[test]
fn srun_and_salloc_refuse_before_asking_for_anything() {
    let e = crate::alloc::job_state("srun", &[("no-allocate", None)], "/", 0).unwrap_err();
    assert_eq!(
        e,
        "srun: error: -Z/--no-allocate is not supported here: steps always run in an allocation\n"
    );
    let e = crate::alloc::job_state("srun", &[("relative", Some("1".into()))], "/", 0).unwrap_err();
    assert!(
        e.starts_with("srun: error: -r/--relative is not supported here"),
        "{e}"
    );
    let e = crate::alloc::job_state("salloc", &[("kill-command", None)], "/", 0).unwrap_err();
    assert!(
        e.starts_with("salloc: error: -K/--kill-command is not supported here"),
        "{e}"
    );
    let e =
        crate::alloc::job_state("salloc", &[("mincpus", Some("2".into()))], "/", 0).unwrap_err();
    assert_eq!(
        e,
        "salloc: error: --mincpus is not supported here: nodes are not chosen by a minimum CPU count\n"
    );
    let st =
        crate::alloc::job_state("salloc", &[("reservation", Some("r".into()))], "/", 0).unwrap();
    assert_eq!(st.desc.reservation.as_deref(), Some("r"));
    let st = crate::alloc::job_state("salloc", &[("time", Some("5".into()))], "/", 0).unwrap();
    assert!(st.desc.time_limit.is_some());
    assert!(crate::alloc::job_state("srun", &[("whole", None)], "/", 0).is_ok());
}
