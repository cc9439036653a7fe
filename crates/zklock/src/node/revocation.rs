//! Revocation: asking a holder to give up what it holds, and taking it away.
//!
//! **The request** is Apache Curator's protocol (`InterProcessMutex.makeRevocable` and `Revoker.attemptRevoke`):
//! whoever wants a holder to give up sets the data of the holder's node to the bytes `__REVOKE__`; a revocable
//! holder watches the data of its own node and, when it reads those bytes, is told (Curator calls its
//! `RevocationListener`; we complete [`Guard::revocation_requested`](crate::Guard::revocation_requested)).
//! Revocation is cooperative: the holder decides whether and when to release. [`request_revocation`] sends it to
//! any participant's node — ours, Curator's or kazoo's — and a Curator holder made revocable hears it from us as
//! it would from `Revoker`.
//!
//! Two ways in which we are stricter than Curator: a guard reads its node's data when asked, so a request made
//! before it started watching (even while it still waited in the queue) is not missed (Curator's listener hears
//! only changes made after its watch was set); and a request is only ever written to an ephemeral node, so it can
//! never overwrite a queue item or a directory's data by mistake.
//!
//! **The forced way**, [`revoke`], deletes the participant's node: a holder's lost signal fires
//! ([`LostReason::NodeDeleted`](crate::LostReason::NodeDeleted)) and the next in line takes over, whether or not
//! the holder cooperates. A holder that is still running goes on believing it holds until it hears of the
//! deletion, as after any loss, so a resource that matters should check the fencing token.
//!
//! **Cost.** Nothing until a guard's [`revocation_requested`](crate::Guard::revocation_requested) is first called;
//! from then on, while the guard lives, one task and one data watch on its own node (re-armed after each change).

use std::future::Future;
use std::sync::OnceLock;

use tokio::sync::watch;
use zookeeper_client::{self as zk, Client, EventType};

