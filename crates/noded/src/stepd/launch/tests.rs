use super::*;
use crate::exec::chdir_error_line;
use model::JobId;

#[test]
fn job_dir_is_slurms_spelling() {
    assert_eq!(
        job_dir(Path::new("/var/spool/slurmd"), JobId(42)),
        PathBuf::from("/var/spool/slurmd/job00042")
    );
    assert_eq!(
        job_dir(Path::new("/s"), JobId(1234567)),
        PathBuf::from("/s/job1234567")
    );
}

#[test]
fn relative_paths_are_under_work_dir() {
    assert_eq!(resolve_path("/home/u/", "out.txt", "x"), "/home/u/out.txt");
    assert_eq!(resolve_path("/home/u", "/abs/o", "x"), "/abs/o");
    assert_eq!(resolve_path("/home/u", "", "/dev/null"), "/dev/null");
    assert_eq!(
        resolve_path("/home/u", "", "slurm-1.out"),
        "/home/u/slurm-1.out"
    );
}

#[test]
fn chdir_error_matches_slurmstepd() {
    assert_eq!(
        chdir_error_line("/nonexistent", libc::ENOENT),
        "slurmstepd: error: couldn't chdir to `/nonexistent': No such file or directory: going to /tmp instead\n"
    );
    assert_eq!(os_error_text(libc::EACCES), "Permission denied");
}

/// The child writes the line in pieces prepared before fork: together they
/// are the line, for every errno (one beyond the table reads as EIO's).
#[test]
fn chdir_line_pieces_make_the_line() {
    let line = ChdirLine::new("/no/such dir");
    for errno in [1, libc::ENOENT, libc::EACCES, MAX_ERRNO as i32 - 1] {
        assert_eq!(
            line.pieces(errno).concat(),
            chdir_error_line("/no/such dir", errno).into_bytes()
        );
    }
    for beyond in [0, -1, MAX_ERRNO as i32, 10_000] {
        assert_eq!(
            line.pieces(beyond).concat(),
            chdir_error_line("/no/such dir", libc::EIO).into_bytes()
        );
    }
}

/// What the daemon writes for a supervisor reads as the `StepdSpec` it
/// stands for, byte for byte the same as the owned one's JSON.
#[test]
fn borrowed_spec_is_the_specs_json() {
    let launch = BatchLaunch {
        job_id: JobId(7),
        uid: 1,
        gid: 2,
        user: "u".into(),
        script: "#!/bin/sh\necho \"a\"\n".into(),
        argv: vec!["x".into()],
        env: vec![("A".into(), "b c".into())],
        work_dir: "/w".into(),
        stdout: "/w/o".into(),
        stderr: "/w/e".into(),
        stdin: "/dev/null".into(),
        open_append: true,
        cpus: 2,
        mem: 100,
        gpus: vec![1],
        cpu_ids: vec![],
        time_limit_secs: Some(60),
        acctg_freq: Some("task=5".into()),
        restarts: 3,
        container: Vec::new(),
    };
    let gather = crate::gather::GatherSettings::default();
    let owned = StepdSpec {
        launch: launch.clone(),
        node_name: "n1".into(),
        conf_path: "/etc/slurm.conf".into(),
        switch_user: true,
        gather: gather.clone(),
        gpu_env: Default::default(),
        cgroup: None,
        task_prolog: None,
        task_epilog: None,
        task_affinity: true,
        topology_addr: Some(("top.s0.n1".into(), "switch.switch.node".into())),
        gpu_files: vec!["/dev/nvidia0".into(), "/dev/nvidia1".into()],
    };
    let addr = ("top.s0.n1".to_string(), "switch.switch.node".to_string());
    let borrowed = StepdSpecRef {
        launch: &launch,
        node_name: "n1",
        conf_path: "/etc/slurm.conf",
        switch_user: true,
        gather: &gather,
        gpu_env: Default::default(),
        cgroup: None,
        task_prolog: None,
        task_epilog: None,
        task_affinity: true,
        topology_addr: Some(&addr),
        gpu_files: &["/dev/nvidia0".into(), "/dev/nvidia1".into()],
    };
    assert_eq!(
        serde_json::to_string(&borrowed).unwrap(),
        serde_json::to_string(&owned).unwrap()
    );
}
