//! Distributed locks and coordination recipes on ZooKeeper, correct under faults first.
//!
//! Built on the [`zookeeper_client`] crate (tokio). Every recipe takes a place in a queue directory of
//! ephemeral-sequential nodes and waits for its turn watching the node it depends on, so a release wakes the next
//! holder and at most one waiter more: no herd effect at any queue length.
//!
//! The recipes: [`Mutex`], [`RwLock`], [`Semaphore`], [`LeaderElection`], [`MultiLock`], [`Barrier`],
//! [`DoubleBarrier`], [`Queue`], [`PriorityQueue`], [`DelayQueue`], the counters [`SharedCount`] and
//! [`AtomicLong`], [`Group`], [`SetPartitioner`], [`NonBlockingLease`] and [`TwoPhaseCommit`]. Each takes a [`Session`] — or `&client` — which carries the
//! policies they share; [`inspect`] looks at any recipe's directory. For configuration and discovery, a [`Cache`]
//! keeps a node, its children or a tree in step with ZooKeeper and reports every change.
//!
//! What every recipe handles:
//! * **Connection loss during create** — our node name carries a uuid, so we find our node, never make a second.
//! * **The node we watch vanishing** between listing and watching — we look again; nothing stalls.
//! * **Session expiry, our node deleted, a long disconnection** — [`Guard::lost`] fires (see [`LostPolicy`]).
//! * **Cancellation at every await point** — dropping an acquire future removes our node.
//! * **Missing directories** — created as container nodes, as Curator does. Ordering is by sequence only.
//! * **Fencing** — [`Guard::fencing_token`], strictly increasing across holders; [`Guard::fenced_writes`].
//! * **A paused holder** — [`Guard::session_valid_until`]: a deadline for a watchdog outside this process.
//! * **Revocation** — [`request_revocation`] and [`revoke`], heard through [`Guard::revocation_requested`].
//! * **Who contends** — Curator's and kazoo's locks queue with ours; a recipe we cannot be ordered with is
//!   refused with [`Error::InUse`], never shared.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
//! let mutex = zklock::Mutex::new(&client, "/locks/orders")?;
//! let guard = mutex.lock().await?;
//! println!("holding {} with fencing token {}", guard.path(), guard.fencing_token());
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! The rest is in the repository's `docs/library.md`, one section each: what every recipe handles under faults,
//! the session every recipe takes, sessions that outlive expiry ([`Session::reconnecting`]), shutting down
//! ([`Session::close`]), tasks of one process (locks are not reentrant), sharing a path with Curator and kazoo,
//! several locks at once, counters and queues, group membership and two-phase commit, caches, errors and deadlines,
//! logging and metrics ([`describe_metrics`]), and the public API. Securing the client: `docs/security.md`; how
//! each recipe works: `docs/design.md`.
#![forbid(unsafe_code)]

// The layers, each using only those below it (docs/design.md, "crates/zklock", has the glossary):
// inspect/  a read-only look at any recipe's directory
// recipes/  locks/, queues/, coordination/, discovery/, counters.rs
// cache/    caches: a node, its children or a subtree kept in step with ZooKeeper (persistent watches)
// engine/   the contention mechanism of the queue recipes: rules, taking our place, waiting for our turn
// node/     our node: create and delete, the lost signal, holding through it (Held), the Guard
// session/  the Session every recipe takes: policies, reconnecting, close, writes once, reads
// base/     errors, paths, retries, node names, the plain ZooKeeper idioms, every metric's name, unit and help text
mod base;
mod cache;
mod engine;
mod inspect;
mod node;
mod recipes;
mod session;

pub use base::error::{Error, LostReason, Result};
pub use base::metrics::describe_metrics;
pub use base::path::child_path;
pub use base::retry::RetryPolicy;
pub use cache::{Cache, CacheBuilder, CacheEvent, CachedNode, Events};
pub use inspect::inspect;
pub use inspect::view::{Inspection, NodeKind, Participant, Recipe, Role};
pub use node::fenced::FencedWrites;
pub use node::guard::Guard;
pub use node::revocation::{request_revocation, revoke};
pub use recipes::coordination::barrier::Barrier;
pub use recipes::coordination::double_barrier::{DoubleBarrier, Participation};
pub use recipes::coordination::group::{Group, GroupLayout, Member, MemberEvent, Members, Membership};
pub use recipes::coordination::partitioner::{Partition, SetPartitioner};
pub use recipes::coordination::transaction::Decision;
pub use recipes::coordination::two_phase_commit::{Ballot, Coordinator, TwoPhaseCommit};
pub use recipes::counters::{AtomicLong, AtomicValue, SharedCount, SharedValue, Versioned};
pub use recipes::discovery::node_mode::NodeMode;
pub use recipes::discovery::persistent_node::PersistentNode;
pub use recipes::discovery::service::{
    Registration, ServiceCache, ServiceDiscovery, ServiceInstance, Strategy,
};
pub use recipes::locks::election::{Leader, LeaderElection, Leadership, Observer, Term};
pub use recipes::locks::lease::{NonBlockingLease, ObtainedLease};
pub use recipes::locks::multi_lock::{MultiGuard, MultiLock, Part};
pub use recipes::locks::mutex::Mutex;
pub use recipes::locks::rwlock::{ReadGuard, RwLock, WriteGuard};
pub use recipes::locks::semaphore::{Lease, Semaphore};
pub use recipes::queues::claim::Claimed;
pub use recipes::queues::delay::{DelayQueue, Delayed};
pub use recipes::queues::priority::PriorityQueue;
pub use recipes::queues::queue::Queue;
pub use session::listener::{Listener, QueueEvent};
pub use session::lost_policy::LostPolicy;
pub use session::reconnect::SessionEvent;
pub use session::Session;
pub use zookeeper_client;

/// The guard of a [`Mutex`].
pub type MutexGuard = Guard;

/// The README's Rust examples, compiled as doctests so that they keep working when pasted.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// docs/library.md's Rust examples, compiled as doctests.
#[doc = include_str!("../../../docs/library.md")]
#[cfg(doctest)]
pub struct LibraryDoctests;

/// docs/security.md's Rust example, compiled as a doctest.
#[doc = include_str!("../../../docs/security.md")]
#[cfg(doctest)]
pub struct SecurityDoctests;
