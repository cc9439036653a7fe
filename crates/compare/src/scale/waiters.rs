//! Waiters: N sessions queued on one lock, each looping acquire → release → queue again, so that the queue always
//! holds N. Measured per (server, contender, N):
//!
//! * **hand-off latency** — from a holder's release call to the next holder's acquire returning, p50 and p99 over
//!   `handoffs` hand-offs (fewer if `handoff_seconds` pass first), with the sessions connected straight to the
//!   server;
//! * **per hand-off counts** — watch notifications per release, bytes the server sent to the clients per
//!   acquisition (replies and notifications: a listing of N children is most of it) and requests per acquisition,
//!   in a second, shorter run whose sessions go through the testkit's counting proxy (kept out of the timed run,
//!   whose latency it would inflate).
//!
//! The hand-offs start only once all N are queued — N nodes in the lock directory (for the naive lock, N − 1
//! sessions waiting on their watch), joining in waves of 250, then the server's watch count (`wchs`) at
//! least N − 1 and unchanged for 150 ms, so that every waiter has listed the queue and set its watch: until then
//! the first holder keeps the lock. The last holder keeps it too, so nothing moves while the window closes. A
//! naive-lock holder releases only once the N − 1 others wait on their watch, and after releasing waits until
//! somebody else holds before it tries again, so every release wakes N − 1 waiters and no hand-off is a holder
//! taking its own lock back.
//!
//! The parts: `row.rs` (the contenders and the rows), `counters.rs` (what the counting proxy saw), `in_process.rs`
//! (the contenders that run in this process), `settle.rs` (waiting for the queue to settle, and for a peer's nodes
//! to go); this file runs the section, both runs of each row, and Curator's in its own JVM.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zklock_testkit::Proxy;

use super::servers::ServerUnderTest;
use super::sessions::check_open_files;
use super::{progress, Options};
use crate::peers::{self, Toolchain};

mod counters;
mod in_process;
mod row;
mod settle;

pub use in_process::timed_zklock_run;
pub use row::{Contender, WaitersRow};

use counters::{counters, Counters};
use in_process::in_process;
use settle::{nodes_gone, watches_settled};

/// What one run measured.
#[derive(Debug)]
struct Run {
    samples: Vec<Duration>,
    seconds: f64,
    counted: Counters,
    setup: Duration,
}

