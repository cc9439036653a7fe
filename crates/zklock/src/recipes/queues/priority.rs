//! The distributed priority queue of the ZooKeeper recipes: the priority is in the item's name, the lowest
//! priority number comes out first, and items of one priority come out in the order they were put.
//!
//! Everything but the names and the items' data is the FIFO queue's (`recipes/queues/`, [`Items`] with
//! [`Layout::Priority`]): puts with receipts, `take` and `take_safe` with claims, the waiting consumers.
//!
//! The names and the data are Apache Curator's `DistributedPriorityQueue`'s, so that Java services share a queue
//! with us:
//! * an item is `<queue>/queue-<P><HHHHHHHH><sequence>`, persistent-sequential: `HHHHHHHH` is the priority's 32
//!   bits in upper-case hex (two's complement) and `P` is `0` for a negative priority, `1` otherwise, so that the
//!   names sort as the numbers do; ZooKeeper appends the ten-digit sequence. Curator sorts the names as strings,
//!   we by (priority, sequence): the same order.
//! * the data is Curator's `ItemSerializer` envelope around the payload: the version `0x00010001` (4 bytes,
//!   big-endian), then per payload the byte `0x01`, its length (4 bytes, big-endian) and its bytes, then the byte
//!   `0x02`. We write one payload per item.

use crate::base::error::Result;
use crate::recipes::queues::claim::Claimed;
use crate::recipes::queues::curator::{envelope, item_prefix};
use crate::recipes::queues::items::{forward_to_items, Items};
use crate::recipes::queues::layout::Layout;
use crate::session::Session;

/// A distributed priority queue: every item has a priority (an `i32`), the item with the lowest priority number
/// comes out first, and items of one priority come out in the order they were put.
///
/// It is the [`Queue`](crate::Queue) with the priority first in the order, and it takes the same options: `take`
/// (read and delete in one round trip) or `take_safe` (claim, process, [`Claimed::complete`](crate::Claimed::complete);
/// a consumer that dies mid-take gives the item back), puts with receipts (a put whose reply was lost is never
/// enqueued twice), and a waiting consumer woken by every change of the directory (see "Herd effect" on
/// [`Queue`](crate::Queue)).
///
/// # Curator
/// Items are named and encoded as Curator's `DistributedPriorityQueue` does (`queue-<priority><sequence>`, the
/// data in Curator's `ItemSerializer` envelope; lower numbers first in both), so a Curator producer's items come
/// out of our consumers in priority order and ours out of Curator's consumers, with the bytes given to `put` as the
/// item Curator's `QueueSerializer` reads. Claims are `<queue>/claims/<item>`, ephemeral: a Curator consumer built
/// with `lockPath(<queue>/claims)` uses the same nodes, so its consumers and our `take_safe` consumers never take
/// one item together (tested both ways, `tests/it/priority_queue.rs`). Curator's consumers log the `claims` and
/// `receipts` children as "foreign nodes" and skip them.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let queue = zklock::PriorityQueue::new(&client, "/queues/builds")?;
/// queue.put(b"nightly build", 10).await?;
/// queue.put(b"hotfix build", 0).await?;
/// assert_eq!(queue.take().await?, b"hotfix build"); // the lower number first
///
/// // At-least-once processing that survives a crashed consumer:
/// let claimed = queue.take_safe().await?;
/// /* process claimed.data() */
/// claimed.complete().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`](crate::Error::SessionExpired) / [`Error::Closed`](crate::Error::Closed) when the
/// session ends; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts; [`Error::ZooKeeper`](crate::Error::ZooKeeper) for anything
/// else the server refuses (e.g. `NoAuth`).
///
/// # Events
/// The [`Session`]'s listener receives [`QueueEvent::Waiting`](crate::QueueEvent::Waiting) each time a consumer
/// starts waiting for items and [`QueueEvent::Woken`](crate::QueueEvent::Woken) at each change it sees while waiting.
///
/// # Cancellation safety
/// As [`Queue`](crate::Queue)'s: `put` is not (dropped after sending, the item may or may not be enqueued — never
/// twice); `take` and `try_take` are not once the delete of an item is in flight; `take_safe` and `try_take_safe`
/// are (a dropped future or [`Claimed`](crate::Claimed) gives the item back); `peek` and `len` change nothing.
///
/// # Limits
/// * Priority order is what each consumer sees when it looks. On an ensemble a consumer's server may lag behind a
///   producer's (ZooKeeper's reads are sequentially consistent per session, not linearizable), so an item put a
///   moment ago elsewhere may not be seen yet by a consumer that takes a later one.
/// * Do not mix `take` and `take_safe` consumers on one queue (nor Curator consumers without a `lockPath` of
///   `<queue>/claims` with our `take_safe` ones): `take` ignores claims.
/// * An item Curator put with `putMulti` holds several payloads in one node: `take` returns its data as Curator
///   wrote it, envelope and all. Data that is not an envelope (a node written by another tool) is returned as it
///   is.
/// * A `put` whose reply was lost is never enqueued twice, but if our session ends before we learn the outcome it
///   fails with [`Error::SessionExpired`](crate::Error::SessionExpired), item written or not.
/// * Ordering assumes the directory's sequence counter has not wrapped (2³¹ items per directory).
#[derive(Debug, Clone)]
pub struct PriorityQueue {
    items: Items,
}

