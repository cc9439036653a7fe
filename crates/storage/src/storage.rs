//! The public handle: open (recovery), append (group commit), snapshots, close.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Result, StorageError};
use crate::files::{self, LOG_PREFIX, SNAPSHOT_PREFIX};
use crate::lock;
use crate::options::StorageOptions;
use crate::record::LOG_HEADER_LEN;
use crate::recovery::{self, Recovered};
use crate::snapshot;
use crate::vfs::{Disk, RealFs, SyncPoint};
use crate::writer::{Completion, Pending, Shared, Writer};

/// Handle to the transaction log and snapshots. Cheap to clone; all clones share one writer
/// thread. See the crate docs for the contract and the on-disk format.
#[derive(Clone)]
pub struct Storage {
    inner: Arc<Inner>,
}

struct Inner {
    options: StorageOptions,
    /// The file system (the real one outside the crash tests), chosen at open.
    disk: Disk,
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<Option<Arc<StorageError>>>>>,
    /// Serializes `save_snapshot` calls (write + prune) with each other; appends never wait.
    snapshot_lock: Mutex<()>,
    /// The directories' locks (see `lock.rs`), held until [`Storage::close`] or the last handle is dropped.
    locks: Mutex<Vec<Box<dyn Send + Sync>>>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Storage {
    /// Recovers the directories (creating them if missing), repairs a torn log tail, and
    /// starts the writer thread. Fails on corruption (see the crate docs for the policy), and
    /// with [`StorageError::NoRoom`] when the log directory has no room for one preallocation
    /// step of the log.
    pub fn open(options: StorageOptions) -> Result<(Storage, Recovered)> {
        let disk = Disk::new(Arc::new(RealFs), options.fsync);
        Self::open_on(options, disk)
    }

    /// [`Storage::open`] on the file system of `disk` (the crash tests pass a simulated one).
    pub(crate) fn open_on(options: StorageOptions, disk: Disk) -> Result<(Storage, Recovered)> {
        options.validate()?;
        // Before recovery, which repairs and deletes files: only the owner of the directories may.
        let mut locks = Vec::new();
        for dir in lock::dirs(&options.dir, options.log_dir()) {
            // A created directory's entry must be durable before anything in it is acknowledged.
            for created in disk.fs().ensure_dir(&dir)? {
                files::sync_dir(&disk, files::parent_of(&created), SyncPoint::NewDirParent)?;
            }
            locks.push(disk.fs().lock_dir(&dir)?);
        }
        let outcome = recovery::recover(&disk, &options)?;
        check_room(&disk, &options)?;
        let shared = Arc::new(Shared::default());
        let writer = Writer::new(
            options.clone(),
            disk.clone(),
            outcome.active,
            outcome.recovered.last_zxid,
        );
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("zklock-storage-writer".into())
            .spawn(move || writer.run(thread_shared))
            .map_err(|e| StorageError::io(options.log_dir(), e))?;
        let storage = Storage {
            inner: Arc::new(Inner {
                options,
                disk,
                shared,
                writer: Mutex::new(Some(handle)),
                snapshot_lock: Mutex::new(()),
                locks: Mutex::new(locks),
            }),
        };
        Ok((storage, outcome.recovered))
    }

    /// Writes a backup: a new data directory `dir` (made with its parents; it must not exist, or be empty) holding
    /// one snapshot of `blob` at `zxid`, synced, which [`Storage::open`] recovers as it recovers any data directory
    /// — so starting a server on `dir` restores the state `blob` is. The running storage is not touched.
    pub fn write_backup(dir: &std::path::Path, zxid: i64, blob: &[u8]) -> Result<std::path::PathBuf> {
        let disk = Disk::new(Arc::new(RealFs), true);
        for created in disk.fs().ensure_dir(dir)? {
            files::sync_dir(&disk, files::parent_of(&created), SyncPoint::NewDirParent)?;
        }
        let busy = std::fs::read_dir(dir)
            .map_err(|e| StorageError::io(dir, e))?
            .next()
            .is_some();
        if busy {
            return Err(StorageError::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "a backup goes to a new, empty directory",
                ),
            ));
        }
        crate::snapshot::write(&disk, dir, zxid, blob)
    }

    /// The log's fsyncs since open: how many, how long in total and at most, how many were slow.
    pub fn fsync_figures(&self) -> crate::FsyncFigures {
        self.inner.disk.fsync_figures()
    }

    /// Queues a record. `done` runs on the writer thread once the record is durable (after
    /// the batch's fdatasync), or with the error. Records queued while a write/sync is in
    /// flight are written and synced together (group commit). Callbacks run in append order.
    ///
    /// `zxid` must be greater than every zxid appended or recovered before it, otherwise
    /// only this record fails with [`StorageError::ZxidNotIncreasing`]. After
    /// [`Storage::close`], `done` gets [`StorageError::Closed`] at once on this thread.
    pub fn append(&self, zxid: i64, payload: Vec<u8>, done: Completion) {
        let mut queue = self.inner.shared.lock();
        if queue.closing {
            drop(queue);
            done(Err(StorageError::Closed));
            return;
        }
        queue.items.push_back(Pending { zxid, payload, done });
        let asleep = queue.writer_asleep;
        drop(queue);
        if asleep {
            self.inner.shared.notify();
        }
    }

    /// Sets a hook that runs on the writer thread after each batch's callbacks — once per fsync, so a caller
    /// can act on many completions at once (the server writes out every reply the batch made durable).
    /// Replaces an earlier hook.
    pub fn on_batch(&self, hook: Box<dyn Fn() + Send + Sync + 'static>) {
        self.inner.shared.set_batch_hook(hook);
    }

    /// Appends and blocks until the record is durable. Never call this from inside a
    /// completion callback (it would wait for the writer thread it runs on).
    pub fn append_sync(&self, zxid: i64, payload: Vec<u8>) -> Result<()> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.append(
            zxid,
            payload,
            Box::new(move |result| {
                let _ = tx.send(result);
            }),
        );
        // The writer always runs the callback (or drops it while shutting down).
        rx.recv().unwrap_or(Err(StorageError::Closed))
    }

    /// Durably stores a snapshot covering every transaction up to and including `zxid`
    /// (temp file, fsync, rename, directory fsync), then deletes snapshots beyond
    /// [`StorageOptions::snapshots_to_keep`] and log files that only hold transactions older
    /// than the oldest kept snapshot. Runs on the calling thread; appends continue meanwhile.
    ///
    /// `zxid` must not be older than the newest existing snapshot
    /// ([`StorageError::SnapshotTooOld`]); an equal zxid replaces that snapshot.
    pub fn save_snapshot(&self, zxid: i64, blob: &[u8]) -> Result<()> {
        let options = &self.inner.options;
        let disk = &self.inner.disk;
        let _guard = self.inner.snapshot_lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((newest, _)) = files::list(disk, &options.dir, SNAPSHOT_PREFIX)?.last() {
            if zxid < *newest {
                return Err(StorageError::SnapshotTooOld {
                    zxid,
                    newest: *newest,
                });
            }
        }
        let path = snapshot::write(disk, &options.dir, zxid, blob)?;
        tracing::info!(file = %path.display(), zxid, bytes = blob.len(), "snapshot saved");
        let Some(oldest_kept) = snapshot::prune(disk, &options.dir, options.snapshots_to_keep)? else {
            return Ok(());
        };
        self.prune_logs(oldest_kept)
    }

    /// Deletes log files whose successor starts at or below `oldest_kept + 1`. The newest
    /// file (the writer's) has no successor, so it is never touched.
    fn prune_logs(&self, oldest_kept: i64) -> Result<()> {
        let log_dir = self.inner.options.log_dir();
        let disk = &self.inner.disk;
        let logs = files::list(disk, log_dir, LOG_PREFIX)?;
        let mut removed = 0;
        for pair in logs.windows(2) {
            if pair[1].0 > oldest_kept.saturating_add(1) {
                break;
            }
            tracing::debug!(file = %pair[0].1.display(), "removing log file covered by snapshots");
            files::remove(disk, &pair[0].1)?;
            removed += 1;
        }
        if removed > 0 {
            files::sync_dir(disk, log_dir, SyncPoint::Other)?;
        }
        Ok(())
    }

    /// The options this storage was opened with.
    pub fn options(&self) -> &StorageOptions {
        &self.inner.options
    }

    /// Writes and syncs everything queued, then stops the writer thread. Other clones of
    /// this handle see [`StorageError::Closed`] afterwards. Returns the error that poisoned
    /// the log, if any. Releases the directories' lock (`zklock.lock`): another `open` may take them.
    pub fn close(self) -> Result<()> {
        let closed = self.inner.shutdown();
        // Done with the directories: another server may have them now.
        self.inner.locks.lock().unwrap_or_else(|p| p.into_inner()).clear();
        closed
    }
}

