//! Distributed locks and coordination recipes on ZooKeeper, correct under faults first.
//!
//! Built on the [`zookeeper_client`] crate (tokio). Every recipe takes a place in a queue directory of
//! ephemeral-sequential nodes and waits for its turn watching the node it depends on (and the one just before that,
//! to list the queue ahead of its turn), so a release wakes the next holder and at most one waiter more: no herd
//! effect at any queue length. That mechanism lives in one place (`contention.rs`); each recipe is a small
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
//! * **Missing directories** of the queue recipes ([`Mutex`], [`RwLock`], [`Semaphore`], [`LeaderElection`]) and
//!   their missing parents are created as container nodes where the server has them (ZooKeeper 3.5+, the embedded
//!   server), as Curator does: the server deletes them once their last contender has gone. A directory deleted
//!   between our look and our create is made again. **Ordering** is by the sequence suffix only.
//! * **Revocation** — a holder can be asked to give up: [`request_revocation`] (Curator's `Revoker`) reaches
//!   [`Guard::revocation_requested`]; [`revoke`] deletes a participant's node outright (its guard is lost).
//! * **Fencing** — [`Guard::fencing_token`] is our node's czxid, strictly increasing across holders; for data kept
//!   in ZooKeeper itself, [`Guard::fenced_writes`] makes the server refuse a lost holder's writes.
//! * **A paused holder** — [`Guard::session_valid_until`] is the instant before which the server cannot have
//!   expired our session, renewed while held: a deadline that a watchdog outside this process can enforce.
//! * **Who contends** — one table decides which nodes share a queue (`Marker::queues_with` in `node.rs`), for every
//!   recipe and so for every `zklock` command: a contender node of a kind we cannot be ordered with (a Curator
//!   reader in a mutex's directory, a lock contender in an election's, a semaphore's `leases` beside a lock…) fails
//!   the acquire with [`Error::InUse`] — a lock is never taken as if the directory were free while another recipe's
//!   holder is there. Checked at every look at the queue, so of two conflicting acquires the later one refuses.
//!
//! # Sharing a lock with Curator and kazoo
//!
//! | peer | its nodes | zklock queues with them | the peer sees ours |
//! |---|---|---|---|
//! | Curator `InterProcessMutex` | `_c_<uuid>-lock-<seq>` | yes ([`Mutex`]: the same format) | yes |
//! | Curator `InterProcessReadWriteLock` | `_c_<uuid>-__READ__<seq>`, `-__WRIT__<seq>` | yes ([`RwLock`]) | yes |
//! | Curator `LeaderLatch` | `_c_<uuid>-latch-<seq>` | yes ([`LeaderElection`]) | yes |
//! | kazoo `Lock`, `WriteLock`, `Election` | `<hex>__lock__<seq>` | yes, by sequence ([`Mutex`], [`RwLock`] writers, [`LeaderElection`]) | `Lock`, `WriteLock`: only when made with `extra_lock_patterns=["-lock-"]` (beside a `RwLock`: `["__READ__", "__WRIT__"]`); `Election` takes no patterns: never |
//! | kazoo `ReadLock` | `<hex>__rlock__<seq>` | yes ([`Mutex`], [`RwLock`]) | with `extra_lock_patterns=["__WRIT__"]` (beside a `Mutex`: `["-lock-"]`) |
//!
//! kazoo (≥ 2.8) ignores nodes of other formats unless its recipe is made with `extra_lock_patterns`: a kazoo
//! contender made without it that comes *after* a zklock holder does not wait for it. zklock cannot see how a
//! kazoo process was configured; configure every kazoo process that shares a path. `with_kazoo_contenders(false)`
//! turns kazoo's nodes into a conflict ([`Error::InUse`]) instead.
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
//!   [`LostPolicy`], an optional [`Listener`] of [`QueueEvent`]s, and the ACLs of created nodes and directories.
//!   Its `with_*` builders are the only place these are set. Every recipe's constructor takes `impl Into<Session>`: a
//!   `&Client` (default policies), a [`Session`] or a `&Session`.
//! * **The recipes** — [`Mutex`], [`RwLock`], [`Semaphore`], [`LeaderElection`] (with [`Observer`], [`Leader`],
//!   [`Term`]), [`Barrier`], [`DoubleBarrier`] (with [`Participation`]) and [`Queue`] (with [`Claimed`]). Each
//!   keeps only its own settings: `with_data` (what `zklock status` shows), and on `Mutex` and `RwLock`
//!   `with_kazoo_contenders`.
//! * **[`PriorityQueue`]** — the [`Queue`] with a priority per item (lowest number first, FIFO within a priority), in
//!   Curator's `DistributedPriorityQueue` layout.
//! * **[`DelayQueue`]** — items each taken no earlier than its own due time ([`Delayed`]), in Curator's
//!   `DistributedDelayQueue` layout.
//! * **[`SharedCount`] and [`AtomicLong`]** — counters in one node, byte-compatible with Curator's `SharedCount` (with
//!   [`Versioned`] values and a change watch) and `DistributedAtomicLong` (with [`AtomicValue`]); every change is a
//!   compare-and-set with a receipt, so a lost reply never counts it twice.
//! * **[`Group`]** — group membership ([`Membership`], [`Member`], the live view [`Members`] and its
//!   [`MemberEvent`]s), in kazoo's `Party` or `ShallowParty` layout ([`GroupLayout`]), so Python and Rust processes
//!   share groups.
//! * **[`TwoPhaseCommit`]** — the two-phase commit recipe ([`Coordinator`], [`Ballot`], [`Decision`]): one outcome
//!   for everybody, commit only if every participant voted commit, abort when a party goes away before deciding.
//! * **[`MultiLock`]** — several [`Mutex`]es and [`RwLock`] sides held as one ([`Part`], [`MultiGuard`]), acquired
//!   in a global order so multi-locks never deadlock.
//! * **[`Guard`]** — what holding looks like for the queue recipes ([`MutexGuard`], [`ReadGuard`], [`WriteGuard`],
//!   [`Lease`], [`Leadership`] are its names per recipe), with [`LostReason`], and [`FencedWrites`]
//!   ([`Guard::fenced_writes`]): ZooKeeper writes that commit only while the guard's node exists at the server.
//! * **[`inspect`]** — a read-only look at any recipe directory: the [`Recipe`] it holds and its [`Participant`]s
//!   ([`NodeKind`], [`Role`]), for status displays and operators.
//! * **[`request_revocation`] and [`revoke`]** — ask a participant to give up (Curator's revocation protocol,
//!   heard through [`Guard::revocation_requested`]), or delete its node.
//! * **[`Error`] and [`Result`]**, and the re-exported [`zookeeper_client`].
//! * **[`describe_metrics`]** — the unit and help text of every metric (see "Logging and metrics").
//! * **[`SessionEvent`]** — what a reconnecting [`Session`] reports (see "Sessions that outlive expiry").
//!
//! # Sessions that outlive expiry
//!
//! A `zookeeper-client` session never comes back once it has expired: a [`Session`] made from a `Client`
//! (`Session::new(&client)`, `&client` into a recipe) then fails every operation with [`Error::SessionExpired`]
//! for ever. A **reconnecting** session — [`Session::reconnecting`]`(connector, hosts)`, or
//! [`Session::reconnecting_with`] and a closure that connects (TLS, anything else) — makes a new ZooKeeper session
//! when one ends (expired, or its authentication failed), with backoff (50 ms doubling to 1 s, ±25 % jitter), until
//! it succeeds or is closed. Recipes built on it take the ZooKeeper session current when each operation starts
//! and keep it to that operation's end (an acquire, a join, a take — so no operation mixes two sessions).
//!
//! * **Nothing held is taken again by itself.** A guard, lease, leadership, membership or queue claim belongs to
//!   the ZooKeeper session that made it: when that session ends its [`lost`](Guard::lost) signal fires
//!   ([`LostReason::SessionExpired`], or `Disconnected` first by the [`LostPolicy`]), exactly as on a fixed session,
//!   and releasing it afterwards is harmless. Taking something again is a new acquire, at the back of the queue,
//!   with a new fencing token.
//! * **What carries on.** [`LeaderElection::lead`] with [`with_auto_requeue(true)`](LeaderElection::with_auto_requeue)
//!   stops the term whose session ended and campaigns again on the next (Curator's `autoRequeue`): each term has a
//!   larger fencing token, and there are never two leaders (the old node is gone before the new one can lead).
//!   [`Group::join`] waits for the next session when the current one has ended, so joining again after a lost
//!   membership is a new member on the new session. [`Queue::take_safe`] (and [`PriorityQueue`]'s) goes on with
//!   the next session when the session ends while it waits or claims — an item claimed on the old session was
//!   never completed, is claimable again in its place, and is taken once; [`Queue::take`] goes on when the
//!   session ends while it waits, but not during a take (whether the item was removed is then unknown: the error
//!   says so). Every other operation started after the ZooKeeper session ended, before the next one is made,
//!   fails with [`Error::SessionExpired`]; [`Session::ready`]`().await` waits for the next one.
//!   Recipes not named here ([`Barrier`], [`DoubleBarrier`], the counters, [`TwoPhaseCommit`]) use the newest
//!   ZooKeeper session at each request.
//! * **The event stream.** [`Session::events`] is a broadcast of [`SessionEvent`]s, as Curator's
//!   `ConnectionStateListener`: `Suspended` (connection down, the session may live on), `Reconnected` (same
//!   session, nothing lost), `Lost` (the session ended: everything held on it is lost), `NewSession { session_id }`,
//!   and `Closed`. Each is also logged at `info`.
//! * **Shutting down.** [`Session::close`] stops making new sessions, then deletes our nodes as below. The session
//!   task holds no `Client`: dropping every `Session`, recipe and guard ends the ZooKeeper session and the task.
//!   Each ended ZooKeeper session keeps a small client handle (a few hundred bytes) in the `Session` until it is
//!   dropped, so that [`Session::client`] can lend the current one: one atomic load per session made since.
//!
//! # Shutting down
//!
//! In this order:
//! 1. Stop starting work: no new acquires, joins or campaigns (stop a [`LeaderElection::lead`] loop, a queue
//!    consumer).
//! 2. Release what you hold ([`Guard::release`], [`Membership::leave`]…) where the order matters to
//!    you, or let the next step delete it.
//! 3. [`Session::close`]`().await`: deletes every node the recipes on that session still have (held guards,
//!    waiting acquires, memberships, double-barrier and two-phase-commit nodes) and waits for ZooKeeper to confirm
//!    each delete — so a tool looking at the server right after sees none of ours. Guards still held report
//!    [`LostReason::ClientClosed`]; the session refuses new nodes with [`Error::Closed`].
//! 4. Drop your [`Client`](zookeeper_client::Client) and any guard still held: `zookeeper-client` ends the
//!    ZooKeeper session (`closeSession`) when its last handle is dropped. [`Session::close`] cannot end it
//!    itself: the application holds handles of its own.
//! 5. Only then shut the tokio runtime down (return from `main`).
//!
//! A guard dropped *during* the runtime's shutdown (held by a task the shutdown drops) cannot delete its node: the
//! client's own task, which would send the delete, is gone too. It logs a warning naming the node ("it stays until
//! the ZooKeeper session ends"), and the server deletes the node when the session expires (one session timeout
//! after the process stopped talking). `std::process::exit` runs no destructor: nothing is deleted and nothing is
//! logged. A runtime shutdown never makes the library print a panic (`tests/runtime_shutdown.rs` shuts down 50
//! runtimes with held guards and looks for one).
//!
//! # Tasks of one process
//!
//! * **Locks are not reentrant.** A holder that locks again — the same task, the same [`Mutex`] value — is one
//!   more contender, queued behind itself: [`Mutex::try_lock`] returns `None`, [`Mutex::lock_timeout`] times out,
//!   and [`Mutex::lock`] waits for ever (its own guard is ahead of it). Curator's `InterProcessMutex` is reentrant
//!   per thread; code ported from it must pass the [`Guard`] down instead of locking again. The same holds for
//!   [`RwLock`] (a writer asking to read, too), [`Semaphore`] leases (each acquire takes one more) and
//!   [`LeaderElection`].
//! * **Tasks queue like processes.** Every acquire creates its own node, also when the tasks share one `Client`
//!   (one ZooKeeper session) or one recipe value: they take turns in the order of their nodes' sequence numbers
//!   (FIFO by arrival at the server), interleaved fairly with other processes' contenders. Sharing a session
//!   means sharing its fate: when it expires, every task's guard is lost at once.
//!
//! # Errors
//!
//! Every [`Error::ZooKeeper`] names the ZooKeeper operation that failed and its path (`not authorized to create
//! /locks/a/_c_…-lock-`); [`Error::zookeeper`] gives the bare ZooKeeper error for a `match`, and
//! [`std::error::Error::source`] returns it too. The end of the session, a closed client, a refused
//! authentication and a connection loss the [`RetryPolicy`] gave up on are variants of their own. A
//! [`RetryPolicy`] bounds retries by count (`max_attempts`) and by time (`max_elapsed`: a step of an operation
//! that has had no answer from ZooKeeper for that long ends with [`Error::ConnectionLoss`], also while
//! `zookeeper-client` is still trying to reconnect).
//!
//! # Logging and metrics
//!
//! The library logs through [`tracing`](https://docs.rs/tracing) and installs no subscriber. Every acquire of a
//! queue recipe runs in an `info` span `acquire` with fields `recipe` and `path` (the directory), and ends with a
//! `debug` event "acquire ended" (`outcome`, `waited`, and the `node` acquired or the `err`); every
//! [`Guard::release`] runs in an `info` span `release` with the node's `path` and logs "released" (or why not) at
//! `debug`. What an operator should see is `warn`, among it a held lock lost ("lock node lost", with `path` and
//! `reason`), a leadership lost, a node of ours that stays until the session ends (a guard dropped during the
//! runtime's shutdown), a duplicate node of ours removed; the rest (retries after a connection loss, with the
//! operation and path; background deletes) is `debug`.
//!
//! The recipes record metrics through the [`metrics`](https://docs.rs/metrics) facade (0.24) and install no
//! recorder: an application that installs one (`metrics-exporter-prometheus`, say) gets these; without one each
//! costs a no-op call. Each is recorded in one place of the crate. [`describe_metrics`] gives the recorder each
//! one's unit and help text: call it once after installing the recorder (the facade hands descriptions to the
//! recorder installed at the time, so the library cannot do it earlier).
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `zklock_acquire_wait_seconds` | histogram | `recipe`, `outcome` | an acquire's time from the call to its end: `acquired`, `busy` (a `try_*` that found it taken), `timeout` or `error` (a cancelled acquire records nothing) |
//! | `zklock_hold_seconds` | histogram | `recipe` | a guard's time from its acquisition until it was released or dropped (a lost guard's too, until its owner lets it go) |
//! | `zklock_guards_lost_total` | counter | `reason` | held guards lost (also queue claims and double-barrier participations): `session_expired`, `client_closed`, `node_deleted`, `disconnected` |
//! | `zklock_connection_loss_retries_total` | counter | — | requests sent again after a connection loss, by every recipe ([`RetryPolicy`]) |
//! | `zklock_leader` | gauge | `path` | 1 while this process leads the election in `path`, else 0: up by one when a campaign succeeds, down by one when that leadership is lost, released or dropped (never set for an election this process never led) |
//! | `zklock_queue_depth` | gauge | `path` | the items — claimed ones included — this process saw in the queue `path` at its last listing of it (by a take, a safe take, `peek`, `len`, or a wait for items of a [`Queue`] or a [`PriorityQueue`]); a `put` lists nothing |
//!
//! `recipe` is `mutex`, `rwlock_read`, `rwlock_write`, `election`, `semaphore` (waiting for a free lease) or
//! `semaphore_gate` (a semaphore's acquirers waiting for their turn to look for one; a semaphore acquire is the two
//! in a row). `path` is a recipe's directory, as given: one series per election or queue, so a process with
//! unboundedly many of them (a queue per customer, say) makes as many series.
//!
//! Per-call deadlines: every acquire that waits has a variant that gives up after a time with [`Error::Timeout`]
//! and leaves no node of ours behind (its node, or its claim, is deleted as when the future is dropped):
//! `lock_timeout`, `read_timeout`/`write_timeout`, `acquire_timeout`, [`LeaderElection::campaign_timeout`],
//! [`Queue::take_timeout`] and [`Queue::take_safe_timeout`] (Curator's `takeSafe` with a timeout); the
//! [`RetryPolicy`]'s `max_elapsed` bounds every operation's retries after connection loss.
//!
//! Private: node names and directory layouts (Curator's formats, a semaphore's `leases`/`locks`, a queue's `qn-`
//! items and `claims`, a priority queue's `queue-` items, a delay queue's `queue-|<due>|` items, a counter's receipts, a double barrier's `ready`), the rules each recipe applies to its queue, and the one
//! contention mechanism they share. The node *formats* are an interoperability promise (Curator and kazoo share
//! locks with us) but not an API: use [`inspect`] to read a directory.
#![forbid(unsafe_code)]

