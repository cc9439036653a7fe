//! Following a cache's subtree with one-shot watches: for a server without persistent ones (ZooKeeper 3.5 answers
//! `addWatch` with `Unimplemented`), or when asked ([`CacheBuilder::one_shot_watches`](super::CacheBuilder)). The
//! way of kazoo's `TreeCache`: a data watch on every node held (an exists watch on the root while it is missing)
//! and a child watch on every node held; each watch that fires is followed by the read that sets it again.
//!
//! # Reconnections
//! One-shot watches outlive a disconnection: `zookeeper-client` sends them again (`setWatches`, with the last zxid
//! it saw) and the server fires each one whose node changed meanwhile (ZOOKEEPER-43). So unlike the persistent
//! watch (`sync.rs`), a reconnection costs only the reads of what changed. Reads that were in flight when the
//! connection broke set no watch: once the connection is back they are sent again, in their order, before any
//! later read. A new session (`Session::reconnecting`) starts over with a full read (`sync.rs`, `follow_sessions`).
//!
//! # Order, and the cost
//! Reads are applied in the order they were sent (`FuturesOrdered`), as in `sync.rs`: a path's events follow
//! zxid order. The cost: two watches per node on the server, a small future per watch here, and no `multiRead`
//! (it sets no watches): the prime is a `getData` and a `getChildren` per node.

use std::collections::{HashSet, VecDeque};

use futures::future::BoxFuture;
use futures::stream::{FuturesOrdered, FuturesUnordered, StreamExt};
use futures::FutureExt;
use zookeeper_client::{self as zk, Client, EventType, OneshotWatcher, SessionState, Stat, WatchedEvent};

use super::scope::{Scope, IN_FLIGHT};
use super::Shared;
use crate::base::error::{Error, Result};
use crate::base::path::child_path;
use crate::base::retry::broke_connection;
use crate::session::Session;

/// A read to send.
#[derive(Debug, Clone)]
struct Ask {
    path: String,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `getData`, setting a data watch.
    Data,
    /// `getData` without a watch: the node's stat after its children changed (no data watch fires for that).
    Stat,
    /// `exists`, setting a watch for the node's creation.
    Exists,
    /// `getChildren`, setting a child watch.
    Children,
}

/// What a read found.
enum Found {
    Data(Option<(Vec<u8>, Stat)>, Option<OneshotWatcher>),
    Exists(bool, OneshotWatcher),
    /// The children's names, and the node's stat as the listing saw it.
    Children(Option<(Vec<String>, Stat)>, Option<OneshotWatcher>),
    /// A node our session may not read: left out, and not watched (it would be read again and again).
    Denied,
}

type Read<'a> = BoxFuture<'a, (Ask, std::result::Result<Found, zk::Error>)>;
/// A watch that fired: what set it, the creation zxid of the node as that read saw it (`None`: missing), the event.
type Fired = BoxFuture<'static, (Ask, Option<i64>, WatchedEvent)>;

fn send(client: &Client, ask: Ask) -> Read<'_> {
    async move {
        let path = ask.path.as_str();
        let found = match ask.kind {
            Kind::Data => client
                .get_and_watch_data(path)
                .await
                .map(|(data, stat, watcher)| Found::Data(Some((data, stat)), Some(watcher))),
            Kind::Stat => client
                .get_data(path)
                .await
                .map(|read| Found::Data(Some(read), None)),
            Kind::Exists => client
                .check_and_watch_stat(path)
                .await
                .map(|(stat, watcher)| Found::Exists(stat.is_some(), watcher)),
            Kind::Children => client
                .get_and_watch_children(path)
                .await
                .map(|(names, stat, watcher)| Found::Children(Some((names, stat)), Some(watcher))),
        };
        let found = match found {
            Err(zk::Error::NoNode) if ask.kind == Kind::Children => Ok(Found::Children(None, None)),
            Err(zk::Error::NoNode) => Ok(Found::Data(None, None)),
            Err(zk::Error::NoAuth) => Ok(Found::Denied),
            found => found,
        };
        (ask, found)
    }
    .boxed()
}

fn watch(ask: Ask, czxid: Option<i64>, watcher: OneshotWatcher) -> Fired {
    watcher.changed().map(move |event| (ask, czxid, event)).boxed()
}

