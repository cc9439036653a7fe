//! The campaign's command line.

use std::path::PathBuf;

use crate::nemesis::Fault;
use crate::servers::ServerKind;
use crate::workloads::foreign::Peer;
use crate::Recipe;

/// The campaign's command line.
#[derive(Debug, Clone, clap::Args)]
pub struct CampaignArgs {
    /// The server under test.
    #[arg(long, value_enum, default_value = "embedded")]
    pub server: ServerKind,
    /// The workload.
    #[arg(long, value_enum, default_value = "mutex")]
    pub recipe: Recipe,
    /// Contender processes.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Seed of the fault schedule and of the contenders' choices (default: random, printed for replay).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Length of the campaign, seconds. The last session timeout + 8 s are kept free of faults, to see recovery.
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// The contenders' session timeout, seconds.
    #[arg(long, default_value_t = 4)]
    pub session_timeout: u64,
    /// The faults to draw from (comma-separated; default: every one that applies to the server and workload).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub faults: Vec<Fault>,
    /// The negative control: the register accepts every token, so stale holders get through. The checker must
    /// then find violations under the pause fault. For `--recipe counter`: the contenders increment by a read and
    /// a write with no compare-and-set between them, and the checker must find lost increments. For `group` and
    /// `two-phase-commit`: the contenders report what they wished instead of what happened (a view never
    /// updated; a coordinator's commit without waiting, a participant's own vote as the outcome). For `cache`: each
    /// contender keeps a naive cache that never adds its watch again nor reads the tree again after a reconnection.
    #[arg(long)]
    pub no_fencing: bool,
    /// The mutex workload with foreign contenders beside zklock's (comma-separated): kazoo `Lock` workers
    /// (Python) and Curator `InterProcessMutex` workers (Java) doing the same fenced critical section on the same
    /// lock path. Slots take turns: each peer named, then zklock (`--clients 3 --mix kazoo,curator`: one of each;
    /// `--clients 2`: kazoo and Curator alone). Every fault hits them as it hits zklock's workers.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub mix: Vec<Peer>,
    /// The mixed campaign's negative control: Curator's workers keep Curator's stock lock driver beside kazoo's. It
    /// sorts kazoo's `<hex>__lock__<seq>` nodes by their whole name, after every sequence number, so a Curator
    /// worker takes the lock while a kazoo worker holds it; the checker must find them inside together.
    #[arg(long)]
    pub stock_curator: bool,
    /// Leases of the semaphore workload.
    #[arg(long, default_value_t = 2)]
    pub leases: usize,
    /// The `zklock` binary (for `zklock serve` and `zklock run`); default: the one next to this binary.
    #[arg(long)]
    pub zklock: Option<PathBuf>,
    /// Keep the campaign's files (register history, logs) in this directory; by default they are kept only when
    /// the checker finds violations.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What a holder does when it cannot confirm its session in time. `lose`: the library's default — the guard is
    /// lost after half a session timeout disconnected, and `zklock run` ends its command. `suspend`: the guard is
    /// suspended and resumed once its session is confirmed (`LostPolicy::Suspend`; `zklock run --on-suspend stop`).
    /// Either way the campaign counts the guards ended for a session not confirmed in time and, of those, the
    /// needless ends — the session survived (`chaos-result … ended_unconfirmed=N needless_ends=N`).
    #[arg(long, value_enum, default_value = "lose")]
    pub lost_policy: LostPolicyArg,
    /// The contenders' sessions. `fixed`: a `zookeeper-client` session per contender, a new one (and new recipes)
    /// after it ends. `reconnecting`: one `zklock::Session::reconnecting` per contender process for its whole life —
    /// the recipes go on, on the next ZooKeeper session, after one ends, as a long-lived service uses zklock
    /// (`mutex`, `rwlock`, `semaphore`, `election`, `queue`, `priority-queue`, `group`).
    #[arg(long, value_enum, default_value = "fixed")]
    pub session: SessionArg,
    /// The cache workload: how every contender's `Cache::tree` follows ZooKeeper. `persistent`: one persistent
    /// recursive watch; `one-shot`: a data and a child watch on every node (`CacheBuilder::one_shot_watches`, what
    /// the cache falls back to on ZooKeeper 3.5).
    #[arg(long, value_enum, default_value = "persistent")]
    pub cache_watches: CacheWatches,
}

/// `--cache-watches`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheWatches {
    /// One persistent recursive watch.
    Persistent,
    /// One-shot watches on every node.
    OneShot,
}

/// `--session`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SessionArg {
    /// A session per contender, a new one after it ends.
    Fixed,
    /// One reconnecting session per contender process.
    Reconnecting,
}

/// `--lost-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LostPolicyArg {
    /// Lost after half a session timeout disconnected (the library's default; `zklock run --on-suspend kill`).
    Lose,
    /// Suspended, then resumed or lost (`LostPolicy::Suspend`; `zklock run --on-suspend stop`).
    Suspend,
}
