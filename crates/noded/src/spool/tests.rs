use super::*;

fn pids(stepd: i32, script: i32) -> Pids {
    Pids {
        stepd: ProcId {
            pid: stepd,
            start: 100,
        },
        script: ProcId {
            pid: script,
            start: 101,
        },
    }
}

#[test]
fn start_time_is_field_22_even_with_odd_command_names() {
    let stat =
        "4242 (a b) c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200";
    assert_eq!(parse_stat(stat), Some(('S', 987654)));
    assert_eq!(parse_stat("1 (x) Z 0"), None);
    assert_eq!(parse_stat("garbage"), None);
}

#[test]
fn own_process_is_alive_and_a_changed_start_time_is_not() {
    let me = ProcId::of(std::process::id() as i32).unwrap();
    assert!(me.is_alive());
    let other = ProcId {
        start: me.start + 1,
        ..me
    };
    assert!(!other.is_alive());
    assert!(!ProcId { pid: 0, start: 0 }.is_alive());
    // Our command line names no supervisor.
    assert!(!is_supervisor(me, Path::new("/x")));
}

#[test]
fn job_dir_names_round_trip() {
    let dir = job_dir(Path::new("/s"), JobId(42));
    assert_eq!(dir, PathBuf::from("/s/job00042"));
    assert_eq!(parse_job_dir_name("job00042"), Some(JobId(42)));
    assert_eq!(parse_job_dir_name("job1234567"), Some(JobId(1234567)));
    assert_eq!(parse_job_dir_name("job"), None);
    assert_eq!(parse_job_dir_name("job12.tmp"), None);
    assert_eq!(parse_job_dir_name("cred_state"), None);
}

#[test]
fn status_text_round_trips() {
    assert_eq!(format_status(4 << 8, None), "1024\n");
    assert_eq!(parse_status("1024\n"), Some((1024, None)));
    let text = format_status(256, Some("Could not open\nstdout"));
    assert_eq!(
        parse_status(&text),
        Some((256, Some("Could not open stdout".to_string())))
    );
    // What `write_status` writes: the status, then a token.
    assert_eq!(parse_status("1024 1a-2b-0\n"), Some((1024, None)));
    assert_eq!(parse_status("15"), None);
    assert_eq!(parse_status("x\n"), None);
}

#[test]
fn classify_prefers_the_status_then_a_live_supervisor() {
    let dir = PathBuf::from("/s/job00007");
    let ended = Ended {
        exit: ExitCode { code: 4, signal: 0 },
        launch_failed: None,
        usage: None,
        oom_kills: 0,
        file: (1, 2, None),
    };
    let j = JobId(7);
    assert!(matches!(
        classify(j, dir.clone(), Some(ended.clone()), Some(pids(1, 2)), true),
        Found::Ended { .. }
    ));
    assert_eq!(
        classify(j, dir.clone(), None, Some(pids(1, 2)), true),
        Found::Running {
            job_id: j,
            dir: dir.clone(),
            pids: pids(1, 2)
        }
    );
    assert_eq!(
        classify(j, dir.clone(), None, Some(pids(1, 2)), false),
        Found::Lost {
            job_id: j,
            dir: dir.clone(),
            pids: Some(pids(1, 2))
        }
    );
    assert_eq!(
        classify(j, dir.clone(), None, None, false),
        Found::Lost {
            job_id: j,
            dir,
            pids: None
        }
    );
}

#[test]
fn scan_reads_what_the_daemon_and_supervisor_wrote() {
    let spool = tempfile::tempdir().unwrap();
    assert!(scan(&spool.path().join("missing")).unwrap().is_empty());
    let ended_dir = job_dir(spool.path(), JobId(3));
    std::fs::create_dir(&ended_dir).unwrap();
    write_status(&ended_dir, 4 << 8, None, None).unwrap();
    let lost_dir = job_dir(spool.path(), JobId(2));
    std::fs::create_dir(&lost_dir).unwrap();
    let record = JobRecord {
        job_id: JobId(2),
        uid: 0,
        user: "u".into(),
        state: RecordState::Running,
        pids: Some(pids(i32::MAX - 1, i32::MAX - 2)),
        restarts: 0,
    };
    write_record(&lost_dir, &record).unwrap();
    assert_eq!(read_record(&lost_dir), Some(record));
    std::fs::create_dir(spool.path().join("not-a-job")).unwrap();
    std::fs::write(spool.path().join("job00009"), "a file").unwrap();
    let found = scan(spool.path()).unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(
        found[0],
        Found::Lost {
            job_id: JobId(2),
            dir: lost_dir,
            pids: Some(pids(i32::MAX - 1, i32::MAX - 2))
        }
    );
    let Found::Ended { job_id, ended, .. } = &found[1] else {
        panic!("{found:?}")
    };
    assert_eq!(*job_id, JobId(3));
    assert_eq!(ended.exit, ExitCode { code: 4, signal: 0 });
    assert_eq!(ended.launch_failed, None);
}

