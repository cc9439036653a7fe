//! The lost signal: one background task per queue node that tells its owner the moment the node stops
//! protecting anything.
//!
//! A node is lost when the session expires or the client closes (ZooKeeper deletes ephemerals), when somebody else
//! deletes it, or — by policy, and only once it is held — when the connection has been down long enough that the
//! session may already be gone on the server. The task costs one `exists` watch on our own node (sent right
//! after the create, never awaited on the acquire path) and no traffic at all after that.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::{self as zk, Client, EventType, SessionState};

use crate::retry::RetryPolicy;

/// Why a guard stopped protecting its holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LostReason {
    /// The ZooKeeper session expired; ZooKeeper deleted our ephemeral node (or will, any moment).
    SessionExpired,
    /// The client was closed (or its authentication failed).
    ClientClosed,
    /// Somebody else deleted our node.
    NodeDeleted,
    /// The connection was down for longer than the [`LostPolicy`] allows, so the session may be gone already.
    Disconnected,
    /// The guard was released or dropped by its owner.
    Released,
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LostReason::SessionExpired => "the ZooKeeper session expired",
            LostReason::ClientClosed => "the ZooKeeper client was closed",
            LostReason::NodeDeleted => "our lock node was deleted by somebody else",
            LostReason::Disconnected => "the connection to ZooKeeper was down for too long",
            LostReason::Released => "the guard was released",
        })
    }
}

impl LostReason {
    /// The error for an operation that waited on a node lost for this reason (`path`: the node).
    pub(crate) fn error(self, path: &str) -> crate::Error {
        match self {
            LostReason::SessionExpired => crate::Error::SessionExpired,
            LostReason::NodeDeleted => crate::Error::NodeDeleted {
                path: path.to_owned(),
            },
            LostReason::ClientClosed | LostReason::Disconnected | LostReason::Released => {
                crate::Error::Closed
            }
        }
    }
}

/// When a held guard counts as lost because of a disconnection.
///
/// Expiry of the session, closing of the client and deletion of our node always count. A disconnection alone does
/// not end a session: the server expires it only when it has heard nothing for the session timeout. By the time
/// `zookeeper-client` reports `Disconnected` after a silent failure it has already waited 2/5 of the timeout, so
/// the session may be gone 3/5 of the timeout later; after a reset it has only lost a ping interval. Half the
/// negotiated timeout is therefore the default: early enough to stop before another client can take over, late
/// enough to ride out an ensemble leader election. (This assumes zookeeper-client's default connection timeout; with
/// a longer one configured, choose [`LostPolicy::DisconnectedFor`] accordingly. Work that takes time to stop — a
/// child process given a grace period — needs a shorter grace; `zklock run` computes one.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LostPolicy {
    /// Lost after being disconnected for half the negotiated session timeout (the default).
    #[default]
    HalfSessionTimeout,
    /// Lost after being disconnected for this long.
    DisconnectedFor(Duration),
    /// Never lost because of a disconnection alone; only expiry, closing or deletion count.
    SessionOnly,
}

impl LostPolicy {
    fn grace(self, session_timeout: Duration) -> Option<Duration> {
        match self {
            LostPolicy::HalfSessionTimeout => Some(session_timeout / 2),
            LostPolicy::DisconnectedFor(grace) => Some(grace),
            LostPolicy::SessionOnly => None,
        }
    }
}

/// The owner's end of a node's lost signal. Dropping it stops the monitor task.
#[derive(Debug)]
pub(crate) struct LostSignal {
    reason: watch::Receiver<Option<LostReason>>,
    holding: watch::Sender<bool>,
    task: tokio::task::AbortHandle,
}

impl Drop for LostSignal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LostSignal {
    /// Starts watching `path`, our own node.
    pub(crate) fn start(client: &Client, path: &str, policy: LostPolicy, retry: &RetryPolicy) -> LostSignal {
        let (tx, reason) = watch::channel(None);
        let (holding, holding_rx) = watch::channel(false);
        let task = tokio::spawn(monitor(
            client.clone(),
            path.to_owned(),
            policy,
            retry.clone(),
            holding_rx,
            tx,
        ));
        LostSignal {
            reason,
            holding,
            task: task.abort_handle(),
        }
    }

