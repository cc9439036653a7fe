//! The counting semaphore: at most N lease holders at once.

use crate::base::error::{Error, LostReason, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::names::{self, Marker};
use crate::base::path::child_path;
use crate::engine::{self, Exclusive, Place, Rules, Wait};
use crate::node::guard::Guard;
use crate::node::lost::LostSignal;
use crate::node::own::OwnNode;
use crate::session::listener::QueueEvent;
use crate::session::lost_policy::LostPolicy;
use crate::session::Session;

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
/// the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Events
/// For each acquire, the [`Session`]'s listener receives first the events of the acquirers' mutex (paths under
/// `<path>/locks`), then those of the lease (paths under `<path>/leases`; `Waiting` names the `leases` directory
/// itself while all leases are taken).
///
/// # Cancellation safety
/// Every acquire method is cancellation safe: dropping the future at any await point removes our lease node and
/// our mutex node (in the background, the lease first). A timed-out [`acquire_timeout`](Semaphore::acquire_timeout)
/// and a failed [`try_acquire`](Semaphore::try_acquire) have removed both before they return.
#[derive(Debug, Clone)]
pub struct Semaphore {
    place: Place,
    leases: usize,
}

/// The mutex that serialises acquirers.
pub(crate) const GATE: Exclusive = Exclusive(Marker::Lock);

impl Semaphore {
    /// A semaphore with `leases` leases on the directory `path` (created, with its parents, on first use), on
    /// `session` — a [`Session`] or a `&Client`. Every participant must use the same number.
    pub fn new(session: impl Into<Session>, path: &str, leases: usize) -> Result<Semaphore> {
        Ok(Semaphore {
            place: Place::new(session, path)?,
            leases,
        })
    }

    engine::place_methods! {
        /// Data stored in our lease node (shown by `zklock status`).
        pub fn with_data;
        /// The semaphore directory.
        pub fn path;
        /// The session and policies this semaphore uses.
        pub fn session;
    }

    /// The number of leases.
    pub fn leases(&self) -> usize {
        self.leases
    }

    /// The full paths of the current lease nodes, in sequence order (holders, plus at most one acquirer that is
    /// still waiting for a free lease).
    pub async fn lease_nodes(&self) -> Result<Vec<String>> {
        let dir = leases_dir(&self.place.path);
        let children =
            idioms::list_or_empty(self.place.session.client(), self.place.session.retry(), &dir).await?;
        Ok(names::sorted_contenders(children, is_lease)
            .into_iter()
            .map(|c| child_path(&dir, &c.name))
            .collect())
    }

    engine::acquire_methods! {
        acquire_with() => Lease:
        /// Waits as long as it takes for a lease.
        pub async fn acquire;
        /// Takes a lease only if one is free and no other acquirer is ahead of us; otherwise removes our nodes and
        /// returns `None`.
        pub async fn try_acquire;
        /// Waits at most `timeout` for a lease; [`Error::Timeout`](crate::Error::Timeout) afterwards.
        /// The timeout bounds the wait for our turn, not the create of our node: a zero timeout takes
        /// a free one.
        pub async fn acquire_timeout;
    }

    async fn acquire_with(&self, wait: Wait) -> Result<Option<Lease>> {
        let mut gate = self.place.child(names::LOCKS);
        // The turn only matters while it is held, and a mere disconnection must not abort a blocking acquire.
        gate.session = gate.session.with_lost_policy(LostPolicy::SessionOnly);
        let Some(turn) = engine::acquire(&gate, &GATE, wait).await? else {
            return Ok(None);
        };
        // Sent together (one round trip): the directory, and the number of leases its `leases` directory records.
        // The directory is the semaphore's alone: a contender of another recipe beside our `leases` and `locks` (a
        // mutex's node, say) would not exclude us, nor we it. Looked at while our gate node exists, so of the two the
        // later one refuses (a queue recipe looks into `leases` and `locks`: engine/).
        let (client, retry) = (self.place.session.client(), self.place.session.retry());
        let leases_dir = leases_dir(&self.place.path);
        let (children, recorded) = tokio::join!(
            idioms::list_or_empty(client, retry, &self.place.path),
            retry.run_at("getData", &leases_dir, || client.get_data(&leases_dir)),
        );
        let children = children?;
        if let Some((other, what)) = names::conflict(&children, |_| false) {
            release_gate(turn).await?;
            // Our gate directory would make the other recipe's directory look like an idle semaphore's: gone with
            // us, unless another acquirer is in it (the server refuses to delete a node with children then).
            match idioms::delete_if_exists(client, retry, &gate.path, None).await {
                Ok(())
                | Err(Error::ZooKeeper {
                    source: zookeeper_client::Error::NotEmpty,
                    ..
                }) => {}
                Err(err) => return Err(err),
            }
            return Err(Error::InUse {
                path: self.place.path.clone(),
                node: other,
                what,
            });
        }
        // Only now (a directory we share with nobody else): its number of leases, or ours recorded.
        if let Some(mismatch) = self.record_leases(&leases_dir, recorded).await? {
            release_gate(turn).await?;
            return Err(mismatch);
        }
        // Declared after `turn`, so that on cancellation the lease node is dropped (and its delete sent) first.
        let lease = self.take_lease(wait, &turn).await;
        let released = release_gate(turn).await;
        match (lease, released) {
            (Ok(lease), Ok(())) => Ok(lease),
            // Dropping the lease removes its node in the background.
            (Ok(_), Err(err)) | (Err(err), _) => Err(err),
        }
    }

    /// Holding the acquirers' mutex: compares our number of leases with the one the `leases` directory records
    /// (its data, decimal, as kazoo keeps a semaphore's `max_leases`), and records ours when there is no directory
    /// yet — so that a participant started with another number is refused ([`Error::Mismatch`]) instead of letting
    /// one lease too many be held. A directory without a number (Curator's, an older zklock's) is not checked.
    async fn record_leases(
        &self,
        leases_dir: &str,
        recorded: Result<(Vec<u8>, zookeeper_client::Stat)>,
    ) -> Result<Option<Error>> {
        let number = match recorded.if_exists()? {
            Some((data, _)) => std::str::from_utf8(&data)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok()),
            None => {
                let (client, retry) = (self.place.session.client(), self.place.session.retry());
                let mode =
                    zookeeper_client::CreateMode::Container.with_acls(self.place.session.parent_acls());
                let record = self.leases.to_string();
                match retry
                    .run_at("create", leases_dir, || {
                        client.create(leases_dir, record.as_bytes(), &mode)
                    })
                    .await
                {
                    // Made by somebody else meanwhile (a Curator acquirer does not take our gate): not checked.
                    Ok(_)
                    | Err(Error::ZooKeeper {
                        source: zookeeper_client::Error::NodeExists,
                        ..
                    }) => None,
                    // A server without containers (ZooKeeper before 3.5): the lease's own create makes it.
                    Err(Error::ZooKeeper {
                        source: zookeeper_client::Error::Unimplemented,
                        ..
                    }) => None,
                    Err(err) => return Err(err),
                }
            }
        };
        Ok(number.filter(|&n| n != self.leases).map(|n| Error::Mismatch {
            what: format!(
                "{} is a semaphore of {n} lease(s) (its leases directory records it), not {}: every participant must \
                 use the same number",
                self.place.path, self.leases
            ),
        }))
    }

    /// Holding the acquirers' mutex (`turn`): creates our lease node and waits until it is within the limit.
    async fn take_lease(&self, wait: Wait, turn: &Guard) -> Result<Option<Lease>> {
        let room = Room {
            leases: self.leases,
            turn,
        };
        engine::acquire(&self.place.child(names::LEASES), &room, wait).await
    }
}

