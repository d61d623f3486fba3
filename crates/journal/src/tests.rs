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
