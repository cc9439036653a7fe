//! The recipe-level idioms about our own node: "our node is gone — deleted by somebody, or did our session end?"
//! and the sweep of a duplicate of our node. They sit above [`crate::node::lost`] and [`crate::node::own`]; the plain
//! ZooKeeper idioms they use are in [`crate::base::idioms`].

use zookeeper_client::Client;

use crate::base::error::{session_ended, Error, Result};
use crate::base::idioms::{confirm_gone, delete_if_exists};
use crate::base::names::Contender;
use crate::base::path::child_path;
use crate::base::retry::RetryPolicy;
use crate::node::lost::{LostReason, LostSignal};
use crate::node::own::OwnNode;

/// Our node is gone: did our session end? The deletion of our ephemeral node can reach us before the news that
/// the session ended, so this looks at everything known without asking: the node's lost signal, then the client.
fn session_end_known(client: &Client, lost: &LostSignal) -> Option<Error> {
    match lost.lost_reason() {
        Some(reason @ (LostReason::SessionExpired | LostReason::ClientClosed)) => Some(reason.error("")),
        _ => session_ended(client.state()),
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

/// Deletes every node of ours among `contenders` but `node` itself, and returns the others (`node` included). A
/// second node of ours can only come from a create retried after a lost reply that did happen after all.
pub(crate) async fn sweep_duplicates(node: &OwnNode, contenders: Vec<Contender>) -> Result<Vec<Contender>> {
    let me = node.name.as_deref().unwrap_or_default();
    let duplicate = |c: &Contender| c.name != me && c.name.starts_with(&node.unique);
    // The common case, at every look at the queue: nothing to sweep, nothing to rebuild.
    if !contenders.iter().any(duplicate) {
        return Ok(contenders);
    }
    let mut kept = Vec::with_capacity(contenders.len());
    for contender in contenders {
        if duplicate(&contender) {
            let path = child_path(&node.dir, &contender.name);
            tracing::warn!(%path, "removing a duplicate node of ours");
            delete_if_exists(&node.client, &node.retry, &path, None).await?;
        } else {
            kept.push(contender);
        }
    }
    Ok(kept)
}
