//! `compare-scale`: how costs grow with the work, on the embedded server and real ZooKeeper 3.8 (fsync on), side by
//! side in one run. Three sections:
//!
//! * [`waiters`] — N sessions queued on one lock: hand-off latency p50/p99, watch notifications per release, bytes
//!   read per acquisition (and requests per acquisition): zklock's `Mutex`, Curator's `InterProcessMutex`,
//!   zookeeper-client's `Client::lock` and the [naive lock](crate::naive) of the design documents.
//! * [`locks`] — K independent lock paths, 64 sessions: total acquisitions per second.
//! * [`size`] — 10k, 100k, 1M znodes and 10k sessions: resident memory, snapshot size, restart-to-serving time and
//!   read latency.
//!
//! The results are printed as Markdown tables (stdout), written as JSON (`scale.json`) and drawn as SVG charts
//! (`scale-*.svg`, [`plots`]) into the output directory. Progress goes to stderr.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub mod floor;
pub mod locks;
pub mod measure;
pub mod plots;
pub mod servers;
pub mod sessions;
pub mod size;
pub mod tables;
pub mod timeline;
pub mod waiters;

pub use servers::ServerKind;
pub use waiters::Contender;

/// The instant the run started, for progress lines.
fn run_started() -> Instant {
    static STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(Instant::now)
}

/// A progress line on stderr, stamped with the seconds since the run started.
macro_rules! progress {
    ($($arg:tt)*) => {
        eprintln!("[{:7.1}s] {}", $crate::scale::elapsed_seconds(), format_args!($($arg)*))
    };
}
pub(crate) use progress;

/// Seconds since the run started (for the progress lines).
pub fn elapsed_seconds() -> f64 {
    run_started().elapsed().as_secs_f64()
}

/// What to run and how big.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// The ~1-minute smoke sizes (CI), instead of the full ones.
    pub quick: bool,
    /// Where `scale.json` and the `scale-*.svg` charts go.
    pub out: PathBuf,
    /// Sections to run.
    pub sections: Vec<String>,
    /// Servers to measure.
    pub servers: Vec<ServerKind>,
    /// Waiters: the queue lengths N.
    pub waiters: Vec<usize>,
    /// Waiters: the contenders.
    pub contenders: Vec<Contender>,
    /// Waiters: Curator runs one JVM with ~5 threads per session; above this N it is not run (a bound of the
    /// machine — threads count against the kernel's pid limit, shared by every process — not of Curator).
    pub curator_max: usize,
    /// Waiters: how long a holder holds before it releases, in ms — the work a lock protects. Long enough for the
    /// waiter behind the new holder to list the queue (zklock's look-ahead) before the next release at N = 5,000;
    /// 0 measures back-to-back hand-offs, where that listing is still under way at the release.
    #[serde(default)]
    pub hold_ms: f64,
    /// Waiters: hand-offs timed per run (fewer if `handoff_seconds` pass first).
    pub handoffs: usize,
    /// Waiters: the time bound of one timed run.
    pub handoff_seconds: f64,
    /// Waiters: hand-offs of the counting run (through the counting proxy).
    pub count_handoffs: usize,
    /// Waiters: the time bound of one counting run.
    pub count_seconds: f64,
    /// Many locks: the numbers of lock paths K.
    pub lock_paths: Vec<usize>,
    /// Many locks: sessions.
    pub lock_sessions: usize,
    /// Many locks: measured seconds per run.
    pub lock_seconds: f64,
    /// Many locks: warm-up seconds per run.
    pub lock_warmup: f64,
    /// Many locks: rounds (alternating which server goes first); the figure is the median.
    pub lock_rounds: usize,
    /// Server size: znode counts.
    pub znodes: Vec<usize>,
    /// Server size: sessions held open while memory and read latency are measured.
    pub size_sessions: usize,
    /// Server size: bytes of data per znode.
    pub znode_bytes: usize,
    /// Server size: concurrent readers of the read-latency probe.
    pub readers: usize,
    /// Server size: seconds of the read-latency probe.
    pub read_seconds: f64,
    /// ZooKeeper's `-Xmx` (none: the JVM's default, as Debian's package runs it).
    pub zk_heap: Option<String>,
    /// Bound on setting one measurement up (connecting, queueing, loading).
    pub setup_timeout_seconds: f64,
}

