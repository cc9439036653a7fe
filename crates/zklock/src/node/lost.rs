//! The lost signal: one background task per queue node that tells its owner the moment the node stops
//! protecting anything.
//!
//! A node is lost when the session expires or the client closes (ZooKeeper deletes ephemerals), when somebody else
//! deletes it, or — by policy, and only once it is held — when the connection has been down long enough that the
//! session may already be gone on the server.
//!
//! The same task keeps the *session validity* of a held node: the instant before which the server cannot have
//! expired our session. In an ensemble only the leader expires sessions, and it hears of ours late: a follower
//! answers reads and pings itself and tells the leader which sessions it heard from only in its replies to the
//! leader's pings (every half `tickTime`). A follower cut off from the leader keeps our connection, and answers us,
//! until it gives up on the leader (`syncLimit` ticks: 10 s with the defaults) — while the leader expires our
//! session after the session timeout and lets the next holder in. So a reply from "the server" proves nothing; only
//! a request that went through the leader does. The heartbeat is a `sync` on our node (a follower forwards it to
//! the leader and answers only once the leader has) with an `exists` on it pipelined behind (which also confirms
//! that the node is still there), and a heartbeat *sent* at `t` and answered makes the session valid until
//! `t` + half the session timeout `T`. The reasoning, and where it ends:
//! * The leader processed our `sync` at or after `t`. Before it, on the same ordered connection, came the
//!   follower's reply to each leader ping that reached the follower before our `sync` did; the last of them was
//!   sent at or after `t` − `tickTime`/2 − (jitter of the ping's delay). ZooKeeper negotiates `T` ≥ 2 `tickTime`
//!   unless `minSessionTimeout` is set lower, so `tickTime`/2 ≤ `T`/4.
//! * That reply lists our session if we sent the follower anything since the reply before it; the leader then sets
//!   our expiry to its own now + `T`. `zookeeper-client` pings an idle connection every 3/20 of `T` (checked every
//!   `T`/20) and a held node's heartbeats come every `T`/10, so the latest packet of ours that such a reply covered
//!   was sent at or after `t` − `T`/4 − `T`/5 − jitter.
//! * So the leader cannot expire us before `t` + `T` − `T`/4 − `T`/5 − jitter = `t` + 0.55 `T` − jitter: half the
//!   timeout holds for a ping jitter up to `T`/20 (200 ms at 4 s). The leader's expiry queue rounds up to the next
//!   tick, and the next holder still has to hear of the deletion, which only widens the margin.
//! * A standalone server (or the embedded one) touches the session on every packet and answers a `sync` itself:
//!   there the bound is `t` + `T`, and half of it is merely careful.
//! * Not covered: a pause or clock jump of the whole machine (the fencing token covers it), a `minSessionTimeout`
//!   below 2 `tickTime`, links between members slower than that jitter, and a `sync` answered by a leader that has
//!   lost its quorum without knowing yet (ZOOKEEPER-2136: it steps down within `syncLimit` ticks, and a new
//!   leader expires our session only a session timeout after it took over, so this holds on its own).
//!
//! zookeeper-client does not tell when it last heard from the server, so the task asks itself: once the owner has
//! asked for the session validity, and while the node is held, it sends a heartbeat every tenth of the session
//! timeout after the last confirmed one was sent, one at a time (a heartbeat that hangs — a partitioned follower —
//! leaves the validity to run out).
//!
//! Cost: one `exists` watch on our own node (sent right after the create, by the acquire itself — its reply is
//! awaited by the monitor task, never on the acquire path, and no task has to run before the guard is handed out). Only
//! a guard whose session validity was asked for (`zklock run` and `zklock elect` do) adds a `sync` and a tiny
//! `exists` every session timeout / 10 while it is held; every other guard costs nothing more.
//!
//! **Suspended, then resumed or lost.** Under a suspending [`LostPolicy`] (`Suspend`, `SuspendAfter`) the end of the
//! disconnection grace — and, for a node whose validity was asked for, the validity passing unconfirmed — does not
//! lose the node: it *suspends* it (the owner must not act), and the task goes on sending heartbeats, at once on a
//! reconnection. The first that passes the leader, finds our node and still covers the present resumes it: our node
//! is an ephemeral of our session, and a session that ended never comes back, so the node standing now means that
//! nobody else can have held meanwhile. Expiry, closing and deletion end it as ever.
//!
//! The owner *dismisses* the task before it deletes the node itself (see [`OwnNode`](crate::node::own::OwnNode)):
//! a dismissed task reports nothing, so the owner's own delete is never mistaken for somebody else's.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zookeeper_client::{self as zk, Client, EventType, SessionState, Stat};

