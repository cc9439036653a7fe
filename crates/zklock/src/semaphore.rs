//! The counting semaphore: at most N lease holders at once.

use std::time::Duration;

use zookeeper_client::{self as zk, Client, EventType, SessionState};

use crate::contention::{self, Options, Rules, Wait};
use crate::error::{Error, Result};
use crate::events::{Listener, QueueEvent};
use crate::guard::Guard;
use crate::lost::{LostPolicy, LostReason, LostSignal};
use crate::node::{self, Marker};
use crate::own_node::{child_path, OwnNode};
use crate::retry::RetryPolicy;

/// The guard of one semaphore lease (a [`Guard`]: fencing token, lost signal, release).
pub type Lease = Guard;

/// A distributed counting semaphore: at most `leases` holders at once, fair (FIFO) and herd-free.
///
/// The layout is Apache Curator's `InterProcessSemaphoreV2`: a [`Mutex`](crate::Mutex) on `<path>/locks`
/// serialises acquirers, and each lease is an ephemeral-sequential node `<path>/leases/_c_<uuid>-lease-<seq>`.
/// An acquirer first takes the mutex, then creates its lease node and lists the leases: when there are at most
/// `leases` of them (ours included) it holds a lease, releases the mutex and returns. Otherwise it keeps the mutex
/// and waits on a child watch of `leases` until a holder leaves. Only the mutex holder ever watches `leases`, so a
/// release wakes exactly one acquirer; the others wait in the mutex's FIFO queue, each watching one node.
///
/// **Safety does not rest on the mutex.** A lease is only granted by a listing, made after our node was created,
/// that shows at most `leases` nodes. Of any `leases + 1` holders, the one whose node was created last would have
/// seen all the others' nodes (holders keep theirs), so it cannot have been granted. Waiting, cancelled or stale
/// lease nodes only make the count more conservative. The mutex is there for liveness: without it, `leases + 1`
/// waiting nodes could each count the others and wait forever.
///
/// A holder whose session expires loses its lease node (ZooKeeper deletes it) and its guard's
/// [`lost`](Guard::lost) signal fires; by the default [`LostPolicy`] a partitioned holder learns it has lost the
/// lease before the server expires its session and grants the lease to somebody else.
///
/// A semaphore with 0 leases is valid and never grants one.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let pool = zklock::Semaphore::new(&client, "/semaphores/db-connections", 3)?;
/// let lease = pool.acquire().await?;
/// tokio::select! {
///     reason = lease.lost() => eprintln!("lease lost: {reason}"),
///     _ = async { /* use one of the 3 connections */ } => {}
/// }
/// lease.release().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`](crate::Error::SessionExpired) or [`Error::Closed`](crate::Error::Closed) when the
/// session ends while waiting; [`Error::Timeout`](crate::Error::Timeout) from
/// [`acquire_timeout`](Semaphore::acquire_timeout); [`Error::NodeDeleted`](crate::Error::NodeDeleted) if somebody
/// deletes our mutex or lease node while we wait; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if
/// the [`RetryPolicy`] caps attempts.
///
/// # Cancellation safety
/// Every acquire method is cancellation safe: dropping the future at any await point removes our lease node and
/// our mutex node (in the background, the lease first). A timed-out [`acquire_timeout`](Semaphore::acquire_timeout)
/// and a failed [`try_acquire`](Semaphore::try_acquire) have removed both before they return.
#[derive(Debug, Clone)]
pub struct Semaphore {
    client: Client,
    path: String,
    leases: usize,
    options: Options,
}

/// The mutex that serialises acquirers: Curator's `lock-` nodes in `<path>/locks`.
const TURN_RULES: Rules = Rules {
    marker: Marker::Lock,
    keep: |marker, _| marker == Marker::Lock,
    kazoo: false,
    turn: contention::exclusive_turn,
};

impl Semaphore {
    /// A semaphore with `leases` leases on the directory `path` (created, with its parents, on first use). Every
    /// participant must use the same number.
    pub fn new(client: &Client, path: &str, leases: usize) -> Result<Semaphore> {
        Ok(Semaphore {
            client: client.clone(),
            path: crate::path::validate(path)?,
            leases,
            options: Options::default(),
        })
    }

    /// Replaces all options at once (`recognize_kazoo` is ignored: kazoo's semaphore uses another layout).
    pub fn with_options(mut self, options: Options) -> Semaphore {
        self.options = options;
        self
    }

