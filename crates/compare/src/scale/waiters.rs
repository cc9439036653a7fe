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

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use zklock_testkit::{four_letter_word, opcode, Proxy};
use zookeeper_client::{self as zk, Acls, CreateMode, LockOptions, LockPrefix};

use super::servers::{ServerKind, ServerUnderTest};
use super::sessions::{check_open_files, close_many, connect, connect_many};
use super::{progress, Options};
use crate::naive::NaiveLock;
use crate::peers::{self, Toolchain};

/// A lock implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contender {
    /// `zklock::Mutex`, released with `release().await`.
    Zklock,
    /// Apache Curator 5.4's `InterProcessMutex` (`CuratorPeer.java`, `bench waiters`), one JVM.
    Curator,
    /// zookeeper-client 0.11's `Client::lock` (Curator names), released by dropping it.
    ZookeeperClient,
    /// The design documents' naive lock ([`crate::naive`]): every release wakes every waiter.
    Naive,
}

impl Contender {
    /// Every contender.
    pub const ALL: [Contender; 4] = [
        Contender::Zklock,
        Contender::Curator,
        Contender::ZookeeperClient,
        Contender::Naive,
    ];

    /// The name in tables and charts.
    pub fn label(self) -> &'static str {
        match self {
            Contender::Zklock => "zklock",
            Contender::Curator => "Curator",
            Contender::ZookeeperClient => "zookeeper-client",
            Contender::Naive => "naive lock",
        }
    }

    /// From the command line's spelling.
    pub fn parse(name: &str) -> Result<Contender> {
        Ok(match name {
            "zklock" => Contender::Zklock,
            "curator" => Contender::Curator,
            "zookeeper-client" => Contender::ZookeeperClient,
            "naive" => Contender::Naive,
            other => bail!("--contenders: {other}? (zklock, curator, zookeeper-client, naive)"),
        })
    }
}

/// One row of the waiters section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitersRow {
    /// The server.
    pub server: ServerKind,
    /// The lock.
    pub contender: Contender,
    /// Sessions queued on the lock.
    pub waiters: usize,
    /// `ok`, or why there are no figures (`failed: …`, `skipped: …`).
    pub status: String,
    /// Hand-offs timed.
    pub handoffs: u64,
    /// Length of the timed window, seconds.
    pub seconds: f64,
    /// Hand-off latency, median, ms.
    pub p50_ms: Option<f64>,
    /// Hand-off latency, 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Hand-offs of the counting run.
    pub count_handoffs: u64,
    /// Watch notifications the server sent per release.
    pub notifications_per_release: Option<f64>,
    /// Bytes the server sent to all clients per acquisition.
    pub bytes_per_acquisition: Option<f64>,
    /// Requests (pings excluded) the clients sent per acquisition.
    pub requests_per_acquisition: Option<f64>,
    /// Requests per acquisition by kind (`create`, `getChildren`, …), from the counting run.
    #[serde(default)]
    pub requests_by_kind: std::collections::BTreeMap<String, f64>,
    /// Notifications per release by event type (`NodeDeleted`, `NodeDataChanged`, …), from the counting run.
    #[serde(default)]
    pub notifications_by_type: std::collections::BTreeMap<String, f64>,
    /// Seconds to connect and queue everybody (timed run).
    pub setup_seconds: Option<f64>,
    /// `W` of this server, measured just before this row's timed run: p50 of a sequential `delete` round trip with
    /// zookeeper-client ([`super::floor`]), ms.
    #[serde(default)]
    pub w_ms: Option<f64>,
    /// The same with each delete sent `--hold-ms` after the one before ended ([`super::floor::measure_after`]): what a
    /// delete costs a machine that has been idle as long as a holder holds, ms (`None` when `--hold-ms` is 0).
    #[serde(default)]
    pub w_idle_ms: Option<f64>,
}

impl WaitersRow {
    fn empty(server: ServerKind, contender: Contender, waiters: usize, status: String) -> WaitersRow {
        WaitersRow {
            server,
            contender,
            waiters,
            status,
            handoffs: 0,
            seconds: 0.0,
            p50_ms: None,
            p99_ms: None,
            count_handoffs: 0,
            notifications_per_release: None,
            bytes_per_acquisition: None,
            requests_per_acquisition: None,
            requests_by_kind: Default::default(),
            notifications_by_type: Default::default(),
            setup_seconds: None,
            w_ms: None,
            w_idle_ms: None,
        }
    }

    /// Whether the row has figures.
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }

    /// The hand-off p50 as a multiple of `W`.
    pub fn p50_over_w(&self) -> Option<f64> {
        match (self.p50_ms, self.w_ms) {
            (Some(p50), Some(w)) if w > 0.0 => Some(p50 / w),
            _ => None,
        }
    }
}

