use std::path::Path;

use super::format::{self, FileKind, HEADER_LEN, LOG_MAGIC, RECORD_HEADER_LEN};
use super::recover::scan_segment;
use super::*;

fn segment(payloads: &[&[u8]], first: u64) -> Vec<u8> {
    let mut buf = format::header(LOG_MAGIC).to_vec();
    for (i, p) in payloads.iter().enumerate() {
        format::encode_record(&mut buf, first + i as u64, p);
    }
    buf
}

fn path() -> &'static Path {
    Path::new("/j/log-00000000000000000001.log")
}

#[test]
fn names_round_trip_and_reject_lookalikes() {
    assert_eq!(format::log_name(7), "log-00000000000000000007.log");
    assert_eq!(
        format::snapshot_name(u64::MAX),
        "snapshot-18446744073709551615.snap"
    );
    assert_eq!(format::classify(&format::log_name(7)), FileKind::Log(7));
    assert_eq!(
        format::classify(&format::snapshot_name(9)),
        FileKind::Snapshot(9)
    );
    assert_eq!(
        format::classify("snapshot-00000000000000000009.snap.tmp"),
        FileKind::Temp
    );
    assert_eq!(
        format::classify("log-00000000000000000009.log.tmp"),
        FileKind::Temp
    );
    for other in [
        "LOCK",
        "log-7.log",
        "log-0000000000000000000x.log",
        "snapshot-00000000000000000009.snap.corrupt",
        "log-00000000000000000007.log~",
    ] {
        assert_eq!(format::classify(other), FileKind::Other, "{other}");
    }
}

#[test]
fn record_layout_is_len_crc_seq_payload() {
    let mut buf = Vec::new();
    format::encode_record(&mut buf, 0x0102, b"hi");
    let mut crc_input = 0x0102u64.to_le_bytes().to_vec();
    crc_input.extend_from_slice(b"hi");
    let mut want = 2u32.to_le_bytes().to_vec();
    want.extend_from_slice(&crc32fast::hash(&crc_input).to_le_bytes());
    want.extend_from_slice(&0x0102u64.to_le_bytes());
    want.extend_from_slice(b"hi");
    assert_eq!(buf, want);
}

#[test]
fn snapshot_round_trips_and_checks_its_name() {
    let bytes = format::encode_snapshot(42, b"state");
    let p = Path::new("/j/snapshot-00000000000000000042.snap");
    assert_eq!(
        format::decode_snapshot(bytes.clone(), p, 42).unwrap(),
        (42, b"state".to_vec())
    );
    let err = format::decode_snapshot(bytes, p, 41).unwrap_err();
    assert!(
        matches!(err, JournalError::Corrupt { offset, .. } if offset == HEADER_LEN as u64),
        "{err}"
    );
}

#[test]
fn clean_segment_scans_fully() {
    let buf = segment(&[b"a", b"", b"ccc"], 5);
    let scan = scan_segment(&buf, path(), 5, true).unwrap();
    assert!(scan.truncation.is_none());
    let seqs: Vec<u64> = scan.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [5, 6, 7]);
    assert_eq!(scan.records[1].payload, b"");
}

#[test]
fn incomplete_record_is_torn_only_in_last_segment() {
    let buf = segment(&[b"a", b"bbbb"], 1);
    let cut = &buf[..buf.len() - 1];
    let last_start = (HEADER_LEN + RECORD_HEADER_LEN + 1) as u64;
    let scan = scan_segment(cut, path(), 1, true).unwrap();
    assert_eq!(scan.records.len(), 1);
    assert_eq!(scan.truncation.unwrap().offset, last_start);
    let err = scan_segment(cut, path(), 1, false).unwrap_err();
    assert!(
        matches!(err, JournalError::Corrupt { offset, .. } if offset == last_start),
        "{err}"
    );
}

#[test]
fn length_pointing_past_the_end_with_intact_records_after_is_corrupt() {
    let mut buf = segment(&[b"a", b"b", b"c"], 1);
    // Grow the second record's length so it seems to run past the end of the file.
    let second = HEADER_LEN + RECORD_HEADER_LEN + 1;
    buf[second..second + 4].copy_from_slice(&1000u32.to_le_bytes());
    let err = scan_segment(&buf, path(), 1, true).unwrap_err();
    assert!(
        matches!(err, JournalError::Corrupt { offset, .. } if offset == second as u64),
        "{err}"
    );
}

#[test]
fn trailing_zeros_count_as_a_torn_tail() {
    let mut buf = segment(&[b"a"], 1);
    let end = buf.len() as u64;
    buf.extend_from_slice(&[0u8; 4096]);
    let scan = scan_segment(&buf, path(), 1, true).unwrap();
    assert_eq!(scan.records.len(), 1);
    assert_eq!(
        scan.truncation.unwrap(),
        Truncation {
            path: path().to_path_buf(),
            offset: end,
            dropped_bytes: 4096
        }
    );
}

