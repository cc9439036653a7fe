//! Counters and shared values in one ZooKeeper node, byte-compatible with Apache Curator's: [`SharedValue`] (bytes,
//! versioned, set by compare-and-set, watched for changes), [`SharedCount`] (Curator's
//! `SharedCount`: a 4-byte big-endian `int`, versioned, set by compare-and-set, watched for changes) and
//! [`AtomicLong`] (Curator's `DistributedAtomicLong`: an 8-byte big-endian `long`, changed by optimistic
//! compare-and-set retried until it succeeds).
//!
//! Every change is one versioned write — `setData` at the version read, or `create` when the node was missing — so
//! somebody else's write in between makes it fail (`BadVersion`, `NodeExists`) and we read again. What the versions
//! alone cannot settle is a write whose reply was lost: the version moved, the value is what we wrote, but another
//! writer who read what we read may have written the same value (two increments of 5 both write 6). So each change
//! is sent in one transaction with a **receipt**, an ephemeral child `<counter>/receipt-<id>` of the counter node,
//! the same for every attempt of one change and holding that attempt's before and after values. Exactly one attempt
//! can create it; after a lost reply we `sync` and read it: there, the change happened (and it says which values);
//! absent, it did not, and we try again. The receipt is deleted in the background once the change is settled. The
//! machinery is the library's one compare-and-set with a receipt, [`Session::compare_and_set`] (`session/cas.rs`).
//! Only the end of our session before we could look leaves the outcome unknown: that is
//! [`Error::SessionExpired`], and the change happened once or not at all — never twice.

use zookeeper_client::{OneshotWatcher, Stat};

use crate::base::error::{Error, Result};
use crate::base::idioms::{self, IfExists};
use crate::session::cas::Swapped;
use crate::session::Session;

/// The prefix of a receipt: an ephemeral child of the counter node while a change of ours is being settled.
pub(crate) const RECEIPT_PREFIX: &str = "receipt-";

/// The version of a counter whose node does not exist yet (Curator's `SharedValue` starts at the same -1).
const UNCREATED: i32 = -1;

/// A value as read, with the version of its node: ZooKeeper's `dataVersion`, which every write moves on by one, or
/// -1 when the node does not exist yet (Curator's `VersionedValue` before the first read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The node's version; -1 when the node does not exist.
    pub version: i32,
}

impl<T> Versioned<T> {
    /// Whether the node existed when it was read (its version is not -1).
    pub fn exists(&self) -> bool {
        self.version != UNCREATED
    }
}

/// What a change of an [`AtomicLong`] did, as Curator's `AtomicValue` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AtomicValue {
    /// Whether the value was changed: always `true` for [`add`](AtomicLong::add), `increment`, `decrement` and
    /// `set` (tried until made; a failure is an `Err`), `false` only for a
    /// [`compare_and_set`](AtomicLong::compare_and_set) that found another value.
    pub succeeded: bool,
    /// The value before the change (or the value found, if it did not succeed).
    pub pre: i64,
    /// The value after the change (`pre`, if it did not succeed).
    pub post: i64,
}

