//! The writer thread: drains the append queue, writes each batch with one `write`, syncs once
//! (group commit), rolls log files, then runs the callbacks.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::active_log::ActiveLog;
use crate::error::{Result, StorageError};
use crate::options::StorageOptions;
use crate::record::{self, MAX_PAYLOAD_LEN};
use crate::vfs::Disk;

/// Called once an appended record is durable (`Ok`) or cannot be (`Err`).
pub type Completion = Box<dyn FnOnce(Result<(), StorageError>) + Send + 'static>;

/// One queued append.
pub(crate) struct Pending {
    pub zxid: i64,
    pub payload: Vec<u8>,
    pub done: Completion,
}

/// State shared between the handles and the writer thread.
#[derive(Default)]
pub(crate) struct Queue {
    pub items: VecDeque<Pending>,
    /// Set by `close`/drop: the writer drains what is queued, then exits.
    pub closing: bool,
    /// The writer is asleep on the condition variable. Appends wake it only then: while it is writing or
    /// syncing it looks at the queue again before sleeping, and skipping the wake-up saves a futex syscall
    /// per append under load.
    pub writer_asleep: bool,
}

/// Runs on the writer thread after each batch's callbacks.
pub(crate) type BatchHook = Box<dyn Fn() + Send + Sync + 'static>;

/// The queue plus the condition variable the writer sleeps on.
#[derive(Default)]
pub(crate) struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    batch_hook: Mutex<Option<BatchHook>>,
}

impl Shared {
    /// Locks the queue. A panic while holding this lock cannot leave the queue
    /// half-updated (only push/drain happen under it), so poisoning is ignored.
    pub fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the writer after a push or close.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Sets the hook run after every batch.
    pub fn set_batch_hook(&self, hook: BatchHook) {
        *self.batch_hook.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
    }

    fn run_batch_hook(&self) {
        let hook = self.batch_hook.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(hook) = hook.as_ref() {
            if catch_unwind(AssertUnwindSafe(hook)).is_err() {
                tracing::error!("batch hook panicked");
            }
        }
    }
}

/// Owned by the writer thread.
pub(crate) struct Writer {
    options: StorageOptions,
    disk: Disk,
    active: Option<ActiveLog>,
    last_zxid: i64,
    /// The first failed write/sync; every later batch is refused with it.
    poisoned: Option<Arc<StorageError>>,
    /// Reused encoding buffer.
    buf: Vec<u8>,
}

impl Writer {
    /// A writer continuing after recovery.
    pub fn new(options: StorageOptions, disk: Disk, active: Option<ActiveLog>, last_zxid: i64) -> Self {
        Writer {
            options,
            disk,
            active,
            last_zxid,
            poisoned: None,
            buf: Vec::new(),
        }
    }

    /// The thread body: commit batches until closed and drained. Returns the poison, if any.
    pub fn run(mut self, shared: Arc<Shared>) -> Option<Arc<StorageError>> {
        loop {
            let batch: Vec<Pending> = {
                let mut queue = shared.lock();
                while queue.items.is_empty() && !queue.closing {
                    queue.writer_asleep = true;
                    queue = shared.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                    queue.writer_asleep = false;
                }
                if queue.items.is_empty() {
                    break; // closing and drained
                }
                let n = queue.items.len().min(self.options.max_batch);
                queue.items.drain(..n).collect()
            };
            self.commit(batch);
            shared.run_batch_hook();
        }
        self.poisoned
    }

    /// Validates, writes and syncs one batch, then runs its callbacks in append order.
    fn commit(&mut self, batch: Vec<Pending>) {
        let mut results: Vec<(Completion, Result<()>)> = Vec::with_capacity(batch.len());
        let mut staged: Vec<(usize, i64, Vec<u8>)> = Vec::with_capacity(batch.len());
        let mut last = self.last_zxid;
        for p in batch {
            let verdict = if let Some(poison) = &self.poisoned {
                Err(StorageError::Poisoned(poison.clone()))
            } else if p.payload.len() > MAX_PAYLOAD_LEN {
                Err(StorageError::PayloadTooLarge {
                    len: p.payload.len(),
                    max: MAX_PAYLOAD_LEN,
                })
            } else if p.zxid <= last {
                Err(StorageError::ZxidNotIncreasing { zxid: p.zxid, last })
            } else {
                last = p.zxid;
                staged.push((results.len(), p.zxid, p.payload));
                Ok(())
            };
            results.push((p.done, verdict));
        }
        if !staged.is_empty() {
            match self.write_batch(&staged) {
                Ok(()) => self.last_zxid = last,
                Err(err) => {
                    tracing::error!(error = %err, "log write failed; refusing further appends");
                    for (i, _, _) in &staged {
                        results[*i].1 = Err(err.clone());
                    }
                    self.poisoned = Some(Arc::new(err));
                }
            }
        }
        drop(staged);
        for (done, result) in results {
            if catch_unwind(AssertUnwindSafe(|| done(result))).is_err() {
                tracing::error!("append callback panicked");
            }
        }
    }

    /// Encodes the staged records, writes them with one call and syncs once.
    fn write_batch(&mut self, staged: &[(usize, i64, Vec<u8>)]) -> Result<()> {
        let opts = &self.options;
        let prealloc = opts.preallocate_bytes.min(opts.log_roll_bytes);
        let needs_roll = self
            .active
            .as_ref()
            .is_none_or(|active| active.pos() >= opts.log_roll_bytes);
        if needs_roll {
            if let Some(old) = self.active.take() {
                old.finish(&self.disk)?;
            }
            let first_zxid = staged[0].1;
            self.active = Some(ActiveLog::create(
                &self.disk,
                opts.log_dir(),
                first_zxid,
                prealloc,
            )?);
        }
        let active = self.active.as_mut().expect("a log file is open");
        let batch_start = active.pos();
        self.buf.clear();
        for (_, zxid, payload) in staged {
            record::encode_record(&mut self.buf, *zxid, batch_start, payload);
        }
        active.append(&self.disk, &self.buf, prealloc)?;
        // Do not keep a huge buffer around after an unusually large batch.
        if self.buf.capacity() > 16 << 20 {
            self.buf = Vec::new();
        }
        Ok(())
    }
}
