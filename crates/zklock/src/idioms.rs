//! The ZooKeeper idioms the recipes share, each written once: a missing node as an answer rather than an error,
//! the end of the session in a watch notification, "our node is gone — deleted, or did our session end?" (asked of
//! the server), directories made persistent or as container nodes, deletes left to the background, and the one
//! wait for a watch ("changed → did the session end? → look again").
//!
//! The idioms a recipe calls are methods of its [`Session`] (`session.mkdir(…)`, `session.delete_if_exists(…)`,
//! `session.await_change(…)`), in the `impl Session` block below; the free functions are the same for code that
//! holds a client and a retry policy rather than a session.

use std::future::Future;

use zookeeper_client::{self as zk, Acls, Client, CreateMode, EventType, OneshotWatcher, Stat, WatchedEvent};

pub(crate) use crate::error::session_ended;
use crate::error::{At as _, Error, Result};
use crate::events::QueueEvent;
use crate::retry::RetryPolicy;
use crate::session::Session;

/// The idioms as methods of the session context: every recipe holds a [`Session`], so none passes a client and a
/// retry policy around.
impl Session {
    /// Creates `dir` and its missing parents (`mkdir -p`) with the session's
    /// [`parent_acls`](Session::parent_acls): `CreateMode::Persistent`, or `CreateMode::Container` for queue
    /// directories the server may delete when they are empty again (see [`mkdir_containers`]). Existing nodes are
    /// fine; `/` exists.
    pub(crate) async fn mkdir(&self, dir: &str, mode: CreateMode) -> Result<()> {
        if dir == "/" {
            return Ok(());
        }
        if mode == CreateMode::Container {
            return mkdir_containers(self.client(), self.retry(), dir, self.parent_acls()).await;
        }
        let options = mode.with_acls(self.parent_acls());
        let client = self.client();
        self.retry()
            .run_at("create", dir, || client.mkdir(dir, &options))
            .await
    }

    /// Deletes `path` (only at `version`, if given); a node already gone is fine.
    pub(crate) async fn delete_if_exists(&self, path: &str, version: Option<i32>) -> Result<()> {
        delete_if_exists(self.client(), self.retry(), path, version).await
    }

    /// Deletes `path` (any version) in the background — a receipt whose write is settled, say: the request is
    /// sent now, only its reply (and, after a connection loss, a retry) is awaited later. A node that cannot be
    /// deleted is left to the end of the session if it is ephemeral; `what` names it in the debug log.
    pub(crate) fn delete_in_background(&self, path: &str, what: &'static str) {
        let delete = self.client().delete(path, None);
        let (session, path) = (self.clone(), path.to_owned());
        tokio::spawn(async move {
            let result = match delete.await {
                Err(err) if crate::retry::is_connection_loss(&err) => {
                    session.delete_if_exists(&path, None).await
                }
                other => other.at("delete", &path).if_exists().map(drop),
            };
            if let Err(err) = result {
                tracing::debug!(%path, %err, "removing {what} failed");
            }
        });
    }

    /// The children of `dir`; empty if it does not exist.
    pub(crate) async fn list_or_empty(&self, dir: &str) -> Result<Vec<String>> {
        list_or_empty(self.client(), self.retry(), dir).await
    }

    /// The stat of `path`; `None` if it does not exist.
    pub(crate) async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let client = self.client();
        self.retry()
            .run_at("exists", path, || client.check_stat(path))
            .await
    }

    /// The data and stat of `path`; `None` if it does not exist.
    pub(crate) async fn get(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        let client = self.client();
        self.retry()
            .run_at("getData", path, || client.get_data(path))
            .await
            .if_exists()
    }

    /// The stat of `path` (`None`: it does not exist) and a watch that fires when it is created, changed or deleted.
    pub(crate) async fn watch_exists(&self, path: &str) -> Result<(Option<Stat>, OneshotWatcher)> {
        let client = self.client();
        self.retry()
            .run_at("exists", path, || client.check_and_watch_stat(path))
            .await
    }

    /// The one wait of every recipe: tells the listener we wait `on` a node, waits for `watcher` to fire, fails if
    /// the notification says the session ended, and tells the listener we were woken. Whatever else the
    /// notification says, the caller looks again: a notification is a reason to look, never an answer.
    pub(crate) async fn await_change(&self, watcher: OneshotWatcher, on: &str) -> Result<WatchedEvent> {
        self.emit(QueueEvent::Waiting { on: on.to_owned() });
        let event = changed(watcher).await?;
        self.emit(QueueEvent::Woken { by: on.to_owned() });
        Ok(event)
    }
}

/// Waits for `watcher` to fire ([`fired`]); the end of the session it reports is an error.
pub(crate) async fn changed(watcher: OneshotWatcher) -> Result<WatchedEvent> {
    let event = fired(watcher).await;
    match session_error(&event) {
        Some(err) => Err(err),
        None => Ok(event),
    }
}

/// The parent of a path other than `/` (`/` for a top-level node).
pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(at) => &path[..at],
    }
}

