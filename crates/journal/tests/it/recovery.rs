use std::fs;

use journal::{Journal, JournalError, Record, Truncation, MAX_RECORD_LEN};

use crate::util::*;

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, rec) = open(dir.path());
    assert_eq!(
        rec,
        journal::Recovered {
            snapshot: None,
            records: vec![],
            truncated: None
        }
    );
    assert_eq!(j.last_seq(), 0);
    assert_eq!(j.dir(), dir.path());
    assert_eq!(j.append(&[b"one"]).unwrap(), 1);
    assert_eq!(j.append(&[b"two", b"", b"four"]).unwrap(), 4);
    drop(j);
    let (j, rec) = open(dir.path());
    let want: Vec<Record> = [&b"one"[..], b"two", b"", b"four"]
        .iter()
        .enumerate()
        .map(|(i, p)| Record {
            seq: i as u64 + 1,
            payload: p.to_vec(),
        })
        .collect();
    assert_eq!(rec.records, want);
    assert_eq!(rec.truncated, None);
    assert_eq!(j.last_seq(), 4);
}

#[test]
fn many_appends_in_one_group() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    assert_eq!(append_n(&mut j, 5000), 5000);
    let payloads: Vec<Vec<u8>> = (1..=5000).map(payload).collect();
    let len = fs::metadata(log_path(dir.path(), 1)).unwrap().len();
    assert_eq!(
        len,
        *offsets(&payloads).last().unwrap(),
        "one group is exactly its records, nothing else"
    );
    drop(j);
    assert_eq!(open(dir.path()).1.records, records(1..=5000));
}

#[test]
fn empty_append_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    append_n(&mut j, 2);
    let before = fs::metadata(log_path(dir.path(), 1)).unwrap().len();
    assert_eq!(j.append(&[]).unwrap(), 2);
    assert_eq!(fs::metadata(log_path(dir.path(), 1)).unwrap().len(), before);
}

#[test]
fn reopen_continues_seqs() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3u64 {
        let (mut j, rec) = open(dir.path());
        assert_eq!(rec.records, records(1..=round * 3));
        assert_eq!(j.last_seq(), round * 3);
        assert_eq!(append_n(&mut j, 3), round * 3 + 3);
    }
    assert_eq!(files(dir.path()), ["log-00000000000000000001.log"]);
}

#[test]
fn a_second_open_of_the_same_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_j, _) = open(dir.path());
    let err = Journal::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, JournalError::Locked { path } if path == &dir.path().join(journal::LOCK_FILE)),
        "{err}"
    );
}

#[test]
fn oversized_payload_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = open(dir.path());
    let big = vec![0u8; MAX_RECORD_LEN + 1];
    let err = j.append(&[b"fine", &big]).unwrap_err();
    assert!(matches!(err, JournalError::RecordTooLarge { len, .. } if len == MAX_RECORD_LEN + 1));
    assert_eq!(j.last_seq(), 0);
    assert_eq!(
        fs::metadata(log_path(dir.path(), 1)).unwrap().len(),
        HEADER_LEN
    );
    assert_eq!(j.append(&[b"fine"]).unwrap(), 1);
}

/// Writes records 1..=n in three groups and returns the segment path and record offsets.
fn three_groups(dir: &std::path::Path, n: u64) -> (std::path::PathBuf, Vec<u64>) {
    let (mut j, _) = open(dir);
    append_n(&mut j, 1);
    append_n(&mut j, n - 2);
    append_n(&mut j, 1);
    let payloads: Vec<Vec<u8>> = (1..=n).map(payload).collect();
    (log_path(dir, 1), offsets(&payloads))
}

#[test]
fn torn_tail_at_every_byte_of_the_last_record_keeps_the_earlier_ones() {
    let src = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(src.path(), 6);
    let whole = fs::read(&log).unwrap();
    let (last_start, end) = (offs[5], offs[6]);
    for cut in last_start..end {
        let dir = tempfile::tempdir().unwrap();
        let log = log_path(dir.path(), 1);
        fs::write(&log, &whole[..cut as usize]).unwrap();
        let (mut j, rec) = open(dir.path());
        assert_eq!(rec.records, records(1..=5), "cut at {cut}");
        let want = (cut > last_start).then(|| Truncation {
            path: log.clone(),
            offset: last_start,
            dropped_bytes: cut - last_start,
        });
        assert_eq!(rec.truncated, want, "cut at {cut}");
        assert_eq!(
            fs::metadata(&log).unwrap().len(),
            last_start,
            "cut at {cut}: really truncated on disk"
        );
        // Appends continue cleanly after the cut, and a reopen sees no damage.
        assert_eq!(append_n(&mut j, 2), 7);
        drop(j);
        let (_, rec) = open(dir.path());
        assert_eq!(rec.truncated, None, "cut at {cut}");
        assert_eq!(rec.records, records(1..=7), "cut at {cut}");
    }
}

