//! A connection's outgoing queue, written straight into its socket by whichever thread makes a frame
//! sendable — no task hand-off per reply.
//!
//! Every frame carries the zxid it depends on (`after`) and may be written only once the log is durable up to
//! it; frames leave in queue order. Three kinds of threads flush an outbox:
//!
//! * the connection's own task, right after the state lock is released (see [`crate::shared::StateGuard`]):
//!   a read's reply, durable already, goes out in the same task that read the request;
//! * any other task that queued frames to it under the state lock (watch notifications, a session move);
//! * the storage writer thread, after each fsync, for every outbox registered with [`Durable`] as waiting —
//!   a write's reply leaves on the thread that made it durable, without waking the runtime.
//!
//! Writes are non-blocking (`try_write_vectored`). When the socket is full, the outbox is marked blocked and
//! only the connection task, once the socket is writable again, resumes it.
//!
//! Memory is bounded in bytes: [`Outbox::pending_bytes`] counts every queued frame until it is written. The
//! connection task stops reading requests while it is above [`crate::ServerConfig::max_pending_bytes`] (replies
//! then stop growing: a client that does not read gets no more served), and a notification that would take the
//! unsent notifications past [`NotificationLimit::max_bytes`] closes the connection instead of being queued
//! (notifications come from other clients' writes, which back-pressure on this connection cannot stop).

use std::collections::VecDeque;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::latency::Latency;
use crate::stream::Stream;

/// At most this many frames per `writev`.
const MAX_SLICES: usize = 64;

/// One queued item.
#[derive(Debug)]
enum Item {
    /// A complete frame.
    Frame {
        after: i64,
        bytes: Vec<u8>,
        /// For a reply (counted against the outstanding bound, and in the latency figures), when it was queued;
        /// `None` for a notification.
        queued: Option<Instant>,
    },
    /// Close the connection once everything before it is written.
    Close { after: i64 },
}

impl Item {
    fn after(&self) -> i64 {
        match self {
            Item::Frame { after, .. } | Item::Close { after } => *after,
        }
    }
}

#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Item>,
    /// Bytes of the front frame already written.
    offset: usize,
    /// The socket was full: the connection task resumes once it is writable.
    blocked: bool,
    /// Closed (by a `Close` item, a write error, or the log failing): nothing more is written.
    closed: bool,
}

/// What one connection may hold of notifications its client does not read, and where closing one for it is
/// counted.
#[derive(Debug, Clone, Default)]
pub struct NotificationLimit {
    /// Unsent notification bytes a connection may hold; 0 = no limit.
    pub max_bytes: usize,
    /// Connections closed for passing it, since start (`mntr`'s `zk_slow_connections_closed`).
    pub closed: Arc<AtomicU64>,
}

/// The outgoing side of one connection.
#[derive(Debug)]
pub struct Outbox {
    stream: Arc<Stream>,
    queue: Mutex<Queue>,
    /// Registered with [`Durable`] as waiting for a zxid.
    waiting: AtomicBool,
    /// In the state's dirty list (set and cleared only under the state lock): marking is O(1), not a scan of the
    /// list, so one commit that notifies k connections costs O(k).
    pub(crate) marked: AtomicBool,
    /// The connection task waits for replies to drain (it reached the outstanding bound).
    throttled: AtomicBool,
    /// Wakes the connection task: the socket filled up, replies drained, or the outbox closed.
    pub wake: Notify,
    /// Cancelled when the connection must end (closed outbox, server shutdown, session moved).
    pub cancel: CancellationToken,
    /// Replies queued but not yet written.
    pub outstanding: AtomicUsize,
    /// Bytes of the frames queued and not yet written (replies and notifications).
    pub pending_bytes: AtomicUsize,
    /// Of those, the notifications' bytes.
    notification_bytes: AtomicUsize,
    /// The bound on `notification_bytes`.
    limit: NotificationLimit,
    /// The client's address (for the log line when the limit closes the connection).
    peer: Option<SocketAddr>,
    /// Packets received (for `cons`).
    pub received: AtomicUsize,
    /// Packets sent (for `cons`).
    pub sent: AtomicUsize,
    /// The server's latency figures: each reply's time from queued to written.
    latency: Arc<Latency>,
}

