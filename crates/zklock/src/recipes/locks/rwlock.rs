//! The fair read/write lock.

use crate::base::error::Result;
use crate::base::names::{Contender, Marker};
use crate::engine::{self, Place, Rules, Turn, Wait};
use crate::node::guard::Guard;
use crate::session::Session;

/// The guard of a read lock (a [`Guard`]: fencing token, lost signal, release).
pub type ReadGuard = Guard;
/// The guard of a write lock (a [`Guard`]: fencing token, lost signal, release).
pub type WriteGuard = Guard;

/// A fair (FIFO), herd-free read/write lock: many readers at once, or one writer.
///
/// Readers and writers share one queue directory. Readers create `<path>/_c_<uuid>-__READ__<seq>`, writers
/// `<path>/_c_<uuid>-__WRIT__<seq>` — the node names of Apache Curator's `InterProcessReadWriteLock`, so Java
/// services using Curator share the lock with us. In queue order:
///
/// * a **writer** holds the lock when it is first, and otherwise watches only the node just before it (reader or
///   writer);
/// * a **reader** holds the lock when no writer is queued *before* it, and otherwise watches only the **nearest**
///   writer before it. Writers queued *after* a reader never block it (kazoo #649 counted them, and deadlocked),
///   and a reader is not woken by the releases of writers further ahead (Curator's read lock watches the first
///   queued writer, so its readers wake on every writer's release).
///
/// Because the rules only ever look backwards in the queue, every contender eventually becomes first or is only
/// preceded by readers: no interleaving of readers and writers can deadlock.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let lock = zklock::RwLock::new(&client, "/locks/catalog")?;
/// let read = lock.read().await?; // other readers may hold it too
/// read.release().await?;
/// let write = lock.write().await?; // alone
/// println!("writing with fencing token {}", write.fencing_token());
/// write.release().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// As for [`Mutex`](crate::Mutex): [`Error::SessionExpired`](crate::Error::SessionExpired) or
/// [`Error::Closed`](crate::Error::Closed) when the session ends while waiting;
/// [`Error::Timeout`](crate::Error::Timeout) from the `_timeout` variants;
/// [`Error::NodeDeleted`](crate::Error::NodeDeleted) if somebody deletes our queue node while we wait;
/// [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the [`RetryPolicy`](crate::RetryPolicy) caps
/// attempts.
///
/// # Events
/// For each acquire, the [`Session`]'s listener receives `Created` (our node), `Waiting` and `Woken` (the node we
/// wait for) and `Acquired`.
///
/// # Cancellation safety
/// Every acquire method is cancellation safe: dropping the future at any await point removes our queue node (in
/// the background). A timed-out acquire and a failed `try_` acquire have removed it before they return.
#[derive(Debug, Clone)]
pub struct RwLock {
    place: Place,
    kazoo: bool,
}

/// The rules of one side of the lock: readers, writers, and (unless told not to) kazoo's read (`__rlock__`) and write
/// (`__lock__`) contenders share the queue; a reader waits by [`read_turn`], a writer by the exclusive rule.
struct Side {
    marker: Marker,
    kazoo: bool,
}

impl Rules for Side {
    fn marker(&self) -> Marker {
        self.marker
    }

    fn keeps(&self, marker: Marker) -> bool {
        self.marker.queues_with(marker) && (self.kazoo || !marker.is_kazoo())
    }

    fn turn(&self, queue: &[Contender], me: usize) -> Turn {
        match self.marker {
            Marker::Read => read_turn(queue, me),
            _ => engine::exclusive_turn(queue, me),
        }
    }
}

fn is_writer(contender: &Contender) -> bool {
    matches!(contender.marker, Marker::Write | Marker::KazooLock)
}

/// A reader waits for the nearest writer before it; when that is the only writer before it, the writer's
/// deletion is the reader's turn.
pub(crate) fn read_turn(queue: &[Contender], me: usize) -> Turn {
    let mut writers = queue[..me].iter().enumerate().filter(|(_, c)| is_writer(c));
    match writers.next_back() {
        None => Turn::Ready,
        Some((nearest, _)) => Turn::Wait {
            watch: nearest,
            sole: writers.next().is_none(),
        },
    }
}

