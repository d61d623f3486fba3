//! Job directories used again: a reported job's directory is emptied and
//! kept (`<spool>/free.N`) for a later launch instead of being removed, so
//! that a job costs the file system no new inodes for its directory, its
//! log and (for the same owner) its script.
//!
//! ```text
//!   launch:  take free.N (or mkdir a new one) -> fill: script, log (record),
//!            owner and modes -> rename free.N -> jobNNNNN
//!   report answered: jobNNNNN still holds this run's log -> drop every other
//!            file -> rename jobNNNNN -> free.M (or remove it, the pool full)
//! ```
//!
//! Why: on ext4 without a journal (as this project's spool volumes are,
//! and as `tune2fs -O ^has_journal` leaves any), allocating an inode skips
//! every free inode of its group freed within the last minute (five more
//! while its inode table block is dirty), one buffer lookup each
//! (`find_inode_bit`, `recently_deleted`). A node that frees three inodes a
//! job, hundreds of jobs a second, makes every later allocation in that
//! group (the job's output file too) walk thousands of them: a third of a
//! trivial job's CPU went there. A rename allocates nothing.
//!
//! The directory appears under its job's name only once filled (one
//! rename), so a daemon that dies meanwhile leaves a `free.N` with half a
//! job in it, never a job directory without its record; the next daemon
//! removes every `free.N` it finds at its start.
//!
//! A slot's script is used again only for a job of the same owner, with one
//! link: a job's user owns its script and may keep it open (or link it) past
//! the job's end, so another user's job gets a new file. The directory and
//! the log stay the daemon's (the user may not open them for writing), and
//! the log is truncated before its first record. A relaunch of the same job
//! id is told from the run before by the token of its end
//! (`spool::remove_reported`'s check), not by the inode.

use crate::spool::{self, JobRecord, LOG_FILE};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The script's name in a job directory.
pub const SCRIPT_FILE: &str = "slurm_script";
/// Starts the names of emptied directories kept for later launches.
const FREE_PREFIX: &str = "free.";
/// Most emptied directories kept; more jobs ending at once than this are
/// removed as before. The daemon runs a few jobs per CPU at most, and
/// about as many are being reported.
pub const MAX_FREE: usize = 256;

/// The emptied job directories of one spool directory.
#[derive(Debug)]
pub struct Slots {
    spool_dir: PathBuf,
    free: Mutex<Free>,
}

#[derive(Debug, Default)]
struct Free {
    dirs: Vec<PathBuf>,
    /// The number in the next `free.N` name.
    next: u64,
}

/// Who a job directory is for: the daemon's own job, or another user's
/// (the script owned by that user, the directory mode 0711 so the user can
/// reach the script but not list or change the supervisor's files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Whom the script belongs to.
    pub uid: u32,
    /// Its group.
    pub gid: u32,
    /// True when that is another user than the daemon.
    pub other_user: bool,
}

