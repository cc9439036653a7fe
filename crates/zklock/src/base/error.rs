//! The error vocabulary shared by every recipe.

use zookeeper_client::{self as zk, SessionState};

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a recipe, small and comparable so callers and tests can `assert_eq!` on it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The deadline given to a timed acquire passed first. Our queue node has been removed.
    #[error("timed out before the recipe could be acquired")]
    Timeout,
    /// The ZooKeeper session expired: every ephemeral node of ours is gone, every guard is lost.
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    /// The ZooKeeper client was closed (or the [`Session`](crate::Session) was closed), so nothing more can be sent.
    #[error("the ZooKeeper client is closed")]
    Closed,
    /// The server refused the client's credentials (ZooKeeper's `AUTH_FAILED`): the session is over, and a new
    /// one with the same credentials would be refused too.
    #[error("ZooKeeper refused our credentials (authentication failed)")]
    AuthFailed,
    /// What a guard protected is lost, for this reason: its [`lost`](crate::Guard::lost) signal as an error, for
    /// code that wants to end with `?` when that happens (`From<LostReason>`).
    #[error("lost: {0}")]
    Lost(LostReason),
    /// The connection broke before the reply, and the request was not tried again: the [`RetryPolicy`] gave up
    /// after `attempts` (its `max_attempts`; a spent time budget is [`Error::RetryBudgetSpent`]), or, with
    /// `attempts` 1, the request is one that is never retried (a fenced commit, say) —
    /// then it may or may not have been applied.
    ///
    /// [`RetryPolicy`]: crate::RetryPolicy
    #[error("{}", connection_loss(*attempts))]
    ConnectionLoss {
        /// How many times the operation was tried.
        attempts: u32,
    },
    /// The connection to ZooKeeper stayed lost for longer than the [`RetryPolicy`]'s time budget
    /// ([`max_elapsed`](crate::RetryPolicy::max_elapsed)): the operation was tried `attempts` times over `elapsed`
    /// and then given up. If the last request was still waiting for its reply (`unanswered`) it was abandoned, and
    /// may or may not be applied later. [`Error::is_connection_loss`] is true for it, as for
    /// [`ConnectionLoss`](Error::ConnectionLoss).
    ///
    /// [`RetryPolicy`]: crate::RetryPolicy
    #[error("{}", retry_budget_spent(*attempts, *elapsed, *unanswered))]
    RetryBudgetSpent {
        /// How many times the operation was tried (the first try and the retries).
        attempts: u32,
        /// How long it went without an answer from ZooKeeper before it gave up.
        elapsed: std::time::Duration,
        /// Whether the last try was abandoned while waiting for its reply (rather than failing with a connection
        /// loss).
        unanswered: bool,
    },
    /// Our own queue node disappeared while we were waiting (deleted by somebody else).
    #[error("our queue node {path} was deleted by somebody else")]
    NodeDeleted {
        /// The full path of the node.
        path: String,
    },
    /// The directory is in use by another kind of recipe whose nodes ours cannot be ordered with (a mutex among a
    /// read/write lock's nodes, a lock in a semaphore's directory, an election among lock contenders…): the two
    /// would not exclude each other, so we do not take part (`Marker::queues_with` in `base/names.rs` decides, for
    /// every recipe). Our node has been removed.
    #[error(
        "{path} is in use by {what} (its node {node}): the two do not exclude each other, so we do not join"
    )]
    InUse {
        /// The directory.
        path: String,
        /// The other recipe's node (its name).
        node: String,
        /// What the other recipe is, in words.
        what: &'static str,
    },
    /// A fenced write ([`Guard::fenced_writes`](crate::Guard::fenced_writes)) found our node gone at the server:
    /// the lock is no longer ours, and nothing was written.
    #[error("the lock node {path} no longer exists: the lock was lost, nothing was written")]
    LockLost {
        /// The full path of our (former) node.
        path: String,
    },
    /// A node holds data the recipe cannot read: a counter that is not 4 bytes ([`SharedCount`](crate::SharedCount))
    /// or 8 bytes ([`AtomicLong`](crate::AtomicLong)), a [`TwoPhaseCommit`](crate::TwoPhaseCommit) vote or outcome
    /// that is neither `commit` nor `abort`. Nothing was changed.
    #[error("{path} holds {len} bytes, not {expected}")]
    CorruptData {
        /// The full path of the node.
        path: String,
        /// How many bytes it holds.
        len: usize,
        /// What the recipe expected.
        expected: &'static str,
    },
    /// A cached node's data is not in the form it was asked for ([`CachedNode::utf8`](crate::CachedNode::utf8),
    /// [`CachedNode::json`](crate::CachedNode::json)).
    #[error("the data of {path} does not parse: {reason}")]
    Unparsable {
        /// The full path of the node.
        path: String,
        /// What the parser said.
        reason: String,
    },
    /// [`TwoPhaseCommit::begin`](crate::TwoPhaseCommit::begin): a transaction with this id exists already.
    #[error("the transaction {path} exists already")]
    TransactionExists {
        /// The transaction node's full path.
        path: String,
    },
    /// [`TwoPhaseCommit::join`](crate::TwoPhaseCommit::join): the transaction does not name this participant.
    #[error("the transaction {path} does not name {participant:?} as a participant")]
    NotAParticipant {
        /// The transaction node's full path.
        path: String,
        /// The name we gave.
        participant: String,
    },
    /// [`TwoPhaseCommit::join`](crate::TwoPhaseCommit::join): this participant took part in the transaction already
    /// (another process under its name, or an earlier attempt that went away before voting).
    #[error("{participant:?} has taken part in the transaction {path} already")]
    AlreadyJoined {
        /// The transaction node's full path.
        path: String,
        /// The participant.
        participant: String,
    },
    /// The path given to a recipe is not a valid ZooKeeper path.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An argument no recipe can work with, in words: a [`DoubleBarrier`](crate::DoubleBarrier) of 0
    /// participants, a [`MultiLock`](crate::MultiLock) of no lock, a [`TwoPhaseCommit`](crate::TwoPhaseCommit)
    /// transaction without participants or naming one twice. Nothing was sent to ZooKeeper.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// What the recipe was asked does not fit what is there: a [`Semaphore`](crate::Semaphore) of another number of
    /// leases than the one its directory records, say. Nothing was taken.
    #[error("{what}")]
    Mismatch {
        /// What does not fit, in words.
        what: String,
    },
    /// Any other error reported by ZooKeeper or the client library, with the operation that failed and the path
    /// it was on (`op` is ZooKeeper's name for it: `create`, `delete`, `getData`, `setData`, `getChildren`,
    /// `exists`, `sync`, `multi`; empty, as is `path`, only for an error converted with `From<zk::Error>` outside
    /// this crate). [`Error::zookeeper`] gives the ZooKeeper error alone, for a short `match`.
    #[error("{}", zookeeper_message(op, path, source))]
    ZooKeeper {
        /// The ZooKeeper operation that failed.
        op: &'static str,
        /// The path it was on.
        path: String,
        /// What ZooKeeper (or the client library) answered.
        #[source]
        source: zk::Error,
    },
}

