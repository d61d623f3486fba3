use super::*;
use crate::spool::{
    job_dir, read_pids, read_record, read_status, remove_reported, write_pids, write_status, Pids,
    ProcId, RecordState,
};
use model::JobId;

fn record(job: u32) -> JobRecord {
    JobRecord {
        job_id: JobId(job),
        uid: 0,
        user: "u".into(),
        state: RecordState::Launching,
        pids: None,
        restarts: 0,
    }
}

fn own() -> Owner {
    Owner {
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        other_user: false,
    }
}

fn ino(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).unwrap().ino()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn pids() -> Pids {
    let me = ProcId::of(std::process::id() as i32).unwrap();
    Pids {
        stepd: me,
        script: me,
    }
}

#[test]
fn a_new_job_dir_holds_the_script_and_the_record_and_nothing_else() {
    let spool = tempfile::tempdir().unwrap();
    let slots = Slots::new(spool.path());
    let dir = job_dir(spool.path(), JobId(1));
    slots
        .create_job_dir(&dir, b"#!/bin/sh\ntrue\n", own(), &record(1))
        .unwrap();
    assert_eq!(names(spool.path()), ["job00001"]);
    assert_eq!(names(&dir), [LOG_FILE, SCRIPT_FILE]);
    assert_eq!(
        std::fs::read(dir.join(SCRIPT_FILE)).unwrap(),
        b"#!/bin/sh\ntrue\n"
    );
    assert_eq!(mode(&dir.join(SCRIPT_FILE)), 0o700);
    assert_eq!(mode(&dir.join(LOG_FILE)), 0o600);
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(read_record(&dir), Some(record(1)));
    assert_eq!(read_pids(&dir), None);
}

#[test]
fn a_reported_dir_is_emptied_kept_and_used_again_with_its_inodes() {
    let spool = tempfile::tempdir().unwrap();
    let slots = Slots::new(spool.path());
    let first = job_dir(spool.path(), JobId(7));
    let long_script = format!("#!/bin/sh\n{}\n", "echo a long script; ".repeat(50));
    slots
        .create_job_dir(&first, long_script.as_bytes(), own(), &record(7))
        .unwrap();
    write_pids(&first, &pids()).unwrap();
    std::fs::write(first.join(crate::spool::LIVE_FILE), "{}").unwrap();
    std::fs::create_dir(first.join("leftover")).unwrap();
    write_status(&first, 0, None, None).unwrap();
    let inodes = (
        ino(&first),
        ino(&first.join(SCRIPT_FILE)),
        ino(&first.join(LOG_FILE)),
    );
    let ended = read_status(&first).unwrap().unwrap();
    remove_reported(&first, &ended, Some(&slots)).unwrap();
    assert!(!first.exists());
    assert_eq!(slots.free_count(), 1);
    let kept = names(spool.path());
    assert_eq!(kept.len(), 1);
    assert!(kept[0].starts_with(FREE_PREFIX), "{kept:?}");
    assert_eq!(names(&spool.path().join(&kept[0])), [LOG_FILE, SCRIPT_FILE]);
    // The next job gets the same directory, log and script, holding only
    // its own script (shorter: no tail of the last one) and record.
    let second = job_dir(spool.path(), JobId(8));
    slots
        .create_job_dir(&second, b"#!/bin/sh\ntrue\n", own(), &record(8))
        .unwrap();
    assert_eq!(slots.free_count(), 0);
    assert_eq!(names(spool.path()), ["job00008"]);
    assert_eq!(
        (
            ino(&second),
            ino(&second.join(SCRIPT_FILE)),
            ino(&second.join(LOG_FILE))
        ),
        inodes
    );
    assert_eq!(
        std::fs::read(second.join(SCRIPT_FILE)).unwrap(),
        b"#!/bin/sh\ntrue\n"
    );
    assert_eq!(read_record(&second), Some(record(8)));
    assert_eq!(read_pids(&second), None);
    assert_eq!(read_status(&second).unwrap(), None);
}