use crate::base::error::{session_ended, Error, LostReason};
use crate::base::idioms;
use crate::base::retry::RetryPolicy;
use crate::node::own::OwnNode;
use crate::session::lost_policy::LostPolicy;

/// The owner's end of a node's lost signal. Dropping it dismisses the monitor task.
#[derive(Debug)]
pub(crate) struct LostSignal {
    reason: watch::Receiver<Option<LostReason>>,
    holding: watch::Sender<bool>,
    /// Whether the owner asked for the session validity: only then does the task send heartbeats.
    wanted: watch::Sender<bool>,
    valid_until: watch::Receiver<Option<std::time::Instant>>,
    /// Whether the node is suspended now (a suspending [`LostPolicy`] only).
    suspended: watch::Receiver<bool>,
    dismissed: CancellationToken,
}

impl Drop for LostSignal {
    fn drop(&mut self) {
        // Dismissed, not aborted: a dismissed task reports nothing and ends by itself — at once, or when our own
        // delete (sent after this) has fired the watch on our node (bounded by the session timeout; see
        // `node_gone`). An aborted task would drop that watch unfired, which costs a `removeWatches` request.
        self.dismissed.cancel();
    }
}

impl LostSignal {
    /// Starts watching `path`, our own node.
    /// `closed`: cancelled when the session is closed ([`Session::close`](crate::Session::close)), so that the
    /// deletion of our node by the close is reported as [`LostReason::ClientClosed`].
    pub(crate) fn start(
        client: &Client,
        path: &str,
        policy: LostPolicy,
        retry: &RetryPolicy,
        closed: CancellationToken,
    ) -> LostSignal {
        let (tx, reason) = watch::channel(None);
        let (holding, holding_rx) = watch::channel(false);
        let (wanted, wanted_rx) = watch::channel(false);
        let (valid_tx, valid_until) = watch::channel(None);
        let (suspended_tx, suspended) = watch::channel(false);
        let dismissed = CancellationToken::new();
        // The watch on our node is requested here, not by the task: `zookeeper-client` sends a request when it is
        // made, in order with the session's others, so every delete of ours (made after this returns) comes after
        // this `exists` — the watch is set on the node and fired by the delete, never set on a node already gone (a
        // creation watch that would wait for nothing and have to be removed with a request of its own) — and the
        // guard can be handed out without waiting for the task to run. A deletion by somebody else before the
        // `exists` arrives makes it answer "no node": a loss all the same.
        let first = reason_for_state(client.state())
            .is_none()
            .then(|| watch_node(client, path));
        // Not aborted, ever: it ends by itself once dismissed (see `Drop`).
        tokio::spawn(monitor(
            Monitor {
                client: client.clone(),
                path: path.to_owned(),
                policy,
                retry: retry.clone(),
                dismissed: dismissed.clone(),
                closed,
                first,
            },
            holding_rx,
            wanted_rx,
            tx,
            valid_tx,
            suspended_tx,
        ));
        LostSignal {
            reason,
            holding,
            wanted,
            valid_until,
            suspended,
            dismissed,
        }
    }

    /// Starts watching `node`, and has the node dismiss this signal before it deletes itself (see
    /// [`OwnNode::dismisses`]).
    pub(crate) fn for_node(node: &mut OwnNode, policy: LostPolicy) -> LostSignal {
        let lost = LostSignal::start(&node.client, &node.path(), policy, &node.retry, node.closed());
        node.dismisses(lost.dismissed.clone());
        lost
    }

