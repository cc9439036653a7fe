//! The double barrier of the design documents: N participants enter together and leave together.
//!
//! Layout under the barrier path: one ephemeral node per participant, named by a fresh uuid, and a persistent
//! `ready` node created by whoever counts N participants.
//!
//! * **Enter** (the ZooKeeper recipe): set an `exists` watch on `ready`, create our node (the shared protected
//!   create: a lost reply finds it by its uuid name), list the children — the three requests go out back to back
//!   and cost one round trip. If `ready` exists or we count N participants (then we create `ready`), we are in.
//!   Otherwise we wait for the watch and then *look again*: a notification is only a reason to re-check, never a
//!   release in itself (Curator #1290 let clients through on a spurious wake-up). Whoever arrives last sees
//!   everybody, because its listing is processed after its own create.
//! * **Leave** (the ZooKeeper recipe): the lowest participant (by name) waits for the highest to go; everybody
//!   else deletes its node and waits for the lowest. Each look is a fresh listing; we return only when no
//!   participant is left. The lowest is woken once per departure; the final departure of the lowest wakes every
//!   remaining waiter — that is the release itself, there is nobody to spare.
//! * **Cleanup**: the last to leave removes `ready` (only the `ready` of its own round, recognised by its czxid).
//!   A failed or cancelled `enter`, a failed or cancelled `leave` and a dropped [`Participation`] delete our node
//!   (Curator #601 left it behind on errors).

use std::time::Duration;

use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::path::child_path;
use crate::node::abandoned;
use crate::node::held::Held;
use crate::session::listener::QueueEvent;
use crate::session::Session;

/// The name of the node that opens the barrier.
pub(crate) const READY: &str = "ready";

/// A double barrier for a fixed number of participants.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let barrier = zklock::DoubleBarrier::new(&client, "/barriers/epoch-7", 5)?;
/// let participation = barrier.enter().await?; // returns once 5 participants have arrived
/// tokio::select! {
///     reason = participation.lost() => eprintln!("dropped out of the computation: {reason}"),
///     _ = async { /* the computation */ } => {}
/// }
/// participation.leave().await?; // returns once all 5 have left
/// # Ok(()) }
/// ```
///
/// # Session expiry
/// A participant's node is ephemeral. If its session expires *before* `N` have arrived, it no longer counts and
/// its `enter` fails with [`Error::SessionExpired`]; the others keep waiting for `N` live arrivals. Once `ready`
/// exists the barrier counts arrivals, not survivors: a participant whose session expires after entering is
/// treated by the others as having left, its [`Participation::lost`] fires and its `leave` fails with
/// [`Error::SessionExpired`].
///
/// # Abandoned attempts
/// The barrier counts participant *nodes*, as Curator's and kazoo's do. An `enter` cancelled or timed out while the
/// connection is down cannot delete its node at once; the delete is retried in the background, and until it lands
/// that node still counts as an arrival. So that a participant entering again is not counted twice, `enter` first
/// waits for the background deletes of this process's abandoned nodes in this barrier to end (found by the
/// fault campaign: docs/reliability.md, finding 6). Likewise when our client gave up its session (it could not
/// reconnect in time) while the server still kept it: the next `enter` in this barrier from this process, on a new
/// session, first deletes the old session's node (finding 8). Another *process* cannot know about them: a
/// participant that restarts as a new process while its old session's node is still there is counted twice until
/// the server expires that session — the same as any ephemeral node of a dead process.
///
/// # Rounds
/// One barrier path serves one round at a time. `ready` stays until the last participant leaves; somebody who
/// calls `enter` while it exists (a late participant beyond `N`, or the next round arriving before the previous
/// one has completely left) passes at once and joins the current round. Use a fresh path per round (e.g. with the
/// round number in it) when rounds may overlap.
///
/// # Errors
/// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends; [`Error::NodeDeleted`] if somebody else
/// deletes our participant node while we enter; [`Error::Timeout`] from the `_timeout` variants;
/// [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Events
/// The [`Session`]'s listener receives `Created` (our node), `Waiting`/`Woken` (on `ready` while entering, on
/// another participant while leaving) and `Acquired` (entered).
///
/// # Cancellation safety
/// Dropping an `enter` future at any await point, or a timed-out `enter_timeout`, removes our participant node
/// (the delete is sent before the drop returns). Dropping a `leave` future leaves without waiting for the others:
/// our node is removed all the same.
#[derive(Debug, Clone)]
pub struct DoubleBarrier {
    session: Session,
    path: String,
    members: usize,
    data: Vec<u8>,
}

