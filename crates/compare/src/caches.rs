//! The cache section of `compare-peers` (issue 30): zklock's `Cache::tree`, Curator 5.4's `CuratorCache` and kazoo's
//! `TreeCache` on one tree of `dirs × leaves` nodes, one after the other against the same server. Each cache runs in
//! a process of its own, so that its memory is its own: zklock in `compare-peers __cache` (this binary, run again),
//! Curator in `CuratorCachePeer.java`, kazoo in `kazoo_cache_peer.py` (both in `crates/zklock/tests/peers`); all
//! three speak the same lines (see the Java file).
//!
//! For each: the time from start to "initialized", the nodes held then and `settle` seconds later, the CPU time of
//! the cache's process and of the server meanwhile, and the errors the cache reported; memory (the process's
//! resident memory before the start and after; for Curator also the Java heap used after a full GC); then `writes`
//! sequential `setData`s of one leaf from this process's own session, each timed from its reply (and from its
//! call) to the moment the cache's event for it reaches the consumer — zklock's `Events::next`, Curator's and
//! kazoo's listeners — with `CLOCK_MONOTONIC` stamps taken in both processes. Before each cache, as many writes
//! with no cache running give the bare write round trip.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::FutureExt;
use tokio::io::AsyncBufReadExt;
use tokio::process::Command;
use zklock::CacheEvent;
use zklock_testkit::peers::{self as testkit, LineError, PeerProcess};
use zookeeper_client::{self as zk, Acls, CreateMode};

/// The cached tree.
pub const ROOT: &str = "/tree";

/// The first argument that makes `compare-peers` the zklock cache's process ([`zklock_child`]).
pub const CHILD_MODE: &str = "__cache";

/// A change not seen within this is counted as missed.
const SEEN_WITHIN: Duration = Duration::from_secs(5);

/// Bound on a peer's start and on its answers beyond the waits it is told.
const PEER_TIMEOUT: Duration = Duration::from_secs(180);

/// What the section does.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// Directories under [`ROOT`].
    pub dirs: usize,
    /// Leaves in each directory.
    pub leaves: usize,
    /// Sequential writes whose change latency is measured (and as many for the bare write round trip).
    pub writes: usize,
    /// Seconds between "initialized" and the second count.
    pub settle: f64,
    /// Seconds a cache is given to say "initialized".
    pub init_timeout: f64,
}

impl CacheOptions {
    /// The nodes of the tree: the root, the directories, the leaves.
    pub fn nodes(&self) -> usize {
        1 + self.dirs * (1 + self.leaves)
    }

    /// The leaf the writes change: the middle one.
    fn watched(&self) -> String {
        leaf(self.dirs / 2, self.leaves / 2)
    }
}

fn dir(d: usize) -> String {
    format!("{ROOT}/d{d:03}")
}

fn leaf(d: usize, l: usize) -> String {
    format!("{}/l{l:04}", dir(d))
}

/// The three caches, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contender {
    /// `zklock::Cache::tree`.
    Zklock,
    /// Curator's `CuratorCache`.
    Curator,
    /// kazoo's `TreeCache`.
    Kazoo,
}

impl Contender {
    /// All of them, in the order they run and the table shows them.
    pub const ALL: [Contender; 3] = [Contender::Zklock, Contender::Curator, Contender::Kazoo];

    /// The column's name.
    pub fn name(self) -> &'static str {
        match self {
            Contender::Zklock => "zklock",
            Contender::Curator => "Curator",
            Contender::Kazoo => "kazoo",
        }
    }

    /// The prefix of the values it is sent (12 bytes with the write's number, as the tree's values).
    fn tag(self) -> &'static str {
        match self {
            Contender::Zklock => "zkl",
            Contender::Curator => "cur",
            Contender::Kazoo => "kaz",
        }
    }
}

