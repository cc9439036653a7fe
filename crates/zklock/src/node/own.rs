//! Our node in a queue directory, and the promise that it never outlives our interest in it.
//!
//! An `OwnNode` exists from the moment our create request is sent. Until it is handed over to a guard and
//! released, dropping it — because an acquire future was cancelled or timed out at any await point, or failed —
//! deletes the node in the background. When the create reply was never seen, the node is found by our unique
//! prefix: requests of one session are processed in order, so a listing sent after the create sees it.
//!
//! The node also dismisses its lost signal's monitor (see `lost.rs`) *before* it sends its own delete, whichever way
//! the delete goes (`delete`, or `Drop`). Otherwise the monitor could take our own delete for somebody else's and
//! report a loss (with a warning) for a node its owner gave up: a guard drops its fields in declaration order, and
//! a monitor being polled on another worker thread runs on until it next yields, however promptly it is aborted.
//! Dismissal is a flag the monitor checks before it reports; our delete is sent after we set it, and the monitor
//! can only see the deletion after that.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use zookeeper_client::{self as zk, Client};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::path::child_path;
use crate::base::retry::RetryPolicy;
use crate::node::abandoned;
use crate::session::registry::Registration;
use crate::session::Session;

/// Our (possibly not yet confirmed) node in a queue directory.
#[derive(Debug)]
pub(crate) struct OwnNode {
    pub(crate) client: Client,
    /// The queue directory, e.g. `/locks/orders`.
    pub(crate) dir: String,
    /// `_c_<uuid>-`: identifies our node among all children.
    pub(crate) unique: String,
    /// The child name, once the create has been confirmed.
    pub(crate) name: Option<String>,
    pub(crate) sequence: i64,
    pub(crate) czxid: i64,
    pub(crate) retry: RetryPolicy,
    /// While armed, dropping deletes the node.
    armed: bool,
    /// Dismisses the node's lost signal; cancelled before we delete the node ourselves.
    monitor: Option<CancellationToken>,
    /// Our entry among the session's live nodes (what `Session::close` deletes); cancelled once it is closed.
    _registered: Registration,
    closed: CancellationToken,
}

impl OwnNode {
    /// Our node `dir`/`unique…` on `session`; [`Error::Closed`](crate::Error::Closed) once the session has been
    /// closed ([`Session::close`]).
    pub(crate) fn new(session: &Session, dir: &str, unique: String) -> Result<OwnNode> {
        let registry = session.registry();
        Ok(OwnNode {
            client: session.client().clone(),
            dir: dir.to_owned(),
            _registered: registry.register(dir, &unique)?,
            closed: registry.closed(),
            unique,
            name: None,
            sequence: -1,
            czxid: -1,
            retry: session.retry().clone(),
            armed: true,
            monitor: None,
        })
    }

    /// Cancelled once the session has been closed ([`Session::close`] deletes this node).
    pub(crate) fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// From now on, `monitor` (a lost signal's dismissal) is cancelled before we delete the node ourselves.
    pub(crate) fn dismisses(&mut self, monitor: CancellationToken) {
        self.monitor = Some(monitor);
    }

    /// Tells our lost signal's monitor that the deletion it is about to see is ours.
    fn dismiss_monitor(&self) {
        if let Some(monitor) = &self.monitor {
            monitor.cancel();
        }
    }

    /// The full path of the node (only meaningful once confirmed).
    pub(crate) fn path(&self) -> String {
        child_path(&self.dir, self.name.as_deref().unwrap_or_default())
    }

    /// Deletes the node now and waits for it (idempotent: a node already gone is fine).
    ///
    /// The node stays armed until the delete is confirmed: if this future is dropped half-way (say, by a caller's
    /// timeout while a retry sleeps) or fails, `Drop` goes on deleting in the background.
    pub(crate) async fn delete(mut self) -> Result<()> {
        self.dismiss_monitor();
        delete_own(
            &self.client,
            &self.dir,
            &self.unique,
            self.name.as_deref(),
            &self.retry,
        )
        .await?;
        tracing::trace!(target: "zklock::timeline", session = self.client.session_id().0, "deleted");
        self.armed = false;
        Ok(())
    }