impl Options {
    /// The full sizes of issue 13 (about 15 minutes on 2 cores).
    pub fn full() -> Options {
        Options {
            quick: false,
            out: workspace_path("docs"),
            sections: vec!["waiters".into(), "locks".into(), "size".into()],
            servers: ServerKind::BOTH.to_vec(),
            waiters: vec![10, 100, 1000, 5000],
            contenders: Contender::ALL.to_vec(),
            curator_max: 1000,
            hold_ms: 10.0,
            handoffs: 200,
            handoff_seconds: 5.0,
            count_handoffs: 30,
            count_seconds: 2.0,
            lock_paths: vec![1, 10, 100, 1000],
            lock_sessions: 64,
            lock_seconds: 4.0,
            lock_warmup: 1.0,
            lock_rounds: 2,
            znodes: vec![10_000, 100_000, 1_000_000],
            size_sessions: 10_000,
            znode_bytes: 100,
            readers: 8,
            read_seconds: 3.0,
            zk_heap: None,
            setup_timeout_seconds: 300.0,
        }
    }

    /// The smoke sizes: every section, every contender, both servers, about a minute.
    pub fn quick() -> Options {
        Options {
            quick: true,
            out: workspace_path("target/scale-quick"),
            waiters: vec![4, 16],
            curator_max: 4,
            handoffs: 20,
            handoff_seconds: 1.0,
            count_handoffs: 10,
            count_seconds: 1.0,
            lock_paths: vec![1, 8],
            lock_sessions: 8,
            lock_seconds: 0.5,
            lock_warmup: 0.2,
            lock_rounds: 1,
            // One size: a second (5,000) cost a ZooKeeper restart and about 20 s on a loaded CI machine, and
            // showed nothing the first does not (the smoke checks shapes, not how they grow).
            znodes: vec![1_000],
            size_sessions: 100,
            read_seconds: 0.5,
            readers: 4,
            setup_timeout_seconds: 120.0,
            ..Options::full()
        }
    }

    /// Parses the command line (after the program name).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<(Options, Option<PathBuf>)> {
        let args: Vec<String> = args.into_iter().collect();
        let mut options = if args.iter().any(|a| a == "--quick") {
            Options::quick()
        } else {
            Options::full()
        };
        let mut from_json = None;
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            if arg == "--quick" {
                continue;
            }
            let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--out" => options.out = value()?.into(),
                "--sections" => {
                    options.sections = list(&value()?)?;
                    for s in &options.sections {
                        if !["waiters", "locks", "size", "timeline"].contains(&s.as_str()) {
                            bail!("--sections: {s}? (waiters, locks, size, timeline)");
                        }
                    }
                }
                "--only" => {
                    options.servers = match value()?.as_str() {
                        "zookeeper" => vec![ServerKind::Zookeeper],
                        "embedded" => vec![ServerKind::Embedded],
                        other => bail!("--only {other}? (zookeeper or embedded)"),
                    }
                }
                "--waiters" => options.waiters = numbers(&value()?)?,
                "--contenders" => {
                    options.contenders = list(&value()?)?
                        .iter()
                        .map(|c| Contender::parse(c))
                        .collect::<Result<_>>()?
                }
                "--curator-max" => options.curator_max = value()?.parse()?,
                "--hold-ms" => options.hold_ms = value()?.parse()?,
                "--handoffs" => options.handoffs = value()?.parse()?,
                "--handoff-seconds" => options.handoff_seconds = value()?.parse()?,
                "--count-handoffs" => options.count_handoffs = value()?.parse()?,
                "--count-seconds" => options.count_seconds = value()?.parse()?,
                "--lock-paths" => options.lock_paths = numbers(&value()?)?,
                "--lock-sessions" => options.lock_sessions = value()?.parse()?,
                "--lock-seconds" => options.lock_seconds = value()?.parse()?,
                "--lock-warmup" => options.lock_warmup = value()?.parse()?,
                "--lock-rounds" => options.lock_rounds = value()?.parse()?,
                "--znodes" => options.znodes = numbers(&value()?)?,
                "--sessions" => options.size_sessions = value()?.parse()?,
                "--znode-bytes" => options.znode_bytes = value()?.parse()?,
                "--readers" => options.readers = value()?.parse()?,
                "--read-seconds" => options.read_seconds = value()?.parse()?,
                "--zk-heap" => options.zk_heap = Some(value()?),
                "--setup-timeout" => options.setup_timeout_seconds = value()?.parse()?,
                "--from-json" => from_json = Some(PathBuf::from(value()?)),
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other}\n{USAGE}"),
            }
        }
        if !(0.0..=10_000.0).contains(&options.hold_ms) {
            bail!("--hold-ms: between 0 and 10000");
        }
        if options.handoffs == 0 || options.count_handoffs == 0 || options.lock_rounds == 0 {
            bail!("--handoffs, --count-handoffs and --lock-rounds must be at least 1");
        }
        if options.waiters.iter().any(|&n| n < 2) {
            bail!("--waiters: a hand-off needs at least 2 sessions");
        }
        if options.lock_sessions == 0 || options.lock_paths.contains(&0) || options.readers == 0 {
            bail!("--lock-sessions, --lock-paths and --readers must be at least 1");
        }
        Ok((options, from_json))
    }

    fn section(&self, name: &str) -> bool {
        self.sections.iter().any(|s| s == name)
    }

    /// The bound on setting one measurement up.
    pub fn setup_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.setup_timeout_seconds)
    }
}

