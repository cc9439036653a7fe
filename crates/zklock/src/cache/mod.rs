//! Caches: a node, its children or a whole subtree kept in memory and in step with ZooKeeper, with an event for
//! every change — Curator's `CuratorCache` (and its node, children and tree caches), kazoo's `DataWatch`,
//! `ChildrenWatch` and `TreeCache`.
//!
//! `sync.rs` is the task that follows ZooKeeper (one persistent watch, a full read, one read per event, a re-sync
//! after every reconnection); `oneshot.rs` follows with one-shot watches instead (ZooKeeper 3.5, or when asked);
//! `scope.rs` is what both follow; `state.rs` holds the nodes and turns each read into the event it makes.

mod oneshot;
mod scope;
mod state;
mod sync;

use std::sync::{Arc, RwLock, Weak};

use tokio::sync::{broadcast, watch};
use zookeeper_client::Stat;

use crate::base::error::{Error, Result};
use crate::session::listener::QueueEvent;
use crate::session::Session;
use scope::Scope;
use state::State;

/// How many events a subscriber may fall behind before it misses some; one that does gets
/// [`CacheEvent::Reset`] and the whole content again. A broadcast channel allocates all its slots at once (each holds
/// an `Arc` of an event: about 40 bytes), so a cache of one node — every `PersistentNode`, every registration — keeps
/// a short one: 64 slots, 2.5 KiB, where 4,096 events of ~250 bytes were 1 MiB per cache (issue 31's benchmark).
const BACKLOG: usize = 4096;
/// [`BACKLOG`] for a cache of one node.
const NODE_BACKLOG: usize = 64;

/// What the channel carries: one allocation per event, shared by every subscriber.
type Sender = broadcast::Sender<Arc<CacheEvent>>;

/// A node, its children, or a subtree, kept in memory and in step with ZooKeeper: the configuration and discovery
/// half of ZooKeeper (Curator's `CuratorCache`, kazoo's `TreeCache`).
///
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let cache = zklock::Cache::tree(&client, "/config")?.start();
/// cache.initialized().await?;
/// let mut events = cache.events();
/// while let Some(event) = events.next().await {
///     println!("{event:?}");
/// }
/// # Ok(()) }
/// ```
///
/// What it guarantees:
/// * **Every state it reports existed**: each node event is followed by a read of the node, and reads are applied
///   in the order they were sent on one session, so a node's events follow zxid order. Two quick changes of one
///   node may be reported as one (the read already sees the second).
/// * **No final state is lost across a disconnection or a new session**: after every reconnection (and every new
///   ZooKeeper session of a [reconnecting](Session::reconnecting) session) the watch is added again and the whole
///   subtree is read, and what changed meanwhile is reported. (`zookeeper-client` 0.11.2 does not re-register
///   persistent watches itself; see `cache/sync.rs`.)
/// * **Bounded**: at most 1,024 reads in flight; a subscriber that falls 4,096 events behind (64 for a node cache) gets
///   [`CacheEvent::Reset`] and the whole content again instead of an unbounded queue.
/// * Nodes the session may not read are not in the cache (ZooKeeper sends no events for them either).
///
/// It follows ZooKeeper with one persistent recursive watch, whatever its depth (ZooKeeper 3.6 or later, the
/// embedded server): caches of any depths on one path and session share it. (Before 3.9 a session has one watch mode
/// per path: a one-shot watch that the same session sets on the cache's own path — `getData` or `exists` with a
/// watch — takes the place of the cache's there, and the cache then misses changes. Set those on another session.)
/// On a server without them (ZooKeeper 3.5 answers `addWatch` with `Unimplemented`) it falls back to one-shot
/// watches on every node, as kazoo's `TreeCache` does ([`CacheBuilder::one_shot_watches`]). Dropping the cache
/// stops it.
#[derive(Debug)]
pub struct Cache {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    /// The session followed and the cached path, for the listener events of [`Cache::changed`].
    session: Session,
    path: String,
}

/// A cache to be started: [`Cache::node`], [`Cache::children`] or [`Cache::tree`], then [`start`](CacheBuilder::start).
#[derive(Debug, Clone)]
#[must_use = "a cache does nothing until it is started"]
pub struct CacheBuilder {
    session: Session,
    scope: Scope,
}

/// A node as a cache holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedNode {
    /// Its full path.
    pub path: String,
    /// Its data.
    pub data: Arc<[u8]>,
    /// Its stat, as read with the data.
    pub stat: Stat,
}