fn zookeeper_message(op: &str, path: &str, source: &zk::Error) -> String {
    match (source, op.is_empty()) {
        (zk::Error::NoAuth, false) => format!("ZooKeeper: not authorized to {op} {path}"),
        (_, false) => format!("ZooKeeper: {op} {path}: {source}"),
        (_, true) => format!("ZooKeeper: {source}"),
    }
}

fn connection_loss(attempts: u32) -> String {
    match attempts {
        1 => "lost the connection to ZooKeeper before the reply; the request was tried once, not retried"
            .to_owned(),
        n => format!("lost the connection to ZooKeeper and gave up retrying after {n} attempts"),
    }
}

fn retry_budget_spent(attempts: u32, elapsed: std::time::Duration, unanswered: bool) -> String {
    let tries = match attempts {
        0 | 1 => "tried once".to_owned(),
        2 => "retried once".to_owned(),
        n => format!("retried {} times", n - 1),
    };
    let last = if unanswered {
        "no reply, the connection being down (the request may still be applied)"
    } else {
        "connection loss"
    };
    format!(
        "lost the connection to ZooKeeper and gave up when the retry time budget ran out: {tries} over {:.1} s, the \
         last: {last}",
        elapsed.as_secs_f64()
    )
}

impl From<LostReason> for Error {
    fn from(reason: LostReason) -> Self {
        Error::Lost(reason)
    }
}

