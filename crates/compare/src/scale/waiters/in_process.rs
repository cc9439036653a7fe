//! The contenders that run in this process — zklock, zookeeper-client and the naive lock: N sessions, one task
//! each, queued in waves, timed from a release to the next acquisition.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use zklock_testkit::Proxy;
use zookeeper_client::{self as zk, Acls, CreateMode, LockOptions, LockPrefix};

use super::counters::counters;
use super::settle::watches_settled;
use super::{Contender, Run};
use crate::naive::NaiveLock;
use crate::scale::servers::ServerUnderTest;
use crate::scale::sessions::{close_many, connect, connect_many};
use crate::scale::Options;

/// Sessions that join the queue at once while it is built.
const QUEUE_WAVE: usize = 250;

/// What the contenders of one in-process run share.
struct Shared {
    /// Set by the holder just before it releases; taken by the next holder.
    released_at: StdMutex<Option<Instant>>,
    samples: StdMutex<Vec<Duration>>,
    target: usize,
    /// Set when the hand-offs may start; until then the first holder keeps the lock.
    go: watch::Sender<bool>,
    deadline: StdMutex<Option<Instant>>,
    /// The last holder keeps the lock and says so.
    done: Notify,
    /// Acquisitions so far (a naive-lock holder that released waits for the next).
    holders: watch::Sender<u64>,
    /// Naive lock: sessions waiting on their watch now.
    watching: AtomicUsize,
    /// Sessions on the lock.
    n: usize,
    /// How long a holder holds (`--hold-ms`).
    hold: Duration,
}

impl Shared {
    /// Called by every new holder; `true` when the run is over and this holder keeps the lock.
    async fn acquired(&self) -> bool {
        let mut go = self.go.subscribe();
        if !*go.borrow_and_update() {
            let _ = go.wait_for(|go| *go).await;
            return false;
        }
        let now = Instant::now();
        self.holders.send_modify(|h| *h += 1);
        let released = self.released_at.lock().expect("not poisoned").take();
        if let Some(at) = released {
            let mut samples = self.samples.lock().expect("not poisoned");
            samples.push(now - at);
            let deadline = self.deadline.lock().expect("not poisoned").unwrap_or(now);
            if samples.len() >= self.target || now >= deadline {
                self.done.notify_one();
                return true;
            }
        }
        false
    }

    /// The holder's work: `--hold-ms`.
    async fn hold(&self) {
        if !self.hold.is_zero() {
            tokio::time::sleep(self.hold).await;
        }
    }

    fn releasing(&self) {
        *self.released_at.lock().expect("not poisoned") = Some(Instant::now());
    }
}

/// zklock, zookeeper-client and the naive lock: N sessions in this process, one task each.
#[allow(clippy::too_many_arguments)]
pub(super) async fn in_process(
    options: &Options,
    server: SocketAddr,
    hosts: &str,
    proxy: Option<&Proxy>,
    contender: Contender,
    dir: &str,
    n: usize,
    handoffs: usize,
    max: Duration,
) -> Result<Run> {
    let setup_started = Instant::now();
    let setup_deadline = setup_started + options.setup_timeout();
    let what = format!("{} N={n}", contender.label());
    let clients = tokio::time::timeout_at(setup_deadline.into(), connect_many(hosts, n, &what))
        .await
        .map_err(|_| {
            anyhow!(
                "connecting {n} sessions took longer than {:?}",
                options.setup_timeout()
            )
        })??;
    let shared = Arc::new(Shared {
        released_at: StdMutex::new(None),
        samples: StdMutex::new(Vec::with_capacity(handoffs)),
        target: handoffs,
        go: watch::Sender::new(false),
        deadline: StdMutex::new(None),
        done: Notify::new(),
        holders: watch::Sender::new(0),
        watching: AtomicUsize::new(0),
        n,
        hold: Duration::from_secs_f64(options.hold_ms / 1000.0),
    });
    let mut tasks = JoinSet::new();
    let result = async {
        let observer = connect(hosts).await?;
        // In waves: every newcomer lists the whole queue, so a thousand arriving at once would keep this one
        // thread decoding listings for seconds, long enough for sessions to miss their pings.
        for (i, client) in clients.iter().enumerate() {
            tasks.spawn(contend(
                contender,
                client.clone(),
                dir.to_string(),
                shared.clone(),
            ));
            let spawned = i + 1;
            if spawned % QUEUE_WAVE == 0 || spawned == n {
                let queued = wait_queued(&observer, contender, dir, spawned, &shared, &mut tasks);
                tokio::time::timeout_at(setup_deadline.into(), queued)
                    .await
                    .map_err(|_| {
                        anyhow!(
                            "queueing {n} sessions took longer than {:?}",
                            options.setup_timeout()
                        )
                    })??;
            }
        }
        drop(observer);
        watches_settled(server, n, setup_deadline).await;
        let setup = setup_started.elapsed();
        let before = counters(proxy);
        let started = Instant::now();
        *shared.deadline.lock().expect("not poisoned") = Some(started + max);
        shared.go.send_replace(true);
        tokio::select! {
            _ = shared.done.notified() => {}
            failed = tasks.join_next() => return Err(task_failure(failed)),
            _ = tokio::time::sleep(max + Duration::from_secs(60)) => {}
        }
        let seconds = started.elapsed().as_secs_f64();
        let after = counters(proxy);
        let samples = shared.samples.lock().expect("not poisoned").clone();
        Ok(Run {
            samples,
            seconds,
            counted: after - before,
            setup,
        })
    }
    .await;
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    close_many(clients).await;
    result
}

