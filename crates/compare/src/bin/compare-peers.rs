//! zklock against its peers — Apache Curator 5.4 (Java), kazoo (Python) and zookeeper-client's `Client::lock`
//! (Rust) — on one real ZooKeeper 3.8 standalone server with fsync on, side by side in one run:
//!
//! 1. Mutex: uncontended acquire+release per second (1 client) and contended hand-offs per second (8 clients).
//! 2. RwLock, read-heavy: 8 clients, each acquisition a read with probability 0.9, else a write; per second.
//!
//!    Throughput figures are the median of `--repeat` runs of `--seconds` each; every repeat runs all
//!    implementations, in reverse order every other time, so background load does not always hit the same one.
//! 3. Leader election failover: the leader departs (closes its session, or resigns) and the time until the next
//!    candidate knows it leads; median over `--rounds` rounds.
//! 4. Double barrier as in the ZooKeeper paper: `--barriers` barriers × `--members` clients, enter + leave.
//! 5. Caches of a whole tree (`/tree`, `--tree-dirs` × `--tree-leaves` leaves): zklock's `Cache::tree`, Curator's
//!    `CuratorCache`, kazoo's `TreeCache`, each in a process of its own: time to "initialized", nodes held, memory
//!    per node, and the latency of `--cache-writes` changes (see `zklock_compare::caches`).
//! 6. Re-sync of zklock's cache of the same tree after a connection cut and after a new session: requests (counted
//!    by a proxy) and time (see `zklock_compare::resync`).
//! 7. Registration and discovery at scale (zklock only): `--services` × `--instances` instances registered on
//!    `--reg-sessions` sessions and discovered, the convergence of a `ServiceCache` over `--updates` updates, and
//!    the requests of one session keeping `--idle-nodes` persistent nodes for `--idle-seconds` (see
//!    `zklock_compare::discovery`).
//!
//! ```sh
//! cargo build --release -p zklock-compare
//! target/release/compare-peers [--seconds 4] [--repeat 2] [--warmup 1] [--rounds 10] [--barriers 200]
//!                              [--members 50] [--client-threads 1]
//!                              [--only locks,failover,barrier,caches,resync,discovery]
//!                              [--tree-dirs 100] [--tree-leaves 1000] [--cache-writes 200] [--cache-settle 10]
//!                              [--cache-init-timeout 180] [--services 200] [--instances 50] [--reg-sessions 10]
//!                              [--updates 200] [--idle-nodes 1000] [--idle-seconds 30]
//! ```
//! Every client has its own session. The peers run as child processes (`crates/zklock/tests/peers`, `bench`
//! modes) and measure inside themselves after their own warm-up; kazoo runs one process per client so that the
//! GIL does not serialise its clients. zklock and zookeeper-client run in this process on `--client-threads`
//! tokio worker threads (default 1, leaving the other core of a small machine to the server).
//!
//! `compare-peers __cache ...` is how the cache section runs zklock's cache in a process of its own.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use zklock_bench::lock::{self, LockImpl};
use zklock_compare::caches::{self, CacheOptions, CachePeers, Contender};
use zklock_compare::discovery::{self, DiscoveryOptions};
use zklock_compare::peers::{self, Departure, LockKind, LockLoad, Toolchain};
use zklock_compare::recipes;
use zklock_compare::resync;
use zklock_testkit::ZooKeeper;

struct Args {
    seconds: f64,
    warmup: f64,
    rounds: usize,
    barriers: usize,
    members: usize,
    client_threads: usize,
    repeat: usize,
    /// The sections to run (`--only`): a subset of [`SECTIONS`].
    only: Vec<String>,
    cache: CacheOptions,
    discovery: DiscoveryOptions,
}

/// The sections, in the order they run.
const SECTIONS: [&str; 6] = ["locks", "failover", "barrier", "caches", "resync", "discovery"];

impl Args {
    fn runs(&self, section: &str) -> bool {
        self.only.iter().any(|s| s == section)
    }
}

