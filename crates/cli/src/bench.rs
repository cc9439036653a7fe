//! `zklock bench`: zklock's Mutex against zookeeper-client's `Client::lock`, side by side on one server in one
//! run, so that the ratio means something even when absolute figures drift between machines. The workloads live
//! in the `zklock-bench` crate, shared with the server comparison.
//!
//! Every round runs every implementation once, starting with a different one each round, so that a burst of
//! background load does not always hit the same contender; the table shows per-implementation medians and the
//! median of the per-round ratios against zookeeper-client.

use std::time::Duration;

use anyhow::Context;
use zklock_bench::lock::{throughput_with, LockImpl};
use zklock_bench::Connect;

use crate::cli::BenchArgs;
use crate::exit;
use crate::zk::Target;

pub async fn bench(args: BenchArgs) -> exit::Result {
    // Credentials and TLS are read before an embedded server starts: a mistake in them ends nothing running.
    let security = crate::zk::Security::from_args(&args.security)?;
    let target = Target::resolve(&args.connect).await?.with_security(security);
    // The workloads connect their own way, with a long timeout: fail fast, saying why, as the other commands do
    // (also on the embedded server bench starts, which has no SASL: `--sasl` there fails here, instead of the
    // workloads running unauthenticated).
    let probe = target.connect().await?;
    crate::zk::close(probe).await;
    let connect = {
        let (connector, secure) = crate::zk::connector(Duration::from_secs(10), &target.security);
        Connect::new(connector, secure)
    };
    let duration = Duration::from_secs_f64(args.duration.max(0.1));
    let rounds = args.rounds.max(1);
    println!(
        "zklock bench on {} {} — {rounds} round(s) of {:.1}s per implementation, {} clients when contended",
        if target.embedded.is_some() {
            "embedded server"
        } else {
            "ZooKeeper"
        },
        target.hosts,
        duration.as_secs_f64(),
        args.clients
    );
    let mut table = Vec::new();
    for (label, clients) in [
        ("uncontended acquire+release /s", 1usize),
        ("contended hand-offs /s", args.clients),
    ] {
        let label = format!(
            "{label} ({clients} client{})",
            if clients == 1 { "" } else { "s" }
        );
        // rates[round][implementation]
        let mut rates = vec![[0.0f64; LockImpl::ALL.len()]; rounds];
        for (round, row) in rates.iter_mut().enumerate() {
            for k in 0..LockImpl::ALL.len() {
                let i = (round + k) % LockImpl::ALL.len();
                let implementation = LockImpl::ALL[i];
                row[i] = throughput_with(&connect, &target.hosts, implementation, clients, duration)
                    .await
                    .with_context(|| format!("{label}: {}", implementation.name()))?;
            }
            let shown: Vec<String> = LockImpl::ALL
                .iter()
                .zip(row.iter())
                .map(|(implementation, rate)| format!("{} {rate:.0}", implementation.name()))
                .collect();
            eprintln!("  {label}, round {}: {}", round + 1, shown.join(", "));
        }
        table.push((label, rates));
    }
    print!("{:<44}", "workload (median of rounds)");
    for implementation in LockImpl::ALL {
        print!(" {:>24}", implementation.name());
    }
    println!();
    for (label, rates) in &table {
        print!("{label:<44}");
        for i in 0..LockImpl::ALL.len() {
            let rate = median(rates.iter().map(|row| row[i]));
            let ratio = median(rates.iter().map(|row| row[i] / row[0]));
            print!(" {:>24}", format!("{rate:.0} ({ratio:.2}×)"));
        }
        println!();
    }
    println!(
        "ratios: median over the rounds of each round's rate / zookeeper-client's rate in the same round"
    );
    target.shutdown().await?;
    Ok(exit::OK)
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