/// The whole section: every N, contender and server (the two servers of one (N, contender) one after the other,
/// alternating which goes first).
pub async fn run(options: &Options, servers: &[ServerUnderTest]) -> Result<Vec<WaitersRow>> {
    let tools = if options.contenders.contains(&Contender::Curator) {
        Some(tokio::task::spawn_blocking(Toolchain::prepare).await??)
    } else {
        None
    };
    let mut rows: Vec<WaitersRow> = Vec::new();
    let mut sizes = options.waiters.clone();
    sizes.sort_unstable();
    for (round, &n) in sizes.iter().enumerate() {
        for &contender in &options.contenders {
            let mut order: Vec<&ServerUnderTest> = servers.iter().collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for server in order {
                let failed_before = rows.iter().find(|r| {
                    r.server == server.kind && r.contender == contender && r.status.starts_with("failed")
                });
                let row = if let Some(failed) = failed_before {
                    WaitersRow::empty(
                        server.kind,
                        contender,
                        n,
                        format!("skipped: failed at N = {}", failed.waiters),
                    )
                } else if contender == Contender::Curator && n > options.curator_max {
                    WaitersRow::empty(
                        server.kind,
                        contender,
                        n,
                        format!(
                            "skipped: above --curator-max {} (one JVM thread set per session)",
                            options.curator_max
                        ),
                    )
                } else if let Err(e) = check_open_files(3 * n, &format!("N = {n} through the counting proxy"))
                {
                    WaitersRow::empty(server.kind, contender, n, format!("skipped: {e}"))
                } else {
                    measure(options, tools.as_ref(), server, contender, n).await
                };
                progress!(
                    "waiters N={n} {} on {}: {}",
                    contender.label(),
                    server.kind.label(),
                    describe(&row)
                );
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

fn describe(row: &WaitersRow) -> String {
    if !row.ok() {
        return row.status.clone();
    }
    let f = |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |v| format!("{v:.digits$}"));
    let kinds = |map: &std::collections::BTreeMap<String, f64>| {
        map.iter()
            .map(|(kind, n)| format!("{kind} {n:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{} hand-offs in {:.2} s, p50 {} ms, p99 {} ms, W {} ms (after the hold: {} ms), p50 = {}× W; per hand-off \
         {} notifications ({}), \
         {} bytes, {} requests ({})",
        row.handoffs,
        row.seconds,
        f(row.p50_ms, 3),
        f(row.p99_ms, 3),
        f(row.w_ms, 3),
        f(row.w_idle_ms, 3),
        f(row.p50_over_w(), 2),
        f(row.notifications_per_release, 2),
        kinds(&row.notifications_by_type),
        f(row.bytes_per_acquisition, 0),
        f(row.requests_per_acquisition, 2),
        kinds(&row.requests_by_kind),
    )
}

/// Both runs of one (server, contender, N): timed, then counted through a proxy.
async fn measure(
    options: &Options,
    tools: Option<&Toolchain>,
    server: &ServerUnderTest,
    contender: Contender,
    n: usize,
) -> WaitersRow {
    let w_ms = match super::floor::measure(server, super::floor::DELETES).await {
        Ok(floor) => floor.p50_ms,
        Err(e) => return WaitersRow::empty(server.kind, contender, n, format!("failed (W): {e:#}")),
    };
    let hold = Duration::from_secs_f64(options.hold_ms / 1000.0);
    let w_idle_ms = if hold.is_zero() {
        None
    } else {
        // Fewer: each costs a hold.
        match super::floor::measure_after(server, super::floor::DELETES / 3, hold).await {
            Ok(floor) => floor.p50_ms,
            Err(e) => return WaitersRow::empty(server.kind, contender, n, format!("failed (W idle): {e:#}")),
        }
    };
    let timed = one_run(
        options,
        tools,
        server.addr(),
        &server.hosts(),
        None,
        contender,
        n,
        options.handoffs,
        options.handoff_seconds,
    )
    .await;
    let timed = match timed {
        Ok(run) => run,
        Err(e) => return WaitersRow::empty(server.kind, contender, n, format!("failed: {e:#}")),
    };
    let counted = async {
        let proxy = Proxy::start(server.addr()).await?;
        one_run(
            options,
            tools,
            server.addr(),
            &proxy.connect_string(),
            Some(&proxy),
            contender,
            n,
            options.count_handoffs,
            options.count_seconds,
        )
        .await
    }
    .await;
    let counted = match counted {
        Ok(run) => run,
        Err(e) => {
            return WaitersRow::empty(server.kind, contender, n, format!("failed (counting run): {e:#}"))
        }
    };
    let per = |x: u64| (!counted.samples.is_empty()).then(|| x as f64 / counted.samples.len() as f64);
    WaitersRow {
        server: server.kind,
        contender,
        waiters: n,
        status: if timed.samples.is_empty() {
            "failed: no hand-off within the time bound".into()
        } else {
            "ok".into()
        },
        handoffs: timed.samples.len() as u64,
        seconds: timed.seconds,
        p50_ms: super::measure::quantile_ms(&timed.samples, 0.5),
        p99_ms: super::measure::quantile_ms(&timed.samples, 0.99),
        count_handoffs: counted.samples.len() as u64,
        notifications_per_release: per(counted.counted.notifications),
        bytes_per_acquisition: per(counted.counted.bytes),
        requests_per_acquisition: per(counted.counted.requests),
        requests_by_kind: counted
            .counted
            .by_kind
            .iter()
            .filter_map(|(&kind, &n)| Some((kind.to_string(), per(n)?)))
            .collect(),
        notifications_by_type: counted
            .counted
            .by_type
            .iter()
            .filter_map(|(&kind, &n)| Some((kind.to_string(), per(n)?)))
            .collect(),
        setup_seconds: Some(timed.setup.as_secs_f64()),
        w_ms,
        w_idle_ms,
    }
}

/// One run on a fresh lock path.
#[allow(clippy::too_many_arguments)]
async fn one_run(
    options: &Options,
    tools: Option<&Toolchain>,
    server: SocketAddr,
    hosts: &str,
    proxy: Option<&Proxy>,
    contender: Contender,
    n: usize,
    handoffs: usize,
    seconds: f64,
) -> Result<Run> {
    let dir = zklock_bench::fresh_path("/compare-scale-waiters");
    let max = Duration::from_secs_f64(seconds);
    let run = match contender {
        Contender::Curator => {
            let tools = tools.context("the Curator toolchain was not prepared")?;
            let setup = Instant::now();
            let setup_deadline = setup + options.setup_timeout();
            let (mut started, mut after) = (None, None);
            let settled = watches_settled(server, n, setup_deadline);
            let result = peers::curator_waiters(
                tools,
                hosts,
                &dir,
                n,
                handoffs,
                seconds,
                Duration::from_secs_f64(options.hold_ms / 1000.0),
                settled,
                || started = Some((setup.elapsed(), counters(proxy))),
                || after = Some(counters(proxy)),
            )
            .await?;
            let (setup, before) = started.context("the Curator peer never started its hand-offs")?;
            let after = after.context("the Curator peer never finished its hand-offs")?;
            // Sessions the peer could not close in time expire: wait for their nodes to go before anything else.
            nodes_gone(hosts, &dir, Duration::from_secs(60)).await?;
            Run {
                samples: result.samples,
                seconds: result.seconds,
                counted: after - before,
                setup,
            }
        }
        _ => in_process(options, server, hosts, proxy, contender, &dir, n, handoffs, max).await?,
    };
    // The sessions are closed and their ephemeral nodes gone; the directory itself may remain.
    zklock_bench::remove_tree(hosts, &dir, 1).await?;
    Ok(run)
}
