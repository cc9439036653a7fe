//! The task that keeps a cache in step with ZooKeeper: one persistent recursive watch on the cached path, a full
//! read of the subtree (the prime, and every re-sync: the listings, and the nodes' data 256 to a `multiRead`, which
//! costs a server about what one `getData` does), then one read per node event.
//!
//! # Why the watch is recursive whatever the depth
//! ZooKeeper before 3.9 keeps one watch mode per path and session (ZOOKEEPER-4466; the embedded server matches
//! 3.8): a later `addWatch` on the path replaces the mode of an earlier one. A node cache's plain persistent watch
//! added after a tree cache's recursive one on the same path and session left the tree cache hearing of nothing
//! below the path (`cache::caches_of_every_depth_on_one_path_and_session_each_hold_their_part` fails so on the three
//! servers). So every cache adds the same recursive watch and keeps what its depth holds (Curator 5.4's
//! `CuratorCache` does not: with `SINGLE_NODE_CACHE` its watch is plain). A node cache pays with the events of its
//! subtree, which it drops unread (but a child's creation or deletion, which it reads its node for). A one-shot
//! watch (`getData`/`exists` with a watch) on the cache's own path by the same session replaces the mode the same
//! way on those servers: docs/library.md says so.
//!
//! # Why every event is a read, in order
//! A persistent watch's event carries a type and a path, no data (and from ZooKeeper 3.8 no zxid), so each is
//! followed by a `getData` of its path. The reads are sent in the order the events came and applied in the order
//! they were sent (`FuturesOrdered`): ZooKeeper answers one session's requests in order, so each read sees a state
//! no older than the one before it, and a path's events follow zxid order. Every event a subscriber gets is a
//! state the server had; two events for one path that come quickly may be reported as one change (the first read
//! already sees the second write), never as a state that did not exist.
//!
//! # Why a reconnection re-arms the watch and reads everything again
//! After a disconnection `zookeeper-client` 0.11.2 re-registers one-shot watches with `setWatches` but not
//! persistent ones (`session/watch.rs`: `index = index.max(index)` never moves past the one-shot kinds, so the
//! persistent paths are never sent), and even ZooKeeper itself does not deliver every event of the time the
//! connection was down (ZOOKEEPER-4698). So when the connection comes back the task adds the watch again (a second
//! `addWatch` of the same kind is harmless where the client is fixed) and reads the whole subtree, reporting what
//! changed meanwhile. A new ZooKeeper session (`Session::reconnecting`) is the same, on the new session. The cost
//! is one full read per reconnection: `getData` per node plus `getChildren` per node with children (a relative-zxid
//! `setWatches2` would send only the changes, but the client does not send it for persistent watches).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::stream::{FuturesOrdered, FuturesUnordered, StreamExt};
use futures::FutureExt;
use zookeeper_client::{self as zk, AddWatchMode, Client, EventType, PersistentWatcher, SessionState, Stat};

use super::scope::{Scope, IN_FLIGHT, UNREAD};
use super::Shared;
use crate::base::error::{At as _, Error, Result};
use crate::base::path::child_path;
use crate::base::retry::broke_connection;
use crate::session::Session;

/// At most this many nodes read by one `multiRead` of a re-sync.
const BATCH: usize = 256;

/// A re-sync lists a directory only while fewer nodes than this wait for their read, and at most [`LISTINGS`] at
/// once: the paths waiting stay a few thousand, not the whole tree (for a tree of 100,000 nodes they were ~120
/// bytes a node of transient memory, which `malloc` kept as the process's resident memory), while the reads keep
/// the server busy.
const WAITING: usize = 2 * IN_FLIGHT;

/// At most this many listings in flight in a re-sync.
const LISTINGS: usize = 4;

