//! One contender: a separate OS process (so that kill -9 and SIGSTOP are real) that takes the recipe again and
//! again until its deadline and, while it holds, uses the protected resource with its fencing token.

use std::time::Duration;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zklock::{Error, Guard};
use zookeeper_client::{Client, SessionState};

use crate::clock::now_ns;
use crate::history::{Action, Kind};
use crate::register::{Answer, Connection};
use crate::worker_args::WorkerArgs;
use crate::Recipe;

/// The worker's main loop; returns the process exit status.
pub async fn run(args: WorkerArgs) -> i32 {
    let worked = match args.recipe {
        Recipe::Group => crate::group::work(&args).await,
        Recipe::TwoPhaseCommit => crate::two_phase_commit::work(&args).await,
        Recipe::Register => crate::kv::work(&args).await,
        _ => work(&args).await,
    };
    match worked {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("worker {}: {err:#}", args.client);
            1
        }
    }
}

async fn connect(args: &WorkerArgs) -> Result<Client> {
    let timeout = Duration::from_millis(args.session_timeout_ms);
    let connecting = Client::connector()
        .with_session_timeout(timeout)
        .connect(&args.connect);
    tokio::time::timeout(timeout * 2, connecting)
        .await
        .context("connecting timed out")?
        .context("connecting")
}