impl DoubleBarrier {
    /// A double barrier at `path` (created with its parents on first use) for `members` participants, on
    /// `session` — a [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path; [`Error::InvalidArgument`] if `members` is 0.
    pub fn new(session: impl Into<Session>, path: &str, members: usize) -> Result<DoubleBarrier> {
        if members == 0 {
            return Err(Error::InvalidArgument(
                "a double barrier needs at least one participant".to_owned(),
            ));
        }
        Ok(DoubleBarrier {
            session: session.into(),
            path: crate::base::path::validate(path)?,
            members,
            data: Vec::new(),
        })
    }

    /// Data stored in our participant node (e.g. host and pid, for operators).
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> DoubleBarrier {
        self.data = data.into();
        self
    }

    /// The session and policies this barrier uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The barrier directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The number of participants that must arrive.
    pub fn members(&self) -> usize {
        self.members
    }

    /// Joins the barrier and waits until `members` participants have arrived.
    pub async fn enter(&self) -> Result<Participation> {
        // One ZooKeeper session from start to end (a reconnecting session may change in between).
        let session = &self.session.pinned();
        let (client, retry) = (session.client(), session.retry());
        // An earlier attempt of this process that was cancelled, or whose session ended as far as our client
        // knows, may have left its node here: it must be gone before ours exists, or one participant would count
        // twice.
        abandoned::settled(client, retry, &self.path).await?;
        let name = uuid::Uuid::new_v4().to_string();
        let me = child_path(&self.path, &name);
        let ready = child_path(&self.path, READY);
        // The first look goes out with our create, in the recipe's order: the watch on `ready` exists before our
        // node does, and the listing is processed after our create. One round trip.
        let watch = client.check_and_watch_stat(&ready);
        let own = session.send_own(&me, &self.data, Some(CreateMode::Persistent))?;
        let list = client.list_children(&self.path);
        let (watched, made, listed) = tokio::join!(watch, own, list);
        let (own, first) = made?;
        let node = own.made(&me)?;
        session.emit(QueueEvent::Created { path: me.clone() });
        let held = Held::watch(node, session);
        // Only when our first create made the node does that listing show it; else (and after any error) look anew.
        let mut first_look = first
            .then(|| {
                Some((
                    watched.ok()?,
                    listed.map(Some).or_else(|err| absent(err, None)).ok()?,
                ))
            })
            .flatten();
        loop {
            // Sent back to back, one round trip: the watch on `ready`, then the listing (processed after our
            // create, so whoever arrives last sees everybody).
            let look = || {
                let (watch, list) = (
                    client.check_and_watch_stat(&ready),
                    client.list_children(&self.path),
                );
                async move {
                    let (watched, listed) = tokio::join!(watch, list);
                    Ok((watched?, listed.map(Some).or_else(|err| absent(err, None))?))
                }
            };
            let (watched, listed) = match first_look.take() {
                Some(looked) => looked,
                None => retry.run_at("exists", &ready, look).await?,
            };
            let (ready_stat, watcher) = watched;
            if let Some(stat) = ready_stat {
                return Ok(self.entered(held, stat.czxid));
            }
            let children = listed.unwrap_or_default();
            if !children.contains(&name) {
                return Err(held.vanished().await);
            }
            let arrived = children.iter().filter(|c| is_participant(c)).count();
            if arrived >= self.members {
                tracing::debug!(path = %self.path, arrived, "the last participant arrived; opening the barrier");
                match session.create_persistent(&ready, &[], None).await? {
                    Some(czxid) => return Ok(self.entered(held, czxid)),
                    // Created by another participant (or by our own attempt whose reply was lost): look again.
                    None => continue,
                }
            }
            tracing::debug!(path = %self.path, arrived, members = self.members, "waiting for participants");
            tokio::select! {
                changed = session.await_change(watcher, &ready) => drop(changed?),
                _ = held.lost() => return Err(held.vanished().await),
            }
        }
    }

    /// Like [`enter`](DoubleBarrier::enter), but gives up after `timeout` with [`Error::Timeout`], removing our
    /// participant node.
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<Participation> {
        crate::base::idioms::timeout(timeout, self.enter()).await
    }

