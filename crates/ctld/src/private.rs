//! The controller's state is for its owner alone: the journal and
//! snapshots hold every job's script and environment (users' tokens and
//! passwords among them), the accounting database every user's history.
//!
//! The controller runs with umask 077, so every file it makes (journal
//! segments, snapshots, the SQLite database and its side files) is created
//! 0600 and every directory 0700; a state directory left readable by an
//! older release or by hand is tightened at start, with a log line.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tracing::{info, warn};

/// Permission bits for group and others.
const NOT_OWNER: u32 = 0o077;

/// Sets the process's umask to 077 (files 0600, directories 0700).
pub fn owner_only_umask() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
}

/// Creates `dir` (0700) where missing and takes group and other
/// permissions off it and everything under it (symbolic links are not
/// followed). Returns the paths it changed with their old modes.
pub fn tighten(dir: &Path) -> std::io::Result<Vec<(PathBuf, u32)>> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut changed = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.mode() & 0o7777;
        if mode & NOT_OWNER != 0 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & !NOT_OWNER))?;
            changed.push((path.clone(), mode));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                todo.push(entry?.path());
            }
        }
    }
    Ok(changed)
}

/// [`owner_only_umask`] and [`tighten`] for the state directory, logged.
pub fn make_private(dir: &Path) {
    owner_only_umask();
    match tighten(dir) {
        Ok(changed) if changed.is_empty() => {}
        Ok(changed) => {
            let (first, mode) = &changed[0];
            info!(
                "state in {} was readable by other users: made {} files and directories \
                 owner-only (e.g. {} was {:04o})",
                dir.display(),
                changed.len(),
                first.display(),
                mode
            );
        }
        Err(e) => warn!(
            "cannot make the state in {} owner-only: {e}; other users may read job scripts \
             and environments there",
            dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tighten_takes_group_and_other_bits_off_everything() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("log-1.log"), b"secret").unwrap();
        std::fs::write(dir.join("sub/x"), b"secret").unwrap();
        for (p, m) in [
            ("", 0o755),
            ("sub", 0o775),
            ("log-1.log", 0o644),
            ("sub/x", 0o640),
        ] {
            std::fs::set_permissions(dir.join(p), std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
        let changed = tighten(&dir).unwrap();
        assert_eq!(changed.len(), 4, "{changed:?}");
        for (p, m) in [
            ("", 0o700),
            ("sub", 0o700),
            ("log-1.log", 0o600),
            ("sub/x", 0o600),
        ] {
            let mode = std::fs::metadata(dir.join(p)).unwrap().mode() & 0o7777;
            assert_eq!(mode, m, "{p}");
        }
        // What was not readable stays as it is; links are not followed.
        assert!(tighten(&dir).unwrap().is_empty());
        let missing = tmp.path().join("new/state");
        assert!(tighten(&missing).unwrap().is_empty());
        assert!(missing.is_dir());
    }
}
