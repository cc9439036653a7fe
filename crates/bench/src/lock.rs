//! Lock throughput: uncontended acquire+release per second, and contended hand-offs per second.

use std::time::{Duration, Instant};

use zklock::Mutex;
use zookeeper_client::{Acls, Client, CreateMode, LockOptions, LockPrefix};

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
    throughput_with(&crate::Connect::plain(), hosts, implementation, clients, duration).await
}

/// [`throughput`] with sessions connected by `connect` (credentials, SASL, TLS).
pub async fn throughput_with(
    connect: &crate::Connect,
    hosts: &str,
    implementation: LockImpl,
    clients: usize,
    duration: Duration,
) -> Result<f64> {
    Ok(measure_with(
        connect,
        hosts,
        implementation,
        clients,
        duration,
        crate::no_probe(),
    )
    .await?
    .per_sec())
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

/// Like [`throughput`] with sessions connected by `connect` (`Connect::plain()`: no credentials), also sampling
/// `probe` when the measured window opens and closes.
pub async fn measure_with(
    connect: &crate::Connect,
    hosts: &str,
    implementation: LockImpl,
    clients: usize,
    duration: Duration,
    probe: crate::Probe,
) -> Result<LockRun> {
    let dir = crate::fresh_path("/zklock-bench");
    let root = dir.clone();
    let mut sessions = Vec::new();
    for _ in 0..clients.max(1) {
        sessions.push(connect.session(hosts).await?);
    }
    let warmup = Duration::from_millis(300).min(duration / 4);
    let start = Instant::now();
    let (measure_from, end) = (start + warmup, start + warmup + duration);
    let window = crate::sample_window(probe, measure_from, end);
    let (count, seconds) = crate::count_cycles(&sessions, measure_from, end, move |client| {
        let dir = dir.clone();
        async move { implementation.cycle(&client, &dir).await }
    })
    .await?;
    let probe = window.await?;
    for session in sessions {
        crate::close(session).await;
    }
    crate::remove_tree_with(connect, hosts, &root, 1).await?;
    Ok(LockRun {
        count,
        seconds,
        probe,
    })
}
