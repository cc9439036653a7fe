//! The re-sync part of `compare-peers` (`--only resync`, issue 30): what it costs zklock's `Cache::tree` of the
//! [`caches`](crate::caches) tree to read it again after a reconnection, in requests and time.
//!
//! After a reconnection on the same ZooKeeper session the cache re-adds its persistent watch and reads the whole
//! subtree again (`getChildren` per node with children, the nodes' data 256 to a `multiRead`); after a new session
//! the same on the new session. It is a full read because zookeeper-client 0.11.2 does not re-send persistent
//! watches with `setWatches2`'s relative zxid, and ZooKeeper 3.8 does not deliver the events of the disconnected
//! time for persistent watches anyway (ZOOKEEPER-4698).
//!
//! The cache runs in this process on a reconnecting `zklock::Session` (10 s session timeout) whose connections go
//! through a [`Proxy`] (on a runtime of its own), which counts the requests it forwards by opcode. Three phases:
//!
//! 1. **Prime**: start → `initialized()`.
//! 2. **Re-sync, same session**: `cut_all()`; as soon as the proxy has forwarded the re-sync's first listing (the
//!    root's `getChildren`, after the new `addWatch`), a marker node is created under the root from another session
//!    (not through the proxy). The listing does not hold it, so the cache learns of it from its watch's event, which
//!    it handles only once the re-sync is done: the time is from the cut to the marker's `Created` event. (A marker
//!    created before the listing would be found by the re-sync itself, whose events come out as it reads.)
//! 3. **Re-sync, new session**: `expire_session` (through the server directly), then a marker the same way; the
//!    time from the expiry's call and from its return to the marker's event.
//!
//! The requests of each phase are the proxy's counts after it minus before it, less the two `getData`s of the
//! marker's event (its parent's and its own).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::FutureExt;
use zklock::{CacheEvent, Session};
use zklock_testkit::Proxy;
use zookeeper_client::{self as zk, Acls, CreateMode};

use crate::caches::{CacheOptions, ROOT};

/// The opcodes counted, with their names: getData, getChildren, getChildren2, multiRead, setWatches, setWatches2,
/// addWatch, exists.
pub const OPCODES: [(i32, &str); 8] = [
    (4, "getData"),
    (8, "getChildren"),
    (12, "getChildren2"),
    (22, "multiRead"),
    (101, "setWatches"),
    (105, "setWatches2"),
    (106, "addWatch"),
    (3, "exists"),
];

/// A phase's end must come within this.
const PHASE_TIMEOUT: Duration = Duration::from_secs(180);

/// One phase: its name, seconds (from the fault, or the start), seconds from the fault's return (new session
/// only), requests by opcode (as [`OPCODES`]), nodes held at its end.
#[derive(Debug, Clone)]
pub struct Phase {
    /// What it is.
    pub name: &'static str,
    /// Seconds from the start (prime) or the fault's call to the end.
    pub seconds: f64,
    /// Seconds from the fault's return to the end (the expiry only: it takes a while itself).
    pub after_fault: Option<f64>,
    /// Requests the proxy forwarded meanwhile, by opcode, in the order of [`OPCODES`].
    pub requests: [u64; OPCODES.len()],
    /// Nodes the cache held at the end.
    pub nodes: usize,
}

fn counts(proxy: &Proxy) -> [u64; OPCODES.len()] {
    OPCODES.map(|(opcode, _)| proxy.requests(opcode))
}

fn minus(after: [u64; OPCODES.len()], before: [u64; OPCODES.len()]) -> [u64; OPCODES.len()] {
    let mut out = after;
    for (o, b) in out.iter_mut().zip(before) {
        *o -= b;
    }
    out
}