/// Counters of the proxy (differences over a window).
#[derive(Debug, Clone, Default)]
struct Counters {
    notifications: u64,
    bytes: u64,
    requests: u64,
    /// Requests by kind (`opcode_name`).
    by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Notifications by event type (`event_name`).
    by_type: std::collections::BTreeMap<&'static str, u64>,
}

/// The request kinds a lock sends, by name (the rest are counted as `other`).
fn opcode_name(op: i32) -> &'static str {
    match op {
        opcode::CREATE | opcode::CREATE2 => "create",
        opcode::DELETE => "delete",
        opcode::EXISTS => "exists",
        opcode::GET_DATA => "getData",
        opcode::GET_CHILDREN | opcode::GET_CHILDREN2 => "getChildren",
        opcode::SYNC => "sync",
        opcode::MULTI => "multi",
        opcode::CHECK_WATCHES | opcode::REMOVE_WATCHES => "removeWatches",
        _ => "other",
    }
}

/// The watch event types a notification carries (`WatcherEvent.type`), by name.
const EVENT_TYPES: &[(i32, &str)] = &[
    (-1, "session"),
    (1, "NodeCreated"),
    (2, "NodeDeleted"),
    (3, "NodeDataChanged"),
    (4, "NodeChildrenChanged"),
];

/// Every request opcode but ping: creates, deletes, reads, watches, multi, sync, closeSession.
const REQUEST_OPCODES: &[i32] = &[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 101, 102, 103, 104, 105, 106, -11,
];

fn counters(proxy: Option<&Proxy>) -> Counters {
    let Some(proxy) = proxy else {
        return Counters::default();
    };
    debug_assert!(!REQUEST_OPCODES.contains(&opcode::PING));
    Counters {
        notifications: proxy.notifications(),
        bytes: proxy.bytes_to_clients(),
        requests: REQUEST_OPCODES.iter().map(|&op| proxy.requests(op)).sum(),
        by_kind: REQUEST_OPCODES.iter().fold(Default::default(), |mut kinds, &op| {
            *kinds.entry(opcode_name(op)).or_default() += proxy.requests(op);
            kinds
        }),
        by_type: EVENT_TYPES
            .iter()
            .map(|&(event, name)| (name, proxy.notifications_of(event)))
            .collect(),
    }
}

/// `after − before` of each kind, the kinds that moved only.
fn difference(
    after: &std::collections::BTreeMap<&'static str, u64>,
    before: &std::collections::BTreeMap<&'static str, u64>,
) -> std::collections::BTreeMap<&'static str, u64> {
    after
        .iter()
        .map(|(&kind, &n)| (kind, n.saturating_sub(before.get(kind).copied().unwrap_or(0))))
        .filter(|&(_, n)| n > 0)
        .collect()
}

impl std::ops::Sub for Counters {
    type Output = Counters;
    fn sub(self, before: Counters) -> Counters {
        Counters {
            notifications: self.notifications.saturating_sub(before.notifications),
            bytes: self.bytes.saturating_sub(before.bytes),
            requests: self.requests.saturating_sub(before.requests),
            by_kind: difference(&self.by_kind, &before.by_kind),
            by_type: difference(&self.by_type, &before.by_type),
        }
    }
}

/// Sessions that join the queue at once while it is built.
const QUEUE_WAVE: usize = 250;

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

/// What the contenders of one in-process run share.
struct Shared {
    /// Set by the holder just before it releases; taken by the next holder.
    released_at: StdMutex<Option<Instant>>,
    samples: StdMutex<Vec<Duration>>,
    target: usize,
    /// Set when the hand-offs may start; until then the first holder keeps the lock.
    go: watch::Sender<bool>,
    deadline: StdMutex<Option<Instant>>,
    /// The last holder keeps the lock and says so.
    done: Notify,
    /// Acquisitions so far (a naive-lock holder that released waits for the next).
    holders: watch::Sender<u64>,
    /// Naive lock: sessions waiting on their watch now.
    watching: AtomicUsize,
    /// Sessions on the lock.
    n: usize,
    /// How long a holder holds (`--hold-ms`).
    hold: Duration,
}

impl Shared {
    /// Called by every new holder; `true` when the run is over and this holder keeps the lock.
    async fn acquired(&self) -> bool {
        let mut go = self.go.subscribe();
        if !*go.borrow_and_update() {
            let _ = go.wait_for(|go| *go).await;
            return false;
        }
        let now = Instant::now();
        self.holders.send_modify(|h| *h += 1);
        let released = self.released_at.lock().expect("not poisoned").take();
        if let Some(at) = released {
            let mut samples = self.samples.lock().expect("not poisoned");
            samples.push(now - at);
            let deadline = self.deadline.lock().expect("not poisoned").unwrap_or(now);
            if samples.len() >= self.target || now >= deadline {
                self.done.notify_one();
                return true;
            }
        }
        false
    }

