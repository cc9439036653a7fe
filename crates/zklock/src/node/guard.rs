//! What holding something looks like: one guard type for every recipe.

use std::future::Future;
use std::time::Instant;

use tracing::Instrument as _;

use crate::base::error::{Error, LostReason, Result};
use crate::node::held::Held;
use crate::node::lost::LostSignal;
use crate::node::own::OwnNode;
use crate::node::revocation::Revocation;

/// Proof of holding a lock, a lease or leadership, for as long as it is not lost.
///
/// * [`fencing_token`](Guard::fencing_token) — the czxid of our node: it increases strictly from one holder to
///   the next across the whole ensemble, and stays monotonic even if the lock directory is deleted and recreated
///   (unlike the sequence suffix). Pass it to the resource you protect and have it reject smaller tokens.
/// * [`lost`](Guard::lost) — completes the moment the guard stops protecting you (see
///   [`LostReason`](crate::LostReason)). Select on it next to your critical section.
/// * [`session_valid_until`](Guard::session_valid_until) — the instant before which the server cannot have expired
///   our session, renewed while held: a deadline for work that must stop even if this process is paused.
/// * [`revocation_requested`](Guard::revocation_requested) — completes when somebody asks this holder to give up
///   (Curator's revocation protocol): honour it by releasing.
/// * [`release`](Guard::release) deletes the node, waits for ZooKeeper to confirm and says whether the guard had
///   been lost ([`Error::Lost`](crate::Error::Lost)). Dropping the guard deletes it in the background instead
///   (best effort; in any case ZooKeeper deletes it when the session ends).
#[derive(Debug)]
pub struct Guard {
    /// Our node and its lost signal.
    held: Held,
    timer: HoldTimer,
    /// The watch for revocation requests, started on first ask.
    revocation: Revocation,
    /// The full path of our node (named by the time it is held).
    path: String,
}

/// How long a guard was held, recorded when it goes (released or dropped): the one place of
/// `zklock_hold_seconds{recipe}` (see the crate documentation).
#[derive(Debug)]
struct HoldTimer {
    since: Instant,
    recipe: &'static str,
}

impl Drop for HoldTimer {
    fn drop(&mut self) {
        metrics::histogram!(crate::base::metrics::HOLD, "recipe" => self.recipe).record(self.since.elapsed());
    }
}

impl Guard {
    /// A guard of `node`, held from now on; `recipe` labels its metrics.
    pub(crate) fn new(node: OwnNode, lost: LostSignal, recipe: &'static str) -> Guard {
        Guard {
            path: node.path(),
            held: Held::new(node, lost),
            timer: HoldTimer {
                since: Instant::now(),
                recipe,
            },
            revocation: Revocation::default(),
        }
    }

    /// The client our node was created with (for [`crate::FencedWrites`]).
    pub(crate) fn client(&self) -> &zookeeper_client::Client {
        &self.held.node().client
    }

    /// The fencing token: our node's creation zxid.
    pub fn fencing_token(&self) -> i64 {
        self.held.node().czxid
    }

    /// The full path of our node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The sequence number ZooKeeper gave our node (for display; use the fencing token for fencing).
    pub fn sequence(&self) -> i64 {
        self.held.node().sequence
    }

    /// The id of the session that owns the node.
    pub fn session_id(&self) -> i64 {
        self.held.node().client.session_id().0
    }

    crate::node::held::lost_methods! {
        held:
        /// Completes when the guard is lost, with the reason. Cheap to call many times; the future owns what it
        /// needs.
        pub fn lost;
        /// Whether the guard has been lost already.
        pub fn is_lost;
        /// Why the guard was lost, if it was.
        pub fn lost_reason;
    }

