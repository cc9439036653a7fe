//! The distributed FIFO queue of the design documents, and the machinery it shares with the priority queue
//! (`recipes/queues/priority.rs`): [`Items`], a queue directory whose items are named by a [`Layout`].
//!
//! Items are persistent-sequential children `qn-<id>-<sequence>` of the queue directory; the order is the sequence
//! number ZooKeeper appends (any child `qn-…<digits>` counts as an item, so the design documents' plain `qn-<seq>`
//! nodes written by other tools are consumed too). The `<id>` is a fresh uuid per item, also the name of the
//! item's ephemeral receipt `<queue>/receipts/<id>`, created in the same transaction: after a `put` whose reply was
//! lost the receipt says whether the item was written (even if it was consumed meanwhile), so it is never enqueued
//! twice; the receipt is deleted once the put is settled.
//!
//! Two ways to consume:
//! * [`Queue::take`]: read the lowest item and delete it, both requests in one round trip; the consumer whose
//!   delete succeeds owns the item, the others get `NoNode` and try the next one. One round trip per item, but a
//!   consumer that dies after the delete and before processing loses the item.
//! * [`Queue::take_safe`]: first claim the lowest unclaimed item with an ephemeral `<queue>/claims/<item>` node
//!   (claim and read in one round trip), process it, then [`Claimed::complete`](crate::Claimed::complete) deletes
//!   item and claim in one `multi`. A consumer that dies mid-take loses its claim with its session, and the item
//!   is available again.
//!
//! The priority queue differs only in its item names (the priority comes first in the order) and in its items'
//! data (Curator's envelope): [`Layout`] says which, and everything else here serves both.

use crate::base::error::Result;
use crate::recipes::queues::claim::Claimed;
use crate::recipes::queues::items::{forward_to_items, Items};
use crate::recipes::queues::layout::{Layout, ITEM_PREFIX};
use crate::session::Session;

/// A distributed FIFO queue.
///
/// Every item is delivered to exactly one consumer, lowest sequence first: concurrent consumers race for the lowest
/// item and exactly one delete (or claim) of it succeeds. Items from one producer (who waits for each `put`) reach
/// any one consumer in the order they were put.
///
/// # Herd effect
/// A consumer that finds nothing to take waits on a view of the queue directory (and of its claims, for
/// `take_safe`): the names of its children, kept by one persistent watch, nothing read. A change that makes no item
/// takeable — a take, a claim, a completion — costs the waiting consumers no request; a `put` sends *every* waiting
/// consumer to the server, and all of them race for the item: only one wins, the others wait again. That costs
/// O(consumers) requests per item and is the simple, correct trade-off for a handful of consumers. For many consumers, put one [`crate::Mutex`] in front
/// of `take` (a herd-free hand-off between consumers) or shard the queue.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let queue = zklock::Queue::new(&client, "/queues/jobs")?;
/// queue.put(b"resize image 42").await?;
/// let job = queue.take().await?; // waits while the queue is empty
/// assert_eq!(job, b"resize image 42");
///
/// // At-least-once processing that survives a crashed consumer:
/// let claimed = queue.take_safe().await?;
/// /* process claimed.data() */
/// claimed.complete().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`](crate::Error::SessionExpired) / [`Error::Closed`](crate::Error::Closed) when the session ends; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts; [`Error::ZooKeeper`](crate::Error::ZooKeeper) for anything else the server refuses (e.g. `NoAuth`).
///
/// # Events
/// The [`Session`]'s listener receives [`QueueEvent::Waiting`](crate::QueueEvent::Waiting) each time a consumer starts waiting for items and
/// [`QueueEvent::Woken`](crate::QueueEvent::Woken) at each change it sees while waiting (both name the queue directory).
///
/// # Cancellation safety
/// `put` is not: dropped after sending, the item may or may not be enqueued. `take` and `try_take` are not once
/// the delete of an item is in flight: the item is then consumed but never returned. `take_safe` and
/// `try_take_safe` are: a dropped future (or a dropped [`Claimed`](crate::Claimed)) removes its claim, and the item
/// goes back to the queue. `peek` and `len` change nothing.
///
/// # Limits
/// * Do not mix `take` and `take_safe` consumers on one queue: `take` ignores claims.
/// * A `put` whose reply was lost is never enqueued twice (its receipt decides), but if our session ends before
///   we learn the outcome it fails with [`Error::SessionExpired`](crate::Error::SessionExpired), item written or not. A `take` whose delete
///   reply was lost, when the item is gone
///   afterwards, skips it: it may have been ours (and is then lost) or another consumer's; `take_safe` has no
///   such window (its completion is recognised by our claim being gone too).
/// * Ordering assumes the directory's sequence counter has not wrapped (2³¹ items per directory).
#[derive(Debug, Clone)]
pub struct Queue {
    items: Items,
}