    /// The holder's work: `--hold-ms`.
    async fn hold(&self) {
        if !self.hold.is_zero() {
            tokio::time::sleep(self.hold).await;
        }
    }

    fn releasing(&self) {
        *self.released_at.lock().expect("not poisoned") = Some(Instant::now());
    }
}

/// zklock, zookeeper-client and the naive lock: N sessions in this process, one task each.
#[allow(clippy::too_many_arguments)]
async fn in_process(
    options: &Options,
    server: SocketAddr,
    hosts: &str,
    proxy: Option<&Proxy>,
    contender: Contender,
    dir: &str,
    n: usize,
    handoffs: usize,
    max: Duration,
) -> Result<Run> {
    let setup_started = Instant::now();
    let setup_deadline = setup_started + options.setup_timeout();
    let what = format!("{} N={n}", contender.label());
    let clients = tokio::time::timeout_at(setup_deadline.into(), connect_many(hosts, n, &what))
        .await
        .map_err(|_| {
            anyhow!(
                "connecting {n} sessions took longer than {:?}",
                options.setup_timeout()
            )
        })??;
    let shared = Arc::new(Shared {
        released_at: StdMutex::new(None),
        samples: StdMutex::new(Vec::with_capacity(handoffs)),
        target: handoffs,
        go: watch::Sender::new(false),
        deadline: StdMutex::new(None),
        done: Notify::new(),
        holders: watch::Sender::new(0),
        watching: AtomicUsize::new(0),
        n,
        hold: Duration::from_secs_f64(options.hold_ms / 1000.0),
    });
    let mut tasks = JoinSet::new();
    let result = async {
        let observer = connect(hosts).await?;
        // In waves: every newcomer lists the whole queue, so a thousand arriving at once would keep this one
        // thread decoding listings for seconds, long enough for sessions to miss their pings.
        for (i, client) in clients.iter().enumerate() {
            tasks.spawn(contend(
                contender,
                client.clone(),
                dir.to_string(),
                shared.clone(),
            ));
            let spawned = i + 1;
            if spawned % QUEUE_WAVE == 0 || spawned == n {
                let queued = wait_queued(&observer, contender, dir, spawned, &shared, &mut tasks);
                tokio::time::timeout_at(setup_deadline.into(), queued)
                    .await
                    .map_err(|_| {
                        anyhow!(
                            "queueing {n} sessions took longer than {:?}",
                            options.setup_timeout()
                        )
                    })??;
            }
        }
        drop(observer);
        watches_settled(server, n, setup_deadline).await;
        let setup = setup_started.elapsed();
        let before = counters(proxy);
        let started = Instant::now();
        *shared.deadline.lock().expect("not poisoned") = Some(started + max);
        shared.go.send_replace(true);
        tokio::select! {
            _ = shared.done.notified() => {}
            failed = tasks.join_next() => return Err(task_failure(failed)),
            _ = tokio::time::sleep(max + Duration::from_secs(60)) => {}
        }
        let seconds = started.elapsed().as_secs_f64();
        let after = counters(proxy);
        let samples = shared.samples.lock().expect("not poisoned").clone();
        Ok(Run {
            samples,
            seconds,
            counted: after - before,
            setup,
        })
    }
    .await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    close_many(clients).await;
    result
}