    /// From now on the node is held: disconnections count, per the policy, and the session validity is kept.
    pub(crate) fn set_holding(&self) {
        self.holding.send_replace(true);
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        *self.reason.borrow()
    }

    /// The instant before which the server cannot have expired our session, from the last confirmed contact;
    /// `None` before the first one and once the node is lost. (Reasoning in the module documentation.) The first
    /// call starts the heartbeats that keep it moving while the node is held.
    pub(crate) fn valid_until(&self) -> watch::Receiver<Option<std::time::Instant>> {
        self.wanted
            .send_if_modified(|wanted| !std::mem::replace(wanted, true));
        self.valid_until.clone()
    }

    /// Whether the node is suspended now: held under a suspending [`LostPolicy`], its session not confirmed in time
    /// (see [`LostPolicy::Suspend`]), and not lost.
    pub(crate) fn is_suspended(&self) -> bool {
        *self.suspended.borrow() && self.lost_reason().is_none()
    }

    /// Completes when the node is suspended, or lost (then with the reason).
    pub(crate) fn suspended(&self) -> impl Future<Output = Option<LostReason>> + Send + 'static {
        let (mut suspended, mut reason) = (self.suspended.clone(), self.reason.clone());
        async move {
            // A loss is reported over a suspension that preceded it.
            tokio::select! {
                biased;
                lost = reason.wait_for(Option::is_some) => Some(lost.map_or(LostReason::Released, |r| r.unwrap_or(LostReason::Released))),
                Ok(_) = suspended.wait_for(|s| *s) => None,
            }
        }
    }

    /// Completes when the node is held and not suspended (at once if it is not suspended now): `Ok`, or the reason
    /// it was lost instead.
    pub(crate) fn resumed(
        &self,
    ) -> impl Future<Output = std::result::Result<(), LostReason>> + Send + 'static {
        let (mut suspended, mut reason) = (self.suspended.clone(), self.reason.clone());
        async move {
            if let Some(lost) = *reason.borrow() {
                return Err(lost);
            }
            tokio::select! {
                biased;
                lost = reason.wait_for(Option::is_some) => Err(lost.map_or(LostReason::Released, |r| r.unwrap_or(LostReason::Released))),
                Ok(_) = suspended.wait_for(|s| !*s) => Ok(()),
            }
        }
    }

    /// Completes when the node is lost; `Released` if the signal is dropped first.
    pub(crate) fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        let mut rx = self.reason.clone();
        async move {
            match rx.wait_for(Option::is_some).await {
                Ok(reason) => reason.unwrap_or(LostReason::Released),
                Err(_) => LostReason::Released,
            }
        }
    }

    /// Our node is gone: did our session end? The deletion of our ephemeral node can reach us before the news
    /// that the session ended, so this looks at everything known without asking: this signal, then the client.
    fn session_end_known(&self, client: &Client) -> Option<Error> {
        match self.lost_reason() {
            Some(reason @ (LostReason::SessionExpired | LostReason::ClientClosed)) => Some(reason.error("")),
            _ => session_ended(client.state()),
        }
    }

    /// The error for a wait that found our `node` gone, from what is known without asking: the end of the session
    /// if it is known to have ended, [`Error::NodeDeleted`] otherwise.
    pub(crate) fn node_gone(&self, node: &OwnNode) -> Error {
        self.session_end_known(&node.client)
            .unwrap_or_else(|| Error::NodeDeleted { path: node.path() })
    }

    /// Like [`node_gone`](LostSignal::node_gone), but when nothing is known yet one more request decides (see
    /// [`confirm_gone`](idioms::confirm_gone)).
    pub(crate) async fn vanished(&self, client: &Client, retry: &RetryPolicy, path: &str) -> Error {
        match self.session_end_known(client) {
            Some(err) => err,
            None => idioms::confirm_gone(client, retry, path).await,
        }
    }
}

