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
}

impl LostPolicy {
    pub(crate) fn grace(self, session_timeout: Duration) -> Option<Duration> {
        match self {
            LostPolicy::HalfSessionTimeout => Some(session_timeout / 2),
            LostPolicy::DisconnectedFor(grace) => Some(grace),
            LostPolicy::SessionOnly => None,
        }
    }
}
