//! Interoperability: zklock sharing one lock path with Apache Curator (a JVM running
//! `tests/peers/CuratorPeer.java`) and with kazoo (`tests/peers/kazoo_peer.py`).
//!
//! For each pairing, two properties, checked with real processes against real servers:
//! * **exclusion** — zklock contenders and peer processes, started at the same moment, all increment one
//!   counter file under the lock (read, pause, write): any two holders at once would lose an update, so the
//!   final value must be exact;
//! * **FIFO across implementations** — contenders of both kinds queue in a known order, and every release
//!   hands the lock to the next in line of whichever implementation, never to a later one.

use std::sync::Arc;

use futures::future::{select_all, FutureExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use zklock::zookeeper_client::Client;
use zklock::{Guard, Listener, Mutex, NodeKind, QueueEvent, RwLock, Session};
use zklock_testkit::peers::{Counter, Peer};
use zklock_testkit::unique_path;

use crate::on_standalone_and_embedded;
use crate::support::*;

/// Lock rounds per contender in the counter tests (each round: acquire, read-pause-write, release).
const ROUNDS: usize = 15;

/// One contender of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// zklock `Mutex`.
    Mutex,
    /// zklock `Mutex::with_kazoo_contenders(true)`.
    KazooAwareMutex,
    /// zklock `RwLock::read`.
    Read,
    /// zklock `RwLock::write`.
    Write,
    /// Curator `InterProcessMutex`.
    CuratorMutex,
    /// Curator `InterProcessReadWriteLock.readLock()`.
    CuratorRead,
    /// Curator `InterProcessReadWriteLock.writeLock()`.
    CuratorWrite,
    /// kazoo `Lock(extra_lock_patterns=["-lock-"])`.
    Kazoo,
}

impl Kind {
    /// The kind of node zklock must read a node of this kind as (checked on every acquire, so the name formats
    /// are tested too).
    fn node_kind(self) -> NodeKind {
        match self {
            Kind::Mutex | Kind::KazooAwareMutex | Kind::CuratorMutex => NodeKind::Lock,
            Kind::Read | Kind::CuratorRead => NodeKind::Read,
            Kind::Write | Kind::CuratorWrite => NodeKind::Write,
            Kind::Kazoo => NodeKind::KazooLock,
        }
    }
}

/// Acquires a zklock lock of `kind`.
async fn acquire(client: &Client, dir: &str, kind: Kind, listener: Listener) -> Guard {
    let acquired = match kind {
        Kind::Mutex => {
            Mutex::new(Session::new(client).with_listener(listener), dir)
                .unwrap()
                .lock()
                .await
        }
        Kind::KazooAwareMutex => {
            Mutex::new(Session::new(client).with_listener(listener), dir)
                .unwrap()
                .with_kazoo_contenders(true)
                .lock()
                .await
        }
        Kind::Read => {
            RwLock::new(Session::new(client).with_listener(listener), dir)
                .unwrap()
                .read()
                .await
        }
        Kind::Write => {
            RwLock::new(Session::new(client).with_listener(listener), dir)
                .unwrap()
                .write()
                .await
        }
        peer => unreachable!("{peer:?} is not a zklock contender"),
    };
    acquired.unwrap_or_else(|err| panic!("{kind:?} on {dir}: {err}"))
}

/// A contender that was started and acquires (or waits) in the background: a zklock task or a peer process.
enum Contender {
    Zklock {
        events: mpsc::UnboundedReceiver<QueueEvent>,
        release: oneshot::Sender<()>,
        task: JoinHandle<()>,
    },
    Peer(Box<Peer>),
}

impl Contender {
    /// Starts a contender of `kind` on `dir`; it holds the lock, once it has it, until
    /// [`Contender::release`].
    async fn start(kind: Kind, hosts: &str, dir: &str) -> Contender {
        match kind {
            Kind::CuratorMutex => {
                Contender::Peer(Box::new(Peer::curator(&["mutex", "hold", hosts, dir]).await))
            }
            Kind::CuratorRead => {
                Contender::Peer(Box::new(Peer::curator(&["read", "hold", hosts, dir]).await))
            }
            Kind::CuratorWrite => {
                Contender::Peer(Box::new(Peer::curator(&["write", "hold", hosts, dir]).await))
            }
            Kind::Kazoo => Contender::Peer(Box::new(Peer::kazoo(&["hold", hosts, dir]).await)),
            zk => {
                let client = client(hosts).await;
                let (tx, events) = mpsc::unbounded_channel();
                let listener = Listener::new(move |event| drop(tx.send(event.clone())));
                let (release, released) = oneshot::channel::<()>();
                let dir = dir.to_string();
                let task = tokio::spawn(async move {
                    let guard = acquire(&client, &dir, zk, listener).await;
                    let _ = released.await;
                    guard.release().await.unwrap();
                });
                Contender::Zklock {
                    events,
                    release,
                    task,
                }
            }
        }
    }

