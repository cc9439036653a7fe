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

mod enqueue;
mod turn;

use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument as _;

use crate::base::error::{Error, Result};
use crate::base::names::{Contender, Marker};
use crate::base::path::child_path;
use crate::engine::enqueue::enqueue;
use crate::engine::turn::{check_turn, wait_turn, Step};
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
    let result = acquire_unmeasured(place, rules, wait, started)
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
    metrics::histogram!(crate::base::metrics::ACQUIRE_WAIT, "recipe" => rules.recipe(), "outcome" => outcome)
        .record(waited);
    result
}

async fn acquire_unmeasured(
    place: &Place,
    rules: &impl Rules,
    wait: Wait,
    started: Instant,
) -> Result<Option<Guard>> {
    let (dir, data) = (place.path.as_str(), place.data.as_slice());
    // One ZooKeeper session for the whole acquire (a reconnecting `Session` may make a new one meanwhile).
    let session = &place.session.pinned();
    let enqueue = enqueue(session, dir, rules.marker(), data);
    let (mut node, listing) = match wait {
        // A timeout bounds the wait for our turn, not the create of our node: a zero or tiny timeout still takes
        // a free lock, as `flock -w 0` and Curator's `acquire(0, …)` do. The create may take the session timeout
        // (the time within which a live session's request is answered) when the timeout is shorter.
        Wait::Until(deadline) => {
            let create_by = deadline.max(started + session.client().session_timeout());
            tokio::time::timeout_at(create_by, enqueue)
                .await
                .map_err(|_| Error::Timeout)??
        }
        _ => enqueue.await?,
    };
    // Past the deadline once our node exists: our turn is decided now, from the listing, without waiting.
    let (wait, expired) = match wait {
        Wait::Until(deadline) if deadline <= Instant::now() => (Wait::Never, true),
        wait => (wait, false),
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
            if expired {
                return Err(Error::Timeout);
            }
            Ok(None)
        }
        // `node` is dropped here and removes itself in the background.
        Err(err) => Err(err),
    }
}