/// The reason for a node lost with this error: the end of the session, or (anything else) a deletion.
fn reason_for(err: &Error) -> LostReason {
    match err {
        Error::SessionExpired => LostReason::SessionExpired,
        Error::Closed | Error::AuthFailed => LostReason::ClientClosed,
        _ => LostReason::NodeDeleted,
    }
}

fn reason_for_state(state: SessionState) -> Option<LostReason> {
    idioms::session_ended(state).map(|err| reason_for(&err))
}

/// Where the monitor records confirmed contacts with the server.
struct Contacts<'a> {
    valid_until: &'a watch::Sender<Option<std::time::Instant>>,
    session_timeout: Duration,
}

impl Contacts<'_> {
    /// A heartbeat sent at `sent` went through the leader and found our node (so our session) alive: the session
    /// is valid until half a timeout after `sent` (see the module documentation).
    fn confirmed(&self, sent: std::time::Instant) {
        let until = sent + self.session_timeout / 2;
        self.valid_until.send_if_modified(|valid| {
            let later = valid.is_none_or(|valid| until > valid);
            if later {
                *valid = Some(until);
            }
            later
        });
    }

    /// When the next heartbeat is due: a tenth of the session timeout ([`HEARTBEATS`]) after the last confirmed one
    /// was sent.
    fn next_heartbeat(&self) -> Instant {
        match *self.valid_until.borrow() {
            Some(until) => {
                Instant::from_std(until - self.session_timeout / 2 + self.session_timeout / HEARTBEATS)
            }
            None => Instant::now(),
        }
    }
}

/// Heartbeats per session timeout while the session validity is kept.
const HEARTBEATS: u32 = 10;

/// Sends a heartbeat: a `sync` on our node, which a follower answers only once the leader has, and an `exists`
/// on it pipelined behind (ZooKeeper answers a session's requests in order, so its reply comes after the `sync`'s).
/// The `exists` is what proves our session alive at the leader: a follower answers a `sync` only after applying
/// every transaction the leader committed before it, so had the leader expired our session, the follower would
/// have deleted our ephemeral node by then and the `exists` would find nothing.
/// `true` if both went through and the node is there. Sent when first polled, so after the instant the caller
/// records as its sending: the validity errs short.
fn heartbeat_to(client: &Client, path: &str) -> Pin<Box<dyn Future<Output = bool> + Send>> {
    let (client, path) = (client.clone(), path.to_owned());
    Box::pin(async move {
        // Both requests are sent on the first poll, one after the other.
        let (synced, stat) = tokio::join!(client.sync(&path), client.check_stat(&path));
        synced.is_ok() && matches!(stat, Ok(Some(_)))
    })
}

