//! Waiting for our turn: one look at the queue decides (ready, wait for a node ahead, or a conflict), and the wait
//! watches only the nearest node that blocks us — and, to look ahead, the node just before it.

use std::future::Future;
use std::pin::Pin;

use zookeeper_client::{self as zk, EventType};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::names::{self, Contender, Marker};
use crate::base::path::child_path;
use crate::engine::{Rules, Turn};
use crate::node::lost::LostSignal;
use crate::node::own::OwnNode;
use crate::session::listener::QueueEvent;
use crate::session::Session;

/// What one look at the queue says we do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Ready,
    /// Watch this child; `sole` if it is our only blocker. Otherwise we also watch `ahead` (see [`wait_turn`]).
    Wait {
        name: String,
        sole: bool,
        ahead: Option<Ahead>,
    },
}

/// The second contender [`wait_turn`] watches, when the one it waits for is not its only blocker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ahead {
    name: String,
    /// Its deletion leaves the contender we wait for as our only blocker (the listing showed every blocker): then
    /// that deletion alone tells us so, with no listing. Otherwise its deletion is when we list the queue again.
    makes_sole: bool,
}

/// One look at the queue: where are we, and what do we wait for?
pub(crate) async fn check_turn<R: Rules + ?Sized>(
    rules: &R,
    node: &OwnNode,
    lost: &LostSignal,
    children: Vec<String>,
) -> Result<Step> {
    let me_name = node.name.as_deref().unwrap_or_default();
    // A node we cannot be ordered with: the two recipes would not exclude each other. Checked at every look, so of
    // two conflicting acquires the later one sees the earlier one's node (ZooKeeper orders the creates, and each
    // looks after its own create): both may refuse, never both hold.
    let in_use = |(other, what)| Error::InUse {
        path: node.dir.clone(),
        node: other,
        what,
    };
    let keep = |m| rules.keeps(m);
    let queue = if children.iter().any(|c| c == names::LEASES || c == names::LOCKS) {
        // Perhaps a semaphore's directory: its subdirectories tell.
        if let Some(found) = conflict(node, &children, keep).await? {
            return Err(in_use(found));
        }
        names::sorted_contenders(children, keep)
    } else {
        names::sorted_queue(children, keep).map_err(in_use)?
    };
    let queue = node.sweep_duplicates(queue).await?;
    // The sequence number first: a comparison of two integers, not of two names, per contender (by name alone
    // only when that finds nothing, as when our node is gone).
    let Some(me) = queue
        .iter()
        .position(|c| c.sequence == node.sequence && c.name == me_name)
        .or_else(|| queue.iter().position(|c| c.name == me_name))
    else {
        return Err(lost.node_gone(node));
    };
    Ok(match rules.turn(&queue, me) {
        Turn::Ready => Step::Ready,
        Turn::Wait { watch, sole } => Step::Wait {
            name: queue[watch].name.clone(),
            sole,
            ahead: (!sole && watch > 0).then(|| look_ahead(rules, queue, me, watch)),
        },
    })
}

/// Which contender to watch besides `queue[watch]`, which is not our only blocker (see [`wait_turn`]).
///
/// If the contender just before it is the only other blocker — the rules say so of the queue without it, and
/// since no contender can come before ours later (sequence numbers only grow) and [`Rules::turn`] is monotone,
/// what the listing showed stays true — its deletion makes `queue[watch]` our only blocker: watched, no listing
/// is needed after it. Otherwise we watch a contender further ahead (two before `queue[watch]` when there is
/// one): when it goes, most often because it held and released, we list again — two turns before ours, so that
/// the listing is over long before our predecessor can release, even by holders that release the moment they
/// hold (docs/benchmarks.md, "Waiters back to back").
fn look_ahead<R: Rules + ?Sized>(rules: &R, mut queue: Vec<Contender>, me: usize, watch: usize) -> Ahead {
    let before = watch - 1;
    // The queue without `queue[before]`: moved in place, no name copied (this runs at every look at a queue of
    // thousands).
    let removed = queue.remove(before);
    let makes_sole = me > before
        && rules.turn(&queue, me - 1)
            == Turn::Wait {
                watch: watch - 1,
                sole: true,
            };
    // `queue[before]` if its deletion makes ours sole; otherwise the one before it, when there is one.
    let name = if makes_sole || before == 0 {
        removed.name
    } else {
        queue.swap_remove(before - 1).name
    };
    Ahead { name, makes_sole }
}

/// The first child of our queue directory that we may not share it with ([`names::conflict`]), or a semaphore using
/// it (its `leases` or `locks` directory holding contenders: looked into only when one is there, which no queue of
/// ours has).
async fn conflict(
    node: &OwnNode,
    children: &[String],
    keep: impl Fn(Marker) -> bool,
) -> Result<Option<(String, &'static str)>> {
    if let Some(found) = names::conflict(children, keep) {
        return Ok(Some(found));
    }
    let mut inside = [Vec::new(), Vec::new()];
    for (dir, listed) in [names::LEASES, names::LOCKS].into_iter().zip(&mut inside) {
        if children.iter().any(|c| c == dir) {
            *listed = idioms::list_or_empty(&node.client, &node.retry, &child_path(&node.dir, dir)).await?;
        }
    }
    let [leases, locks] = inside;
    Ok(names::is_semaphore(children, &leases, &locks).then(|| {
        let dir = if leases.is_empty() {
            names::LOCKS
        } else {
            names::LEASES
        };
        (dir.to_owned(), names::SEMAPHORE)
    }))
}

/// A pending watch notification.
type Fired = Pin<Box<dyn Future<Output = zk::WatchedEvent> + Send>>;

/// A watch on the contender we wait for: its name and its pending notification.
type Watched = (String, Fired);

