//! `zklock bench`: zklock's Mutex against zookeeper-client's `Client::lock`, side by side on one server in one
//! run, so that the ratio means something even when absolute figures drift between machines.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zklock::Mutex;
use zookeeper_client::{self as zk, Acls, Client, CreateMode, LockOptions, LockPrefix};

use crate::cli::BenchArgs;
use crate::zk::Target;

/// One implementation's acquire+release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    /// zklock, releasing with `release().await` (waits for ZooKeeper's confirmation).
    Zklock,
    /// zklock, releasing by dropping the guard (the delete is sent at once, its reply awaited in the background),
    /// the same release semantics as zookeeper-client's lock.
    ZklockDrop,
    ZookeeperClient,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Zklock => "zklock (release)",
            Contender::ZklockDrop => "zklock (drop)",
            Contender::ZookeeperClient => "zookeeper-client lock",
        }
    }

    async fn cycle(self, client: &Client, dir: &str) -> Result<()> {
        match self {
            Contender::Zklock => {
                let guard = Mutex::new(client, dir)?.lock().await?;
                guard.release().await?;
            }
            Contender::ZklockDrop => {
                let guard = Mutex::new(client, dir)?.lock().await?;
                drop(guard);
            }
            Contender::ZookeeperClient => {
                let options = LockOptions::new(Acls::anyone_all())
                    .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
                let prefix = LockPrefix::new_curator(dir, "lock-")?;
                let lock = client.lock(prefix, b"", options).await?;
                drop(lock); // its release: a delete in the background
            }
        }
        Ok(())
    }
}

pub async fn bench(args: BenchArgs) -> Result<i32> {
    let target = Target::resolve(&args.connect).await?;
    let duration = Duration::from_secs_f64(args.duration.max(0.1));
    println!(
        "zklock bench on {} {} — {:.1}s per measurement, {} clients when contended",
        if target.embedded.is_some() {
            "embedded server"
        } else {
            "ZooKeeper"
        },
        target.hosts,
        duration.as_secs_f64(),
        args.clients
    );
    let contenders = [
        Contender::ZookeeperClient,
        Contender::Zklock,
        Contender::ZklockDrop,
    ];
    println!(
        "{:<44} {:>22} {:>24} {:>24}",
        "workload",
        Contender::ZookeeperClient.name(),
        Contender::Zklock.name(),
        Contender::ZklockDrop.name()
    );
    for (label, clients) in [
        ("uncontended acquire+release /s (1 client)", 1usize),
        ("contended hand-offs /s", args.clients),
    ] {
        let mut rates = Vec::new();
        for contender in contenders {
            let dir = format!(
                "{}-{}-{}",
                args.path,
                contender.name().replace(' ', "-"),
                std::process::id()
            );
            let rate = measure(&target, clients, &dir, duration, move |client, dir| async move {
                contender.cycle(&client, &dir).await
            })
            .await
            .with_context(|| format!("{label}: {}", contender.name()))?;
            rates.push(rate);
        }
        let label = if clients > 1 {
            format!("{label} ({clients} clients)")
        } else {
            label.to_string()
        };
        let cell = |rate: f64| format!("{rate:.0} ({:.2}×)", rate / rates[0]);
        println!(
            "{label:<44} {:>22.0} {:>24} {:>24}",
            rates[0],
            cell(rates[1]),
            cell(rates[2])
        );
    }
    target.shutdown().await?;
    Ok(0)
}

/// Runs `cycle` in a loop on `clients` sessions for `duration` (after a short warm-up); returns cycles per second.
async fn measure<F, Fut>(
    target: &Target,
    clients: usize,
    dir: &str,
    duration: Duration,
    cycle: F,
) -> Result<f64>
where
    F: Fn(Client, String) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(target.connect().await?);
    }
    let warmup = Duration::from_millis(300).min(duration / 4);
    let start = Instant::now();
    let (measure_from, end) = (start + warmup, start + warmup + duration);
    let count = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for client in sessions.iter().cloned() {
        let (cycle, count, dir) = (cycle.clone(), count.clone(), dir.to_string());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                cycle(client.clone(), dir.clone()).await?;
                if Instant::now() >= measure_from {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let elapsed = (Instant::now() - measure_from).as_secs_f64();
    for session in sessions {
        crate::zk::close(session).await;
    }
    let _ = remove_dir(target, dir).await;
    Ok(count.load(Ordering::Relaxed) as f64 / elapsed)
}

async fn remove_dir(target: &Target, dir: &str) -> Result<()> {
    let client = target.connect().await?;
    for child in client.list_children(dir).await.unwrap_or_default() {
        let _ = client.delete(&format!("{dir}/{child}"), None).await;
    }
    match client.delete(dir, None).await {
        Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::NotEmpty) => {}
        Err(err) => tracing::debug!(%err, "removing the benchmark directory"),
    }
    crate::zk::close(client).await;
    Ok(())
}