    /// Waits until the contender holds the lock; returns its node's path. Cancel safe.
    async fn acquired(&mut self) -> String {
        match self {
            Contender::Peer(peer) => peer.expect("ACQUIRED").await,
            Contender::Zklock { events, task, .. } => {
                let acquired = eventually("a zklock contender to acquire", async {
                    while let Some(event) = events.recv().await {
                        if let QueueEvent::Acquired { path, .. } = event {
                            return Some(path);
                        }
                    }
                    None
                })
                .await;
                match acquired {
                    Some(path) => path,
                    // The task ended without acquiring: it panicked; show why.
                    None => match task.await {
                        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                        other => panic!("the zklock contender ended without acquiring: {other:?}"),
                    },
                }
            }
        }
    }

    /// Waits until a zklock contender reports that it waits for its turn (and fails if it acquired instead).
    /// A peer cannot report that: the caller waits for its node to appear.
    async fn queued(&mut self, what: &str) {
        if let Contender::Zklock { events, .. } = self {
            let event = eventually(what, async {
                loop {
                    match events.recv().await {
                        Some(event @ (QueueEvent::Waiting { .. } | QueueEvent::Acquired { .. })) => {
                            return Some(event)
                        }
                        Some(_) => {}
                        None => return None,
                    }
                }
            })
            .await;
            assert!(
                matches!(event, Some(QueueEvent::Waiting { .. })),
                "{what}: got {event:?} instead"
            );
        }
    }

    /// Fails if the contender has already acquired the lock (as far as it has told us).
    async fn assert_not_acquired(&mut self, what: &str) {
        match self {
            Contender::Peer(peer) => {
                if let Some(line) = peer.said().await {
                    panic!("{what}: it said {line:?}");
                }
            }
            Contender::Zklock { events, .. } => {
                while let Ok(event) = events.try_recv() {
                    assert!(!matches!(event, QueueEvent::Acquired { .. }), "{what}: {event:?}");
                }
            }
        }
    }

    /// Releases the lock (the contender must hold it) and waits until it is done.
    async fn release(self) {
        match self {
            Contender::Peer(mut peer) => {
                peer.send("release").await;
                peer.expect("RELEASED").await;
                peer.finish().await;
            }
            Contender::Zklock { release, task, .. } => {
                release.send(()).unwrap();
                eventually("a zklock contender to release", task).await.unwrap();
            }
        }
    }
}

/// Asserts that `path` is a contender node of `kind` in `dir`, as zklock's view of the directory reads it.
async fn check_node(observer: &Client, kind: Kind, dir: &str, path: &str) {
    let name = path
        .strip_prefix(dir)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or_else(|| panic!("{kind:?} acquired {path}, not a node of {dir}"));
    // The contender created its node on a session of its own, perhaps through another member of an ensemble.
    let found = inspect_synced(observer, dir)
        .await
        .unwrap_or_else(|| panic!("{kind:?} acquired {path}, but {dir} does not exist"));
    let contender = found
        .participants
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{kind:?}: zklock cannot parse {name}"));
    assert_eq!(contender.kind, kind.node_kind(), "{kind:?}: node {name}");
}