impl RwLock {
    /// A read/write lock on the directory `path` (created, with its parents, on first use), on `session` — a
    /// [`Session`] or a `&Client`.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<RwLock> {
        Ok(RwLock {
            place: Place::new(session, path)?,
            kazoo: true,
        })
    }

    /// Whether to queue with kazoo's `ReadLock` (`<hex>__rlock__<seq>`) and `WriteLock` (`<hex>__lock__<seq>`)
    /// contenders in the same directory. On by default; with `false` a kazoo node in the directory makes the
    /// acquire fail with [`Error::InUse`](crate::Error::InUse). kazoo's locks see our nodes only when made with
    /// `extra_lock_patterns` naming `__READ__` and `__WRIT__`.
    pub fn with_kazoo_contenders(mut self, recognize: bool) -> RwLock {
        self.kazoo = recognize;
        self
    }

    engine::place_methods! {
        /// Data stored in our node while we wait and hold (shown by `zklock status`).
        pub fn with_data;
        /// The lock directory.
        pub fn path;
        /// The session and policies this lock uses.
        pub fn session;
    }

    async fn acquire(&self, marker: Marker, wait: Wait) -> Result<Option<Guard>> {
        let rules = Side {
            marker,
            kazoo: self.kazoo,
        };
        engine::acquire(&self.place, &rules, wait).await
    }

    engine::acquire_methods! {
        acquire(Marker::Read) => ReadGuard:
        /// Waits as long as it takes for a read lock.
        pub async fn read;
        /// Takes a read lock only if no writer holds or waits for the lock; otherwise removes our node and returns
        /// `None`.
        pub async fn try_read;
        /// Waits at most `timeout` for a read lock; [`Error::Timeout`](crate::Error::Timeout) afterwards.
        /// The timeout bounds the wait for our turn, not the create of our node: a zero timeout takes
        /// a free one.
        pub async fn read_timeout;

        acquire(Marker::Write) => WriteGuard:
        /// Waits as long as it takes for the write lock.
        pub async fn write;
        /// Takes the write lock only if nobody holds or waits for the lock; otherwise removes our node and returns
        /// `None`.
        pub async fn try_write;
        /// Waits at most `timeout` for the write lock; [`Error::Timeout`](crate::Error::Timeout) afterwards.
        /// The timeout bounds the wait for our turn, not the create of our node: a zero timeout takes
        /// a free one.
        pub async fn write_timeout;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(kinds: &str) -> Vec<Contender> {
        kinds
            .chars()
            .enumerate()
            .map(|(i, k)| Contender {
                name: format!("n{i}"),
                sequence: i as i64,
                marker: if k == 'w' { Marker::Write } else { Marker::Read },
            })
            .collect()
    }

    #[test]
    fn readers_wait_only_for_the_nearest_earlier_writer() {
        assert_eq!(read_turn(&queue("rrr"), 2), Turn::Ready);
        // Later writers never block a reader (kazoo #649).
        assert_eq!(read_turn(&queue("rww"), 0), Turn::Ready);
        assert_eq!(read_turn(&queue("wrw"), 1), Turn::Wait { watch: 0, sole: true });
        // The nearest writer, not the first one (Curator watches the first).
        assert_eq!(
            read_turn(&queue("wrwrr"), 4),
            Turn::Wait {
                watch: 2,
                sole: false
            }
        );
        assert_eq!(read_turn(&queue("rrwr"), 3), Turn::Wait { watch: 2, sole: true });
    }

    #[test]
    fn writers_wait_for_their_predecessor() {
        assert_eq!(engine::exclusive_turn(&queue("w"), 0), Turn::Ready);
        assert_eq!(
            engine::exclusive_turn(&queue("rrw"), 2),
            Turn::Wait {
                watch: 1,
                sole: false
            }
        );
        assert_eq!(
            engine::exclusive_turn(&queue("rw"), 1),
            Turn::Wait { watch: 0, sole: true }
        );
    }
}
