//! The controller's durable state: an append-only log of opaque records plus snapshots,
//! with checksums and crash recovery.
//!
//! It does not interpret payloads (the controller serializes its own events), does not
//! replicate, and does not decide when to snapshot.
//!
//! Invariant: a seq returned by [`Journal::append`] is on disk (fdatasync'd), and
//! [`Journal::open`] returns every such record, in order, or refuses with
//! [`JournalError::Corrupt`]; it never silently drops one.
//!
//! ```text
//! append([a, b, c]) -> one write + one fdatasync -> log-<first>.log
//! snapshot(seq, s)  -> snapshot-<seq>.snap.tmp, fsync, rename, fsync dir
//!                   -> new segment log-<last+1>.log, remove what is now obsolete
//! open(dir)         -> newest valid snapshot + every record after it (+ torn tail cut)
//! resume(s)         -> after a failed write: snapshot-<last>.snap as above, then a new
//!                      segment log-<last+1>.log; the failed segment is never written again
//! ```
//!
//! Recovery rules:
//! - Only the last record of the last segment can be torn by a crash. It counts as torn
//!   if the file ends inside it (and no intact record turns up after it, which would mean
//!   its length field was damaged instead), or if it is complete but fails its CRC and
//!   nothing but zeros follows it. The file is cut back to the last good record.
//! - Any other damage is [`JournalError::Corrupt`], naming the file and byte offset.
//! - A snapshot that fails its checks is passed over for an older one when the log since
//!   the older one is complete; it is renamed to `*.snap.corrupt` for inspection.
//!
//! Retention: a snapshot keeps the previous snapshot and the log since it, so that a
//! damaged newest snapshot has something to fall back on. Older files are removed; a file
//! that cannot be removed is left for the next snapshot to try again (a warning, not an
//! error: nothing reads it once a newer snapshot is on disk).
//!
//! Failed writes: after a failed append (or a failed rotation) what reached the segment is
//! unknown, so the journal is poisoned and refuses appends: retrying an fsync after a
//! failure can report success for data the kernel already dropped. [`Journal::resume`]
//! is the way back: the caller hands it its whole state, which is written as a new
//! snapshot covering every seq the failed write may have used, and appends go on in a new
//! segment. Nothing is rewritten in place, so the failed segment's unknown tail is never
//! read again (it is before the snapshot). Until the snapshot after it, a damaged resume
//! snapshot falls back on the previous one only where the failed segment reads as a whole
//! chain; otherwise `open` refuses with [`JournalError::Corrupt`] rather than guess. A
//! snapshot that fails while its temporary file is written changes nothing the log
//! depends on and does not poison the journal.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

mod format;
mod recover;

#[cfg(test)]
mod tests;

/// The format version this build writes.
pub const FORMAT_VERSION: u32 = 1;
/// The oldest format version this build reads.
pub const MIN_FORMAT_VERSION: u32 = 1;
/// The largest payload a record may carry. A length field above it is corruption.
pub const MAX_RECORD_LEN: usize = 64 << 20;
/// The file in the journal directory that an open journal holds an exclusive lock on.
pub const LOCK_FILE: &str = "LOCK";

/// An open journal: appends go to the newest log segment.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    /// Held for as long as the journal is open, so a second controller on the same
    /// directory fails at open instead of interleaving writes.
    _lock: Flock<File>,
    /// The newest segment, opened for appending.
    file: File,
    segment_path: PathBuf,
    segment_first: u64,
    next_seq: u64,
    /// First seqs of the segments on disk, ascending.
    segments: Vec<u64>,
    /// Seqs of the snapshots on disk, ascending.
    snapshots: Vec<u64>,
    /// Set when a write or sync failed: what reached the disk is unknown, and retrying an
    /// fsync after a failure can report success for data the kernel already dropped.
    /// Cleared by [`Journal::resume`].
    poisoned: bool,
    buf: Vec<u8>,
}

/// What [`Journal::open`] found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The newest valid snapshot.
    pub snapshot: Option<Snapshot>,
    /// Every record with seq > `snapshot.seq` (or all of them without one), in order.
    pub records: Vec<Record>,
    /// A torn tail that was cut off during open.
    pub truncated: Option<Truncation>,
}

/// The controller's serialized state as of `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The last record the state includes.
    pub seq: u64,
    /// Opaque bytes from the controller.
    pub data: Vec<u8>,
}

/// One logged record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Consecutive from 1, never reused.
    pub seq: u64,
    /// Opaque bytes from the controller.
    pub payload: Vec<u8>,
}

