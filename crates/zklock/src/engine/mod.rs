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
//! * **Metrics.** [`acquire`] is where every recipe's wait is measured: `zklock_acquire_wait_seconds` (see the
//!   crate documentation), labelled with [`Rules::recipe`].

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument as _;
use zookeeper_client::{self as zk, CreateMode, EventType};

use crate::base::error::{Error, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::names::{self, Contender, Marker};
use crate::base::path::child_path;
use crate::base::retry::{is_connection_loss, Attempts};
use crate::node::guard::Guard;
use crate::node::lost::LostSignal;
use crate::node::own::OwnNode;
use crate::session::listener::QueueEvent;
use crate::session::Session;

/// What a recipe's policy says about our position in the sorted queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Nothing blocks us.
    Ready,
    /// Watch the contender at index `watch`; `sole` if it is the only one that blocks us, in which case its
    /// deletion is our turn.
    Wait { watch: usize, sole: bool },
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

/// A recipe's rules: the node it creates, which children are contenders, and when a contender's turn has come.
/// [`acquire`] does everything around them (the create, the lost signal, timeouts, cancellation, events).
///
/// A queue recipe (Mutex, RwLock, LeaderElection, the Semaphore's gate) only says which children count
/// ([`keeps`](Rules::keeps)) and whose turn it is ([`turn`](Rules::turn)); the provided
/// [`wait`](Rules::wait) and [`now`](Rules::now) apply them, watching only the one contender `turn` names. A recipe
/// that is not a plain queue (the Semaphore's leases) replaces `wait` and `now`.
pub(crate) trait Rules {
    /// The marker of the node we create.
    fn marker(&self) -> Marker;

    /// The `recipe` label of this queue's metrics; by default named after the marker.
    fn recipe(&self) -> &'static str {
        recipe_of(self.marker())
    }

    /// Whether children with this marker are contenders we queue with; by default those
    /// [`Marker::queues_with`] ours. Every other contender node in the directory is a conflict: the acquire fails
    /// with [`Error::InUse`] rather than act as if the directory were free (see [`check_turn`]).
    fn keeps(&self, marker: Marker) -> bool {
        self.marker().queues_with(marker)
    }

    /// Our turn, given the sorted contenders and our index among them; by default the exclusive rule.
    ///
    /// Must be monotone: removing contenders from the queue never adds a blocker (a contender `sole` in a queue
    /// stays `sole` in any queue with fewer of the others). [`wait_turn`] relies on it to learn that the contender it
    /// waits for has become its only blocker from a deletion alone, without listing the queue again.
    fn turn(&self, queue: &[Contender], me: usize) -> Turn {
        exclusive_turn(queue, me)
    }

    /// Waits until it is our turn. `listing` is the listing pipelined with our create, if there was one.
    async fn wait(
        &self,
        session: &Session,
        node: &OwnNode,
        lost: &LostSignal,
        listing: Option<Vec<String>>,
    ) -> Result<()> {
        wait_turn(self, session, node, lost, listing).await
    }

    /// One look at `children`, without waiting: is it our turn now?
    async fn now(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        Ok(check_turn(self, node, lost, children).await? == Step::Ready)
    }
}

/// The exclusive rule over the nodes of one marker (LeaderElection's latch, the Semaphore's gate).
pub(crate) struct Exclusive(pub(crate) Marker);

impl Rules for Exclusive {
    fn marker(&self) -> Marker {
        self.0
    }

    fn recipe(&self) -> &'static str {
        match self.0 {
            // The exclusive rule over `lock-` nodes is the semaphore's acquirers' turn (a Mutex has rules of its own,
            // mutex.rs): told apart from the wait for a lease itself.
            Marker::Lock => "semaphore_gate",
            marker => recipe_of(marker),
        }
    }
}

/// The `recipe` label of a queue of nodes with this marker.
fn recipe_of(marker: Marker) -> &'static str {
    match marker {
        Marker::Lock | Marker::KazooLock => "mutex",
        Marker::Read | Marker::KazooRead => "rwlock_read",
        Marker::Write => "rwlock_write",
        Marker::Latch => "election",
        Marker::Lease => "semaphore",
    }
}