fn args() -> Result<Args> {
    let mut args = Args {
        seconds: 4.0,
        warmup: 1.0,
        rounds: 10,
        barriers: 200,
        members: 50,
        client_threads: 1,
        repeat: 2,
        only: SECTIONS.map(String::from).to_vec(),
        cache: CacheOptions {
            dirs: 100,
            leaves: 1_000,
            writes: 200,
            settle: 10.0,
            init_timeout: 180.0,
        },
        discovery: DiscoveryOptions {
            services: 200,
            instances: 50,
            sessions: 10,
            updates: 200,
            idle_nodes: 1_000,
            idle_seconds: 30.0,
        },
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--seconds" => args.seconds = value()?.parse()?,
            "--warmup" => args.warmup = value()?.parse()?,
            "--rounds" => args.rounds = value()?.parse()?,
            "--barriers" => args.barriers = value()?.parse()?,
            "--members" => args.members = value()?.parse()?,
            "--client-threads" => args.client_threads = value()?.parse()?,
            "--repeat" => args.repeat = value()?.parse()?,
            "--only" => args.only = value()?.split(',').map(String::from).collect(),
            "--tree-dirs" => args.cache.dirs = value()?.parse()?,
            "--tree-leaves" => args.cache.leaves = value()?.parse()?,
            "--cache-writes" => args.cache.writes = value()?.parse()?,
            "--cache-settle" => args.cache.settle = value()?.parse()?,
            "--cache-init-timeout" => args.cache.init_timeout = value()?.parse()?,
            "--services" => args.discovery.services = value()?.parse()?,
            "--instances" => args.discovery.instances = value()?.parse()?,
            "--reg-sessions" => args.discovery.sessions = value()?.parse()?,
            "--updates" => args.discovery.updates = value()?.parse()?,
            "--idle-nodes" => args.discovery.idle_nodes = value()?.parse()?,
            "--idle-seconds" => args.discovery.idle_seconds = value()?.parse()?,
            other => bail!(
                "unknown argument {other} (expected --seconds N, --warmup SECONDS, --rounds N, --barriers N, \
                 --members N, --client-threads N, --repeat N, --only {}, --tree-dirs N, --tree-leaves N, \
                 --cache-writes N, --cache-settle SECONDS, --cache-init-timeout SECONDS, --services N, \
                 --instances N, --reg-sessions N, --updates N, --idle-nodes N, --idle-seconds SECONDS)",
                SECTIONS.join(",")
            ),
        }
    }
    if let Some(unknown) = args.only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
        bail!(
            "--only: unknown section {unknown} (sections: {})",
            SECTIONS.join(",")
        );
    }
    if args.client_threads == 0 || args.rounds == 0 || args.members == 0 || args.repeat == 0 {
        bail!("--client-threads, --rounds, --members and --repeat must be at least 1");
    }
    Ok(args)
}

fn main() -> Result<()> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(caches::CHILD_MODE) {
        // zklock's cache in a process of its own, on the runtime the benchmark's clients get by default.
        return tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?
            .block_on(caches::zklock_child(&argv[1..]));
    }
    let args = args()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads)
        .enable_all()
        .build()?
        .block_on(compare(args))
}

/// The columns of the table.
const COLUMNS: [&str; 4] = ["zklock", "Curator", "kazoo", "zookeeper-client"];

/// A row: label and one value per column (NaN: not measured).
type Row = (String, [f64; 4]);

/// A fresh path for one measurement.
fn fresh(kind: &str) -> String {
    zklock_bench::fresh_path(&format!("/compare-peers-{kind}"))
}

async fn compare(args: Args) -> Result<()> {
    let load_before = load_average();
    // The testkit turns ZooKeeper's fsync off by default to speed tests up; a benchmark compares durable work.
    let zookeeper =
        tokio::task::spawn_blocking(|| ZooKeeper::builder().config("forceSync", "yes").start()).await??;
    let hosts = zookeeper.connect_string();
    println!(
        "compare-peers: ZooKeeper 3.8 standalone (forceSync=yes) at {hosts}; sections {}; throughput: median of {} \
         runs of {:.1}s (peers: after {:.1}s warm-up in their own process); {} failover rounds; {} double barriers \
         × {} members; load average {load_before} before",
        args.only.join(","),
        args.repeat,
        args.seconds,
        args.warmup,
        args.rounds,
        args.barriers,
        args.members
    );
    if ["locks", "failover", "barrier"].iter().any(|s| args.runs(s)) {
        let tools = tokio::task::spawn_blocking(Toolchain::prepare).await??;
        // Let the server's JIT compile its hot paths before anything is measured.
        eprintln!("warming the server up");
        lock::throughput(&hosts, LockImpl::Zklock, 8, Duration::from_secs(2)).await?;
        let mut rows = Vec::new();
        if args.runs("locks") {
            rows.extend(lock_rows(&tools, &hosts, &args).await?);
        }
        if args.runs("failover") {
            rows.extend(failover_rows(&tools, &hosts, &args).await?);
        }
        if args.runs("barrier") {
            rows.extend(barrier_rows(&tools, &hosts, &args).await?);
        }
        print_table(&rows);
    }
    if args.runs("caches") || args.runs("resync") {
        let upstream = zookeeper.member_addr(0);
        cache_section(&hosts, upstream, zookeeper.pid(0), &args).await?;
    }
    if args.runs("discovery") {
        let upstream = zookeeper.member_addr(0);
        let run = discovery::run(&hosts, upstream, zookeeper.pid(0), &args.discovery).await?;
        discovery::print_report(&args.discovery, &run);
    }
    println!("\nload average {load_before} before, {} after", load_average());
    drop(zookeeper);
    Ok(())
}

