//! Our node in a queue directory, and the promise that it never outlives our interest in it.
//!
//! An `OwnNode` exists from the moment our create request is sent. Until it is handed over to a guard and
//! released, dropping it — because an acquire future was cancelled or timed out at any await point, or failed —
//! deletes the node in the background. When the create reply was never seen, the node is found by our unique
//! prefix, in a listing after a `sync` (a listing alone, after a reconnection to another ensemble member, can miss it:
//! `idioms::list_synced`).
//!
//! The node also dismisses its lost signal's monitor (see `node/lost.rs`) *before* it sends its own delete, whichever way
//! the delete goes (`delete`, or `Drop`). Otherwise the monitor could take our own delete for somebody else's and
//! report a loss (with a warning) for a node its owner gave up: a guard drops its fields in declaration order, and
//! a monitor being polled on another worker thread runs on until it next yields, however promptly it is aborted.
//! Dismissal is a flag the monitor checks before it reports; our delete is sent after we set it, and the monitor
//! can only see the deletion after that.
//!
//! **Creating it.** The one protected create of the recipes outside the lock queues: [`Session::create_once`] creates nodes once
//! (making missing parents when asked), and [`Session::create_own`] creates **our node** — a name nobody else
//! uses — as an [`OwnNode`] that is deleted if we give up at any point, alone or in one transaction with other
//! writes. A connection lost during the create is settled by finding our node (the receipt of
//! [`Session::commit_once`]): made now, already ours (an earlier attempt whose reply was lost), or refused because
//! of somebody else; the end of the session is an error. The lock queues' create (sequential nodes found by their
//! `_c_<uuid>-` marker) is `engine/`'s.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use zookeeper_client::{self as zk, Client, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::names::Contender;
use crate::base::path::child_path;
use crate::base::retry::RetryPolicy;
use crate::node::abandoned;
use crate::session::cas::{Committed, Write};
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

    /// Our create was refused because a node of our name is somebody else's: nothing is deleted.
    fn never_made(mut self) {
        self.armed = false;
    }

    /// Deletes every node of ours among `contenders` but this one, and returns the others (this one included). A
    /// second node of ours can only come from a create retried after a lost reply that did happen after all.
    pub(crate) async fn sweep_duplicates(&self, contenders: Vec<Contender>) -> Result<Vec<Contender>> {
        let me = self.name.as_deref().unwrap_or_default();
        let duplicate = |c: &Contender| c.name != me && c.name.starts_with(&self.unique);
        // The common case, at every look at the queue: nothing to sweep, nothing to rebuild.
        if !contenders.iter().any(duplicate) {
            return Ok(contenders);
        }
        let mut kept = Vec::with_capacity(contenders.len());
        for contender in contenders {
            if duplicate(&contender) {
                let path = child_path(&self.dir, &contender.name);
                tracing::warn!(%path, "removing a duplicate node of ours");
                idioms::delete_if_exists(&self.client, &self.retry, &path, None).await?;
            } else {
                kept.push(contender);
            }
        }
        Ok(kept)
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
        // `node/abandoned.rs`); registered before this drop returns.
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
                    // Our client gave up the session; the server may not have (see `node/abandoned.rs`).
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

/// Deletes our node by name or, if the name is unknown, every child carrying our unique prefix, looked for after a
/// `sync` ([`idioms::list_synced`]): the create whose reply we never saw may have gone through another ensemble
/// member than the one we ask now.
async fn delete_own(
    client: &Client,
    dir: &str,
    unique: &str,
    name: Option<&str>,
    retry: &RetryPolicy,
) -> Result<()> {
    let names = match name {
        Some(name) => vec![name.to_owned()],
        None => idioms::list_synced(client, retry, dir)
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

/// What [`Session::create_own`] did.
#[derive(Debug)]
pub(crate) enum Created {
    /// Our node exists (made now or by an earlier attempt of this call), with every write before it.
    Made(Box<OwnNode>),
    /// ZooKeeper refused write number `index` (ours is the last) with `error`, because of somebody else.
    Refused { index: usize, error: zk::Error },
}

impl Created {
    /// Our node; a refusal (of a create without a refusal the caller answers itself) as the error about `path`.
    pub(crate) fn made(self, path: &str) -> Result<OwnNode> {
        match self {
            Created::Made(node) => Ok(*node),
            Created::Refused { error, .. } => Err(Error::zk("create", path, error)),
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

    /// Creates the persistent node `path` holding `data` ([`create_once`](Session::create_once), `parents` as
    /// there): `Some` of its creation zxid when this call made it (`-1` when that is not known), `None` when it
    /// existed — made by somebody else, or by an attempt of ours whose reply was lost.
    pub(crate) async fn create_persistent(
        &self,
        path: &str,
        data: &[u8],
        parents: Option<CreateMode>,
    ) -> Result<Option<i64>> {
        let writes = [Write::Create(path, data, CreateMode::Persistent)];
        match self.create_once(&writes, false, parents).await? {
            Committed::Done { stat, .. } => Ok(Some(stat.map_or(-1, |stat| stat.czxid))),
            Committed::Refused {
                error: zk::Error::NodeExists,
                ..
            } => Ok(None),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
        }
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

    /// Creates our ephemeral node `dir`/`name` holding `data` (`name` meant to be ours alone: a uuid in it), after
    /// `before` in one transaction; `parents` as in [`create_once`](Session::create_once). The node is armed from
    /// the start: dropping this future, or the [`OwnNode`] it returns, deletes it. A node of that name that another
    /// session owns (a group member id given to two processes) refuses the create (`NodeExists`) and is left alone.
    pub(crate) async fn create_own(
        &self,
        dir: &str,
        name: &str,
        data: &[u8],
        before: &[Write<'_>],
        parents: Option<CreateMode>,
    ) -> Result<Created> {
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
    ) -> Result<impl Future<Output = Result<(Created, bool)>> + 'a> {
        let (dir, name) = path.rsplit_once('/').unwrap_or_default();
        let mut node = OwnNode::named(self, if dir.is_empty() { "/" } else { dir }, name)?;
        let first = self
            .client()
            .create(path, data, &CreateMode::Ephemeral.with_acls(self.acls()));
        Ok(async move {
            match first.await {
                Ok((stat, _)) => {
                    node.czxid = stat.czxid;
                    Ok((Created::Made(Box::new(node)), true))
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
    ) -> Result<Created> {
        let path = node.path();
        let mut writes = before.to_vec();
        writes.push(Write::Create(&path, data, CreateMode::Ephemeral));
        Ok(match self.create_once(&writes, true, parents).await? {
            Committed::Done { stat, .. } => {
                node.czxid = stat.map_or(-1, |stat| stat.czxid);
                Created::Made(Box::new(node))
            }
            Committed::Refused { index, error } => {
                // Our create refused because the node exists: `commit_once` found it owned by another session (a
                // group member id two processes were given), so deleting it by name when `node` drops would delete
                // theirs. Any other refusal keeps it armed: deleting a name only we use is harmless, and it removes
                // our node should an earlier attempt have made it after all.
                if index + 1 == writes.len() && error == zk::Error::NodeExists {
                    node.never_made();
                }
                Created::Refused { index, error }
            }
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

// Needs the workspace's test kit: on with the `workspace-tests` feature (the suite builds with --all-features).
#[cfg(all(test, feature = "workspace-tests"))]
mod on_a_server {
    use super::*;

    /// A name meant to be ours alone that another session's node holds (a group member id given to two processes):
    /// the create is refused, not taken for an earlier attempt of ours, and the other node is left alone.
    #[tokio::test]
    async fn a_node_of_our_name_another_session_owns_is_refused_and_kept() {
        let hosts = tokio::task::spawn_blocking(zklock_testkit::shared_embedded)
            .await
            .unwrap();
        let (a, b) = (
            Client::connect(&hosts).await.unwrap(),
            Client::connect(&hosts).await.unwrap(),
        );
        let dir = zklock_testkit::unique_path("own-taken");
        let path = child_path(&dir, "taken");
        let parents = Some(CreateMode::Container);
        let theirs = Session::new(&a)
            .create_own(&dir, "taken", b"a", &[], parents)
            .await;
        let theirs = theirs.unwrap().made(&path).unwrap();
        let (session, ours) = (Session::new(&b), b.session_id().0);
        let refused = session
            .create_own(&dir, "taken", b"b", &[], parents)
            .await
            .unwrap();
        assert!(
            matches!(
                refused,
                Created::Refused {
                    error: zk::Error::NodeExists,
                    ..
                }
            ),
            "{refused:?}"
        );
        // Whatever dropping our side deletes in the background is done once `settled` returns.
        drop(refused);
        abandoned::settled(&b, session.retry(), &dir).await.unwrap();
        let (data, stat) = a.get_data(&path).await.expect("their node is still there");
        assert_eq!(
            (data.as_slice(), stat.ephemeral_owner),
            (&b"a"[..], a.session_id().0)
        );
        assert_ne!(stat.ephemeral_owner, ours);
        theirs.delete().await.unwrap();
    }
}