/// Waits for our node to be deleted (or the session to end), re-arming the one-shot watch on data changes. `None`
/// once the owner has dismissed us.
///
/// Dismissed while the watch is set, we wait (at most `linger`) for the owner's own delete, sent right after the
/// dismissal, to fire it: a watch that fired is gone at the server, where a watch dropped unfired costs a
/// `removeWatches` request (`zookeeper-client` sends one) — one request fewer per acquisition.
#[allow(clippy::too_many_arguments)] // the monitor's parts, each borrowed for the wait
async fn node_gone(
    client: Client,
    path: String,
    retry: RetryPolicy,
    dismissed: &CancellationToken,
    closed: &CancellationToken,
    mut first: Option<FirstWatch>,
    linger: Duration,
) -> Option<LostReason> {
    let mut attempt = 0;
    loop {
        let request = match first.take() {
            Some(first) => first,
            None => {
                // Dismissed before we ask again (after a failed `exists`): the owner's delete is out or about to be,
                // and a watch set after it would wait for a creation that never comes.
                if dismissed.is_cancelled() {
                    return None;
                }
                watch_node(&client, &path)
            }
        };
        let mut request = request;
        let watched = tokio::select! {
            watched = &mut request => watched,
            () = dismissed.cancelled() => {
                // The reply may still set the watch (the request is out): our delete fires it in its turn.
                let _ = tokio::time::timeout(linger, async {
                    if let Ok((Some(_), watcher)) = request.await {
                        crate::base::idioms::fired(watcher).await;
                    }
                })
                .await;
                return None;
            }
        };
        tracing::trace!(target: "zklock::timeline", session = client.session_id().0, "own node watched");
        match watched {
            Ok((None, _)) => return Some(deletion_reason(&client, &path, &retry, closed).await),
            Ok((Some(_), watcher)) => {
                attempt = 0;
                let changed = crate::base::idioms::fired(watcher);
                tokio::pin!(changed);
                let event = tokio::select! {
                    event = &mut changed => event,
                    () = dismissed.cancelled() => {
                        let _ = tokio::time::timeout(linger, changed).await;
                        return None;
                    }
                };
                match event.event_type {
                    EventType::NodeDeleted => {
                        return Some(deletion_reason(&client, &path, &retry, closed).await)
                    }
                    EventType::Session => {
                        if let Some(reason) = reason_for_state(event.session_state) {
                            return Some(reason);
                        }
                    }
                    // Data changed (a holder description update): watch again.
                    _ => {}
                }
            }
            Err(zk::Error::SessionExpired | zk::Error::SessionMoved) => {
                return Some(LostReason::SessionExpired)
            }
            Err(zk::Error::ClientClosed | zk::Error::AuthFailed) => return Some(LostReason::ClientClosed),
            Err(err) => {
                attempt += 1;
                tracing::debug!(%path, %err, "re-arming the watch on our own node");
                tokio::select! {
                    () = tokio::time::sleep(retry.backoff(attempt)) => {}
                    () = dismissed.cancelled() => return None,
                }
            }
        }
    }
}

/// Our node is gone: because the session ended (the deletion can reach us before the news of the expiry does), or
/// because somebody deleted it? One more request tells.
async fn deletion_reason(
    client: &Client,
    path: &str,
    retry: &RetryPolicy,
    closed: &CancellationToken,
) -> LostReason {
    // `Session::close` deleted it.
    if closed.is_cancelled() {
        return LostReason::ClientClosed;
    }
    reason_for(&idioms::confirm_gone(client, retry, path).await)
}

/// What the monitor task watches, and how.
struct Monitor {
    client: Client,
    path: String,
    policy: LostPolicy,
    retry: RetryPolicy,
    /// Cancelled by the owner before it deletes the node itself; from then on the task reports nothing.
    dismissed: CancellationToken,
    /// Cancelled once the session is closed (see [`LostSignal::start`]).
    closed: CancellationToken,
    /// The first `exists` on our node, already sent (`None` when the session had ended).
    first: Option<FirstWatch>,
}

/// The first `exists` on our node, sent by [`LostSignal::start`] itself: its reply.
type FirstWatch = Pin<Box<dyn Future<Output = Result<(Option<Stat>, zk::OneshotWatcher), zk::Error>> + Send>>;

/// Sends an `exists` that watches our node at `path`; returns its reply.
///
/// `zookeeper-client` sends a request when the method is called, but this one's future borrows the client; the
/// future here owns a clone of it instead, and is polled once right here, which makes the call — the request is
/// on its way when this returns. (A future may be polled with one waker and then another: the task that awaits the
/// reply polls it with its own.)
fn watch_node(client: &Client, path: &str) -> FirstWatch {
    let (client, path) = (client.clone(), path.to_owned());
    let mut request: Pin<Box<dyn Future<Output = _> + Send>> =
        Box::pin(async move { client.check_and_watch_stat(&path).await });
    // Ready already only if it failed at once (say, the client closed); the task then sees that result.
    let first = request
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
    match first {
        std::task::Poll::Ready(result) => Box::pin(std::future::ready(result)),
        std::task::Poll::Pending => request,
    }
}

/// A heartbeat in flight: when it was sent, and whether it confirmed our session at the leader.
type Heartbeat = (std::time::Instant, Pin<Box<dyn Future<Output = bool> + Send>>);