impl Slots {
    /// The slots of `spool_dir`, none yet: the `free.N` a daemon before this
    /// one left are removed (one may be half filled).
    pub fn new(spool_dir: &Path) -> Slots {
        if let Ok(entries) = std::fs::read_dir(spool_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_str().is_some_and(|n| n.starts_with(FREE_PREFIX)) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        Slots {
            spool_dir: spool_dir.to_path_buf(),
            free: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Free> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many emptied directories are kept now.
    pub fn free_count(&self) -> usize {
        self.lock().dirs.len()
    }

    /// A new `free.N` path, not yet in use by this daemon.
    fn new_name(&self) -> PathBuf {
        let mut free = self.lock();
        let n = free.next;
        free.next += 1;
        self.spool_dir.join(format!("{FREE_PREFIX}{n}"))
    }

    /// Creates the job directory `dir` with `script` and the job's log
    /// holding `record`: an emptied directory filled and renamed into
    /// place, else a new one built the same way. A leftover `dir` (of an
    /// earlier run of the same job id) is removed first.
    pub fn create_job_dir(
        &self,
        dir: &Path,
        script: &[u8],
        owner: Owner,
        record: &JobRecord,
    ) -> std::io::Result<()> {
        let _guard = spool::DIR_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if dir.symlink_metadata().is_ok() {
            std::fs::remove_dir_all(dir)?;
        }
        let line = spool::log_line("record", record)?;
        let taken = self.lock().dirs.pop();
        if let Some(slot) = taken {
            match fill(&slot, script, owner, &line).and_then(|()| std::fs::rename(&slot, dir)) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    tracing::debug!("cannot use {} again: {e}; a new one", slot.display());
                    let _ = std::fs::remove_dir_all(&slot);
                }
            }
        }
        let slot = self.new_name();
        let built = std::fs::create_dir(&slot)
            .and_then(|()| fill(&slot, script, owner, &line))
            .and_then(|()| std::fs::rename(&slot, dir));
        if built.is_err() {
            let _ = std::fs::remove_dir_all(&slot);
        }
        built
    }

    /// Empties the reported job directory `dir` and keeps it for a later
    /// launch, or removes it when enough are kept. The caller holds
    /// `spool::DIR_LOCK` and has checked that `dir` is the run's.
    pub(crate) fn recycle(&self, dir: &Path) -> std::io::Result<()> {
        if self.free_count() >= MAX_FREE {
            return std::fs::remove_dir_all(dir);
        }
        let kept = empty(dir).and_then(|()| {
            let slot = self.new_name();
            std::fs::rename(dir, &slot).map(|()| slot)
        });
        match kept {
            Ok(slot) => {
                self.lock().dirs.push(slot);
                Ok(())
            }
            Err(_) => std::fs::remove_dir_all(dir),
        }
    }
}

impl spool::Recycle for Slots {
    fn recycle(&self, dir: &Path) -> std::io::Result<()> {
        Slots::recycle(self, dir)
    }
}

/// Removes everything in `dir` but the script and the log.
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == SCRIPT_FILE || name == LOG_FILE {
            continue;
        }
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Opens `path` for writing (at its start, not emptied: the caller cuts
/// it after what it writes, so that a file as long as before keeps its
/// block instead of freeing it and allocating another), when it is a
/// plain file of `uid` with one link; else removes it (`None`: create a
/// new one).
fn reuse_file(path: &Path, uid: u32) -> std::io::Result<Option<std::fs::File>> {
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match opened {
        Ok(f) => {
            let meta = f.metadata()?;
            if meta.is_file() && meta.uid() == uid && meta.nlink() == 1 {
                return Ok(Some(f));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => {}
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `path` whole with `bytes` in one `write`: the file that is there
/// when it may be used again (written over, then cut to its new length),
/// else a new one with `mode`. The mode is set either way (the owner of a
/// script may have changed it). Returns the file, still open.
fn write_file(path: &Path, uid: u32, mode: u32, bytes: &[u8]) -> std::io::Result<std::fs::File> {
    let (mut f, reused) = match reuse_file(path, uid)? {
        Some(f) => {
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
            (f, true)
        }
        None => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(path)?;
            (f, false)
        }
    };
    // One write, as every record of the log (`spool::append`): a short one
    // (a full disk) fails the launch.
    let n = f.write(bytes)?;
    if n != bytes.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            format!("short write to {}", path.display()),
        ));
    }
    if reused {
        f.set_len(bytes.len() as u64)?;
    }
    Ok(f)
}

/// Writes a job's files into the directory `slot` (new or emptied).
fn fill(slot: &Path, script: &[u8], owner: Owner, record_line: &[u8]) -> std::io::Result<()> {
    let daemon_uid = nix::unistd::geteuid().as_raw();
    // The script first, as the daemon; then it is handed to its owner.
    // No fsync: see the `spool` module.
    let f = write_file(&slot.join(SCRIPT_FILE), owner.uid, 0o700, script)?;
    if owner.other_user {
        std::os::unix::fs::fchown(&f, Some(owner.uid), Some(owner.gid))?;
    }
    drop(f);
    write_file(&slot.join(LOG_FILE), daemon_uid, 0o600, record_line)?;
    let mode = if owner.other_user { 0o711 } else { 0o700 };
    std::fs::set_permissions(slot, std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests;