/// `relative` inside this workspace (the charts belong in its `docs/` wherever the binary is run from).
fn workspace_path(relative: &str) -> PathBuf {
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap_or(crate_dir)
        .join(relative)
}

/// The command line's help.
pub const USAGE: &str = "usage: compare-scale [--quick] [--out DIR] [--sections waiters,locks,size] \
[--only zookeeper|embedded]
  waiters: [--waiters 10,100,1000,5000] [--contenders zklock,curator,zookeeper-client,naive] [--curator-max 1000]
           [--hold-ms 10] [--handoffs 200] [--handoff-seconds 5] [--count-handoffs 30] [--count-seconds 2]
  locks:   [--lock-paths 1,10,100,1000] [--lock-sessions 64] [--lock-seconds 4] [--lock-warmup 1] [--lock-rounds 2]
  size:    [--znodes 10000,100000,1000000] [--sessions 10000] [--znode-bytes 100] [--readers 8] [--read-seconds 3]
  timeline: (zklock at each --waiters N and --hold-ms, --handoffs hand-offs, on fresh servers: where the time goes)
  [--zk-heap SIZE] [--setup-timeout SECONDS]
  compare-scale --from-json FILE [--out DIR]   (tables and charts again from a saved run, no measuring)";

fn list(value: &str) -> Result<Vec<String>> {
    let items: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if items.is_empty() {
        bail!("an empty list");
    }
    Ok(items)
}

fn numbers(value: &str) -> Result<Vec<usize>> {
    list(value)?
        .iter()
        .map(|s| {
            s.replace('_', "")
                .parse()
                .with_context(|| format!("{s}: not a number"))
        })
        .collect()
}

/// Everything one run measured (also the JSON file's schema).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// When, where, how.
    pub meta: Meta,
    /// The waiters section.
    pub waiters: Vec<waiters::WaitersRow>,
    /// The many-locks section.
    pub locks: Vec<locks::LocksRow>,
    /// The server-size section.
    pub size: Vec<size::SizeRow>,
    /// The hand-off timelines (`--sections timeline`).
    #[serde(default)]
    pub timelines: Vec<timeline::Timeline>,
}

/// The circumstances of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Meta {
    /// When it started (UTC).
    pub date: String,
    /// The command line's options as they were taken.
    pub options: Option<Options>,
    /// Logical CPUs of the machine.
    pub cpus: usize,
    /// 1-minute load average before the run.
    pub load_before: String,
    /// 1-minute load average after the run.
    pub load_after: String,
    /// Wall-clock seconds of the whole run.
    pub seconds: f64,
}