async fn monitor(
    monitor: Monitor,
    mut holding: watch::Receiver<bool>,
    mut wanted: watch::Receiver<bool>,
    tx: watch::Sender<Option<LostReason>>,
    valid_until: watch::Sender<Option<std::time::Instant>>,
    suspended: watch::Sender<bool>,
) {
    let Monitor {
        client,
        path,
        policy,
        retry,
        dismissed,
        closed,
        first,
    } = monitor;
    let mut states = client.state_watcher();
    let session_timeout = client.session_timeout();
    let contacts = Contacts {
        valid_until: &valid_until,
        session_timeout,
    };
    let grace = policy.grace(session_timeout);
    let suspends = policy.suspends();
    let suspend = |why: &str| {
        suspended.send_replace(true);
        tracing::warn!(%path, why, "lock node suspended: nothing may act under it until our session is confirmed");
        metrics::counter!(crate::base::metrics::GUARDS_SUSPENDED).increment(1);
    };
    let mut disconnected_at = (client.state() == SessionState::Disconnected).then(Instant::now);
    let reason = match reason_for_state(client.state()) {
        Some(reason) => reason,
        None => {
            let gone = node_gone(
                client.clone(),
                path.clone(),
                retry,
                &dismissed,
                &closed,
                first,
                session_timeout,
            );
            tokio::pin!(gone);
            let mut heartbeat: Option<Heartbeat> = None;
            // At most one heartbeat per tenth of the timeout, also when they fail (say, while disconnected).
            let mut not_before = Instant::now();
            loop {
                let held = *holding.borrow();
                let is_suspended = *suspended.borrow();
                let deadline = match (disconnected_at, grace, held, is_suspended) {
                    (Some(since), Some(grace), true, false) => Some(since + grace),
                    _ => None,
                };
                // Under a suspending policy, a held node whose validity was asked for is suspended once that validity
                // passes unconfirmed (a follower cut off from its leader still answers us, but no heartbeat passes).
                let validity_ends = (suspends && held && *wanted.borrow() && !is_suspended)
                    .then(|| *valid_until.borrow())
                    .flatten()
                    .map(Instant::from_std);
                // One heartbeat at a time: a reply that takes long only delays the next one. A suspended node sends
                // them too: the first that goes through resumes it.
                let next_heartbeat = (held && (*wanted.borrow() || is_suspended) && heartbeat.is_none())
                    .then(|| contacts.next_heartbeat().max(not_before));
                tokio::select! {
                    biased;
                    () = dismissed.cancelled() => {
                        // `gone` ends at once, or when our own delete has fired its watch (see `node_gone`).
                        let _ = (&mut gone).await;
                        return;
                    }
                    reason = &mut gone => match reason {
                        Some(reason) => break reason,
                        None => return,
                    },
                    state = states.changed() => {
                        if let Some(reason) = reason_for_state(state) {
                            break reason;
                        }
                        match state {
                            SessionState::Disconnected => { disconnected_at.get_or_insert_with(Instant::now); }
                            _ => {
                                disconnected_at = None;
                                // Connected again: a suspended node asks at once whether it may resume.
                                if is_suspended {
                                    not_before = Instant::now();
                                }
                            }
                        }
                    }
                    // The owner gone is the owner dismissing us: `LostSignal`'s drop cancels `dismissed` before it
                    // drops these senders, but when the drop runs on another thread during this very poll, the
                    // biased `dismissed` branch above was polled before the cancel and this one after the drop.
                    // Returning here would drop `gone`'s watch unfired (a `removeWatches`, about once in 200
                    // releases on ZooKeeper); going round again ends through the `dismissed` branch instead.
                    changed = holding.changed() => {
                        if changed.is_err() {
                            dismissed.cancel();
                        }
                    }
                    changed = wanted.changed() => {
                        if changed.is_err() {
                            dismissed.cancel();
                        }
                    }
                    _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                        if !suspends {
                            break LostReason::Disconnected;
                        }
                        suspend("disconnected for too long");
                    }
                    _ = tokio::time::sleep_until(validity_ends.unwrap_or_else(Instant::now)), if validity_ends.is_some() => {
                        // A heartbeat confirmed meanwhile moved the validity on: look again.
                        if valid_until.borrow().is_some_and(|until| until <= std::time::Instant::now()) {
                            suspend("our session was not confirmed in time");
                        }
                    }
                    _ = tokio::time::sleep_until(next_heartbeat.unwrap_or_else(Instant::now)),
                        if next_heartbeat.is_some() =>
                    {
                        // A contact confirmed meanwhile (the watch re-armed) may have moved the heartbeat later.
                        if contacts.next_heartbeat() <= Instant::now() {
                            let sent = std::time::Instant::now();
                            not_before = Instant::from_std(sent) + session_timeout / HEARTBEATS;
                            heartbeat = Some((sent, heartbeat_to(&client, &path)));
                        }
                    }
                    reply = async { heartbeat.as_mut().expect("in flight").1.as_mut().await }, if heartbeat.is_some() => {
                        let (sent, _) = heartbeat.take().expect("in flight");
                        // Our node gone: the watch on it tells why. A failure: the session state tells, or the next
                        // heartbeat does better.
                        if reply {
                            contacts.confirmed(sent);
                            // Resumed by a confirmation that still covers now: our node stood throughout (it is our
                            // session's, and a session that ended never comes back), so nobody took over.
                            if *suspended.borrow() && sent + session_timeout / 2 > std::time::Instant::now() {
                                suspended.send_replace(false);
                                tracing::info!(%path, "lock node resumed: our session is confirmed and our node is there");
                                metrics::counter!(crate::base::metrics::GUARDS_RESUMED).increment(1);
                            }
                        }
                    }
                }
            }
        }
    };
    // The owner may have dismissed us while we were confirming a deletion — its own delete, sent after the
    // dismissal: that is no loss. Nor does anything count once the owner's end is gone.
    if dismissed.is_cancelled() || holding.has_changed().is_err() {
        return;
    }
    valid_until.send_replace(None);
    tracing::warn!(%path, %reason, "lock node lost");
    // A node lost while still waiting fails its acquire (an error, counted there); only a held one is a lost guard.
    if *holding.borrow() {
        metrics::counter!(crate::base::metrics::GUARDS_LOST, "reason" => reason.label()).increment(1);
    }
    tx.send_replace(Some(reason));
}

