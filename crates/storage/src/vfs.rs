//! The seam under every file operation of the storage: a small trait ([`Vfs`], [`VfsFile`]) with the real file
//! system ([`RealFs`]) as the implementation `Storage::open` uses, and [`Disk`], the handle the modules pass around
//! (the file system, chosen once at open, plus the `fsync` option).
//!
//! The seam exists so the crash tests can run the storage on a simulated disk that records every write, sync,
//! create and rename and then builds the states a power loss may leave (`sim_disk.rs`, test builds only). The cost
//! for the server is one indirect call per file operation, next to a system call.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Result;
use crate::lock::DirLock;
use crate::os::{self, FILE_MODE};

/// The directory operations the storage uses.
pub(crate) trait Vfs: Send + Sync + 'static {
    /// Creates a file that must not exist yet ([`io::ErrorKind::AlreadyExists`] otherwise), read-write, owner only.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn VfsFile>>;
    /// Creates a file or empties an existing one, for writing.
    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn VfsFile>>;
    /// Opens an existing file for reading and writing.
    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn VfsFile>>;
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// The names of the entries of `dir`, in no particular order.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Renames within a directory, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Unlinks a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the creations, renames and removals in `dir` durable (fsync of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and its missing parents (see `os::ensure_dir`); returns those it created, outermost first.
    /// Their entries are not durable yet: the caller syncs their parents.
    fn ensure_dir(&self, dir: &Path) -> Result<Vec<PathBuf>>;
    /// Takes the directory's lock (see `lock.rs`), held until the returned value is dropped.
    fn lock_dir(&self, dir: &Path) -> Result<Box<dyn Send + Sync>>;
    /// Bytes available in the file system holding `dir`, and its block size.
    fn free_space(&self, dir: &Path) -> io::Result<(u64, u64)>;
}

/// An open file.
pub(crate) trait VfsFile: Send {
    /// Writes all of `buf` at `offset` (pwrite), extending the file if needed.
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Truncates or extends the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// The current length of the file.
    fn len(&self) -> io::Result<u64>;
    /// fdatasync: the data and the length are durable.
    fn sync_data(&mut self) -> io::Result<()>;
    /// fsync: the data and all the metadata of the file are durable (not its name: that is [`Vfs::sync_dir`]).
    fn sync_all(&mut self) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RealFs;

fn open(options: &mut OpenOptions, path: &Path) -> io::Result<Box<dyn VfsFile>> {
    Ok(Box::new(options.mode(FILE_MODE).open(path)?))
}

impl Vfs for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        open(OpenOptions::new().read(true).write(true).create_new(true), path)
    }

    fn create_truncate(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        open(OpenOptions::new().write(true).create(true).truncate(true), path)
    }

    fn open_rw(&self, path: &Path) -> io::Result<Box<dyn VfsFile>> {
        open(OpenOptions::new().read(true).write(true), path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn ensure_dir(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        os::ensure_dir(dir)
    }

    fn lock_dir(&self, dir: &Path) -> Result<Box<dyn Send + Sync>> {
        Ok(Box::new(DirLock::take(dir)?))
    }

    fn free_space(&self, dir: &Path) -> io::Result<(u64, u64)> {
        os::free_space(dir)
    }
}

impl VfsFile for File {
    fn write_at(&mut self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write_all_at(buf, offset)
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }

    fn sync_all(&mut self) -> io::Result<()> {
        File::sync_all(self)
    }
}

/// Where the storage syncs. The crash tests can drop one of these points (test builds only) to show that the
/// explorer finds the loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncPoint {
    /// The fdatasync of a batch of records, before its callbacks run.
    LogData,
    /// The directory fsync after a new log file is created (a roll).
    LogCreateDir,
    /// The directory fsync after a snapshot's rename.
    SnapshotDir,
    /// The fsync of the parent of a directory the storage created at open.
    NewDirParent,
    /// Every other sync (preallocation, trimming a rolled file, recovery's repairs, pruning).
    Other,
}

/// A log fsync that takes longer than this is counted as slow (ZooKeeper's `fsync.warningthresholdms` default).
const SLOW_FSYNC: std::time::Duration = std::time::Duration::from_secs(1);

/// The log's fsyncs so far ([`crate::Storage::fsync_figures`]): the fdatasync of each batch of records, the
/// one ZooKeeper times too (its `fsynctime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsyncFigures {
    /// Fsyncs of the log since open.
    pub count: u64,
    /// Their total time, in microseconds.
    pub total_us: u64,
    /// The longest, in microseconds.
    pub max_us: u64,
    /// How many took longer than a second (ZooKeeper's `zk_fsync_threshold_exceed_count`).
    pub slow: u64,
}

/// Where [`FsyncFigures`] are counted, shared by every clone of a [`Disk`].
#[derive(Default)]
struct FsyncStats {
    count: std::sync::atomic::AtomicU64,
    total_us: std::sync::atomic::AtomicU64,
    max_us: std::sync::atomic::AtomicU64,
    slow: std::sync::atomic::AtomicU64,
}

/// The file system the storage runs on and whether it syncs: chosen once at open, cloned into the writer.
#[derive(Clone)]
pub(crate) struct Disk {
    vfs: Arc<dyn Vfs>,
    fsync: bool,
    fsyncs: Arc<FsyncStats>,
    /// Test builds only: a sync point that is skipped (the negative controls of the crash tests).
    #[cfg(test)]
    pub(crate) skip: Option<SyncPoint>,
}

impl Disk {
    /// `vfs`, syncing when `fsync` is set.
    pub(crate) fn new(vfs: Arc<dyn Vfs>, fsync: bool) -> Self {
        Disk {
            vfs,
            fsync,
            fsyncs: Arc::default(),
            #[cfg(test)]
            skip: None,
        }
    }

    /// The file system.
    pub(crate) fn fs(&self) -> &dyn Vfs {
        &*self.vfs
    }

    /// Counts one fsync of the log that took `took`.
    pub(crate) fn record_fsync(&self, took: std::time::Duration) {
        use std::sync::atomic::Ordering::Relaxed;
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.fsyncs.count.fetch_add(1, Relaxed);
        self.fsyncs.total_us.fetch_add(us, Relaxed);
        self.fsyncs.max_us.fetch_max(us, Relaxed);
        if took > SLOW_FSYNC {
            self.fsyncs.slow.fetch_add(1, Relaxed);
        }
    }

    /// The log's fsyncs so far.
    pub(crate) fn fsync_figures(&self) -> FsyncFigures {
        use std::sync::atomic::Ordering::Relaxed;
        FsyncFigures {
            count: self.fsyncs.count.load(Relaxed),
            total_us: self.fsyncs.total_us.load(Relaxed),
            max_us: self.fsyncs.max_us.load(Relaxed),
            slow: self.fsyncs.slow.load(Relaxed),
        }
    }

    /// Whether to sync at `point`.
    pub(crate) fn syncs(&self, point: SyncPoint) -> bool {
        #[cfg(test)]
        if self.skip == Some(point) {
            return false;
        }
        let _ = point;
        self.fsync
    }
}
