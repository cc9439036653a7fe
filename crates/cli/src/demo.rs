//! `zklock demo`: the design documents' ten-worker demo, with a summary that checks itself.
//!
//! It cleans up after itself: its lock directory `<--path>/run-<hex>` is removed once the workers are done, and so
//! are `--path` and its parents if the demo made them (they did not exist before) and nothing else is in them
//! now. (On servers with container nodes they would go by themselves a minute later; this makes it at once, and
//! also on servers without.)

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
        return Err(Failure::new(exit::USAGE, "--workers must be at least 1"));
    }
    // Credentials, TLS and ACLs are read before an embedded server starts: a mistake in them ends nothing running.
    let security = zk::Security::from_args(&args.security)?;
    zk::NodeAcls::from_args(&args.security, &args.acl)?;
    let target = Target::resolve(&args.connect).await?.with_security(security);
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
    // Our own session for the look before and the clean-up after.
    let janitor = target
        .connect()
        .await
        .context("connecting to look at the demo's directory")?;
    let made = match missing_dirs(&janitor, &args.path).await {
        Ok(made) => made,
        Err(err) => {
            zk::close(janitor).await;
            return Err(err.into());
        }
    };
    let result = run_workers(&args, &target, &shared, &path).await;
    let cleaned = clean_up(&janitor, &path, &made).await;
    zk::close(janitor).await;
    result?;
    let ok = summarize(&shared, args.workers);
    match cleaned {
        Ok(removed) if !removed.is_empty() => println!("cleaned up: removed {}", removed.join(", ")),
        Ok(_) => {}
        Err(err) => eprintln!("zklock: cleaning up {path}: {err}"),
    }
    target.shutdown().await?;
    Ok(if ok { exit::OK } else { exit::CHECK_FAILED })
}

/// Starts one worker per session and waits for them all.
async fn run_workers(args: &DemoArgs, target: &Target, shared: &Arc<Shared>, path: &str) -> Result<()> {
    let acls = zk::NodeAcls::from_args(&args.security, &args.acl)?;
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
        let (shared, path, hold) = (shared.clone(), path.to_owned(), Duration::from_millis(args.hold));
        let acls = acls.clone();
        tasks.push(tokio::spawn(async move {
            let result = work(worker, &client, &acls, &path, hold, &shared).await;
            zk::close(client).await;
            result
        }));
    }
    for (worker, task) in tasks.into_iter().enumerate() {
        task.await
            .context("worker panicked")?
            .with_context(|| format!("worker {worker}"))?;
    }
    Ok(())
}

/// `dir` and those of its parents that do not exist, deepest first: what the demo's mutex will create.
async fn missing_dirs(client: &zookeeper_client::Client, dir: &str) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    let mut dir = dir.trim_end_matches('/');
    while !dir.is_empty() {
        let found = client
            .check_stat(dir)
            .await
            .with_context(|| format!("looking at {dir}"))?;
        if found.is_some() {
            break;
        }
        missing.push(dir.to_owned());
        dir = &dir[..dir.rfind('/').unwrap_or(0)];
    }
    Ok(missing)
}

/// Removes the run's lock directory, then the directories the demo made (`made`, deepest first) as long as they
/// are empty; returns what it removed. A directory gone already (a container the server deleted) is no error.
async fn clean_up(client: &zookeeper_client::Client, run: &str, made: &[String]) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for dir in std::iter::once(run).chain(made.iter().map(String::as_str)) {
        match client.delete(dir, None).await {
            Ok(()) => removed.push(dir.to_owned()),
            Err(zookeeper_client::Error::NoNode) => {}
            // Somebody else's directories or another demo's run are in it: it stays, and so do its parents.
            Err(zookeeper_client::Error::NotEmpty) => break,
            Err(err) => return Err(err).with_context(|| format!("removing {dir}")),
        }
    }
    Ok(removed)
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
    acls: &zk::NodeAcls,
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
        _ => {}
    });
    let mutex = Mutex::new(
        acls.apply(zklock::Session::new(client)).with_listener(listener),
        path,
    )?
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