    /// From now on the node is held: disconnections count, per the policy.
    pub(crate) fn set_holding(&self) {
        self.holding.send_replace(true);
    }

    pub(crate) fn reason(&self) -> Option<LostReason> {
        *self.reason.borrow()
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
}

fn reason_for_state(state: SessionState) -> Option<LostReason> {
    match state {
        SessionState::Expired => Some(LostReason::SessionExpired),
        SessionState::Closed | SessionState::AuthFailed => Some(LostReason::ClientClosed),
        _ => None,
    }
}

/// Waits for our node to be deleted (or the session to end), re-arming the one-shot watch on data changes.
async fn node_gone(client: Client, path: String, retry: RetryPolicy) -> LostReason {
    let mut attempt = 0;
    loop {
        match client.check_and_watch_stat(&path).await {
            Ok((None, _)) => return deletion_reason(&client, &path, &retry).await,
            Ok((Some(_), watcher)) => {
                attempt = 0;
                let event = watcher.changed().await;
                match event.event_type {
                    EventType::NodeDeleted => return deletion_reason(&client, &path, &retry).await,
                    EventType::Session => {
                        if let Some(reason) = reason_for_state(event.session_state) {
                            return reason;
                        }
                    }
                    // Data changed (a holder description update): watch again.
                    _ => {}
                }
            }
            Err(zk::Error::SessionExpired | zk::Error::SessionMoved) => return LostReason::SessionExpired,
            Err(zk::Error::ClientClosed | zk::Error::AuthFailed) => return LostReason::ClientClosed,
            Err(err) => {
                attempt += 1;
                tracing::debug!(%path, %err, "re-arming the watch on our own node");
                tokio::time::sleep(retry.backoff(attempt)).await;
            }
        }
    }
}

/// Our node is gone: because the session ended (the deletion can reach us before the news of the expiry does), or
/// because somebody deleted it? One more request tells.
async fn deletion_reason(client: &Client, path: &str, retry: &RetryPolicy) -> LostReason {
    match retry.run(|| client.check_stat(path)).await {
        Err(crate::Error::SessionExpired) => LostReason::SessionExpired,
        Err(crate::Error::Closed) => LostReason::ClientClosed,
        _ => LostReason::NodeDeleted,
    }
}

async fn monitor(
    client: Client,
    path: String,
    policy: LostPolicy,
    retry: RetryPolicy,
    mut holding: watch::Receiver<bool>,
    tx: watch::Sender<Option<LostReason>>,
) {
    let mut states = client.state_watcher();
    let grace = policy.grace(client.session_timeout());
    let mut disconnected_at = (client.state() == SessionState::Disconnected).then(Instant::now);
    let reason = match reason_for_state(client.state()) {
        Some(reason) => reason,
        None => {
            let gone = node_gone(client.clone(), path.clone(), retry);
            tokio::pin!(gone);
            loop {
                let deadline = match (disconnected_at, grace, *holding.borrow()) {
                    (Some(since), Some(grace), true) => Some(since + grace),
                    _ => None,
                };
                tokio::select! {
                    reason = &mut gone => break reason,
                    state = states.changed() => {
                        if let Some(reason) = reason_for_state(state) {
                            break reason;
                        }
                        match state {
                            SessionState::Disconnected => { disconnected_at.get_or_insert_with(Instant::now); }
                            _ => disconnected_at = None,
                        }
                    }
                    changed = holding.changed() => {
                        if changed.is_err() {
                            return; // the owner is gone
                        }
                    }
                    _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                        break LostReason::Disconnected;
                    }
                }
            }
        }
    };
    tracing::warn!(%path, %reason, "lock node lost");
    tx.send_replace(Some(reason));
}
