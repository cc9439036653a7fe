//! The ZooKeeper idioms the recipes share, each written once: a missing node as an answer rather than an error,
//! the end of the session in a watch notification, "our node is gone — deleted, or did our session end?", and the
//! sweep of duplicate nodes of ours.

use zookeeper_client::{self as zk, Client, EventType, SessionState, WatchedEvent};

use crate::error::{Error, Result};
use crate::lost::{LostReason, LostSignal};
use crate::node::Contender;
use crate::own_node::OwnNode;
use crate::path::child_path;
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

/// Our node is gone: did our session end? The deletion of our ephemeral node can reach us before the news that
/// the session ended, so this looks at everything known without asking: the node's lost signal, then the client.
fn session_end_known(client: &Client, lost: &LostSignal) -> Option<Error> {
    match lost.reason() {
        Some(LostReason::SessionExpired) => Some(Error::SessionExpired),
        Some(LostReason::ClientClosed) => Some(Error::Closed),
        _ if client.state() == SessionState::Expired => Some(Error::SessionExpired),
        _ => None,
    }
}

/// The error for a wait that found our node gone, from what is known without asking: the end of the session if
/// it is known to have ended, [`Error::NodeDeleted`] otherwise.
pub(crate) fn node_gone(node: &OwnNode, lost: &LostSignal) -> Error {
    session_end_known(&node.client, lost).unwrap_or_else(|| Error::NodeDeleted { path: node.path() })
}

/// Like [`node_gone`], but when nothing is known yet one more request decides (see [`confirm_gone`]).
pub(crate) async fn vanished(client: &Client, retry: &RetryPolicy, lost: &LostSignal, path: &str) -> Error {
    match session_end_known(client, lost) {
        Some(err) => err,
        None => confirm_gone(client, retry, path).await,
    }
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

/// Deletes every node of ours among `contenders` but `node` itself, and returns the others (`node` included). A
/// second node of ours can only come from a create retried after a lost reply that did happen after all.
pub(crate) async fn sweep_duplicates(node: &OwnNode, contenders: Vec<Contender>) -> Result<Vec<Contender>> {
    let me = node.name.as_deref().unwrap_or_default();
    let mut kept = Vec::with_capacity(contenders.len());
    for contender in contenders {
        if contender.name != me && contender.name.starts_with(&node.unique) {
            let path = child_path(&node.dir, &contender.name);
            tracing::warn!(%path, "removing a duplicate node of ours");
            delete_if_exists(&node.client, &node.retry, &path, None).await?;
        } else {
            kept.push(contender);
        }
    }
    Ok(kept)
}