#[test]
fn a_relaunch_keeps_its_dir_when_the_run_before_is_reported() {
    let spool = tempfile::tempdir().unwrap();
    let slots = Slots::new(spool.path());
    let dir = job_dir(spool.path(), JobId(5));
    slots.create_job_dir(&dir, b"x", own(), &record(5)).unwrap();
    write_status(&dir, 0, None, None).unwrap();
    let first = read_status(&dir).unwrap().unwrap();
    // The job requeued itself: its next run replaced the directory before
    // the first run's report was answered.
    slots.create_job_dir(&dir, b"y", own(), &record(5)).unwrap();
    remove_reported(&dir, &first, Some(&slots)).unwrap();
    assert!(dir.exists());
    assert_eq!(std::fs::read(dir.join(SCRIPT_FILE)).unwrap(), b"y");
    write_status(&dir, 9, None, None).unwrap();
    let second = read_status(&dir).unwrap().unwrap();
    remove_reported(&dir, &second, Some(&slots)).unwrap();
    assert!(!dir.exists());
    assert_eq!(slots.free_count(), 1);
}

#[test]
fn a_script_of_another_owner_or_with_more_links_is_a_new_file() {
    let spool = tempfile::tempdir().unwrap();
    let path = spool.path().join(SCRIPT_FILE);
    let uid = nix::unistd::geteuid().as_raw();
    std::fs::write(&path, "old").unwrap();
    let before = ino(&path);
    // Its owner may still write it: another user gets a new file.
    assert!(reuse_file(&path, uid.wrapping_add(1)).unwrap().is_none());
    assert!(!path.exists());
    // Linked elsewhere by its owner: a new file too.
    std::fs::write(&path, "old").unwrap();
    std::fs::hard_link(&path, spool.path().join("link")).unwrap();
    assert!(reuse_file(&path, uid).unwrap().is_none());
    assert!(!path.exists());
    assert_eq!(std::fs::read(spool.path().join("link")).unwrap(), b"old");
    // A symbolic link is never followed.
    std::os::unix::fs::symlink(spool.path().join("link"), &path).unwrap();
    assert!(reuse_file(&path, uid).unwrap().is_none());
    assert!(std::fs::symlink_metadata(&path).is_err());
    assert_eq!(std::fs::read(spool.path().join("link")).unwrap(), b"old");
    // Its own, alone: emptied and used again.
    std::fs::write(&path, "old").unwrap();
    let again = ino(&path);
    assert_ne!(before, 0);
    assert!(reuse_file(&path, uid).unwrap().is_some());
    assert_eq!(ino(&path), again);
    // Written over and cut: nothing of the longer text before is left.
    write_file(&path, uid, 0o700, b"ab").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"ab");
    assert_eq!(ino(&path), again);
}

#[test]
fn a_changed_mode_is_set_again() {
    let spool = tempfile::tempdir().unwrap();
    let slots = Slots::new(spool.path());
    let dir = job_dir(spool.path(), JobId(3));
    slots.create_job_dir(&dir, b"a", own(), &record(3)).unwrap();
    std::fs::set_permissions(
        dir.join(SCRIPT_FILE),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write_status(&dir, 0, None, None).unwrap();
    let ended = read_status(&dir).unwrap().unwrap();
    remove_reported(&dir, &ended, Some(&slots)).unwrap();
    let dir = job_dir(spool.path(), JobId(4));
    slots.create_job_dir(&dir, b"b", own(), &record(4)).unwrap();
    assert_eq!(mode(&dir.join(SCRIPT_FILE)), 0o700);
}

#[test]
fn slots_left_by_an_earlier_daemon_are_removed_and_the_pool_is_bounded() {
    let spool = tempfile::tempdir().unwrap();
    std::fs::create_dir(spool.path().join("free.3")).unwrap();
    std::fs::write(spool.path().join("free.3").join(LOG_FILE), "half").unwrap();
    std::fs::create_dir(spool.path().join("job00002")).unwrap();
    let slots = Slots::new(spool.path());
    assert_eq!(names(spool.path()), ["job00002"]);
    for job in 0..MAX_FREE as u32 + 2 {
        let dir = job_dir(spool.path(), JobId(100 + job));
        slots
            .create_job_dir(&dir, b"a", own(), &record(job))
            .unwrap();
    }
    for job in 0..MAX_FREE as u32 + 2 {
        let dir = job_dir(spool.path(), JobId(100 + job));
        write_status(&dir, 0, None, None).unwrap();
        let ended = read_status(&dir).unwrap().unwrap();
        remove_reported(&dir, &ended, Some(&slots)).unwrap();
        assert!(!dir.exists());
    }
    assert_eq!(slots.free_count(), MAX_FREE);
    assert_eq!(names(spool.path()).len(), MAX_FREE + 1);
}