/// The server's total number of watches (`wchs`: "Total watches:N").
fn total_watches(server: SocketAddr) -> Option<u64> {
    let text = four_letter_word(server, "wchs", Duration::from_secs(5)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Total watches:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits until the queue has settled: the server holds at least `n − 1` watches (one per waiter) and their number
/// has not changed over the last three looks, 50 ms apart — every waiter has listed the queue and set its watch.
/// Asked of the server itself (not through the counting proxy, and not counted). Gives up quietly at `deadline`.
async fn watches_settled(server: SocketAddr, n: usize, deadline: Instant) {
    let (mut last, mut unchanged) = (None, 0);
    while Instant::now() < deadline {
        let now = tokio::task::spawn_blocking(move || total_watches(server))
            .await
            .ok()
            .flatten();
        match now {
            Some(watches) if watches + 1 >= n as u64 && Some(watches) == last => {
                unchanged += 1;
                if unchanged >= 3 {
                    return;
                }
            }
            _ => unchanged = 0,
        }
        last = now;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    progress!("  the queue of {n} did not settle before the set-up bound; measuring anyway");
}

/// Waits (at most `bound`) until `dir` has no children left.
async fn nodes_gone(hosts: &str, dir: &str, bound: Duration) -> Result<()> {
    let observer = connect(hosts).await?;
    let deadline = Instant::now() + bound;
    let result = loop {
        match observer.check_stat(dir).await? {
            Some(stat) if stat.num_children > 0 => {}
            _ => break Ok(()),
        }
        if Instant::now() > deadline {
            break Err(anyhow!(
                "{dir} still has children {bound:?} after the peer exited"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    zklock_bench::close(observer).await;
    result
}

fn task_failure(joined: Option<Result<Result<()>, tokio::task::JoinError>>) -> anyhow::Error {
    match joined {
        Some(Ok(Err(e))) => e.context("a contender failed"),
        Some(Err(e)) => anyhow!("a contender task died: {e}"),
        Some(Ok(Ok(()))) => anyhow!("a contender stopped"),
        None => anyhow!("no contender left"),
    }
}

/// Waits until all `n` are queued: `n` nodes in the lock directory (the naive lock: `n − 1` sessions waiting on
/// their watch), failing if a contender fails meanwhile.
async fn wait_queued(
    observer: &zk::Client,
    contender: Contender,
    dir: &str,
    n: usize,
    shared: &Shared,
    tasks: &mut JoinSet<Result<()>>,
) -> Result<()> {
    loop {
        let queued = match contender {
            Contender::Naive => shared.watching.load(Ordering::SeqCst) + 1 >= n,
            _ => match observer.check_stat(dir).await? {
                Some(stat) => stat.num_children as usize >= n,
                None => false,
            },
        };
        if queued {
            return Ok(());
        }
        tokio::select! {
            failed = tasks.join_next() => return Err(task_failure(failed)),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// One session's loop: acquire, hand over, queue again.
async fn contend(contender: Contender, client: zk::Client, dir: String, shared: Arc<Shared>) -> Result<()> {
    match contender {
        Contender::Zklock => {
            let mutex = zklock::Mutex::new(&client, &dir)?;
            let session = client.session_id().0;
            loop {
                let guard = mutex.lock().await?;
                tracing::trace!(target: "compare::timeline", session, "acquired");
                if shared.acquired().await {
                    return hold_forever(guard).await;
                }
                shared.hold().await;
                shared.releasing();
                tracing::trace!(target: "compare::timeline", session, "releasing");
                guard.release().await?;
            }
        }
        Contender::ZookeeperClient => {
            let options = LockOptions::new(Acls::anyone_all())
                .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
            loop {
                let lock = client
                    .lock(LockPrefix::new_curator(&dir, "lock-")?, b"", options.clone())
                    .await?;
                if shared.acquired().await {
                    return hold_forever(lock).await;
                }
                shared.hold().await;
                shared.releasing();
                // Its only release: dropping sends the delete in the background.
                drop(lock);
            }
        }
        Contender::Naive => {
            let lock = NaiveLock::new(&client, &format!("{dir}/lock"));
            let mut holders = shared.holders.subscribe();
            loop {
                let guard = lock
                    .lock_observed(|waiting| {
                        if waiting {
                            shared.watching.fetch_add(1, Ordering::SeqCst);
                        } else {
                            shared.watching.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                    .await?;
                if shared.acquired().await {
                    return hold_forever(guard).await;
                }
                let mine = *holders.borrow_and_update();
                // Released only once the N − 1 others wait on their watch, so that the release wakes all of them
                // (released at once, many losers would find the node gone before their watch was set).
                let settled = async {
                    while shared.watching.load(Ordering::SeqCst) + 1 < shared.n {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(10), settled).await;
                shared.hold().await;
                shared.releasing();
                guard.release().await?;
                // Somebody else's turn before ours again, so that every hand-off wakes the herd.
                let _ = tokio::time::timeout(Duration::from_secs(60), holders.wait_for(|h| *h > mine)).await;
            }
        }
        Contender::Curator => bail!("Curator runs in its own JVM"),
    }
}

/// One timed run of zklock's `Mutex` with `n` sessions on `server` (no counting proxy), for the hand-off timeline
/// ([`super::timeline`]): the hand-off samples.
pub async fn timed_zklock_run(
    options: &Options,
    server: &ServerUnderTest,
    n: usize,
) -> Result<Vec<Duration>> {
    let dir = zklock_bench::fresh_path("/compare-scale-timeline");
    let run = in_process(
        options,
        server.addr(),
        &server.hosts(),
        None,
        Contender::Zklock,
        &dir,
        n,
        options.handoffs,
        Duration::from_secs_f64(options.handoff_seconds),
    )
    .await?;
    zklock_bench::remove_tree(&server.hosts(), &dir, 1).await?;
    Ok(run.samples)
}

/// The last holder keeps the lock until its task is aborted.
async fn hold_forever<T>(held: T) -> Result<()> {
    std::future::pending::<()>().await;
    drop(held);
    Ok(())
}