/// Runs until the session ends for good (a session made from a `Client`: its expiry; any session: its
/// [close](Session::close)) or the cache is dropped (the task is aborted).
pub(super) async fn run(shared: Arc<Shared>, session: Session, scope: Scope) {
    let closed = session.registry().closed();
    let end = tokio::select! {
        end = follow_sessions(&shared, &session, &scope) => end,
        () = closed.cancelled() => Error::Closed,
    };
    shared.end(end);
}

/// Follows each ZooKeeper session of `session` in turn (one, unless it is reconnecting and not pinned to one); the
/// error that ended the last.
async fn follow_sessions(shared: &Shared, session: &Session, scope: &Scope) -> Error {
    loop {
        let pinned = match session.pinned_usable().await {
            Ok(pinned) => pinned,
            Err(err) => return err,
        };
        let err = if scope.one_shot || shared.one_shot.load(Ordering::Relaxed) {
            super::oneshot::follow(shared, &pinned, scope).await
        } else {
            follow(shared, &pinned, scope).await
        };
        if !(session.follows_new_sessions() && err.is_terminal() && err != Error::Closed) {
            return err;
        }
        tracing::debug!(path = %scope.root, %err, "cache: the ZooKeeper session ended; following the next one");
    }
}

/// Follows one ZooKeeper session: arm, read everything, then read what each event names; again after every
/// reconnection. Returns the error that ended the session.
async fn follow(shared: &Shared, session: &Session, scope: &Scope) -> Error {
    let client = session.client();
    let mut armed: Option<PersistentWatcher> = None;
    loop {
        let next = match session
            .retry()
            .run_at("addWatch", &scope.root, || {
                client.watch(&scope.root, AddWatchMode::PersistentRecursive)
            })
            .await
        {
            Ok(next) => next,
            Err(err) if broke_connection(&err) => continue,
            // ZooKeeper 3.5: no persistent watches (and it closes the connection after this answer).
            Err(Error::ZooKeeper {
                source: zk::Error::Unimplemented,
                ..
            }) => {
                tracing::info!(path = %scope.root, "cache: the server has no persistent watches; using one-shot watches");
                shared.one_shot.store(true, Ordering::Relaxed);
                return super::oneshot::follow(shared, session, scope).await;
            }
            Err(err) => return err,
        };
        // The old watcher goes only once the new one is registered, so the client never asks the server to remove
        // the path's watch in between (it does when a path's last watcher is dropped).
        let watcher = &mut *armed.insert(next);
        let outcome = match resync(shared, client, scope).await {
            Ok(()) => stream(shared, client, scope, watcher).await,
            Err(err) if broke_connection(&err) => reconnected(watcher).await,
            Err(err) => Err(err),
        };
        if let Err(err) = outcome {
            return err;
        }
    }
}