#[test]
fn reported_dir_is_removed_unless_replaced() {
    let spool = tempfile::tempdir().unwrap();
    let dir = job_dir(spool.path(), JobId(5));
    std::fs::create_dir(&dir).unwrap();
    write_status(&dir, 0, None, None).unwrap();
    let first = read_status(&dir).unwrap().unwrap();
    // A relaunch replaced the directory: its files are not the first run's.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    write_pids(&dir, &pids(1, 2)).unwrap();
    write_status(&dir, 9, None, None).unwrap();
    remove_reported(&dir, &first, None).unwrap();
    assert!(dir.exists());
    assert_eq!(read_pids(&dir), Some(pids(1, 2)));
    let second = read_status(&dir).unwrap().unwrap();
    assert_eq!(second.exit, ExitCode { code: 0, signal: 9 });
    remove_reported(&dir, &second, None).unwrap();
    assert!(!dir.exists());
    // Gone already: nothing to do.
    remove_reported(&dir, &second, None).unwrap();
}

#[test]
fn status_carries_the_usage_and_older_usage_files_are_read() {
    let spool = tempfile::tempdir().unwrap();
    let dir = job_dir(spool.path(), JobId(6));
    std::fs::create_dir(&dir).unwrap();
    let usage = proto::StepUsage {
        user_cpu_usec: Some(1234),
        max_rss_kib: Some(56),
        ..Default::default()
    };
    write_status(&dir, 3 << 8, Some("failed\nhere"), Some(&usage)).unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    assert_eq!(ended.exit, ExitCode { code: 3, signal: 0 });
    assert_eq!(ended.launch_failed.as_deref(), Some("failed here"));
    assert_eq!(ended.usage.as_deref(), Some(&usage));
    // One file for the end: no separate usage or status file.
    assert!(!dir.join(USAGE_FILE).exists());
    assert!(!dir.join(STATUS_FILE).exists());
    // A daemon before 2026-12 wrote the usage beside the status.
    let dir = job_dir(spool.path(), JobId(16));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(STATUS_FILE), "0 1-2-3\n").unwrap();
    std::fs::write(dir.join(USAGE_FILE), serde_json::to_vec(&usage).unwrap()).unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    assert_eq!(ended.launch_failed, None);
    assert_eq!(ended.usage.as_deref(), Some(&usage));
}

#[test]
fn supervisor_command_lines_executed_or_forked() {
    let dir = Path::new("/s/spool/job00042");
    assert!(names_supervisor(
        b"muster\0noded\0--stepd\0/s/spool/job00042\0",
        dir
    ));
    assert!(names_supervisor(
        b"muster\0noded\0--stepd-zygote\0/s/spool\0",
        dir
    ));
    assert!(!names_supervisor(
        b"muster\0noded\0--stepd\0/s/spool/job00043\0",
        dir
    ));
    assert!(!names_supervisor(
        b"muster\0noded\0--stepd-zygote\0/s/other\0",
        dir
    ));
    assert!(!names_supervisor(b"muster\0noded\0/s/spool\0", dir));
}