impl CachedNode {
    /// The data as UTF-8.
    ///
    /// # Errors
    /// [`Error::Unparsable`] if it is not UTF-8.
    pub fn utf8(&self) -> Result<&str> {
        std::str::from_utf8(&self.data).map_err(|err| self.corrupt(err.to_string()))
    }

    /// The data parsed as JSON into `T`.
    ///
    /// # Errors
    /// [`Error::Unparsable`] if it does not parse.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_slice(&self.data).map_err(|err| self.corrupt(err.to_string()))
    }

    fn corrupt(&self, reason: String) -> Error {
        Error::Unparsable {
            path: self.path.clone(),
            reason,
        }
    }
}

/// A change a cache saw, in the order it saw them.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheEvent {
    /// A node appeared (also each node found by the first read, before [`Initialized`](CacheEvent::Initialized)).
    Created(CachedNode),
    /// A node's data or stat changed.
    Changed {
        /// As held before.
        old: CachedNode,
        /// As read now.
        new: CachedNode,
    },
    /// A node is gone (as last held).
    Deleted(CachedNode),
    /// The first full read is done: the cache holds what was there (Curator's "initialized").
    Initialized,
    /// This subscriber fell too far behind and missed events: forget what it built from them; the whole content
    /// follows again as `Created` events (and `Initialized` if the cache is).
    Reset,
}

impl CacheEvent {
    /// The node the event is about (the new one for a change); `None` for `Initialized` and `Reset`.
    pub fn node(&self) -> Option<&CachedNode> {
        match self {
            CacheEvent::Created(node) | CacheEvent::Deleted(node) | CacheEvent::Changed { new: node, .. } => {
                Some(node)
            }
            CacheEvent::Initialized | CacheEvent::Reset => None,
        }
    }
}

/// What the cache and its task share.
#[derive(Debug)]
struct Shared {
    state: RwLock<State>,
    events: Sender,
    /// `None` while running; the error that ended it.
    ended: watch::Sender<Option<Error>>,
    /// Whether the first full read is done ([`Cache::initialized`] waits on it, not on the events: a subscription
    /// of its own would be woken once per event of the prime and keep up to [`BACKLOG`] of them alive, ~13 bytes a
    /// node of a 100,000-node tree).
    primed: watch::Sender<bool>,
    /// Whether a re-sync reads nodes in batches (`multiRead`); off after a batch failed.
    multi_read: std::sync::atomic::AtomicBool,
    /// Whether the server turned out to have no persistent watches (`addWatch` answered `Unimplemented`): every
    /// session from then on is followed with one-shot watches (`oneshot.rs`).
    one_shot: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn initialized(&self) {
        let mut state = self.write();
        if !state.initialized {
            state.initialized = true;
            let _ = self.events.send(Arc::new(CacheEvent::Initialized));
            self.primed.send_replace(true);
        }
    }

    /// The state, to change (a panic elsewhere while it was held leaves it as it was: every change is whole).
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, to read.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn end(&self, err: Error) {
        tracing::debug!(%err, "cache stopped");
        self.ended.send_replace(Some(err));
    }
}

impl Cache {
    /// A cache of the node at `path` only (Curator's `NodeCache`, kazoo's `DataWatch`): its data and stat, or
    /// nothing while it does not exist.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse.
    pub fn node(session: impl Into<Session>, path: &str) -> Result<CacheBuilder> {
        CacheBuilder::new(session.into(), path, Some(0))
    }

    /// A cache of the node at `path` and its children (Curator's `PathChildrenCache`, kazoo's `ChildrenWatch`, with
    /// each child's data).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse.
    pub fn children(session: impl Into<Session>, path: &str) -> Result<CacheBuilder> {
        CacheBuilder::new(session.into(), path, Some(1))
    }

    /// A cache of the whole subtree at `path` (Curator's `CuratorCache`, kazoo's `TreeCache`);
    /// [`depth`](CacheBuilder::depth) limits it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse.
    pub fn tree(session: impl Into<Session>, path: &str) -> Result<CacheBuilder> {
        CacheBuilder::new(session.into(), path, None)
    }

    /// Waits until the first full read is done (at once if it is).
    ///
    /// # Errors
    /// What stopped the cache before then (its session's end, an ACL refusal of the watch).
    pub async fn initialized(&self) -> Result<()> {
        let mut primed = self.shared.primed.subscribe();
        let mut ended = self.shared.ended.subscribe();
        loop {
            if *primed.borrow_and_update() {
                return Ok(());
            }
            if let Some(err) = self.ended() {
                return Err(err);
            }
            tokio::select! {
                _ = primed.changed() => {}
                _ = ended.changed() => {}
            }
        }
    }

