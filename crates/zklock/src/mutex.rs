//! The fair exclusive lock.

use std::time::Duration;

use zookeeper_client::Client;

use crate::contention::{self, Options, Rules, Wait};
use crate::error::Result;
use crate::events::Listener;
use crate::guard::Guard;
use crate::lost::LostPolicy;
use crate::node::Marker;
use crate::retry::RetryPolicy;

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
/// [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the [`RetryPolicy`] caps attempts.
///
/// # Cancellation safety
/// Every acquire method is cancellation safe: dropping the future at any await point removes our queue node (in
/// the background). A timed-out [`lock_timeout`](Mutex::lock_timeout) and a failed
/// [`try_lock`](Mutex::try_lock) have removed it before they return.
#[derive(Debug, Clone)]
pub struct Mutex {
    client: Client,
    path: String,
    options: Options,
}

const RULES: Rules = Rules {
    marker: Marker::Lock,
    keep: |marker, kazoo| marker == Marker::Lock || (kazoo && marker == Marker::KazooLock),
    kazoo: false,
    turn: contention::exclusive_turn,
};

impl Mutex {
    /// A lock on the directory `path` (created, with its parents, on first use).
    pub fn new(client: &Client, path: &str) -> Result<Mutex> {
        Ok(Mutex {
            client: client.clone(),
            path: crate::path::validate(path)?,
            options: Options::default(),
        })
    }

    /// Replaces all options at once.
    pub fn with_options(mut self, options: Options) -> Mutex {
        self.options = options;
        self
    }

    /// Data stored in our node while we wait and hold (shown by `zklock status`).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Mutex {
        self.options.data = data.into();
        self
    }

    /// When a held guard counts as lost because of a disconnection.
    pub fn with_lost_policy(mut self, policy: LostPolicy) -> Mutex {
        self.options.lost_policy = policy;
        self
    }

    /// How operations are retried across connection loss.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Mutex {
        self.options.retry = retry;
        self
    }

    /// Also queue behind kazoo's `Lock` contenders (`<hex>__lock__<seq>`) in the same directory.
    pub fn with_kazoo_contenders(mut self, recognize: bool) -> Mutex {
        self.options.recognize_kazoo = recognize;
        self
    }

    /// Receives progress events of every acquire through this handle.
    pub fn with_listener(mut self, listener: Listener) -> Mutex {
        self.options.listener = Some(listener);
        self
    }

    /// The lock directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn rules(&self) -> Rules {
        Rules {
            kazoo: self.options.recognize_kazoo,
            ..RULES
        }
    }

    /// Waits as long as it takes for the lock.
    pub async fn lock(&self) -> Result<Guard> {
        let guard = contention::acquire(
            &self.client,
            &self.path,
            self.rules(),
            &self.options,
            Wait::Forever,
        )
        .await?;
        Ok(guard.expect("a blocking acquire returns a guard"))
    }

    /// Takes the lock only if nobody holds it or waits for it; otherwise removes our node and returns `None`.
    pub async fn try_lock(&self) -> Result<Option<Guard>> {
        contention::acquire(&self.client, &self.path, self.rules(), &self.options, Wait::Never).await
    }

    /// Waits at most `timeout` for the lock; [`Error::Timeout`](crate::Error::Timeout) afterwards.
    pub async fn lock_timeout(&self, timeout: Duration) -> Result<Guard> {
        let guard = contention::acquire(
            &self.client,
            &self.path,
            self.rules(),
            &self.options,
            Wait::timeout(timeout),
        )
        .await?;
        Ok(guard.expect("a timed acquire returns a guard or an error"))
    }
}
