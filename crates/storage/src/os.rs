//! The calls the real file system gets directly — the modes of what the storage creates, making a directory,
//! asking for free space — shared by the real disk (`vfs.rs`), the lock file (`lock.rs`) and recovery. Everything
//! that a simulated disk must see goes through `vfs::Disk` instead.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};

/// The mode of the directories the storage creates: owner only, whatever the umask (the log holds ACL-protected
/// data and digest hashes).
pub(crate) const DIR_MODE: u32 = 0o700;
/// The mode of the files the storage creates (log files, snapshots, the lock file): owner read and write only.
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) with [`DIR_MODE`] if needed. An existing path that is not a directory is
/// [`StorageError::NotADirectory`]; an existing directory that the group or others may read, write or enter is
/// kept as it is, with a warning (the operator chose its mode; ZooKeeper's data can be read there). Returns the
/// directories it created, outermost first: their entries are not durable until their parents are synced
/// ([`parent_of`]).
pub(crate) fn ensure_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(StorageError::NotADirectory {
                path: dir.to_path_buf(),
            })
        }
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{mode:o}"),
                    "the data directory is open to the group or others (its log and snapshots hold ACL-protected \
                     data and digest hashes); consider chmod 700"
                );
            }
            return Ok(Vec::new());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A parent is a file.
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(StorageError::NotADirectory {
                path: dir.to_path_buf(),
            })
        }
        Err(e) => return Err(StorageError::io(dir, e)),
    }
    let mut created: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && fs::symlink_metadata(p).is_err())
        .map(Path::to_path_buf)
        .collect();
    created.reverse();
    // The parents it creates get the same owner-only mode, as `mkdir -p -m 700` would give the last one only;
    // stricter is the safe side for directories nobody asked for.
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotADirectory => StorageError::NotADirectory {
                path: dir.to_path_buf(),
            },
            _ => StorageError::io(dir, e),
        })?;
    // The umask may have taken bits from DIR_MODE, never added any; set it exactly so a umask of 0 is covered too.
    fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE)).map_err(|e| StorageError::io(dir, e))?;
    Ok(created)
}

/// Bytes available to an unprivileged user in the file system holding `dir`, and its block size.
pub(crate) fn free_space(dir: &Path) -> std::io::Result<(u64, u64)> {
    let st = rustix::fs::statvfs(dir).map_err(std::io::Error::from)?;
    let block = st.f_frsize.max(1);
    Ok((st.f_bavail.saturating_mul(block), block))
}