/// The caches: the tree built, the bare write round trip, then each cache in turn (the tree is left in place: the
/// server goes with the run); then the re-sync of zklock's (`upstream`: the server, for the proxy).
async fn cache_section(
    hosts: &str,
    upstream: std::net::SocketAddr,
    server: Option<u32>,
    args: &Args,
) -> Result<()> {
    let options = &args.cache;
    let writer = zklock_bench::connect(hosts).await?;
    let built = caches::build_tree(&writer, options).await?;
    eprintln!(
        "  cache: {} nodes created in {:.1} s",
        options.nodes(),
        built.as_secs_f64()
    );
    // Warms the server's read path (and its JIT) for all three alike: one full read of the tree, not measured.
    {
        let warm = zklock::Cache::tree(&writer, caches::ROOT)?.start();
        warm.initialized().await?;
    }
    if args.runs("caches") {
        let peers = tokio::task::spawn_blocking(CachePeers::prepare).await??;
        let mut runs = Vec::new();
        for who in Contender::ALL {
            let run = caches::run(&peers, who, hosts, server, &writer, options).await?;
            runs.push((who, run));
        }
        println!(
        "\ncaches: the tree {} (1 + {} directories × (1 + {} leaves) = {} nodes, 12-byte values, created in {:.1} s); \
         {} sequential setData of one leaf per cache, from another session",
        caches::ROOT,
        options.dirs,
        options.leaves,
        options.nodes(),
        built.as_secs_f64(),
            options.writes
        );
        caches::print_report(options, &runs);
    }
    if args.runs("resync") {
        let phases = resync::run(hosts, upstream, &writer, options).await?;
        resync::print_report(options, &phases);
    }
    zklock_bench::close(writer).await;
    Ok(())
}

/// The lock throughputs: Mutex uncontended and contended, read-heavy RwLock.
async fn lock_rows(tools: &Toolchain, hosts: &str, args: &Args) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let read_fraction = 0.9;
    let workloads = [
        (
            "Mutex uncontended acquire+release /s (1 client)".to_string(),
            LockKind::Mutex,
            1,
        ),
        (
            "Mutex contended hand-offs /s (8 clients)".to_string(),
            LockKind::Mutex,
            8,
        ),
        (
            format!(
                "RwLock acquisitions /s (8 clients, {:.0} % reads)",
                read_fraction * 100.0
            ),
            LockKind::RwLock { read_fraction },
            8,
        ),
    ];
    for (label, kind, clients) in workloads {
        // Each repeat runs every implementation once; the order reverses from one repeat to the next, so that
        // background load on a shared machine does not always hit the same implementation.
        let mut runs: [Vec<f64>; 4] = Default::default();
        for repeat in 0..args.repeat {
            let mut order = vec![0, 1, 2, 3];
            if !repeat.is_multiple_of(2) {
                order.reverse();
            }
            for column in order {
                let value = lock_run(tools, hosts, args, kind, clients, column).await?;
                eprintln!("  {label}: {} {value:.0}", COLUMNS[column]);
                runs[column].push(value);
            }
        }
        rows.push((label, runs.map(|r| median(&r))));
    }
    Ok(rows)
}

/// Leader election failover, the leader closing its session or resigning: zklock and Curator.
async fn failover_rows(tools: &Toolchain, hosts: &str, args: &Args) -> Result<Vec<Row>> {
    let nan = f64::NAN;
    let mut rows: Vec<Row> = Vec::new();
    for (label, departure) in [
        (
            "Election failover, leader closes its session: median ms (lower is better)",
            Departure::CloseSession,
        ),
        (
            "Election failover, leader resigns: median ms (lower is better)",
            Departure::Resign,
        ),
    ] {
        let zklock = recipes::failover(hosts, &fresh("elect"), args.rounds, departure).await?;
        eprintln!("  {label}: zklock {zklock:?}");
        let curator = peers::curator_failover(tools, hosts, &fresh("elect"), args.rounds, departure).await?;
        eprintln!("  {label}: Curator {curator:?}");
        rows.push((label.into(), [median_ms(&zklock), median_ms(&curator), nan, nan]));
    }
    Ok(rows)
}