    /// The node is gone by a write of ours (a transaction that deleted it with other nodes): nothing is left to
    /// delete.
    pub(crate) fn deleted(mut self) {
        self.dismiss_monitor();
        self.armed = false;
    }
}

impl Drop for OwnNode {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Before the delete is sent (see the module documentation).
        self.dismiss_monitor();
        // Without a runtime there is nobody to send the delete; the node then lives until the session ends.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(dir = %self.dir, "no tokio runtime to remove our node; it goes when the session ends");
            return;
        };
        let (client, dir, unique, name, retry) = (
            self.client.clone(),
            self.dir.clone(),
            self.unique.clone(),
            self.name.clone(),
            self.retry.clone(),
        );
        // `zookeeper-client` sends a request when the method is called, not when its future is polled: sending
        // the delete right here orders it before anything this session sends later (such as the next acquire of
        // the same lock), and only the wait for the reply happens in the background.
        let first = name
            .as_deref()
            .map(|name| client.delete(&child_path(&dir, name), None));
        // Until the delete has ended, a new attempt of this process in this directory can wait for it (see
        // `abandoned.rs`); registered before this drop returns.
        let pending = abandoned::register(&dir);
        let path = child_path(&dir, name.as_deref().unwrap_or(&unique));
        let started = Arc::new(AtomicBool::new(false));
        let task = runtime.spawn({
            let started = Arc::clone(&started);
            async move {
                started.store(true, Ordering::Release);
                let _pending = pending;
                let result = match first {
                    Some(first) => match first.await {
                        Ok(()) | Err(zk::Error::NoNode) => Ok(()),
                        // The delete may or may not have happened: go the careful way.
                        Err(err) if crate::base::retry::is_connection_loss(&err) => {
                            delete_own(&client, &dir, &unique, name.as_deref(), &retry).await
                        }
                        Err(err) => Err(Error::zk(
                            "delete",
                            &child_path(&dir, name.as_deref().unwrap_or(&unique)),
                            err,
                        )),
                    },
                    None => delete_own(&client, &dir, &unique, name.as_deref(), &retry).await,
                };
                match (result, name) {
                    (Ok(()), _) => {}
                    // Our client gave up the session; the server may not have (see `abandoned.rs`).
                    (Err(err), Some(name)) if err.is_terminal() => abandoned::orphan(&dir, &name),
                    (Err(err), _) => tracing::debug!(%dir, %err, "background removal of our node failed"),
                }
            }
        });
        // A runtime that is shutting down (say, the guard was held by a task that the shutdown drops) cancels a
        // task spawned now before it ever runs — and the client's own task, which would send our delete, is gone
        // too: nothing can delete the node before the session ends. Say so.
        if task.is_finished() && !started.load(Ordering::Acquire) {
            tracing::warn!(
                %path,
                "the tokio runtime is shutting down, so our node cannot be deleted now: it stays until the \
                 ZooKeeper session ends (close the Session before the runtime shuts down to delete it at once)"
            );
        }
    }
}

/// Deletes our node by name or, if the name is unknown, every child carrying our unique prefix.
async fn delete_own(
    client: &Client,
    dir: &str,
    unique: &str,
    name: Option<&str>,
    retry: &RetryPolicy,
) -> Result<()> {
    let names = match name {
        Some(name) => vec![name.to_owned()],
        None => idioms::list_or_empty(client, retry, dir)
            .await?
            .into_iter()
            .filter(|c| c.starts_with(unique))
            .collect(),
    };
    for name in names {
        idioms::delete_if_exists(client, retry, &child_path(dir, &name), None).await?;
    }
    Ok(())
}
