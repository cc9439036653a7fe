//! The one mechanism every recipe is built on: take a place in a queue directory, wait until the nodes that
//! block us are gone — watching only the nearest of them — and hand back a guard.
//!
//! * **Fewer round trips.** The create and the first listing are sent back to back; ZooKeeper processes a
//!   session's requests in order, so the listing already contains our node. An uncontended acquire therefore
//!   costs one round trip. When the node we watch was our only blocker, its deletion *is* our turn: no re-list.
//! * **No herd.** Each waiter watches exactly one node, so a release wakes exactly one waiter.
//! * **Lost create replies.** Our node's name carries a uuid; after a connection loss during the create we
//!   `sync` and look for it instead of creating a second one (which would deadlock the queue behind an orphan).
//!   Should a duplicate ever appear anyway, the wait loop deletes it.
//! * **Predecessor vanishing between list and watch.** The watch is set with `getData`, which fails with
//!   `NoNode` (and leaves no watch behind) when the node is already gone; we then simply list again.
//! * **Cancellation.** Our node is an [`OwnNode`], removed when dropped unless it became a guard.

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{self as zk, Acls, Client, CreateMode, EventType, SessionState};

use crate::error::{session_error, Error, Result};
use crate::events::{Listener, QueueEvent};
use crate::guard::Guard;
use crate::lost::{LostPolicy, LostReason, LostSignal};
use crate::node::{self, Contender, Marker};
use crate::own_node::{child_path, OwnNode};
use crate::retry::{is_connection_loss, RetryPolicy};

/// What a recipe's policy says about our position in the sorted queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Nothing blocks us.
    Ready,
    /// Watch the contender at index `watch`; `sole` if it is the only one that blocks us, in which case its
    /// deletion is our turn.
    Wait { watch: usize, sole: bool },
}

/// A recipe's rules: which children are contenders, and when a contender's turn has come.
#[derive(Clone, Copy)]
pub(crate) struct Rules {
    /// The marker of the node we create.
    pub(crate) marker: Marker,
    /// Which children count as contenders.
    pub(crate) keep: fn(Marker, bool) -> bool,
    /// Whether kazoo's nodes count (passed to `keep`).
    pub(crate) kazoo: bool,
    /// Our turn, given the sorted contenders and our index among them.
    pub(crate) turn: fn(&[Contender], usize) -> Turn,
}

/// The exclusive rule: the lowest node holds; everybody else waits for the node just before them.
pub(crate) fn exclusive_turn(_queue: &[Contender], me: usize) -> Turn {
    if me == 0 {
        Turn::Ready
    } else {
        Turn::Wait {
            watch: me - 1,
            sole: me == 1,
        }
    }
}

/// Settings shared by every recipe.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Data stored in our node, shown by `zklock status` (e.g. host, pid and what the holder does).
    pub data: Vec<u8>,
    /// When a held guard counts as lost because of a disconnection.
    pub lost_policy: LostPolicy,
    /// How operations are retried across connection loss.
    pub retry: RetryPolicy,
    /// Also treat kazoo's contender nodes (`__lock__`, `__rlock__`) as part of the queue.
    pub recognize_kazoo: bool,
    /// Receives progress events (created, waiting, woken, acquired).
    pub listener: Option<Listener>,
}

/// How long an acquire may wait for its turn.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wait {
    Forever,
    Never,
    Until(Instant),
}

impl Wait {
    pub(crate) fn timeout(timeout: Duration) -> Wait {
        Wait::Until(Instant::now() + timeout)
    }
}

/// How a recipe decides that its node's turn has come. [`take_turn`] does everything around it (the create,
/// the lost signal, timeouts, cancellation, events); an implementation only looks at the queue.
pub(crate) trait Turns {
    /// Waits until it is our turn. `listing` is the listing pipelined with our create, if there was one.
    async fn wait(&self, node: &OwnNode, lost: &LostSignal, listing: Option<Vec<String>>) -> Result<()>;
    /// One look at `children`, without waiting: is it our turn now?
    async fn now(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool>;
}

/// The queue recipes' turns: a [`Rules`] applied to the sorted contenders.
struct Queue<'a> {
    rules: Rules,
    listener: &'a Option<Listener>,
}

impl Turns for Queue<'_> {
    async fn wait(&self, node: &OwnNode, lost: &LostSignal, listing: Option<Vec<String>>) -> Result<()> {
        wait_turn(node, lost, listing, self.rules, self.listener).await
    }

    async fn now(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        Ok(check_turn(node, lost, children, self.rules).await? == Step::Ready)
    }
}

