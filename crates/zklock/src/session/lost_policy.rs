//! [`LostPolicy`]: when a held guard counts as lost because of a disconnection — a setting of the
//! [`Session`](crate::Session), applied by the lost signal (`node/lost.rs`).

use std::time::Duration;

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
    /// **Suspended**, not lost, after being disconnected for half the negotiated session timeout — or, for a guard
    /// whose [session validity](crate::Guard::session_valid_until) was asked for, once that validity has passed
    /// unconfirmed — and **resumed** when a heartbeat through the leader finds our node (so our session) alive again:
    /// the same node, the same fencing token. Lost, as always, when the session ends or our node is deleted.
    ///
    /// A suspended holder must not act: another holder cannot have taken over yet, but it may any moment.
    /// Code under this policy selects on [`Guard::suspended`](crate::Guard::suspended) beside
    /// [`Guard::lost`](crate::Guard::lost), stops there, and waits for [`Guard::resumed`](crate::Guard::resumed).
    /// It is not the default because code written for the other policies, which stops only on `lost`, would go
    /// on acting while suspended. What it buys: an outage shorter than the session (a ZooKeeper restart, an
    /// ensemble's leader election) no longer ends the guard (docs/reliability.md, "Suspended, then resumed").
    Suspend,
    /// As [`Suspend`](LostPolicy::Suspend), suspended after being disconnected for this long.
    SuspendAfter(Duration),
}

impl LostPolicy {
    pub(crate) fn grace(self, session_timeout: Duration) -> Option<Duration> {
        match self {
            LostPolicy::HalfSessionTimeout => Some(session_timeout / 2),
            LostPolicy::DisconnectedFor(grace) => Some(grace),
            LostPolicy::SessionOnly => None,
            LostPolicy::Suspend => Some(session_timeout / 2),
            LostPolicy::SuspendAfter(grace) => Some(grace),
        }
    }

    /// Whether the grace's end suspends the guard rather than losing it.
    pub(crate) fn suspends(self) -> bool {
        matches!(self, LostPolicy::Suspend | LostPolicy::SuspendAfter(_))
    }
}
