//! The peers' side of `compare-peers`: Apache Curator (`CuratorPeer.java`) and kazoo (`kazoo_peer.py`), run as
//! child processes in their benchmark modes (see the `bench` sections of both files in
//! `crates/zklock/tests/peers`). Each peer measures inside its own process (its own clock, after its own warm-up)
//! and prints one result line; this module starts them, synchronises their start with a `GO` line and parses the
//! results.
//!
//! The Curator peer is compiled once per run with `javac` into a temporary directory. The JVM runs with default
//! JIT settings (unlike the interop tests, which trade peak speed for start-up time), so that Curator is measured
//! at its best after its warm-up.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use zklock_testkit::peers::{self, CuratorPeer, PeerProcess};

/// The JVM's flags: default JIT settings, so that Curator is measured at its best (see above).
const JVM_FLAGS: &[&str] = &["-Xmx512m"];

/// Bound for anything a peer must say (JVM start and 50 sessions connecting on a loaded machine included).
const PEER_TIMEOUT: Duration = Duration::from_secs(180);

/// What can fail while running a peer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// A tool (java, javac, python3 with kazoo, the Curator jars) is missing or failed to prepare.
    #[error("{0}")]
    Setup(String),
    /// A peer process failed, said something unexpected, or did not answer in time.
    #[error("peer `{name}`: {what}")]
    Peer {
        /// Which peer.
        name: String,
        /// What went wrong.
        what: String,
    },
    /// Starting or talking to a process failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, PeerError>;

/// Where the JVM, the compiled Curator peer and a Python with kazoo are. Removes the compiled classes on drop.
#[derive(Debug)]
pub struct Toolchain {
    curator: CuratorPeer,
    classes: PathBuf,
    python: PathBuf,
}

impl Drop for Toolchain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.classes);
    }
}

/// A peer's command-line words, each item by its `Display`.
macro_rules! words {
    ($($item:expr),* $(,)?) => {
        [$($item.to_string()),*]
    };
}

impl Toolchain {
    /// Compiles the Curator peer and checks that `python3` imports kazoo. Blocking (a few seconds of javac).
    pub fn prepare() -> Result<Toolchain> {
        let classes = std::env::temp_dir().join(format!("zklock-compare-peers-{}", std::process::id()));
        std::fs::create_dir_all(&classes)?;
        let curator = match peers::compile_curator_peer(&classes) {
            Ok(curator) => curator,
            Err(why) => {
                let _ = std::fs::remove_dir_all(&classes);
                return Err(PeerError::Setup(format!(
                    "{why} (apt-get install default-jdk-headless libcurator-recipes-java zookeeper)"
                )));
            }
        };
        // Built before the kazoo check so that its `Drop` removes the classes if that check fails.
        let mut toolchain = Toolchain {
            curator,
            classes,
            python: PathBuf::new(),
        };
        toolchain.python = peers::kazoo_python()
            .map_err(|why| PeerError::Setup(format!("{why} (python3 -m pip install kazoo)")))?;
        Ok(toolchain)
    }

    fn curator(&self, args: &[String]) -> Result<Peer> {
        self.curator_with(JVM_FLAGS, args)
    }

    fn curator_with(&self, jvm_flags: &[&str], args: &[String]) -> Result<Peer> {
        let mut command = self.curator.command(jvm_flags);
        command.arg("bench").args(args);
        Peer::spawn(format!("curator bench {}", args.join(" ")), command)
    }

    fn kazoo(&self, args: &[String]) -> Result<Peer> {
        let mut command = peers::kazoo_command(&self.python);
        command.arg("bench").args(args);
        Peer::spawn(format!("kazoo bench {}", args.join(" ")), command)
    }
}

/// A running peer (killed by pid when dropped), with this module's errors.
struct Peer(PeerProcess);

impl Peer {
    fn spawn(name: String, mut command: Command) -> Result<Peer> {
        // stderr goes to ours: a failing peer's stack trace is the most useful thing to see.
        match PeerProcess::spawn(name.clone(), &mut command, Stdio::inherit()) {
            Ok(process) => Ok(Peer(process)),
            Err(e) => Err(PeerError::Peer {
                name,
                what: format!("cannot start: {e}"),
            }),
        }
    }

    fn error(&self, what: impl Into<String>) -> PeerError {
        PeerError::Peer {
            name: self.0.name().to_string(),
            what: what.into(),
        }
    }

    /// The next line, split into its first word and the words after it.
    async fn next_words(&mut self) -> Result<(String, Vec<String>)> {
        let line = match self.0.next_line(PEER_TIMEOUT).await {
            Ok(line) => line,
            Err(e) => return Err(self.error(e.describe("a result"))),
        };
        let mut words = line.split_whitespace().map(str::to_string);
        let first = words.next().unwrap_or_default();
        Ok((first, words.collect()))
    }