/// Takes a place in `dir` and waits for our turn according to `wait`.
/// `Ok(None)` only for [`Wait::Never`] when it is not our turn (our node is then already removed).
pub(crate) async fn acquire(
    client: &Client,
    dir: &str,
    rules: Rules,
    options: &Options,
    wait: Wait,
) -> Result<Option<Guard>> {
    let turns = Queue {
        rules,
        listener: &options.listener,
    };
    take_turn(client, dir, rules.marker, options, wait, &turns).await
}

/// Creates our node in `dir` and waits, as `turns` decides and at most as long as `wait` allows, for our turn;
/// hands back the guard. `Ok(None)` only for [`Wait::Never`] when it is not our turn (our node is then already
/// removed). On an error, a timeout or cancellation our node is removed.
pub(crate) async fn take_turn(
    client: &Client,
    dir: &str,
    marker: Marker,
    options: &Options,
    wait: Wait,
    turns: &impl Turns,
) -> Result<Option<Guard>> {
    let enqueue = enqueue(client, dir, marker, &options.data, &options.retry);
    let (mut node, listing) = match wait {
        Wait::Until(deadline) => tokio::time::timeout_at(deadline, enqueue)
            .await
            .map_err(|_| Error::Timeout)??,
        _ => enqueue.await?,
    };
    // Bound to the node: whichever way the node is deleted by us (a timeout, a failure, cancellation at any await
    // point, the guard's release or drop), the signal is dismissed first and reports nothing.
    let lost = LostSignal::for_node(&mut node, options.lost_policy);
    Listener::emit(&options.listener, QueueEvent::Created { path: node.path() });
    let ours = match wait {
        Wait::Forever => turns.wait(&node, &lost, listing).await.map(|()| true),
        Wait::Until(deadline) => {
            match tokio::time::timeout_at(deadline, turns.wait(&node, &lost, listing)).await {
                Ok(result) => result.map(|()| true),
                Err(_) => {
                    drop(lost);
                    node.delete().await?;
                    return Err(Error::Timeout);
                }
            }
        }
        Wait::Never => {
            let children = match listing {
                Some(children) => children,
                None => options.retry.run(|| client.list_children(dir)).await?,
            };
            turns.now(&node, &lost, children).await
        }
    };
    match ours {
        Ok(true) => {
            lost.set_holding();
            Listener::emit(
                &options.listener,
                QueueEvent::Acquired {
                    path: node.path(),
                    fencing_token: node.czxid,
                },
            );
            Ok(Some(Guard::new(node, lost)))
        }
        Ok(false) => {
            drop(lost);
            node.delete().await?;
            Ok(None)
        }
        // `node` is dropped here and removes itself in the background.
        Err(err) => Err(err),
    }
}

/// The error for a wait that found our node gone from a listing. The deletion of our ephemeral node can reach
/// us before the news that the session ended, so the session state decides between the two.
pub(crate) fn node_gone(node: &OwnNode, lost: &LostSignal) -> Error {
    match lost.reason() {
        Some(LostReason::SessionExpired) => Error::SessionExpired,
        Some(LostReason::ClientClosed) => Error::Closed,
        _ if node.client.state() == SessionState::Expired => Error::SessionExpired,
        _ => Error::NodeDeleted { path: node.path() },
    }
}

/// Creates our ephemeral-sequential node (and missing parents), pipelined with the first listing (`None` when
/// the node had to be found again after a lost reply). Recipes that are not a plain queue (the semaphore's lease)
/// use it directly to get the same lost-reply recovery and cancellation safety.
pub(crate) async fn enqueue(
    client: &Client,
    dir: &str,
    marker: Marker,
    data: &[u8],
    retry: &RetryPolicy,
) -> Result<(OwnNode, Option<Vec<String>>)> {
    let unique = node::unique_prefix(&uuid::Uuid::new_v4());
    let prefix = format!("{}{}", child_path(dir, &unique), marker.as_str());
    let mut node = OwnNode::new(client, dir, unique, retry);
    let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let create = client.create(&prefix, data, &mode);
        let listing = client.list_children(dir);
        let (created, listed) = tokio::join!(create, listing);
        match created {
            Ok((stat, sequence)) => {
                node.name = Some(format!("{}{}{sequence}", node.unique, marker.as_str()));
                node.sequence = sequence.into_i64();
                node.czxid = stat.czxid;
                return Ok((node, listed.ok()));
            }
            Err(zk::Error::NoNode) => {
                let parents = CreateMode::Persistent.with_acls(Acls::anyone_all());
                retry.run(|| client.mkdir(dir, &parents)).await?;
            }
            Err(err) if is_connection_loss(&err) => {
                if retry.max_attempts.is_some_and(|max| attempt >= max) {
                    return Err(Error::ConnectionLoss { attempts: attempt });
                }
                tokio::time::sleep(retry.backoff(attempt)).await;
                if find_own(&mut node, retry).await? {
                    return Ok((node, None));
                }
            }
            Err(err) => return Err(err.into()),
        }
    }
}

