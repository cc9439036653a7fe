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
//! Written on the shared layer: [`Session::create_once`] for the put (the directory made as container nodes, as
//! Curator makes it), [`Session::await_change`] for the wait, [`Session::get`] for the read.

use std::time::{Duration, SystemTime};

use zookeeper_client::CreateMode;

use crate::base::error::{Error, Result};
use crate::base::idioms::IfExists;
use crate::base::path::child_path;
use crate::recipes::queues::curator::{envelope, open_envelope};
use crate::session::cas::{Committed, Write};
use crate::session::Session;

/// The prefix of every item (Curator's `DistributedQueue` item name).
const ITEM: &str = "queue-";

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
/// [`Error::InvalidPath`] for an invalid path; [`Error::SessionExpired`] / [`Error::Closed`] when the session
/// ends; [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Delivery
/// A put whose reply was lost is sent again, and a take whose delete reply was lost looks again: as Curator's
/// queue without a lock path, an item may then be put twice or lost — never taken twice.
#[derive(Debug, Clone)]
pub struct DelayQueue {
    session: Session,
    path: String,
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
    /// The delay queue in the directory `path` (created with its parents, as container nodes, by the first put),
    /// on `session` — a [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<DelayQueue> {
        Ok(DelayQueue {
            session: session.into(),
            path: crate::base::path::validate(path)?,
        })
    }

    /// The queue directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Puts `data`, to be taken no earlier than `due` (to the millisecond; a time before 1970 is due at once).
    pub async fn put(&self, data: &[u8], due: SystemTime) -> Result<()> {
        let millis = due
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let prefix = child_path(&self.path, &format!("{ITEM}|{millis:08X}|"));
        let data = envelope(data);
        let writes = [Write::Create(&prefix, &data, CreateMode::PersistentSequential)];
        match self
            .session
            .create_once(&writes, false, Some(CreateMode::Container))
            .await?
        {
            Committed::Done { .. } => Ok(()),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
        }
    }

    /// Takes the item due first, once its time has come; waits for it (and for items to come) until then.
    pub async fn take(&self) -> Result<Delayed> {
        let client = self.session.client();
        loop {
            let listed = self.session.retry().run_at("getChildren", &self.path, || {
                client.list_and_watch_children(&self.path)
            });
            let Some((children, watcher)) = listed.await.if_exists()? else {
                if let (None, watcher) = self.session.watch_exists(&self.path).await? {
                    self.session.await_change(watcher, &self.path).await?;
                }
                continue;
            };
            let mut items: Vec<(u64, &String)> = children
                .iter()
                .filter(|c| c.starts_with(ITEM))
                .map(|c| (due_of(c), c))
                .collect();
            items.sort_unstable();
            let now = millis_now();
            for (due, name) in items.iter().take_while(|(due, _)| *due <= now) {
                if let Some(data) = self.take_node(name).await? {
                    let due = SystemTime::UNIX_EPOCH + Duration::from_millis(*due);
                    let path = child_path(&self.path, name);
                    return Ok(Delayed { data, due, path });
                }
            }
            // Nothing due: wait for a change, or for the earliest due time to come.
            let next = items
                .first()
                .map(|(due, _)| Duration::from_millis(due.saturating_sub(now)));
            tokio::select! {
                changed = self.session.await_change(watcher, &self.path) => drop(changed?),
                _ = tokio::time::sleep(next.unwrap_or_default()), if next.is_some() => {}
            }
        }
    }

    /// Like [`take`](DelayQueue::take), but gives up after `timeout` with [`Error::Timeout`].
    pub async fn take_timeout(&self, timeout: Duration) -> Result<Delayed> {
        tokio::time::timeout(timeout, self.take())
            .await
            .map_err(|_| Error::Timeout)?
    }

    /// Reads the item `name` and deletes it at the version read: its data if we took it, `None` if somebody else
    /// did (or changed it) first.
    async fn take_node(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = child_path(&self.path, name);
        let Some((data, stat)) = self.session.get(&path).await? else {
            return Ok(None);
        };
        let client = self.session.client();
        let deleted = self
            .session
            .retry()
            .run_at("delete", &path, || client.delete(&path, Some(stat.version)));
        match deleted.await {
            Err(Error::ZooKeeper {
                source: zookeeper_client::Error::BadVersion,
                ..
            }) => Ok(None),
            deleted => Ok(deleted.if_exists()?.map(|()| open_envelope(data))),
        }
    }
}

/// The due time of the item `name`: the hexadecimal between its last two `|` (Curator's `getEpoch`), 0 without.
fn due_of(name: &str) -> u64 {
    let Some((head, _)) = name.rsplit_once('|') else {
        return 0;
    };
    head.rsplit_once('|')
        .filter(|(before, _)| !before.is_empty())
        .and_then(|(_, hex)| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

fn millis_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