mod abandoned;
mod barrier;
mod cas;
mod closing;
mod contention;
mod counter;
mod curator_priority;
mod delay_queue;
mod double_barrier;
mod election;
mod error;
mod events;
mod fenced;
mod gone;
mod group;
mod guard;
mod held;
mod idioms;
mod inspect;
mod lost;
mod lost_policy;
mod metrics_describe;
mod multi_lock;
mod mutex;
mod node;
mod own;
mod own_node;
mod participants;
mod path;
mod priority_queue;
mod queue;
mod reconnect;
mod retry;
mod revocation;
mod rwlock;
mod semaphore;
mod session;
mod session_idioms;
mod two_phase_commit;

pub use barrier::Barrier;
pub use counter::{AtomicLong, AtomicValue, SharedCount, Versioned};
pub use delay_queue::{DelayQueue, Delayed};
pub use double_barrier::{DoubleBarrier, Participation};
pub use election::{Leader, LeaderElection, Leadership, Observer, Term};
pub use error::{Error, Result};
pub use events::{Listener, QueueEvent};
pub use fenced::FencedWrites;
pub use group::{Group, GroupLayout, Member, MemberEvent, Members, Membership};
pub use guard::Guard;
pub use inspect::inspect;
pub use lost::LostReason;
pub use lost_policy::LostPolicy;
pub use metrics_describe::describe_metrics;
pub use multi_lock::{MultiGuard, MultiLock, Part};
pub use mutex::Mutex;
pub use participants::{Inspection, NodeKind, Participant, Recipe, Role};
pub use path::child_path;
pub use priority_queue::PriorityQueue;
pub use queue::{Claimed, Queue};
pub use reconnect::SessionEvent;
pub use retry::RetryPolicy;
pub use revocation::{request_revocation, revoke};
pub use rwlock::{ReadGuard, RwLock, WriteGuard};
pub use semaphore::{Lease, Semaphore};
pub use session::Session;
pub use two_phase_commit::{Ballot, Coordinator, Decision, TwoPhaseCommit};
pub use zookeeper_client;

/// The guard of a [`Mutex`].
pub type MutexGuard = Guard;

/// The README's Rust examples, compiled as doctests so that they keep working when pasted.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