/// Follows one ZooKeeper session of the cache with one-shot watches. Returns the error that ended it.
pub(super) async fn follow(shared: &Shared, session: &Session, scope: &Scope) -> Error {
    let mut follower = Follower {
        shared,
        scope,
        waiting: VecDeque::new(),
        fired: FuturesUnordered::new(),
        data_armed: HashSet::new(),
        children_armed: HashSet::new(),
    };
    follower.data(scope.root.clone());
    match follower.run(session.client()).await {
        Ok(never) => match never {},
        Err(err) => err,
    }
}

/// The reads to send and the watches set.
struct Follower<'a> {
    shared: &'a Shared,
    scope: &'a Scope,
    waiting: VecDeque<Ask>,
    fired: FuturesUnordered<Fired>,
    /// The paths with a data (or exists) watch set or its read on the way: one each, never two.
    data_armed: HashSet<String>,
    /// The same for child watches.
    children_armed: HashSet<String>,
}

impl Follower<'_> {
    async fn run(&mut self, client: &Client) -> Result<std::convert::Infallible> {
        let mut state_watcher = client.state_watcher();
        let mut reads: FuturesOrdered<Read<'_>> = FuturesOrdered::new();
        // The reads the broken connection took, in their order: sent again once it is back, before any other.
        let mut broken: Option<Vec<Ask>> = None;
        loop {
            if broken.is_none() {
                while reads.len() < IN_FLIGHT {
                    let Some(ask) = self.waiting.pop_front() else {
                        break;
                    };
                    reads.push_back(send(client, ask));
                }
                if reads.is_empty() {
                    self.shared.initialized();
                }
            }
            tokio::select! {
                biased;
                Some((ask, found)) = reads.next(), if !reads.is_empty() => {
                    let found = found.map_err(|err| Error::zk(op(ask.kind), &ask.path, err));
                    match (found, &mut broken) {
                        // (A read cut in flight fails with `Custom`, not `ConnectionLoss`: `broke_connection`.)
                        (Err(err), retry) if broke_connection(&err) => retry.get_or_insert_with(Vec::new).push(ask),
                        // Later than a read the connection took: its answer may be older than that read's will be.
                        (Ok(_), Some(retry)) => retry.push(ask),
                        (Ok(found), None) => self.found(ask, found),
                        (Err(err), _) => return Err(err),
                    }
                }
                Some((ask, czxid, event)) = self.fired.next(), if !self.fired.is_empty() => self.fired(ask, czxid, event)?,
                state = state_watcher.changed(), if broken.is_some() && reads.is_empty() => {
                    if let Some(err) = crate::base::error::session_ended(state) {
                        return Err(err);
                    }
                    if matches!(state, SessionState::SyncConnected | SessionState::ConnectedReadOnly) {
                        for ask in broken.take().unwrap_or_default().into_iter().rev() {
                            self.waiting.push_front(ask);
                        }
                    }
                }
            }
        }
    }

    /// A data read with its watch, unless one is set or on the way.
    fn data(&mut self, path: String) {
        if self.data_armed.insert(path.clone()) {
            self.waiting.push_back(Ask {
                path,
                kind: Kind::Data,
            });
        }
    }

    /// A listing with its watch, unless one is set or on the way.
    fn children(&mut self, path: String) {
        if self.children_armed.insert(path.clone()) {
            self.waiting.push_back(Ask {
                path,
                kind: Kind::Children,
            });
        }
    }

    /// A node found gone (by a read or its watch): out of the cache; the root is watched for its return.
    fn gone(&mut self, path: String) {
        self.shared.write().apply(&path, None, &self.shared.events);
        if path == self.scope.root {
            self.data_armed.insert(path.clone());
            self.waiting.push_back(Ask {
                path,
                kind: Kind::Exists,
            });
        }
    }

    /// Applies a read's answer: the node and its events, and the reads and watches that follow from it.
    fn found(&mut self, ask: Ask, found: Found) {
        match found {
            Found::Denied | Found::Children(None, _) => {
                self.data_armed.remove(&ask.path);
                self.children_armed.remove(&ask.path);
            }
            Found::Data(None, _) => {
                self.data_armed.remove(&ask.path);
                self.gone(ask.path);
            }
            // A stat read only refreshes a node held.
            Found::Data(Some(read), None) => {
                let mut state = self.shared.write();
                if state.contains(&ask.path) {
                    state.apply(&ask.path, Some(read), &self.shared.events);
                }
            }
            Found::Data(Some(read), Some(watcher)) => {
                let czxid = Some(read.1.czxid);
                self.shared
                    .write()
                    .apply(&ask.path, Some(read), &self.shared.events);
                self.children(ask.path.clone());
                self.fired.push(watch(ask, czxid, watcher));
            }
            Found::Exists(true, _) => {
                self.data_armed.remove(&ask.path);
                self.data(ask.path);
            }
            Found::Exists(false, watcher) => self.fired.push(watch(ask, None, watcher)),
            Found::Children(Some((names, stat)), watcher) => {
                let level = self.scope.level(&ask.path).unwrap_or(0);
                let mut state = self.shared.write();
                let held = state.get(&ask.path);
                // Children came or went since the node was read (the listing's own stat says so): the node's stat
                // changed with them (children, cversion, pzxid), which no data watch reports. With its data
                // unchanged (same mzxid) the listing's stat is the node's, applied before any child's event;
                // otherwise the node is read again, before the new children are.
                let mut stale = false;
                if let Some(held) = held.as_ref().filter(|held| held.stat.pzxid != stat.pzxid) {
                    if held.stat.mzxid == stat.mzxid {
                        state.apply(&ask.path, Some((held.data.to_vec(), stat)), &self.shared.events);
                    } else {
                        stale = true;
                    }
                }
                let listed = held.is_some() && self.scope.lists(level);
                if listed {
                    state.keep_children(&ask.path, &names, &self.shared.events);
                }
                drop(state);
                if stale {
                    self.waiting.push_back(Ask {
                        path: ask.path.clone(),
                        kind: Kind::Stat,
                    });
                }
                // Every child without a data watch is read: new ones, and on a new session (no watch set yet)
                // every one held, which may have changed while no watch was set.
                if listed {
                    for name in names {
                        self.data(child_path(&ask.path, &name));
                    }
                }
                if let Some(watcher) = watcher {
                    self.fired.push(watch(ask, Some(stat.czxid), watcher));
                }
            }
        }
    }

    /// A watch fired: the read that sets it again. `czxid`: the node the watch was set on.
    ///
    /// A deletion is applied only to that node. Events and read answers come on one connection in order, but they
    /// wait here in two queues, and a read answered after a watch fired may be applied first: a node deleted and
    /// made again (another writer) was then held as the new one and removed by the old one's deletion — a state
    /// that never existed (the one-shot cache campaign on embedded, seed 95, once). Such a late deletion is only a
    /// reason to look again.
    fn fired(&mut self, ask: Ask, czxid: Option<i64>, event: WatchedEvent) -> Result<()> {
        if let Some(err) = crate::base::error::session_ended(event.session_state) {
            return Err(err);
        }
        if ask.kind == Kind::Children {
            self.children_armed.remove(&ask.path);
        } else {
            self.data_armed.remove(&ask.path);
        }
        let newer = || {
            let held = self.shared.read().get(&ask.path);
            held.is_some_and(|node| Some(node.stat.czxid) != czxid)
        };
        match event.event_type {
            EventType::Session => {}
            EventType::NodeDeleted if newer() => match ask.kind {
                Kind::Children => self.children(ask.path),
                _ => self.data(ask.path),
            },
            EventType::NodeDeleted if ask.kind == Kind::Children => {
                self.shared.write().apply(&ask.path, None, &self.shared.events);
            }
            EventType::NodeDeleted => self.gone(ask.path),
            // The node's stat comes with the listing that sets the watch again.
            EventType::NodeChildrenChanged => self.children(ask.path),
            // Created (the root's exists watch) or changed.
            _ => self.data(ask.path),
        }
        Ok(())
    }
}

fn op(kind: Kind) -> &'static str {
    match kind {
        Kind::Data | Kind::Stat => "getData",
        Kind::Exists => "exists",
        Kind::Children => "getChildren",
    }
}