/// A shared 32-bit integer, byte-compatible with Curator's `SharedCount`: the node `path` holds the value as 4
/// bytes, big-endian. Reads return it with the node's version; [`try_set`](SharedCount::try_set) changes it only if
/// nobody has since (compare-and-set); [`changed`](SharedCount::changed) waits for the next change.
///
/// A node that does not exist holds the seed, at version -1; the first write creates it (its missing
/// parents as container nodes, as Curator does). Reads never create it.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let count = zklock::SharedCount::new(&client, "/config/workers", 4)?;
/// let mut seen = count.get().await?;
/// // Compare-and-set: one more worker, unless somebody changed the count since we read it.
/// while count.try_set(&seen, seen.value + 1).await?.is_none() {
///     seen = count.get().await?;
/// }
/// // Elsewhere: follow every change.
/// let mut now = count.get().await?;
/// loop {
///     now = count.changed(&now).await?;
///     println!("workers: {}", now.value);
/// #   break;
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::CorruptData`] when the node holds anything but 4 bytes; [`Error::InvalidPath`] for an invalid path;
/// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends — for a write whose outcome we had not
/// learnt yet, it happened once or not at all (see the module's receipts); [`Error::ConnectionLoss`] only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts (the same for a write in flight); [`Error::ZooKeeper`] for
/// anything else the server refuses (`NoAuth`: the receipt needs `CREATE` on the counter node, the write `WRITE`).
///
/// # Cancellation safety
/// `get` and `changed` change nothing and may be dropped at any point. A write (`set`, `try_set`) dropped after it
/// was sent may or may not happen — once at most.
#[derive(Debug, Clone)]
pub struct SharedCount {
    value: SharedValue,
}

impl SharedCount {
    /// The shared count at `path` on `session` (a [`Session`] or a `&Client`); `seed` is its value until the node
    /// is first written (Curator's `seedValue`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path (or is `/`).
    pub fn new(session: impl Into<Session>, path: &str, seed: i32) -> Result<SharedCount> {
        let mut value = SharedValue::new(session, path, seed.to_be_bytes())?;
        // Another kind of node is refused, not overwritten.
        value.check = |path, data| decode_i32(path, data).map(|_| ());
        Ok(SharedCount { value })
    }

    /// The counter's node.
    pub fn path(&self) -> &str {
        self.value.path()
    }

    /// The session and policies this counter uses.
    pub fn session(&self) -> &Session {
        self.value.session()
    }

    /// The value and version now (the seed at version -1 if the node does not exist).
    pub async fn get(&self) -> Result<Versioned<i32>> {
        self.count(self.value.get().await?)
    }

    /// Sets the value, whatever it is now; returns it with the version of our write.
    pub async fn set(&self, value: i32) -> Result<Versioned<i32>> {
        self.count(self.value.set(value.to_be_bytes()).await?)
    }

    /// Sets the value to `value` only if the node is still at `seen`'s version (compare-and-set): returns the new
    /// value and version, or `None` if somebody changed it since — read it again with [`get`](SharedCount::get).
    /// `seen` at version -1 creates the node, if nobody has.
    pub async fn try_set(&self, seen: &Versioned<i32>, value: i32) -> Result<Option<Versioned<i32>>> {
        let written = self.value.try_set_at(seen.version, value.to_be_bytes()).await?;
        written.map(|written| self.count(written)).transpose()
    }

    /// Waits until the value or the version differs from `since` (the next change after what the caller saw), and
    /// returns the new one. A change made and undone before we look — a node deleted and created again at the
    /// same version with the same value — is no change. A deleted node reads as the seed at version -1.
    ///
    /// It holds one data watch (an `exists` watch while the node does not exist) and nothing else.
    pub async fn changed(&self, since: &Versioned<i32>) -> Result<Versioned<i32>> {
        let since = Versioned {
            value: since.value.to_be_bytes().to_vec(),
            version: since.version,
        };
        self.count(self.value.changed(&since).await?)
    }

    fn count(&self, read: Versioned<Vec<u8>>) -> Result<Versioned<i32>> {
        Ok(Versioned {
            value: decode_i32(self.path(), &read.value)?,
            version: read.version,
        })
    }
}

/// A shared value of bytes with a version, as Curator's `SharedValue`: the node `path` holds the bytes as they are.
/// Reads return them with the node's version; [`try_set`](SharedValue::try_set) changes them only if nobody has
/// since (compare-and-set by version); [`changed`](SharedValue::changed) waits for the next change. A node that does
/// not exist holds the seed, at version -1; the first write creates it (its missing parents as container nodes).
/// [`SharedCount`] is this with 4-byte big-endian integers. Every write is settled exactly once after a lost reply
/// (the module's receipts), so a `set` whose reply was lost is not written twice.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let config = zklock::SharedValue::new(&client, "/config/feature-flags", b"{}".to_vec())?;
/// let seen = config.get().await?;
/// // Compare-and-set: written only if nobody changed it since we read it.
/// if config.try_set(&seen, br#"{"dark_mode":true}"#.to_vec()).await?.is_none() {
///     println!("somebody changed it meanwhile: read it again");
/// }
/// // Elsewhere: follow every change.
/// let now = config.changed(&seen).await?;
/// println!("now {} bytes at version {}", now.value.len(), now.version);
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`SharedCount`]'s, without its check of the data: any bytes are a value.
///
/// # Cancellation safety
/// As [`SharedCount`]'s.
#[derive(Debug, Clone)]
pub struct SharedValue {
    counter: Counter,
    seed: Vec<u8>,
    /// Refuses data that is not of this kind (a [`SharedCount`]'s 4 bytes); any bytes for a plain value.
    check: fn(&str, &[u8]) -> Result<()>,
}

impl SharedValue {
    /// The shared value at `path` on `session` (a [`Session`] or a `&Client`); `seed` is its value until the node
    /// is first written.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path (or is `/`).
    pub fn new(session: impl Into<Session>, path: &str, seed: impl Into<Vec<u8>>) -> Result<SharedValue> {
        Ok(SharedValue {
            counter: Counter::new(session.into(), path)?,
            seed: seed.into(),
            check: |_, _| Ok(()),
        })
    }

    /// The value's node.
    pub fn path(&self) -> &str {
        &self.counter.path
    }

    /// The session and policies this value uses.
    pub fn session(&self) -> &Session {
        &self.counter.session
    }

    /// The value and version now (the seed at version -1 if the node does not exist).
    pub async fn get(&self) -> Result<Versioned<Vec<u8>>> {
        let node = self.counter.read().await?;
        self.versioned(node)
    }

    /// Sets the value, whatever it is now; returns it with the version of our write.
    pub async fn set(&self, value: impl Into<Vec<u8>>) -> Result<Versioned<Vec<u8>>> {
        let value = value.into();
        let (counter, check) = (&self.counter, self.check);
        let written = counter
            .update(|data, _| {
                data.map(|data| check(&counter.path, data)).transpose()?;
                Ok(Some(value.clone()))
            })
            .await?;
        match written {
            Swapped::Written { version, .. } => Ok(Versioned { value, version }),
            Swapped::Declined { .. } => unreachable!("set always writes"),
        }
    }

    /// Sets the value to `value` only if the node is still at `seen`'s version (compare-and-set): returns the new
    /// value and version, or `None` if somebody changed it since — read it again with [`get`](SharedValue::get).
    /// `seen` at version -1 creates the node, if nobody has.
    pub async fn try_set(
        &self,
        seen: &Versioned<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> Result<Option<Versioned<Vec<u8>>>> {
        self.try_set_at(seen.version, value).await
    }

    async fn try_set_at(
        &self,
        expected: i32,
        value: impl Into<Vec<u8>>,
    ) -> Result<Option<Versioned<Vec<u8>>>> {
        let value = value.into();
        let (counter, check) = (&self.counter, self.check);
        let written = counter
            .update(|data, version| {
                data.map(|data| check(&counter.path, data)).transpose()?;
                Ok((version == expected).then(|| value.clone()))
            })
            .await?;
        Ok(match written {
            Swapped::Written { version, .. } => Some(Versioned { value, version }),
            Swapped::Declined { .. } => None,
        })
    }

    /// Waits until the value or the version differs from `since`, and returns the new one (see
    /// [`SharedCount::changed`]). It holds one data watch (an `exists` watch while the node does not exist).
    pub async fn changed(&self, since: &Versioned<Vec<u8>>) -> Result<Versioned<Vec<u8>>> {
        loop {
            let (node, watcher) = self.counter.read_and_watch().await?;
            let now = self.versioned(node)?;
            if now != *since {
                return Ok(now);
            }
            idioms::changed(watcher).await?;
        }
    }

    fn versioned(&self, node: Option<(Vec<u8>, Stat)>) -> Result<Versioned<Vec<u8>>> {
        Ok(match node {
            None => Versioned {
                value: self.seed.clone(),
                version: UNCREATED,
            },
            Some((data, stat)) => {
                (self.check)(&self.counter.path, &data)?;
                Versioned {
                    value: data,
                    version: stat.version,
                }
            }
        })
    }
}

/// An atomic 64-bit counter, byte-compatible with Curator's `DistributedAtomicLong`: the node `path` holds the value
/// as 8 bytes, big-endian; a node that does not exist (or holds no data) reads as 0, and the first write creates it
/// (its missing parents as container nodes).
///
/// Every change is an optimistic compare-and-set: read the value and its version, write the new value at that
/// version, and read again if somebody else wrote first. Unlike Curator's, which gives up after its retry policy
/// and reports `succeeded() == false`, a change here is tried until it succeeds: every round somebody's write
/// does, so the counter always moves on, but under heavy contention one caller may retry many times (backing off
/// between rounds by the session's [`RetryPolicy`](crate::RetryPolicy)). Arithmetic wraps on overflow, as Java's
/// `long` does.
///
/// A change whose reply was lost is settled by its receipt (see the module documentation), so
/// [`add`](AtomicLong::add) never counts twice and always reports the values of the write that happened.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let orders = zklock::AtomicLong::new(&client, "/counters/orders")?;
/// let changed = orders.increment().await?;
/// println!("order number {}", changed.post);
/// let swapped = orders.compare_and_set(changed.post, 0).await?;
/// if !swapped.succeeded {
///     println!("somebody counted meanwhile: now {}", swapped.pre);
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::CorruptData`] when the node holds anything but 8 bytes (or none); [`Error::InvalidPath`] for an invalid
/// path; [`Error::SessionExpired`] / [`Error::Closed`] when the session ends — for a change whose outcome we had
/// not learnt yet, it happened once or not at all; [`Error::ConnectionLoss`] only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts (the same for a change in flight); [`Error::ZooKeeper`] for
/// anything else the server refuses (`NoAuth`: the receipt needs `CREATE` on the counter node, the write `WRITE`).
///
/// # Cancellation safety
/// `get` changes nothing. A change dropped after its write was sent may or may not happen — once at most.
#[derive(Debug, Clone)]
pub struct AtomicLong {
    counter: Counter,
}

