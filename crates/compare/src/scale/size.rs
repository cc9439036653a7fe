//! Server size: each server, fresh, is loaded step by step to 10k, 100k and 1M znodes (`znode_bytes` of data each,
//! under one parent, as in the hand measurement) with pipelined creates; at each step, with `size_sessions`
//! sessions connected:
//!
//! * **read latency** — `readers` sessions each read random znodes (getData) one after the other for
//!   `read_seconds`: p50 and p99;
//! * **resident memory** — `VmRSS` of the server process;
//! * **restart** — the sessions are closed, the server is killed (SIGKILL) and started on the same data: the time
//!   from the new process's start until `ruok` answers `imok`, and until a new session has read a znode;
//! * **snapshot** — the newest snapshot once it holds the whole tree (ZooKeeper writes one as it starts; the
//!   embedded server as it shuts down, so it is stopped with SIGTERM and started again, untimed), and everything in
//!   the data directory (logs included, preallocation counted).
//!
//! Individual creates, not `multi`s: both servers snapshot every `snapCount` transactions (100,000), and a
//! `multi` of a thousand creates is one transaction.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use zookeeper_client::{self as zk, Acls, CreateMode};

use super::measure::{disk_usage, quantile_ms, rss_mib};
use super::servers::{ServerKind, ServerUnderTest};
use super::sessions::{check_open_files, close_many, connect_many};
use super::{progress, Options};

/// The parent of every znode loaded.
const PARENT: &str = "/compare-scale-size";
/// Sessions that load the znodes.
const LOADERS: usize = 4;
/// Creates in flight per loading session.
const WINDOW: usize = 500;

/// The path of znode `i`.
fn znode(i: usize) -> String {
    format!("{PARENT}/n{i:07}")
}

/// One row of the server-size section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeRow {
    /// The server.
    pub server: ServerKind,
    /// Znodes loaded (besides the parent and the built-in ones).
    pub znodes: usize,
    /// Sessions connected while memory and read latency were measured.
    pub sessions: usize,
    /// `ok`, or why some figures are missing.
    pub status: String,
    /// Creates per second while loading this step.
    pub load_per_sec: Option<f64>,
    /// Resident memory of the server process, MiB.
    pub rss_mib: Option<f64>,
    /// The newest (complete) snapshot, bytes.
    pub snapshot_bytes: Option<u64>,
    /// The whole data directory on disk, bytes.
    pub data_dir_bytes: Option<u64>,
    /// From the restarted process's start to `ruok` = `imok`, ms.
    pub restart_imok_ms: Option<f64>,
    /// From the restarted process's start to a new session's first read, ms.
    pub restart_read_ms: Option<f64>,
    /// getData latency, median, ms.
    pub read_p50_ms: Option<f64>,
    /// getData latency, 99th percentile, ms.
    pub read_p99_ms: Option<f64>,
    /// Reads in the probe.
    pub reads: u64,
}

impl SizeRow {
    fn new(server: ServerKind, znodes: usize, sessions: usize) -> SizeRow {
        SizeRow {
            server,
            znodes,
            sessions,
            status: "ok".into(),
            load_per_sec: None,
            rss_mib: None,
            snapshot_bytes: None,
            data_dir_bytes: None,
            restart_imok_ms: None,
            restart_read_ms: None,
            read_p50_ms: None,
            read_p99_ms: None,
            reads: 0,
        }
    }

    /// Whether the row has all its figures.
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// The whole section: fresh servers (both running; measured one at a time, alternating which goes first).
pub async fn run(options: &Options) -> Result<Vec<SizeRow>> {
    let mut servers = Vec::new();
    for &kind in &options.servers {
        servers.push(tokio::task::spawn_blocking(move || ServerUnderTest::start(kind)).await??);
    }
    let mut loaded = vec![0usize; servers.len()];
    let mut failed: Vec<Option<usize>> = vec![None; servers.len()];
    let mut targets = options.znodes.clone();
    targets.sort_unstable();
    let mut rows = Vec::new();
    for (step, &target) in targets.iter().enumerate() {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if step % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let server = &mut servers[i];
            let mut row = SizeRow::new(server.kind, target, options.size_sessions);
            if let Some(at) = failed[i] {
                row.status = format!("skipped: failed at {at} znodes");
            } else if let Err(e) = measure_step(options, server, loaded[i], target, &mut row).await {
                row.status = format!("failed: {e:#}");
                failed[i] = Some(target);
            }
            loaded[i] = target;
            progress!(
                "size {target} znodes on {}: {}",
                server.kind.label(),
                describe(&row)
            );
            rows.push(row);
        }
    }
    Ok(rows)
}

fn describe(row: &SizeRow) -> String {
    let f = |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |v| format!("{v:.digits$}"));
    format!(
        "{}; loaded at {} /s, RSS {} MiB, snapshot {} MB, data dir {} MB, restart imok {} ms / first read {} ms, read \
         p50 {} ms p99 {} ms",
        row.status,
        f(row.load_per_sec, 0),
        f(row.rss_mib, 1),
        f(row.snapshot_bytes.map(|b| b as f64 / 1e6), 1),
        f(row.data_dir_bytes.map(|b| b as f64 / 1e6), 1),
        f(row.restart_imok_ms, 0),
        f(row.restart_read_ms, 0),
        f(row.read_p50_ms, 3),
        f(row.read_p99_ms, 3)
    )
}

