//! Workloads for side-by-side benchmarks. Every comparison runs its contenders in one process run, one after the
//! other on the same server, so ratios stay meaningful when absolute figures drift between machines.
//!
//! * [`lock`] — acquire+release loops of zklock's `Mutex` and zookeeper-client's `Client::lock`.
//! * [`mixed`] — saturated mixed reads and writes from many sessions, with latency percentiles.
//!
//! `zklock bench` (the CLI) runs the lock workloads against any server; the `zklock-compare` crate (not published:
//! it needs real ZooKeeper and the peers through the testkit) runs them against the embedded server, real ZooKeeper
//! 3.8, Curator and kazoo. This crate depends on nothing test-only, so the shipped binary can link it.
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

/// Samples counters (e.g. CPU seconds used so far by the server and by this process) when a measurement window
/// opens and when it closes; the workloads report the difference, so set-up, warm-up and clean-up are excluded.
pub type Probe = std::sync::Arc<dyn Fn() -> Vec<f64> + Send + Sync>;

/// A probe that samples nothing.
pub fn no_probe() -> Probe {
    std::sync::Arc::new(Vec::new)
}

/// Samples `probe` at `open` and at `close` on a task of its own (workload tasks are busy at those instants) and
/// returns the element-wise difference.
pub(crate) fn sample_window(
    probe: Probe,
    open: std::time::Instant,
    close: std::time::Instant,
) -> tokio::task::JoinHandle<Vec<f64>> {
    tokio::spawn(async move {
        tokio::time::sleep_until(open.into()).await;
        let before = probe();
        tokio::time::sleep_until(close.into()).await;
        let after = probe();
        after.iter().zip(&before).map(|(a, b)| a - b).collect()
    })
}

/// Runs `cycle` in a loop on every session (one task each) until `end`, counting the cycles that finish at or
/// after `measure_from`; returns the count and the length of the measured window in seconds.
pub async fn count_cycles<F, Fut>(
    sessions: &[zookeeper_client::Client],
    measure_from: std::time::Instant,
    end: std::time::Instant,
    cycle: F,
) -> Result<(u64, f64)>
where
    F: Fn(zookeeper_client::Client) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    use std::sync::atomic::{AtomicU64, Ordering};
    let count = std::sync::Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for client in sessions {
        let (client, count, cycle) = (client.clone(), count.clone(), cycle.clone());
        tasks.push(tokio::spawn(async move {
            while std::time::Instant::now() < end {
                cycle(client.clone()).await?;
                if std::time::Instant::now() >= measure_from {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok::<_, BenchError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let seconds = (std::time::Instant::now() - measure_from).as_secs_f64();
    Ok((count.load(Ordering::Relaxed), seconds))
}

/// A path no other run uses: `prefix`, a dash and 16 random hex digits.
pub fn fresh_path(prefix: &str) -> String {
    format!("{prefix}-{:016x}", rand::random::<u64>())
}

/// Removes a benchmark path and its descendants down to `depth` levels, then closes the session it used (best
/// effort: the benchmark is over, and contender nodes are ephemeral anyway).
pub async fn remove_tree(hosts: &str, path: &str, depth: usize) -> Result<()> {
    remove_tree_with(&Connect::plain(), hosts, path, depth).await
}

/// [`remove_tree`] with a session connected by `connect` (credentials, SASL, TLS).
pub async fn remove_tree_with(connect: &Connect, hosts: &str, path: &str, depth: usize) -> Result<()> {
    let client = connect.session(hosts).await?;
    remove_recursive(&client, path, depth).await;
    close(client).await;
    Ok(())
}

async fn remove_recursive(client: &zookeeper_client::Client, path: &str, depth: usize) {
    if depth > 0 {
        for child in client.list_children(path).await.unwrap_or_default() {
            Box::pin(remove_recursive(client, &format!("{path}/{child}"), depth - 1)).await;
        }
    }
    let _ = client.delete(path, None).await;
}

/// Opens a session for a benchmark client.
pub async fn connect(hosts: &str) -> Result<zookeeper_client::Client> {
    Connect::plain().session(hosts).await
}

/// How benchmark sessions connect: a `zookeeper_client::Connector` carrying credentials (`with_auth`), SASL
/// (`with_sasl`) or TLS (`with_tls`, then `secure`), as `zklock bench --auth/--sasl/--tls-*` give them.
#[derive(Clone, Debug)]
pub struct Connect {
    connector: zookeeper_client::Connector,
    secure: bool,
}

impl Connect {
    /// No credentials, no TLS, a 10 s session timeout: what [`connect`] uses.
    pub fn plain() -> Connect {
        Connect::new(
            zookeeper_client::Client::connector().with_session_timeout(std::time::Duration::from_secs(10)),
            false,
        )
    }

    /// Sessions made by `connector`; `secure`: with `secure_connect` (TLS by default for every host).
    pub fn new(connector: zookeeper_client::Connector, secure: bool) -> Connect {
        Connect { connector, secure }
    }

    /// Opens one session.
    pub async fn session(&self, hosts: &str) -> Result<zookeeper_client::Client> {
        let connector = self.connector.clone();
        Ok(if self.secure {
            connector.secure_connect(hosts).await?
        } else {
            connector.connect(hosts).await?
        })
    }
}

/// Closes a session and waits (briefly) until the server confirmed it, so that its ephemeral nodes disappear now
/// rather than a session timeout later. Every other clone of `client` must be dropped first. The `zklock` binary
/// closes its sessions with it too.
pub async fn close(client: zookeeper_client::Client) {
    let mut states = client.state_watcher();
    drop(client);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), async {
        while !states.changed().await.is_terminated() {}
    })
    .await;
}
