//! Distributed locks and coordination recipes on ZooKeeper, correct under faults first.
//!
//! Built on the [`zookeeper_client`] crate (tokio). Every recipe takes a place in a queue directory of
//! ephemeral-sequential nodes and waits for its turn watching only the node it depends on, so a release wakes
//! exactly one waiter (no herd effect). That mechanism lives in one place (`contention.rs`); each recipe is a small
//! set of rules on top of it.
//!
//! What every recipe handles:
//! * **Connection loss during create** — our node name carries a uuid (Curator's `_c_<uuid>-` format), so after a
//!   lost reply we find our node instead of creating a second one.
//! * **The node we watch vanishing between listing and watching** — the watch is set with `getData`, which reports
//!   `NoNode` and we look again; nothing stalls.
//! * **Session expiry** — every [`Guard`] has a [`lost`](Guard::lost) signal that fires on expiry, on deletion of
//!   our node by anybody else, and (by [`LostPolicy`], on by default) when disconnected for long enough that the
//!   session may be gone.
//! * **Cancellation at every await point** — dropping an acquire future removes our node.
//! * **Missing parents** are created as persistent nodes; **ordering** is by the sequence suffix only.
//! * **Fencing** — [`Guard::fencing_token`] is our node's czxid, strictly increasing across holders.
//! * **A paused holder** — [`Guard::session_valid_until`] is the instant before which the server cannot have
//!   expired our session, renewed while held: a deadline that a watchdog outside this process can enforce.
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
//! # The public API
//!
//! This is the shape intended for 1.0; everything not listed here is private.
//!
//! * **[`Session`]** — the client's ZooKeeper session plus the policies every recipe shares: [`RetryPolicy`],
//!   [`LostPolicy`], an optional [`Listener`] of [`QueueEvent`]s, and the ACL of created nodes. Its `with_*`
//!   builders are the only place these are set. Every recipe's constructor takes `impl Into<Session>`: a
//!   `&Client` (default policies), a [`Session`] or a `&Session`.
//! * **The recipes** — [`Mutex`], [`RwLock`], [`Semaphore`], [`LeaderElection`] (with [`Observer`], [`Leader`],
//!   [`Term`]), [`Barrier`], [`DoubleBarrier`] (with [`Participation`]) and [`Queue`] (with [`Claimed`]). Each
//!   keeps only its own settings: `with_data` (what `zklock status` shows), and on `Mutex` and `RwLock`
//!   `with_kazoo_contenders`.
//! * **[`Guard`]** — what holding looks like for the queue recipes ([`MutexGuard`], [`ReadGuard`], [`WriteGuard`],
//!   [`Lease`], [`Leadership`] are its names per recipe), with [`LostReason`].
//! * **[`inspect`]** — a read-only look at any recipe directory: the [`Recipe`] it holds and its [`Participant`]s
//!   ([`NodeKind`], [`Role`]), for status displays and operators.
//! * **[`Error`] and [`Result`]**, and the re-exported [`zookeeper_client`].
//!
//! Private: node names and directory layouts (Curator's formats, a semaphore's `leases`/`locks`, a queue's `qn-`
//! items and `claims`, a double barrier's `ready`), the rules each recipe applies to its queue, and the one
//! contention mechanism they share. The node *formats* are an interoperability promise (Curator and kazoo share
//! locks with us) but not an API: use [`inspect`] to read a directory.
#![forbid(unsafe_code)]

mod abandoned;
mod barrier;
mod contention;
mod double_barrier;
mod election;
mod error;
mod events;
mod gone;
mod guard;
mod idioms;
mod inspect;
mod lost;
mod mutex;
mod node;
mod own_node;
mod participants;
mod path;
mod queue;
mod retry;
mod rwlock;
mod semaphore;
mod session;

pub use barrier::Barrier;
pub use double_barrier::{DoubleBarrier, Participation};
pub use election::{Leader, LeaderElection, Leadership, Observer, Term};
pub use error::{Error, Result};
pub use events::{Listener, QueueEvent};
pub use guard::Guard;
pub use inspect::inspect;
pub use lost::{LostPolicy, LostReason};
pub use mutex::Mutex;
pub use participants::{Inspection, NodeKind, Participant, Recipe, Role};
pub use queue::{Claimed, Queue};
pub use retry::RetryPolicy;
pub use rwlock::{ReadGuard, RwLock, WriteGuard};
pub use semaphore::{Lease, Semaphore};
pub use session::Session;
pub use zookeeper_client;

/// The guard of a [`Mutex`].
pub type MutexGuard = Guard;

/// The README's Rust examples, compiled as doctests so that they keep working when pasted.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