/// A torn write at the end of the log that recovery cut off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// The segment that was cut.
    pub path: PathBuf,
    /// Its new length: the end of the last good record.
    pub offset: u64,
    /// How many bytes were removed.
    pub dropped_bytes: u64,
}

/// Why the journal could not be opened or written.
///
/// Every variant names the file. After an error from [`Journal::append`] (or one from
/// [`Journal::snapshot`] that left the journal [poisoned](Journal::is_poisoned)) the
/// caller must stop acknowledging writes until [`Journal::resume`] succeeds.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file was written by a different build; upgrade or downgrade muster to read it.
    #[error(
        "journal {path}: format version {found} is not supported (this build reads {min}..={max})"
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        min: u32,
        max: u32,
    },
    /// Damage that is not a torn tail; records might be lost, so an operator has to look.
    #[error("journal {path}: corrupt record at byte {offset}: {what}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    #[error("journal {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another process (likely another controller) has the journal open.
    #[error("journal {path}: locked by another process")]
    Locked { path: PathBuf },
    /// The caller tried to append a payload above [`MAX_RECORD_LEN`]; nothing was written.
    #[error("journal {path}: record of {len} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        path: PathBuf,
        len: usize,
        max: usize,
    },
    /// A snapshot must be as of a seq that is logged and not older than the newest snapshot.
    #[error("journal {path}: cannot snapshot at seq {seq}: the log ends at seq {last_seq} and the newest snapshot is at seq {newest_snapshot}")]
    SnapshotSeq {
        path: PathBuf,
        seq: u64,
        last_seq: u64,
        newest_snapshot: u64,
    },
    /// An earlier write or sync failed, so the on-disk state is unknown; [`Journal::resume`]
    /// (or reopening) recovers.
    #[error("journal {path}: an earlier write failed; resume from a snapshot or reopen the journal to recover")]
    Poisoned { path: PathBuf },
}

impl Journal {
    /// Opens (creating if needed) the journal in `dir` and recovers it.
    pub fn open(dir: &Path) -> Result<(Journal, Recovered), JournalError> {
        if !dir.is_dir() {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
            // Records synced into a directory whose own entry was never synced could
            // vanish with it in a crash.
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                sync_dir(parent)?;
            }
        }
        let lock = lock(dir)?;
        let listing = recover::list(dir)?;
        let plan = recover::plan(dir, &listing)?;

        let mut changed_dir = false;
        for tmp in &listing.temps {
            fs::remove_file(tmp).map_err(io_err(tmp))?;
            changed_dir = true;
        }
        for (path, err) in &plan.skipped_snapshots {
            let mut aside = path.clone().into_os_string();
            aside.push(format::CORRUPT_SUFFIX);
            tracing::warn!(error = %err, moved_to = ?aside, "journal: passing over a damaged snapshot for an older one");
            fs::rename(path, &aside).map_err(io_err(path))?;
            changed_dir = true;
        }
        if let Some(t) = &plan.truncation {
            tracing::warn!(path = ?t.path, offset = t.offset, dropped_bytes = t.dropped_bytes, "journal: cutting off a torn write at the end of the log");
            let f = OpenOptions::new()
                .write(true)
                .open(&t.path)
                .map_err(io_err(&t.path))?;
            f.set_len(t.offset).map_err(io_err(&t.path))?;
            f.sync_all().map_err(io_err(&t.path))?;
        }
        if changed_dir {
            sync_dir(dir)?;
        }