fn task_failure(joined: Option<Result<Result<()>, tokio::task::JoinError>>) -> anyhow::Error {
    match joined {
        Some(Ok(Err(e))) => e.context("a contender failed"),
        Some(Err(e)) => anyhow!("a contender task died: {e}"),
        Some(Ok(Ok(()))) => anyhow!("a contender stopped"),
        None => anyhow!("no contender left"),
    }
}

/// Waits until all `n` are queued: `n` nodes in the lock directory (the naive lock: `n − 1` sessions waiting on
/// their watch), failing if a contender fails meanwhile.
async fn wait_queued(
    observer: &zk::Client,
    contender: Contender,
    dir: &str,
    n: usize,
    shared: &Shared,
    tasks: &mut JoinSet<Result<()>>,
) -> Result<()> {
    loop {
        let queued = match contender {
            Contender::Naive => shared.watching.load(Ordering::SeqCst) + 1 >= n,
            _ => match observer.check_stat(dir).await? {
                Some(stat) => stat.num_children as usize >= n,
                None => false,
            },
        };
        if queued {
            return Ok(());
        }
        tokio::select! {
            failed = tasks.join_next() => return Err(task_failure(failed)),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

/// One session's loop: acquire, hand over, queue again.
async fn contend(contender: Contender, client: zk::Client, dir: String, shared: Arc<Shared>) -> Result<()> {
    match contender {
        Contender::Zklock => {
            let mutex = zklock::Mutex::new(&client, &dir)?;
            let session = client.session_id().0;
            loop {
                let guard = mutex.lock().await?;
                tracing::trace!(target: "compare::timeline", session, "acquired");
                if shared.acquired().await {
                    return hold_forever(guard).await;
                }
                shared.hold().await;
                shared.releasing();
                tracing::trace!(target: "compare::timeline", session, "releasing");
                guard.release().await?;
            }
        }
        Contender::ZookeeperClient => {
            let options = LockOptions::new(Acls::anyone_all())
                .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
            loop {
                let lock = client
                    .lock(LockPrefix::new_curator(&dir, "lock-")?, b"", options.clone())
                    .await?;
                if shared.acquired().await {
                    return hold_forever(lock).await;
                }
                shared.hold().await;
                shared.releasing();
                // Its only release: dropping sends the delete in the background.
                drop(lock);
            }
        }
        Contender::Naive => {
            let lock = NaiveLock::new(&client, &format!("{dir}/lock"));
            let mut holders = shared.holders.subscribe();
            loop {
                let guard = lock
                    .lock_observed(|waiting| {
                        if waiting {
                            shared.watching.fetch_add(1, Ordering::SeqCst);
                        } else {
                            shared.watching.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                    .await?;
                if shared.acquired().await {
                    return hold_forever(guard).await;
                }
                let mine = *holders.borrow_and_update();
                // Released only once the N − 1 others wait on their watch, so that the release wakes all of them
                // (released at once, many losers would find the node gone before their watch was set).
                let settled = async {
                    while shared.watching.load(Ordering::SeqCst) + 1 < shared.n {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(10), settled).await;
                shared.hold().await;
                shared.releasing();
                guard.release().await?;
                // Somebody else's turn before ours again, so that every hand-off wakes the herd.
                let _ = tokio::time::timeout(Duration::from_secs(60), holders.wait_for(|h| *h > mine)).await;
            }
        }
        Contender::Curator => bail!("Curator runs in its own JVM"),
    }
}

/// One timed run of zklock's `Mutex` with `n` sessions on `server` (no counting proxy), for the hand-off timeline
/// ([`timeline`](crate::scale::timeline)): the hand-off samples.
pub async fn timed_zklock_run(
    options: &Options,
    server: &ServerUnderTest,
    n: usize,
) -> Result<Vec<Duration>> {
    let dir = zklock_bench::fresh_path("/compare-scale-timeline");
    let run = in_process(
        options,
        server.addr(),
        &server.hosts(),
        None,
        Contender::Zklock,
        &dir,
        n,
        options.handoffs,
        Duration::from_secs_f64(options.handoff_seconds),
    )
    .await?;
    zklock_bench::remove_tree(&server.hosts(), &dir, 1).await?;
    Ok(run.samples)
}

/// The last holder keeps the lock until its task is aborted.
async fn hold_forever<T>(held: T) -> Result<()> {
    std::future::pending::<()>().await;
    drop(held);
    Ok(())
}