    fn entered(&self, held: Held, ready_czxid: i64) -> Participation {
        held.hold();
        let path = held.path();
        self.session.emit(QueueEvent::Acquired {
            path: path.clone(),
            fencing_token: held.czxid(),
        });
        Participation {
            path,
            held,
            ready_czxid,
            barrier: self.clone(),
        }
    }

    /// Removes `ready` if it is still the one of our round (by czxid); anything else is not ours to touch.
    async fn remove_ready(&self, czxid: i64) -> Result<()> {
        let ready = child_path(&self.path, READY);
        match self.session.exists(&ready).await? {
            Some(stat) if stat.czxid == czxid => {
                match self.session.delete_if_exists(&ready, Some(stat.version)).await {
                    // Replaced by a later round, or a participant of one has arrived already.
                    Err(Error::ZooKeeper {
                        source: zk::Error::BadVersion | zk::Error::NotEmpty,
                        ..
                    }) => Ok(()),
                    deleted => deleted,
                }
            }
            _ => Ok(()),
        }
    }
}

/// `NoNode` as `value`; any other error stays one.
fn absent<T>(err: zk::Error, value: T) -> std::result::Result<T, zk::Error> {
    match err {
        zk::Error::NoNode => Ok(value),
        err => Err(err),
    }
}

/// Whether a child of the barrier directory is a participant (our nodes are named by a uuid; `ready` and
/// anything else are not counted).
pub(crate) fn is_participant(name: &str) -> bool {
    uuid::Uuid::try_parse(name).is_ok()
}

/// One participant inside a [`DoubleBarrier`], from a successful [`enter`](DoubleBarrier::enter) until it leaves.
///
/// Dropping it leaves without waiting for the others (our node is deleted in the background).
#[derive(Debug)]
pub struct Participation {
    held: Held,
    ready_czxid: i64,
    barrier: DoubleBarrier,
    /// The full path of our participant node.
    path: String,
}

impl Participation {
    /// The full path of our participant node.
    pub fn path(&self) -> &str {
        &self.path
    }

    crate::node::held::lost_methods! {
        held:
        /// Completes when our participation stops counting: session expiry, deletion of our node by somebody else,
        /// or (per the [`LostPolicy`](crate::LostPolicy)) a long disconnection.
        pub fn lost;
        /// Whether the participation has been lost already.
        pub fn is_lost;
        /// Why the participation was lost, if it was.
        pub fn lost_reason;
    }

    crate::node::held::suspension_methods!(held);

    /// Leaves the barrier and waits until every participant has left.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends (our node is gone, so the others see
    /// us as having left); [`Error::ConnectionLoss`] only if the retry policy caps attempts.
    ///
    /// # Cancellation safety
    /// Dropping the future removes our node (if not yet removed) without waiting for the others.
    pub async fn leave(self) -> Result<()> {
        let Participation {
            held,
            ready_czxid,
            barrier: b,
            ..
        } = self;
        // Our node is about to go on purpose: that is not a loss.
        let node = held.into_node();
        let name = node.name.clone().unwrap_or_default();
        let mut node = Some(node);
        loop {
            let children = b.session.list_or_empty(&b.path).await?;
            let mut members: Vec<String> = children.into_iter().filter(|c| is_participant(c)).collect();
            members.sort();
            if members.iter().all(|m| *m == name) {
                // Nobody else is left: we are the last one (or already gone ourselves).
                if let Some(node) = node.take() {
                    node.delete().await?;
                }
                return b.remove_ready(ready_czxid).await;
            }
            let target = if members[0] == name {
                members[members.len() - 1].clone()
            } else {
                if let Some(node) = node.take() {
                    node.delete().await?;
                }
                members[0].clone()
            };
            let path = child_path(&b.path, &target);
            // Whatever happens to the node we watch, only a fresh listing decides.
            if let (Some(_), watcher) = b.session.watch_exists(&path).await? {
                b.session.await_change(watcher, &path).await?;
            }
        }
    }

    /// Like [`leave`](Participation::leave), but gives up waiting after `timeout` with [`Error::Timeout`]; our
    /// node is removed in any case.
    pub async fn leave_timeout(self, timeout: Duration) -> Result<()> {
        crate::base::idioms::timeout(timeout, self.leave()).await
    }
}
