//! Workloads for side-by-side benchmarks. Every comparison runs its contenders in one process run, one after the
//! other on the same server, so ratios stay meaningful when absolute figures drift between machines.
//!
//! * [`lock`] — acquire+release loops of zklock's `Mutex` and zookeeper-client's `Client::lock`.
//! * [`mixed`] — saturated mixed reads and writes from many sessions, with latency percentiles.
//!
//! The `compare-servers` binary runs them against the embedded server and real ZooKeeper 3.8; `zklock bench`
//! (the CLI) runs the lock workloads against any server.
#![forbid(unsafe_code)]

pub mod lock;
pub mod mixed;

/// What can fail while benchmarking.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A ZooKeeper operation failed.
    #[error("ZooKeeper: {0}")]
    ZooKeeper(#[from] zookeeper_client::Error),
    /// A zklock operation failed.
    #[error("zklock: {0}")]
    Zklock(#[from] zklock::Error),
    /// A benchmark task panicked or was cancelled.
    #[error("benchmark task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, BenchError>;

/// Opens a session for a benchmark client.
pub async fn connect(hosts: &str) -> Result<zookeeper_client::Client> {
    Ok(zookeeper_client::Client::connector()
        .with_session_timeout(std::time::Duration::from_secs(10))
        .connect(hosts)
        .await?)
}

/// Closes a session and waits (briefly) until the server confirmed it.
pub async fn close(client: zookeeper_client::Client) {
    let mut states = client.state_watcher();
    drop(client);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), async {
        while !states.changed().await.is_terminated() {}
    })
    .await;
}
