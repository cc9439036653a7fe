//! The barrier of the design documents: processes wait until a barrier node is deleted.
//!
//! A coordinator [`set`](Barrier::set)s the barrier (creates a persistent node), workers [`wait`](Barrier::wait)
//! on it, and the coordinator [`remove`](Barrier::remove)s it to let everybody through at once. A waiter holds an
//! `exists` watch on the node and, whatever the notification says, looks again: only an *observed* absence of the
//! node releases it, so a data change of the node or any other spurious wake-up never lets a waiter through early.

use std::time::Duration;

use zookeeper_client::{self as zk, Acls, Client, CreateMode};

use crate::error::{session_error, Error, Result};
use crate::events::{Listener, QueueEvent};
use crate::retry::RetryPolicy;

/// A barrier: a persistent node whose existence holds waiters back.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let barrier = zklock::Barrier::new(&client, "/barriers/nightly-load")?;
/// barrier.set().await?; // the coordinator closes the barrier
/// // ... workers elsewhere call `barrier.wait().await?` and block ...
/// barrier.remove().await?; // ... and are all released here
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`] or [`Error::Closed`] when the session ends;
/// [`Error::ConnectionLoss`] only if the [`RetryPolicy`] caps attempts; [`Error::Timeout`] from
/// [`wait_timeout`](Barrier::wait_timeout); [`Error::ZooKeeper`] for anything else the server refuses (for
/// example `NotEmpty` when removing a barrier node that has children, or `NoAuth`).
///
/// # Cancellation safety
/// [`wait`](Barrier::wait) creates nothing, so dropping it at any point leaves nothing behind. [`set`](Barrier::set)
/// and [`remove`](Barrier::remove) are idempotent: if one is cancelled its effect may or may not have happened,
/// and calling it again settles the matter.
#[derive(Debug, Clone)]
pub struct Barrier {
    client: Client,
    path: String,
    retry: RetryPolicy,
    listener: Option<Listener>,
}

impl Barrier {
    /// A barrier whose node is `path` (its parents are created as needed by [`set`](Barrier::set)).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path or is `/`.
    pub fn new(client: &Client, path: &str) -> Result<Barrier> {
        let path = crate::path::validate(path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "the root cannot be a barrier node",
            });
        }
        Ok(Barrier {
            client: client.clone(),
            path,
            retry: RetryPolicy::default(),
            listener: None,
        })
    }

    /// How operations are retried across connection loss.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Barrier {
        self.retry = retry;
        self
    }

    /// Receives [`QueueEvent::Waiting`] each time a waiter (re-)arms its watch on the barrier node and
    /// [`QueueEvent::Woken`] each time that watch fires.
    pub fn with_listener(mut self, listener: Listener) -> Barrier {
        self.listener = Some(listener);
        self
    }

    /// The barrier node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Closes the barrier: creates the node (and missing parents) as persistent nodes. Setting a barrier that is
    /// already set is fine.
    pub async fn set(&self) -> Result<()> {
        let mode = CreateMode::Persistent.with_acls(Acls::anyone_all());
        // `mkdir` is `mkdir -p`: it creates missing parents and treats an existing node as success, so retrying it
        // after a lost reply is harmless.
        self.retry.run(|| self.client.mkdir(&self.path, &mode)).await
    }

    /// Opens the barrier: deletes the node, releasing every waiter. Removing a barrier that is not set is fine.
    pub async fn remove(&self) -> Result<()> {
        match self.retry.run(|| self.client.delete(&self.path, None)).await {
            Ok(()) | Err(Error::ZooKeeper(zk::Error::NoNode)) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Whether the barrier is set right now.
    pub async fn is_set(&self) -> Result<bool> {
        Ok(self
            .retry
            .run(|| self.client.check_stat(&self.path))
            .await?
            .is_some())
    }

    /// Waits until the barrier node does not exist (returns at once if it is not set).
    ///
    /// Every notification — deletion, data change, re-creation — only makes the waiter look again, with a new
    /// watch; it returns when a look finds no node. A barrier removed and set again before the waiter looks
    /// therefore does not release it (it never saw the barrier open).
    pub async fn wait(&self) -> Result<()> {
        loop {
            let (stat, watcher) = self
                .retry
                .run(|| self.client.check_and_watch_stat(&self.path))
                .await?;
            if stat.is_none() {
                return Ok(());
            }
            Listener::emit(
                &self.listener,
                QueueEvent::Waiting {
                    on: self.path.clone(),
                },
            );
            let event = watcher.changed().await;
            if let Some(err) = session_error(&event) {
                return Err(err);
            }
            tracing::debug!(path = %self.path, event = ?event.event_type, "barrier watch fired; looking again");
            Listener::emit(
                &self.listener,
                QueueEvent::Woken {
                    by: self.path.clone(),
                },
            );
        }
    }

    /// Like [`wait`](Barrier::wait), but gives up with [`Error::Timeout`] after `timeout`.
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        tokio::time::timeout(timeout, self.wait())
            .await
            .map_err(|_| Error::Timeout)?
    }
}