// Needs the workspace's test kit: on with the `workspace-tests` feature (the suite builds with --all-features).
#[cfg(all(test, feature = "workspace-tests"))]
mod tests {
    //! The dismissal, which needs the crate's insides: a node and its signal apart from any guard.

    use super::*;
    use crate::session::Session;

    const EVENTUALLY: Duration = Duration::from_secs(30);

    async fn connect() -> Client {
        let hosts = tokio::task::spawn_blocking(zklock_testkit::shared_embedded)
            .await
            .unwrap();
        Client::connect(&hosts).await.expect("connect")
    }

    /// A held node of ours with its lost signal, once a first heartbeat has confirmed it.
    async fn held_node(client: &Client) -> (OwnNode, LostSignal) {
        let dir = zklock_testkit::unique_path("lost-dismissal");
        let name = format!("_c_{}-lock-", uuid::Uuid::new_v4());
        let created = Session::new(client)
            .create_own(&dir, &name, b"", &[], Some(zk::CreateMode::Container))
            .await;
        let mut node = created.unwrap().made(&dir).unwrap();
        let lost = LostSignal::for_node(&mut node, LostPolicy::default());
        lost.set_holding();
        let mut valid_until = lost.valid_until();
        tokio::time::timeout(EVENTUALLY, valid_until.wait_for(Option::is_some))
            .await
            .expect("a heartbeat confirms our node")
            .unwrap();
        (node, lost)
    }

