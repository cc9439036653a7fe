//! `zklock demo`: the design documents' ten-worker demo, with a summary that checks itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zklock::{Listener, Mutex, QueueEvent};

use crate::cli::DemoArgs;
use crate::exit::{self, Failure};
use crate::zk::{self, Target};

const NOBODY: usize = usize::MAX;

/// What the summary needs to know about each worker.
#[derive(Debug, Default, Clone)]
struct Record {
    sequence: i64,
    acquired_at: Option<Duration>,
    released_at: Option<Duration>,
    wakeups: usize,
}

struct Shared {
    start: Instant,
    holder: AtomicUsize,
    overlaps: AtomicUsize,
    records: StdMutex<Vec<Record>>,
}

impl Shared {
    fn log(&self, worker: usize, text: impl std::fmt::Display) {
        println!(
            "[{:>8.3}s] worker {worker:>2}: {text}",
            self.start.elapsed().as_secs_f64()
        );
    }
}

pub async fn demo(args: DemoArgs) -> exit::Result {
    if args.workers == 0 {
        return Err(Failure::new(exit::FAILURE, "--workers must be at least 1"));
    }
    let target = Target::resolve(&args.connect).await?;
    let server = if target.embedded.is_some() {
        "embedded server"
    } else {
        "ZooKeeper"
    };
    println!(
        "zklock demo: {} workers contend for {} on {server} {} (each holds {} ms)",
        args.workers, args.path, target.hosts, args.hold
    );
    let shared = Arc::new(Shared {
        start: Instant::now(),
        holder: AtomicUsize::new(NOBODY),
        overlaps: AtomicUsize::new(0),
        records: StdMutex::new(vec![Record::default(); args.workers]),
    });
    let path = format!("{}/run-{:08x}", args.path.trim_end_matches('/'), rand_suffix());
    let mut tasks = Vec::new();
    for worker in 0..args.workers {
        let client = target
            .connect()
            .await
            .with_context(|| format!("worker {worker}: connecting"))?;
        shared.log(
            worker,
            format_args!("connected, session 0x{:x}", client.session_id().0),
        );
        let (shared, path, hold) = (shared.clone(), path.clone(), Duration::from_millis(args.hold));
        tasks.push(tokio::spawn(async move {
            let result = work(worker, &client, &path, hold, &shared).await;
            zk::close(client).await;
            result
        }));
    }
    for (worker, task) in tasks.into_iter().enumerate() {
        task.await
            .context("worker panicked")?
            .with_context(|| format!("worker {worker}"))?;
    }
    let ok = summarize(&shared, args.workers);
    target.shutdown().await?;
    Ok(if ok { exit::OK } else { exit::CHECK_FAILED })
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id()
}

async fn work(
    worker: usize,
    client: &zookeeper_client::Client,
    path: &str,
    hold: Duration,
    shared: &Arc<Shared>,
) -> Result<()> {
    let events = shared.clone();
    let listener = Listener::new(move |event| match event {
        QueueEvent::Created { path } => events.log(worker, format_args!("created {path}")),
        QueueEvent::Waiting { on } => events.log(worker, format_args!("waiting on predecessor {on}")),
        QueueEvent::Woken { by } => {
            events.records.lock().unwrap()[worker].wakeups += 1;
            events.log(worker, format_args!("woken: {by} is gone"));
        }
        QueueEvent::Acquired { .. } => {}
    });
    let mutex = Mutex::new(zklock::Session::new(client).with_listener(listener), path)?
        .with_data(format!("zklock demo worker {worker}"));
    let guard = mutex.lock().await?;
    let acquired_at = shared.start.elapsed();
    if shared.holder.swap(worker, Ordering::SeqCst) != NOBODY {
        shared.overlaps.fetch_add(1, Ordering::SeqCst);
    }
    shared.log(
        worker,
        format_args!(
            "acquired {} (fencing token {})",
            guard.path(),
            guard.fencing_token()
        ),
    );
    tokio::time::sleep(hold).await;
    if shared.holder.swap(NOBODY, Ordering::SeqCst) != worker {
        shared.overlaps.fetch_add(1, Ordering::SeqCst);
    }
    let released_at = shared.start.elapsed();
    let sequence = guard.sequence();
    guard.release().await?;
    shared.log(worker, "released");
    let mut records = shared.records.lock().unwrap();
    records[worker].sequence = sequence;
    records[worker].acquired_at = Some(acquired_at);
    records[worker].released_at = Some(released_at);
    Ok(())
}

/// Prints the self-checked summary; true if every check passed.
fn summarize(shared: &Shared, workers: usize) -> bool {
    let records = shared.records.lock().unwrap().clone();
    let mut by_time: Vec<&Record> = records.iter().collect();
    by_time.sort_by_key(|r| r.acquired_at);
    let fifo = by_time.windows(2).all(|w| w[0].sequence < w[1].sequence);
    let disjoint = by_time.windows(2).all(|w| w[0].released_at <= w[1].acquired_at);
    let overlaps = shared.overlaps.load(Ordering::SeqCst);
    let wakeups: usize = records.iter().map(|r| r.wakeups).sum();
    let max_wakeups = records.iter().map(|r| r.wakeups).max().unwrap_or(0);
    let handoffs = workers.saturating_sub(1);
    let one_per_handoff = wakeups <= handoffs && max_wakeups <= 1;
    let order: Vec<String> = by_time.iter().map(|r| r.sequence.to_string()).collect();
    println!();
    println!(
        "summary ({workers} workers, {:.3}s):",
        shared.start.elapsed().as_secs_f64()
    );
    println!("  acquisition order by node sequence: {}", order.join(" → "));
    println!("  FIFO order:                 {}", verdict(fifo));
    println!(
        "  no overlapping holders:     {}",
        verdict(disjoint && overlaps == 0)
    );
    println!(
        "  one wake-up per hand-off:   {} ({wakeups} wake-ups for {handoffs} hand-offs, at most {max_wakeups} per worker)",
        verdict(one_per_handoff)
    );
    let ok = fifo && disjoint && overlaps == 0 && one_per_handoff;
    println!(
        "  result:                     {}",
        if ok { "PASS" } else { "FAIL" }
    );
    ok
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "VIOLATED"
    }
}
