//! Many locks: `lock_sessions` sessions (64), each looping over zklock `Mutex` acquire + `release().await` on a lock
//! path drawn at random from K independent paths (created beforehand). Total acquisitions per second, and the
//! server's own CPU time per 1,000 acquisitions (utime + stime from `/proc/<pid>/stat` over the window), and the
//! load generator's (this process: the 64 sessions' client work, which shares the machine's cores). With
//! K = 1 every acquisition is a hand-off among 64 sessions; with K ≥ 1,000 almost none waits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use zookeeper_client::{Acls, CreateMode};

use super::measure::{cpu_seconds, median};
use super::servers::{ServerKind, ServerUnderTest};
use super::sessions::{close_many, connect_many};
use super::{progress, Options};

/// One row of the many-locks section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocksRow {
    /// The server.
    pub server: ServerKind,
    /// Independent lock paths K.
    pub lock_paths: usize,
    /// Sessions.
    pub sessions: usize,
    /// `ok`, or why there are no figures.
    pub status: String,
    /// Total acquisitions per second, the median over the rounds.
    pub acquisitions_per_sec: Option<f64>,
    /// The server's CPU time per 1,000 acquisitions, ms (median over the rounds).
    pub server_cpu_ms_per_1000: Option<f64>,
    /// The load generator's CPU time per 1,000 acquisitions, ms (median over the rounds).
    #[serde(default)]
    pub load_cpu_ms_per_1000: Option<f64>,
    /// Acquisitions per second of each round.
    pub rounds: Vec<f64>,
}

/// The whole section.
pub async fn run(options: &Options, servers: &[ServerUnderTest]) -> Result<Vec<LocksRow>> {
    let mut rows = Vec::new();
    for &k in &options.lock_paths {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
        let mut cpus: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
        let mut load_cpus: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
        let mut failure: Vec<Option<String>> = vec![None; servers.len()];
        for round in 0..options.lock_rounds {
            let mut order: Vec<usize> = (0..servers.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                if failure[i].is_some() {
                    continue;
                }
                let server = &servers[i];
                match one_run(options, server, k).await {
                    Ok((rate, cpu, load_cpu)) => {
                        let ms = |c: Option<f64>| c.map_or("–".into(), |c| format!("{c:.0}"));
                        progress!(
                            "locks K={k} on {} (round {}): {rate:.0} acquisitions/s, CPU ms per 1,000: server {}, load generator {}",
                            server.kind.label(),
                            round + 1,
                            ms(cpu),
                            ms(load_cpu),
                        );
                        rates[i].push(rate);
                        cpus[i].extend(cpu);
                        load_cpus[i].extend(load_cpu);
                    }
                    Err(e) => {
                        progress!("locks K={k} on {}: failed: {e:#}", server.kind.label());
                        failure[i] = Some(format!("failed: {e:#}"));
                    }
                }
            }
        }
        for (i, server) in servers.iter().enumerate() {
            rows.push(LocksRow {
                server: server.kind,
                lock_paths: k,
                sessions: options.lock_sessions,
                status: failure[i].clone().unwrap_or_else(|| "ok".into()),
                acquisitions_per_sec: median(rates[i].iter().copied()),
                server_cpu_ms_per_1000: median(cpus[i].iter().copied()),
                load_cpu_ms_per_1000: median(load_cpus[i].iter().copied()),
                rounds: rates[i].clone(),
            });
        }
    }
    Ok(rows)
}

/// One measured window on `k` fresh lock paths: (acquisitions per second, server and load generator CPU ms per
/// 1,000).
async fn one_run(
    options: &Options,
    server: &ServerUnderTest,
    k: usize,
) -> Result<(f64, Option<f64>, Option<f64>)> {
    let hosts = server.hosts();
    let root = zklock_bench::fresh_path("/compare-scale-locks");
    let clients = connect_many(&hosts, options.lock_sessions, "locks").await?;
    let result = async {
        // The lock directories exist before the window opens (persistent, so no container sweep touches them).
        let admin = &clients[0];
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        admin.create(&root, b"", &persistent).await?;
        let paths: Vec<String> = (0..k).map(|i| format!("{root}/l{i}")).collect();
        for chunk in paths.chunks(1000) {
            let creates: Vec<_> = chunk.iter().map(|p| admin.create(p, b"", &persistent)).collect();
            for created in futures::future::join_all(creates).await {
                created?;
            }
        }
        let paths = Arc::new(paths);
        let start = Instant::now();
        let measure_from = start + Duration::from_secs_f64(options.lock_warmup);
        let end = measure_from + Duration::from_secs_f64(options.lock_seconds);
        let pids = [server.pid(), Some(std::process::id())];
        let cpu = tokio::spawn(async move {
            tokio::time::sleep_until(measure_from.into()).await;
            let before = pids.map(|pid| pid.and_then(cpu_seconds));
            tokio::time::sleep_until(end.into()).await;
            let after = pids.map(|pid| pid.and_then(cpu_seconds));
            [0, 1].map(|i| before[i].zip(after[i]).map(|(b, a)| a - b))
        });
        let (count, seconds) = zklock_bench::count_cycles(&clients, measure_from, end, move |client| {
            let path = paths[rand::random::<usize>() % paths.len()].clone();
            async move {
                zklock::Mutex::new(&client, &path)?
                    .lock()
                    .await?
                    .release()
                    .await?;
                Ok(())
            }
        })
        .await?;
        let per_1000 = |cpu: Option<f64>| cpu.filter(|_| count > 0).map(|c| c * 1e3 / (count as f64 / 1e3));
        let [server_cpu, load_cpu] = cpu.await?.map(per_1000);
        anyhow::Ok((count as f64 / seconds, server_cpu, load_cpu))
    }
    .await;
    close_many(clients).await;
    zklock_bench::remove_tree(&hosts, &root, 2).await?;
    result
}
