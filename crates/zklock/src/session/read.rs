//! Reading nodes that other sessions made: the data and stat of one node or many at once, and a node read and
//! watched in one request — each telling "gone" (`None`) apart from "not ours to read" (data `None`, the stat from
//! `exists`, which ZooKeeper answers without checking the ACL). The engine, the recipes and the inspection read
//! through these.

use zookeeper_client::{self as zk, Client, OneshotWatcher, Stat};

use crate::base::error::{At as _, Error, Result};
use crate::base::idioms::IfExists;
use crate::base::path::child_path;
use crate::base::retry::{is_connection_loss, RetryPolicy};
use crate::session::Session;

/// Reads the data and stat of the children `names` of `dir`: all requests are sent at once (ZooKeeper answers them
/// in order on the one session), each retried on its own after a connection loss. `None` for a node gone since
/// the listing; data `None` for a node whose data our session may not read (see [`unreadable`]).
pub(crate) async fn read_nodes(
    session: &Session,
    dir: &str,
    names: &[&str],
) -> Result<Vec<Option<(Option<Vec<u8>>, Stat)>>> {
    let (client, retry) = (session.client(), session.retry());
    let paths: Vec<String> = names.iter().map(|name| child_path(dir, name)).collect();
    // `zookeeper-client` sends a request when the method is called: these are all on their way now.
    let reads: Vec<_> = paths.iter().map(|path| client.get_data(path)).collect();
    let mut nodes = Vec::with_capacity(reads.len());
    for (path, read) in paths.iter().zip(reads) {
        let read = match read.await {
            Err(err) if is_connection_loss(&err) => {
                retry.run_at("getData", path, || client.get_data(path)).await
            }
            other => other.at("getData", path),
        };
        let node = match read {
            Err(err) if is_no_auth(&err) => unreadable(client, retry, path).await?,
            read => read.if_exists()?.map(|(data, stat)| (Some(data), stat)),
        };
        nodes.push(node);
    }
    Ok(nodes)
}

/// Reads one node like [`read_nodes`]: `None` when it is gone, data `None` when our session may not read it.
pub(crate) async fn read_node(
    client: &Client,
    retry: &RetryPolicy,
    path: &str,
) -> Result<Option<(Option<Vec<u8>>, Stat)>> {
    match retry.run_at("getData", path, || client.get_data(path)).await {
        Err(err) if is_no_auth(&err) => unreadable(client, retry, path).await,
        read => Ok(read.if_exists()?.map(|(data, stat)| (Some(data), stat))),
    }
}

/// Reads the child `name` of `dir` like [`read_node`] and watches it: the watcher fires when the node is deleted
/// or changed. A node whose data our session may not read cannot be watched itself — ZooKeeper sends a node's
/// watch events only to sessions allowed to read it (3.8; the embedded server alike) — so then `dir` is watched
/// instead, with a child watch: it fires when any child comes or goes (a waiter behind an unreadable node wakes for
/// every change in the queue, not only its predecessor's going; it looks again and waits again).
pub(crate) async fn read_and_watch_node(
    client: &Client,
    retry: &RetryPolicy,
    dir: &str,
    name: &str,
) -> Result<Option<(Option<Vec<u8>>, Stat, OneshotWatcher)>> {
    let path = child_path(dir, name);
    match retry
        .run_at("getData", &path, || client.get_and_watch_data(&path))
        .await
    {
        Err(err) if is_no_auth(&err) => {
            tracing::debug!(%path, "no permission to read the node: watching its directory instead");
            let Some((children, watcher)) = retry
                .run_at("getChildren", dir, || client.list_and_watch_children(dir))
                .await
                .if_exists()?
            else {
                return Ok(None);
            };
            if !children.iter().any(|child| child == name) {
                return Ok(None);
            }
            // Gone since the listing: the child watch has fired (or will), and `None` says so at once.
            Ok(unreadable(client, retry, &path)
                .await?
                .map(|(data, stat)| (data, stat, watcher)))
        }
        read => Ok(read
            .if_exists()?
            .map(|(data, stat, watcher)| (Some(data), stat, watcher))),
    }
}

/// A node whose data ZooKeeper would not give us (`NoAuth`): its stat alone, from `exists`, which ZooKeeper
/// answers without checking the node's ACL — the contender's session, fencing token and creation time stay known.
async fn unreadable(
    client: &Client,
    retry: &RetryPolicy,
    path: &str,
) -> Result<Option<(Option<Vec<u8>>, Stat)>> {
    tracing::debug!(%path, "no permission to read the node's data");
    Ok(retry
        .run_at("exists", path, || client.check_stat(path))
        .await?
        .map(|stat| (None, stat)))
}

/// ZooKeeper's answer to a read the node's ACL does not allow.
fn is_no_auth(err: &Error) -> bool {
    matches!(
        err,
        Error::ZooKeeper {
            source: zk::Error::NoAuth,
            ..
        }
    )
}