/// What one cache did.
#[derive(Debug, Clone, Default)]
pub struct CacheRun {
    /// Seconds from the start to "initialized"; `None`: not within `init_timeout`.
    pub prime: Option<f64>,
    /// Nodes held at "initialized" (or when `init_timeout` passed).
    pub nodes_initialized: usize,
    /// Errors the cache reported until then (Curator: its exception handler; kazoo: its fault listener).
    pub errors: u64,
    /// CPU seconds of the cache's process and of the server from the start to "initialized".
    pub prime_cpu: Option<(f64, f64)>,
    /// Nodes held `settle` seconds later.
    pub nodes_later: usize,
    /// Java heap used after a full GC, bytes: before the start, at "initialized", `settle` s later (Curator only).
    pub heap: Option<[i64; 3]>,
    /// Resident memory, bytes, at the same three moments.
    pub rss: [i64; 3],
    /// Per write: its own round trip (call → reply), and reply → the cache's event (`None`: not seen within 5 s);
    /// ms.
    pub writes: Vec<(f64, Option<f64>)>,
    /// The bare write round trips just before this cache started, ms.
    pub bare: Vec<f64>,
}

/// The compiled Curator peer and the Python with kazoo (the compiled classes go with it).
#[derive(Debug)]
pub struct CachePeers {
    java: testkit::CuratorPeer,
    python: PathBuf,
    _classes: tempfile::TempDir,
}

impl CachePeers {
    /// Compiles `CuratorCachePeer.java` and finds a Python that imports kazoo. Blocking (a few seconds of javac).
    pub fn prepare() -> Result<CachePeers> {
        let classes = tempfile::tempdir()?;
        let java = testkit::compile_against_curator(
            &testkit::sources().join("CuratorCachePeer.java"),
            classes.path(),
        )
        .map_err(anyhow::Error::msg)
        .context("the Curator cache peer (apt-get install default-jdk-headless libcurator-recipes-java)")?;
        let python = testkit::kazoo_python()
            .map_err(anyhow::Error::msg)
            .context("the kazoo cache peer (python3 -m pip install kazoo)")?;
        Ok(CachePeers {
            java,
            python,
            _classes: classes,
        })
    }

    fn spawn(&self, who: Contender, hosts: &str, options: &CacheOptions) -> Result<PeerProcess> {
        let mut command = match who {
            Contender::Zklock => {
                let mut command = Command::new(std::env::current_exe()?);
                command.arg(CHILD_MODE);
                command
            }
            Contender::Curator => {
                let mut command = Command::new(&self.java.java);
                command.args(["-Xmx512m", "-cp", &self.java.classpath, "CuratorCachePeer"]);
                command
            }
            Contender::Kazoo => {
                let mut command = Command::new(&self.python);
                command
                    .arg("-u")
                    .arg(testkit::sources().join("kazoo_cache_peer.py"));
                command
            }
        };
        command.args([
            hosts.to_string(),
            ROOT.to_string(),
            options.watched(),
            options.settle.to_string(),
            options.init_timeout.to_string(),
        ]);
        let name = format!("{} cache", who.name());
        PeerProcess::spawn(name.clone(), &mut command, Stdio::inherit())
            .with_context(|| format!("starting {name}"))
    }
}

/// Creates the tree: the root and the directories in one `multi`, the leaves 1,000 to a `multi`; every node's value
/// is 12 bytes (`value-000042`). Returns how long it took.
pub async fn build_tree(client: &zk::Client, options: &CacheOptions) -> Result<Duration> {
    let create = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let start = Instant::now();
    let mut n = 0usize;
    let mut value = || {
        n += 1;
        format!("value-{n:06}")
    };
    let mut multi = client.new_multi_writer();
    multi.add_create(ROOT, value().as_bytes(), &create)?;
    for d in 0..options.dirs {
        multi.add_create(&dir(d), value().as_bytes(), &create)?;
    }
    multi.commit().await?;
    for d in 0..options.dirs {
        for first in (0..options.leaves).step_by(1_000) {
            let mut multi = client.new_multi_writer();
            for l in first..options.leaves.min(first + 1_000) {
                multi.add_create(&leaf(d, l), value().as_bytes(), &create)?;
            }
            multi.commit().await?;
        }
    }
    Ok(start.elapsed())
}

