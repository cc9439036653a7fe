//! The workloads: what a contender process (`zklock-chaos __worker --recipe …`) does, one file each behind one
//! trait, [`Workload`] — what the process does in one operation and what it records — and one driver, [`run()`],
//! that keeps a session, calls the workload's operations until the deadline and closes the session.
//!
//! The lock-like workloads (`mutex`, `rwlock`, `semaphore`, `election`, `multi-lock`, and `partitioner` per item)
//! fence a read-modify-write of the register with the guard's token; `queue`, `priority-queue`, `double-barrier`, `counter`, `group` and
//! `two-phase-commit` and `persistent-node` record at the register what they did for their checkers; `register` (`kv.rs`) and `cache`
//! (`cache/`) record in history files of their own. `run.rs` is the command that `zklock run` runs in the `run` workload (its contender
//! processes are `zklock run`, not workers), `foreign.rs` the kazoo and Curator contenders of `--mix`, and
//! `shared.rs` what several workloads use: the session, the records, the fenced critical section.

pub mod cache;
mod counter;
mod double_barrier;
mod election;
pub mod foreign;
pub mod group;
pub mod kv;
mod multi_lock;
mod mutex;
mod partitioner;
pub mod persistent_node;
pub mod priority_queue;
pub mod queue;
pub mod run;
mod rwlock;
mod semaphore;
pub(crate) mod shared;
pub mod two_phase_commit;

use std::time::Duration;

use anyhow::Result;
use rand::rngs::StdRng;
use rand::Rng;
use zookeeper_client::Client;

use crate::clock::now_ns;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;
use crate::Recipe;

/// What one operation came to (`Err`: it failed; the driver logs it, and makes a new session if this one ended).
pub enum Turn {
    /// It happened: a hold, an item put or taken, an increment, a round, a transaction, an answered request.
    Done,
    /// Nothing happened in time (not acquired, nothing to take, no answer).
    Idle,
}

impl From<bool> for Turn {
    fn from(done: bool) -> Turn {
        if done {
            Turn::Done
        } else {
            Turn::Idle
        }
    }
}

/// What every operation of a contender process has at hand.
pub struct Contender<'a> {
    /// The command line.
    pub args: &'a WorkerArgs,
    /// The process's choices (seeded by the campaign's seed, the slot's seed and the launch).
    pub rng: StdRng,
    /// The session timeout.
    pub timeout: Duration,
    register: Option<Connection>,
    /// The ids made so far.
    ids: u64,
    /// Under `--reconnecting`: the process's one reconnecting session, which the recipes are built on.
    pub session: Option<zklock::Session>,
}

impl Contender<'_> {
    /// The pace of a turn: 10–60 ms of "work". Drawn first in every turn, so that a seed makes the same choices
    /// it always has (the lock-like workloads draw it and time their sections apart).
    pub fn pace(&mut self) -> Duration {
        Duration::from_millis(self.rng.gen_range(10..60))
    }

    /// A new id, unique across the campaign (an item, an increment, a member, a transaction): slot, launch and
    /// count.
    pub fn next_id(&mut self) -> i64 {
        self.ids += 1;
        ((self.args.client as i64) << 48) | ((self.args.launch as i64 & 0xffff) << 32) | self.ids as i64
    }

    /// The connection to the register, where the workload records what it does (opened before the first operation
    /// when [`Workload::RECORDS`]).
    pub fn register(&mut self) -> &mut Connection {
        self.register
            .as_mut()
            .expect("only a workload that records at the register asks for it")
    }
}

/// What a contender process does: one operation at a time, on a live session, recording what it did.
pub trait Workload: Default {
    /// Whether it records at the register (all but `register` and `cache`, which keep history files of their own).
    const RECORDS: bool = true;

    /// Before the first operation (`Err`: the process cannot work).
    fn open(&mut self, _args: &WorkerArgs) -> Result<()> {
        Ok(())
    }

    /// One operation on `zk`'s session, recorded as it goes.
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn>;

    /// Until when (`CLOCK_MONOTONIC` nanoseconds) the process begins operations.
    fn until(&self, args: &WorkerArgs) -> u64 {
        args.until_ns
    }

    /// A new session begins.
    fn connected(&mut self) {}