    /// Data stored in our lease node (shown by `zklock status`).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Semaphore {
        self.options.data = data.into();
        self
    }

    /// When a held lease counts as lost because of a disconnection.
    pub fn with_lost_policy(mut self, policy: LostPolicy) -> Semaphore {
        self.options.lost_policy = policy;
        self
    }

    /// How operations are retried across connection loss.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Semaphore {
        self.options.retry = retry;
        self
    }

    /// Receives progress events of every acquire through this handle: first those of the acquirers' mutex (paths
    /// under `<path>/locks`), then those of the lease (paths under `<path>/leases`; `Waiting` names the `leases`
    /// directory itself while all leases are taken).
    pub fn with_listener(mut self, listener: Listener) -> Semaphore {
        self.options.listener = Some(listener);
        self
    }

    /// The semaphore directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The number of leases.
    pub fn leases(&self) -> usize {
        self.leases
    }

    fn locks_dir(&self) -> String {
        child_path(&self.path, "locks")
    }

    fn leases_dir(&self) -> String {
        child_path(&self.path, "leases")
    }

    /// The full paths of the current lease nodes, in sequence order (holders, plus at most one acquirer that is
    /// still waiting for a free lease).
    pub async fn lease_nodes(&self) -> Result<Vec<String>> {
        let dir = self.leases_dir();
        let children = match self.options.retry.run(|| self.client.list_children(&dir)).await {
            Ok(children) => children,
            Err(Error::ZooKeeper(zk::Error::NoNode)) => Vec::new(),
            Err(err) => return Err(err),
        };
        Ok(node::sorted_contenders(children, |m| m == Marker::Lease)
            .into_iter()
            .map(|c| child_path(&dir, &c.name))
            .collect())
    }

    /// Waits as long as it takes for a lease.
    pub async fn acquire(&self) -> Result<Lease> {
        let lease = self.acquire_with(Wait::Forever).await?;
        Ok(lease.expect("a blocking acquire returns a lease"))
    }

    /// Takes a lease only if one is free and no other acquirer is ahead of us; otherwise removes our nodes and
    /// returns `None`.
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.acquire_with(Wait::Never).await
    }

    /// Waits at most `timeout` for a lease; [`Error::Timeout`](crate::Error::Timeout) afterwards.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Lease> {
        let lease = self.acquire_with(Wait::timeout(timeout)).await?;
        Ok(lease.expect("a timed acquire returns a lease or an error"))
    }

    async fn acquire_with(&self, wait: Wait) -> Result<Option<Lease>> {
        // The turn only matters while it is held, and a mere disconnection must not abort a blocking acquire.
        let turn_options = Options {
            lost_policy: LostPolicy::SessionOnly,
            recognize_kazoo: false,
            ..self.options.clone()
        };
        let locks_dir = self.locks_dir();
        let Some(turn) =
            contention::acquire(&self.client, &locks_dir, TURN_RULES, &turn_options, wait).await?
        else {
            return Ok(None);
        };
        // Declared after `turn`, so that on cancellation the lease node is dropped (and its delete sent) first.
        let lease = self.take_lease(wait, &turn).await;
        let released = turn.release().await;
        match (lease, released) {
            (Ok(lease), Ok(())) => Ok(lease),
            // Dropping the lease removes its node in the background.
            (Ok(_), Err(err)) | (Err(err), _) => Err(err),
        }
    }

    /// Holding the acquirers' mutex (`turn`): creates our lease node and waits until it is within the limit.
    async fn take_lease(&self, wait: Wait, turn: &Guard) -> Result<Option<Lease>> {
        let room = Room {
            semaphore: self,
            turn,
        };
        contention::take_turn(
            &self.client,
            &self.leases_dir(),
            Marker::Lease,
            &self.options,
            wait,
            &room,
        )
        .await
    }

    /// Whether the leases in `children` leave room for ours.
    async fn has_room(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        let me = node.name.as_deref().unwrap_or_default();
        let leases = node::sorted_contenders(children, |m| m == Marker::Lease);
        let mut count = 0;
        let mut found = false;
        for lease in &leases {
            if lease.name == me {
                found = true;
            } else if lease.name.starts_with(&node.unique) {
                // A second node of ours, from a create retried after a lost reply that did happen after all.
                let path = child_path(&node.dir, &lease.name);
                tracing::warn!(%path, "removing a duplicate lease node of ours");
                match node.retry.run(|| node.client.delete(&path, None)).await {
                    Ok(()) | Err(Error::ZooKeeper(zk::Error::NoNode)) => {}
                    Err(err) => return Err(err),
                }
                continue;
            }
            count += 1;
        }
        if !found {
            return Err(contention::node_gone(node, lost));
        }
        Ok(count <= self.leases)
    }

    /// Waits, with a child watch on the leases (we are the only acquirer watching them), until there is room.
    async fn wait_for_room(
        &self,
        node: &OwnNode,
        lost: &LostSignal,
        mut listing: Option<Vec<String>>,
        turn: &Guard,
    ) -> Result<()> {
        let client = &self.client;
        loop {
            // The listing pipelined with our create has no watch: use it once, then list with a watch.
            let (children, watcher) = match listing.take() {
                Some(children) => (children, None),
                None => {
                    let (children, watcher) = node
                        .retry
                        .run(|| client.list_and_watch_children(&node.dir))
                        .await?;
                    (children, Some(watcher))
                }
            };
            if self.has_room(node, lost, children).await? {
                return Ok(());
            }
            let Some(watcher) = watcher else { continue };
            Listener::emit(
                &self.options.listener,
                QueueEvent::Waiting { on: node.dir.clone() },
            );
            tokio::select! {
                event = watcher.changed() => match (event.event_type, event.session_state) {
                    (EventType::Session, SessionState::Expired) => return Err(Error::SessionExpired),
                    (EventType::Session, SessionState::Closed | SessionState::AuthFailed) => return Err(Error::Closed),
                    (EventType::Session, _) => {}
                    _ => Listener::emit(&self.options.listener, QueueEvent::Woken { by: node.dir.clone() }),
                },
                reason = lost.lost() => return Err(match reason {
                    LostReason::NodeDeleted => contention::node_gone(node, lost),
                    reason => reason.error(&node.path()),
                }),
                // Without the mutex another acquirer could be waiting too, and two waiting leases can block each
                // other for good: give up rather than risk it.
                reason = turn.lost() => return Err(reason.error(&turn.path())),
            }
        }
    }
}

/// The semaphore's turns: room among the leases, looked at by the holder of the acquirers' mutex.
struct Room<'a> {
    semaphore: &'a Semaphore,
    turn: &'a Guard,
}

impl contention::Turns for Room<'_> {
    async fn wait(&self, node: &OwnNode, lost: &LostSignal, listing: Option<Vec<String>>) -> Result<()> {
        self.semaphore.wait_for_room(node, lost, listing, self.turn).await
    }

    async fn now(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        self.semaphore.has_room(node, lost, children).await
    }
}
