//! zklock's side of `compare-peers` beyond the Mutex (which [`zklock_bench::lock`] measures): read-heavy `RwLock`
//! throughput, `LeaderElection` failover time and `DoubleBarrier` rounds — each shaped exactly like the matching
//! Curator benchmark in `CuratorPeer.java`, one session per client.

use std::time::{Duration, Instant};

use zklock::{DoubleBarrier, LeaderElection, QueueEvent, RwLock};
use zookeeper_client as zk;

use crate::peers::{Count, Departure};
use zklock_bench::Result;

/// Bound on any single wait in these benchmarks (something must happen; a loaded machine gets generous time).
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// `clients` sessions loop on one `RwLock`: each acquisition is a read with probability `read_fraction`, else a
/// write; acquire, release (awaiting the delete's confirmation, as Curator's synchronous release does).
pub async fn rwlock(
    hosts: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
    read_fraction: f64,
) -> Result<Count> {
    let dir = zklock_bench::fresh_path("/zklock-bench-rw");
    let mut sessions = Vec::new();
    for _ in 0..clients.max(1) {
        sessions.push(zklock_bench::connect(hosts).await?);
    }
    let measure_from = Instant::now() + warmup;
    let end = measure_from + duration;
    let root = dir.clone();
    let (count, seconds) = zklock_bench::count_cycles(&sessions, measure_from, end, move |client| {
        let dir = dir.clone();
        async move {
            let lock = RwLock::new(&client, &dir)?;
            if rand::random::<f64>() < read_fraction {
                lock.read().await?.release().await?;
            } else {
                lock.write().await?.release().await?;
            }
            Ok(())
        }
    })
    .await?;
    for session in sessions {
        zklock_bench::close(session).await;
    }
    zklock_bench::remove_tree(hosts, &root, 1).await?;
    Ok(Count { count, seconds })
}

/// `rounds` failovers of `LeaderElection`, each on a fresh path with two fresh sessions: the first candidate
/// leads, the second queues behind it (we wait for its `Waiting` event), then the leader departs and the time
/// until the successor's `campaign()` returns is measured.
///
/// [`Departure::CloseSession`] drops the leadership without deleting the node (the guard is dropped on a thread
/// without a tokio runtime, where zklock cannot send the delete) and then the last handle of the leader's client,
/// which sends closeSession: the server deletes the node, as it does for Curator's `CuratorFramework.close()`.
pub async fn failover(hosts: &str, root: &str, rounds: usize, departure: Departure) -> Result<Vec<Duration>> {
    let mut times = Vec::new();
    for round in 0..rounds {
        let path = format!("{root}/r{round}");
        let first = zklock_bench::connect(hosts).await?;
        let second = zklock_bench::connect(hosts).await?;
        let leader_election = LeaderElection::new(&first, &path)?;
        let leadership = leader_election.campaign().await?;
        let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
        let queued_tx = std::sync::Mutex::new(Some(queued_tx));
        let queued = zklock::Listener::new(move |event| {
            if matches!(event, QueueEvent::Waiting { .. }) {
                if let Some(tx) = queued_tx.lock().expect("not poisoned").take() {
                    let _ = tx.send(());
                }
            }
        });
        let successor = LeaderElection::new(zklock::Session::new(&second).with_listener(queued), &path)?;
        let campaign = tokio::spawn(async move {
            let leadership = successor.campaign().await;
            (Instant::now(), leadership)
        });
        tokio::time::timeout(STEP_TIMEOUT, queued_rx)
            .await
            .map_err(|_| zk::Error::Timeout)?
            .map_err(|_| zk::Error::Timeout)?;
        let start = Instant::now();
        match departure {
            Departure::Resign => leadership.release().await?,
            Departure::CloseSession => {
                std::thread::spawn(move || drop(leadership))
                    .join()
                    .expect("dropping a guard does not panic");
                drop(leader_election);
                drop(first);
            }
        }
        let (led_at, leadership) = tokio::time::timeout(STEP_TIMEOUT, campaign)
            .await
            .map_err(|_| zk::Error::Timeout)??;
        times.push(led_at - start);
        leadership?.release().await?;
        zklock_bench::close(second).await;
    }
    remove_tree_deep(hosts, root).await?;
    Ok(times)
}

/// `clients` sessions pass `barriers` double barriers (`<root>/b<i>`, `clients` members each) one after the
/// other: enter, leave. Returns the total time from the moment all sessions are connected.
pub async fn double_barrier(hosts: &str, root: &str, clients: usize, barriers: usize) -> Result<Duration> {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(zklock_bench::connect(hosts).await?);
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for client in &sessions {
        let (client, root) = (client.clone(), root.to_string());
        tasks.push(tokio::spawn(async move {
            for i in 0..barriers {
                let barrier = DoubleBarrier::new(&client, &format!("{root}/b{i}"), clients)?;
                let participation = barrier.enter_timeout(STEP_TIMEOUT).await?;
                participation.leave_timeout(STEP_TIMEOUT).await?;
            }
            Ok::<_, zklock_bench::BenchError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = start.elapsed();
    for session in sessions {
        zklock_bench::close(session).await;
    }
    remove_tree_deep(hosts, root).await?;
    Ok(elapsed)
}

/// Removes a benchmark root, its per-round directories and their children (best effort).
pub async fn remove_tree_deep(hosts: &str, root: &str) -> Result<()> {
    zklock_bench::remove_tree(hosts, root, 2).await
}
