//! Taking our place in a queue directory: our ephemeral-sequential node created (with missing parents) and pipelined
//! with the first listing, and found again by its unique prefix after a lost create reply.

use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::names::{self, Contender, Marker};
use crate::base::path::child_path;
use crate::base::retry::{is_connection_loss, Attempts};
use crate::node::own::OwnNode;
use crate::session::Session;

/// Creates our ephemeral-sequential node (and missing parents), pipelined with the first listing (`None` when
/// the node had to be found again after a lost reply). Recipes that are not a plain queue (the semaphore's lease)
/// get the same lost-reply recovery and cancellation safety through [`acquire`] with rules of their own.
pub(crate) async fn enqueue(
    session: &Session,
    dir: &str,
    marker: Marker,
    data: &[u8],
) -> Result<(OwnNode, Option<Vec<String>>)> {
    let session = &session.pinned();
    let (client, retry) = (session.client(), session.retry());
    let unique = names::unique_prefix(&uuid::Uuid::new_v4());
    let prefix = format!("{}{}", child_path(dir, &unique), marker.as_str());
    let mut node = OwnNode::new(session, dir, unique)?;
    let mode = CreateMode::EphemeralSequential.with_acls(session.acls());
    // Creates sent so far (each ended in `NoNode` or a connection loss; `pause` counts the latter).
    let mut attempt = Attempts::default();
    loop {
        let create = client.create(&prefix, data, &mode);
        let listing = client.list_children(dir);
        let Some((created, listed)) = retry
            .within(&attempt, async { tokio::join!(create, listing) })
            .await
        else {
            return Err(attempt.timed_out());
        };
        match created {
            Ok((stat, sequence)) => {
                node.name = Some(format!("{}{}{sequence}", node.unique, marker.as_str()));
                node.sequence = sequence.into_i64();
                node.czxid = stat.czxid;
                return Ok((node, listed.ok()));
            }
            // No directory: never made, or a container deleted by the server since (also between our `mkdir` and
            // this create). Make it (again) and retry.
            Err(zk::Error::NoNode) => {
                attempt.count_one();
                idioms::mkdir_containers(client, retry, dir, session.parent_acls()).await?;
            }
            Err(err) if is_connection_loss(&err) => {
                retry.pause(&mut attempt).await?;
                if find_own(&mut node).await? {
                    return Ok((node, None));
                }
            }
            Err(err) => return Err(Error::zk("create", &prefix, err)),
        }
    }
}

/// After a create whose reply was lost: did it happen? (A listing after `sync`: see [`idioms::list_synced`].)
async fn find_own(node: &mut OwnNode) -> Result<bool> {
    let (client, retry) = (&node.client, &node.retry);
    // A missing directory holds no node of ours.
    let children = idioms::list_synced(client, retry, &node.dir).await?;
    let mut mine: Vec<Contender> = names::sorted_contenders(children, |_| true);
    mine.retain(|c| c.name.starts_with(&node.unique));
    let Some(first) = mine.first() else {
        return Ok(false);
    };
    let path = child_path(&node.dir, &first.name);
    match retry.run_at("exists", &path, || client.check_stat(&path)).await? {
        Some(stat) => {
            tracing::info!(%path, "found our node after a lost create reply");
            node.name = Some(first.name.clone());
            node.sequence = first.sequence;
            node.czxid = stat.czxid;
            Ok(true)
        }
        None => Ok(false),
    }
}