impl PriorityQueue {
    /// A priority queue in the directory `path` (created with its parents on the first `put`), on `session` — a
    /// [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<PriorityQueue> {
        Ok(PriorityQueue {
            items: Items::new(session.into(), path, Layout::Priority)?,
        })
    }

    /// The queue directory.
    pub fn path(&self) -> &str {
        self.items.path()
    }

    /// The session and policies this queue uses.
    pub fn session(&self) -> &Session {
        self.items.session()
    }

    /// Appends an item with `priority` (lower numbers come out first); returns its node name
    /// (`queue-<priority><sequence>`).
    ///
    /// Like [`Queue::put`](crate::Queue::put), the item is created together with an ephemeral receipt in one
    /// transaction, so a put whose reply was lost is found, not made twice; our item is then the one of the
    /// receipt's transaction (its creation zxid). If a consumer took it before we looked, the name returned is
    /// its prefix `queue-<priority>`.
    ///
    /// # Errors
    /// Besides the queue's usual errors: [`Error::SessionExpired`](crate::Error::SessionExpired) if the session
    /// ended while the outcome of our write was unknown — the item may or may not be in the queue (it is never
    /// enqueued twice).
    pub async fn put(&self, data: &[u8], priority: i32) -> Result<String> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.items.put(&item_prefix(priority), &id, &envelope(data)).await
    }

    forward_to_items! {
        /// Removes and returns the first item (lowest priority number, then the oldest), waiting (with a child watch)
        /// while the queue is empty.
        pub async fn take() -> Vec<u8>;
        /// Claims the first unclaimed item, waiting while there is none; see [`Queue::take_safe`](crate::Queue::take_safe).
        /// A claimed item keeps its place: if the claim goes away before
        /// [`Claimed::complete`](crate::Claimed::complete), it is the first again.
        pub async fn take_safe() -> Claimed;
        /// Like [`take`](Self::take), but gives up after `timeout` with
        /// [`Error::Timeout`](crate::Error::Timeout).
        pub async fn take_timeout(timeout: std::time::Duration) -> Vec<u8>;
        /// Removes and returns the first item, or `None` at once if the queue is empty.
        pub async fn try_take() -> Option<Vec<u8>>;
        /// The data of the first item (claimed or not), without removing it; `None` if the queue is empty.
        pub async fn peek() -> Option<Vec<u8>>;
        /// The number of items in the queue right now (including claimed ones).
        pub async fn len() -> usize;
        /// Whether the queue is empty right now.
        pub async fn is_empty() -> bool;
        /// Like [`take_safe`](Self::take_safe), but returns `None` at once if no item is unclaimed.
        pub async fn try_take_safe() -> Option<Claimed>;
    }
}