/// `writes` sequential `setData`s of the watched leaf with no cache running: each round trip, ms.
async fn write_round_trips(client: &zk::Client, options: &CacheOptions) -> Result<Vec<f64>> {
    let path = options.watched();
    let mut times = Vec::with_capacity(options.writes);
    for i in 0..options.writes {
        let start = Instant::now();
        client
            .set_data(&path, format!("bare-{i:07}").as_bytes(), None)
            .await?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(times)
}

/// Runs one cache in its process: the bare writes first, then the prime, the counts, the memory, then the writes
/// (from `writer`, a session of this process) and when the cache saw each. `server` is the server's pid.
pub async fn run(
    peers: &CachePeers,
    who: Contender,
    hosts: &str,
    server: Option<u32>,
    writer: &zk::Client,
    options: &CacheOptions,
) -> Result<CacheRun> {
    let bare = write_round_trips(writer, options).await?;
    let mut peer = peers.spawn(who, hosts, options)?;
    expect(&mut peer, "READY", PEER_TIMEOUT).await?;
    let cpu = |pid: Option<u32>| pid.and_then(cpu_seconds);
    let cpu_before = (cpu(Some(peer.pid())), cpu(server));
    peer.send("GO").await?;
    let bound = Duration::from_secs_f64(options.init_timeout) + PEER_TIMEOUT;
    let words = expect(&mut peer, "INITIALIZED", bound).await?;
    let prime_cpu = match (cpu_before, (cpu(Some(peer.pid())), cpu(server))) {
        ((Some(peer0), Some(server0)), (Some(peer1), Some(server1))) => {
            Some((peer1 - peer0, server1 - server0))
        }
        _ => None,
    };
    let prime: f64 = number(&words, 0)?;
    let heap_before: i64 = number(&words, 2)?;
    let mut run = CacheRun {
        prime: (prime >= 0.0).then_some(prime),
        nodes_initialized: number(&words, 1)?,
        errors: number(&words, 6)?,
        prime_cpu,
        rss: [number(&words, 4)?, number(&words, 5)?, 0],
        bare,
        ..CacheRun::default()
    };
    let heap_initialized: i64 = number(&words, 3)?;
    eprintln!(
        "  cache: {} initialized {words:?}, CPU s (cache, server) {prime_cpu:?}",
        who.name()
    );
    let words = expect(
        &mut peer,
        "LATER",
        Duration::from_secs_f64(options.settle) + PEER_TIMEOUT,
    )
    .await?;
    eprintln!("  cache: {} later {words:?}", who.name());
    run.nodes_later = number(&words, 0)?;
    run.rss[2] = number(&words, 2)?;
    if heap_before >= 0 {
        run.heap = Some([heap_before, heap_initialized, number(&words, 1)?]);
    }
    expect(&mut peer, "LISTENING", PEER_TIMEOUT).await?;
    let path = options.watched();
    for i in 0..options.writes {
        let value = format!("{}-{i:08}", who.tag());
        let call = now_ns();
        writer.set_data(&path, value.as_bytes(), None).await?;
        let reply = now_ns();
        let seen = seen(&mut peer, &value).await?;
        let ms = |ns: i64| ns as f64 / 1e6;
        run.writes.push((ms(reply - call), seen.map(|at| ms(at - reply))));
    }
    peer.finish(PEER_TIMEOUT)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", peer.name()))?;
    Ok(run)
}

/// When the peer says it saw `value` (its `CLOCK_MONOTONIC` ns); `None` if not within [`SEEN_WITHIN`].
async fn seen(peer: &mut PeerProcess, value: &str) -> Result<Option<i64>> {
    let deadline = Instant::now() + SEEN_WITHIN;
    loop {
        let line = match peer
            .next_line(deadline.saturating_duration_since(Instant::now()))
            .await
        {
            Ok(line) => line,
            Err(LineError::TimedOut) => return Ok(None),
            Err(e) => bail!("{}: {}", peer.name(), e.describe("a change")),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["CHANGED", data, at] = words[..] {
            if data == value {
                return Ok(Some(at.parse()?));
            }
        }
    }
}

/// The next line, which must start with `word`: the words after it.
async fn expect(peer: &mut PeerProcess, word: &str, within: Duration) -> Result<Vec<String>> {
    let line = peer
        .next_line(within)
        .await
        .map_err(|e| anyhow::anyhow!("{}: {}", peer.name(), e.describe(word)))?;
    let mut words = line.split_whitespace().map(str::to_string);
    if words.next().as_deref() != Some(word) {
        bail!("{} said {line:?} where we expected {word}", peer.name());
    }
    Ok(words.collect())
}

fn number<T: std::str::FromStr>(words: &[String], i: usize) -> Result<T> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .with_context(|| format!("expected a number at position {i} of {words:?}"))
}

/// `CLOCK_MONOTONIC` now, ns: the clock of Java's `System.nanoTime()` and Python's `time.monotonic_ns()` on Linux.
fn now_ns() -> i64 {
    crate::scale::timeline::now_ns()
}

fn cpu_seconds(pid: u32) -> Option<f64> {
    crate::scale::measure::cpu_seconds(pid)
}

/// This process's resident memory (VmRSS), bytes.
fn rss() -> Result<i64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: i64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .context("VmRSS")?
        .parse()?;
    Ok(kib * 1024)
}

