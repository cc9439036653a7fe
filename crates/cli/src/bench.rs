//! `zklock bench`: zklock's Mutex against zookeeper-client's `Client::lock`, side by side on one server in one
//! run, so that the ratio means something even when absolute figures drift between machines. The workloads live
//! in the `zklock-bench` crate, shared with the server comparison.

use std::time::Duration;

use anyhow::{Context, Result};
use zklock_bench::lock::{throughput, LockImpl};

use crate::cli::BenchArgs;
use crate::zk::Target;

pub async fn bench(args: BenchArgs) -> Result<i32> {
    let target = Target::resolve(&args.connect).await?;
    let duration = Duration::from_secs_f64(args.duration.max(0.1));
    println!(
        "zklock bench on {} {} — {:.1}s per measurement, {} clients when contended",
        if target.embedded.is_some() {
            "embedded server"
        } else {
            "ZooKeeper"
        },
        target.hosts,
        duration.as_secs_f64(),
        args.clients
    );
    print!("{:<44}", "workload");
    for implementation in LockImpl::ALL {
        print!(" {:>24}", implementation.name());
    }
    println!();
    for (label, clients) in [
        ("uncontended acquire+release /s", 1usize),
        ("contended hand-offs /s", args.clients),
    ] {
        let mut rates = Vec::new();
        for implementation in LockImpl::ALL {
            let rate = throughput(&target.hosts, implementation, clients, duration)
                .await
                .with_context(|| format!("{label}: {}", implementation.name()))?;
            rates.push(rate);
        }
        print!(
            "{:<44}",
            format!(
                "{label} ({clients} client{})",
                if clients == 1 { "" } else { "s" }
            )
        );
        for rate in &rates {
            print!(" {:>24}", format!("{rate:.0} ({:.2}×)", rate / rates[0]));
        }
        println!();
    }
    target.shutdown().await?;
    Ok(0)
}
