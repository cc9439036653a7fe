//! File naming (`log.<hex>`, `snapshot.<hex>`), directory listing and durability helpers.

use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};
use crate::vfs::{Disk, SyncPoint};

/// Prefix of transaction log file names.
pub(crate) const LOG_PREFIX: &str = "log.";
/// Prefix of snapshot file names.
pub(crate) const SNAPSHOT_PREFIX: &str = "snapshot.";
/// Suffix of snapshot files still being written.
pub(crate) const TMP_SUFFIX: &str = ".tmp";

/// `<prefix><16 hex digits>`: fixed width so `ls` sorts them like we do.
pub(crate) fn file_name(prefix: &str, zxid: i64) -> String {
    format!("{prefix}{zxid:016x}")
}

/// Parses `<prefix><hex>` back into the zxid; `None` for any other name.
pub(crate) fn parse_name(name: &str, prefix: &str) -> Option<i64> {
    let hex = name.strip_prefix(prefix)?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
}

/// Files in `dir` named `<prefix><hex>`, sorted by zxid ascending.
pub(crate) fn list(disk: &Disk, dir: &Path, prefix: &str) -> Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for name in disk.fs().list(dir).map_err(|e| StorageError::io(dir, e))? {
        if let Some(zxid) = parse_name(&name, prefix) {
            out.push((zxid, dir.join(name)));
        }
    }
    out.sort_by_key(|(zxid, _)| *zxid);
    Ok(out)
}

/// Deletes leftover `*.tmp` files (snapshots interrupted by a crash).
pub(crate) fn remove_tmp_files(disk: &Disk, dir: &Path) -> Result<()> {
    for name in disk.fs().list(dir).map_err(|e| StorageError::io(dir, e))? {
        if name.starts_with(SNAPSHOT_PREFIX) && name.ends_with(TMP_SUFFIX) {
            let path = dir.join(name);
            tracing::info!(file = %path.display(), "removing unfinished snapshot");
            remove(disk, &path)?;
        }
    }
    Ok(())
}

/// The directory holding `path`'s entry (`.` for a relative name without one).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Makes creations, renames and deletions in `dir` durable (unless the disk does not sync at `point`).
pub(crate) fn sync_dir(disk: &Disk, dir: &Path, point: SyncPoint) -> Result<()> {
    if !disk.syncs(point) {
        return Ok(());
    }
    disk.fs().sync_dir(dir).map_err(|e| StorageError::io(dir, e))
}

/// Removes a file; an already missing file is fine.
pub(crate) fn remove(disk: &Disk, path: &Path) -> Result<()> {
    match disk.fs().remove(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::ensure_dir;

    #[test]
    fn names_round_trip() {
        for zxid in [0, 1, 0x1_0000_0001, i64::MAX] {
            assert_eq!(parse_name(&file_name(LOG_PREFIX, zxid), LOG_PREFIX), Some(zxid));
        }
        assert_eq!(parse_name("log.1f", LOG_PREFIX), Some(0x1f));
        assert_eq!(parse_name("log.", LOG_PREFIX), None);
        assert_eq!(parse_name("log.xyz", LOG_PREFIX), None);
        assert_eq!(parse_name("snapshot.10.tmp", SNAPSHOT_PREFIX), None);
    }

    #[test]
    fn ensure_dir_says_which_directories_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a").join("b");
        assert_eq!(ensure_dir(&dir).unwrap(), [tmp.path().join("a"), dir.clone()]);
        assert!(dir.is_dir());
        assert_eq!(ensure_dir(&dir).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(parent_of(&dir), tmp.path().join("a"));
        assert_eq!(parent_of(Path::new("data")), Path::new("."));
    }
}
