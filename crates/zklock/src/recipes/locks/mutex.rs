//! The fair exclusive lock.

use crate::base::error::Result;
use crate::base::names::Marker;
use crate::engine::{self, Place, Rules, Wait};
use crate::node::guard::Guard;
use crate::session::Session;

/// A fair (FIFO), herd-free exclusive lock: the recipe of the ZooKeeper documentation, done carefully.
///
/// Contenders create `<path>/_c_<uuid>-lock-<sequence>` (Apache Curator's `InterProcessMutex` format, so Java
/// services using Curator share the lock with us), the lowest sequence holds the lock, and everybody else watches
/// only the node just before theirs. See the crate documentation for the fault handling.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let mutex = zklock::Mutex::new(&client, "/locks/orders")?;
/// let guard = mutex.lock().await?;
/// tokio::select! {
///     reason = guard.lost() => eprintln!("lock lost: {reason}"),
///     _ = async { /* critical section, passing guard.fencing_token() to the protected resource */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`](crate::Error::SessionExpired) or [`Error::Closed`](crate::Error::Closed) when the
/// session ends while waiting; [`Error::Timeout`](crate::Error::Timeout) from [`lock_timeout`](Mutex::lock_timeout);
/// [`Error::NodeDeleted`](crate::Error::NodeDeleted) if somebody deletes our queue node while we wait;
/// [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the [`RetryPolicy`](crate::RetryPolicy) caps
/// attempts.
///
/// # Events
/// For each acquire, the [`Session`]'s listener receives `Created` (our node), `Waiting` and `Woken` (the node
/// just before ours) and `Acquired`.
///
/// # Cancellation safety
/// Every acquire method is cancellation safe: dropping the future at any await point removes our queue node (in
/// the background). A timed-out [`lock_timeout`](Mutex::lock_timeout) and a failed
/// [`try_lock`](Mutex::try_lock) have removed it before they return.
#[derive(Debug, Clone)]
pub struct Mutex {
    place: Place,
    kazoo: bool,
    kazoo_names: bool,
}

/// The mutex's rules: the exclusive rule over `lock-` nodes and kazoo's `__lock__`/`__rlock__` nodes (unless told
/// not to share with kazoo: then those are a conflict).
struct Lock {
    kazoo: bool,
    /// Our node is named `_c_<uuid>-__lock__<seq>`, which kazoo's `Lock` recognises as one of its own.
    kazoo_names: bool,
}

impl Rules for Lock {
    fn marker(&self) -> Marker {
        if self.kazoo_names {
            Marker::KazooLock
        } else {
            Marker::Lock
        }
    }

    fn keeps(&self, marker: Marker) -> bool {
        Marker::Lock.queues_with(marker) && (self.kazoo || !marker.is_kazoo())
    }
}

impl Mutex {
    /// A lock on the directory `path` (created, with its parents, on first use), on `session` — a [`Session`] or
    /// a `&Client`.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<Mutex> {
        Ok(Mutex {
            place: Place::new(session, path)?,
            kazoo: true,
            kazoo_names: false,
        })
    }

    engine::place_methods! {
        /// Data stored in our node while we wait and hold (shown by `zklock status`).
        pub fn with_data;
        /// The lock directory.
        pub fn path;
        /// The session and policies this lock uses.
        pub fn session;
    }

    /// Whether to queue behind kazoo's contenders in the same directory (`<hex>__lock__<seq>`: kazoo's `Lock`,
    /// `WriteLock` and `Election`; `<hex>__rlock__<seq>`: its `ReadLock`) — by sequence number, like ours. On by
    /// default; with `false` a kazoo node in the directory makes the acquire fail with
    /// [`Error::InUse`](crate::Error::InUse) — never is it ignored.
    ///
    /// kazoo's `Lock` sees *our* nodes only when made with `extra_lock_patterns=["-lock-"]` (kazoo ≥ 2.8); without
    /// it a kazoo contender that comes after us does not wait for us. See the crate documentation, "Sharing a
    /// lock with Curator and kazoo".
    pub fn with_kazoo_contenders(mut self, recognize: bool) -> Mutex {
        self.kazoo = recognize;
        self
    }

    /// Names our node in kazoo's format (`_c_<uuid>-__lock__<seq>`) instead of Curator's, so that a stock kazoo
    /// `Lock` — one made without `extra_lock_patterns` — waits for us as for one of its own (kazoo recognises its
    /// nodes by the `__lock__` before the sequence number). Curator's `InterProcessMutex` then does not see us: use
    /// it on a path that kazoo shares, not Curator. Implies [`with_kazoo_contenders(true)`](Mutex::with_kazoo_contenders).
    /// `zklock status` shows such a node as a kazoo lock's.
    pub fn with_kazoo_names(mut self, kazoo_names: bool) -> Mutex {
        self.kazoo_names = kazoo_names;
        self
    }

    async fn acquire(&self, wait: Wait) -> Result<Option<Guard>> {
        let rules = Lock {
            kazoo: self.kazoo || self.kazoo_names,
            kazoo_names: self.kazoo_names,
        };
        engine::acquire(&self.place, &rules, wait).await
    }

    engine::acquire_methods! {
        acquire() => Guard:
        /// Waits as long as it takes for the lock.
        pub async fn lock;
        /// Takes the lock only if nobody holds it or waits for it; otherwise removes our node and returns `None`.
        pub async fn try_lock;
        /// Waits at most `timeout` for the lock; [`Error::Timeout`](crate::Error::Timeout) afterwards.
        /// The timeout bounds the wait for our turn, not the create of our node: a zero timeout takes
        /// a free one.
        pub async fn lock_timeout;
    }
}
