//! Errors of the server's public API.

/// Why the server could not start or shut down cleanly.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("cannot bind the client port: {0}")]
    Bind(#[source] std::io::Error),
    /// The secure client port could not be bound.
    #[error("cannot bind the secure client port {0}: {1}")]
    SecureBind(std::net::SocketAddr, #[source] std::io::Error),
    /// The TLS configuration of the secure client port is unusable (a store missing or unreadable, a wrong
    /// password, ...).
    #[error("{0}")]
    Tls(#[from] crate::tls::TlsError),
    /// An enforced authentication scheme ([`crate::ServerConfig::enforce_auth_schemes`]) the server does not
    /// have: `sasl` without SASL configured, `x509` without TLS, or one it does not know.
    #[error("authentication scheme {0} is not available, so it cannot be enforced")]
    UnknownAuthScheme(String),
    /// Neither a plain nor a secure client port is configured.
    #[error("no client port: plain_client_port is false and there is no TLS configuration")]
    NoClientPort,
    /// The metrics address ([`crate::Server::serve_metrics`]) could not be bound.
    #[error("cannot bind the metrics address: {0}")]
    MetricsBind(#[source] std::io::Error),
    /// The data directory could not be created or used.
    #[error("data directory: {0}")]
    DataDir(#[source] std::io::Error),
    /// The durable store failed (open, recovery, write or close).
    #[error("storage: {0}")]
    Storage(#[from] zklock_storage::StorageError),
    /// Stored data could not be turned back into a tree.
    #[error("recovery: {0}")]
    Recovery(#[from] crate::persist::RecoveryError),
    /// The transaction log could not be written (a full disk, an I/O error) while serving: the server has
    /// stopped serving (see [`crate::Server::log_failure`]). The message names the log directory and the
    /// operating-system error, e.g. "cannot write the transaction log in /var/lib/zklock: No space left on
    /// device (os error 28); stopped serving".
    #[error(
        "cannot write the transaction log in {}: {}; stopped serving",
        dir.display(),
        error.io_error().map_or_else(|| error.to_string(), ToString::to_string)
    )]
    LogWrite {
        /// The transaction log directory.
        dir: std::path::PathBuf,
        /// The failed write or sync (see [`zklock_storage::StorageError::io_error`] for the OS error).
        error: zklock_storage::StorageError,
    },
    /// A blocking storage task died (panicked or was cancelled).
    #[error("storage task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}