/// `holders` take the lock one after the other while the earlier ones hold it (they must share it); then
/// `waiters` queue in order behind them. Once every holder releases, the waiters must get the lock strictly
/// in queue order: each one before any later one, whatever implementation each is.
async fn queue_order(hosts: &str, holders: &[Kind], waiters: &[Kind]) {
    let dir = unique_path("interop-fifo");
    let observer = client(hosts).await;
    let mut held = Vec::new();
    for &kind in holders {
        let mut contender = Contender::start(kind, hosts, &dir).await;
        check_node(&observer, kind, &dir, &contender.acquired().await).await;
        held.push(contender);
    }
    let mut queued = Vec::new();
    for &kind in waiters {
        let mut contender = Contender::start(kind, hosts, &dir).await;
        let expected = held.len() + queued.len() + 1;
        let what = format!("{kind:?} to queue as contender {expected} behind {holders:?}");
        await_children(&observer, &dir, &what, |c| c.len() == expected).await;
        contender.queued(&what).await;
        queued.push(contender);
    }
    // Nobody in the queue may have the lock while the holders hold it. (A peer that wrongly took it would
    // have said so by now: the slowest step, starting the next peer, lies between its queuing and this
    // check.)
    for (kind, contender) in waiters.iter().zip(&mut queued) {
        contender
            .assert_not_acquired(&format!("{kind:?} acquired while {holders:?} held the lock"))
            .await;
    }
    for contender in held {
        contender.release().await;
    }
    let mut next = 0;
    while !queued.is_empty() {
        let (head, later) = queued.split_first_mut().unwrap();
        let path = if later.is_empty() {
            head.acquired().await
        } else {
            let overtaking = select_all(later.iter_mut().map(|c| c.acquired().boxed()));
            tokio::select! {
                path = head.acquired() => path,
                (path, i, _) = overtaking => {
                    let (late, early) = (waiters[next + 1 + i], waiters[next]);
                    panic!("{late:?} overtook {early:?} in the queue {waiters:?} (acquired {path})")
                }
            }
        };
        check_node(&observer, waiters[next], &dir, &path).await;
        queued.remove(0).release().await;
        next += 1;
    }
    await_children(&observer, &dir, "an empty lock directory", |c| c.is_empty()).await;
}

/// What a zklock task does under the lock in [`counter_stays_exact`].
#[derive(Debug, Clone, Copy)]
enum Work {
    Increment,
    Observe,
}

/// A foreign contender of [`counter_stays_exact`]: a Curator peer on its `mutex`, `read` or `write` lock, or a
/// kazoo `Lock` peer; and what it does under the lock, `increment` or `observe`.
#[derive(Debug, Clone, Copy)]
enum Foreign {
    Curator(&'static str, &'static str),
    Kazoo(&'static str),
}

impl Foreign {
    /// Starts the peer on the lock `dir` and the counter (it waits to be told to go).
    async fn start(self, hosts: &str, dir: &str, counter: &Counter) -> Peer {
        let args = match self {
            Foreign::Curator(lock, action) => counting(Some(lock), action, hosts, dir, counter),
            Foreign::Kazoo(action) => counting(None, action, hosts, dir, counter),
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match self {
            Foreign::Curator(..) => Peer::curator(&args).await,
            Foreign::Kazoo(_) => Peer::kazoo(&args).await,
        }
    }

    fn increments(self) -> bool {
        matches!(
            self,
            Foreign::Curator(_, "increment") | Foreign::Kazoo("increment")
        )
    }
}

/// Foreign peers (`foreign`) and zklock tasks (`zklock`: kind and work of each) work on one counter under the lock
/// `unique_path(name)` at the same moment, [`ROUNDS`] rounds each; afterwards the counter must equal the number of
/// increments.
async fn counter_stays_exact(hosts: &str, name: &str, foreign: &[Foreign], zklock: &[(Kind, Work)]) {
    let dir = unique_path(name);
    let dir = dir.as_str();
    let counter = Arc::new(Counter::new());
    let mut peers = Vec::new();
    for peer in foreign {
        peers.push(peer.start(hosts, dir, &counter).await);
    }
    let incrementers = foreign.iter().filter(|peer| peer.increments()).count()
        + zklock
            .iter()
            .filter(|(_, work)| matches!(work, Work::Increment))
            .count();
    let mut clients = Vec::new();
    for _ in zklock {
        clients.push(client(hosts).await);
    }
    // A JVM takes a second or more to start: everybody waits for everybody, then all go at once.
    for peer in &mut peers {
        peer.expect("READY").await;
    }
    for peer in &mut peers {
        peer.send("GO").await;
    }
    let mut tasks = Vec::new();
    for (&(kind, work), client) in zklock.iter().zip(clients) {
        let (dir, counter) = (dir.to_string(), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let guard = acquire(&client, &dir, kind, Listener::new(|_| {})).await;
                match work {
                    Work::Increment => counter.increment().await,
                    Work::Observe => counter.observe().await,
                }
                guard.release().await.unwrap();
            }
        }));
    }
    for mut peer in peers {
        peer.expect("DONE").await;
        peer.finish().await;
    }
    for task in tasks {
        eventually("the zklock contenders to finish", task).await.unwrap();
    }
    assert_eq!(
        counter.value().await,
        (incrementers * ROUNDS) as u64,
        "lost updates: two holders at once"
    );
    let observer = client(hosts).await;
    await_children(&observer, dir, "an empty lock directory", |c| c.is_empty()).await;
}

