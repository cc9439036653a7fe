//! The embedded server against real ZooKeeper 3.8 standalone, on the same machine, in one run:
//! time from start to serving, the Mutex workloads, saturated mixed operations (throughput and p99), the servers'
//! CPU time per 1,000 operations, and resident memory after the run.
//!
//! ```sh
//! cargo build --release -p zklock-cli && cargo build --release -p zklock-compare
//! target/release/compare-servers [--seconds 5] [--clients 32] [--client-threads 0] [--warmup 2] [--rounds 3]
//!                                [--only zookeeper|embedded] [--auth-flood 100000]
//!                                [--auth-flood-rate PER_SECOND]
//! ```
//! The embedded server runs as its own process (`zklock serve`, found next to this binary or named by `ZKLOCK_BIN`)
//! so that its memory and CPU time are measured alone; both servers fsync every write before replying (ZooKeeper
//! with `forceSync=yes`).
//! ZooKeeper runs with the JVM's default JIT compiler and garbage collector (the testkit's start-up flags for tests,
//! which cap the JIT at C1, are removed; see [`stock_jvm`]).
//!
//! On a small machine the load generator shares the CPU with the server under test, so throughput alone says
//! little: the table also reports each server's CPU time per 1,000 operations (utime + stime from
//! `/proc/<pid>/stat`, sampled when each measured window opens and closes), and the load generator runs on one
//! thread (a current-thread tokio runtime; `--client-threads N` for N worker threads instead) so that the server
//! keeps a core. Before measuring, each
//! server gets `--warmup` seconds of the same workloads (the JVM compiles ZooKeeper's hot paths meanwhile). Each
//! workload runs `--rounds` times per server, alternating which server goes first, and every figure is the median
//! over the rounds, so background load on a shared machine hits both servers alike.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use zklock_bench::{lock, mixed, no_probe, Probe};
use zklock_compare::scale::measure::cpu_seconds;
use zklock_testkit::{four_letter_word, ports::free_port, ZooKeeper};

struct Args {
    seconds: f64,
    clients: usize,
    client_threads: usize,
    warmup: f64,
    rounds: usize,
    only: Option<String>,
    auth_flood: usize,
    auth_flood_rate: Option<f64>,
}

fn args() -> Result<Args> {
    let mut args = Args {
        seconds: 5.0,
        clients: 32,
        client_threads: 0,
        warmup: 2.0,
        rounds: 3,
        only: None,
        auth_flood: 100_000,
        auth_flood_rate: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => args.seconds = it.next().context("--seconds N")?.parse()?,
            "--clients" => args.clients = it.next().context("--clients N")?.parse()?,
            "--client-threads" => args.client_threads = it.next().context("--client-threads N")?.parse()?,
            "--warmup" => args.warmup = it.next().context("--warmup SECONDS")?.parse()?,
            "--rounds" => args.rounds = it.next().context("--rounds N")?.parse()?,
            "--auth-flood" => args.auth_flood = it.next().context("--auth-flood PACKETS")?.parse()?,
            "--auth-flood-rate" => {
                args.auth_flood_rate = Some(it.next().context("--auth-flood-rate PER_SECOND")?.parse()?)
            }
            "--only" => match it.next().as_deref() {
                Some(which @ ("zookeeper" | "embedded")) => args.only = Some(which.to_string()),
                _ => bail!("--only zookeeper|embedded"),
            },
            other => bail!(
                "unknown argument {other} (expected --seconds N, --clients N, --client-threads N, --warmup SECONDS, \
                 --rounds N, --only zookeeper|embedded, --auth-flood PACKETS, --auth-flood-rate PER_SECOND)"
            ),
        }
    }
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    Ok(args)
}

/// The 1-minute load average, to print next to the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Resident set size of a process, from /proc.
fn rss_mib(pid: u32) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .context("VmRSS")?
        .parse()?;
    Ok(kib / 1024.0)
}