/// Refuses a log directory without room for one preallocation step of the log (see
/// [`StorageError::NoRoom`]): better a clear error at start than a failed first append. Runs after
/// recovery, which may have freed space (torn tails, leftover temporary files). Space can still run
/// out later; then the log is poisoned (see the crate docs).
fn check_room(disk: &Disk, options: &StorageOptions) -> Result<()> {
    let dir = options.log_dir();
    let (available, block) = match disk.fs().free_space(dir) {
        Ok(free) => free,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot query the free space; not checking it");
            return Ok(());
        }
    };
    // A new file is preallocated to `step` bytes (header included), a full one grows by `step`.
    let step = options
        .preallocate_bytes
        .min(options.log_roll_bytes)
        .max(LOG_HEADER_LEN as u64);
    let needed = step.div_ceil(block).saturating_mul(block);
    if available < needed {
        return Err(StorageError::NoRoom {
            dir: dir.to_path_buf(),
            needed,
            available,
        });
    }
    Ok(())
}

impl Inner {
    /// Idempotent: the first call stops and joins the writer, later calls return `Ok`.
    fn shutdown(&self) -> Result<()> {
        self.shared.lock().closing = true;
        self.shared.notify();
        let mut slot = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        if slot
            .as_ref()
            .is_some_and(|h| h.thread().id() == std::thread::current().id())
        {
            // The last handle was dropped inside a completion callback: the writer cannot
            // join itself; it exits on its own once the queue is drained.
            return Ok(());
        }
        let handle = slot.take();
        drop(slot);
        match handle.map(JoinHandle::join) {
            None | Some(Ok(None)) => Ok(()),
            Some(Ok(Some(poison))) => Err(StorageError::Poisoned(poison)),
            Some(Err(_)) => Err(StorageError::Closed),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Err(err) = self.shutdown() {
            tracing::warn!(error = %err, "storage writer stopped with an error");
        }
    }
}
