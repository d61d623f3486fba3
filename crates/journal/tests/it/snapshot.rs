use std::fs;

use journal::{Journal, JournalError, Snapshot};

use crate::util::*;

#[test]
fn snapshot_then_appends_then_reopen_returns_the_snapshot_and_later_records() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 5);
    j.snapshot(5, b"state@5").unwrap();
    assert_eq!(j.last_seq(), 5);
    assert_eq!(append_n(&mut j, 3), 8);
    drop(j);
    let (mut j, rec) = open(dir.path());
    assert_eq!(
        rec.snapshot,
        Some(Snapshot {
            seq: 5,
            data: b"state@5".to_vec()
        })
    );
    assert_eq!(rec.records, records(6..=8));
    assert_eq!(rec.truncated, None);
    assert_eq!(j.append(&[b"next"]).unwrap(), 9);
    // The first snapshot has nothing older to keep, so log-1 stays as its fallback.
    assert_eq!(
        files(dir.path()),
        [
            "log-00000000000000000001.log",
            "log-00000000000000000006.log",
            "snapshot-00000000000000000005.snap"
        ]
    );
}

#[test]
fn snapshot_keeps_the_previous_generation_and_removes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    for round in 1..=4u64 {
        append_n(&mut j, 2);
        j.snapshot(round * 2, format!("state@{}", round * 2).as_bytes())
            .unwrap();
    }
    append_n(&mut j, 1);
    assert_eq!(
        files(dir.path()),
        [
            "log-00000000000000000007.log",
            "log-00000000000000000009.log",
            "snapshot-00000000000000000006.snap",
            "snapshot-00000000000000000008.snap"
        ]
    );
    drop(j);
    let (_, rec) = open(dir.path());
    assert_eq!(rec.snapshot.unwrap().seq, 8);
    assert_eq!(rec.records, records(9..=9));
}

#[test]
fn snapshot_with_no_new_records_reuses_the_empty_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 2);
    j.snapshot(2, b"a").unwrap();
    j.snapshot(2, b"b").unwrap();
    drop(j);
    let (_, rec) = open(dir.path());
    assert_eq!(
        rec.snapshot,
        Some(Snapshot {
            seq: 2,
            data: b"b".to_vec()
        })
    );
    assert_eq!(
        files(dir.path()),
        [
            "log-00000000000000000001.log",
            "log-00000000000000000003.log",
            "snapshot-00000000000000000002.snap"
        ]
    );
}

#[test]
fn snapshot_older_than_the_last_record_keeps_the_records_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 6);
    j.snapshot(4, b"state@4").unwrap();
    append_n(&mut j, 1);
    drop(j);
    let (_, rec) = open(dir.path());
    assert_eq!(rec.snapshot.unwrap().seq, 4);
    assert_eq!(rec.records, records(5..=7));
}

#[test]
fn snapshot_seq_must_be_logged_and_not_older_than_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 3);
    let err = j.snapshot(4, b"x").unwrap_err();
    assert!(
        matches!(
            err,
            JournalError::SnapshotSeq {
                seq: 4,
                last_seq: 3,
                newest_snapshot: 0,
                ..
            }
        ),
        "{err}"
    );
    j.snapshot(3, b"x").unwrap();
    let err = j.snapshot(2, b"x").unwrap_err();
    assert!(
        matches!(
            err,
            JournalError::SnapshotSeq {
                seq: 2,
                last_seq: 3,
                newest_snapshot: 3,
                ..
            }
        ),
        "{err}"
    );
    // Refusals are not write failures: the journal keeps working.
    assert_eq!(append_n(&mut j, 1), 4);
}

#[test]
fn damaged_newest_snapshot_falls_back_to_the_previous_one_and_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 3);
    j.snapshot(3, b"state@3").unwrap();
    append_n(&mut j, 3);
    j.snapshot(6, b"state@6").unwrap();
    append_n(&mut j, 2);
    drop(j);
    let snap6 = snap_path(dir.path(), 6);
    let len = fs::metadata(&snap6).unwrap().len();
    flip(&snap6, len - 1);
    let (mut j, rec) = open(dir.path());
    assert_eq!(
        rec.snapshot,
        Some(Snapshot {
            seq: 3,
            data: b"state@3".to_vec()
        })
    );
    assert_eq!(rec.records, records(4..=8));
    assert_eq!(j.last_seq(), 8);
    assert!(!snap6.exists());
    assert!(
        dir.path()
            .join("snapshot-00000000000000000006.snap.corrupt")
            .exists(),
        "kept for inspection"
    );
    // The next snapshot keeps 3 as the fallback, not the damaged 6.
    append_n(&mut j, 1);
    j.snapshot(9, b"state@9").unwrap();
    drop(j);
    let (_, rec) = open(dir.path());
    assert_eq!(rec.snapshot.unwrap().seq, 9);
    assert!(snap_path(dir.path(), 3).exists());
}