#[test]
fn first_record_must_match_the_segment_name() {
    let buf = segment(&[b"a"], 3);
    let err = scan_segment(&buf, path(), 1, true).unwrap_err();
    assert!(
        matches!(&err, JournalError::Corrupt { offset, what, .. } if *offset == HEADER_LEN as u64 && what.contains("seq 3")),
        "{err}"
    );
}

#[test]
fn intact_record_search_needs_a_valid_crc() {
    let buf = segment(&[b"a", b"b"], 1);
    assert!(format::intact_record_after(&buf, HEADER_LEN + 1, 1));
    assert!(!format::intact_record_after(&buf, HEADER_LEN + 1, 3));
    let mut damaged = buf.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    assert!(!format::intact_record_after(&damaged, HEADER_LEN + 1, 2));
}

/// The journal's file handle swapped for one that refuses writes, as a full disk or an
/// I/O error would: the next append fails.
fn break_writes(j: &mut Journal) {
    j.file = File::open(&j.segment_path).unwrap();
}

#[test]
fn a_failed_append_poisons_until_resume_writes_a_snapshot_past_its_seqs() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut j, _) = Journal::open(tmp.path()).unwrap();
    assert_eq!(j.append(&[b"a", b"b"]).unwrap(), 2);
    let failed_segment = j.segment_path.clone();
    break_writes(&mut j);
    let err = j.append(&[b"c", b"d"]).unwrap_err();
    assert!(
        matches!(&err, JournalError::Io { path, .. } if *path == failed_segment),
        "{err}"
    );
    assert!(j.is_poisoned());
    assert!(matches!(
        j.append(&[b"e"]),
        Err(JournalError::Poisoned { .. })
    ));
    assert!(matches!(
        j.snapshot(2, b"s"),
        Err(JournalError::Poisoned { .. })
    ));
    // Half of a record reached the disk before the failure.
    let mut torn = Vec::new();
    format::encode_record(&mut torn, 3, b"c");
    let mut f = OpenOptions::new()
        .append(true)
        .open(&failed_segment)
        .unwrap();
    f.write_all(&torn[..torn.len() / 2]).unwrap();
    drop(f);

    // The caller's state includes the failed records: the snapshot covers their seqs.
    assert_eq!(j.resume(b"state with a b c d").unwrap(), 4);
    assert!(!j.is_poisoned());
    assert_eq!(j.append(&[b"e"]).unwrap(), 5);
    drop(j);

    let (mut j, rec) = Journal::open(tmp.path()).unwrap();
    assert_eq!(
        rec.snapshot,
        Some(Snapshot {
            seq: 4,
            data: b"state with a b c d".to_vec()
        })
    );
    assert_eq!(
        rec.records,
        [Record {
            seq: 5,
            payload: b"e".to_vec()
        }]
    );
    assert_eq!(rec.truncated, None);
    // The failed segment was not written again, and the next snapshot removes it.
    assert!(failed_segment.exists());
    j.snapshot(5, b"later").unwrap();
    assert!(!failed_segment.exists());
}

#[test]
fn a_failed_resume_keeps_the_poison_and_may_be_repeated() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut j, _) = Journal::open(tmp.path()).unwrap();
    j.append(&[b"a"]).unwrap();
    break_writes(&mut j);
    j.append(&[b"b"]).unwrap_err();
    // The snapshot's temporary file cannot be created (a directory is in its way).
    let blocker = tmp_path(&tmp.path().join(format::snapshot_name(2)));
    fs::create_dir(&blocker).unwrap();
    let err = j.resume(b"s").unwrap_err();
    assert!(err.to_string().contains(".snap.tmp"), "{err}");
    assert!(j.is_poisoned());
    fs::remove_dir(&blocker).unwrap();
    assert_eq!(j.resume(b"s").unwrap(), 2);
    assert_eq!(j.append(&[b"c"]).unwrap(), 3);
}

#[test]
fn a_snapshot_that_cannot_write_its_file_does_not_stop_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut j, _) = Journal::open(tmp.path()).unwrap();
    j.append(&[b"a", b"b"]).unwrap();
    let blocker = tmp_path(&tmp.path().join(format::snapshot_name(2)));
    fs::create_dir(&blocker).unwrap();
    j.snapshot(2, b"s").unwrap_err();
    assert!(!j.is_poisoned());
    assert_eq!(j.append(&[b"c"]).unwrap(), 3);
    fs::remove_dir(&blocker).unwrap();
    drop(j);
    let (_j, rec) = Journal::open(tmp.path()).unwrap();
    assert_eq!(rec.snapshot, None);
    assert_eq!(rec.records.len(), 3);
}