/// After a create whose reply was lost: did it happen? `sync` first so that a lagging ensemble member has seen
/// everything the leader committed before we look.
async fn find_own(node: &mut OwnNode, retry: &RetryPolicy) -> Result<bool> {
    let client = &node.client;
    match retry.run(|| client.sync(&node.dir)).await {
        Ok(()) | Err(Error::ZooKeeper(zk::Error::NoNode)) => {}
        Err(err) => return Err(err),
    }
    let children = match retry.run(|| client.list_children(&node.dir)).await {
        Ok(children) => children,
        Err(Error::ZooKeeper(zk::Error::NoNode)) => return Ok(false),
        Err(err) => return Err(err),
    };
    let mut mine: Vec<Contender> = node::sorted_contenders(children, |_| true);
    mine.retain(|c| c.name.starts_with(&node.unique));
    let Some(first) = mine.first() else {
        return Ok(false);
    };
    let path = child_path(&node.dir, &first.name);
    match retry.run(|| client.check_stat(&path)).await? {
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

/// What one look at the queue says we do next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Ready,
    /// Watch this child; `sole` if it is our only blocker.
    Wait {
        name: String,
        sole: bool,
    },
}

/// One look at the queue: where are we, and what do we wait for?
async fn check_turn(node: &OwnNode, lost: &LostSignal, children: Vec<String>, rules: Rules) -> Result<Step> {
    let me_name = node.name.as_deref().unwrap_or_default();
    let queue = node::sorted_contenders(children, |m| (rules.keep)(m, rules.kazoo));
    // A second node of ours can only come from a create retried after a lost reply that did happen after all.
    for dup in queue
        .iter()
        .filter(|c| c.name.starts_with(&node.unique) && c.name != me_name)
    {
        let path = child_path(&node.dir, &dup.name);
        tracing::warn!(%path, "removing a duplicate node of ours");
        match node.retry.run(|| node.client.delete(&path, None)).await {
            Ok(()) | Err(Error::ZooKeeper(zk::Error::NoNode)) => {}
            Err(err) => return Err(err),
        }
    }
    let queue: Vec<Contender> = queue
        .into_iter()
        .filter(|c| c.name == me_name || !c.name.starts_with(&node.unique))
        .collect();
    let Some(me) = queue.iter().position(|c| c.name == me_name) else {
        return Err(node_gone(node, lost));
    };
    Ok(match (rules.turn)(&queue, me) {
        Turn::Ready => Step::Ready,
        Turn::Wait { watch, sole } => Step::Wait {
            name: queue[watch].name.clone(),
            sole,
        },
    })
}

/// Waits until it is our turn, watching only the contender the rules name.
async fn wait_turn(
    node: &OwnNode,
    lost: &LostSignal,
    mut listing: Option<Vec<String>>,
    rules: Rules,
    listener: &Option<Listener>,
) -> Result<()> {
    loop {
        let children = match listing.take() {
            Some(children) => children,
            None => node.retry.run(|| node.client.list_children(&node.dir)).await?,
        };
        let Step::Wait { name, sole } = check_turn(node, lost, children, rules).await? else {
            return Ok(());
        };
        let path = child_path(&node.dir, &name);
        let watcher = match node.retry.run(|| node.client.get_and_watch_data(&path)).await {
            Ok((_, _, watcher)) => watcher,
            // Gone between our listing and the watch: look again.
            Err(Error::ZooKeeper(zk::Error::NoNode)) => continue,
            Err(err) => return Err(err),
        };
        tracing::debug!(waiting_on = %path, "waiting for the contender ahead of us");
        Listener::emit(listener, QueueEvent::Waiting { on: path.clone() });
        tokio::select! {
            event = watcher.changed() => match event.event_type {
                EventType::NodeDeleted if sole => {
                    Listener::emit(listener, QueueEvent::Woken { by: path });
                    return Ok(());
                }
                EventType::Session => if let Some(err) = session_error(&event) {
                    return Err(err);
                },
                _ => Listener::emit(listener, QueueEvent::Woken { by: path }),
            },
            reason = lost.lost() => return Err(reason.error(&node.path())),
        }
    }
}