/// The one conversion for "the session ended": the error for a session in `state`, if it has ended — expired, or
/// closed (also by failed authentication). A disconnection is no end: the session may survive it. (Lost signals
/// turn the same states into a [`LostReason`](LostReason) through this, and back with `LostReason::error`.)
pub(crate) fn session_ended(state: SessionState) -> Option<Error> {
    match state {
        SessionState::Expired => Some(Error::SessionExpired),
        SessionState::Closed => Some(Error::Closed),
        SessionState::AuthFailed => Some(Error::AuthFailed),
        _ => None,
    }
}

/// Without the operation and path (the crate itself always gives them, with [`Error::at`] or [`Error::zk`]).
impl From<zk::Error> for Error {
    fn from(err: zk::Error) -> Self {
        Error::zk("", "", err)
    }
}

/// Names the operation and path of a ZooKeeper error on its way out: `client.get_data(path).await.at("getData",
/// path)?`.
pub(crate) trait At<T> {
    /// The result, with a ZooKeeper error turned into an [`Error`] that names `op` and `path`.
    fn at(self, op: &'static str, path: &str) -> Result<T>;
}

impl<T> At<T> for std::result::Result<T, zk::Error> {
    fn at(self, op: &'static str, path: &str) -> Result<T> {
        self.map_err(|err| Error::zk(op, path, err))
    }
}

impl<T> At<T> for Result<T> {
    fn at(self, op: &'static str, path: &str) -> Result<T> {
        self.map_err(|err| err.at(op, path))
    }
}

impl Error {
    /// The error for `err`, answered by ZooKeeper to `op` on `path`: the end of the session, a closed client, an
    /// authentication failure and a connection loss are their own variants; anything else is
    /// [`Error::ZooKeeper`] naming `op` and `path`.
    pub fn zk(op: &'static str, path: &str, err: zk::Error) -> Error {
        match err {
            zk::Error::SessionExpired | zk::Error::SessionMoved => Error::SessionExpired,
            zk::Error::ClientClosed => Error::Closed,
            zk::Error::AuthFailed => Error::AuthFailed,
            zk::Error::ConnectionLoss => Error::ConnectionLoss { attempts: 1 },
            source => Error::ZooKeeper {
                op,
                path: path.to_owned(),
                source,
            },
        }
    }

    /// This error, naming `op` and `path` if it is an [`Error::ZooKeeper`] that names no operation yet (one that
    /// does keeps its own, the more precise).
    pub fn at(self, op: &'static str, path: &str) -> Error {
        match self {
            Error::ZooKeeper { op: "", source, .. } => Error::ZooKeeper {
                op,
                path: path.to_owned(),
                source,
            },
            other => other,
        }
    }

