//! The ZooKeeper idioms the recipes share, each written once: a missing node as an answer rather than an error,
//! the end of the session in a watch notification, "our node is gone — deleted, or did our session end?" (asked of
//! the server), directories made persistent or as container nodes, deletes left to the background, and the one
//! wait for a watch ("changed → did the session end? → look again").
//!
//! The idioms a recipe calls are methods of its [`Session`](crate::Session) (`session.mkdir(…)`,
//! `session.delete_if_exists(…)`, `session.await_change(…)`), in `session/idioms.rs`, written on the free functions
//! here, which code that holds a client and a retry policy rather than a session calls (and which depend on no
//! session: the session itself uses them).

use std::future::Future;

use zookeeper_client::{self as zk, Acls, Client, CreateMode, EventType, OneshotWatcher, WatchedEvent};

pub(crate) use crate::base::error::session_ended;
use crate::base::error::{Error, Result};
use crate::base::retry::RetryPolicy;

/// Waits for `watcher` to fire ([`fired`]); the end of the session it reports is an error.
pub(crate) async fn changed(watcher: OneshotWatcher) -> Result<WatchedEvent> {
    let event = fired(watcher).await;
    match session_error(&event) {
        Some(err) => Err(err),
        None => Ok(event),
    }
}

/// The output of `future`, or [`Error::Timeout`] once `timeout` has passed (the future is dropped then): the
/// `_timeout` variant of a recipe's wait.
pub(crate) async fn timeout<T>(
    timeout: std::time::Duration,
    future: impl Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(timeout, future)
        .await
        .map_err(|_| Error::Timeout)?
}

/// The output of `future`, or never when there is none: a branch of a `select!` that may have nothing to wait for.
pub(crate) async fn or_pending<F: Future>(future: Option<F>) -> F::Output {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
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

/// The children of `dir` as the leader has them now (empty if it does not exist): a `sync` first, then the
/// listing. The look that decides whether a create whose reply was lost happened: after a reconnection to another
/// ensemble member, a plain listing there can miss a create that the leader ordered before our session moved (the
/// member has not applied its commit yet), and a node of ours that we did not find outlives our interest in it for as
/// long as our session lives: an orphan at the head of a queue stalls every contender behind it. `sync` passes
/// through the leader after that create, and its reply comes once this member has applied it. (A create the old
/// member forwards after our session moved is refused by the leader: the session has a new owner.)
pub(crate) async fn list_synced(client: &Client, retry: &RetryPolicy, dir: &str) -> Result<Vec<String>> {
    let listed = read_synced(client, retry, "getChildren", dir, || client.list_children(dir));
    Ok(listed.await?.unwrap_or_default())
}

/// `read` of `path` as the leader has it now (`None`: no node), in one round trip: a `sync` and the read sent back
/// to back. A server answers a session's requests in order, so the read waits for the sync, whose reply comes once
/// this ensemble member has applied every transaction the leader committed before it (as the lost signal's
/// heartbeat does, `node/lost.rs`).
pub(crate) async fn read_synced<T, F>(
    client: &Client,
    retry: &RetryPolicy,
    op: &'static str,
    path: &str,
    read: impl Fn() -> F,
) -> Result<Option<T>>
where
    F: Future<Output = std::result::Result<T, zk::Error>>,
{
    retry
        .run_at(op, path, || {
            // `zookeeper-client` sends a request when the method is called: the sync goes first.
            let (synced, read) = (client.sync(path), read());
            async move {
                match tokio::join!(synced, read) {
                    (Ok(()) | Err(zk::Error::NoNode), read) => read,
                    (Err(err), _) => Err(err),
                }
            }
        })
        .await
        .if_exists()
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
