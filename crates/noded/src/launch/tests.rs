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