    /// The next line, which must start with `word`; returns the words after it.
    async fn expect(&mut self, word: &str) -> Result<Vec<String>> {
        let (first, words) = self.next_words().await?;
        if first != word {
            return Err(self.error(format!("said {first} {words:?} where we expected {word}")));
        }
        Ok(words)
    }

    async fn send(&mut self, line: &str) -> Result<()> {
        Ok(self.0.send(line).await?)
    }

    /// Waits until the peer has its sessions (`READY`), then starts it (`GO`).
    async fn ready_go(&mut self) -> Result<()> {
        self.expect("READY").await?;
        self.send("GO").await
    }

    /// Closes stdin and waits for a clean exit.
    async fn finish(mut self) -> Result<()> {
        match self.0.finish(PEER_TIMEOUT).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.error(e.to_string())),
        }
    }
}

fn number<T: std::str::FromStr>(peer: &Peer, words: &[String], i: usize) -> Result<T> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| peer.error(format!("expected a number at position {i} of {words:?}")))
}

/// Which lock workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LockKind {
    /// The exclusive lock.
    Mutex,
    /// The read/write lock; each acquisition is a read with this probability, otherwise a write.
    RwLock {
        /// Probability of a read.
        read_fraction: f64,
    },
}

impl LockKind {
    fn args(self) -> (&'static str, Option<String>) {
        match self {
            LockKind::Mutex => ("mutex", None),
            LockKind::RwLock { read_fraction } => ("rwlock", Some(read_fraction.to_string())),
        }
    }
}

/// A count of acquisitions in a measured window.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    /// Acquisitions (hand-offs) completed in the window.
    pub count: u64,
    /// The window's length, seconds.
    pub seconds: f64,
}

impl Count {
    /// Acquisitions per second.
    pub fn per_sec(&self) -> f64 {
        self.count as f64 / self.seconds
    }
}

/// A peer's count of a measured window: its `COUNT <acquisitions> <seconds>` line.
async fn count(peer: &mut Peer) -> Result<Count> {
    let words = peer.expect("COUNT").await?;
    Ok(Count {
        count: number(peer, &words, 0)?,
        seconds: number(peer, &words, 1)?,
    })
}

/// A lock workload for the peers: which lock, how many sessions, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct LockLoad {
    /// The lock.
    pub kind: LockKind,
    /// Sessions, each looping acquire+release.
    pub clients: usize,
    /// Seconds of the same loop before the measured window.
    pub warmup: f64,
    /// The measured window, seconds.
    pub seconds: f64,
}

impl LockLoad {
    /// The lock peers' arguments: `mutex|rwlock HOSTS PATH [CLIENTS] WARMUP SECONDS [READ_FRACTION]`; `clients`
    /// for the peer that runs them all in one process (Curator's JVM).
    fn args(&self, hosts: &str, path: &str, clients: Option<usize>) -> Vec<String> {
        let (what, fraction) = self.kind.args();
        let mut args = vec![what.to_string(), hosts.into(), path.into()];
        args.extend(clients.map(|c| c.to_string()));
        args.extend([self.warmup.to_string(), self.seconds.to_string()]);
        args.extend(fraction);
        args
    }
}

/// Curator: `clients` threads in one JVM, each with its own session, loop acquire+release on `path` for
/// `seconds` after `warmup` seconds.
pub async fn curator_lock(tools: &Toolchain, hosts: &str, path: &str, load: LockLoad) -> Result<Count> {
    let mut peer = tools.curator(&load.args(hosts, path, Some(load.clients)))?;
    peer.ready_go().await?;
    let count = count(&mut peer).await?;
    peer.finish().await?;
    Ok(count)
}

/// kazoo: `clients` processes, one session each (threads would share the GIL), started together; the counts are
/// summed and the longest window is taken.
pub async fn kazoo_lock(tools: &Toolchain, hosts: &str, path: &str, load: LockLoad) -> Result<Count> {
    let args = load.args(hosts, path, None);
    let mut peers = Vec::new();
    for _ in 0..load.clients.max(1) {
        peers.push(tools.kazoo(&args)?);
    }
    for peer in &mut peers {
        peer.expect("READY").await?;
    }
    for peer in &mut peers {
        peer.send("GO").await?;
    }
    let mut total = Count {
        count: 0,
        seconds: 0.0,
    };
    for peer in &mut peers {
        let one = count(peer).await?;
        total.count += one.count;
        total.seconds = total.seconds.max(one.seconds);
    }
    for peer in peers {
        peer.finish().await?;
    }
    Ok(total)
}

/// How the leader leaves in a failover measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    /// The leader resigns: deletes its own node (zklock `release`, Curator `LeaderLatch.close`).
    Resign,
    /// The leader's client closes its session; the server deletes the node.
    CloseSession,
}