/// The arguments of a counting peer: `[LOCK] ACTION CONNECT PATH ROUNDS FILE`.
fn counting(lock: Option<&str>, action: &str, hosts: &str, dir: &str, counter: &Counter) -> Vec<String> {
    lock.into_iter()
        .chain([action, hosts, dir, &ROUNDS.to_string(), counter.path()])
        .map(str::to_string)
        .collect()
}

on_standalone_and_embedded! {
    async fn curator_mutex_and_zklock_mutex_exclude_each_other(hosts: &str) {
        let curators = [Foreign::Curator("mutex", "increment"), Foreign::Curator("mutex", "increment")];
        let zklock = [(Kind::Mutex, Work::Increment), (Kind::Mutex, Work::Increment)];
        counter_stays_exact(hosts, "interop-curator-mutex", &curators, &zklock).await;
    }

    async fn curator_mutex_queues_fifo_behind_zklock(hosts: &str) {
        queue_order(hosts, &[Kind::Mutex], &[Kind::CuratorMutex, Kind::Mutex]).await;
    }

    async fn zklock_mutex_queues_fifo_behind_curator(hosts: &str) {
        queue_order(hosts, &[Kind::CuratorMutex], &[Kind::Mutex, Kind::CuratorMutex]).await;
    }

    async fn curator_rwlock_and_zklock_rwlock_exclude_each_other(hosts: &str) {
        // Writers of both kinds increment; readers of both kinds check that nothing changes while they read.
        let curators = [
            Foreign::Curator("write", "increment"),
            Foreign::Curator("write", "increment"),
            Foreign::Curator("read", "observe"),
        ];
        let zklock = [
            (Kind::Write, Work::Increment),
            (Kind::Write, Work::Increment),
            (Kind::Read, Work::Observe),
        ];
        counter_stays_exact(hosts, "interop-curator-rwlock", &curators, &zklock).await;
    }

    async fn curator_readers_share_with_zklock_readers_and_queue_behind_its_writer(hosts: &str) {
        // Readers of both kinds hold at once; a Curator reader queued after a zklock writer waits for it.
        queue_order(hosts, &[Kind::CuratorRead, Kind::Read], &[Kind::Write, Kind::CuratorRead]).await;
    }

    async fn zklock_readers_share_with_curator_readers_and_queue_behind_its_writer(hosts: &str) {
        queue_order(hosts, &[Kind::Read, Kind::CuratorRead], &[Kind::CuratorWrite, Kind::Read]).await;
    }

    async fn writers_alternate_fifo_between_curator_and_zklock(hosts: &str) {
        queue_order(hosts, &[Kind::Write], &[Kind::CuratorWrite, Kind::Write, Kind::CuratorRead]).await;
    }
}

crate::on_every_server! {
    async fn kazoo_lock_and_zklock_mutex_exclude_each_other(hosts: &str) {
        let kazoos = [Foreign::Kazoo("increment"), Foreign::Kazoo("increment")];
        let zklock = [(Kind::KazooAwareMutex, Work::Increment), (Kind::KazooAwareMutex, Work::Increment)];
        counter_stays_exact(hosts, "interop-kazoo", &kazoos, &zklock).await;
    }

    async fn kazoo_queues_fifo_behind_zklock(hosts: &str) {
        queue_order(hosts, &[Kind::KazooAwareMutex], &[Kind::Kazoo, Kind::KazooAwareMutex]).await;
    }

    async fn zklock_queues_fifo_behind_kazoo(hosts: &str) {
        queue_order(hosts, &[Kind::Kazoo], &[Kind::KazooAwareMutex, Kind::Kazoo]).await;
    }
}
