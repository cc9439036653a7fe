//! The one protected create of the recipes outside the lock queues: [`Session::create_once`] creates nodes once
//! (making missing parents when asked), and [`Session::create_own`] creates **our node** — a name nobody else
//! uses — as an [`OwnNode`] that is deleted if we give up at any point, alone or in one transaction with other
//! writes. A connection lost during the create is settled by finding our node (the receipt of
//! [`Session::commit_once`]): made now, already ours (an earlier attempt whose reply was lost), or refused because
//! of somebody else; the end of the session is an error. The lock queues' create (sequential nodes found by their
//! `_c_<uuid>-` marker) is `contention.rs`'s.

use std::future::Future;

use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::node::own::OwnNode;
use crate::session::cas::{Committed, Write};
use crate::session::Session;

/// What [`Session::create_own`] did.
#[derive(Debug)]
pub(crate) enum Own {
    /// Our node exists (made now or by an earlier attempt of this call), with every write before it.
    Made(Box<OwnNode>),
    /// ZooKeeper refused write number `index` (ours is the last) with `error`, because of somebody else.
    Refused { index: usize, error: zk::Error },
}

impl Own {
    /// Our node; a refusal (of a create without a refusal the caller answers itself) as the error about `path`.
    pub(crate) fn made(self, path: &str) -> Result<OwnNode> {
        match self {
            Own::Made(node) => Ok(*node),
            Own::Refused { error, .. } => Err(Error::zk("create", path, error)),
        }
    }
}

impl OwnNode {
    /// Our node `dir`/`name`, named before its create is sent: if we give up at any point, the delete by name goes
    /// out after the create on the same session, so it is processed after it.
    pub(crate) fn named(session: &Session, dir: &str, name: &str) -> Result<OwnNode> {
        let mut node = OwnNode::new(session, dir, name.to_owned())?;
        node.name = Some(name.to_owned());
        Ok(node)
    }
}

/// Whether making `dir` with its parents makes `parent`: it is `dir` or one of its ancestors.
fn makes(dir: &str, parent: &str) -> bool {
    parent == "/"
        || dir
            .strip_prefix(parent)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Session {
    /// Creates `writes` once ([`Session::commit_once`]; `receipt`: the last is a node of ours whose presence
    /// settles a lost reply). `parents`: when ZooKeeper answers that the parent of the first write is missing,
    /// make it and its missing parents in this mode ([`Session::mkdir`]) and try again; `None`: that is a
    /// refusal for the caller.
    pub(crate) async fn create_once(
        &self,
        writes: &[Write<'_>],
        receipt: bool,
        parents: Option<CreateMode>,
    ) -> Result<Committed> {
        let first = writes.first().map_or("/", Write::path);
        let dir = parents.map(|mode| (idioms::parent_of(first), mode));
        self.create_once_in(writes, receipt, dir).await
    }

    /// [`create_once`](Session::create_once), making `dir` (and its missing parents) in its mode whenever ZooKeeper
    /// answers that the parent of a create is missing which that makes: `dir` itself or one of its ancestors (a
    /// queue's item and its receipt in `<queue>/receipts`, say).
    pub(crate) async fn create_once_in(
        &self,
        writes: &[Write<'_>],
        receipt: bool,
        dir: Option<(&str, CreateMode)>,
    ) -> Result<Committed> {
        // One ZooKeeper session from the first request to the last (see `Session::pinned`).
        let this = &self.pinned();
        loop {
            let committed = this.commit_once(writes, receipt).await?;
            let missing = match &committed {
                Committed::Refused {
                    index,
                    error: zk::Error::NoNode,
                } => match writes.get(*index) {
                    Some(Write::Create(path, ..)) => {
                        dir.filter(|(dir, _)| makes(dir, idioms::parent_of(path)))
                    }
                    _ => None,
                },
                _ => None,
            };
            match missing {
                Some((dir, mode)) => this.mkdir(dir, mode).await?,
                None => return Ok(committed),
            }
        }
    }

    /// Creates our ephemeral node `dir`/`name` holding `data` (`name` must be ours alone: a uuid in it), after
    /// `before` in one transaction; `parents` as in [`create_once`](Session::create_once). The node is armed from
    /// the start: dropping this future, or the [`OwnNode`] it returns, deletes it.
    pub(crate) async fn create_own(
        &self,
        dir: &str,
        name: &str,
        data: &[u8],
        before: &[Write<'_>],
        parents: Option<CreateMode>,
    ) -> Result<Own> {
        // One ZooKeeper session from the first request to the last (see `Session::pinned`).
        let this = &self.pinned();
        this.settle_own(OwnNode::named(self, dir, name)?, data, before, parents)
            .await
    }

    /// [`create_own`](Session::create_own) of our node `path` alone, with its first create sent before this returns:
    /// what the caller sends next is processed after it. The future settles it as `create_own` does; its `bool`:
    /// the node was made by that first create (so requests sent right after it see it).
    pub(crate) fn send_own<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        parents: Option<CreateMode>,
    ) -> Result<impl Future<Output = Result<(Own, bool)>> + 'a> {
        let (dir, name) = path.rsplit_once('/').unwrap_or_default();
        let mut node = OwnNode::named(self, if dir.is_empty() { "/" } else { dir }, name)?;
        let first = self
            .client()
            .create(path, data, &CreateMode::Ephemeral.with_acls(self.acls()));
        Ok(async move {
            match first.await {
                Ok((stat, _)) => {
                    node.czxid = stat.czxid;
                    Ok((Own::Made(Box::new(node)), true))
                }
                Err(_) => Ok((self.settle_own(node, data, &[], parents).await?, false)),
            }
        })
    }

    /// Creates `node` (named, armed) after `before`, as [`create_own`](Session::create_own) says.
    async fn settle_own(
        &self,
        mut node: OwnNode,
        data: &[u8],
        before: &[Write<'_>],
        parents: Option<CreateMode>,
    ) -> Result<Own> {
        let path = node.path();
        let mut writes = before.to_vec();
        writes.push(Write::Create(&path, data, CreateMode::Ephemeral));
        Ok(match self.create_once(&writes, true, parents).await? {
            Committed::Done { stat, .. } => {
                node.czxid = stat.map_or(-1, |stat| stat.czxid);
                Own::Made(Box::new(node))
            }
            Committed::Refused { index, error } => Own::Refused { index, error },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::makes;

    #[test]
    fn making_a_directory_makes_its_ancestors_only() {
        assert!(makes("/q/receipts", "/q/receipts"));
        assert!(makes("/q/receipts", "/q"));
        assert!(makes("/q/receipts", "/"));
        assert!(!makes("/q/receipts", "/q/receipts/x"), "a child is not made");
        assert!(!makes("/q/receipts", "/q/claims"), "nor a sibling");
        assert!(!makes("/q/receipts", "/q/rec"), "nor a name that is a prefix");
    }
}
