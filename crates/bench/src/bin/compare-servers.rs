//! The embedded server against real ZooKeeper 3.8 standalone, on the same machine, in one run:
//! time from start to serving, the Mutex workloads, saturated mixed operations (throughput and p99), and resident
//! memory after the run.
//!
//! ```sh
//! cargo build --release -p zklock-cli && cargo build --release -p zklock-bench --features compare
//! target/release/compare-servers [--seconds 5] [--clients 32]
//! ```
//! The embedded server runs as its own process (`zklock serve`, found next to this binary) so that its memory is
//! measured alone; both servers fsync every write before replying.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use zklock_bench::{lock, mixed};
use zklock_testkit::{four_letter_word, ports::free_port, ZooKeeper};

struct Args {
    seconds: f64,
    clients: usize,
}

fn args() -> Result<Args> {
    let mut args = Args { seconds: 5.0, clients: 32 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => args.seconds = it.next().context("--seconds N")?.parse()?,
            "--clients" => args.clients = it.next().context("--clients N")?.parse()?,
            other => bail!("unknown argument {other} (expected --seconds N, --clients N)"),
        }
    }
    Ok(args)
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
    let zklock: PathBuf = exe.with_file_name("zklock");
    if !zklock.exists() {
        bail!("{} not found: cargo build --release -p zklock-cli first", zklock.display());
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
    let embedded = Embedded { child, hosts: addr.clone(), _dir: dir };
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
    format!("{:.2}×", embedded / zookeeper)
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = args()?;
    let seconds = Duration::from_secs_f64(args.seconds);
    let zk_started = Instant::now();
    let zookeeper = tokio::task::spawn_blocking(ZooKeeper::standalone).await??;
    let zk_start = zk_started.elapsed();
    let (embedded, embedded_start) = tokio::task::spawn_blocking(start_embedded).await??;
    let servers = [("ZooKeeper 3.8", zookeeper.connect_string()), ("embedded", embedded.hosts.clone())];
    println!("compare-servers: {:.1}s per measurement, {} clients for mixed operations", args.seconds, args.clients);
    let mut rows: Vec<(String, [f64; 2], bool)> = Vec::new();
    for (label, clients) in [("Mutex uncontended acquire+release /s", 1), ("Mutex contended hand-offs /s (8 clients)", 8)] {
        let mut values = [0.0; 2];
        for (i, (name, hosts)) in servers.iter().enumerate() {
            values[i] = lock::throughput(hosts, lock::LockImpl::Zklock, clients, seconds).await?;
            eprintln!("  {label} on {name}: {:.0}", values[i]);
        }
        rows.push((label.to_string(), values, true));
    }
    let mut mixed_results = Vec::new();
    for (name, hosts) in &servers {
        let result = mixed::run(hosts, args.clients, seconds).await?;
        eprintln!("  mixed on {name}: {result:?}");
        mixed_results.push(result);
    }
    rows.push((
        format!("mixed ops /s ({} clients)", args.clients),
        [mixed_results[0].ops_per_sec, mixed_results[1].ops_per_sec],
        true,
    ));
    rows.push((
        "mixed p50 latency (ms)".into(),
        [mixed_results[0].p50.as_secs_f64() * 1e3, mixed_results[1].p50.as_secs_f64() * 1e3],
        false,
    ));
    rows.push((
        "mixed p99 latency (ms)".into(),
        [mixed_results[0].p99.as_secs_f64() * 1e3, mixed_results[1].p99.as_secs_f64() * 1e3],
        false,
    ));
    let zk_pid = zookeeper.pid(0).context("ZooKeeper's pid")?;
    rows.push(("resident memory after the run (MiB)".into(), [rss_mib(zk_pid)?, rss_mib(embedded.child.id())?], false));
    rows.push((
        "start to serving (ms)".into(),
        [zk_start.as_secs_f64() * 1e3, embedded_start.as_secs_f64() * 1e3],
        false,
    ));
    println!("\n| workload | ZooKeeper 3.8 | embedded | embedded / ZooKeeper |\n|---|---:|---:|---:|");
    for (label, [zk, emb], _higher_is_better) in &rows {
        println!("| {label} | {zk:.1} | {emb:.1} | {} |", ratio(*emb, *zk));
    }
    drop(embedded);
    drop(zookeeper);
    Ok(())
}
