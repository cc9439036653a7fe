//! File naming (`log.<hex>`, `snapshot.<hex>`), directory listing and durability helpers.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};

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
pub(crate) fn list(dir: &Path, prefix: &str) -> Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        if let Some(zxid) = entry.file_name().to_str().and_then(|n| parse_name(n, prefix)) {
            out.push((zxid, entry.path()));
        }
    }
    out.sort_by_key(|(zxid, _)| *zxid);
    Ok(out)
}

/// Deletes leftover `*.tmp` files (snapshots interrupted by a crash).
pub(crate) fn remove_tmp_files(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))? {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(SNAPSHOT_PREFIX) && name.ends_with(TMP_SUFFIX) {
            tracing::info!(file = %entry.path().display(), "removing unfinished snapshot");
            remove(&entry.path())?;
        }
    }
    Ok(())
}

/// Creates `dir` (and parents) if needed.
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))
}

/// Makes creations, renames and deletions in `dir` durable.
pub(crate) fn sync_dir(dir: &Path, fsync: bool) -> Result<()> {
    if !fsync {
        return Ok(());
    }
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// Bytes available to an unprivileged user in the file system holding `dir`, and its block size.
pub(crate) fn free_space(dir: &Path) -> std::io::Result<(u64, u64)> {
    let st = rustix::fs::statvfs(dir).map_err(std::io::Error::from)?;
    let block = st.f_frsize.max(1);
    Ok((st.f_bavail.saturating_mul(block), block))
}

/// Removes a file; an already missing file is fine.
pub(crate) fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