impl Departure {
    /// The word the Curator peer understands.
    fn word(self) -> &'static str {
        match self {
            Departure::Resign => "resign",
            Departure::CloseSession => "close",
        }
    }
}

/// Curator `LeaderLatch`: `rounds` failovers, each measured inside the JVM from the leader's departure to the
/// successor's `isLeader()`.
pub async fn curator_failover(
    tools: &Toolchain,
    hosts: &str,
    path: &str,
    rounds: usize,
    departure: Departure,
) -> Result<Vec<Duration>> {
    let mut peer = tools.curator(&words!["failover", hosts, path, rounds, departure.word()])?;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let words = peer.expect("FAILOVER").await?;
        times.push(Duration::from_micros(number(&peer, &words, 0)?));
    }
    peer.expect("DONE").await?;
    peer.finish().await?;
    Ok(times)
}

/// How far a double-barrier run got.
#[derive(Debug, Clone, Copy)]
pub struct BarrierRun {
    /// Barriers every client passed (all of them, unless the run stalled).
    pub completed: usize,
    /// Time from the start to the completion of the last of them.
    pub elapsed: Duration,
    /// True if the run stopped making progress (no barrier completed for 20 s) before the end.
    pub stalled: bool,
}

/// Curator `DistributedDoubleBarrier`: `clients` threads (own sessions) pass `barriers` barriers in turn, timed
/// inside the JVM from `GO`. A run in which no barrier completes for 20 s is reported as stalled.
pub async fn curator_double_barrier(
    tools: &Toolchain,
    hosts: &str,
    path: &str,
    clients: usize,
    barriers: usize,
) -> Result<BarrierRun> {
    let mut peer = tools.curator(&words!["dbarrier", hosts, path, clients, barriers])?;
    peer.ready_go().await?;
    let (word, words) = peer.next_words().await?;
    let stalled = match word.as_str() {
        "BARRIERS" => false,
        "STALLED" => true,
        _ => {
            return Err(peer.error(format!(
                "said {word} {words:?} where we expected BARRIERS or STALLED"
            )))
        }
    };
    let run = BarrierRun {
        completed: number(&peer, &words, 0)?,
        elapsed: Duration::from_secs_f64(number(&peer, &words, 1)?),
        stalled,
    };
    peer.finish().await?;
    Ok(run)
}

/// The JVM's flags for many sessions in one JVM (`bench waiters`): a larger heap, and smaller thread stacks, since
/// every Curator session brings its own threads (the ZooKeeper client's send and event threads, Curator's
/// connection-state and background threads) and the benchmark one more to block in `acquire()`.
const MANY_SESSIONS_JVM_FLAGS: &[&str] = &["-Xmx2g", "-Xss512k"];

/// What a Curator waiters run measured.
#[derive(Debug, Clone)]
pub struct WaitersRun {
    /// Hand-off latencies (release call to the next acquire returning), in order.
    pub samples: Vec<Duration>,
    /// The timed window, seconds.
    pub seconds: f64,
}

/// Curator `InterProcessMutex` with `clients` sessions (one JVM, a thread each) queued on `path`: once all nodes
/// are in `path`, `settled` is awaited (e.g. until every waiter has set its watch), then `on_start` runs (e.g. to
/// read counters) and up to `handoffs` hand-offs are timed inside the JVM, for at most `seconds`; `on_done` runs
/// once they are over, before the peer closes its sessions. See `bench waiters` in `CuratorPeer.java`.
#[allow(clippy::too_many_arguments)]
pub async fn curator_waiters(
    tools: &Toolchain,
    hosts: &str,
    path: &str,
    clients: usize,
    handoffs: usize,
    seconds: f64,
    hold: Duration,
    settled: impl std::future::Future<Output = ()>,
    on_start: impl FnOnce(),
    on_done: impl FnOnce(),
) -> Result<WaitersRun> {
    let args = words![
        "waiters",
        hosts,
        path,
        clients,
        handoffs,
        seconds,
        hold.as_millis()
    ];
    let mut peer = tools.curator_with(MANY_SESSIONS_JVM_FLAGS, &args)?;
    peer.ready_go().await?;
    peer.expect("QUEUED").await?;
    settled.await;
    on_start();
    peer.send("START").await?;
    let words = peer.expect("DONE").await?;
    on_done();
    let count: usize = number(&peer, &words, 0)?;
    let seconds = number(&peer, &words, 1)?;
    let mut samples = Vec::with_capacity(count);
    for i in 0..count {
        samples.push(Duration::from_micros(number(&peer, &words, 2 + i)?));
    }
    peer.finish().await?;
    Ok(WaitersRun { samples, seconds })
}
