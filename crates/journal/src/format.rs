//! On-disk format, version 1.
//!
//! ```text
//! log-<firstseq:020>.log        snapshot-<seq:020>.snap
//! +--------------------+        +--------------------+
//! | b"MUSTERJ\0"  (8)  |        | b"MUSTERS\0"  (8)  |
//! | version u32 LE (4) |        | version u32 LE (4) |
//! +--------------------+        | seq     u64 LE (8) |
//! | len     u32 LE (4) |        | crc     u32 LE (4) |  CRC32 of seq + len + data
//! | crc     u32 LE (4) |        | len     u64 LE (8) |
//! | seq     u64 LE (8) |        | data    (len)      |
//! | payload (len)      |        +--------------------+
//! +--------------------+
//! | ... more records   |  crc = CRC32 of seq + payload, which are adjacent on disk
//! ```
//!
//! Everything here is pure: it encodes into and decodes from byte slices, and the
//! I/O lives in `lib.rs`.

use std::path::Path;

use crate::JournalError;

/// Magic bytes that open every log segment.
pub(crate) const LOG_MAGIC: [u8; 8] = *b"MUSTERJ\0";
/// Magic bytes that open every snapshot.
pub(crate) const SNAP_MAGIC: [u8; 8] = *b"MUSTERS\0";
/// Magic (8) + version (4).
pub(crate) const HEADER_LEN: usize = 12;
/// len (4) + crc (4) + seq (8).
pub(crate) const RECORD_HEADER_LEN: usize = 16;
/// File header + seq (8) + crc (4) + len (8).
pub(crate) const SNAPSHOT_PREFIX_LEN: usize = HEADER_LEN + 20;

pub(crate) const LOG_PREFIX: &str = "log-";
pub(crate) const LOG_SUFFIX: &str = ".log";
pub(crate) const SNAP_PREFIX: &str = "snapshot-";
pub(crate) const SNAP_SUFFIX: &str = ".snap";
/// Suffix of files being written; a crash can leave one behind and `open` removes it.
pub(crate) const TMP_SUFFIX: &str = ".tmp";
/// Suffix given to a snapshot that failed its checks and was passed over for an older one,
/// kept for inspection rather than deleted.
pub(crate) const CORRUPT_SUFFIX: &str = ".corrupt";

pub(crate) fn log_name(first_seq: u64) -> String {
    format!("{LOG_PREFIX}{first_seq:020}{LOG_SUFFIX}")
}

pub(crate) fn snapshot_name(seq: u64) -> String {
    format!("{SNAP_PREFIX}{seq:020}{SNAP_SUFFIX}")
}

/// What a directory entry is, judged by its name alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Log(u64),
    Snapshot(u64),
    /// A `log-*.tmp` or `snapshot-*.tmp` left by a crash mid-write.
    Temp,
    /// Anything else (the lock file, `.corrupt` snapshots, files an operator put there).
    Other,
}

pub(crate) fn classify(name: &str) -> FileKind {
    if (name.starts_with(LOG_PREFIX) || name.starts_with(SNAP_PREFIX)) && name.ends_with(TMP_SUFFIX)
    {
        return FileKind::Temp;
    }
    if let Some(seq) = parse_seq(name, LOG_PREFIX, LOG_SUFFIX) {
        return FileKind::Log(seq);
    }
    if let Some(seq) = parse_seq(name, SNAP_PREFIX, SNAP_SUFFIX) {
        return FileKind::Snapshot(seq);
    }
    FileKind::Other
}

fn parse_seq(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

pub(crate) fn header(magic: [u8; 8]) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&magic);
    h[8..].copy_from_slice(&crate::FORMAT_VERSION.to_le_bytes());
    h
}

/// Checks the magic and version at the start of `buf`.
pub(crate) fn check_header(buf: &[u8], magic: [u8; 8], path: &Path) -> Result<(), JournalError> {
    if buf.len() < HEADER_LEN {
        return Err(corrupt(
            path,
            0,
            format!(
                "file is {} bytes, shorter than its {HEADER_LEN}-byte header",
                buf.len()
            ),
        ));
    }
    if buf[..8] != magic {
        return Err(corrupt(
            path,
            0,
            format!(
                "bad magic {:?}, expected {:?}",
                Escaped(&buf[..8]),
                Escaped(&magic)
            ),
        ));
    }
    let found = u32_at(buf, 8);
    if !(crate::MIN_FORMAT_VERSION..=crate::FORMAT_VERSION).contains(&found) {
        return Err(JournalError::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            min: crate::MIN_FORMAT_VERSION,
            max: crate::FORMAT_VERSION,
        });
    }
    Ok(())
}

/// Appends one encoded record to `out`.
pub(crate) fn encode_record(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("caller checked MAX_RECORD_LEN");
    let mut h = crc32fast::Hasher::new();
    h.update(&seq.to_le_bytes());
    h.update(payload);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
}