pub(crate) fn leases_dir(path: &str) -> String {
    child_path(path, names::LEASES)
}

pub(crate) fn is_lease(marker: Marker) -> bool {
    marker == Marker::Lease
}

/// The rules of the lease: room among the leases, looked at by the holder of the acquirers' mutex (`turn`).
struct Room<'a> {
    leases: usize,
    turn: &'a Guard,
}

impl Room<'_> {
    /// Whether the leases in `children` leave room for ours.
    async fn has_room(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        let me = node.name.as_deref().unwrap_or_default();
        let leases = node
            .sweep_duplicates(names::sorted_contenders(children, is_lease))
            .await?;
        if !leases.iter().any(|lease| lease.name == me) {
            return Err(lost.node_gone(node));
        }
        Ok(leases.len() <= self.leases)
    }
}

impl Rules for Room<'_> {
    fn marker(&self) -> Marker {
        Marker::Lease
    }

    /// Waits, with a child watch on the leases (we are the only acquirer watching them), until there is room.
    async fn wait(
        &self,
        session: &Session,
        node: &OwnNode,
        lost: &LostSignal,
        mut listing: Option<Vec<String>>,
    ) -> Result<()> {
        let client = session.client();
        loop {
            // The listing pipelined with our create has no watch: use it once, then list with a watch.
            let (children, watcher) = match listing.take() {
                Some(children) => (children, None),
                None => {
                    let (children, watcher) = node
                        .retry
                        .run_at("getChildren", &node.dir, || {
                            client.list_and_watch_children(&node.dir)
                        })
                        .await?;
                    (children, Some(watcher))
                }
            };
            if self.has_room(node, lost, children).await? {
                return Ok(());
            }
            let Some(watcher) = watcher else { continue };
            session.emit(QueueEvent::Waiting { on: node.dir.clone() });
            tokio::select! {
                event = crate::base::idioms::fired(watcher) => {
                    if let Some(err) = idioms::session_error(&event) {
                        return Err(err);
                    }
                    if event.event_type != zookeeper_client::EventType::Session {
                        session.emit(QueueEvent::Woken { by: node.dir.clone() });
                    }
                },
                reason = lost.lost() => return Err(match reason {
                    LostReason::NodeDeleted => lost.node_gone(node),
                    reason => reason.error(&node.path()),
                }),
                // Without the mutex another acquirer could be waiting too, and two waiting leases can block each
                // other for good: give up rather than risk it.
                reason = self.turn.lost() => return Err(reason.error(self.turn.path())),
            }
        }
    }

    async fn now(&self, node: &OwnNode, lost: &LostSignal, children: Vec<String>) -> Result<bool> {
        self.has_room(node, lost, children).await
    }
}

/// Gives up our turn at the acquirers' gate. The gate only orders acquirers: that it was lost meanwhile (the
/// release's [`Error::Lost`]) changes nothing for the lease, whose own lost signal reports what happened to it.
async fn release_gate(turn: Guard) -> Result<()> {
    match turn.release().await {
        Err(Error::Lost(_)) => Ok(()),
        released => released,
    }
}