    /// Completes when the guard is **suspended** (`None`) — held under [`LostPolicy::Suspend`](crate::LostPolicy)
    /// or [`SuspendAfter`](crate::LostPolicy::SuspendAfter), our session not confirmed in time — or lost (with the
    /// reason). A suspended holder must stop acting until [`resumed`](Guard::resumed): nobody else holds yet, but
    /// somebody may at any moment. Under the other policies a guard is never suspended (this completes only when it
    /// is lost). Cheap; the future owns what it needs.
    ///
    /// # Example
    /// ```no_run
    /// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
    /// # async fn one_step() {}
    /// let session = zklock::Session::new(&client).with_lost_policy(zklock::LostPolicy::Suspend);
    /// let guard = zklock::Mutex::new(session, "/locks/reindex")?.lock().await?;
    /// loop {
    ///     tokio::select! {
    ///         biased;
    ///         lost = guard.suspended() => {
    ///             if let Some(reason) = lost { eprintln!("lost: {reason}"); break; }
    ///             // Suspended: act no more until resumed (same node, same fencing token) or lost.
    ///             if let Err(reason) = guard.resumed().await { eprintln!("lost: {reason}"); break; }
    ///         }
    ///         () = one_step() => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn suspended(&self) -> impl Future<Output = Option<LostReason>> + Send + 'static {
        self.held.signal().suspended()
    }

    /// Completes when the guard is held and not suspended — at once unless it is [suspended](Guard::suspended)
    /// now — or with the reason it was lost instead. A resumed guard has the same node and the same fencing token:
    /// a heartbeat through the leader found our node there, so our session never ended and nobody took over.
    pub fn resumed(&self) -> impl Future<Output = std::result::Result<(), LostReason>> + Send + 'static {
        self.held.signal().resumed()
    }

    /// Whether the guard is suspended now (see [`suspended`](Guard::suspended)).
    pub fn is_suspended(&self) -> bool {
        self.held.signal().is_suspended()
    }

    /// The instant before which ZooKeeper cannot have expired our session, and so before which nobody can take over
    /// what this guard holds through an expiry (a deletion of our node by somebody else is another matter:
    /// [`lost`](Guard::lost) reports it). `None` before the first confirmed contact and once the guard is lost.
    ///
    /// A reply to a request we sent at time `t` proves that the server heard from us at or after `t`, so it cannot
    /// expire the session before `t` + the negotiated session timeout. From the first call of this method or of
    /// [`session_validity`](Guard::session_validity) on, and while the guard is held, its lost-signal task sends an
    /// `exists` on our own node every session timeout / 6 after the last confirmed contact (one tiny request; a
    /// guard nobody asks costs nothing, and one held for less than that costs nothing more) and moves this instant
    /// on with each reply. The first call may return an instant from the acquisition (or already past): ask early,
    /// or hold the watch of [`session_validity`](Guard::session_validity). Work
    /// that must be over before the session can expire can so be given a deadline that does not depend on this
    /// process being scheduled: `zklock run` hands it, minus a margin, to a watchdog process that stops the command
    /// when it is not renewed in time. It is a [`std::time::Instant`] — CLOCK_MONOTONIC on Linux, the same clock in
    /// every process of the machine — so another process can compare it with its own clock.
    ///
    /// Where the guarantee ends: this machine's monotonic clock stands in for the server's, so a pause of the whole
    /// machine (a frozen VM or container, which stops any watchdog too) or a jump of either clock is not covered —
    /// give the resource you protect the [fencing token](Guard::fencing_token) for that. And in an ensemble a
    /// follower may still answer for a session that the leader has just expired, for up to half a tick: the values
    /// form a sound chain as long as each is renewed before it passes (the heartbeat sees to that while this
    /// process runs); after this process was itself stalled past the value, do not trust a later one — the lost
    /// signal reports the expiry once the client learns of it.
    pub fn session_valid_until(&self) -> Option<std::time::Instant> {
        if self.is_lost() {
            return None;
        }
        *self.held.signal().valid_until().borrow()
    }

    /// [`session_valid_until`](Guard::session_valid_until) as a watch: `changed()` completes at each renewal and
    /// when the guard is lost (the value is then `None`), and fails from then on, or once the guard is released or
    /// dropped.
    pub fn session_validity(&self) -> tokio::sync::watch::Receiver<Option<std::time::Instant>> {
        self.held.signal().valid_until()
    }

    /// Completes when somebody asks this holder to give up: [`crate::request_revocation`], `zklock revoke
    /// --request`, or Curator's `Revoker.attemptRevoke` set our node's data to `__REVOKE__` (Curator's revocation
    /// protocol). Revocation is cooperative: honour it by finishing up and [releasing](Guard::release) — that is
    /// what `zklock run` and `zklock elect` do — or ignore it. A request made before the first call, even while
    /// this guard still waited in the queue, counts. Never completes once the node is gone (select it next to
    /// [`lost`](Guard::lost)).
    ///
    /// The first call starts a watch on our node's data (one request, and one more after each change of it);
    /// later calls share it. The future owns what it needs.
    ///
    /// # Example
    /// ```no_run
    /// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
    /// let guard = zklock::Mutex::new(&client, "/locks/reindex")?.lock().await?;
    /// tokio::select! {
    ///     reason = guard.lost() => eprintln!("lost: {reason}"),
    ///     () = guard.revocation_requested() => eprintln!("asked to give up: stopping early"),
    ///     () = async { /* the work */ } => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancellation safety
    /// Cancellation safe: dropping the future loses nothing; the watch goes on for the next call.
    pub fn revocation_requested(&self) -> impl Future<Output = ()> + Send + 'static {
        self.revocation
            .requested(&self.held.node().client, &self.path, &self.held.node().retry)
    }

    /// Whether a revocation request has been seen (always `false` before the first call of
    /// [`revocation_requested`](Guard::revocation_requested), which starts looking).
    pub fn is_revocation_requested(&self) -> bool {
        self.revocation.is_requested()
    }

    /// Deletes our node and waits for ZooKeeper to confirm; retried across connection loss — and says whether the
    /// guard still protected us up to now: `Ok(())` if it did, [`Error::Lost`](crate::Error::Lost) with the
    /// [`LostReason`](crate::LostReason) if it had been lost before (its session expired or was closed, somebody
    /// else deleted our node, or the [`LostPolicy`](crate::LostPolicy) gave it up after a long disconnection).
    ///
    /// A lost guard is an error, not a success, because `release` is where a holder's work ends: what was done
    /// under a lost guard was not protected, and a `release().await?` after it must not pass for a clean end (a
    /// holder that handled [`lost`](Guard::lost) already matches `Err(Error::Lost(_))` away). Its node is deleted
    /// all the same if it is still there (after a long disconnection, say), so the next holder need not wait for
    /// the session to end. A loss that has happened at the server but whose news has not reached this process yet
    /// when `release` is called cannot be told from our own delete: `release` then says `Ok(())`, and the fencing
    /// token and [`fenced_writes`](Guard::fenced_writes) remain the protection against it.
    ///
    /// # Errors
    /// * [`Error::Lost`](crate::Error::Lost) — the guard had been lost before `release` (also when the session
    ///   turns out to have ended only as the delete is sent).
    /// * [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) when the [`RetryPolicy`](crate::RetryPolicy)
    ///   gives up (the node is then deleted in the background); any other error of the delete.
    pub async fn release(self) -> Result<()> {
        let Guard {
            held,
            timer,
            revocation,
            path,
        } = self;
        drop(revocation);
        drop(timer);
        // Read before the signal is stopped: a loss it has seen is the caller's to know.
        let lost = held.lost_reason();
        // Stops the lost signal: from now on our node's going is ours, not a loss.
        let node = held.into_node();
        tracing::trace!(target: "zklock::timeline", session = node.client.session_id().0, %path, "release");
        let span = tracing::info_span!("release", %path);
        async move {
            let deleted = node.delete().await;
            match (lost, deleted) {
                (None, Ok(())) => {
                    tracing::debug!("released");
                    Ok(())
                }
                (Some(reason), deleted) => {
                    tracing::debug!(%reason, ?deleted, "released a guard that had been lost");
                    Err(Error::Lost(reason))
                }
                (None, Err(err)) if err.is_terminal() => {
                    tracing::debug!(%err, "released a guard whose session has ended");
                    Err(Error::Lost(match err {
                        Error::SessionExpired => LostReason::SessionExpired,
                        _ => LostReason::ClientClosed,
                    }))
                }
                (None, Err(err)) => {
                    tracing::debug!(%err, "release failed");
                    Err(err)
                }
            }
        }
        .instrument(span)
        .await
    }
}