/// Reads the whole subtree and applies what differs: nodes created, changed and deleted since the cache last
/// looked. Sends `Initialized` after the first.
async fn resync(shared: &Shared, client: &Client, scope: &Scope) -> Result<()> {
    let mut waiting: VecDeque<(String, usize)> = VecDeque::new();
    // Directories read, their listing not sent yet.
    let mut unlisted: VecDeque<String> = VecDeque::new();
    // A names-only cache (of a node and its children) reads nothing: the root's listing says what exists.
    match scope.names_only {
        true => unlisted.push_back(scope.root.clone()),
        false => waiting.push_back((scope.root.clone(), 0)),
    }
    let mut reads = FuturesUnordered::new();
    let mut in_flight = 0;
    let mut listings = 0;
    loop {
        while listings < LISTINGS && waiting.len() < WAITING {
            let Some(dir) = unlisted.pop_front() else { break };
            listings += 1;
            in_flight += 1;
            reads.push(list(client, dir));
        }
        while in_flight < IN_FLIGHT && !waiting.is_empty() {
            let most = if shared.multi_read.load(Ordering::Relaxed) {
                BATCH
            } else {
                1
            };
            let batch: Vec<(String, usize)> = waiting.drain(..most.min(waiting.len())).collect();
            in_flight += batch.len();
            reads.push(read_batch(client, batch));
        }
        let Some(read) = reads.next().await else { break };
        match read {
            Read::Data(batch, Err(err)) => {
                in_flight -= batch.len();
                // A server without multiRead (ZooKeeper 3.5), or a connection that broke under a batch (a reply
                // too large for somebody on the way, perhaps): single reads from now on.
                tracing::debug!(path = %scope.root, %err, "cache: batched reads failed; reading one node at a time");
                shared.multi_read.store(false, Ordering::Relaxed);
                let err = Error::zk("multiRead", &batch[0].0, err);
                if broke_connection(&err) || err.is_terminal() {
                    return Err(err);
                }
                waiting.extend(batch);
            }
            Read::Data(batch, Ok(found)) => {
                in_flight -= batch.len();
                for ((path, level), read) in batch.into_iter().zip(found) {
                    let read = found_node(read).at("getData", &path)?;
                    let has_children = read.as_ref().is_some_and(|(_, stat)| stat.num_children > 0);
                    let mut state = shared.write();
                    state.apply(&path, read, &shared.events);
                    if has_children && scope.lists(level) {
                        unlisted.push_back(path);
                    } else {
                        state.remove_under(&path, &shared.events);
                    }
                }
            }
            Read::List(path, read) => {
                in_flight -= 1;
                listings -= 1;
                let Some((names, _)) = found_node(read).at("getChildren", &path)? else {
                    shared.write().apply(&path, None, &shared.events);
                    continue;
                };
                let level = scope.level(&path).unwrap_or(0) + 1;
                let mut state = shared.write();
                if scope.names_only {
                    state.apply(&path, Some((Vec::new(), UNREAD)), &shared.events);
                    for name in &names {
                        state.apply(
                            &child_path(&path, name),
                            Some((Vec::new(), UNREAD)),
                            &shared.events,
                        );
                    }
                }
                state.keep_children(&path, &names, &shared.events);
                drop(state);
                if scope.names_only {
                    continue;
                }
                waiting.extend(names.iter().map(|name| (child_path(&path, name), level)));
            }
        }
    }
    shared.initialized();
    Ok(())
}

/// The answer to one read of a re-sync.
enum Read {
    /// Nodes (with their level below the root) and their data, each `NoNode` or found; the whole batch may fail.
    Data(Vec<(String, usize)>, std::result::Result<Vec<Found>, zk::Error>),
    /// A node and its children.
    List(String, std::result::Result<(Vec<String>, Stat), zk::Error>),
}

type Found = std::result::Result<(Vec<u8>, Stat), zk::Error>;

/// Reads the nodes of `batch` (sent now): one `getData`, or a `multiRead` of them all — one request and one reply
/// for up to [`BATCH`] nodes, where a server spends most of a single read's cost on the request itself.
fn read_batch(client: &Client, batch: Vec<(String, usize)>) -> futures::future::BoxFuture<'_, Read> {
    if let [(path, _)] = batch.as_slice() {
        let read = client.get_data(path);
        return read.map(move |read| Read::Data(batch, Ok(vec![read]))).boxed();
    }
    let mut reader = client.new_multi_reader();
    for (path, _) in &batch {
        if let Err(err) = reader.add_get_data(path) {
            return std::future::ready(Read::Data(batch, Err(err))).boxed();
        }
    }
    let committed = reader.commit();
    async move {
        let found = committed.await.map(|results| {
            results
                .into_iter()
                .map(|result| match result {
                    zk::MultiReadResult::Data { data, stat } => Ok((data, stat)),
                    zk::MultiReadResult::Error { err } => Err(err),
                    _ => Err(zk::Error::UnexpectedError("no data for a getData".to_owned())),
                })
                .collect()
        });
        Read::Data(batch, found)
    }
    .boxed()
}

