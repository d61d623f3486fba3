//! Recovery: reads the directory and decides what it holds, without changing anything.
//!
//! ```text
//! list dir -> newest valid snapshot (older ones if it is damaged)
//!          -> log segments that may hold seq > snapshot.seq, checked as one chain
//!          -> Plan { snapshot, records, torn tail to cut, files to set aside }
//! ```
//!
//! `Journal::open` then carries out the plan. Keeping the scan read-only means a
//! failed recovery leaves the directory exactly as it found it for an operator.

use std::fs;
use std::path::{Path, PathBuf};

use crate::format::{self, FileKind, HEADER_LEN, LOG_MAGIC, RECORD_HEADER_LEN};
use crate::{JournalError, Record, Snapshot, Truncation, MAX_RECORD_LEN};

/// The journal files in a directory, each list sorted by seq.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub segments: Vec<u64>,
    pub snapshots: Vec<u64>,
    pub temps: Vec<PathBuf>,
}

pub(crate) fn list(dir: &Path) -> Result<Listing, JournalError> {
    let io = |source| JournalError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Listing::default();
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name();
        // Names that are not UTF-8 are not ours.
        let Some(name) = name.to_str() else { continue };
        match format::classify(name) {
            FileKind::Log(seq) => out.segments.push(seq),
            FileKind::Snapshot(seq) => out.snapshots.push(seq),
            FileKind::Temp => out.temps.push(entry.path()),
            FileKind::Other => {}
        }
    }
    out.segments.sort_unstable();
    out.snapshots.sort_unstable();
    Ok(out)
}

/// What recovery found, before anything on disk is changed.
#[derive(Debug)]
pub(crate) struct Plan {
    pub snapshot: Option<Snapshot>,
    /// Records with seq > the snapshot's seq.
    pub records: Vec<Record>,
    pub truncation: Option<Truncation>,
    /// Newer snapshots that failed their checks and were passed over for `snapshot`.
    pub skipped_snapshots: Vec<(PathBuf, JournalError)>,
    /// The last segment, if any: its first seq and the seq its next record must have.
    pub tail: Option<(u64, u64)>,
    /// The highest seq covered by the snapshot or the log.
    pub last_seq: u64,
}

pub(crate) fn plan(dir: &Path, listing: &Listing) -> Result<Plan, JournalError> {
    let mut skipped: Vec<(PathBuf, JournalError)> = Vec::new();
    let mut snapshot = None;
    for &seq in listing.snapshots.iter().rev() {
        let path = dir.join(format::snapshot_name(seq));
        let buf = fs::read(&path).map_err(|source| JournalError::Io {
            path: path.clone(),
            source,
        })?;
        match format::decode_snapshot(buf, &path, seq) {
            Ok((seq, data)) => {
                snapshot = Some(Snapshot { seq, data });
                break;
            }
            // A snapshot damaged on disk may have an older one to stand in for it; one
            // written by a newer build must not be silently replaced by older state.
            Err(e @ JournalError::Corrupt { .. }) => skipped.push((path, e)),
            Err(e) => return Err(e),
        }
    }
    let base = snapshot.as_ref().map_or(0, |s| s.seq);
    match scan_log(dir, &listing.segments, base) {
        Ok(log) => Ok(Plan {
            last_seq: log.next_seq.map_or(base, |n| (n - 1).max(base)),
            records: log.records,
            truncation: log.truncation,
            tail: listing
                .segments
                .last()
                .map(|&first| (first, log.next_seq.expect("segments exist"))),
            snapshot,
            skipped_snapshots: skipped,
        }),
        Err(log_err) => match skipped.into_iter().next() {
            // The newest snapshot is damaged and the fallback did not work out either:
            // report the snapshot, the first thing that went wrong.
            Some((_, JournalError::Corrupt { path, offset, what })) => Err(JournalError::Corrupt {
                path,
                offset,
                what: format!(
                    "{what}; no older snapshot with a complete log to fall back on ({log_err})"
                ),
            }),
            _ => Err(log_err),
        },
    }
}

#[derive(Debug)]
struct LogScan {
    records: Vec<Record>,
    truncation: Option<Truncation>,
    /// The seq the next record of the last segment must have; `None` with no segments.
    next_seq: Option<u64>,
}