async fn work(args: &WorkerArgs) -> Result<()> {
    let mut rng = StdRng::seed_from_u64(args.seed ^ args.launch.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut register = Connection::open(&args.register, args.client).await?;
    let timeout = Duration::from_millis(args.session_timeout_ms);
    let mut client: Option<Client> = None;
    let (mut held, mut failed) = (0u64, 0u64);
    let mut item = 0u64;
    let mut round: Option<i64> = None;
    while now_ns() < args.until_ns {
        let zk = match &client {
            Some(c) if !matches!(c.state(), SessionState::Expired | SessionState::Closed) => c.clone(),
            _ => match connect(args).await {
                Ok(c) => {
                    client = Some(c.clone());
                    c
                }
                Err(err) => {
                    eprintln!("worker {}: {err:#}", args.client);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            },
        };
        let work = Duration::from_millis(rng.gen_range(10..60));
        let outcome = match args.recipe {
            Recipe::DoubleBarrier => {
                barrier_round(&zk, args, &mut register, &mut round, timeout * 2, work).await
            }
            Recipe::Queue => {
                item += 1;
                // Item ids: slot, launch and count, unique across the campaign.
                let id = ((args.client as i64) << 48) | ((args.launch as i64 & 0xffff) << 32) | item as i64;
                if rng.gen_bool(0.5) {
                    produce(&zk, args, &mut register, id).await
                } else {
                    consume(&zk, &args.path, &mut register, timeout, work).await
                }
            }
            Recipe::Counter => {
                item += 1;
                let counted = count(&zk, args, &mut register, item_id(args, item), timeout).await;
                tokio::time::sleep(work / 2).await; // a pace, so that contention is not all there is
                counted
            }
            Recipe::PriorityQueue => {
                // Two items per put turn, one per take turn, a third of the turns putting: items of several
                // priorities wait together, so the order is worth judging.
                if rng.gen_bool(1.0 / 3.0) {
                    let mut put = Ok(true);
                    for _ in 0..2 {
                        item += 1;
                        let (id, priority) = (item_id(args, item), rng.gen_range(0..4));
                        put = produce_priority(&zk, args, &mut register, id, priority).await;
                        if put.is_err() {
                            break;
                        }
                    }
                    put
                } else {
                    consume_priority(&zk, &args.path, &mut register, work).await
                }
            }
            _ => lock_round(&zk, args, &mut register, &mut rng, timeout).await,
        };
        match outcome {
            Ok(true) => held += 1,
            Ok(false) => {}
            Err(err) => {
                failed += 1;
                eprintln!("worker {}: {err}", args.client);
                if matches!(err, Error::SessionExpired | Error::Closed) {
                    client = None;
                }
            }
        }
    }
    if let Some(client) = client {
        let mut states = client.state_watcher();
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(3), async {
            while !states.changed().await.is_terminated() {}
        })
        .await;
    }
    eprintln!(
        "worker {}: done, held {held} times, {failed} acquires failed",
        args.client
    );
    Ok(())
}

/// One turn of a lock-like recipe: acquire (a reader or a writer, for the read/write lock), use the resource in
/// one or more critical sections (1–3 for a leader's term), release. `Ok(false)`: not acquired in time.
async fn lock_round(
    zk: &Client,
    args: &WorkerArgs,
    register: &mut Connection,
    rng: &mut StdRng,
    timeout: Duration,
) -> zklock::Result<bool> {
    if args.recipe == Recipe::MultiLock {
        return multi_lock_round(zk, args, register, rng, timeout).await;
    }
    let writer = args.recipe != Recipe::Rwlock || rng.gen_bool(0.4);
    let guard = match acquire(args, zk, writer, timeout * 3).await {
        Ok(guard) => guard,
        Err(Error::Timeout) => return Ok(false),
        Err(err) => return Err(err),
    };
    let kind = match args.recipe {
        Recipe::Semaphore => Kind::Shared,
        Recipe::Rwlock if !writer => Kind::Shared,
        _ => Kind::Exclusive,
    };
    let sections = if args.recipe == Recipe::Election {
        rng.gen_range(1..=3)
    } else {
        1
    };
    for _ in 0..sections {
        let work = Duration::from_millis(rng.gen_range(20..120));
        match section(register, &guard, kind, work).await {
            Ok(true) => {}
            Ok(false) => break,
            Err(err) => {
                eprintln!("chaos: the register failed: {err:#}");
                std::process::exit(2);
            }
        }
    }
    if let Some(reason) = guard.lost_reason() {
        eprintln!("worker {}: guard lost: {reason}", args.client);
    }
    match tokio::time::timeout(timeout, guard.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => eprintln!("worker {}: release: {err}", args.client),
        Err(_) => eprintln!("worker {}: release timed out", args.client),
    }
    Ok(true)
}

/// One turn of the multi-lock workload: both locks, named in a random order (the library must acquire them in its
/// global order, or two contenders deadlock and liveness fails), one critical section fenced with the token of the
/// first lock in that order — every holder of the set holds it — then release.
async fn multi_lock_round(
    zk: &Client,
    args: &WorkerArgs,
    register: &mut Connection,
    rng: &mut StdRng,
    timeout: Duration,
) -> zklock::Result<bool> {
    let (a, b) = (format!("{}/a", args.path), format!("{}/b", args.path));
    let (first, second) = if rng.gen_bool(0.5) { (a, b) } else { (b, a) };
    let multi = zklock::MultiLock::new([
        zklock::Part::Mutex(zklock::Mutex::new(zk, &first)?),
        zklock::Part::Mutex(zklock::Mutex::new(zk, &second)?),
    ])?;
    let held = match multi.lock_timeout(timeout * 3).await {
        Ok(held) => held,
        Err(Error::Timeout) => return Ok(false),
        Err(err) => return Err(err),
    };
    let work = Duration::from_millis(rng.gen_range(20..120));
    if !held.is_lost() {
        if let Err(err) = section(register, &held.guards()[0], Kind::Exclusive, work).await {
            eprintln!("chaos: the register failed: {err:#}");
            std::process::exit(2);
        }
    }
    match tokio::time::timeout(timeout, held.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => eprintln!("worker {}: release: {err}", args.client),
        Err(_) => eprintln!("worker {}: release timed out", args.client),
    }
    Ok(true)
}

async fn acquire(args: &WorkerArgs, zk: &Client, writer: bool, timeout: Duration) -> zklock::Result<Guard> {
    match args.recipe {
        Recipe::Mutex => {
            zklock::Mutex::new(zk, &args.path)?
                .with_kazoo_contenders(args.kazoo_contenders)
                .lock_timeout(timeout)
                .await
        }
        Recipe::Rwlock if writer => zklock::RwLock::new(zk, &args.path)?.write_timeout(timeout).await,
        Recipe::Rwlock => zklock::RwLock::new(zk, &args.path)?.read_timeout(timeout).await,
        Recipe::Semaphore => {
            zklock::Semaphore::new(zk, &args.path, args.leases)?
                .acquire_timeout(timeout)
                .await
        }
        Recipe::Election => {
            zklock::LeaderElection::new(zk, &args.path)?
                .campaign_timeout(timeout)
                .await
        }
        Recipe::Run
        | Recipe::MultiLock
        | Recipe::Queue
        | Recipe::DoubleBarrier
        | Recipe::Counter
        | Recipe::PriorityQueue
        | Recipe::Group
        | Recipe::TwoPhaseCommit
        | Recipe::Register => {
            unreachable!("not a lock workload")
        }
    }
}

/// One critical section. A holder checks its guard before each use of the resource, as a careful user does; the
/// fence catches what that check cannot (a pause between the check and the use). Returns whether it completed.
async fn section(register: &mut Connection, guard: &Guard, kind: Kind, work: Duration) -> Result<bool> {
    let token = guard.fencing_token();
    let first = match kind {
        Kind::Exclusive => Action::Read,
        Kind::Shared => Action::Enter,
    };
    if guard.is_lost() {
        return Ok(false);
    }
    let Answer::Ok(value) = register.op(kind, token, first, 0).await? else {
        return Ok(false);
    };
    tokio::time::sleep(work).await;
    if guard.is_lost() {
        return Ok(false);
    }
    let (last, value) = match kind {
        Kind::Exclusive => (Action::Write, value + 1),
        Kind::Shared => (Action::Leave, 0),
    };
    Ok(register.op(kind, token, last, value).await? != Answer::Rejected)
}

/// Puts item `id`; records it at the register once acknowledged.
async fn produce(zk: &Client, args: &WorkerArgs, register: &mut Connection, id: i64) -> zklock::Result<bool> {
    zklock::Queue::new(zk, &args.path)?
        .put(id.to_string().as_bytes())
        .await?;
    record(register, Action::Put, id).await;
    Ok(true)
}

/// Takes one item with `take_safe`, records it, "processes" it for `work`, completes it and records that.
pub async fn consume(
    zk: &Client,
    path: &str,
    register: &mut Connection,
    timeout: Duration,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::Queue::new(zk, path)?;
    let claimed = match tokio::time::timeout(timeout, queue.take_safe()).await {
        Ok(claimed) => claimed?,
        Err(_) => return Ok(false),
    };
    let id: i64 = std::str::from_utf8(claimed.data())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    record(register, Action::Take, id).await;
    tokio::time::sleep(work).await;
    claimed.complete().await?;
    record(register, Action::Done, id).await;
    Ok(true)
}

/// An id unique across the campaign: slot, launch and count.
fn item_id(args: &WorkerArgs, count: u64) -> i64 {
    ((args.client as i64) << 48) | ((args.launch as i64 & 0xffff) << 32) | count as i64
}

/// One increment of the counter, recorded before it is sent (`add`) and when its outcome is known (`added` with
/// the value it made) or not (`unsure`: it failed or timed out, and may or may not have happened).
async fn count(
    zk: &Client,
    args: &WorkerArgs,
    register: &mut Connection,
    id: i64,
    timeout: Duration,
) -> zklock::Result<bool> {
    let counter = zklock::AtomicLong::new(zk, &args.path)?;
    record_value(register, Action::Add, id, 0).await;
    let increment = async {
        if args.naive {
            // The negative control: read, then write the value plus one, whatever happened in between.
            let value = counter.get().await?;
            counter.set(value + 1).await
        } else {
            counter.increment().await
        }
    };
    match tokio::time::timeout(timeout * 3, increment).await {
        Ok(Ok(changed)) => {
            record_value(register, Action::Added, id, changed.post).await;
            Ok(true)
        }
        Ok(Err(err)) => {
            record_value(register, Action::Unsure, id, 0).await;
            Err(err)
        }
        Err(_) => {
            record_value(register, Action::Unsure, id, 0).await;
            Ok(false)
        }
    }
}

/// Puts item `id` with `priority`; records it (with its priority) once acknowledged.
async fn produce_priority(
    zk: &Client,
    args: &WorkerArgs,
    register: &mut Connection,
    id: i64,
    priority: i32,
) -> zklock::Result<bool> {
    zklock::PriorityQueue::new(zk, &args.path)?
        .put(format!("{id} {priority}").as_bytes(), priority)
        .await?;
    record_value(register, Action::Put, id, i64::from(priority)).await;
    Ok(true)
}

/// Looks once for an item with `try_take_safe` (no cancellation: a claim never outlives the look's record), records
/// the look (`seek`) and its end — the item taken (`take`, with its priority) or `miss` — then "processes" it for
/// `work`, completes it and records that (`done`). Nothing free: waits `work` before the next look.
pub async fn consume_priority(
    zk: &Client,
    path: &str,
    register: &mut Connection,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::PriorityQueue::new(zk, path)?;
    record_value(register, Action::Seek, 0, 0).await;
    let claimed = match queue.try_take_safe().await {
        Ok(Some(claimed)) => claimed,
        Ok(None) => {
            record_value(register, Action::Miss, 0, 0).await;
            tokio::time::sleep(work).await;
            return Ok(false);
        }
        Err(err) => {
            record_value(register, Action::Miss, 0, 1).await;
            return Err(err);
        }
    };
    let (id, priority) = std::str::from_utf8(claimed.data())
        .ok()
        .and_then(|text| text.split_once(' '))
        .and_then(|(id, priority)| Some((id.parse().ok()?, priority.parse().ok()?)))
        .unwrap_or((-1, -1));
    record_value(register, Action::Take, id, priority).await;
    tokio::time::sleep(work).await;
    claimed.complete().await?;
    record_value(register, Action::Done, id, priority).await;
    Ok(true)
}

async fn record_value(register: &mut Connection, action: Action, token: i64, value: i64) {
    if let Err(err) = register.op(Kind::Shared, token, action, value).await {
        eprintln!("chaos: the register failed: {err:#}");
        std::process::exit(2);
    }
}

async fn record(register: &mut Connection, action: Action, id: i64) {
    if let Err(err) = register.op(Kind::Shared, id, action, 0).await {
        eprintln!("chaos: the register failed: {err:#}");
        std::process::exit(2);
    }
}

/// The newest round anybody has started (round directories `r-<n>` under the workload's path), so that a
/// participant that gave up or was restarted joins the others.
async fn newest_round(zk: &Client, path: &str) -> zklock::Result<i64> {
    match zk.list_children(path).await {
        Ok(children) => Ok(children
            .iter()
            .filter_map(|c| c.strip_prefix("r-").and_then(|n| n.parse().ok()))
            .max()
            .unwrap_or(0)),
        Err(zookeeper_client::Error::NoNode) => Ok(0),
        Err(err) => Err(err.into()),
    }
}

/// One round of the double barrier, at `<path>/r-<round>` with `args.leases` participants: arrive, enter, work,
/// leave. A round that times out is given up, and the participant moves to the newest round.
async fn barrier_round(
    zk: &Client,
    args: &WorkerArgs,
    register: &mut Connection,
    round: &mut Option<i64>,
    timeout: Duration,
    work: Duration,
) -> zklock::Result<bool> {
    let current = match *round {
        Some(r) => r,
        None => newest_round(zk, &args.path).await?,
    };
    let launch = args.launch as i64;
    let barrier = zklock::DoubleBarrier::new(zk, &format!("{}/r-{current:08}", args.path), args.leases)?;
    barrier_record(register, Action::Arrive, current, launch).await;
    let participation = match barrier.enter_timeout(timeout).await {
        Ok(p) => p,
        Err(err) => {
            barrier_record(register, Action::Abandon, current, launch).await;
            *round = None; // find the others again
            return if matches!(err, Error::Timeout) {
                Ok(false)
            } else {
                Err(err)
            };
        }
    };
    barrier_record(register, Action::Pass, current, launch).await;
    tokio::time::sleep(work).await;
    let left = participation.leave_timeout(timeout).await;
    barrier_record(register, Action::Left, current, launch).await;
    *round = Some(current + 1);
    match left {
        Ok(()) | Err(Error::Timeout) => Ok(true),
        Err(err) => Err(err),
    }
}

async fn barrier_record(register: &mut Connection, action: Action, round: i64, launch: i64) {
    if let Err(err) = register.op(Kind::Shared, round, action, launch).await {
        eprintln!("chaos: the register failed: {err:#}");
        std::process::exit(2);
    }
}