#[test]
fn flipped_byte_in_a_middle_record_is_corrupt_at_that_record() {
    let src = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(src.path(), 5);
    let whole = fs::read(&log).unwrap();
    // Every byte of record 3: length, CRC, seq and payload.
    for at in offs[2]..offs[3] {
        let dir = tempfile::tempdir().unwrap();
        let log = log_path(dir.path(), 1);
        fs::write(&log, &whole).unwrap();
        flip(&log, at);
        expect_corrupt(Journal::open(dir.path()), &log, offs[2]);
        assert_eq!(
            fs::read(&log).unwrap()[at as usize],
            whole[at as usize] ^ 0x5a,
            "a failed open changes nothing"
        );
    }
}

#[test]
fn flipped_byte_in_the_last_record_is_a_torn_tail() {
    let src = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(src.path(), 4);
    let whole = fs::read(&log).unwrap();
    // The CRC, seq and payload of record 4; its length field is covered below.
    for at in offs[3] + 4..offs[4] {
        let dir = tempfile::tempdir().unwrap();
        let log = log_path(dir.path(), 1);
        fs::write(&log, &whole).unwrap();
        flip(&log, at);
        let (_, rec) = open(dir.path());
        assert_eq!(rec.records, records(1..=3), "flip at {at}");
        assert_eq!(
            rec.truncated,
            Some(Truncation {
                path: log.clone(),
                offset: offs[3],
                dropped_bytes: offs[4] - offs[3]
            }),
            "flip at {at}"
        );
    }
}

#[test]
fn damaged_length_of_the_last_record() {
    let src = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(src.path(), 4);
    let whole = fs::read(&log).unwrap();
    let len = payload(4).len() as u32;
    let set_len = |l: u32| {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = whole.clone();
        bytes[offs[3] as usize..offs[3] as usize + 4].copy_from_slice(&l.to_le_bytes());
        fs::write(log_path(dir.path(), 1), bytes).unwrap();
        (Journal::open(dir.path()), dir)
    };
    // Longer: the record now runs past the end of the file, as a torn write does.
    let (res, _d) = set_len(len + 1);
    assert_eq!(res.unwrap().1.records, records(1..=3));
    // Shorter: a complete record fails its CRC with bytes after it, which a torn write
    // cannot produce, so it is refused rather than guessed at.
    let (res, d) = set_len(len - 1);
    expect_corrupt(res, &log_path(d.path(), 1), offs[3]);
    // Above the limit: never written by us, so never a torn write.
    let (res, d) = set_len(MAX_RECORD_LEN as u32 + 1);
    let what = expect_corrupt(res, &log_path(d.path(), 1), offs[3]);
    assert!(what.contains("exceeds the limit"), "{what}");
    let _ = log;
}

#[test]
fn record_length_above_the_limit_in_the_middle_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(dir.path(), 4);
    let mut bytes = fs::read(&log).unwrap();
    bytes[offs[1] as usize..offs[1] as usize + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    fs::write(&log, bytes).unwrap();
    expect_corrupt(Journal::open(dir.path()), &log, offs[1]);
}

#[test]
fn zeros_after_the_last_record_are_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let (log, offs) = three_groups(dir.path(), 3);
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0; 100]);
    fs::write(&log, bytes).unwrap();
    let (_, rec) = open(dir.path());
    assert_eq!(rec.records, records(1..=3));
    assert_eq!(
        rec.truncated,
        Some(Truncation {
            path: log,
            offset: offs[3],
            dropped_bytes: 100
        })
    );
}