/// Waits until the proxy has forwarded more listings (`getChildren`, `getChildren2`) than `before`.
async fn listed(proxy: &Proxy, before: &[u64; OPCODES.len()]) -> Result<()> {
    let lists = |c: &[u64; OPCODES.len()]| c[1] + c[2];
    let wait = async {
        while lists(&counts(proxy)) <= lists(before) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(PHASE_TIMEOUT, wait)
        .await
        .context("no re-sync listing through the proxy")
}

/// The requests of a re-sync phase: `after - before`, less the marker event's two `getData`s.
fn resync_requests(after: [u64; OPCODES.len()], before: [u64; OPCODES.len()]) -> [u64; OPCODES.len()] {
    let mut requests = minus(after, before);
    requests[0] = requests[0].saturating_sub(2);
    requests
}

/// Waits for the cache's `Created` event of `path`.
async fn created(events: &mut zklock::Events, path: &str) -> Result<()> {
    let wait = async {
        loop {
            match events.next().await {
                Some(CacheEvent::Created(node)) if node.path == path => return Ok(()),
                Some(_) => {}
                None => bail!("the cache stopped"),
            }
        }
    };
    tokio::time::timeout(PHASE_TIMEOUT, wait)
        .await
        .with_context(|| format!("no Created event for {path} within {PHASE_TIMEOUT:?}"))?
}

/// Runs the three phases against the tree `options` describes (already built under [`ROOT`] on `upstream`, whose
/// connect string is `hosts`); `writer` is a session of this process that does not go through the proxy.
pub async fn run(
    hosts: &str,
    upstream: std::net::SocketAddr,
    writer: &zk::Client,
    options: &CacheOptions,
) -> Result<Vec<Phase>> {
    // The proxy's tasks on a runtime of their own, so that forwarding does not share the cache's worker thread.
    let proxy_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("resync-proxy")
        .enable_all()
        .build()?;
    let proxy = proxy_runtime.spawn(Proxy::start(upstream)).await??;
    let result = phases(hosts, &proxy, writer, options).await;
    drop(proxy);
    proxy_runtime.shutdown_background();
    result
}

async fn phases(
    hosts: &str,
    proxy: &Proxy,
    writer: &zk::Client,
    options: &CacheOptions,
) -> Result<Vec<Phase>> {
    let connector = zk::Client::connector().with_session_timeout(Duration::from_secs(10));
    let session = Session::reconnecting(connector, &proxy.connect_string()).await?;
    let mut phases = Vec::new();

    let before = counts(proxy);
    let start = Instant::now();
    let cache = zklock::Cache::tree(session.clone(), ROOT)?.start();
    tokio::time::timeout(PHASE_TIMEOUT, cache.initialized())
        .await
        .context("prime through the proxy")??;
    phases.push(Phase {
        name: "prime",
        seconds: start.elapsed().as_secs_f64(),
        after_fault: None,
        requests: minus(counts(proxy), before),
        nodes: cache.len(),
    });
    if cache.len() != options.nodes() {
        bail!("the cache holds {} nodes, not {}", cache.len(), options.nodes());
    }
    // The content first (a `Created` per node, then `Initialized`): skipped.
    let mut events = cache.events();
    while let Some(Some(event)) = events.next().now_or_never() {
        if event == CacheEvent::Initialized {
            break;
        }
    }
    let create = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let marker = |n: usize| format!("{ROOT}/resync-marker-{n}");

    // Same session: every connection cut; the client reconnects at once and resumes its session.
    let session_id = session.client().session_id();
    let before = counts(proxy);
    let start = Instant::now();
    proxy.cut_all();
    listed(proxy, &before).await?;
    writer.create(&marker(1), b"marker", &create).await?;
    created(&mut events, &marker(1)).await?;
    let seconds = start.elapsed().as_secs_f64();
    let requests = resync_requests(counts(proxy), before);
    if session.client().session_id() != session_id {
        bail!("the cut ended the session");
    }
    phases.push(Phase {
        name: "re-sync, same session (connection cut)",
        seconds,
        after_fault: None,
        requests,
        nodes: cache.len(),
    });

    // New session: the session closed on the server (as an expiry), the reconnecting session makes a new one.
    let before = counts(proxy);
    let start = Instant::now();
    zklock_testkit::expire_session(hosts, session.client()).await;
    let expired = Instant::now();
    listed(proxy, &before).await?;
    writer.create(&marker(2), b"marker", &create).await?;
    created(&mut events, &marker(2)).await?;
    let seconds = start.elapsed().as_secs_f64();
    let after_fault = expired.elapsed().as_secs_f64();
    let requests = resync_requests(counts(proxy), before);
    if session.client().session_id() == session_id {
        bail!("the session did not change");
    }
    phases.push(Phase {
        name: "re-sync, new session (expired)",
        seconds,
        after_fault: Some(after_fault),
        requests,
        nodes: cache.len(),
    });

    drop(events);
    drop(cache);
    for n in [1, 2] {
        writer.delete(&marker(n), None).await?;
    }
    let _ = session.close().await;
    Ok(phases)
}

/// The table (Markdown), on stdout: a row per phase.
pub fn print_report(options: &CacheOptions, phases: &[Phase]) {
    println!(
        "\nre-sync of zklock's Cache::tree of {} nodes, through the proxy (requests it forwarded by opcode):",
        options.nodes()
    );
    print!("\n| phase | s | s after the fault returned | nodes held |");
    let shown: Vec<usize> = (0..OPCODES.len())
        .filter(|&i| phases.iter().any(|p| p.requests[i] > 0))
        .collect();
    for &i in &shown {
        print!(" {} |", OPCODES[i].1);
    }
    print!(" requests |\n|---|---:|---:|---:|");
    for _ in &shown {
        print!("---:|");
    }
    println!("---:|");
    for phase in phases {
        let after = phase
            .after_fault
            .map_or_else(|| "–".to_string(), |s| format!("{s:.3}"));
        print!(
            "| {} | {:.3} | {after} | {} |",
            phase.name, phase.seconds, phase.nodes
        );
        for &i in &shown {
            print!(" {} |", phase.requests[i]);
        }
        println!(" {} |", phase.requests.iter().sum::<u64>());
    }
}
