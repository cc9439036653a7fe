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
//!
//! ```sh
//! cargo build --release -p zklock-compare
//! target/release/compare-peers [--seconds 4] [--repeat 2] [--warmup 1] [--rounds 10] [--barriers 200]
//!                              [--members 50] [--client-threads 1]
//! ```
//! Every client has its own session. The peers run as child processes (`crates/zklock/tests/peers`, `bench`
//! modes) and measure inside themselves after their own warm-up; kazoo runs one process per client so that the
//! GIL does not serialise its clients. zklock and zookeeper-client run in this process on `--client-threads`
//! tokio worker threads (default 1, leaving the other core of a small machine to the server).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use zklock_bench::lock::{self, LockImpl};
use zklock_compare::peers::{self, Departure, LockKind, LockLoad, Toolchain};
use zklock_compare::recipes;
use zklock_testkit::ZooKeeper;

struct Args {
    seconds: f64,
    warmup: f64,
    rounds: usize,
    barriers: usize,
    members: usize,
    client_threads: usize,
    repeat: usize,
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
            other => bail!(
                "unknown argument {other} (expected --seconds N, --warmup SECONDS, --rounds N, --barriers N, \
                 --members N, --client-threads N, --repeat N)"
            ),
        }
    }
    if args.client_threads == 0 || args.rounds == 0 || args.members == 0 || args.repeat == 0 {
        bail!("--client-threads, --rounds, --members and --repeat must be at least 1");
    }
    Ok(args)
}

fn main() -> Result<()> {
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
    let tools = tokio::task::spawn_blocking(Toolchain::prepare).await??;
    println!(
        "compare-peers: ZooKeeper 3.8 standalone (forceSync=yes) at {hosts}; throughput: median of {} runs of \
         {:.1}s (peers: after {:.1}s warm-up in their own process); {} failover rounds; {} double barriers × {} \
         members; load average {load_before} before",
        args.repeat, args.seconds, args.warmup, args.rounds, args.barriers, args.members
    );
    // Let the server's JIT compile its hot paths before anything is measured.
    eprintln!("warming the server up");
    lock::throughput(&hosts, LockImpl::Zklock, 8, Duration::from_secs(2)).await?;

    let mut rows = lock_rows(&tools, &hosts, &args).await?;
    rows.extend(failover_rows(&tools, &hosts, &args).await?);
    rows.extend(barrier_rows(&tools, &hosts, &args).await?);
    print_table(&rows);
    println!("\nload average {load_before} before, {} after", load_average());
    drop(tools);
    drop(zookeeper);
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
