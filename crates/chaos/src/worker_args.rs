//! The command line of a contender process (`zklock-chaos __worker …`), shared by every workload.

use crate::Recipe;

/// What a worker is told on its command line.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The workload.
    #[arg(long, value_enum)]
    pub recipe: Recipe,
    /// ZooKeeper connect string.
    #[arg(long)]
    pub connect: String,
    /// The recipe's path.
    #[arg(long)]
    pub path: String,
    /// The register's address.
    #[arg(long)]
    pub register: String,
    /// This contender's number.
    #[arg(long)]
    pub client: u32,
    /// Session timeout, milliseconds.
    #[arg(long)]
    pub session_timeout_ms: u64,
    /// Semaphore leases; double barrier participants.
    #[arg(long, default_value_t = 2)]
    pub leases: usize,
    /// `CLOCK_MONOTONIC` nanoseconds at which to finish.
    #[arg(long)]
    pub until_ns: u64,
    /// Seed of this worker's choices (work time, reader or writer).
    #[arg(long)]
    pub seed: u64,
    /// Which process of its slot this is (mixed into the seed).
    #[arg(long, default_value_t = 0)]
    pub launch: u64,
    /// The counter workload's negative control: increment by reading the value and setting it plus one, with no
    /// compare-and-set between the two. For the group and two-phase commit workloads: report what was wished
    /// instead of what happened. For the cache workload: keep a naive cache that never reads again after a
    /// reconnection.
    #[arg(long)]
    pub naive: bool,
    /// The mutex workload beside kazoo contenders: queue behind kazoo's `<hex>__lock__<seq>` nodes too.
    #[arg(long)]
    pub kazoo_contenders: bool,
    /// The lock-like workloads: hold under `LostPolicy::Suspend` (the campaign's `--lost-policy suspend`).
    #[arg(long)]
    pub suspend: bool,
    /// One `zklock::Session::reconnecting` for the whole process (the campaign's `--session reconnecting`): the
    /// recipes go on, on the next ZooKeeper session, after one ends.
    #[arg(long)]
    pub reconnecting: bool,
    /// The cache workload: follow with one-shot watches (the campaign's `--cache-watches one-shot`).
    #[arg(long)]
    pub one_shot: bool,
    /// The register and cache workloads: the file this process records its operations in.
    #[arg(long)]
    pub history: Option<String>,
}