    /// The node at `path` as held now, if it is.
    pub fn get(&self, path: &str) -> Option<CachedNode> {
        self.read().get(path)
    }

    /// The names of the children of `path` held now, in order.
    pub fn children_of(&self, path: &str) -> Vec<String> {
        self.read().children(path)
    }

    /// The first child of `dir` held now whose name starts with `prefix` (a protected node of ours).
    pub(crate) fn child_with_prefix(&self, dir: &str, prefix: &str) -> Option<CachedNode> {
        let name = self
            .children_of(dir)
            .into_iter()
            .find(|name| name.starts_with(prefix))?;
        self.get(&crate::base::path::child_path(dir, &name))
    }

    /// Every node held now, in path order.
    pub fn nodes(&self) -> Vec<CachedNode> {
        self.read().nodes()
    }

    /// How many nodes are held now.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no node is held now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The error that stopped the cache, if it has stopped: the end of a session made from a `Client`, the close
    /// of a reconnecting one, or an error ZooKeeper answered (`NoAuth` for the watch). A stopped cache keeps what it
    /// held.
    pub fn ended(&self) -> Option<Error> {
        self.shared.ended.borrow().clone()
    }

    /// Every change from now on, after the content held now as `Created` events (and `Initialized` if the first
    /// read is done): a subscriber misses nothing and sees nothing twice, whenever it subscribes.
    pub fn events(&self) -> Events {
        Events::new(&self.shared)
    }

    /// A signal for every change from now on, for code that decides from the whole view again at each change.
    pub(crate) fn changes(&self) -> Changes {
        Changes {
            live: self.shared.events.subscribe(),
            ended: self.shared.ended.subscribe(),
        }
    }

    /// Waits until `decide` finds what it looks for in the view — asked once the first full read is done, then
    /// after every change — and returns it: how the recipes that watch a directory and act on what is there wait
    /// (a transaction's outcome, the group's members).
    ///
    /// # Errors
    /// What stopped the cache first.
    pub(crate) async fn wait_for<T>(&self, mut decide: impl FnMut(&Cache) -> Option<T>) -> Result<T> {
        let mut changes = self.changes();
        self.initialized().await?;
        loop {
            if let Some(found) = decide(self) {
                return Ok(found);
            }
            self.changed(&mut changes).await?;
        }
    }

    /// Waits for the next change `changes` tells of, as a wait the session's listener hears of:
    /// [`QueueEvent::Waiting`] on the cached path, then [`QueueEvent::Woken`].
    ///
    /// # Errors
    /// What stopped the cache.
    pub(crate) async fn changed(&self, changes: &mut Changes) -> Result<()> {
        let path = &self.path;
        self.session.emit(QueueEvent::Waiting { on: path.clone() });
        changes.next().await?;
        self.session.emit(QueueEvent::Woken { by: path.clone() });
        Ok(())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.shared.read()
    }
}

/// Tells of each change a [`Cache`] applies ([`Cache::changes`]), without what it was: the view says.
#[derive(Debug)]
pub(crate) struct Changes {
    live: broadcast::Receiver<Arc<CacheEvent>>,
    ended: watch::Receiver<Option<Error>>,
}