/// The double barrier: ms per barrier and barriers per second, zklock and Curator.
async fn barrier_rows(tools: &Toolchain, hosts: &str, args: &Args) -> Result<Vec<Row>> {
    let nan = f64::NAN;
    let (barriers, members) = (args.barriers, args.members);
    let root = fresh("dbarrier");
    let zklock = recipes::double_barrier(hosts, &root, members, barriers).await?;
    eprintln!("  double barrier: zklock {zklock:?}");
    let root = fresh("dbarrier");
    let curator = peers::curator_double_barrier(tools, hosts, &root, members, barriers).await?;
    // A stalled Curator run leaves its participants' sessions to expire; their nodes go with them.
    recipes::remove_tree_deep(hosts, &root).await?;
    eprintln!("  double barrier: Curator {curator:?}");
    let per_barrier = |d: Duration, n: usize| d.as_secs_f64() * 1e3 / n as f64;
    let per_sec = |d: Duration, n: usize| n as f64 / d.as_secs_f64();
    let curator_note = if curator.stalled {
        format!(
            " — Curator stalled after {} barriers, its figures cover those",
            curator.completed
        )
    } else {
        String::new()
    };
    Ok(vec![
        (
            format!("Double barrier ({barriers} × {members} clients, enter+leave): ms per barrier (lower is better){curator_note}"),
            [per_barrier(zklock, barriers), per_barrier(curator.elapsed, curator.completed), nan, nan],
        ),
        (
            format!("Double barrier ({barriers} × {members} clients): barriers /s{curator_note}"),
            [
                per_sec(zklock, barriers),
                per_sec(curator.elapsed, curator.completed),
                nan,
                nan,
            ],
        ),
    ])
}

/// The table: every column, then zklock's ratio to each of the others.
fn print_table(rows: &[Row]) {
    print!("\n| workload |");
    for column in COLUMNS {
        print!(" {column} |");
    }
    for column in &COLUMNS[1..] {
        print!(" zklock / {column} |");
    }
    print!("\n|---|");
    for _ in 0..COLUMNS.len() * 2 - 1 {
        print!("---:|");
    }
    println!();
    for (label, values) in rows {
        print!("| {label} |");
        for value in values {
            print!(" {} |", cell(*value));
        }
        for value in &values[1..] {
            print!(" {} |", ratio(values[0], *value));
        }
        println!();
    }
}

/// One throughput measurement of `COLUMNS[column]` (zookeeper-client has no read/write lock: NaN).
async fn lock_run(
    tools: &Toolchain,
    hosts: &str,
    args: &Args,
    kind: LockKind,
    clients: usize,
    column: usize,
) -> Result<f64> {
    let seconds = Duration::from_secs_f64(args.seconds);
    let path = fresh("lock");
    let load = LockLoad {
        kind,
        clients,
        warmup: args.warmup,
        seconds: args.seconds,
    };
    Ok(match (column, kind) {
        (0, LockKind::Mutex) => lock::throughput(hosts, LockImpl::Zklock, clients, seconds).await?,
        (0, LockKind::RwLock { read_fraction }) => {
            let warmup = Duration::from_secs_f64(args.warmup);
            recipes::rwlock(hosts, clients, warmup, seconds, read_fraction)
                .await?
                .per_sec()
        }
        (1, _) => peers::curator_lock(tools, hosts, &path, load).await?.per_sec(),
        (2, _) => peers::kazoo_lock(tools, hosts, &path, load).await?.per_sec(),
        (3, LockKind::Mutex) => lock::throughput(hosts, LockImpl::ZookeeperClient, clients, seconds).await?,
        _ => f64::NAN,
    })
}

/// The median in milliseconds.
fn median_ms(times: &[Duration]) -> f64 {
    median(&times.iter().map(|t| t.as_secs_f64() * 1e3).collect::<Vec<_>>())
}

/// The median (mean of the middle two for an even count); NaN when there is no value.
fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

fn cell(value: f64) -> String {
    if value.is_nan() {
        "–".into()
    } else if value < 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.0}")
    }
}

fn ratio(ours: f64, theirs: f64) -> String {
    if ours.is_nan() || theirs.is_nan() {
        "–".into()
    } else {
        format!("{:.2}×", ours / theirs)
    }
}

/// The 1-minute load average, printed next to the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