fn say(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// `compare-peers __cache HOSTS ROOT WATCH SETTLE_S INIT_TIMEOUT_S`: zklock's cache in a process of its own, the
/// conversation of `CuratorCachePeer.java` (with -1 for the heap fields).
pub async fn zklock_child(args: &[String]) -> Result<()> {
    let [hosts, root, watch, settle, init_timeout] = args else {
        bail!("usage: {CHILD_MODE} HOSTS ROOT WATCH SETTLE_S INIT_TIMEOUT_S");
    };
    let settle = Duration::from_secs_f64(settle.parse()?);
    let init_timeout = Duration::from_secs_f64(init_timeout.parse()?);
    let client = zklock_bench::connect(hosts).await?;
    let rss_before = rss()?;
    say("READY");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let go = stdin.next_line().await?;
    if go.as_deref() != Some("GO") {
        bail!("expected GO, got {go:?}");
    }
    let start = Instant::now();
    let cache = zklock::Cache::tree(&client, root)?.start();
    let seconds = match tokio::time::timeout(init_timeout, cache.initialized()).await {
        Ok(done) => {
            done?;
            start.elapsed().as_secs_f64()
        }
        Err(_) => -1.0,
    };
    let errors = u8::from(cache.ended().is_some());
    say(&format!(
        "INITIALIZED {seconds} {} -1 -1 {rss_before} {} {errors}",
        cache.len(),
        rss()?
    ));
    tokio::time::sleep(settle).await;
    say(&format!("LATER {} -1 {}", cache.len(), rss()?));
    // A new subscriber first gets the content (a `Created` per node) and `Initialized`: skipped here, where
    // nothing changes yet, so that the first write's event does not queue behind them.
    let mut events = cache.events();
    while let Some(Some(event)) = events.next().now_or_never() {
        if event == CacheEvent::Initialized {
            break;
        }
    }
    say("LISTENING");
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(CacheEvent::Changed { new, .. } | CacheEvent::Created(new)) if new.path == *watch => {
                    let at = now_ns();
                    say(&format!("CHANGED {} {at}", String::from_utf8_lossy(&new.data)));
                }
                Some(_) => {}
                None => bail!("the cache stopped: {:?}", cache.ended()),
            },
            line = stdin.next_line() => if line?.is_none() { break },
        }
    }
    drop(cache);
    zklock_bench::close(client).await;
    Ok(())
}

