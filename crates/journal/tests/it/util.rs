use std::fs;
use std::path::{Path, PathBuf};

use journal::{Journal, JournalError, Record, Recovered};

pub const HEADER_LEN: u64 = 12;
pub const RECORD_HEADER_LEN: u64 = 16;

pub fn log_path(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("log-{first:020}.log"))
}

pub fn snap_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("snapshot-{seq:020}.snap"))
}

pub fn open(dir: &Path) -> (Journal, Recovered) {
    Journal::open(dir).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// The payload the tests write for `seq`: varied lengths, including empty.
pub fn payload(seq: u64) -> Vec<u8> {
    format!(
        "{{\"event\":{seq},\"pad\":\"{}\"}}",
        "x".repeat((seq % 7) as usize)
    )
    .into_bytes()
}

pub fn records(seqs: std::ops::RangeInclusive<u64>) -> Vec<Record> {
    seqs.map(|seq| Record {
        seq,
        payload: payload(seq),
    })
    .collect()
}

/// Appends `payload(seq)` for the next `n` seqs, one group.
pub fn append_n(j: &mut Journal, n: u64) -> u64 {
    let first = j.last_seq() + 1;
    let owned: Vec<Vec<u8>> = (first..first + n).map(payload).collect();
    let refs: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    j.append(&refs).unwrap()
}

/// Byte offsets where each record of a segment starts, plus the segment's end.
pub fn offsets(payloads: &[Vec<u8>]) -> Vec<u64> {
    let mut out = vec![HEADER_LEN];
    for p in payloads {
        out.push(out.last().unwrap() + RECORD_HEADER_LEN + p.len() as u64);
    }
    out
}

/// A v1 record encoded independently of the crate.
pub fn encode_record(seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut crc_input = seq.to_le_bytes().to_vec();
    crc_input.extend_from_slice(payload);
    let mut out = (payload.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&crc32fast::hash(&crc_input).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

pub fn flip(path: &Path, offset: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset as usize] ^= 0x5a;
    fs::write(path, bytes).unwrap();
}

pub fn expect_corrupt(
    result: Result<(Journal, Recovered), JournalError>,
    want_path: &Path,
    want_offset: u64,
) -> String {
    match result {
        Err(JournalError::Corrupt { path, offset, what }) => {
            assert_eq!(
                (path.as_path(), offset),
                (want_path, want_offset),
                "wrong place; what: {what}"
            );
            what
        }
        Err(e) => panic!(
            "expected Corrupt at {}:{want_offset}, got {e}",
            want_path.display()
        ),
        Ok((_, rec)) => panic!(
            "expected Corrupt at {}:{want_offset}, got {rec:?}",
            want_path.display()
        ),
    }
}

/// Names of the journal files in `dir`, sorted, without the lock file.
pub fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != journal::LOCK_FILE)
        .collect();
    names.sort();
    names
}