#[test]
fn damaged_snapshot_without_a_usable_fallback_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 3);
    j.snapshot(3, b"state@3").unwrap();
    append_n(&mut j, 3);
    j.snapshot(6, b"state@6").unwrap();
    drop(j);
    let snap6 = snap_path(dir.path(), 6);
    flip(&snap6, 35);
    // The fallback to snapshot 3 needs log-4, which is still there...
    assert_eq!(open(dir.path()).1.snapshot.unwrap().seq, 3);
    // ...so put 6 back and take log-4 away: snapshot 3 alone is no fallback.
    fs::rename(
        dir.path()
            .join("snapshot-00000000000000000006.snap.corrupt"),
        &snap6,
    )
    .unwrap();
    fs::remove_file(log_path(dir.path(), 4)).unwrap();
    let what = expect_corrupt(Journal::open(dir.path()), &snap6, HEADER_LEN + 8);
    assert!(
        what.contains("checksum") && what.contains("fall back"),
        "{what}"
    );
    fs::remove_file(snap_path(dir.path(), 3)).unwrap();
    expect_corrupt(Journal::open(dir.path()), &snap6, HEADER_LEN + 8);
    assert!(snap6.exists(), "a failed open moves nothing");
}

#[test]
fn a_snapshot_from_a_newer_build_is_not_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 3);
    j.snapshot(3, b"a").unwrap();
    append_n(&mut j, 1);
    j.snapshot(4, b"b").unwrap();
    drop(j);
    let snap = snap_path(dir.path(), 4);
    let mut bytes = fs::read(&snap).unwrap();
    bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
    fs::write(&snap, bytes).unwrap();
    let err = Journal::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, JournalError::UnsupportedVersion { path, found: 2, .. } if *path == snap),
        "{err}"
    );
}

#[test]
fn bad_snapshot_magic_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 1);
    j.snapshot(1, b"a").unwrap();
    drop(j);
    let snap = snap_path(dir.path(), 1);
    flip(&snap, 0);
    // Without an older snapshot, falling back means replaying log-1 from seq 1, which works.
    let (_, rec) = open(dir.path());
    assert_eq!((rec.snapshot, rec.records), (None, records(1..=1)));
}

#[test]
fn incomplete_temp_snapshot_is_ignored_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 2);
    drop(j);
    let tmp = dir.path().join("snapshot-00000000000000000002.snap.tmp");
    fs::write(&tmp, b"MUSTERS\0\x01\0").unwrap();
    let (_, rec) = open(dir.path());
    assert_eq!((rec.snapshot, rec.records), (None, records(1..=2)));
    assert!(!tmp.exists());
}

#[test]
fn crash_between_snapshot_rename_and_the_new_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 5);
    j.snapshot(5, b"state@5").unwrap();
    drop(j);
    fs::remove_file(log_path(dir.path(), 6)).unwrap();
    let (mut j, rec) = open(dir.path());
    assert_eq!(rec.snapshot.unwrap().seq, 5);
    assert_eq!(rec.records, []);
    assert_eq!(append_n(&mut j, 1), 6);
    drop(j);
    let (_, rec) = open(dir.path());
    assert_eq!(rec.records, records(6..=6));
}

#[test]
fn snapshot_ahead_of_a_cut_log_starts_a_new_segment() {
    // A log that lost its tail below the snapshot (the disk lied about a sync): the
    // snapshot covers those seqs, so appends go on after it in a fresh segment.
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 5);
    j.snapshot(5, b"state@5").unwrap();
    drop(j);
    fs::remove_file(log_path(dir.path(), 6)).unwrap();
    let log1 = log_path(dir.path(), 1);
    let len = fs::metadata(&log1).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&log1)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let (mut j, rec) = open(dir.path());
    assert_eq!(rec.snapshot.unwrap().seq, 5);
    assert_eq!(rec.records, []);
    assert_eq!(append_n(&mut j, 1), 6);
    drop(j);
    assert_eq!(open(dir.path()).1.records, records(6..=6));
    assert!(log_path(dir.path(), 6).exists());
}