async fn measure_step(
    options: &Options,
    server: &mut ServerUnderTest,
    from: usize,
    to: usize,
    row: &mut SizeRow,
) -> Result<()> {
    let hosts = server.hosts();
    let label = server.kind.label();
    // Loading, bounded: at least the setup bound, more for big steps (2,000 creates/s at worst).
    let bound = Duration::from_secs_f64(options.setup_timeout_seconds.max((to - from) as f64 / 2000.0));
    let started = Instant::now();
    tokio::time::timeout(bound, load(&hosts, from, to, options.znode_bytes, label))
        .await
        .map_err(|_| anyhow!("loading {} znodes took longer than {bound:?}", to - from))??;
    if to > from {
        row.load_per_sec = Some((to - from) as f64 / started.elapsed().as_secs_f64());
    }
    let what = format!("size {to} on {label}");
    check_open_files(options.size_sessions, &what)?;
    let sessions = tokio::time::timeout(
        options.setup_timeout(),
        connect_many(&hosts, options.size_sessions, &what),
    )
    .await
    .map_err(|_| anyhow!("connecting {} sessions took too long", options.size_sessions))??;
    let probe = read_probe(&sessions, options.readers, to, options.read_seconds).await;
    row.rss_mib = server.pid().and_then(rss_mib);
    close_many(sessions).await;
    let samples = probe?;
    row.reads = samples.len() as u64;
    row.read_p50_ms = quantile_ms(&samples, 0.5);
    row.read_p99_ms = quantile_ms(&samples, 0.99);
    progress!("  {what}: restarting (kill -9, start, first read)");
    let restart = server.restart_timed(&znode(0)).await?;
    row.restart_imok_ms = Some(restart.imok.as_secs_f64() * 1e3);
    row.restart_read_ms = Some(restart.first_read.as_secs_f64() * 1e3);
    row.snapshot_bytes = server.full_snapshot().await?;
    let dir = server.data_dir();
    row.data_dir_bytes = Some(tokio::task::spawn_blocking(move || disk_usage(&dir)).await?);
    Ok(())
}

/// Creates znodes `from..to` (and the parent first), `LOADERS` sessions with `WINDOW` creates in flight each.
async fn load(hosts: &str, from: usize, to: usize, bytes: usize, label: &str) -> Result<()> {
    if to <= from {
        return Ok(());
    }
    let loaders = connect_many(hosts, LOADERS, "loading").await?;
    let result = async {
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        if from == 0 {
            match loaders[0].create(PARENT, b"", &persistent).await {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let data = vec![b'x'; bytes];
        let done = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let reporter = {
            let done = done.clone();
            let label = label.to_string();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    let n = done.load(Ordering::Relaxed);
                    progress!(
                        "  loading {label}: {} of {} znodes ({:.0} /s)",
                        from + n,
                        to,
                        n as f64 / started.elapsed().as_secs_f64()
                    );
                }
            })
        };
        let work = loaders.iter().enumerate().map(|(w, client)| {
            let (data, done, persistent) = (&data, done.clone(), &persistent);
            async move {
                let mine: Vec<usize> = (from..to).filter(|i| i % LOADERS == w).collect();
                for chunk in mine.chunks(WINDOW) {
                    let paths: Vec<String> = chunk.iter().map(|&i| znode(i)).collect();
                    let creates: Vec<_> = paths.iter().map(|p| client.create(p, data, persistent)).collect();
                    for created in futures::future::join_all(creates).await {
                        match created {
                            // A create whose reply a reconnection lost may have happened.
                            Ok(_) | Err(zk::Error::NodeExists) => {}
                            Err(e) => return Err(anyhow::Error::from(e)),
                        }
                    }
                    done.fetch_add(chunk.len(), Ordering::Relaxed);
                }
                anyhow::Ok(())
            }
        });
        let results = futures::future::join_all(work).await;
        reporter.abort();
        results.into_iter().collect::<Result<Vec<()>>>()?;
        anyhow::Ok(())
    }
    .await;
    close_many(loaders).await;
    result
}

/// `readers` of the sessions read random znodes of `0..znodes`, one read at a time each, for `seconds`; the
/// latency of every read.
async fn read_probe(
    sessions: &[zk::Client],
    readers: usize,
    znodes: usize,
    seconds: f64,
) -> Result<Vec<Duration>> {
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    // Spread over the session list, so that they are not all the first ones connected.
    let step = (sessions.len() / readers.max(1)).max(1);
    let work = sessions
        .iter()
        .step_by(step)
        .take(readers)
        .map(|client| async move {
            let mut samples = Vec::new();
            while Instant::now() < end {
                let path = znode(rand::random::<usize>() % znodes.max(1));
                let sent = Instant::now();
                client.get_data(&path).await?;
                samples.push(sent.elapsed());
            }
            anyhow::Ok(samples)
        });
    let mut all = Vec::new();
    for samples in futures::future::join_all(work).await {
        all.extend(samples?);
    }
    Ok(all)
}
