//! Several locks held as one: Curator's `InterProcessMultiLock`, with a global acquisition order.
//!
//! The parts are acquired one after the other in the order of their paths (then mutex, write, read), the same
//! order for every `MultiLock` in every process, so two multi-locks that share locks can never wait for each other
//! in a cycle. All or nothing: if one part fails, times out or the acquire is cancelled, the parts already held
//! are released (their nodes deleted, in the background if the future was dropped).

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use crate::base::error::{Error, LostReason, Result};
use crate::node::guard::Guard;
use crate::recipes::locks::mutex::Mutex;
use crate::recipes::locks::rwlock::RwLock;

/// One lock of a [`MultiLock`].
#[derive(Debug, Clone)]
pub enum Part {
    /// A [`Mutex`].
    Mutex(Mutex),
    /// The read side of an [`RwLock`] (shared).
    Read(RwLock),
    /// The write side of an [`RwLock`] (exclusive).
    Write(RwLock),
}

impl Part {
    fn path(&self) -> &str {
        match self {
            Part::Mutex(m) => m.path(),
            Part::Read(l) | Part::Write(l) => l.path(),
        }
    }

    /// The global order: by path, then mutex before write before read (one path is one kind in practice).
    fn rank(&self) -> (&str, u8) {
        let kind = match self {
            Part::Mutex(_) => 0,
            Part::Write(_) => 1,
            Part::Read(_) => 2,
        };
        (self.path(), kind)
    }

    async fn acquire(&self) -> Result<Guard> {
        match self {
            Part::Mutex(m) => m.lock().await,
            Part::Read(l) => l.read().await,
            Part::Write(l) => l.write().await,
        }
    }

    async fn try_acquire(&self) -> Result<Option<Guard>> {
        match self {
            Part::Mutex(m) => m.try_lock().await,
            Part::Read(l) => l.try_read().await,
            Part::Write(l) => l.try_write().await,
        }
    }
}

/// Several locks — any mix of [`Mutex`]es and [`RwLock`] read or write sides, on any sessions — acquired and held
/// as one.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// use zklock::{MultiLock, Mutex, Part, RwLock};
/// let transfer = MultiLock::new([
///     Part::Mutex(Mutex::new(&client, "/locks/accounts/alice")?),
///     Part::Mutex(Mutex::new(&client, "/locks/accounts/bob")?),
///     Part::Read(RwLock::new(&client, "/locks/rates")?),
/// ])?;
/// let held = transfer.lock().await?; // all three, or none
/// tokio::select! {
///     reason = held.lost() => eprintln!("one of the locks was lost: {reason}"),
///     _ = async { /* move the money */ } => {}
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
///
/// # Deadlock freedom
/// Every `MultiLock` acquires its parts in one global order (by path), so multi-locks sharing locks cannot
/// deadlock among themselves. A caller that holds a lock *outside* the multi-lock while acquiring it can still
/// deadlock with another that does the same in the other order: put every lock you need into one `MultiLock`.
///
/// # Errors
/// Those of the parts' acquires ([`Error::SessionExpired`], [`Error::NodeDeleted`], ...); [`Error::Timeout`]
/// from [`lock_timeout`](MultiLock::lock_timeout). On any error every part already held is released.
///
/// # Cancellation safety
/// Dropping a `lock` future at any await point drops the parts held so far and the part being acquired; each
/// deletes its node (in the background).
#[derive(Debug, Clone)]
pub struct MultiLock {
    parts: Vec<Part>,
}

impl MultiLock {
    /// A multi-lock of `parts` (in any order: they are acquired in the global order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if no part is given; [`Error::InvalidPath`] if a path appears twice (one node per
    /// path and session is all a holder may have).
    pub fn new(parts: impl IntoIterator<Item = Part>) -> Result<MultiLock> {
        let mut parts: Vec<Part> = parts.into_iter().collect();
        parts.sort_by(|a, b| a.rank().cmp(&b.rank()));
        if parts.is_empty() {
            return Err(Error::InvalidArgument(
                "a multi-lock needs at least one lock".to_owned(),
            ));
        }
        if let Some(pair) = parts.windows(2).find(|pair| pair[0].path() == pair[1].path()) {
            return Err(Error::InvalidPath {
                path: pair[0].path().to_owned(),
                reason: "appears twice in one multi-lock",
            });
        }
        Ok(MultiLock { parts })
    }

    /// The parts, in the order they are acquired.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Acquires every part, waiting as long as it takes.
    pub async fn lock(&self) -> Result<MultiGuard> {
        let mut guards = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            match part.acquire().await {
                Ok(guard) => guards.push(guard),
                Err(err) => {
                    release_all(guards).await;
                    return Err(err);
                }
            }
        }
        Ok(MultiGuard { guards })
    }

    /// Like [`lock`](MultiLock::lock), but gives up after `timeout` with [`Error::Timeout`], releasing what it
    /// held.
    pub async fn lock_timeout(&self, timeout: Duration) -> Result<MultiGuard> {
        crate::base::idioms::timeout(timeout, self.lock()).await
    }

    /// Acquires every part if each is free right now; otherwise releases what it took and returns `None`.
    pub async fn try_lock(&self) -> Result<Option<MultiGuard>> {
        let mut guards = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            match part.try_acquire().await {
                Ok(Some(guard)) => guards.push(guard),
                Ok(None) => {
                    release_all(guards).await;
                    return Ok(None);
                }
                Err(err) => {
                    release_all(guards).await;
                    return Err(err);
                }
            }
        }
        Ok(Some(MultiGuard { guards }))
    }
}

/// Releases `guards` in the reverse order of acquisition; failures are left to each guard's background delete.
async fn release_all(guards: Vec<Guard>) {
    for guard in guards.into_iter().rev() {
        if let Err(err) = guard.release().await {
            tracing::debug!(%err, "releasing a part of a multi-lock failed");
        }
    }
}

/// Every part of a [`MultiLock`], held. Dropping it releases them all (in the background).
#[derive(Debug)]
pub struct MultiGuard {
    guards: Vec<Guard>,
}

impl MultiGuard {
    /// The parts' guards, in the order they were acquired (each with its own fencing token and path).
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// Completes when *any* part is lost (session expiry, deletion of its node, a long disconnection): from then
    /// on the set is no longer held as a whole.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        let mut signals: Vec<_> = self.guards.iter().map(|guard| Box::pin(guard.lost())).collect();
        std::future::poll_fn(move |cx| {
            for signal in &mut signals {
                if let Poll::Ready(reason) = signal.as_mut().poll(cx) {
                    return Poll::Ready(reason);
                }
            }
            Poll::Pending
        })
    }

    /// Whether any part has been lost already.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(Guard::is_lost)
    }

    /// Releases every part (in the reverse order of acquisition) and waits for ZooKeeper to confirm.
    ///
    /// # Errors
    /// The first failure; the other parts are released all the same.
    pub async fn release(self) -> Result<()> {
        let mut first = Ok(());
        for guard in self.guards.into_iter().rev() {
            if let Err(err) = guard.release().await {
                if first.is_ok() {
                    first = Err(err);
                }
            }
        }
        first
    }
}