    /// The ZooKeeper error, if this is an [`Error::ZooKeeper`]: `matches!(err.zookeeper(), Some(zk::Error::NoAuth))`.
    pub fn zookeeper(&self) -> Option<&zk::Error> {
        match self {
            Error::ZooKeeper { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when the operation gave up because the connection to ZooKeeper was lost: [`Error::ConnectionLoss`] or
    /// [`Error::RetryBudgetSpent`]. The session may still be alive.
    pub fn is_connection_loss(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLoss { .. } | Error::RetryBudgetSpent { .. }
        )
    }

    /// True when the session is over: nothing can be retried on it.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Error::SessionExpired | Error::Closed | Error::AuthFailed)
    }
}

/// Why a guard stopped protecting its holder.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LostReason {
    /// The ZooKeeper session expired; ZooKeeper deleted our ephemeral node (or will, any moment).
    SessionExpired,
    /// The client was closed (or its authentication failed).
    ClientClosed,
    /// Somebody else deleted our node.
    NodeDeleted,
    /// The connection was down for longer than the [`LostPolicy`](crate::LostPolicy) allows, so the session may be gone already.
    Disconnected,
    /// The guard was released or dropped by its owner.
    Released,
    /// A [`NonBlockingLease`](crate::NonBlockingLease)'s time ran out (by our clock), or its holder node was
    /// replaced or deleted.
    LeaseEnded,
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LostReason::SessionExpired => "the ZooKeeper session expired",
            LostReason::ClientClosed => "the ZooKeeper client was closed",
            LostReason::NodeDeleted => "our lock node was deleted by somebody else",
            LostReason::Disconnected => "the connection to ZooKeeper was down for too long",
            LostReason::Released => "the guard was released",
            LostReason::LeaseEnded => "the lease's time ran out, or its holder node was replaced",
        })
    }
}

impl LostReason {
    /// The `reason` label of `zklock_guards_lost_total`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            LostReason::SessionExpired => "session_expired",
            LostReason::ClientClosed => "client_closed",
            LostReason::NodeDeleted => "node_deleted",
            LostReason::Disconnected => "disconnected",
            LostReason::Released => "released",
            LostReason::LeaseEnded => "lease_ended",
        }
    }

    /// The error for an operation that waited on a node lost for this reason (`path`: the node).
    pub(crate) fn error(self, path: &str) -> Error {
        match self {
            LostReason::SessionExpired => Error::SessionExpired,
            LostReason::NodeDeleted | LostReason::LeaseEnded => Error::NodeDeleted {
                path: path.to_owned(),
            },
            LostReason::ClientClosed | LostReason::Disconnected | LostReason::Released => Error::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::LostReason;
    use super::*;

    #[test]
    fn a_lost_reason_is_an_error() {
        let err: Error = LostReason::SessionExpired.into();
        assert_eq!(err, Error::Lost(LostReason::SessionExpired));
        assert_eq!(err.to_string(), "lost: the ZooKeeper session expired");
    }

    #[test]
    fn one_attempt_is_not_called_retrying() {
        let once = Error::ConnectionLoss { attempts: 1 }.to_string();
        assert!(!once.contains("retrying after"), "{once}");
        let five = Error::ConnectionLoss { attempts: 5 }.to_string();
        assert!(five.contains("gave up retrying after 5 attempts"), "{five}");
    }

    #[test]
    fn a_zookeeper_error_names_its_operation_and_path() {
        let err = Error::zk("create", "/locks/a", zk::Error::NoAuth);
        assert_eq!(err.to_string(), "ZooKeeper: not authorized to create /locks/a");
        assert_eq!(err.zookeeper(), Some(&zk::Error::NoAuth));
        let err = Error::zk("delete", "/b", zk::Error::NotEmpty);
        assert_eq!(
            err.to_string(),
            format!("ZooKeeper: delete /b: {}", zk::Error::NotEmpty)
        );
        // The inner, more precise context wins over an outer one.
        assert_eq!(err.clone().at("lock", "/x"), err);
        let bare = Error::from(zk::Error::NoAuth).at("lock", "/x");
        assert_eq!(bare.to_string(), "ZooKeeper: not authorized to lock /x");
        assert_eq!(
            Error::zk("getData", "/c", zk::Error::SessionExpired),
            Error::SessionExpired
        );
    }

    #[test]
    fn the_zookeeper_error_is_the_source() {
        let err = Error::from(zk::Error::NoAuth);
        assert_eq!(
            err.source().map(ToString::to_string),
            Some(zk::Error::NoAuth.to_string())
        );
        assert!(Error::Timeout.source().is_none());
    }
}