/// The section's table (Markdown) and the targets, on stdout.
pub fn print_report(options: &CacheOptions, runs: &[(Contender, CacheRun)]) {
    let column = |who: Contender| runs.iter().find(|(c, _)| *c == who).map(|(_, run)| run);
    let value =
        |who: Contender, f: &dyn Fn(&CacheRun) -> Option<f64>| column(who).and_then(f).unwrap_or(f64::NAN);
    let mib = |bytes: i64| bytes as f64 / (1024.0 * 1024.0);
    let per_node = |bytes: i64, nodes: usize| {
        if nodes == 0 {
            None
        } else {
            Some(bytes as f64 / nodes as f64)
        }
    };
    let seen = |run: &CacheRun| run.writes.iter().filter_map(|w| w.1).collect::<Vec<f64>>();
    let from_call = |run: &CacheRun| {
        run.writes
            .iter()
            .filter_map(|w| w.1.map(|s| s + w.0))
            .collect::<Vec<f64>>()
    };
    let own = |run: &CacheRun| run.writes.iter().map(|w| w.0).collect::<Vec<f64>>();
    type Metric = Box<dyn Fn(&CacheRun) -> Option<f64>>;
    let rows: Vec<(String, Metric)> = vec![
        (
            "start → initialized, s (lower is better)".into(),
            Box::new(|r| r.prime),
        ),
        (
            format!("nodes held at initialized (of {})", options.nodes()),
            Box::new(|r| Some(r.nodes_initialized as f64)),
        ),
        (
            "↳ ms per 1,000 nodes held (lower is better)".into(),
            Box::new(|r| r.prime.map(|s| s * 1e6 / r.nodes_initialized.max(1) as f64)),
        ),
        (
            "CPU s of the cache's process, start → initialized".into(),
            Box::new(|r| r.prime_cpu.map(|c| c.0)),
        ),
        (
            "CPU s of the server, start → initialized".into(),
            Box::new(|r| r.prime_cpu.map(|c| c.1)),
        ),
        (
            "errors the cache reported, start → initialized".into(),
            Box::new(|r| Some(r.errors as f64)),
        ),
        (
            format!("nodes held {} s later", options.settle),
            Box::new(|r| Some(r.nodes_later as f64)),
        ),
        (
            "resident memory growth at initialized, MiB".into(),
            Box::new(move |r| Some(mib(r.rss[1] - r.rss[0]))),
        ),
        (
            "↳ bytes per node held".into(),
            Box::new(move |r| per_node(r.rss[1] - r.rss[0], r.nodes_initialized)),
        ),
        (
            format!("resident memory growth {} s later, MiB", options.settle),
            Box::new(move |r| Some(mib(r.rss[2] - r.rss[0]))),
        ),
        (
            "Java heap growth (used after full GC) at initialized, MiB".into(),
            Box::new(move |r| r.heap.map(|h| mib(h[1] - h[0]))),
        ),
        (
            "↳ bytes per node held".into(),
            Box::new(move |r| r.heap.and_then(|h| per_node(h[1] - h[0], r.nodes_initialized))),
        ),
        (
            format!("Java heap growth {} s later, MiB", options.settle),
            Box::new(move |r| r.heap.map(|h| mib(h[2] - h[0]))),
        ),
        (
            "change seen, from the write's reply: p50 ms (lower is better)".into(),
            Box::new(move |r| percentile(&seen(r), 0.50)),
        ),
        ("↳ p99 ms".into(), Box::new(move |r| percentile(&seen(r), 0.99))),
        (
            "change seen, from the write's call: p50 ms".into(),
            Box::new(move |r| percentile(&from_call(r), 0.50)),
        ),
        (
            "the writes' own round trip meanwhile: p50 ms".into(),
            Box::new(move |r| percentile(&own(r), 0.50)),
        ),
        (
            "bare write round trip just before (no cache): p50 ms".into(),
            Box::new(|r| percentile(&r.bare, 0.50)),
        ),
        (
            format!(
                "changes not seen within {} s (of {})",
                SEEN_WITHIN.as_secs(),
                options.writes
            ),
            Box::new(|r| Some(r.writes.iter().filter(|w| w.1.is_none()).count() as f64)),
        ),
    ];
    println!(
        "\n| cache, tree of {} nodes | zklock | Curator | kazoo | zklock / Curator | zklock / kazoo |",
        options.nodes()
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, metric) in &rows {
        let values = Contender::ALL.map(|who| value(who, &|r| metric(r)));
        // Counts of errors and misses, and the bare round trip, are not zklock's figures: no ratio.
        let no_ratio =
            label.starts_with("errors") || label.starts_with("changes not seen") || label.starts_with("bare");
        println!(
            "| {label} | {} | {} | {} | {} | {} |",
            cell(values[0]),
            cell(values[1]),
            cell(values[2]),
            ratio(if no_ratio { f64::NAN } else { values[0] }, values[1]),
            ratio(values[0], if no_ratio { f64::NAN } else { values[2] }),
        );
    }
    let bare: Vec<f64> = runs.iter().flat_map(|(_, r)| r.bare.iter().copied()).collect();
    let w50 = percentile(&bare, 0.50).unwrap_or(f64::NAN);
    let w99 = percentile(&bare, 0.99).unwrap_or(f64::NAN);
    println!(
        "\nbare write round trip (setData, no cache running, {} writes before each cache): p50 {w50:.3} ms, p99 {w99:.3} ms",
        options.writes
    );
    let prime = |who| value(who, &|r| r.prime);
    let zklock_per_node = value(Contender::Zklock, &|r| {
        per_node(r.rss[1] - r.rss[0], r.nodes_initialized)
    });
    let curator_per_node = value(Contender::Curator, &|r| {
        r.heap.and_then(|h| per_node(h[1] - h[0], r.nodes_initialized))
    });
    let zklock_p50 = value(Contender::Zklock, &|r| percentile(&seen(r), 0.50));
    let zklock_call_p50 = value(Contender::Zklock, &|r| percentile(&from_call(r), 0.50));
    let zklock_own_p50 = value(Contender::Zklock, &|r| percentile(&own(r), 0.50));
    let verdict = |ours: f64, bound: f64| {
        if ours.is_nan() || bound.is_nan() {
            "cannot tell"
        } else if ours <= bound {
            "met"
        } else {
            "not met"
        }
    };
    let (zp, cp, kp) = (
        prime(Contender::Zklock),
        prime(Contender::Curator),
        prime(Contender::Kazoo),
    );
    println!("\ntargets:");
    println!(
        "- prime ≤ 1/2 of Curator's: {zp:.2} s against {cp:.2} s ({}): {}",
        ratio(zp, cp),
        verdict(zp, cp / 2.0)
    );
    println!(
        "- prime ≤ 1/3 of kazoo's: {zp:.2} s against {kp:.2} s ({}): {}",
        ratio(zp, kp),
        verdict(zp, kp / 3.0)
    );
    println!(
        "- memory per node ≤ 1/2 of Curator's (zklock's resident growth against Curator's heap growth): {zklock_per_node:.0} \
         against {curator_per_node:.0} bytes ({}): {}",
        ratio(zklock_per_node, curator_per_node),
        verdict(zklock_per_node, curator_per_node / 2.0)
    );
    println!(
        "- p50 change latency ≤ write round trip + 0.3 ms: from the reply {zklock_p50:.3} ms against {w50:.3} + 0.3 ms: \
         {}; from the call {zklock_call_p50:.3} ms against the same writes' own {zklock_own_p50:.3} + 0.3 ms: {}",
        verdict(zklock_p50, w50 + 0.3),
        verdict(zklock_call_p50, zklock_own_p50 + 0.3)
    );
}

/// The nearest-rank percentile `q` of `values`; `None` when there are none.
fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn cell(value: f64) -> String {
    if value.is_nan() {
        "–".into()
    } else if value == value.trunc() {
        format!("{value:.0}")
    } else if value.abs() < 10.0 {
        format!("{value:.3}")
    } else {
        format!("{value:.0}")
    }
}

fn ratio(ours: f64, theirs: f64) -> String {
    if ours.is_nan() || theirs.is_nan() || theirs == 0.0 {
        "–".into()
    } else {
        format!("{:.2}×", ours / theirs)
    }
}