/// Reads the segments that may hold seq > `base` and checks they form one gapless chain.
///
/// Segment `i` holds seqs from `segments[i]` up to `segments[i + 1] - 1`, so the ones
/// that end at or below `base` are entirely covered by the snapshot and are not read.
fn scan_log(dir: &Path, segments: &[u64], base: u64) -> Result<LogScan, JournalError> {
    let first_needed = segments
        .iter()
        .enumerate()
        .position(|(i, _)| i + 1 == segments.len() || segments[i + 1] > base + 1);
    let Some(first_needed) = first_needed else {
        return Ok(LogScan {
            records: Vec::new(),
            truncation: None,
            next_seq: None,
        });
    };
    let mut records = Vec::new();
    let mut truncation = None;
    let mut next_seq = segments[first_needed];
    if next_seq > base + 1 {
        let path = dir.join(format::log_name(next_seq));
        let covered = if base == 0 {
            "no snapshot covers any seq".to_string()
        } else {
            format!("the newest usable snapshot covers seqs up to {base}")
        };
        return Err(format::corrupt(
            &path,
            HEADER_LEN as u64,
            format!(
                "log starts at seq {next_seq} but {covered}: seqs {}..={} are missing",
                base + 1,
                next_seq - 1
            ),
        ));
    }
    for (i, &first) in segments.iter().enumerate().skip(first_needed) {
        let path = dir.join(format::log_name(first));
        if first != next_seq {
            return Err(format::corrupt(
                &path,
                HEADER_LEN as u64,
                format!(
                    "segment starts at seq {first} but the previous segment ends at seq {}",
                    next_seq - 1
                ),
            ));
        }
        let is_last = i + 1 == segments.len();
        let buf = fs::read(&path).map_err(|source| JournalError::Io {
            path: path.clone(),
            source,
        })?;
        let seg = scan_segment(&buf, &path, first, is_last)?;
        next_seq = first + seg.records.len() as u64;
        records.extend(seg.records.into_iter().filter(|r| r.seq > base));
        truncation = seg.truncation;
    }
    Ok(LogScan {
        records,
        truncation,
        next_seq: Some(next_seq),
    })
}

#[derive(Debug)]
pub(crate) struct SegmentScan {
    pub records: Vec<Record>,
    pub truncation: Option<Truncation>,
}

/// Decodes one segment. Only the last segment may end in a torn write; see the crate docs
/// for what counts as one.
pub(crate) fn scan_segment(
    buf: &[u8],
    path: &Path,
    first: u64,
    is_last: bool,
) -> Result<SegmentScan, JournalError> {
    format::check_header(buf, LOG_MAGIC, path)?;
    let mut records = Vec::new();
    let mut pos = HEADER_LEN;
    let mut expected = first;
    let torn = |pos: usize, records: Vec<Record>| {
        let truncation = Truncation {
            path: path.to_path_buf(),
            offset: pos as u64,
            dropped_bytes: (buf.len() - pos) as u64,
        };
        Ok(SegmentScan {
            records,
            truncation: Some(truncation),
        })
    };
    while pos < buf.len() {
        let rest = buf.len() - pos;
        if rest < RECORD_HEADER_LEN {
            if is_last {
                return torn(pos, records);
            }
            return Err(format::corrupt(
                path,
                pos as u64,
                format!("segment ends {rest} bytes into a record header"),
            ));
        }
        let h = format::raw_header(buf, pos);
        // We never write a record this long, so no torn write can produce this length.
        if h.len > MAX_RECORD_LEN {
            return Err(format::corrupt(
                path,
                pos as u64,
                format!(
                    "record length {} exceeds the limit of {MAX_RECORD_LEN} bytes",
                    h.len
                ),
            ));
        }
        let end = pos + RECORD_HEADER_LEN + h.len;
        if end > buf.len() {
            if is_last && !format::intact_record_after(buf, pos + 1, expected) {
                return torn(pos, records);
            }
            return Err(format::corrupt(
                path,
                pos as u64,
                format!("record of {} bytes runs past the end of the segment", h.len),
            ));
        }
        let computed = format::record_crc(buf, pos, h.len);
        if computed != h.crc {
            // A file extended by a crash before its data reached the disk reads back as
            // zeros, so trailing zeros count as nothing following the record.
            if is_last && buf[end..].iter().all(|&b| b == 0) {
                return torn(pos, records);
            }
            return Err(format::corrupt(
                path,
                pos as u64,
                format!(
                    "record checksum mismatch (stored {:#010x}, computed {computed:#010x})",
                    h.crc
                ),
            ));
        }
        if h.seq != expected {
            return Err(format::corrupt(
                path,
                pos as u64,
                format!(
                    "record has seq {} but seq {expected} was expected here",
                    h.seq
                ),
            ));
        }
        records.push(Record {
            seq: h.seq,
            payload: buf[pos + RECORD_HEADER_LEN..end].to_vec(),
        });
        expected += 1;
        pos = end;
    }
    Ok(SegmentScan {
        records,
        truncation: None,
    })
}
