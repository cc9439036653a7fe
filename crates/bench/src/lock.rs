//! Lock throughput: uncontended acquire+release per second, and contended hand-offs per second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use zklock::Mutex;
use zookeeper_client::{self as zk, Acls, Client, CreateMode, LockOptions, LockPrefix};

use crate::Result;

/// One implementation's acquire+release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockImpl {
    /// zookeeper-client's `Client::lock` (Curator names); released by dropping (a background delete).
    ZookeeperClient,
    /// zklock's `Mutex`, released with `release().await` (waits for ZooKeeper's confirmation).
    Zklock,
    /// zklock's `Mutex`, released by dropping the guard: the delete is sent at once, its reply awaited in the
    /// background — the same release semantics as zookeeper-client's lock.
    ZklockDrop,
}

impl LockImpl {
    /// Every implementation, the reference (zookeeper-client) first.
    pub const ALL: [LockImpl; 3] = [LockImpl::ZookeeperClient, LockImpl::Zklock, LockImpl::ZklockDrop];

    /// A short display name.
    pub fn name(self) -> &'static str {
        match self {
            LockImpl::ZookeeperClient => "zookeeper-client lock",
            LockImpl::Zklock => "zklock (release)",
            LockImpl::ZklockDrop => "zklock (drop)",
        }
    }

    async fn cycle(self, client: &Client, dir: &str) -> Result<()> {
        match self {
            LockImpl::Zklock => Mutex::new(client, dir)?.lock().await?.release().await?,
            LockImpl::ZklockDrop => drop(Mutex::new(client, dir)?.lock().await?),
            LockImpl::ZookeeperClient => {
                let options = LockOptions::new(Acls::anyone_all())
                    .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
                drop(
                    client
                        .lock(LockPrefix::new_curator(dir, "lock-")?, b"", options)
                        .await?,
                );
            }
        }
        Ok(())
    }
}

/// Runs `implementation` in a loop on `clients` sessions (each its own) contending for one lock directory for
/// `duration` after a short warm-up; returns acquisitions per second (with several clients: hand-offs per second).
pub async fn throughput(
    hosts: &str,
    implementation: LockImpl,
    clients: usize,
    duration: Duration,
) -> Result<f64> {
    Ok(
        measure(hosts, implementation, clients, duration, crate::no_probe())
            .await?
            .per_sec(),
    )
}

/// What one lock run measured.
#[derive(Debug, Clone)]
pub struct LockRun {
    /// Acquisitions (hand-offs) counted in the window.
    pub count: u64,
    /// Length of the window, seconds.
    pub seconds: f64,
    /// Difference of the probe's samples between the window's start and end.
    pub probe: Vec<f64>,
}

impl LockRun {
    /// Acquisitions per second.
    pub fn per_sec(&self) -> f64 {
        self.count as f64 / self.seconds
    }
}

/// Like [`throughput`], also sampling `probe` when the measured window opens and closes.
pub async fn measure(
    hosts: &str,
    implementation: LockImpl,
    clients: usize,
    duration: Duration,
    probe: crate::Probe,
) -> Result<LockRun> {
    let dir = format!("/zklock-bench-{:016x}", rand::random::<u64>());
    let mut sessions = Vec::new();
    for _ in 0..clients.max(1) {
        sessions.push(crate::connect(hosts).await?);
    }
    let warmup = Duration::from_millis(300).min(duration / 4);
    let start = Instant::now();
    let (measure_from, end) = (start + warmup, start + warmup + duration);
    let count = Arc::new(AtomicU64::new(0));
    let window = crate::sample_window(probe, measure_from, end);
    let mut tasks = Vec::new();
    for client in sessions.clone() {
        let (count, dir) = (count.clone(), dir.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                implementation.cycle(&client, &dir).await?;
                if Instant::now() >= measure_from {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok::<_, crate::BenchError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let seconds = (Instant::now() - measure_from).as_secs_f64();
    let probe = window.await?;
    for session in sessions {
        crate::close(session).await;
    }
    remove_tree(hosts, &dir).await?;
    Ok(LockRun {
        count: count.load(Ordering::Relaxed),
        seconds,
        probe,
    })
}

/// Removes a benchmark directory and its children (best effort for the children; they are ephemeral anyway).
async fn remove_tree(hosts: &str, dir: &str) -> Result<()> {
    let client = crate::connect(hosts).await?;
    for child in client.list_children(dir).await.unwrap_or_default() {
        let _ = client.delete(&format!("{dir}/{child}"), None).await;
    }
    match client.delete(dir, None).await {
        Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::NotEmpty) => {}
        Err(err) => return Err(err.into()),
    }
    crate::close(client).await;
    Ok(())
}