impl Queue {
    /// A queue in the directory `path` (created with its parents on the first `put`), on `session` — a
    /// [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<Queue> {
        Ok(Queue {
            items: Items::new(session.into(), path, Layout::Fifo)?,
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

    /// Appends an item; returns its node name.
    ///
    /// The item is created together with an ephemeral receipt `<queue>/receipts/<id>` in one transaction. After a
    /// lost reply the receipt tells whether the item was written, even when a consumer has taken it meanwhile; it
    /// is deleted in the background once the outcome is known (so a put costs two writes). In that one case — reply
    /// lost, item already consumed when we looked — the item's full name is no longer known and the name returned
    /// is its unique prefix `qn-<id>-`.
    ///
    /// # Errors
    /// Besides the queue's usual errors: [`Error::SessionExpired`](crate::Error::SessionExpired) if the session ended while the outcome of our
    /// write was unknown — the item may or may not be in the queue (it is never enqueued twice).
    pub async fn put(&self, data: &[u8]) -> Result<String> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.items.put(&format!("{ITEM_PREFIX}{id}-"), &id, data).await
    }

    forward_to_items! {
        /// The number of items in the queue right now (including claimed ones).
        pub async fn len() -> usize;
        /// Whether the queue is empty right now.
        pub async fn is_empty() -> bool;
        /// Like [`take_safe`](Self::take_safe), but returns `None` at once if no item is unclaimed.
        pub async fn try_take_safe() -> Option<Claimed>;
        /// Removes and returns the lowest item, waiting (with a child watch) while the queue is empty.
        pub async fn take() -> Vec<u8>;
        /// Like [`take`](Self::take), but gives up after `timeout` with [`Error::Timeout`](crate::Error::Timeout).
        pub async fn take_timeout(timeout: std::time::Duration) -> Vec<u8>;
        /// Removes and returns the lowest item, or `None` at once if the queue is empty.
        pub async fn try_take() -> Option<Vec<u8>>;
        /// The data of the lowest item (claimed or not), without removing it; `None` if the queue is empty.
        pub async fn peek() -> Option<Vec<u8>>;
        /// Claims the lowest unclaimed item, waiting while there is none. The item stays in the queue, invisible to
        /// other `take_safe` consumers, until [`Claimed::complete`](crate::Claimed::complete) removes it; if the claim
        /// goes away first (dropped, [`abandoned`](crate::Claimed::abandon), or our session ends) the item is
        /// available again, still in its place.
        pub async fn take_safe() -> Claimed;
        /// Like [`take_safe`](Queue::take_safe), but gives up after `timeout` with [`Error::Timeout`](crate::Error::Timeout) (Curator's
        /// `takeSafe` with a timeout). It leaves no node of ours behind: a claim being made when the time is up is
        /// removed as when a `take_safe` future is dropped — its delete is sent at once and confirmed in the background —
        /// and the item stays in its place for the other consumers.
        pub async fn take_safe_timeout(timeout: std::time::Duration) -> Claimed;
    }
}