struct Embedded {
    child: Child,
    hosts: String,
    _dir: tempfile::TempDir,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_embedded() -> Result<(Embedded, Duration)> {
    let exe = std::env::current_exe()?;
    // ZKLOCK_BIN picks another build of the server, e.g. to compare before and after a change.
    let zklock: PathBuf = std::env::var_os("ZKLOCK_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| exe.with_file_name("zklock"));
    if !zklock.exists() {
        bail!(
            "{} not found: cargo build --release -p zklock-cli first",
            zklock.display()
        );
    }
    let dir = tempfile::tempdir()?;
    let port = free_port()?;
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let child = Command::new(&zklock)
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let embedded = Embedded {
        child,
        hosts: addr.clone(),
        _dir: dir,
    };
    let deadline = started + Duration::from_secs(30);
    loop {
        if let Ok(reply) = four_letter_word(addr.parse()?, "ruok", Duration::from_secs(1)) {
            if reply.trim() == "imok" {
                return Ok((embedded, started.elapsed()));
            }
        }
        if Instant::now() > deadline {
            bail!("the embedded server did not serve within 30 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn ratio(embedded: f64, zookeeper: f64) -> String {
    if embedded.is_nan() || zookeeper.is_nan() {
        "–".into()
    } else {
        format!("{:.2}×", embedded / zookeeper)
    }
}

fn main() -> Result<()> {
    let args = args()?;
    // Set before any testkit call (it reads the variable once) and before any other thread exists.
    let jvm_dir = tempfile::tempdir()?;
    std::env::set_var(zklock_testkit::install::JAVA_ENV, stock_jvm(jvm_dir.path())?);
    // The load generator's runtime: by default one thread (a current-thread runtime, the cheapest per round
    // trip), so that the server under test keeps a core of its own.
    let mut runtime = match args.client_threads {
        0 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(n);
            builder
        }
    };
    runtime.enable_all().build()?.block_on(compare(args))
}

/// The testkit starts ZooKeeper with flags for fast start-up in tests (`-XX:TieredStopAtLevel=1`, which stops the
/// JIT at its first tier, and `-XX:+UseSerialGC`). A benchmark must measure ZooKeeper as it runs in production, with
/// the JVM's default compiler and collector: this writes a `java` wrapper that drops exactly those two flags and
/// returns its path (for `ZKLOCK_TEST_JAVA`).
fn stock_jvm(dir: &std::path::Path) -> Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let java = std::env::var_os(zklock_testkit::install::JAVA_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/java"));
    let wrapper = dir.join("java");
    let script = format!(
        "#!/bin/sh\n\
         for a in \"$@\"; do shift; case \"$a\" in -XX:TieredStopAtLevel=1|-XX:+UseSerialGC) ;; *) set -- \"$@\" \"$a\";; esac; done\n\
         exec '{}' \"$@\"\n",
        java.display()
    );
    std::fs::write(&wrapper, script)?;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    Ok(wrapper)
}

/// One server under test.
struct Target {
    name: &'static str,
    hosts: String,
    pid: u32,
}

/// Samples (server CPU s, load generator CPU s).
fn cpu_probe(server_pid: u32) -> Probe {
    let me = std::process::id();
    Arc::new(move || {
        vec![
            cpu_seconds(server_pid).unwrap_or(f64::NAN),
            cpu_seconds(me).unwrap_or(f64::NAN),
        ]
    })
}

/// A row of the table: label and the two values (NaN = not measured).
type Row = (String, [f64; 2]);

async fn compare(args: Args) -> Result<()> {
    let seconds = Duration::from_secs_f64(args.seconds);
    let load_before = load_average();
    let zk_started = Instant::now();
    // The testkit turns ZooKeeper's fsync off by default to speed tests up; a benchmark compares durable servers.
    let zookeeper =
        tokio::task::spawn_blocking(|| ZooKeeper::builder().config("forceSync", "yes").start()).await??;
    let zk_start = zk_started.elapsed();
    let (embedded, embedded_start) = tokio::task::spawn_blocking(start_embedded).await??;
    let mut targets = vec![
        Target {
            name: "ZooKeeper 3.8",
            hosts: zookeeper.connect_string(),
            pid: zookeeper.pid(0).context("ZooKeeper's pid")?,
        },
        Target {
            name: "embedded",
            hosts: embedded.hosts.clone(),
            pid: embedded.child.id(),
        },
    ];
    print_settings(&args, &load_before);
    if args.warmup > 0.0 {
        warm_up(&args, &targets).await?;
    }
    let mut rows = lock_rows(&args, &targets, seconds).await?;
    rows.extend(mixed_rows(&args, &targets, seconds).await?);
    if args.auth_flood > 0 {
        rows.extend(flood_rows(&args, &targets).await?);
    }
    let rss = [0, 1].map(|i| {
        if args.measured(i) {
            rss_mib(targets[i].pid).unwrap_or(f64::NAN)
        } else {
            f64::NAN
        }
    });
    rows.push(("resident memory after the run (MiB)".into(), rss));
    rows.push((
        "start to serving (ms)".into(),
        [zk_start.as_secs_f64() * 1e3, embedded_start.as_secs_f64() * 1e3],
    ));
    print_table(&rows);
    println!("\nload average {load_before} before, {} after", load_average());
    targets.clear();
    drop(embedded);
    drop(zookeeper);
    Ok(())
}

impl Args {
    /// Whether the server at `i` of the targets (0: ZooKeeper, 1: embedded) is measured (`--only`).
    fn measured(&self, i: usize) -> bool {
        match self.only.as_deref() {
            Some("zookeeper") => i == 0,
            Some("embedded") => i == 1,
            _ => true,
        }
    }

    /// The measured servers of one round, in its order. Rounds alternate which server goes first, and every figure
    /// is the median over the rounds, so a burst of background load hits both servers alike instead of deciding the
    /// ratio.
    fn order(&self, round: usize) -> Vec<usize> {
        let order = if round & 1 == 0 { vec![0, 1] } else { vec![1, 0] };
        order.into_iter().filter(|&i| self.measured(i)).collect()
    }
}

/// The settings line above the table.
fn print_settings(args: &Args, load_before: &str) {
    println!(
        "compare-servers: {:.1}s per measurement, median of {} rounds, {} clients for mixed operations, load \
         generator on {}, {:.1}s warm-up per server; load average {load_before} before",
        args.seconds,
        args.rounds,
        args.clients,
        match args.client_threads {
            0 => "a current-thread tokio runtime".to_string(),
            n => format!("{n} tokio worker thread(s)"),
        },
        args.warmup
    );
}

/// `--warmup` seconds of the same workloads on each measured server, half of them each.
async fn warm_up(args: &Args, targets: &[Target]) -> Result<()> {
    let warmup = Duration::from_secs_f64(args.warmup / 2.0);
    for target in targets
        .iter()
        .enumerate()
        .filter(|(i, _)| args.measured(*i))
        .map(|(_, t)| t)
    {
        lock::measure_with(
            &zklock_bench::Connect::plain(),
            &target.hosts,
            lock::LockImpl::Zklock,
            8,
            warmup,
            no_probe(),
        )
        .await?;
        mixed::run(&target.hosts, args.clients, warmup).await?;
    }
    Ok(())
}

/// The Mutex workloads, uncontended and contended: throughput and CPU per 1,000 acquisitions.
async fn lock_rows(args: &Args, targets: &[Target], seconds: Duration) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    for (label, unit, clients) in [
        ("Mutex uncontended acquire+release /s", "acquisitions", 1),
        ("Mutex contended hand-offs /s (8 clients)", "hand-offs", 8),
    ] {
        let mut runs: [Vec<lock::LockRun>; 2] = Default::default();
        for round in 0..args.rounds {
            for i in args.order(round) {
                let target = &targets[i];
                let probe = cpu_probe(target.pid);
                let run = lock::measure_with(
                    &zklock_bench::Connect::plain(),
                    &target.hosts,
                    lock::LockImpl::Zklock,
                    clients,
                    seconds,
                    probe,
                )
                .await?;
                eprintln!(
                    "  {label} on {} (round {}): {:.0} {run:?}",
                    target.name,
                    round + 1,
                    run.per_sec()
                );
                runs[i].push(run);
            }
        }
        let stat = |f: &dyn Fn(&lock::LockRun) -> f64| runs.each_ref().map(|r| median(r.iter().map(f)));
        rows.push((label.to_string(), stat(&|r| r.per_sec())));
        rows.push((
            format!("↳ server CPU ms per 1,000 {unit}"),
            stat(&|r| per_thousand(r.probe[0], r.count)),
        ));
        rows.push((
            format!("↳ load generator CPU ms per 1,000 {unit}"),
            stat(&|r| per_thousand(r.probe[1], r.count)),
        ));
    }
    Ok(rows)
}

/// Saturated mixed operations: throughput, CPU per 1,000 operations, p50 and p99 latency.
async fn mixed_rows(args: &Args, targets: &[Target], seconds: Duration) -> Result<Vec<Row>> {
    let mut mixed_runs: [Vec<mixed::MixedResult>; 2] = Default::default();
    for round in 0..args.rounds {
        for i in args.order(round) {
            let target = &targets[i];
            let result =
                mixed::run_probed(&target.hosts, args.clients, seconds, cpu_probe(target.pid)).await?;
            eprintln!("  mixed on {} (round {}): {result:?}", target.name, round + 1);
            mixed_runs[i].push(result);
        }
    }
    let field =
        |f: &dyn Fn(&mixed::MixedResult) -> f64| mixed_runs.each_ref().map(|r| median(r.iter().map(f)));
    Ok(vec![
        (
            format!("mixed ops /s ({} clients)", args.clients),
            field(&|r| r.ops_per_sec),
        ),
        (
            "↳ server CPU ms per 1,000 ops".into(),
            field(&|r| per_thousand(r.probe[0], r.ops)),
        ),
        (
            "↳ load generator CPU ms per 1,000 ops".into(),
            field(&|r| per_thousand(r.probe[1], r.ops)),
        ),
        (
            "mixed p50 latency (ms)".into(),
            field(&|r| r.p50.as_secs_f64() * 1e3),
        ),
        (
            "mixed p99 latency (ms)".into(),
            field(&|r| r.p99.as_secs_f64() * 1e3),
        ),
    ])
}

/// The `digest` auth flood (issue 33.19), once per server after the other workloads (it leaves the attacker's
/// sessions behind until they expire): a bystander's `exists` p50 and p99 during the flood, the server's CPU.
async fn flood_rows(args: &Args, targets: &[Target]) -> Result<Vec<Row>> {
    let mut figures = [None, None];
    for i in args.order(0) {
        let target = &targets[i];
        let addr = target.hosts.parse().context("a server's address")?;
        let flood = zklock_compare::flood::auth_flood(
            addr,
            &target.hosts,
            target.pid,
            args.auth_flood,
            args.auth_flood_rate,
        )
        .await?;
        eprintln!("  auth flood on {}: {flood:?}", target.name);
        figures[i] = Some(flood);
    }
    let field =
        |f: &dyn Fn(&zklock_compare::flood::Flood) -> f64| figures.map(|x| x.as_ref().map_or(f64::NAN, f));
    let packets = args.auth_flood;
    let rate = (args.auth_flood_rate).map_or("as fast as answered".to_string(), |r| format!("at most {r}/s"));
    Ok(vec![
        (
            format!("auth flood ({packets} digest auths, {rate}): bystander exists p50 (ms)"),
            field(&|f| f.p50_ms),
        ),
        ("↳ bystander exists p99 (ms)".into(), field(&|f| f.p99_ms)),
        ("↳ seconds the flood took".into(), field(&|f| f.seconds)),
        // The bystander's own requests included: it asks back to back for as long as the flood lasts.
        (
            "↳ server CPU (s), the bystander's requests included".into(),
            field(&|f| f.server_cpu_s),
        ),
        (
            "↳ attacker connections (the server closed the others)".into(),
            field(&|f| f.connections as f64),
        ),
    ])
}

/// The table: one row per figure, both servers and their ratio.
fn print_table(rows: &[Row]) {
    println!("\n| workload | ZooKeeper 3.8 | embedded | embedded / ZooKeeper |\n|---|---:|---:|---:|");
    for (label, [zk, emb]) in rows {
        println!(
            "| {label} | {} | {} | {} |",
            cell(*zk),
            cell(*emb),
            ratio(*emb, *zk)
        );
    }
}

/// The median (mean of the middle two for an even count); NaN when there are no values.
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() & 1 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    }
}

/// Milliseconds of CPU per 1,000 operations.
fn per_thousand(cpu_seconds: f64, ops: u64) -> f64 {
    if ops == 0 {
        f64::NAN
    } else {
        cpu_seconds * 1e3 / (ops as f64 / 1e3)
    }
}

fn cell(value: f64) -> String {
    if value.is_nan() {
        "–".into()
    } else {
        format!("{value:.1}")
    }
}
