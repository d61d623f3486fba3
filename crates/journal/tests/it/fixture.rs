//! Format v1 fixtures (style.md section 6, item 9): a journal written by the v1 build is
//! checked in under `tests/fixtures/v1/` and must be read back by every later build.
//!
//! Regenerate (only while v1 is the format written) with
//! `JOURNAL_UPDATE_FIXTURES=1 cargo test -p journal fixture`.

use std::fs;
use std::path::{Path, PathBuf};

use journal::{Record, Snapshot};

use crate::util::*;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1")
}

/// The history the fixture holds: log-1 with seqs 1..=3, a snapshot at 3, log-4 with 4..=6.
fn write_v1_history(dir: &Path) {
    let (mut j, _) = open(dir);
    j.append(&[br#"{"submit":{"job":1,"name":"a"}}"#]).unwrap();
    j.append(&[
        br#"{"start":{"job":1,"nodes":"n[1-2]"}}"#,
        br#"{"submit":{"job":2,"name":"b"}}"#,
    ])
    .unwrap();
    j.snapshot(3, br#"{"next_job_id":3,"jobs":[1,2]}"#).unwrap();
    j.append(&[
        br#"{"end":{"job":1,"exit":"0:0"}}"#,
        b"",
        &[0, 1, 2, 0xff, b'\n'],
    ])
    .unwrap();
}

fn journal_files(dir: &Path) -> Vec<String> {
    files(dir)
        .into_iter()
        .filter(|n| n.ends_with(".log") || n.ends_with(".snap"))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn render(snapshot: Option<&Snapshot>, records: &[Record]) -> String {
    let mut out = String::from("# What Journal::open returns for this directory: `snapshot SEQ HEX` and `record SEQ HEX`.\n");
    if let Some(s) = snapshot {
        out += &line("snapshot", s.seq, &s.data);
    }
    for r in records {
        out += &line("record", r.seq, &r.payload);
    }
    out
}

/// `KIND SEQ HEX`, without a trailing space when the bytes are empty.
fn line(kind: &str, seq: u64, bytes: &[u8]) -> String {
    if bytes.is_empty() {
        format!("{kind} {seq}\n")
    } else {
        format!("{kind} {seq} {}\n", hex(bytes))
    }
}

fn parse_expected(text: &str) -> (Option<Snapshot>, Vec<Record>) {
    let mut snapshot = None;
    let mut records = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let fields: Vec<&str> = line.split(' ').collect();
        let (seq, bytes) = (
            fields[1].parse().unwrap(),
            unhex(fields.get(2).copied().unwrap_or("")),
        );
        match fields[0] {
            "snapshot" => snapshot = Some(Snapshot { seq, data: bytes }),
            "record" => records.push(Record {
                seq,
                payload: bytes,
            }),
            other => panic!("unknown line kind {other:?} in expected.txt"),
        }
    }
    (snapshot, records)
}

#[test]
fn v1_fixture_is_read_back() {
    let fixture = fixture_dir();
    let dir = tempfile::tempdir().unwrap();
    let names = journal_files(&fixture);
    assert_eq!(
        names,
        [
            "log-00000000000000000001.log",
            "log-00000000000000000004.log",
            "snapshot-00000000000000000003.snap"
        ]
    );
    for name in &names {
        fs::copy(fixture.join(name), dir.path().join(name)).unwrap();
    }
    let (mut j, rec) = open(dir.path());
    let (snapshot, records) =
        parse_expected(&fs::read_to_string(fixture.join("expected.txt")).unwrap());
    assert_eq!(rec.snapshot, snapshot);
    assert_eq!(rec.records, records);
    assert_eq!(rec.truncated, None);
    assert_eq!(j.last_seq(), 6);
    assert_eq!(j.append(&[b"written by this build"]).unwrap(), 7);
}

#[test]
fn v1_writer_output_matches_fixture() {
    // Once the written format moves on, this pins the new version's fixture instead,
    // and the v1 files stay for `v1_fixture_is_read_back`.
    if journal::FORMAT_VERSION != 1 {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_v1_history(dir.path());
    let (_, rec) = open(dir.path());
    let expected = render(rec.snapshot.as_ref(), &rec.records);
    let fixture = fixture_dir();
    if std::env::var_os("JOURNAL_UPDATE_FIXTURES").is_some() {
        fs::create_dir_all(&fixture).unwrap();
        for name in journal_files(dir.path()) {
            fs::copy(dir.path().join(&name), fixture.join(&name)).unwrap();
        }
        fs::write(fixture.join("expected.txt"), &expected).unwrap();
    }
    assert_eq!(journal_files(dir.path()), journal_files(&fixture));
    for name in journal_files(dir.path()) {
        assert_eq!(
            fs::read(dir.path().join(&name)).unwrap(),
            fs::read(fixture.join(&name)).unwrap(),
            "{name} differs from the fixture"
        );
    }
    assert_eq!(
        expected,
        fs::read_to_string(fixture.join("expected.txt")).unwrap()
    );
}