    /// A guard drops its node (which sends the delete) and its lost signal one after the other, and an abort takes
    /// effect only when the monitor task next yields — it may be running on another thread. Here that moment is
    /// made as long as it takes: the node goes, its signal stays. The monitor sees the deletion and confirms it
    /// with the server, and must still report nothing, because the node dismissed it before sending the delete.
    /// (Without the dismissal this reports `NodeDeleted` and warns "lock node lost", every time.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn our_own_delete_is_no_loss_even_while_the_signal_lives() {
        let client = connect().await;
        let (node, lost) = held_node(&client).await;
        let path = node.path();
        let reported = lost.lost();
        drop(node);
        let reason = tokio::time::timeout(EVENTUALLY, reported)
            .await
            .expect("the dismissed monitor ends");
        assert_eq!(reason, LostReason::Released);
        assert_eq!(lost.lost_reason(), None, "no loss reported");
        // The delete was sent before this request on the same session, so it has been processed.
        assert_eq!(
            client.check_stat(&path).await.unwrap(),
            None,
            "our node was deleted"
        );
    }

    /// The race behind an owner's end seen gone before its dismissal: `LostSignal`'s drop cancels the dismissal and
    /// then drops the owner's ends, and when it runs on another thread while the monitor is being polled, the
    /// monitor may find the dismissal not yet made and, further down the same poll, the owner's ends gone. Made
    /// certain here by starting the monitor in that state. It must end as dismissed — once our own delete has fired
    /// the watch on our node — and never drop that watch unfired, which costs a `removeWatches` request (which it
    /// did in about one release in 200 on ZooKeeper).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_owner_gone_before_its_dismissal_is_seen_drops_no_watch() {
        use zklock_testkit::opcode::REMOVE_WATCHES;
        let hosts = tokio::task::spawn_blocking(zklock_testkit::shared_embedded)
            .await
            .unwrap();
        let proxy = zklock_testkit::Proxy::start(hosts.parse().unwrap())
            .await
            .unwrap();
        let client = Client::connect(&proxy.connect_string()).await.unwrap();
        let path = zklock_testkit::unique_path("lost-owner-gone");
        client
            .create(
                &path,
                b"",
                &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
            )
            .await
            .unwrap();
        let (tx, _reason) = watch::channel(None);
        let (valid_tx, _valid_until) = watch::channel(None);
        let (_, holding) = watch::channel(true);
        let (_, wanted) = watch::channel(false);
        let dismissed = CancellationToken::new();
        let first = watch_node(&client, &path);
        // Replies come in order: with this one in, the watch is set and its reply waits in `first`.
        client.check_stat(&path).await.unwrap();
        let mut task = tokio::spawn(monitor(
            Monitor {
                client: client.clone(),
                path: path.clone(),
                policy: LostPolicy::default(),
                retry: RetryPolicy::default(),
                dismissed: dismissed.clone(),
                closed: CancellationToken::new(),
                first: Some(first),
            },
            holding,
            wanted,
            tx,
            valid_tx,
            watch::channel(false).0,
        ));
        // The monitor takes the owner's end gone for the dismissal it is (or, wrongly, ends at once).
        let ended_at_once = tokio::select! {
            () = dismissed.cancelled() => false,
            ended = &mut task => { ended.unwrap(); true }
        };
        // The owner's own delete, which it sends once it has dismissed the monitor.
        client.delete(&path, None).await.unwrap();
        if !ended_at_once {
            tokio::time::timeout(EVENTUALLY, task)
                .await
                .expect("the monitor ends once our delete fired its watch")
                .unwrap();
        }
        // A watch dropped by a monitor that ended at once queued its `removeWatches` before the delete (one request
        // queue per session), so it has reached the proxy by now.
        assert_eq!(
            proxy.requests(REMOVE_WATCHES),
            0,
            "the watch on our node fired, not removed"
        );
    }

    /// The control: the same node deleted by another session, with nobody dismissing the signal, is a loss.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_delete_by_somebody_else_is_a_loss() {
        let (client, other) = (connect().await, connect().await);
        let (node, lost) = held_node(&client).await;
        other.delete(&node.path(), None).await.unwrap();
        let reason = tokio::time::timeout(EVENTUALLY, lost.lost())
            .await
            .expect("the loss is reported");
        assert_eq!(reason, LostReason::NodeDeleted);
        assert_eq!(
            *lost.valid_until().borrow(),
            None,
            "a lost node has no session validity"
        );
    }
}
