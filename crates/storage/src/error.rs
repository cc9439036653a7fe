//! The error vocabulary of the storage crate.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in [`crate::Storage`].
///
/// The error is `Clone` because one failed group commit has to be reported to every
/// callback of that batch; I/O errors are therefore kept behind an [`Arc`].
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// An operating-system call failed on `path`.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or directory the failing call was made on.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },
    /// A transaction log file is damaged somewhere other than its torn tail.
    #[error("corrupt transaction log {} at offset {offset}: {reason}", file.display())]
    CorruptLog {
        /// The damaged log file.
        file: PathBuf,
        /// Byte offset of the first bad record (or header) in `file`.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// Snapshot files exist but none of them is valid, so recovery cannot know whether the
    /// transaction logs it would need were already pruned.
    #[error("no valid snapshot among {count} snapshot file(s) in {}; newest problem: {reason}", dir.display())]
    NoValidSnapshot {
        /// The snapshot directory.
        dir: PathBuf,
        /// How many snapshot files were found.
        count: usize,
        /// Why the newest snapshot was rejected.
        reason: String,
    },
    /// An appended zxid was not strictly greater than the previous one.
    #[error("zxid {zxid:#x} is not greater than the last zxid {last:#x}")]
    ZxidNotIncreasing {
        /// The rejected zxid.
        zxid: i64,
        /// The last accepted (or recovered) zxid.
        last: i64,
    },
    /// A snapshot older than the newest saved snapshot was offered.
    #[error("snapshot zxid {zxid:#x} is older than the newest snapshot {newest:#x}")]
    SnapshotTooOld {
        /// The rejected snapshot zxid.
        zxid: i64,
        /// The zxid of the newest snapshot on disk.
        newest: i64,
    },
    /// A payload exceeds [`crate::MAX_PAYLOAD_LEN`].
    #[error("payload of {len} bytes exceeds the maximum of {max} bytes")]
    PayloadTooLarge {
        /// Size of the rejected payload.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The options passed to [`crate::Storage::open`] are unusable.
    #[error("invalid storage options: {0}")]
    InvalidOptions(String),
    /// The log directory has less free space than one preallocation step of the log needs
    /// ([`crate::StorageOptions::preallocate_bytes`], capped at `log_roll_bytes`, plus the file
    /// header): the first append would fail. Checked by [`crate::Storage::open`].
    #[error(
        "not enough room for the transaction log in {}: it needs {} free (one preallocation step), \
         the file system has {} available",
        dir.display(),
        size(*needed),
        size(*available)
    )]
    NoRoom {
        /// The log directory.
        dir: PathBuf,
        /// Bytes the log needs free.
        needed: u64,
        /// Bytes available (to an unprivileged user: `f_bavail`).
        available: u64,
    },
    /// The data (or log) directory is a file or something else that is not a directory.
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// Another process (another server) holds the directory's lock file: two servers on one directory would
    /// append to the same log and overwrite each other's snapshots.
    #[error(
        "the data directory {} is in use by another server (process {}; lock file {})",
        dir.display(),
        holder.map_or_else(|| "unknown".to_owned(), |pid| pid.to_string()),
        lock_file.display()
    )]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
        /// The process id the holder wrote into the lock file, when it could be read.
        holder: Option<u32>,
    },
    /// The storage was closed (or its writer thread is gone).
    #[error("storage is closed")]
    Closed,
    /// An earlier write or sync failed; after a failed fsync the state of the file is
    /// unknown, so the log refuses all further appends instead of guessing.
    #[error("storage is unusable after an earlier write failure: {0}")]
    Poisoned(Arc<StorageError>),
}

impl StorageError {
    /// Wraps an I/O error together with the path it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// The operating-system error behind this error, if any, looking through
    /// [`StorageError::Poisoned`] (e.g. `ENOSPC`, "No space left on device (os error 28)", after a
    /// write on a full disk).
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            StorageError::Io { source, .. } => Some(source),
            StorageError::Poisoned(first) => first.io_error(),
            _ => None,
        }
    }
}

/// `4194304 bytes (4.0 MiB)`.
fn size(bytes: u64) -> String {
    format!("{bytes} bytes ({:.1} MiB)", bytes as f64 / (1u64 << 20) as f64)
}

/// Shorthand used throughout the crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