impl AtomicLong {
    /// The counter at `path` on `session` (a [`Session`] or a `&Client`).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path (or is `/`).
    pub fn new(session: impl Into<Session>, path: &str) -> Result<AtomicLong> {
        Ok(AtomicLong {
            counter: Counter::new(session.into(), path)?,
        })
    }

    /// The counter's node.
    pub fn path(&self) -> &str {
        &self.counter.path
    }

    /// The session and policies this counter uses.
    pub fn session(&self) -> &Session {
        &self.counter.session
    }

    /// The value now (0 if the node does not exist).
    pub async fn get(&self) -> Result<i64> {
        Ok(self.get_versioned().await?.value)
    }

    /// The value now with its node's version (-1 if the node does not exist).
    pub async fn get_versioned(&self) -> Result<Versioned<i64>> {
        Ok(match self.counter.read().await? {
            None => Versioned {
                value: 0,
                version: UNCREATED,
            },
            Some((data, stat)) => Versioned {
                value: self.counter.decode_i64(&data)?,
                version: stat.version,
            },
        })
    }

    /// Adds `delta` (wrapping on overflow); returns the values before and after.
    ///
    /// The change is tried until it is made (see the type's documentation), so the result's
    /// [`succeeded`](AtomicValue::succeeded) is always `true` — kept for Curator's shape, where it can be false;
    /// the same for [`increment`](Self::increment), [`decrement`](Self::decrement) and [`set`](Self::set). A
    /// change that cannot be made ends in an `Err` instead. Only [`compare_and_set`](Self::compare_and_set)
    /// reports `false`.
    pub async fn add(&self, delta: i64) -> Result<AtomicValue> {
        self.change(|value| Some(value.wrapping_add(delta))).await
    }