        let next_seq = plan.last_seq + 1;
        let mut segments = listing.segments;
        let (segment_first, file) = match plan.tail {
            // Continue the last segment when the next record belongs at its end; when the
            // snapshot is ahead of the log (a crash before rotation), start a new one.
            Some((first, tail_next)) if tail_next == next_seq => {
                let path = dir.join(format::log_name(first));
                (
                    first,
                    OpenOptions::new()
                        .append(true)
                        .open(&path)
                        .map_err(io_err(&path))?,
                )
            }
            _ => {
                segments.push(next_seq);
                (next_seq, create_segment(dir, next_seq)?)
            }
        };
        // Snapshots newer than the one recovered were set aside above.
        let recovered_seq = plan.snapshot.as_ref().map(|s| s.seq);
        let snapshots = listing
            .snapshots
            .into_iter()
            .filter(|&s| recovered_seq.is_some_and(|r| s <= r))
            .collect();
        let journal = Journal {
            dir: dir.to_path_buf(),
            _lock: lock,
            file,
            segment_path: dir.join(format::log_name(segment_first)),
            segment_first,
            next_seq,
            segments,
            snapshots,
            poisoned: false,
            buf: Vec::new(),
        };
        let recovered = Recovered {
            snapshot: plan.snapshot,
            records: plan.records,
            truncated: plan.truncation,
        };
        Ok((journal, recovered))
    }

    /// Appends records (assigning consecutive seqs) and makes them durable with ONE
    /// fdatasync (group commit). Returns the last seq.
    ///
    /// With no payloads it writes nothing and returns [`Journal::last_seq`].
    pub fn append(&mut self, payloads: &[&[u8]]) -> Result<u64, JournalError> {
        self.check_poisoned()?;
        if let Some(p) = payloads.iter().find(|p| p.len() > MAX_RECORD_LEN) {
            return Err(JournalError::RecordTooLarge {
                path: self.segment_path.clone(),
                len: p.len(),
                max: MAX_RECORD_LEN,
            });
        }
        if payloads.is_empty() {
            return Ok(self.last_seq());
        }
        self.buf.clear();
        let mut seq = self.next_seq;
        for p in payloads {
            format::encode_record(&mut self.buf, seq, p);
            seq += 1;
        }
        let written = self
            .file
            .write_all(&self.buf)
            .and_then(|()| self.file.sync_data());
        // Don't keep a large group's buffer around for good.
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        if let Err(source) = written {
            self.poisoned = true;
            // Some of these records may be on disk, whole or in part: their seqs are
            // never given to other records, and `resume` writes a snapshot covering them.
            self.next_seq = seq;
            return Err(JournalError::Io {
                path: self.segment_path.clone(),
                source,
            });
        }
        self.next_seq = seq;
        Ok(seq - 1)
    }

    /// Writes a snapshot of the state as of `seq` atomically (temp file, fsync, rename,
    /// fsync dir), then starts a new log segment and removes the segments and snapshots
    /// the new one makes obsolete.
    ///
    /// `seq` is normally the last appended seq; an older one (state serialized while
    /// appends went on) is accepted as long as it is not older than the newest snapshot.
    /// The previous snapshot and the log since it are kept as a fallback.
    ///
    /// A refused `seq` changes nothing, and neither does a failure while the temporary
    /// file is written (a full disk, usually): appends go on. A failure after that
    /// poisons the journal like a failed [`Journal::append`] does, since the rename or
    /// the segment rotation may have half happened.
    pub fn snapshot(&mut self, seq: u64, data: &[u8]) -> Result<(), JournalError> {
        self.check_poisoned()?;
        let newest = self.snapshots.last().copied().unwrap_or(0);
        if seq > self.last_seq() || seq < newest {
            let path = self.dir.join(format::snapshot_name(seq));
            return Err(JournalError::SnapshotSeq {
                path,
                seq,
                last_seq: self.last_seq(),
                newest_snapshot: newest,
            });
        }
        let tmp = self.write_snapshot_tmp(seq, data)?;
        let result = self.publish_snapshot(seq, &tmp, false);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    /// Makes the journal writable again after a failed write: writes `data`, the
    /// caller's whole state, as a snapshot as of [`Journal::last_seq`] (which counts the
    /// seqs of a failed append, so the snapshot covers whatever part of it reached the
    /// disk), then starts a new segment after it, and clears the poison. Returns the
    /// snapshot's seq.
    ///
    /// Nothing already on disk is written again: the failed segment stays as it is,
    /// behind the snapshot, and the next snapshot removes it. On failure the journal
    /// stays poisoned and the call may be repeated.
    ///
    /// On a journal that is not poisoned it is [`Journal::snapshot`] at the last seq
    /// with a new segment always started.
    pub fn resume(&mut self, data: &[u8]) -> Result<u64, JournalError> {
        let seq = self.last_seq();
        let tmp = self.write_snapshot_tmp(seq, data)?;
        if let Err(e) = self.publish_snapshot(seq, &tmp, true) {
            self.poisoned = true;
            return Err(e);
        }
        self.poisoned = false;
        Ok(seq)
    }

    /// Whether a failed write left the journal refusing appends until
    /// [`Journal::resume`].
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Writes and syncs the snapshot's temporary file; on failure removes it (best
    /// effort) and leaves everything else as it was.
    fn write_snapshot_tmp(&self, seq: u64, data: &[u8]) -> Result<PathBuf, JournalError> {
        let path = self.dir.join(format::snapshot_name(seq));
        let tmp = tmp_path(&path);
        let written = write_tmp(&tmp, &format::encode_snapshot(seq, data));
        if written.is_err() {
            // Left behind, `open` removes it.
            let _ = fs::remove_file(&tmp);
        }
        written.map(|()| tmp)
    }

    /// Renames the snapshot's temporary file into place, starts a new segment (always
    /// with `rotate`, else when records were appended since the current one began) and
    /// removes what the snapshot makes obsolete.
    fn publish_snapshot(&mut self, seq: u64, tmp: &Path, rotate: bool) -> Result<(), JournalError> {
        let path = self.dir.join(format::snapshot_name(seq));
        fs::rename(tmp, &path).map_err(io_err(&path))?;
        sync_dir(&self.dir)?;
        if !self.snapshots.contains(&seq) {
            self.snapshots.push(seq);
        }

        if rotate || self.next_seq > self.segment_first {
            // Replaces a segment of the same name (an empty one, or one a failed
            // rotation left behind) atomically.
            let file = create_segment(&self.dir, self.next_seq)?;
            self.file = file;
            self.segment_first = self.next_seq;
            self.segment_path = self.dir.join(format::log_name(self.next_seq));
            if !self.segments.contains(&self.next_seq) {
                self.segments.push(self.next_seq);
            }
        }
        self.remove_obsolete();
        Ok(())
    }

    /// Keeps the previous snapshot and every segment that may hold a seq after it, and
    /// removes the rest. A file that cannot be removed stays listed, for the next
    /// snapshot to try again.
    fn remove_obsolete(&mut self) {
        let keep_from = self.snapshots.iter().rev().nth(1).copied().unwrap_or(0);
        let mut removed = false;
        let mut kept = Vec::new();
        for &s in &self.snapshots {
            let p = self.dir.join(format::snapshot_name(s));
            if s < keep_from && self.remove(&p) {
                removed = true;
            } else {
                kept.push(s);
            }
        }
        self.snapshots = kept;
        let obsolete = self
            .segments
            .windows(2)
            .take_while(|w| w[1] <= keep_from + 1)
            .count();
        let mut kept = Vec::new();
        for (i, &first) in self.segments.iter().enumerate() {
            let p = self.dir.join(format::log_name(first));
            // Oldest first: a segment left behind keeps every later one.
            if i < obsolete && kept.is_empty() && self.remove(&p) {
                removed = true;
            } else {
                kept.push(first);
            }
        }
        self.segments = kept;
        if removed {
            if let Err(e) = sync_dir(&self.dir) {
                // A removal that does not last is a file the next open lists and the
                // next snapshot removes again.
                tracing::warn!(error = %e, "journal: removed obsolete files, but the directory could not be synced");
            }
        }
    }

    fn remove(&self, path: &Path) -> bool {
        match fs::remove_file(path) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "journal: cannot remove an obsolete file; the next snapshot tries again");
                false
            }
        }
    }

    /// The seq of the last record appended (or recovered, or covered by the snapshot, or
    /// given to a record of a failed append); 0 for an empty journal.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// The directory the journal lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn check_poisoned(&self) -> Result<(), JournalError> {
        if self.poisoned {
            return Err(JournalError::Poisoned {
                path: self.segment_path.clone(),
            });
        }
        Ok(())
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn lock(dir: &Path) -> Result<Flock<File>, JournalError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(&path))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(JournalError::Locked { path }),
        Err((_, errno)) => Err(JournalError::Io {
            path,
            source: errno.into(),
        }),
    }
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// `path` with the temporary suffix.
fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.to_path_buf().into_os_string();
    tmp.push(format::TMP_SUFFIX);
    PathBuf::from(tmp)
}

/// Writes and syncs `bytes` to a fresh `tmp`.
fn write_tmp(tmp: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(tmp)
        .map_err(io_err(tmp))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(io_err(tmp))
}

/// Writes `bytes` to `path` so that after a crash the file is either absent or complete.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let tmp = tmp_path(path);
    write_tmp(&tmp, bytes)?;
    fs::rename(&tmp, path).map_err(io_err(path))?;
    sync_dir(dir)
}

/// Creates an empty segment (header only) atomically and opens it for appending.
/// Because creation is atomic, a segment with a short or bad header is corruption,
/// never a crash artefact.
fn create_segment(dir: &Path, first: u64) -> Result<File, JournalError> {
    let path = dir.join(format::log_name(first));
    write_atomically(dir, &path, &format::header(format::LOG_MAGIC))?;
    OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(io_err(&path))
}
