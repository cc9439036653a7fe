//! Curator's `PersistentNode`: a node that should exist for as long as its owner says so — a registration, a
//! presence marker — made again with its current data whenever it is gone: deleted by somebody else, or taken
//! with an ended ZooKeeper session (on a [reconnecting](Session::reconnecting) session, on the next one).
//!
//! Written on the cache engine: a [`Cache::node`] of the path tells when the node is missing (also after a
//! reconnection and on a new session, where it reads the node again), and the one decision — create, write our data,
//! or wait for another session's node to go — is taken from what the cache holds, after every event.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use zookeeper_client::{self as zk, Stat};

use crate::base::error::{At as _, Error, Result};
use crate::base::idioms::{parent_of, IfExists as _};
use crate::base::retry::broke_connection;
use crate::cache::{Cache, CachedNode, Events};
use crate::recipes::discovery::node_mode::NodeMode;
use crate::session::Session;

/// A node kept in existence with our data (Curator's `PersistentNode`), from [`PersistentNode::start`] until
/// [`close`](PersistentNode::close).
///
/// ```no_run
/// # async fn example(connector: zookeeper_client::Connector) -> zklock::Result<()> {
/// use std::time::Duration;
/// use zklock::{NodeMode, PersistentNode, Session};
///
/// let session = Session::reconnecting(connector, "127.0.0.1:2181").await?;
/// let me = PersistentNode::start(&session, "/services/api/host-a", NodeMode::Ephemeral, b"10.0.0.5:8080")?;
/// me.wait_for_initial_create(Duration::from_secs(10)).await?;
/// me.set_data(b"10.0.0.5:8081").await?; // kept through expiry: made again with the latest data
/// me.close().await?;
/// # Ok(()) }
/// ```
///
/// Our data is the node's: a change of it by somebody else is written back.
///
/// What it guarantees: at most one node at the path is ours at a time (the path is fixed, so a create whose reply
/// was lost finds its node, never a second one); after our node is deleted by somebody else, or its ZooKeeper
/// session ends, it is made again with the data of the last [`set_data`](PersistentNode::set_data) as soon as the
/// session allows. Between the loss and the new create, there is no node: watchers see it go and come back. The
/// parents are made as persistent nodes when missing. Dropping it without `close` stops keeping the node and
/// leaves it (an ephemeral one goes with its session).
#[derive(Debug)]
pub struct PersistentNode {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    session: Session,
    path: String,
    mode: NodeMode,
    /// A sequential node's protected name without its sequence number: `_c_<uuid>-<name>`.
    prefix: String,
    /// The data the node should hold.
    data: StdMutex<Arc<[u8]>>,
    /// The path of our node as last seen, `None` while there is none of ours.
    ours: watch::Sender<Option<String>>,
    /// `set_data` asks the task to look again.
    changed: Notify,
    /// Whether a create was ever sent (a sequential node is looked for by its prefix before any later one).
    created: std::sync::atomic::AtomicBool,
}

impl PersistentNode {
    /// Starts keeping the node at `path` with `data`, on `session` — a [`Session`] or a `&Client` (whose ZooKeeper
    /// session never comes back: use a reconnecting session for a node that should outlive expiry). Needs a tokio
    /// runtime, and a server with persistent watches (ZooKeeper 3.6+ or the embedded server).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse, or `/`.
    pub fn start(
        session: impl Into<Session>,
        path: &str,
        mode: NodeMode,
        data: &[u8],
    ) -> Result<PersistentNode> {
        let path = crate::base::path::validate(path)?;
        if path == "/" {
            return Err(Error::InvalidPath {
                path,
                reason: "the root cannot be kept",
            });
        }
        let session = session.into();
        let (parent, name) = (parent_of(&path), path.rsplit('/').next().unwrap_or_default());
        let unique = crate::base::names::unique_prefix(&uuid::Uuid::new_v4());
        let cache = match mode.is_sequential() {
            true => Cache::children(&session, parent)?.start(),
            false => Cache::node(&session, &path)?.start(),
        };
        let shared = Arc::new(Shared {
            prefix: format!("{unique}{name}"),
            session,
            path,
            mode,
            data: StdMutex::new(data.into()),
            ours: watch::Sender::new(None),
            changed: Notify::new(),
            created: Default::default(),
        });
        let task = tokio::spawn(keep(Arc::clone(&shared), cache));
        Ok(PersistentNode { shared, task })
    }

    /// The node's path, as given.
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The path of our node, as last seen: the given path, or, for a sequential mode, the name with its protection
    /// and sequence number; `None` while there is none of ours.
    pub fn actual_path(&self) -> Option<String> {
        self.shared.ours.borrow().clone()
    }

    /// Whether our node exists, as last seen.
    pub fn exists(&self) -> bool {
        self.shared.ours.borrow().is_some()
    }

    /// Waits until our node exists (at once if it does): `true`, or `false` after `timeout`.
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<bool> {
        let mut ours = self.shared.ours.subscribe();
        let created = tokio::time::timeout(timeout, ours.wait_for(Option::is_some)).await;
        Ok(matches!(created, Ok(Ok(_))))
    }