impl Outbox {
    /// An outbox writing into `stream`, recording each reply's latency in `latency`, closing the connection when its
    /// unsent notifications would pass `limit` (`peer` names it in the log).
    pub fn new(
        stream: Arc<Stream>,
        cancel: CancellationToken,
        latency: Arc<Latency>,
        limit: NotificationLimit,
        peer: Option<SocketAddr>,
    ) -> Outbox {
        Outbox {
            stream,
            queue: Mutex::new(Queue::default()),
            waiting: AtomicBool::new(false),
            marked: AtomicBool::new(false),
            throttled: AtomicBool::new(false),
            wake: Notify::new(),
            cancel,
            outstanding: AtomicUsize::new(0),
            pending_bytes: AtomicUsize::new(0),
            notification_bytes: AtomicUsize::new(0),
            limit,
            peer,
            received: AtomicUsize::new(0),
            sent: AtomicUsize::new(0),
            latency,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Only push/pop/flag updates happen under this lock; a panic cannot leave it half-updated.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a frame, sendable once the log is durable up to `after`. Call [`Outbox::flush`] afterwards
    /// (the state guard does, once the state lock is released).
    pub fn push(&self, after: i64, bytes: Vec<u8>, reply: bool) {
        let mut q = self.lock();
        if q.closed {
            return;
        }
        let len = bytes.len();
        if reply {
            self.outstanding.fetch_add(1, Ordering::SeqCst);
        } else {
            let held = self.notification_bytes.load(Ordering::Relaxed);
            if self.limit.max_bytes > 0 && held + len > self.limit.max_bytes {
                // The client does not read its events: close rather than hold them without end. Its session
                // lives on, as after any disconnect; on reconnecting, setWatches tells it what it missed.
                self.limit.closed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    peer = ?self.peer,
                    unsent_notification_bytes = held,
                    limit = self.limit.max_bytes,
                    "closing a connection whose client does not read its notifications"
                );
                self.clear(&mut q);
                q.closed = true;
                drop(q);
                self.cancel.cancel();
                self.wake.notify_one();
                return;
            }
            self.notification_bytes.fetch_add(len, Ordering::Relaxed);
        }
        self.pending_bytes.fetch_add(len, Ordering::SeqCst);
        // A reply's request was read and handled just now (under the state lock, in the same pass): its latency
        // starts here. One clock read per reply, none per notification.
        let queued = reply.then(Instant::now);
        q.items.push_back(Item::Frame { after, bytes, queued });
    }

    /// Queues a close: once everything before it is written (and durable up to `after`), the write side is
    /// shut down and the connection task told to end.
    pub fn push_close(&self, after: i64) {
        let mut q = self.lock();
        if !q.closed {
            q.items.push_back(Item::Close { after });
        }
    }

    /// The connection task is about to wait for replies to drain: the next written reply wakes it.
    pub fn throttle(&self) {
        self.throttled.store(true, Ordering::SeqCst);
    }

    /// Whether the outbox is closed.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Whether the socket was full at the last attempt.
    pub fn is_blocked(&self) -> bool {
        self.lock().blocked
    }

    /// Closes at once, discarding what is queued (the log failed, or the connection is going away).
    pub fn abort(&self) {
        let mut q = self.lock();
        q.closed = true;
        self.clear(&mut q);
        drop(q);
        self.cancel.cancel();
        self.wake.notify_one();
    }

    /// Drops every queued item, and their bytes from the counts.
    fn clear(&self, q: &mut Queue) {
        q.items.clear();
        q.offset = 0;
        self.pending_bytes.store(0, Ordering::SeqCst);
        self.notification_bytes.store(0, Ordering::Relaxed);
    }

    /// After the socket became writable again: clears the blocked mark and flushes.
    pub fn unblock(self: &Arc<Self>, durable: &Durable) {
        self.lock().blocked = false;
        self.flush(durable);
    }

    /// Writes every queued frame that is durable, in order, without blocking. Registers with `durable` when
    /// the next frame waits for a zxid that is not durable yet.
    pub fn flush(self: &Arc<Self>, durable: &Durable) {
        let mut q = self.lock();
        loop {
            if q.closed || q.blocked || q.items.is_empty() {
                return;
            }
            if durable.failed() {
                drop(q);
                self.abort();
                return;
            }
            let ready = durable.zxid();
            let mut slices: Vec<IoSlice<'_>> = Vec::new();
            let mut close = false;
            for (i, item) in q.items.iter().enumerate() {
                if item.after() > ready || slices.len() == MAX_SLICES {
                    break;
                }
                match item {
                    Item::Frame { bytes, .. } => {
                        let skip = if i == 0 { q.offset } else { 0 };
                        slices.push(IoSlice::new(&bytes[skip..]));
                    }
                    Item::Close { .. } => {
                        close = true;
                        break;
                    }
                }
            }
            if slices.is_empty() && !close {
                // The front frame waits for the log. Registering re-checks under the waiters' lock, so an
                // fsync that finished meanwhile is not missed.
                if durable.register(self, q.items[0].after()) {
                    continue;
                }
                return;
            }
            let total: usize = slices.iter().map(|s| s.len()).sum();
            let written = if total == 0 {
                Ok(0)
            } else {
                self.stream.try_write_vectored(&slices)
            };
            drop(slices);
            match written {
                Ok(n) => {
                    self.advance(&mut q, n);
                    if n < total {
                        q.blocked = true;
                        drop(q);
                        self.wake.notify_one();
                        return;
                    }
                    if close {
                        self.clear(&mut q);
                        q.closed = true;
                        drop(q);
                        let _ = self.stream.shutdown(std::net::Shutdown::Write);
                        self.cancel.cancel();
                        self.wake.notify_one();
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    q.blocked = true;
                    drop(q);
                    self.wake.notify_one();
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "write failed; closing connection");
                    q.closed = true;
                    self.clear(&mut q);
                    drop(q);
                    self.cancel.cancel();
                    self.wake.notify_one();
                    return;
                }
            }
        }
    }

    /// Drops the `n` bytes just written from the front of the queue.
    fn advance(&self, q: &mut Queue, mut n: usize) {
        let mut replies = 0;
        let (mut freed, mut freed_notifications) = (0, 0);
        let mut now = None;
        while n > 0 {
            let Some(Item::Frame { bytes, queued, .. }) = q.items.front() else {
                break;
            };
            let left = bytes.len() - q.offset;
            if n < left {
                q.offset += n;
                break;
            }
            n -= left;
            q.offset = 0;
            freed += bytes.len();
            tracing::trace!(
                target: "zklock_server::timeline",
                peer = self.peer.map(tracing::field::display),
                xid = frame_xid(bytes),
                reply = queued.is_some(),
                "written"
            );
            if let Some(queued) = *queued {
                replies += 1;
                let now = *now.get_or_insert_with(Instant::now);
                self.latency.record(now.saturating_duration_since(queued));
            } else {
                freed_notifications += bytes.len();
            }
            q.items.pop_front();
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        if freed_notifications > 0 {
            self.notification_bytes
                .fetch_sub(freed_notifications, Ordering::Relaxed);
        }
        if freed > 0 {
            self.pending_bytes.fetch_sub(freed, Ordering::SeqCst);
            self.outstanding.fetch_sub(replies, Ordering::SeqCst);
            // Wake the connection task only when it waits for this (a wake-up from the writer thread costs
            // the runtime a syscall).
            if self.throttled.swap(false, Ordering::SeqCst) {
                self.wake.notify_one();
            }
        }
    }
}

/// The xid of a reply or notification frame (after its length prefix), for the hand-off timeline's events.
pub(crate) fn frame_xid(frame: &[u8]) -> i32 {
    frame
        .get(4..8)
        .map_or(0, |b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The durable zxid, and the outboxes waiting for it to grow. Also where a failed log is recorded: from then on
/// the server does not serve (see [`Durable::fail`]).
#[derive(Debug, Default)]
pub struct Durable {
    zxid: AtomicI64,
    failed: AtomicBool,
    waiters: Mutex<Vec<Arc<Outbox>>>,
    /// The error that failed the log (the first one).
    failure: OnceLock<zklock_storage::StorageError>,
    /// Cancelled when the log fails (and only then).
    failed_token: CancellationToken,
    /// Cancelled when the log fails; every client connection's token is a child of it.
    serving: CancellationToken,
}

impl Durable {
    /// Durable up to `zxid` already (recovered state). `serving` is cancelled if the log fails; connections
    /// take child tokens of it (the server passes a child of its shutdown token).
    pub fn new(zxid: i64, serving: CancellationToken) -> Durable {
        Durable {
            zxid: AtomicI64::new(zxid),
            serving,
            ..Durable::default()
        }
    }

    /// The token client connections derive theirs from: cancelled when the log fails (or the server shuts
    /// down).
    pub fn serving(&self) -> &CancellationToken {
        &self.serving
    }

    /// Completes once the log has failed; then returns the error that failed it.
    pub async fn failure(&self) -> zklock_storage::StorageError {
        self.failed_token.cancelled().await;
        self.failure
            .get()
            .cloned()
            .unwrap_or(zklock_storage::StorageError::Closed)
    }

    /// Highest zxid known durable.
    pub fn zxid(&self) -> i64 {
        self.zxid.load(Ordering::SeqCst)
    }

    /// Whether the log failed (nothing more may be acknowledged).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    fn waiters(&self) -> MutexGuard<'_, Vec<Arc<Outbox>>> {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that everything up to `zxid` is durable, without flushing (see [`Durable::wake_waiters`]).
    pub fn mark(&self, zxid: i64) {
        self.zxid.fetch_max(zxid, Ordering::SeqCst);
    }

    /// Flushes every outbox that waited for the log.
    pub fn wake_waiters(&self) {
        let waiting = std::mem::take(&mut *self.waiters());
        for outbox in waiting {
            outbox.waiting.store(false, Ordering::SeqCst);
            outbox.flush(self);
        }
    }

    /// [`Durable::mark`] then [`Durable::wake_waiters`].
    pub fn advance(&self, zxid: i64) {
        self.mark(zxid);
        self.wake_waiters();
    }

    /// Marks the log as failed with `error` (a write or fsync failed, e.g. the disk is full): nothing more is
    /// acknowledged, and the server stops serving. Every waiting connection closes at once without its pending
    /// replies, every other connection is told to close (through [`Durable::serving`]), and later outbox
    /// flushes write nothing. Returns `true` the first time.
    pub fn fail(&self, error: &zklock_storage::StorageError) -> bool {
        let root = match error {
            zklock_storage::StorageError::Poisoned(first) => (**first).clone(),
            other => other.clone(),
        };
        // Recorded before the flag, so whoever sees the flag finds the error.
        let _ = self.failure.set(root);
        let first = !self.failed.swap(true, Ordering::SeqCst);
        let waiting = std::mem::take(&mut *self.waiters());
        for outbox in waiting {
            outbox.abort();
        }
        if first {
            self.serving.cancel();
            self.failed_token.cancel();
        }
        first
    }

    /// Registers `outbox` as waiting for `after`; `true` (and nothing registered) if it is durable already.
    fn register(&self, outbox: &Arc<Outbox>, after: i64) -> bool {
        let mut waiters = self.waiters();
        if self.zxid() >= after || self.failed() {
            return true;
        }
        if !outbox.waiting.swap(true, Ordering::SeqCst) {
            waiters.push(outbox.clone());
        }
        false
    }
}