#[test]
fn the_log_holds_every_record_in_one_file_and_skips_cut_ones() {
    let spool = tempfile::tempdir().unwrap();
    let dir = job_dir(spool.path(), JobId(8));
    std::fs::create_dir(&dir).unwrap();
    let record = JobRecord {
        job_id: JobId(8),
        uid: 0,
        user: "u".into(),
        state: RecordState::Launching,
        pids: None,
        restarts: 2,
    };
    write_record(&dir, &record).unwrap();
    // The log is new for every run: a second record is refused.
    assert!(write_record(&dir, &record).is_err());
    assert_eq!(read_record(&dir), Some(record.clone()));
    assert_eq!(read_pids(&dir), None);
    assert_eq!(read_status(&dir).unwrap(), None);
    write_pids(&dir, &pids(10, 11)).unwrap();
    assert_eq!(read_pids(&dir), Some(pids(10, 11)));
    // A record cut short (a crash of the host mid-write, a full disk):
    // skipped, and what is appended after it still reads.
    let log = dir.join(LOG_FILE);
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(b"\nstatus {\"raw\":9,\"tok").unwrap();
    drop(f);
    assert_eq!(read_status(&dir).unwrap(), None);
    let found = scan(spool.path()).unwrap();
    assert_eq!(
        found,
        vec![Found::Lost {
            job_id: JobId(8),
            dir: dir.clone(),
            pids: Some(pids(10, 11))
        }]
    );
    write_status(&dir, 2 << 8, Some("no\nway\n"), None).unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    assert_eq!(ended.exit, ExitCode { code: 2, signal: 0 });
    assert_eq!(ended.launch_failed.as_deref(), Some("no way"));
    // The first end recorded is the end: a later one changes nothing.
    write_status(&dir, 0, None, None).unwrap();
    assert_eq!(read_status(&dir).unwrap().unwrap(), ended);
    assert_eq!(read_record(&dir), Some(record));
    assert_eq!(read_pids(&dir), Some(pids(10, 11)));
    // The log alone: no file per record.
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec![LOG_FILE.to_string()]);
}

#[test]
fn a_log_cut_at_any_byte_reads_as_the_records_it_holds_whole() {
    let spool = tempfile::tempdir().unwrap();
    let dir = job_dir(spool.path(), JobId(9));
    std::fs::create_dir(&dir).unwrap();
    let record = JobRecord {
        job_id: JobId(9),
        uid: 0,
        user: "u".into(),
        state: RecordState::Launching,
        pids: None,
        restarts: 0,
    };
    write_record(&dir, &record).unwrap();
    let after_record = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len();
    write_pids(&dir, &pids(10, 11)).unwrap();
    let after_pids = std::fs::metadata(dir.join(LOG_FILE)).unwrap().len();
    write_status(&dir, 0, None, None).unwrap();
    let whole = std::fs::read(dir.join(LOG_FILE)).unwrap();
    for cut in 0..=whole.len() {
        std::fs::write(dir.join(LOG_FILE), &whole[..cut]).unwrap();
        let cut = cut as u64;
        // A record counts once its JSON is whole (its newline may be cut).
        assert_eq!(
            read_record(&dir).is_some(),
            cut >= after_record - 1,
            "{cut}"
        );
        assert_eq!(read_pids(&dir).is_some(), cut >= after_pids - 1, "{cut}");
        let ended = read_status(&dir).unwrap();
        assert_eq!(ended.is_some(), cut >= whole.len() as u64 - 1, "{cut}");
    }
}

#[test]
fn a_directory_of_a_daemon_before_the_log_is_read_and_its_end_recorded() {
    let spool = tempfile::tempdir().unwrap();
    let dir = job_dir(spool.path(), JobId(12));
    std::fs::create_dir(&dir).unwrap();
    let record = JobRecord {
        job_id: JobId(12),
        uid: 0,
        user: "u".into(),
        state: RecordState::Launching,
        pids: None,
        restarts: 1,
    };
    // As those daemons and supervisors wrote them: a file per record.
    std::fs::write(dir.join(RECORD_FILE), serde_json::to_vec(&record).unwrap()).unwrap();
    let old_pids = pids(i32::MAX - 1, i32::MAX - 2);
    std::fs::write(dir.join(PIDS_FILE), serde_json::to_vec(&old_pids).unwrap()).unwrap();
    assert_eq!(read_record(&dir), Some(record.clone()));
    assert_eq!(read_pids(&dir), Some(old_pids));
    assert_eq!(
        scan(spool.path()).unwrap(),
        vec![Found::Lost {
            job_id: JobId(12),
            dir: dir.clone(),
            pids: Some(old_pids)
        }]
    );
    // The daemon records the end in the supervisor's stead: in a new log,
    // beside the old files, and reads it back.
    write_status(&dir, libc::SIGKILL, None, None).unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    assert_eq!(ended.exit, ExitCode { code: 0, signal: 9 });
    assert_eq!(read_record(&dir), Some(record));
    assert!(matches!(
        &scan(spool.path()).unwrap()[..],
        [Found::Ended {
            job_id: JobId(12),
            ..
        }]
    ));
    remove_reported(&dir, &ended, None).unwrap();
    assert!(!dir.exists());
    // An old supervisor's status file, no log.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(STATUS_FILE), "256 1-2-3\n").unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    assert_eq!(ended.exit, ExitCode { code: 1, signal: 0 });
    remove_reported(&dir, &ended, None).unwrap();
    assert!(!dir.exists());
}
