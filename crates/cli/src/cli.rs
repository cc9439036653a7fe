//! The command line, as clap sees it: every command's arguments, raw (each command validates its own), and each
//! command's exit statuses in its `--help` (from [`crate::exit`]). Imports nothing else of this crate.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::exit::{self, Cmd};

/// Fair distributed locks and coordination on ZooKeeper.
#[derive(Debug, Parser)]
#[command(name = "zklock", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Where ZooKeeper is.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// ZooKeeper connect string: `host:port[,host:port...][/chroot]`.
    #[arg(
        long = "connect",
        short = 'c',
        env = "ZKLOCK_CONNECT",
        default_value = "127.0.0.1:2181"
    )]
    pub hosts: String,
    /// Requested session timeout in seconds (ZooKeeper clamps it to [2, 20] × its tickTime).
    #[arg(long, default_value_t = 10.0)]
    pub session_timeout: f64,
}

/// Like [`ConnectArgs`], but without `--connect` an embedded server is started.
#[derive(Debug, Clone, Args)]
pub struct OptionalConnectArgs {
    /// ZooKeeper connect string; without it an embedded, temporary server is started.
    #[arg(long = "connect", short = 'c', env = "ZKLOCK_CONNECT")]
    pub hosts: Option<String>,
    /// Requested session timeout in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub session_timeout: f64,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command while holding a cluster-wide lock (a distributed `flock`).
    #[command(after_long_help = exit::help(Cmd::Run))]
    Run(RunArgs),
    /// Run a command only while this process is the elected leader; stop it as soon as leadership is lost.
    #[command(after_long_help = exit::help(Cmd::Elect))]
    Elect(ElectArgs),
    /// Show the holder and the queue of a lock directory.
    #[command(after_long_help = exit::help(Cmd::Status))]
    Status(StatusArgs),
    /// The design documents' demo: N workers with their own sessions hand a lock over in FIFO order.
    #[command(after_long_help = exit::help(Cmd::Demo))]
    Demo(DemoArgs),
    /// Benchmark zklock's Mutex against zookeeper-client's `Client::lock` on the same server, side by side.
    #[command(after_long_help = exit::help(Cmd::Bench))]
    Bench(BenchArgs),
    /// Run the embedded ZooKeeper-compatible server.
    #[command(after_long_help = exit::help(Cmd::Serve))]
    Serve(ServeArgs),
    /// Internal: stops a command's process group if `zklock run` dies or stops renewing its deadline (see
    /// child.rs); fed through stdin.
    #[command(name = "__watchdog", hide = true)]
    Watchdog,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Fail at once (exit 1) if the lock is held or queued for.
    #[arg(long, short = 'n', conflicts_with = "timeout")]
    pub nonblock: bool,
    /// Give up (exit 1) after waiting this many seconds.
    #[arg(long, short = 'w')]
    pub timeout: Option<f64>,
    /// After the lock is lost, seconds between SIGTERM and SIGKILL to the command. The lock counts as lost early
    /// enough that the command is gone before ZooKeeper can expire our session (see `supervise::lost_policy`); if
    /// zklock itself is paused or starved, its watchdog stops the command in time on its own.
    #[arg(long, default_value_t = 2.0)]
    pub kill_after: f64,
    /// Free text stored in the lock node for `zklock status`.
    #[arg(long)]
    pub describe: Option<String>,
    /// The lock directory, e.g. /locks/nightly-backup.
    pub path: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// Arguments of `zklock elect`.
#[derive(Debug, Args)]
pub struct ElectArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// After leadership is lost, seconds between SIGTERM and SIGKILL to the command.
    #[arg(long, default_value_t = 2.0)]
    pub kill_after: f64,
    /// Free text stored in our candidate node, shown to observers of the election.
    #[arg(long)]
    pub describe: Option<String>,
    /// The election directory, e.g. /elections/scheduler.
    pub path: String,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// The lock directory.
    pub path: String,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub connect: OptionalConnectArgs,
    /// Number of workers, each with its own session.
    #[arg(long, default_value_t = 10)]
    pub workers: usize,
    /// How long each worker holds the lock, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub hold: u64,
    /// The lock directory.
    #[arg(long, default_value = "/disLocks")]
    pub path: String,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub connect: OptionalConnectArgs,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Clients for the contended measurement.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Rounds; each runs every implementation once (in a rotating order). Figures are medians over the rounds.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (overrides clientPortAddress/clientPort of --config).
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Data directory (overrides dataDir of --config); a temporary one if neither is given.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// A zoo.cfg file.
    #[arg(long)]
    pub config: Option<PathBuf>,
}
