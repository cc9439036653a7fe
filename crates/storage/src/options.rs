//! Configuration of a [`crate::Storage`].

use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};

/// How and where [`crate::Storage`] keeps its files. Build with [`StorageOptions::new`] and
/// adjust the public fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StorageOptions {
    /// Directory for snapshot files (and for log files unless `log_dir` is set).
    /// Created if missing.
    pub dir: PathBuf,
    /// Directory for transaction log files; `None` means `dir`. Putting the log on its own
    /// device keeps snapshot writes from competing with log fsyncs.
    pub log_dir: Option<PathBuf>,
    /// Call `fdatasync`/`fsync` (default `true`). With `false` callbacks fire once the
    /// record is in the OS page cache: survives a process crash, not a power loss.
    pub fsync: bool,
    /// Maximum number of records written with one fsync (default 1024).
    pub max_batch: usize,
    /// Start a new log file once the current one holds at least this many bytes
    /// (default 64 MiB).
    pub log_roll_bytes: u64,
    /// Log files are extended in steps of this many bytes (default 4 MiB, capped at
    /// `log_roll_bytes`) by writing and syncing zeros, so that most appends overwrite
    /// already allocated blocks and their fdatasync has no metadata to commit.
    pub preallocate_bytes: u64,
    /// How many snapshots to keep after [`crate::Storage::save_snapshot`] (default 3, at
    /// least 1). Logs are kept back to the oldest kept snapshot.
    pub snapshots_to_keep: usize,
    /// Damage that is not a torn tail normally makes [`crate::Storage::open`] fail. With
    /// `true` the log is instead truncated at the first bad record (with a warning),
    /// dropping that record and everything after it, including later log files.
    pub truncate_corrupt_tail: bool,
}

impl StorageOptions {
    /// Options with the defaults documented on each field, keeping everything in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StorageOptions {
            dir: dir.into(),
            log_dir: None,
            fsync: true,
            max_batch: 1024,
            log_roll_bytes: 64 << 20,
            preallocate_bytes: 4 << 20,
            snapshots_to_keep: 3,
            truncate_corrupt_tail: false,
        }
    }

    /// The directory that holds the transaction log files.
    pub fn log_dir(&self) -> &Path {
        self.log_dir.as_deref().unwrap_or(&self.dir)
    }

    /// Rejects values that cannot work.
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |msg: &str| Err(StorageError::InvalidOptions(msg.to_owned()));
        if self.max_batch == 0 {
            return bad("max_batch must be at least 1");
        }
        if self.log_roll_bytes == 0 {
            return bad("log_roll_bytes must be at least 1");
        }
        if self.snapshots_to_keep == 0 {
            return bad("snapshots_to_keep must be at least 1");
        }
        Ok(())
    }
}
