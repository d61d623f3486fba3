use super::*;
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
