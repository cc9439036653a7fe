//! Saturated mixed operations: many sessions, each issuing one request at a time as fast as it can, over a mix of
//! reads and writes on its own small subtree (so the mix, not contention, is what is measured).

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use zookeeper_client::{self as zk, Acls, CreateMode};

use crate::Result;

/// Throughput and latency of a mixed run.
#[derive(Debug, Clone)]
pub struct MixedResult {
    /// Completed operations per second, all sessions together.
    pub ops_per_sec: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Operations completed.
    pub ops: u64,
    /// Difference of the probe's samples between the start and the end of the run (see [`run_probed`]).
    pub probe: Vec<f64>,
}

/// `clients` sessions for `duration`: 40 % getData, 20 % getChildren, 15 % setData, 15 % exists, 5 % create,
/// 5 % delete (writes are a third of the mix, fsync'd by both servers).
pub async fn run(hosts: &str, clients: usize, duration: Duration) -> Result<MixedResult> {
    run_probed(hosts, clients, duration, crate::no_probe()).await
}

/// Like [`run`], also sampling `probe` when the measured run starts (after set-up) and ends.
pub async fn run_probed(
    hosts: &str,
    clients: usize,
    duration: Duration,
    probe: crate::Probe,
) -> Result<MixedResult> {
    let root = crate::fresh_path("/zklock-mixed");
    let setup = crate::connect(hosts).await?;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    setup.create(&root, b"", &persistent).await?;
    let mut sessions = Vec::new();
    for i in 0..clients {
        let client = crate::connect(hosts).await?;
        let dir = format!("{root}/c{i}");
        client.create(&dir, b"", &persistent).await?;
        for k in 0..8 {
            client
                .create(&format!("{dir}/n{k}"), &[0u8; 64], &persistent)
                .await?;
        }
        sessions.push((client, dir, i as u64));
    }
    let begin = Instant::now();
    let end = begin + duration;
    let window = crate::sample_window(probe, begin, end);
    let mut tasks = Vec::new();
    for (client, dir, seed) in sessions {
        tasks.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut latencies = Vec::with_capacity(16_384);
            let mut next_node = 8u32;
            while Instant::now() < end {
                let target = format!("{dir}/n{}", rng.gen_range(0..8));
                let started = Instant::now();
                let roll = rng.gen_range(0..100);
                let result = match roll {
                    0..=39 => client.get_data(&target).await.map(drop),
                    40..=59 => client.list_children(&dir).await.map(drop),
                    60..=74 => client.set_data(&target, &[1u8; 64], None).await.map(drop),
                    75..=89 => client.check_stat(&target).await.map(drop),
                    90..=94 => {
                        next_node += 1;
                        let path = format!("{dir}/x{next_node}");
                        client
                            .create(
                                &path,
                                &[2u8; 64],
                                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
                            )
                            .await
                            .map(drop)
                    }
                    _ => match client.list_children(&dir).await {
                        Ok(children) => match children.iter().find(|c| c.starts_with('x')) {
                            Some(victim) => client.delete(&format!("{dir}/{victim}"), None).await,
                            None => Ok(()),
                        },
                        Err(err) => Err(err),
                    },
                };
                match result {
                    Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::NodeExists) => {}
                    Err(err) => return Err(crate::BenchError::from(err)),
                }
                latencies.push(started.elapsed());
            }
            crate::close(client).await;
            Ok(latencies)
        }));
    }
    let start = Instant::now();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    let elapsed = start.elapsed().as_secs_f64().max(duration.as_secs_f64());
    let probe = window.await?;
    all.sort();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    let result = MixedResult {
        ops_per_sec: all.len() as f64 / elapsed,
        p50: pick(0.50),
        p99: pick(0.99),
        ops: all.len() as u64,
        probe,
    };
    // Clean up the subtree.
    for child in setup.list_children(&root).await.unwrap_or_default() {
        let dir = format!("{root}/{child}");
        for node in setup.list_children(&dir).await.unwrap_or_default() {
            let _ = setup.delete(&format!("{dir}/{node}"), None).await;
        }
        let _ = setup.delete(&dir, None).await;
    }
    let _ = setup.delete(&root, None).await;
    crate::close(setup).await;
    Ok(result)
}