    /// Adds one.
    pub async fn increment(&self) -> Result<AtomicValue> {
        self.add(1).await
    }

    /// Subtracts one.
    pub async fn decrement(&self) -> Result<AtomicValue> {
        self.add(-1).await
    }

    /// Sets the value, whatever it is now (Curator's `trySet`, tried until it succeeds); returns the values
    /// before and after.
    pub async fn set(&self, value: i64) -> Result<AtomicValue> {
        self.change(|_| Some(value)).await
    }

    /// Sets the value to `new` if it is `expected` now. [`AtomicValue::succeeded`] tells whether it was; if not,
    /// `pre` is the value found. A write of somebody else between our read and our write makes us read again, so a
    /// failure always means that the value differed.
    pub async fn compare_and_set(&self, expected: i64, new: i64) -> Result<AtomicValue> {
        self.change(|value| (value == expected).then_some(new)).await
    }

    /// One change: `change` maps the value read to the value to write (`None`: write nothing).
    async fn change(&self, change: impl Fn(i64) -> Option<i64>) -> Result<AtomicValue> {
        let counter = &self.counter;
        let updated = counter
            .update(|data, _| {
                let value = data.map_or(Ok(0), |data| counter.decode_i64(data))?;
                Ok(change(value).map(|new| new.to_be_bytes().to_vec()))
            })
            .await?;
        Ok(match updated {
            Swapped::Written { pre, post, .. } => AtomicValue {
                succeeded: true,
                pre: pre.as_deref().map_or(Ok(0), |data| counter.decode_i64(data))?,
                post: counter.decode_i64(&post)?,
            },
            Swapped::Declined { current } => {
                let value = current
                    .as_deref()
                    .map_or(Ok(0), |data| counter.decode_i64(data))?;
                AtomicValue {
                    succeeded: false,
                    pre: value,
                    post: value,
                }
            }
        })
    }
}

