//! Errors of the server's public API.

/// Why the server could not start or shut down cleanly.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening socket could not be bound.
    #[error("cannot bind the client port: {0}")]
    Bind(#[source] std::io::Error),
    /// The data directory could not be created or used.
    #[error("data directory: {0}")]
    DataDir(#[source] std::io::Error),
    /// The durable store failed (open, recovery, write or close).
    #[error("storage: {0}")]
    Storage(#[from] zklock_storage::StorageError),
    /// Stored data could not be turned back into a tree.
    #[error("recovery: {0}")]
    Recovery(#[from] crate::persist::RecoveryError),
    /// A blocking storage task died (panicked or was cancelled).
    #[error("storage task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}