/// Runs the chosen sections and writes `scale.json` and the charts into `options.out`; returns the report.
pub async fn run(options: Options) -> Result<Report> {
    run_started();
    let started = Instant::now();
    let open_files = sessions::open_file_limit();
    let mut report = Report {
        meta: Meta {
            date: measure::now_utc(),
            options: Some(options.clone()),
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            load_before: measure::load_average(),
            ..Meta::default()
        },
        ..Report::default()
    };
    progress!(
        "compare-scale{}: sections {:?}, servers {:?}; open-file limit {open_files}; load average {}",
        if options.quick { " --quick" } else { "" },
        options.sections,
        options.servers,
        report.meta.load_before
    );
    if options.section("waiters") || options.section("locks") {
        // (The timeline section starts servers of its own.)
        let mut servers = Vec::new();
        for &kind in &options.servers {
            servers.push(tokio::task::spawn_blocking(move || servers::ServerUnderTest::start(kind)).await??);
        }
        if options.section("waiters") {
            report.waiters = waiters::run(&options, &servers).await?;
        }
        if options.section("locks") {
            report.locks = locks::run(&options, &servers).await?;
        }
    }
    if options.section("size") {
        report.size = size::run(&options).await?;
    }
    if options.section("timeline") {
        report.timelines = run_timelines(&options).await?;
    }
    report.meta.load_after = measure::load_average();
    report.meta.seconds = started.elapsed().as_secs_f64();
    write_outputs(&report, &options.out)?;
    Ok(report)
}

/// The hand-off timelines: zklock's `Mutex` at each N of `--waiters`, holders holding `--hold-ms`, on a fresh
/// server of each kind; the embedded server records its side of the timeline into a file it writes as it stops.
async fn run_timelines(options: &Options) -> Result<Vec<timeline::Timeline>> {
    timeline::install();
    let mut timelines = Vec::new();
    for &kind in &options.servers {
        for &n in &options.waiters {
            let dir = tempfile::tempdir()?;
            let file = dir.path().join("server-timeline.txt");
            let mut server = match kind {
                ServerKind::Embedded => {
                    let env = vec![(timeline::ENV.into(), file.clone().into_os_string())];
                    tokio::task::spawn_blocking(move || servers::ServerUnderTest::embedded_with_env(env))
                        .await??
                }
                ServerKind::Zookeeper => {
                    tokio::task::spawn_blocking(move || servers::ServerUnderTest::start(kind)).await??
                }
            };
            let w = floor::measure(&server, floor::DELETES).await?;
            let hold = Duration::from_secs_f64(options.hold_ms / 1000.0);
            let w_idle = if hold.is_zero() {
                None
            } else {
                Some(floor::measure_after(&server, floor::DELETES / 3, hold).await?)
            };
            timeline::take();
            let samples = waiters::timed_zklock_run(options, &server, n).await?;
            let mut events = timeline::take();
            server.stop().await?;
            if kind == ServerKind::Embedded {
                events.extend(timeline::read(&file)?);
            }
            drop(server);
            let mut analysed = timeline::analyse(kind.label(), n, &mut events);
            analysed.w_us = w.p50_ms.map(|ms| ms * 1e3);
            analysed.w_idle_us = w_idle.and_then(|w| w.p50_ms).map(|ms| ms * 1e3);
            progress!(
                "timeline N={n} on {}: {} hand-offs (p50 {:.3} ms), {} analysed",
                kind.label(),
                samples.len(),
                measure::quantile_ms(&samples, 0.5).unwrap_or(f64::NAN),
                analysed.handoffs
            );
            timelines.push(analysed);
        }
    }
    Ok(timelines)
}

/// Writes `scale.json` and the charts into `out`, and prints the tables.
pub fn write_outputs(report: &Report, out: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = out.join("scale.json");
    std::fs::write(&json, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let charts = plots::draw_all(report, out)?;
    println!("{}", tables::markdown(report));
    progress!("wrote {} and {}", json.display(), charts.join(", "));
    Ok(())
}