fn list(client: &Client, path: String) -> futures::future::BoxFuture<'_, Read> {
    client
        .get_children(&path)
        .map(move |read| Read::List(path, read))
        .boxed()
}

/// Reads what each event names, in order, until the connection is lost and comes back (`Ok`: re-sync now) or the
/// session ends (`Err`).
async fn stream(
    shared: &Shared,
    client: &Client,
    scope: &Scope,
    watcher: &mut PersistentWatcher,
) -> Result<()> {
    let mut reads: FuturesOrdered<NodeRead> = FuturesOrdered::new();
    loop {
        tokio::select! {
            biased;
            Some((path, read)) = reads.next(), if !reads.is_empty() => {
                match found_node(read).at("getData", &path) {
                    Ok(read) => shared.write().apply(&path, read, &shared.events),
                    // The connection broke: the watcher tells when it is back, and everything is read again.
                    Err(err) if broke_connection(&err) => return reconnected(watcher).await,
                    Err(err) => return Err(err),
                }
            }
            event = watcher.changed(), if reads.len() < IN_FLIGHT => match event.event_type {
                EventType::Session => {
                    if let Some(err) = crate::base::error::session_ended(event.session_state) {
                        return Err(err);
                    }
                    if event.session_state == SessionState::Disconnected {
                        return reconnected(watcher).await;
                    }
                }
                // An event is the change itself: a names-only cache applies it as it comes, in order.
                EventType::NodeCreated | EventType::NodeDeleted if scope.names_only && scope.holds(&event.path) => {
                    let exists = (event.event_type == EventType::NodeCreated).then_some((Vec::new(), UNREAD));
                    shared.write().apply(&event.path, exists, &shared.events);
                }
                // Below its depth: nothing to read.
                EventType::NodeCreated | EventType::NodeDeleted if scope.names_only => {}
                EventType::NodeCreated | EventType::NodeDeleted => {
                    // A child's creation or deletion changes its parent's stat (children, cversion, pzxid), and
                    // no event says so: the parent is read too, first, so that once the child's event is out the
                    // parent as held is no older than it.
                    let parent = crate::base::idioms::parent_of(&event.path);
                    if event.path != scope.root && scope.holds(parent) {
                        reads.push_back(read(client, parent.to_owned()));
                    }
                    if scope.holds(&event.path) {
                        reads.push_back(read(client, event.path));
                    }
                }
                EventType::NodeDataChanged if scope.holds(&event.path) && !scope.names_only => {
                    reads.push_back(read(client, event.path));
                }
                _ => {}
            },
        }
    }
}

/// A `getData` in flight, with its path.
type NodeRead =
    futures::future::BoxFuture<'static, (String, std::result::Result<(Vec<u8>, Stat), zk::Error>)>;

/// A read of `path` (sent now), with its path.
fn read(client: &Client, path: String) -> NodeRead {
    client.get_data(&path).map(move |read| (path, read)).boxed()
}

/// Waits for the connection to come back (`Ok`) or the session to end (`Err`). Node events meanwhile are dropped:
/// the re-sync that follows reads everything.
async fn reconnected(watcher: &mut PersistentWatcher) -> Result<()> {
    loop {
        let event = watcher.changed().await;
        if event.event_type != EventType::Session {
            continue;
        }
        if let Some(err) = crate::base::error::session_ended(event.session_state) {
            return Err(err);
        }
        if matches!(
            event.session_state,
            SessionState::SyncConnected | SessionState::ConnectedReadOnly
        ) {
            return Ok(());
        }
    }
}

/// A read's result with "no node" (or none we may read) as `None`.
fn found_node<T>(read: std::result::Result<T, zk::Error>) -> std::result::Result<Option<T>, zk::Error> {
    match read {
        Ok(value) => Ok(Some(value)),
        // A node our session may not read is left out (ZooKeeper sends no events for it either).
        Err(zk::Error::NoNode | zk::Error::NoAuth) => Ok(None),
        Err(err) => Err(err),
    }
}