/// Waits until it is our turn, watching only the contender the rules name — and, when that one is not our only
/// blocker, also one contender further ahead ([`look_ahead`]).
///
/// Why the second watch: in a queue of N, the contender we wait for is usually deleted because it held and
/// released, and then nothing else blocks us — but a listing taken before it held cannot tell, so its deletion
/// would cost a listing of all N names between the release and our turn. With the second watch the hand-off is
/// "delete → notification → holder" at any queue length (docs/benchmarks.md, "Waiters"):
///
/// * a waiter whose listing showed every blocker — the contender it waits for and the one just before it — learns
///   from the latter's deletion alone that its predecessor is now its only blocker: no listing at all;
/// * a waiter further back watches a contender two ahead of its predecessor and lists the queue again when that one
///   goes (it held and released, most often), two turns before its own; that listing shows it the case above.
///
/// A release so notifies the next holder, the waiter behind it (which needs no request) and the one behind that
/// (which lists) — three waiters, never more.
pub(crate) async fn wait_turn<R: Rules + ?Sized>(
    rules: &R,
    session: &Session,
    node: &OwnNode,
    lost: &LostSignal,
    mut listing: Option<Vec<String>>,
) -> Result<()> {
    // Kept across looks at the queue while the contender we wait for stays the same.
    let mut watching: Option<Watched> = None;
    loop {
        let children = match listing.take() {
            Some(children) => children,
            None => {
                tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, "listing");
                let children = node
                    .retry
                    .run_at("getChildren", &node.dir, || node.client.list_children(&node.dir))
                    .await?;
                tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, children = children.len(), "listed");
                children
            }
        };
        let Step::Wait {
            name,
            mut sole,
            ahead,
        } = check_turn(rules, node, lost, children).await?
        else {
            return Ok(());
        };
        let path = child_path(&node.dir, &name);
        let mut changed = match watching.take() {
            Some((watched, changed)) if watched == name => changed,
            _ => {
                // With `getData`; or, when the contender's ACL keeps its node from us, a watch on the directory
                // (ordering needs names only).
                let watched =
                    crate::session::read::read_and_watch_node(&node.client, &node.retry, &node.dir, &name)
                        .await?;
                // Gone between our listing and the watch: look again.
                let Some((_, _, watcher)) = watched else {
                    continue;
                };
                tracing::debug!(waiting_on = %path, "waiting for the contender ahead of us");
                session.emit(QueueEvent::Waiting { on: path.clone() });
                Box::pin(crate::base::idioms::fired(watcher))
            }
        };
        // The look-ahead watch, and whether its deletion makes `name` our only blocker.
        let mut early: Option<(Fired, bool)> = None;
        if let Some(ahead) = ahead {
            match watch_ahead(&node.client, &child_path(&node.dir, &ahead.name)).await {
                AheadWatch::Watching(watcher) => {
                    early = Some((Box::pin(crate::base::idioms::fired(watcher)), ahead.makes_sole));
                }
                // Gone already, and it was the only other blocker: the one we wait for is now the only one.
                AheadWatch::Gone if ahead.makes_sole => sole = true,
                // Gone already: the queue has moved since our listing; look again, still watching `name`.
                AheadWatch::Gone => {
                    watching = Some((name, changed));
                    continue;
                }
                AheadWatch::Unwatched => {}
            }
        }
        loop {
            let ahead_fired = crate::base::idioms::or_pending(early.as_mut().map(|(watcher, _)| watcher));
            // Biased, in the order ZooKeeper sends them: both watches fire on one session, whose notifications come
            // in zxid order, and when both are in by the time we look (a loaded machine: the contender ahead went,
            // then the one we wait for held and released) the look-ahead's, older, must be taken first — taken
            // second it would cost a listing that it makes needless (found by `a_waiter_deep_in_the_queue_…` in CI).
            // A loss before either.
            tokio::select! {
                biased;
                reason = lost.lost() => return Err(reason.error(&node.path())),
                event = ahead_fired => {
                    tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, event = ?event.event_type, "look-ahead notified");
                    let makes_sole = early.take().is_some_and(|(_, makes_sole)| makes_sole);
                    match event.event_type {
                        EventType::Session => if let Some(err) = idioms::session_error(&event) {
                            return Err(err);
                        },
                        // The other blocker went: the contender we wait for is our only one now. Its deletion is
                        // our turn; no request.
                        EventType::NodeDeleted if makes_sole => {
                            sole = true;
                            continue;
                        }
                        _ => {}
                    }
                    // The contender ahead changed (most often: it held and released): look again.
                    watching = Some((name, changed));
                    break;
                }
                event = &mut changed => {
                    tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, sole, event = ?event.event_type, "notified");
                    match event.event_type {
                        EventType::NodeDeleted if sole => {
                            session.emit(QueueEvent::Woken { by: path });
                            return Ok(());
                        }
                        EventType::Session => {
                            if let Some(err) = idioms::session_error(&event) {
                                return Err(err);
                            }
                            break;
                        }
                        _ => {
                            session.emit(QueueEvent::Woken { by: path });
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// The look-ahead watch of [`wait_turn`].
enum AheadWatch {
    Watching(zk::OneshotWatcher),
    Gone,
    /// Not watched (no permission to read it, or a request that failed): we only look again later, when the
    /// contender we wait for goes — never wrong, only slower.
    Unwatched,
}

async fn watch_ahead(client: &zk::Client, path: &str) -> AheadWatch {
    match client.get_and_watch_data(path).await {
        Ok((_, _, watcher)) => AheadWatch::Watching(watcher),
        Err(zk::Error::NoNode) => AheadWatch::Gone,
        Err(err) => {
            tracing::debug!(%path, %err, "not watching a contender further ahead");
            AheadWatch::Unwatched
        }
    }
}