    /// Sets the data the node holds now and whenever it is made again. Written at once if our node exists (else
    /// it is made with it).
    ///
    /// # Errors
    /// What ZooKeeper answers to the write (the end of the session, a refused ACL…); the data is kept for the
    /// next create either way.
    pub async fn set_data(&self, data: &[u8]) -> Result<()> {
        *self.shared.data.lock().unwrap_or_else(|e| e.into_inner()) = data.into();
        if let Some(path) = self.actual_path() {
            let (session, path) = (&self.shared.session, path.as_str());
            let written = session
                .retry()
                .run_at("setData", path, || session.client().set_data(path, data, None));
            match written.await.if_exists() {
                // Written: the cache's event of it brings the task's next look, which finds our data there.
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {} // gone: made again with it
                Err(err) => {
                    self.shared.changed.notify_one();
                    return Err(err);
                }
            }
        }
        // No node of ours (now): the task makes it with the new data.
        self.shared.changed.notify_one();
        Ok(())
    }

    /// Stops keeping the node and deletes it (an ephemeral node only if it is ours).
    ///
    /// # Errors
    /// What ZooKeeper answers to the delete.
    pub async fn close(self) -> Result<()> {
        self.task.abort();
        let (session, shared) = (&self.shared.session, &self.shared);
        let dir = parent_of(&shared.path);
        let found = match shared.mode.is_sequential() {
            // Ours by its unique prefix, also one whose create the task made just now.
            true => session.find_prefixed(dir, &shared.prefix).await?,
            false => session
                .exists(&shared.path)
                .await?
                .map(|stat| (shared.path.clone(), stat)),
        };
        let theirs =
            |stat: &Stat| shared.is_ephemeral() && stat.ephemeral_owner != session.client().session_id().0;
        match found {
            // Persistent nodes are deleted whatever their version; an ephemeral one of ours has no other writer.
            Some((path, stat)) if !theirs(&stat) => session.delete_if_exists(&path, None).await,
            _ => Ok(()),
        }
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shared {
    fn is_ephemeral(&self) -> bool {
        self.mode == NodeMode::Ephemeral || self.mode == NodeMode::EphemeralSequential
    }
}

/// The task: after every event of the cache (and every `set_data`), decides from what it holds.
async fn keep(shared: Arc<Shared>, cache: Cache) {
    let mut events: Events = cache.events();
    if cache.initialized().await.is_err() {
        return;
    }
    loop {
        let held = match shared.mode.is_sequential() {
            true => cache.child_with_prefix(parent_of(&shared.path), &shared.prefix),
            false => cache.get(&shared.path),
        };
        if let Err(err) = look(&shared, held).await {
            tracing::debug!(path = %shared.path, %err, "keeping the node: will look again after the next change");
            if err.is_terminal() && !shared.session.is_reconnecting() {
                shared.ours.send_replace(None);
                return;
            }
            if !broke_connection(&err) {
                // Not a passing fault (an ACL, say): do not spin.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        tokio::select! {
            event = events.next() => if event.is_none() {
                shared.ours.send_replace(None);
                return;
            },
            () = shared.changed.notified() => {}
        }
    }
}

/// One decision: make the node if there is none, write our data into ours if it differs, or wait for another
/// session's node to go.
async fn look(shared: &Shared, held: Option<CachedNode>) -> Result<()> {
    let data = Arc::clone(&shared.data.lock().unwrap_or_else(|e| e.into_inner()));
    let session = shared.session.pinned_usable().await?;
    let ours = session.client().session_id().0;
    match held {
        // Another session's node at our path: not ours to take; it is made ours once it goes.
        Some(node) if shared.is_ephemeral() && node.stat.ephemeral_owner != ours => {
            shared.ours.send_replace(None);
            Ok(())
        }
        Some(node) => {
            shared.ours.send_replace(Some(node.path.clone()));
            if *node.data != *data {
                let (path, version) = (&node.path, Some(node.stat.version));
                match session.client().set_data(path, &data, version).await {
                    // Written since the cache read it (by `set_data`, say): its event brings the next look.
                    Err(zk::Error::BadVersion | zk::Error::NoNode) => {}
                    written => drop(written.at("setData", path)?),
                }
            }
            Ok(())
        }
        None => {
            shared.ours.send_replace(None);
            let (mode, ttl) = shared.mode.create_mode();
            let sent_before = shared.created.swap(true, std::sync::atomic::Ordering::Relaxed);
            match shared.mode.is_sequential() {
                // Protected: one of ours the cache has not shown yet (made by a create whose reply was lost) is
                // found by its prefix first, never made twice.
                true => {
                    session
                        .create_protected(parent_of(&shared.path), &shared.prefix, &data, mode, sent_before)
                        .await
                }
                // One fixed path: a node there already (ours after a lost reply, or somebody's) is for the cache's
                // event to say.
                false => session.create_at(&shared.path, &data, mode, ttl).await.map(drop),
            }
        }
    }
}