    /// After the last operation, before the session is closed.
    async fn finish(&mut self, _cx: &mut Contender<'_>) {}
}

/// The one dispatch: the worker's main loop for its `--recipe`; returns the process exit status.
pub async fn run(args: WorkerArgs) -> i32 {
    let worked = match args.recipe {
        Recipe::Mutex => drive::<mutex::Mutex>(&args).await,
        Recipe::Rwlock => drive::<rwlock::RwLock>(&args).await,
        Recipe::Semaphore => drive::<semaphore::Semaphore>(&args).await,
        Recipe::Election => drive::<election::Election>(&args).await,
        Recipe::MultiLock => drive::<multi_lock::MultiLock>(&args).await,
        Recipe::Queue => drive::<queue::Queue>(&args).await,
        Recipe::PriorityQueue => drive::<priority_queue::PriorityQueue>(&args).await,
        Recipe::DoubleBarrier => drive::<double_barrier::DoubleBarrier>(&args).await,
        Recipe::Counter => drive::<counter::Counter>(&args).await,
        Recipe::Group => drive::<group::Group>(&args).await,
        Recipe::Partitioner => drive::<partitioner::Partitioner>(&args).await,
        Recipe::PersistentNode => drive::<persistent_node::PersistentNode>(&args).await,
        // A coordinator and a participant side by side, each with its own session and register connection.
        Recipe::TwoPhaseCommit => {
            let (coordinated, participated) = tokio::join!(
                drive::<two_phase_commit::Coordinator>(&args),
                drive::<two_phase_commit::Participant>(&args)
            );
            coordinated.and(participated)
        }
        Recipe::Register => drive::<kv::Register>(&args).await,
        Recipe::Cache => drive::<cache::CacheWorkload>(&args).await,
        Recipe::Run => Err(anyhow::anyhow!(
            "the run workload's contenders are `zklock run` processes, not workers"
        )),
    };
    match worked {
        Ok(()) => 0,
        Err(err) => {
            eprintln!("worker {}: {err:#}", args.client);
            1
        }
    }
}

/// Runs workload `W` in this process: operations until its deadline, each on a live session (a new one once the
/// last has ended), then closes the session.
async fn drive<W: Workload>(args: &WorkerArgs) -> Result<()> {
    let mut work = W::default();
    work.open(args)?;
    let register = if W::RECORDS {
        Some(Connection::open(&args.register, args.client).await?)
    } else {
        None
    };
    let timeout = Duration::from_millis(args.session_timeout_ms);
    let mut cx = Contender {
        args,
        rng: shared::seeded_rng(args),
        timeout,
        register,
        ids: 0,
        session: if args.reconnecting {
            Some(shared::reconnecting(args).await?)
        } else {
            None
        },
    };
    let mut session = shared::Session::new(args);
    let (mut done, mut idle, mut failed) = (0u64, 0u64, 0u64);
    // Under `--reconnecting`: the ZooKeeper sessions the process went through.
    let mut sessions: Vec<i64> = Vec::new();
    while now_ns() < work.until(args) {
        let (zk, new) = match &cx.session {
            Some(reconnecting) => {
                let zk = reconnecting.client().clone();
                let id = zk.session_id().0;
                let new = sessions.last() != Some(&id);
                if new {
                    sessions.push(id);
                }
                (zk, new)
            }
            None => {
                let Some(got) = session.get().await else {
                    continue;
                };
                got
            }
        };
        if new {
            work.connected();
        }
        match work.step(&mut cx, &zk).await {
            Ok(Turn::Done) => done += 1,
            Ok(Turn::Idle) => idle += 1,
            Err(err) => {
                failed += 1;
                eprintln!("worker {}: {err}", args.client);
                if err.is_terminal() {
                    match &cx.session {
                        // The next ZooKeeper session, made by the reconnecting session itself.
                        Some(reconnecting) => {
                            if tokio::time::timeout(timeout * 3, reconnecting.ready())
                                .await
                                .is_err()
                            {
                                eprintln!("worker {}: no new session within three timeouts", args.client);
                            }
                        }
                        None => session.ended(),
                    }
                }
            }
        }
    }
    work.finish(&mut cx).await;
    match cx.session.take() {
        Some(reconnecting) => shared::close_reconnecting(reconnecting).await,
        None => session.close().await,
    }
    if args.reconnecting {
        eprintln!(
            "worker {}: {} ZooKeeper sessions: {sessions:x?}",
            args.client,
            sessions.len()
        );
    }
    eprintln!(
        "worker {}: done, {done} operations, {idle} with nothing done in time, {failed} failed",
        args.client
    );
    Ok(())
}