impl Changes {
    /// Waits until the cache has applied a change since the last call (or since [`Cache::changes`]); every change
    /// applied by then is taken as seen. Cancel safe.
    ///
    /// # Errors
    /// What stopped the cache (once every change before that was told).
    pub(crate) async fn next(&mut self) -> Result<()> {
        use broadcast::error::{RecvError, TryRecvError};
        let mut told = false;
        loop {
            // Each event is sent under the state's write lock: a change told here is in the view already.
            match self.live.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => told = true,
                Err(TryRecvError::Closed) => return Err(Error::Closed),
                Err(TryRecvError::Empty) if told => return Ok(()),
                Err(TryRecvError::Empty) => {
                    if let Some(err) = self.ended.borrow_and_update().clone() {
                        return Err(err);
                    }
                    tokio::select! {
                        received = self.live.recv() => match received {
                            Err(RecvError::Closed) => return Err(Error::Closed),
                            Ok(_) | Err(RecvError::Lagged(_)) => told = true,
                        },
                        changed = self.ended.changed() => if changed.is_err() {
                            return Err(Error::Closed);
                        },
                    }
                }
            }
        }
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CacheBuilder {
    fn new(session: Session, path: &str, depth: Option<usize>) -> Result<CacheBuilder> {
        Ok(CacheBuilder {
            session,
            scope: Scope {
                root: crate::base::path::validate(path)?,
                depth,
                one_shot: false,
                names_only: false,
            },
        })
    }

    /// Holds the nodes at most `depth` levels below the path (0: the node only).
    pub fn depth(mut self, depth: usize) -> CacheBuilder {
        self.scope.depth = Some(depth);
        self
    }

    /// Follows with one-shot watches, as kazoo's `TreeCache` does — a data and a child watch on every node held —
    /// instead of one persistent watch. A cache does so by itself on a server without persistent watches
    /// (ZooKeeper 3.5); this asks for it anywhere. It costs two watches per node on the server and a read of each
    /// node by itself (no `multiRead`); a reconnection costs only the reads of what changed meanwhile, as the client
    /// sets the watches again (`cache/oneshot.rs`).
    pub fn one_shot_watches(mut self) -> CacheBuilder {
        self.scope.one_shot = true;
        self
    }

    /// Holds the names of the node and its children only (Curator's `PathChildrenCache` without data): nothing is
    /// read, each node's data is empty and its stat zero, and events tell only of creations and deletions. For
    /// waiting on a directory of many or large nodes (a queue's items). A node and its children only: the depth is
    /// set to 1. (One-shot watches, on a server without persistent ones, still read each node.)
    pub(crate) fn names_only(mut self) -> CacheBuilder {
        self.scope.depth = Some(1);
        self.scope.names_only = true;
        self
    }

    /// Starts following ZooKeeper (a task on the current tokio runtime); [`Cache::initialized`] tells when the
    /// first read is done.
    pub fn start(self) -> Cache {
        let shared = Arc::new(Shared {
            state: RwLock::default(),
            events: broadcast::channel(if self.scope.depth == Some(0) {
                NODE_BACKLOG
            } else {
                BACKLOG
            })
            .0,
            ended: watch::Sender::new(None),
            primed: watch::Sender::new(false),
            multi_read: std::sync::atomic::AtomicBool::new(true),
            one_shot: std::sync::atomic::AtomicBool::new(false),
        });
        let (session, path) = (self.session.clone(), self.scope.root.clone());
        let task = tokio::spawn(sync::run(Arc::clone(&shared), self.session, self.scope));
        Cache {
            shared,
            task,
            session,
            path,
        }
    }
}

/// The events of a [`Cache`] ([`Cache::events`]).
#[derive(Debug)]
pub struct Events {
    shared: Weak<Shared>,
    replay: std::collections::VecDeque<CacheEvent>,
    live: broadcast::Receiver<Arc<CacheEvent>>,
    ended: watch::Receiver<Option<Error>>,
}

impl Events {
    fn new(shared: &Arc<Shared>) -> Events {
        // Under the read lock no change is applied, so the copy and the subscription meet exactly.
        let state = shared.read();
        let live = shared.events.subscribe();
        let mut replay: std::collections::VecDeque<CacheEvent> =
            state.nodes().into_iter().map(CacheEvent::Created).collect();
        if state.initialized {
            replay.push_back(CacheEvent::Initialized);
        }
        drop(state);
        Events {
            shared: Arc::downgrade(shared),
            replay,
            live,
            ended: shared.ended.subscribe(),
        }
    }

    /// The next event; `None` once the cache has stopped (dropped, or [ended](Cache::ended)) and every event
    /// before that was handed out.
    pub async fn next(&mut self) -> Option<CacheEvent> {
        if let Some(event) = self.replay.pop_front() {
            return Some(event);
        }
        loop {
            match self.live.try_recv() {
                Ok(event) => return Some(Arc::unwrap_or_clone(event)),
                Err(broadcast::error::TryRecvError::Lagged(_)) => return self.reset(),
                Err(broadcast::error::TryRecvError::Closed) => return None,
                Err(broadcast::error::TryRecvError::Empty) => {}
            }
            if self.ended.borrow().is_some() {
                return None;
            }
            tokio::select! {
                received = self.live.recv() => match received {
                    Ok(event) => return Some(Arc::unwrap_or_clone(event)),
                    Err(broadcast::error::RecvError::Lagged(_)) => return self.reset(),
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                changed = self.ended.changed() => if changed.is_err() { return None },
            }
        }
    }

    /// Starts again from the content held now, after `Reset`.
    fn reset(&mut self) -> Option<CacheEvent> {
        let shared = self.shared.upgrade()?;
        *self = Events::new(&shared);
        Some(CacheEvent::Reset)
    }
}