use crate::base::error::{Error, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::retry::RetryPolicy;
use crate::session::Session;

/// The data that asks a holder to give up: Curator's `LockInternals.REVOKE_MESSAGE`.
pub(crate) const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// A guard's watch for a revocation request, started the first time somebody asks.
#[derive(Debug, Default)]
pub(crate) struct Revocation {
    watching: OnceLock<Watching>,
}

/// The running watch: whether a request has come, and the task that looks for one.
#[derive(Debug)]
struct Watching {
    requested: watch::Receiver<bool>,
    task: tokio::task::AbortHandle,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Revocation {
    /// Completes once a revocation request has been made for the node at `path` (ours, on `client`); never if the
    /// node goes first. Starts the watch on the first call; later calls share it.
    pub(crate) fn requested(
        &self,
        client: &Client,
        path: &str,
        retry: &RetryPolicy,
    ) -> impl Future<Output = ()> + Send + 'static {
        let watching = self.watching.get_or_init(|| {
            let (tx, requested) = watch::channel(false);
            let task = tokio::spawn(watch_for_request(
                client.clone(),
                path.to_owned(),
                retry.clone(),
                tx,
            ));
            Watching {
                requested,
                task: task.abort_handle(),
            }
        });
        let mut requested = watching.requested.clone();
        async move {
            // The sender goes without a request when the node does (released, lost): nothing will come.
            if requested.wait_for(|requested| *requested).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Whether a request has been seen (only once somebody asked for [`Revocation::requested`]).
    pub(crate) fn is_requested(&self) -> bool {
        self.watching
            .get()
            .is_some_and(|watching| *watching.requested.borrow())
    }
}

/// Reads our node's data, watching it, until it holds a revocation request; ends without one when the node or the
/// session does.
async fn watch_for_request(client: Client, path: String, retry: RetryPolicy, tx: watch::Sender<bool>) {
    let mut attempt = 0;
    loop {
        match client.get_and_watch_data(&path).await {
            Ok((data, _, watcher)) => {
                attempt = 0;
                if data == REVOKE_MESSAGE {
                    tracing::info!(%path, "revocation requested");
                    tx.send_replace(true);
                    return;
                }
                let event = crate::base::idioms::fired(watcher).await;
                match event.event_type {
                    EventType::NodeDeleted => return,
                    EventType::Session if idioms::session_error(&event).is_some() => return,
                    // The data changed (or the session reported something it survives): look again.
                    _ => {}
                }
            }
            Err(zk::Error::NoNode) => return,
            Err(err) if Error::zk("getData", &path, err.clone()).is_terminal() => return,
            // Our node's ACL does not let us read it: no request can be heard.
            Err(zk::Error::NoAuth) => {
                tracing::warn!(%path, "cannot read our own node (NoAuth): revocation requests go unheard");
                return;
            }
            Err(err) => {
                attempt += 1;
                tracing::debug!(%path, %err, "re-arming the revocation watch on our node");
                tokio::time::sleep(retry.backoff(attempt)).await;
            }
        }
    }
}

/// Asks the holder of the participant node `node` (a full path, as [`Participant::path`](crate::Participant::path)
/// shows it) to give up: Curator's `Revoker.attemptRevoke`, which sets the node's data to `__REVOKE__`. A zklock
/// guard hears it through [`Guard::revocation_requested`](crate::Guard::revocation_requested) (`zklock run` and
/// `zklock elect` stop their command and release), a Curator lock made revocable through its
/// `RevocationListener`; a holder that does not listen ignores it. It replaces the data the node held (what
/// `zklock status` shows).
///
/// Returns `false` if the node does not exist (any more). Retried across connection loss.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// if let Some(found) = zklock::inspect(&client, "/locks/orders").await? {
///     for holder in found.participants.iter().filter(|p| p.role == zklock::Role::Holder) {
///         zklock::request_revocation(&client, &holder.path).await?;
///     }
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidPath`] for an invalid path, and for a node that is not ephemeral (every participant's node is:
/// a request must not overwrite a queue item or a directory); [`Error::SessionExpired`] or [`Error::Closed`] when
/// the session has ended; [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps
/// attempts; [`Error::ZooKeeper`] with `NoAuth` when the node's ACL does not let us write it.
///
/// # Cancellation safety
/// Cancellation safe: dropped before the write was sent, nothing happens; after, the request stands.
pub async fn request_revocation(session: impl Into<Session>, node: &str) -> Result<bool> {
    let session = session.into();
    let node = participant(&session, node).await?;
    let Some(node) = node else {
        return Ok(false);
    };
    let (client, retry) = (session.client(), session.retry());
    let written = retry
        .run_at("setData", &node, || client.set_data(&node, REVOKE_MESSAGE, None))
        .await
        .if_exists()?;
    Ok(written.is_some())
}

/// Takes what the participant node `node` (a full path, as [`Participant::path`](crate::Participant::path) shows
/// it) holds away from it by deleting the node — whether or not its holder listens for revocation requests. A
/// holder's [`Guard::lost`](crate::Guard::lost) fires with
/// [`LostReason::NodeDeleted`](crate::LostReason::NodeDeleted) (`zklock run` stops its command and exits 75) and
/// the next in line takes over; a waiter's acquire fails with [`Error::NodeDeleted`].
///
/// The holder learns of it only when the deletion reaches it: until then it may still act, as after any loss, so
/// the resource it protects should check the [fencing token](crate::Guard::fencing_token).
///
/// Returns `false` if the node does not exist (any more) — also when a first attempt deleted it but its reply was
/// lost. Retried across connection loss.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// if let Some(found) = zklock::inspect(&client, "/locks/orders").await? {
///     if let Some(holder) = found.participants.iter().find(|p| p.role == zklock::Role::Holder) {
///         let revoked = zklock::revoke(&client, &holder.path).await?;
///         println!("revoked {} (session 0x{:x}): {revoked}", holder.name, holder.session_id);
///     }
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidPath`] for an invalid path, and for a node that is not ephemeral (every participant's node is);
/// [`Error::SessionExpired`] or [`Error::Closed`] when the session has ended; [`Error::ConnectionLoss`] only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts; [`Error::ZooKeeper`] with `NoAuth` when the directory's ACL
/// does not let us delete in it.
///
/// # Cancellation safety
/// Cancellation safe: dropped before the delete was sent, nothing happens; after, the node goes.
pub async fn revoke(session: impl Into<Session>, node: &str) -> Result<bool> {
    let session = session.into();
    let Some(node) = participant(&session, node).await? else {
        return Ok(false);
    };
    let (client, retry) = (session.client(), session.retry());
    let deleted = retry
        .run_at("delete", &node, || client.delete(&node, None))
        .await
        .if_exists()?;
    Ok(deleted.is_some())
}

/// The validated path of `node` if it exists; an error if it is not ephemeral (not a participant's node).
pub(crate) async fn participant(session: &Session, node: &str) -> Result<Option<String>> {
    let node = crate::base::path::validate(node)?;
    let (client, retry) = (session.client(), session.retry());
    let Some(stat) = retry.run_at("exists", &node, || client.check_stat(&node)).await? else {
        return Ok(None);
    };
    if stat.ephemeral_owner == 0 {
        return Err(Error::InvalidPath {
            path: node,
            reason: "not a participant's node (participants' nodes are ephemeral)",
        });
    }
    Ok(Some(node))
}