pub(crate) fn snapshot_crc(seq: u64, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&seq.to_le_bytes());
    h.update(&(data.len() as u64).to_le_bytes());
    h.update(data);
    h.finalize()
}

/// Encodes a whole snapshot file.
pub(crate) fn encode_snapshot(seq: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNAPSHOT_PREFIX_LEN + data.len());
    out.extend_from_slice(&header(SNAP_MAGIC));
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&snapshot_crc(seq, data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// Decodes a whole snapshot file into `(seq, data)`, consuming `buf` to avoid a copy.
pub(crate) fn decode_snapshot(
    mut buf: Vec<u8>,
    path: &Path,
    name_seq: u64,
) -> Result<(u64, Vec<u8>), JournalError> {
    check_header(&buf, SNAP_MAGIC, path)?;
    if buf.len() < SNAPSHOT_PREFIX_LEN {
        return Err(corrupt(
            path,
            HEADER_LEN as u64,
            format!(
                "snapshot is {} bytes, shorter than its {SNAPSHOT_PREFIX_LEN}-byte prefix",
                buf.len()
            ),
        ));
    }
    let seq = u64_at(&buf, HEADER_LEN);
    let crc = u32_at(&buf, HEADER_LEN + 8);
    let len = u64_at(&buf, HEADER_LEN + 12);
    let actual = (buf.len() - SNAPSHOT_PREFIX_LEN) as u64;
    if len != actual {
        return Err(corrupt(
            path,
            (HEADER_LEN + 12) as u64,
            format!("snapshot says {len} data bytes but the file holds {actual}"),
        ));
    }
    if seq != name_seq {
        return Err(corrupt(
            path,
            HEADER_LEN as u64,
            format!("snapshot holds seq {seq} but its name says {name_seq}"),
        ));
    }
    let data = buf.split_off(SNAPSHOT_PREFIX_LEN);
    let computed = snapshot_crc(seq, &data);
    if computed != crc {
        return Err(corrupt(
            path,
            (HEADER_LEN + 8) as u64,
            format!("snapshot checksum mismatch (stored {crc:#010x}, computed {computed:#010x})"),
        ));
    }
    Ok((seq, data))
}

/// One record header read from a segment, not yet checked against its payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawHeader {
    pub len: usize,
    pub crc: u32,
    pub seq: u64,
}

/// Reads the record header at `pos`; the caller ensures 16 bytes are there.
pub(crate) fn raw_header(buf: &[u8], pos: usize) -> RawHeader {
    RawHeader {
        len: u32_at(buf, pos) as usize,
        crc: u32_at(buf, pos + 4),
        seq: u64_at(buf, pos + 8),
    }
}

/// CRC32 of the seq and payload of the record at `pos` whose payload is `len` bytes;
/// on disk the seq sits right before the payload, so this is one contiguous slice.
pub(crate) fn record_crc(buf: &[u8], pos: usize, len: usize) -> u32 {
    crc32fast::hash(&buf[pos + 8..pos + RECORD_HEADER_LEN + len])
}

/// Whether an intact record with a seq in `min_seq..` starts anywhere after `from`.
///
/// Recovery uses this before treating a record that runs past the end of the file as a
/// torn write: if its length field was damaged instead, the records after it are still
/// there, and cutting them off would drop acknowledged records.
pub(crate) fn intact_record_after(buf: &[u8], from: usize, min_seq: u64) -> bool {
    let mut q = from;
    while q + RECORD_HEADER_LEN <= buf.len() {
        let h = raw_header(buf, q);
        // The seq check is a cheap filter; the CRC is the real test.
        if (min_seq..min_seq.saturating_add(buf.len() as u64)).contains(&h.seq)
            && h.len <= crate::MAX_RECORD_LEN
            && q + RECORD_HEADER_LEN + h.len <= buf.len()
            && record_crc(buf, q, h.len) == h.crc
        {
            return true;
        }
        q += 1;
    }
    false
}

pub(crate) fn corrupt(path: &Path, offset: u64, what: String) -> JournalError {
    JournalError::Corrupt {
        path: path.to_path_buf(),
        offset,
        what,
    }
}

fn u32_at(buf: &[u8], pos: usize) -> u32 {
    u32::from_le_bytes(buf[pos..pos + 4].try_into().expect("4 bytes"))
}

fn u64_at(buf: &[u8], pos: usize) -> u64 {
    u64::from_le_bytes(buf[pos..pos + 8].try_into().expect("8 bytes"))
}

/// Shows bytes as an escaped string in error messages, e.g. `"MUSTERJ\0"`.
struct Escaped<'a>(&'a [u8]);

impl std::fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\"", self.0.escape_ascii())
    }
}
