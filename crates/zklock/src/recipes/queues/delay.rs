//! Curator's `DistributedDelayQueue`: items that may not be taken before their time, in Curator's layout so that
//! Curator and zklock producers and consumers share one queue.
//!
//! An item is a persistent-sequential node `queue-|<due>|<sequence>` in the queue directory: `<due>` is the
//! epoch millisecond before which it may not be taken, in upper-case hexadecimal of at least 8 digits (Java's
//! `String.format("%08X", epoch)`), and its data is the item in Curator's `ItemSerializer` envelope. A consumer
//! reads the due time from the text between the last two `|` of a name (no such text: due at once, as Curator
//! reads it), takes the earliest due item whose time has come — by deleting it at the version it read: of two
//! consumers exactly one deletion succeeds — and otherwise waits for a change of the directory or for the earliest
//! due time, whichever comes first. An item is never taken before its due time by the consumer's clock.
//!
//! Everything but the names and the due times is the FIFO queue's (`recipes/queues/items.rs`, [`Items`] with
//! [`Layout::Delay`]): puts with receipts, `take` and `take_safe` with claims (so an item whose consumer dies is
//! taken again, where Curator's delay queue without a lock path loses it), the waiting consumers — who also wake
//! at the earliest due time.

use std::time::{Duration, SystemTime};

use crate::base::error::Result;
use crate::recipes::queues::claim::Claimed;
use crate::recipes::queues::curator::envelope;
use crate::recipes::queues::items::{forward_to_items, Items};
use crate::recipes::queues::layout::Layout;
use crate::session::Session;

/// The prefix of every item (Curator's `DistributedQueue` item name).
const ITEM: &str = crate::recipes::queues::curator::ITEM_PREFIX;

/// A queue of items each due at a time of its own, byte-compatible with Curator's `DistributedDelayQueue`.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// use std::time::{Duration, SystemTime};
///
/// let queue = zklock::DelayQueue::new(&client, "/queues/reminders")?;
/// queue.put(b"call back", SystemTime::now() + Duration::from_secs(60)).await?;
/// let item = queue.take().await?; // a minute later
/// assert!(SystemTime::now() >= item.due);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidPath`](crate::Error::InvalidPath) for an invalid path;
/// [`Error::SessionExpired`](crate::Error::SessionExpired) / [`Error::Closed`](crate::Error::Closed) when the session
/// ends; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the [`RetryPolicy`](crate::RetryPolicy)
/// caps attempts.
///
/// # Delivery
/// As the [`Queue`](crate::Queue)'s: a put is made once even when its reply is lost (a receipt tells); `take` takes
/// an item at most once (an item whose delete reply was lost and that is gone is skipped: taken by us or by
/// another); [`take_safe`](DelayQueue::take_safe) claims an item and removes it only when the consumer says it is
/// done, so an item is processed at least once even when its consumer dies.
#[derive(Debug, Clone)]
pub struct DelayQueue {
    items: Items,
}

/// An item taken from a [`DelayQueue`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delayed {
    /// The item as it was put.
    pub data: Vec<u8>,
    /// When it became due (its node's name says, to the millisecond).
    pub due: SystemTime,
    /// The node it was in (deleted now).
    pub path: String,
}

impl DelayQueue {
    /// The delay queue in the directory `path` (created with its parents by the first put), on `session` — a
    /// [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<DelayQueue> {
        Ok(DelayQueue {
            items: Items::new(session.into(), path, Layout::Delay)?,
        })
    }

    /// The queue directory.
    pub fn path(&self) -> &str {
        self.items.path()
    }

    /// Puts `data`, to be taken no earlier than `due` (to the millisecond; a time before 1970 is due at once);
    /// returns the item's node name.
    pub async fn put(&self, data: &[u8], due: SystemTime) -> Result<String> {
        let millis = due
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let id = uuid::Uuid::new_v4().simple().to_string();
        self.items
            .put(&format!("{ITEM}|{millis:08X}|"), &id, &envelope(data))
            .await
    }

    /// Takes the item due first, once its time has come; waits for it (and for items to come) until then.
    pub async fn take(&self) -> Result<Delayed> {
        Ok(self.delayed(self.items.take_entry().await?))
    }

    /// Like [`take`](DelayQueue::take), but gives up after `timeout` with [`Error::Timeout`](crate::Error::Timeout).
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Delayed> {
        Ok(self.delayed(self.items.take_entry_timeout(timeout).await?))
    }

    /// Takes the item due first if one is due now; `None` at once otherwise.
    pub async fn try_take(&self) -> Result<Option<Delayed>> {
        Ok(self
            .items
            .try_take_entry()
            .await?
            .map(|entry| self.delayed(entry)))
    }

    forward_to_items! {
        /// Claims the item due first, once its time has come, without removing it: it stays in the queue, skipped by
        /// other `take_safe` consumers while the [`Claimed`](crate::Claimed) lives, and is removed by
        /// [`Claimed::complete`](crate::Claimed::complete). Dropped, abandoned, or its session ended, the item is taken
        /// again.
        pub async fn take_safe() -> Claimed;
        /// Like [`take_safe`](DelayQueue::take_safe), but gives up after `timeout` with
        /// [`Error::Timeout`](crate::Error::Timeout).
        pub async fn take_safe_timeout(timeout: std::time::Duration) -> Claimed;
        /// The data of the item [`take`](DelayQueue::take) would take now, without taking it; `None` if no item is
        /// due.
        pub async fn peek() -> Option<Vec<u8>>;
        /// How many items the queue holds, due or not (claimed ones included).
        pub async fn len() -> usize;
        /// Whether the queue holds no item, due or not.
        pub async fn is_empty() -> bool;
        /// Claims the item due first if one is due now and unclaimed; `None` at once otherwise.
        pub async fn try_take_safe() -> Option<Claimed>;
    }

    fn delayed(&self, (name, data): (String, Vec<u8>)) -> Delayed {
        Delayed {
            data,
            due: SystemTime::UNIX_EPOCH + Duration::from_millis(Layout::Delay.due(&name)),
            path: crate::base::path::child_path(self.path(), &name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipes::queues::layout::due_of;

    #[test]
    fn curators_names() {
        // DistributedDelayQueue.epochToString: "|" + String.format("%08X", epoch) + "|", after "queue-".
        assert_eq!(format!("{ITEM}|{:08X}|", 0x1234u64), "queue-|00001234|");
        assert_eq!(format!("{:08X}", 1_700_000_000_000u64), "18BCFE56800");
        assert_eq!(due_of("queue-|18BCFE56800|0000000007"), 1_700_000_000_000);
        assert_eq!(due_of("queue-|00001234|0000000000"), 0x1234);
        // Not Curator's shape: due at once, as getEpoch answers 0.
        assert_eq!(due_of("queue-0000000001"), 0);
        assert_eq!(due_of("queue-|zz|0000000001"), 0);
        assert_eq!(due_of("||1"), 0);
    }
}