/// `NoNode` as an answer: for reads and deletes of nodes that may be gone, that is not an error.
pub(crate) trait IfExists<T> {
    /// `Some` with the value when the node was there, `None` when ZooKeeper answered `NoNode`; any other error
    /// stays an error.
    fn if_exists(self) -> Result<Option<T>>;
}

impl<T> IfExists<T> for Result<T> {
    fn if_exists(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(Error::ZooKeeper {
                source: zk::Error::NoNode,
                ..
            }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// The children of `dir`; empty if it does not exist.
pub(crate) async fn list_or_empty(client: &Client, retry: &RetryPolicy, dir: &str) -> Result<Vec<String>> {
    Ok(retry
        .run_at("getChildren", dir, || client.list_children(dir))
        .await
        .if_exists()?
        .unwrap_or_default())
}

/// Creates the queue directory `dir` and every missing parent as **container** nodes with `acls`, like Curator's
/// `creatingParentContainersIfNeeded`: the server deletes a container once it has had children and has none left
/// (ZooKeeper 3.5+ and the embedded server check every `znode.container.checkIntervalMs`, a minute by default), so
/// lock directories go by themselves when their last contender leaves, and so do the parents this created once
/// their last directory has gone. Nodes that exist already are left as they are (a persistent parent stays).
///
/// A server without containers (before 3.5) answers `Unimplemented`: then they are made persistent, as before, and
/// `zklock reap` removes them when empty.
///
/// The directory can vanish again between this and our create in it (a used, empty container is deleted by the
/// server's next sweep): the create then fails with `NoNode` and the caller comes back here. A container created
/// here, unused yet, is never deleted by a sweep, so that does not repeat.
pub(crate) async fn mkdir_containers(
    client: &Client,
    retry: &RetryPolicy,
    dir: &str,
    acls: Acls<'_>,
) -> Result<()> {
    let containers = CreateMode::Container.with_acls(acls);
    match retry
        .run_at("create", dir, || client.mkdir(dir, &containers))
        .await
    {
        Err(Error::ZooKeeper {
            source: zk::Error::Unimplemented,
            ..
        }) => {
            tracing::debug!(%dir, "the server has no container nodes: creating persistent directories");
            let persistent = CreateMode::Persistent.with_acls(acls);
            retry
                .run_at("create", dir, || client.mkdir(dir, &persistent))
                .await
        }
        made => made,
    }
}

/// Deletes `path` (only at `version`, if given); a node already gone is fine.
pub(crate) async fn delete_if_exists(
    client: &Client,
    retry: &RetryPolicy,
    path: &str,
    version: Option<i32>,
) -> Result<()> {
    retry
        .run_at("delete", path, || client.delete(path, version))
        .await
        .if_exists()
        .map(drop)
}

/// The error a watch notification carries, if it reports the end of the session (a one-shot watcher also fires on
/// expiry and closing; connection loss alone is not reported, the watch survives reconnection).
pub(crate) fn session_error(event: &WatchedEvent) -> Option<Error> {
    if event.event_type != EventType::Session {
        return None;
    }
    session_ended(event.session_state)
}

/// Our node at `path` is gone: deleted by somebody, or did our session end? One more request tells: on a dead
/// session it fails with [`Error::SessionExpired`] or [`Error::Closed`]; on a live one somebody deleted our node
/// ([`Error::NodeDeleted`]).
pub(crate) async fn confirm_gone(client: &Client, retry: &RetryPolicy, path: &str) -> Error {
    match retry.run_at("exists", path, || client.check_stat(path)).await {
        Err(err) if err.is_terminal() => err,
        _ => Error::NodeDeleted {
            path: path.to_owned(),
        },
    }
}

/// Waits for a one-shot watch to fire. Use it for every watch instead of `OneshotWatcher::changed`.
///
/// `zookeeper-client` 0.11 unwraps the watch's channel (`session/watch.rs`, `OneshotReceiver::recv`): a watcher
/// polled after the client's session task was dropped panics with "called `Result::unwrap()` on an `Err` value:
/// Canceled". That happens while a tokio runtime shuts down: the shutdown drops the session task, which wakes every
/// task waiting on a watch, and a worker that has not seen the shutdown yet polls one (1 in about 30 shutdowns with
/// held guards, `tests/runtime_shutdown.rs`). tokio marks its task list closed before it drops the first task, so a
/// task woken by that drop finds the runtime shutting down when it looks: it then waits for its own drop instead of
/// polling the watcher.
pub(crate) async fn fired(watcher: zk::OneshotWatcher) -> WatchedEvent {
    let mut changed = std::pin::pin!(watcher.changed());
    std::future::poll_fn(|cx| {
        if runtime_shutting_down() {
            return std::task::Poll::Pending;
        }
        changed.as_mut().poll(cx)
    })
    .await
}

/// Whether the current tokio runtime is shutting down: a task spawned now is then cancelled before it ever runs.
pub(crate) fn runtime_shutting_down() -> bool {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let ran = Arc::new(AtomicBool::new(false));
    let probe = runtime.spawn({
        let ran = Arc::clone(&ran);
        async move { ran.store(true, Ordering::Release) }
    });
    probe.is_finished() && !ran.load(Ordering::Acquire)
}