/// Where a queue recipe contends: its session, its queue directory, and the data of the node it creates there.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) session: Session,
    pub(crate) path: String,
    pub(crate) data: Vec<u8>,
}

impl Place {
    /// The directory `path` (checked: [`Error::InvalidPath`]) on `session`, with no data.
    pub(crate) fn new(session: impl Into<Session>, path: &str) -> Result<Place> {
        Ok(Place {
            session: session.into(),
            path: crate::base::path::validate(path)?,
            data: Vec::new(),
        })
    }

    /// The directory `name` below this one, with the same session and data.
    pub(crate) fn child(&self, name: &str) -> Place {
        Place {
            session: self.session.clone(),
            path: child_path(&self.path, name),
            data: self.data.clone(),
        }
    }
}

/// The public `with_data`, `path` and `session` of a queue recipe kept in `self.place` (a [`Place`]). The
/// recipe names each method, with its doc comment, where its type is (so `grep 'fn path'` finds it there):
///
/// ```ignore
/// engine::place_methods! {
///     /// Data stored in our node while we wait and hold.
///     pub fn with_data;
///     /// The lock directory.
///     pub fn path;
///     /// The session and policies this lock uses.
///     pub fn session;
/// }
/// ```
macro_rules! place_methods {
    (
        $(#[$data_doc:meta])* pub fn with_data;
        $(#[$path_doc:meta])* pub fn path;
        $(#[$session_doc:meta])* pub fn session;
    ) => {
        $(#[$data_doc])*
        pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Self {
            self.place.data = data.into();
            self
        }

        $(#[$path_doc])*
        pub fn path(&self) -> &str {
            &self.place.path
        }

        $(#[$session_doc])*
        pub fn session(&self) -> &$crate::session::Session {
            &self.place.session
        }
    };
}
pub(crate) use place_methods;

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

/// The three public acquires of a recipe, over its private `acquire(.., wait: Wait) -> Result<Option<_>>`: one
/// that waits as long as it takes, a `try_` one that does not wait ([`Wait::Never`], the only one that can come
/// back without a guard) and a `_timeout` one. The recipe names each, with its doc comment, where its type is:
///
/// ```ignore
/// engine::acquire_methods! {
///     acquire(Marker::Read) => ReadGuard:
///     /// Waits as long as it takes for a read lock.
///     pub async fn read;
///     /// Takes a read lock only if ...
///     pub async fn try_read;
///     /// Waits at most `timeout` for a read lock ...
///     pub async fn read_timeout;
/// }
/// ```
macro_rules! acquire_methods {
    ($(
        $acquire:ident($($arg:expr),*) => $held:ty:
        $(#[$forever_doc:meta])* pub async fn $forever:ident;
        $(#[$never_doc:meta])* pub async fn $never:ident;
        $(#[$timeout_doc:meta])* pub async fn $timeout:ident;
    )+) => {$(
        $(#[$forever_doc])*
        pub async fn $forever(&self) -> $crate::base::error::Result<$held> {
            let held = self.$acquire($($arg,)* $crate::engine::Wait::Forever).await?;
            Ok(held.expect("a blocking acquire returns a guard"))
        }

        $(#[$never_doc])*
        pub async fn $never(&self) -> $crate::base::error::Result<Option<$held>> {
            self.$acquire($($arg,)* $crate::engine::Wait::Never).await
        }

        $(#[$timeout_doc])*
        pub async fn $timeout(&self, timeout: ::std::time::Duration) -> $crate::base::error::Result<$held> {
            let held = self.$acquire($($arg,)* $crate::engine::Wait::timeout(timeout)).await?;
            Ok(held.expect("a timed acquire returns a guard or an error"))
        }
    )+};
}
pub(crate) use acquire_methods;

/// Creates our node (holding the place's data) in its directory and waits, as `rules` decide and at most as long as `wait` allows,
/// for our turn; hands back the guard. `Ok(None)` only for [`Wait::Never`] when it is not our turn (our node is
/// then already removed). On an error, a timeout or cancellation our node is removed.
///
/// The one place an acquire's wait is measured: `zklock_acquire_wait_seconds{recipe, outcome}`, from the call to
/// the guard (`acquired`), to `busy` (a try that found it taken), `timeout` or `error`; nothing when cancelled.
pub(crate) async fn acquire(place: &Place, rules: &impl Rules, wait: Wait) -> Result<Option<Guard>> {
    let started = Instant::now();
    let span = tracing::info_span!("acquire", recipe = rules.recipe(), path = place.path);
    let result = acquire_unmeasured(place, rules, wait)
        .instrument(span.clone())
        .await;
    let outcome = match &result {
        Ok(Some(_)) => "acquired",
        Ok(None) => "busy",
        Err(Error::Timeout) => "timeout",
        Err(_) => "error",
    };
    let waited = started.elapsed();
    span.in_scope(|| match &result {
        Ok(Some(guard)) => tracing::debug!(outcome, ?waited, node = %guard.path(), "acquire ended"),
        Err(err) => tracing::debug!(outcome, ?waited, %err, "acquire ended"),
        Ok(None) => tracing::debug!(outcome, ?waited, "acquire ended"),
    });
    metrics::histogram!("zklock_acquire_wait_seconds", "recipe" => rules.recipe(), "outcome" => outcome)
        .record(waited);
    result
}

async fn acquire_unmeasured(place: &Place, rules: &impl Rules, wait: Wait) -> Result<Option<Guard>> {
    let (dir, data) = (place.path.as_str(), place.data.as_slice());
    // One ZooKeeper session for the whole acquire (a reconnecting `Session` may make a new one meanwhile).
    let session = &place.session.pinned();
    let enqueue = enqueue(session, dir, rules.marker(), data);
    let (mut node, listing) = match wait {
        Wait::Until(deadline) => tokio::time::timeout_at(deadline, enqueue)
            .await
            .map_err(|_| Error::Timeout)??,
        _ => enqueue.await?,
    };
    // Bound to the node: whichever way the node is deleted by us (a timeout, a failure, cancellation at any await
    // point, the guard's release or drop), the signal is dismissed first and reports nothing.
    let lost = LostSignal::for_node(&mut node, session.lost_policy());
    session.emit(QueueEvent::Created { path: node.path() });
    let ours = match wait {
        Wait::Forever => rules.wait(session, &node, &lost, listing).await.map(|()| true),
        Wait::Until(deadline) => {
            match tokio::time::timeout_at(deadline, rules.wait(session, &node, &lost, listing)).await {
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
                None => {
                    let client = session.client();
                    session
                        .retry()
                        .run_at("getChildren", dir, || client.list_children(dir))
                        .await?
                }
            };
            rules.now(&node, &lost, children).await
        }
    };
    match ours {
        Ok(true) => {
            // Nothing to wait for: the watch on our node was requested when the lost signal started.
            tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, "turn");
            lost.set_holding();
            session.emit(QueueEvent::Acquired {
                path: node.path(),
                fencing_token: node.czxid,
            });
            Ok(Some(Guard::new(node, lost, rules.recipe())))
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

/// After a create whose reply was lost: did it happen? `sync` first so that a lagging ensemble member has seen
/// everything the leader committed before we look.
async fn find_own(node: &mut OwnNode) -> Result<bool> {
    let (client, retry) = (&node.client, &node.retry);
    retry
        .run_at("sync", &node.dir, || client.sync(&node.dir))
        .await
        .if_exists()?;
    // A missing directory holds no node of ours.
    let children = idioms::list_or_empty(client, retry, &node.dir).await?;
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

/// What one look at the queue says we do next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
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
struct Ahead {
    name: String,
    /// Its deletion leaves the contender we wait for as our only blocker (the listing showed every blocker): then
    /// that deletion alone tells us so, with no listing. Otherwise its deletion is when we list the queue again.
    makes_sole: bool,
}

/// One look at the queue: where are we, and what do we wait for?
async fn check_turn<R: Rules + ?Sized>(
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
async fn wait_turn<R: Rules + ?Sized>(
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
            let ahead_fired = async {
                match early.as_mut() {
                    Some((watcher, _)) => watcher.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
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
                reason = lost.lost() => return Err(reason.error(&node.path())),
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
