//! The ZooKeeper idioms the recipes share, each written once: a missing node as an answer rather than an error,
//! the end of the session in a watch notification, "our node is gone — deleted, or did our session end?", and the
//! sweep of duplicate nodes of ours.

use zookeeper_client::{self as zk, Client, EventType, SessionState, WatchedEvent};

use crate::error::{Error, Result};
use crate::retry::RetryPolicy;

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
            Err(Error::ZooKeeper(zk::Error::NoNode)) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

impl<T> IfExists<T> for std::result::Result<T, zk::Error> {
    fn if_exists(self) -> Result<Option<T>> {
        self.map_err(Error::from).if_exists()
    }
}

/// The children of `dir`; empty if it does not exist.
pub(crate) async fn list_or_empty(client: &Client, retry: &RetryPolicy, dir: &str) -> Result<Vec<String>> {
    Ok(retry
        .run(|| client.list_children(dir))
        .await
        .if_exists()?
        .unwrap_or_default())
}

/// Deletes `path` (only at `version`, if given); a node already gone is fine.
pub(crate) async fn delete_if_exists(
    client: &Client,
    retry: &RetryPolicy,
    path: &str,
    version: Option<i32>,
) -> Result<()> {
    retry
        .run(|| client.delete(path, version))
        .await
        .if_exists()
        .map(drop)
}

/// The error for a session in `state`, if the session has ended: expired, or closed (also by failed
/// authentication). A disconnection is no end: the session may survive it.
pub(crate) fn session_ended(state: SessionState) -> Option<Error> {
    match state {
        SessionState::Expired => Some(Error::SessionExpired),
        SessionState::Closed | SessionState::AuthFailed => Some(Error::Closed),
        _ => None,
    }
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
    match retry.run(|| client.check_stat(path)).await {
        Err(err) if err.is_terminal() => err,
        _ => Error::NodeDeleted {
            path: path.to_owned(),
        },
    }
}