#[test]
fn seq_out_of_order_or_with_a_gap_is_corrupt() {
    for bad_seq in [2, 5, 3] {
        let dir = tempfile::tempdir().unwrap();
        let (log, offs) = three_groups(dir.path(), 3);
        // Record 3 re-encoded, with a valid CRC, under the wrong seq.
        let mut bytes = fs::read(&log).unwrap();
        bytes.truncate(offs[2] as usize);
        bytes.extend_from_slice(&encode_record(bad_seq, &payload(3)));
        bytes.extend_from_slice(&encode_record(bad_seq + 1, &payload(4)));
        fs::write(&log, bytes).unwrap();
        if bad_seq == 3 {
            assert_eq!(open(dir.path()).1.records, records(1..=4));
        } else {
            let what = expect_corrupt(Journal::open(dir.path()), &log, offs[2]);
            assert!(what.contains(&format!("seq {bad_seq}")), "{what}");
        }
    }
}

/// Records 1..=3 in log-1, 4..=6 in log-4 and 7..=8 in log-7, written by hand.
fn three_segments(dir: &std::path::Path) {
    for (first, last) in [(1, 3), (4, 6), (7, 8)] {
        let mut bytes = b"MUSTERJ\0\x01\0\0\0".to_vec();
        for seq in first..=last {
            bytes.extend_from_slice(&encode_record(seq, &payload(seq)));
        }
        fs::write(log_path(dir, first), bytes).unwrap();
    }
    let (mut j, rec) = open(dir);
    assert_eq!(rec.records, records(1..=8));
    assert_eq!(append_n(&mut j, 1), 9);
    drop(j);
    assert_eq!(
        fs::metadata(log_path(dir, 7)).unwrap().len(),
        *offsets(&(7..=9).map(payload).collect::<Vec<_>>())
            .last()
            .unwrap()
    );
}

#[test]
fn damage_at_the_end_of_a_non_last_segment_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    three_segments(dir.path());
    let log4 = log_path(dir.path(), 4);
    let len = fs::metadata(&log4).unwrap().len();
    let payloads: Vec<Vec<u8>> = (4..=6).map(payload).collect();
    let offs = offsets(&payloads);
    fs::OpenOptions::new()
        .write(true)
        .open(&log4)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    expect_corrupt(Journal::open(dir.path()), &log4, offs[2]);
}

#[test]
fn a_missing_segment_is_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    three_segments(dir.path());
    fs::remove_file(log_path(dir.path(), 4)).unwrap();
    let what = expect_corrupt(
        Journal::open(dir.path()),
        &log_path(dir.path(), 7),
        HEADER_LEN,
    );
    assert!(what.contains("previous segment ends at seq 3"), "{what}");
    fs::remove_file(log_path(dir.path(), 1)).unwrap();
    let what = expect_corrupt(
        Journal::open(dir.path()),
        &log_path(dir.path(), 7),
        HEADER_LEN,
    );
    assert!(what.contains("seqs 1..=6 are missing"), "{what}");
}

#[test]
fn bad_magic_is_corrupt_and_other_versions_are_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = three_groups(dir.path(), 3);
    let good = fs::read(&log).unwrap();

    let mut bytes = good.clone();
    bytes[..8].copy_from_slice(b"MUSTERX\0");
    fs::write(&log, &bytes).unwrap();
    let what = expect_corrupt(Journal::open(dir.path()), &log, 0);
    assert!(what.contains("bad magic"), "{what}");

    for version in [0u32, 2, u32::MAX] {
        let mut bytes = good.clone();
        bytes[8..12].copy_from_slice(&version.to_le_bytes());
        fs::write(&log, &bytes).unwrap();
        let err = Journal::open(dir.path()).unwrap_err();
        assert!(
            matches!(&err, JournalError::UnsupportedVersion { path, found, min: 1, max: 1 } if *path == log && *found == version),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "journal {}: format version {version} is not supported (this build reads 1..=1)",
                log.display()
            )
        );
    }

    fs::write(&log, &good[..5]).unwrap();
    expect_corrupt(Journal::open(dir.path()), &log, 0);
}

#[test]
fn open_creates_missing_directories() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("state/journal");
    let (mut j, _) = open(&dir);
    assert_eq!(j.append(&[b"x"]).unwrap(), 1);
    drop(j);
    assert_eq!(files(&dir), ["log-00000000000000000001.log"]);
}
