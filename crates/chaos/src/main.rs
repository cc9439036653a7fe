//! `zklock-chaos`: a fault campaign against zklock's recipes, judged by an independent checker.
//!
//! It starts a server (`--server embedded | zookeeper | ensemble`), runs `--clients N` contenders as separate OS
//! processes (workers of this binary, or `zklock run` processes for `--recipe run`), injects faults on a seeded
//! random schedule for `--duration` seconds, then checks what the protected resource — a fenced register run by
//! this harness, independent of zklock — recorded. It prints
//! `chaos: <ops> ops, <faults> faults, <violations> violations, seed <seed>` and exits 0 only when the checker
//! finds nothing (1: violations; 2: the campaign itself could not run).
//!
//! Layout: `campaign/` runs one campaign (one step a file); `aftermath.rs` drains and checks cleanliness;
//! `report.rs` writes the files and the summary; `contenders.rs` the contender processes; `nemesis.rs` the faults;
//! `servers.rs` the server under test; `register.rs` + `fence.rs` the protected resource; `checker/` the verdict
//! (one check a file; `linearizability.rs`: the `register` workload's); `workloads/` what runs inside the contender
//! processes, one file per workload behind the `Workload` trait (and `workloads/foreign.rs` the kazoo and Curator
//! contenders of `--mix`, `workloads/run.rs` the command of the `run` workload, `workloads/cache/` the `cache`
//! workload, its history files and the negative control's naive cache).

mod aftermath;
mod args;
mod campaign;
mod checker;
mod clock;
mod contenders;
mod fence;
mod history;
mod linearizability;
mod nemesis;
mod netfault;
mod register;
mod report;
mod servers;
mod worker_args;
mod workloads;

use clap::{Parser, Subcommand};

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Recipe {
    /// `Mutex`: read-modify-write of the counter under the lock.
    Mutex,
    /// `RwLock`: writers increment the counter, readers share.
    Rwlock,
    /// `Semaphore` with `--leases` leases: never more holders than leases.
    Semaphore,
    /// `LeaderElection`: each term's writes under the leader's token.
    Election,
    /// `MultiLock` of two mutexes (`<path>/a`, `<path>/b`), named in a random order at every acquire: read-modify-write
    /// of the counter under the set, fenced with the token of the lock taken first in the global order.
    MultiLock,
    /// `zklock run` processes whose commands do the critical section.
    Run,
    /// `Queue` with `take_safe`: every acknowledged item taken, none completed twice.
    Queue,
    /// `DoubleBarrier` with every contender a participant, one barrier path per round.
    DoubleBarrier,
    /// `AtomicLong`: contenders increment one counter; its final value must be the acknowledged increments plus
    /// at most those whose outcome was unknown.
    Counter,
    /// `PriorityQueue` with `take_safe`: as `queue`, and no item taken while an acknowledged item of a lower
    /// priority number was waiting unclaimed (judged on single servers).
    PriorityQueue,
    /// `Group`: members join and leave; no look shows a member after its leave was acknowledged, and once faults
    /// stop every member's live view converges to the members there.
    Group,
    /// `SetPartitioner`: members divide a set of items, leaving and joining; each item's counter is incremented under
    /// that item's lock, fenced with its token: never two owners of an item at once.
    Partitioner,
    /// `PersistentNode` (ephemeral, on a reconnecting session): each contender keeps one and changes its data; once
    /// the faults are over each owner's node holds its latest data, and none is left once the owners ended.
    PersistentNode,
    /// `TwoPhaseCommit`: every contender coordinates transactions and takes part in the others'; no transaction
    /// with two outcomes, and a commit only if every participant voted commit.
    TwoPhaseCommit,
    /// `Cache::tree`: writers create, change and delete the nodes of a small tree (alone and in `multi`) while every
    /// contender keeps a cache of it; each cache's events follow zxid order and report only states written, and its
    /// final view is the server's tree.
    Cache,
    /// Registers (znodes): reads after `sync`, writes, compare-and-sets by version and `multi`, each recorded with
    /// its invocation and completion; the history must be linearizable.
    Register,
}

#[derive(Parser, Debug)]
#[command(
    name = "zklock-chaos",
    version,
    about = "A fault campaign against zklock's recipes, judged by an independent checker"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    internal: Option<Internal>,
    #[command(flatten)]
    campaign: args::CampaignArgs,
}

#[derive(Subcommand, Debug)]
enum Internal {
    /// (internal) one contender process.
    #[command(name = "__worker", hide = true)]
    Worker(worker_args::WorkerArgs),
    /// (internal) the command `zklock run` runs in the `run` workload.
    #[command(name = "__command", hide = true)]
    Command(workloads::run::CommandArgs),
    /// Recovery figures of a kept campaign directory (`--out DIR`), from its history files.
    #[command(name = "__rescore", hide = true)]
    Rescore {
        /// The campaign's directory.
        dir: std::path::PathBuf,
    },
    /// The linearizability verdict on the `register` histories (`kv-*.history`) of a directory.
    #[command(name = "__check-register", hide = true)]
    CheckRegister {
        /// The directory.
        dir: std::path::PathBuf,
    },
}

fn main() {
    let cli = Cli::parse();
    // A worker's stderr is its contender log, kept with a failed campaign's files: what zklock decided (each
    // acquire's end, each release, a loss) is what a liveness or safety violation is read from afterwards.
    let default = match cli.internal {
        Some(Internal::Worker(_)) => "warn,zklock=debug",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZKLOCK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let code = match cli.internal {
        Some(Internal::Worker(args)) => current_thread().block_on(workloads::run(args)),
        Some(Internal::Command(args)) => current_thread().block_on(workloads::run::run(args)),
        Some(Internal::Rescore { dir }) => match campaign::rescore(&dir) {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("zklock-chaos: {err:#}");
                2
            }
        },
        Some(Internal::CheckRegister { dir }) => workloads::kv::check_dir(&dir).unwrap_or_else(|err| {
            eprintln!("zklock-chaos: {err:#}");
            2
        }),
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(campaign::main(cli.campaign))
        }
    };
    std::process::exit(code);
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
