//! The directory lock: one server per data directory.
//!
//! [`DirLock::take`] creates (or opens) `zklock.lock` in a directory and takes an exclusive `flock(2)` on it without
//! waiting; a second server on the same directory gets [`StorageError::InUse`] at once instead of appending to the
//! same log and overwriting the same snapshots. The lock belongs to the open file: it goes when the [`DirLock`] is
//! dropped, and when the process dies however it dies (kill -9 included), so a stale file never blocks a restart.
//! The holder's process id is written into the file for the error message of the next one. Creating the file is also
//! the start-up check that the directory can be written (permissions, a read-only file system).

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

use crate::error::{Result, StorageError};
use crate::os::FILE_MODE;

/// The lock file's name.
pub const LOCK_FILE: &str = "zklock.lock";

/// An exclusive lock on a directory, held until dropped.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Locks `dir` (which exists), or fails with [`StorageError::InUse`] when another process holds it.
    pub(crate) fn take(dir: &Path) -> Result<DirLock> {
        let path = dir.join(LOCK_FILE);
        let io = |e| StorageError::io(&path, e);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .open(&path)
            .map_err(io)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut text = String::new();
                let holder = file
                    .read_to_string(&mut text)
                    .ok()
                    .and_then(|_| text.trim().parse().ok());
                return Err(StorageError::InUse {
                    dir: dir.to_path_buf(),
                    lock_file: path,
                    holder,
                });
            }
            Err(e) => return Err(io(e.into())),
        }
        // Ours now: say who holds it.
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DirLock { _file: file })
    }
}

/// The directories to lock for a data directory and a log directory: each once.
pub(crate) fn dirs<'a>(dir: &'a Path, log_dir: &'a Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    if log_dir != dir {
        dirs.push(log_dir.to_path_buf());
    }
    dirs
}
