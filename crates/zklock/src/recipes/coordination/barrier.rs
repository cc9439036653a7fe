//! The barrier of the design documents: processes wait until a barrier node is deleted.
//!
//! A coordinator [`set`](Barrier::set)s the barrier (creates a persistent node), workers [`wait`](Barrier::wait)
//! on it, and the coordinator [`remove`](Barrier::remove)s it to let everybody through at once. A waiter follows
//! the node with a node cache ([`Cache::node`]: a read after each change): only a view without the node releases
//! it, so a data change of the node or any other wake-up never lets a waiter through early.

use std::time::Duration;

use zookeeper_client::CreateMode;

use crate::base::error::{Error, Result};
use crate::cache::Cache;
use crate::session::Session;

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
/// [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps attempts; [`Error::Timeout`]
/// from [`wait_timeout`](Barrier::wait_timeout); [`Error::ZooKeeper`] for anything else the server refuses (for
/// example `NotEmpty` when removing a barrier node that has children, or `NoAuth`).
///
/// # Events
/// The [`Session`]'s listener receives [`QueueEvent::Waiting`](crate::QueueEvent::Waiting) each time a waiter
/// starts waiting for a change of the barrier node and [`QueueEvent::Woken`](crate::QueueEvent::Woken) at each
/// change.
///
/// # Cancellation safety
/// [`wait`](Barrier::wait) creates nothing, so dropping it at any point leaves nothing behind. [`set`](Barrier::set)
/// and [`remove`](Barrier::remove) are idempotent: if one is cancelled its effect may or may not have happened,
/// and calling it again settles the matter.
#[derive(Debug, Clone)]
pub struct Barrier {
    session: Session,
    path: String,
}

impl Barrier {
    /// A barrier whose node is `path` (its parents are created as needed by [`set`](Barrier::set)), on `session`
    /// — a [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path or is `/`.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<Barrier> {
        let path = crate::base::path::validate(path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "the root cannot be a barrier node",
            });
        }
        Ok(Barrier {
            session: session.into(),
            path,
        })
    }

    /// The barrier node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The session and policies this barrier uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Closes the barrier: creates the node (with the session's [`acls`](Session::acls)) and its missing parents
    /// (with its [`parent_acls`](Session::parent_acls)) as persistent nodes. Setting a barrier that is already
    /// set is fine.
    pub async fn set(&self) -> Result<()> {
        // An existing node is success — set already, or by our own create whose reply was lost.
        let parents = Some(CreateMode::Persistent);
        self.session
            .create_persistent(&self.path, &[], parents)
            .await
            .map(drop)
    }

    /// Opens the barrier: deletes the node, releasing every waiter. Removing a barrier that is not set is fine.
    pub async fn remove(&self) -> Result<()> {
        self.session.delete_if_exists(&self.path, None).await
    }

    /// Whether the barrier is set right now.
    pub async fn is_set(&self) -> Result<bool> {
        Ok(self.session.exists(&self.path).await?.is_some())
    }

    /// Waits until the barrier node does not exist (returns at once if it is not set).
    ///
    /// Every change of the node — deletion, data change, re-creation — is followed by a read, and only a read that
    /// finds no node releases the waiter. A barrier removed and set again before that read therefore does not
    /// release it (it never saw the barrier open).
    pub async fn wait(&self) -> Result<()> {
        // Open already: one request, no watch.
        if !self.is_set().await? {
            return Ok(());
        }
        let view = Cache::node(&self.session, &self.path)?.start();
        view.wait_for(|view| view.get(&self.path).is_none().then_some(()))
            .await
    }

    /// Like [`wait`](Barrier::wait), but gives up with [`Error::Timeout`] after `timeout`.
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        crate::base::idioms::timeout(timeout, self.wait()).await
    }
}