/// One counter node and how it is written: what [`SharedCount`] and [`AtomicLong`] share.
#[derive(Debug, Clone)]
struct Counter {
    session: Session,
    path: String,
}

impl Counter {
    fn new(session: Session, path: &str) -> Result<Counter> {
        let path = crate::base::path::validate(path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "a counter cannot be the root node",
            });
        }
        Ok(Counter { session, path })
    }

    /// The node's data and stat; `None` if it does not exist.
    async fn read(&self) -> Result<Option<(Vec<u8>, Stat)>> {
        self.session.get(&self.path).await
    }

    /// Like [`read`](Counter::read), with a watch that fires on the next change: a data watch, or an `exists` watch
    /// while the node does not exist.
    async fn read_and_watch(&self) -> Result<(Option<(Vec<u8>, Stat)>, OneshotWatcher)> {
        let client = self.session.client();
        loop {
            let read = self
                .session
                .retry()
                .run_at("getData", &self.path, || client.get_and_watch_data(&self.path));
            if let Some((data, stat, watcher)) = read.await.if_exists()? {
                return Ok((Some((data, stat)), watcher));
            }
            // Created between the two looks: read it (with a data watch) instead.
            if let (None, watcher) = self.session.watch_exists(&self.path).await? {
                return Ok((None, watcher));
            }
        }
    }

    fn decode_i64(&self, data: &[u8]) -> Result<i64> {
        decode_i64(&self.path, data)
    }

    /// One change, written exactly once ([`Session::compare_and_set`], with this counter's receipts).
    async fn update(
        &self,
        decide: impl FnMut(Option<&[u8]>, i32) -> Result<Option<Vec<u8>>>,
    ) -> Result<Swapped> {
        self.session
            .compare_and_set(&self.path, RECEIPT_PREFIX, decide)
            .await
    }
}

/// A [`SharedCount`]'s value: 4 bytes, big-endian (Curator's `ByteBuffer.putInt`).
fn decode_i32(path: &str, data: &[u8]) -> Result<i32> {
    let bytes: [u8; 4] = data
        .try_into()
        .map_err(|_| corrupt(path, data, "4 bytes (a SharedCount)"))?;
    Ok(i32::from_be_bytes(bytes))
}

/// An [`AtomicLong`]'s value: 8 bytes, big-endian (Curator's `ByteBuffer.putLong`); no data at all reads as 0, as
/// Curator reads it.
fn decode_i64(path: &str, data: &[u8]) -> Result<i64> {
    if data.is_empty() {
        return Ok(0);
    }
    let bytes: [u8; 8] = data
        .try_into()
        .map_err(|_| corrupt(path, data, "8 bytes (a DistributedAtomicLong)"))?;
    Ok(i64::from_be_bytes(bytes))
}

fn corrupt(path: &str, data: &[u8], expected: &'static str) -> Error {
    Error::CorruptData {
        path: path.to_owned(),
        len: data.len(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_curators_bytes() {
        // SharedCount.toBytes: ByteBuffer.putInt, big-endian; DistributedAtomicLong.valueToBytes: putLong.
        assert_eq!(decode_i32("/c", &[0, 0, 1, 2]).unwrap(), 258);
        assert_eq!(decode_i32("/c", &[0xff, 0xff, 0xff, 0xfe]).unwrap(), -2);
        assert_eq!(decode_i64("/c", &[0, 0, 0, 0, 0, 0, 1, 0]).unwrap(), 256);
        assert_eq!(decode_i64("/c", &[]).unwrap(), 0);
        assert!(matches!(
            decode_i64("/c", &[1, 2, 3]),
            Err(Error::CorruptData { len: 3, .. })
        ));
        assert!(matches!(
            decode_i32("/c", &[0; 8]),
            Err(Error::CorruptData { len: 8, .. })
        ));
    }
}
