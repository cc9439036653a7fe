//! A campaign's set-up: its arguments checked, the binaries found, the faults, the fence and the checker's rules
//! chosen, and the register, the server under test, the links and the proxies started.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use zklock_testkit::Proxy;

use crate::args::CampaignArgs;
use crate::checker::Rules;
use crate::fence::Fence;
use crate::nemesis::Fault;
use crate::netfault::Net;
use crate::register::Register;
use crate::servers::{ServerKind, Servers};
use crate::workloads::foreign::{self, Foreign, Side};
use crate::{report, Recipe};

/// What a campaign set up before its contenders start. The fields holding processes, tasks and files come first:
/// they drop in this order (on an error, and at [`Setup::close`]): the proxies, the servers, the links, the
/// register, the foreign contenders, and last the temporary directory (where the servers' data may be).
pub(super) struct Setup {
    /// One proxy per contender in front of a single server (none on an ensemble).
    pub proxies: Vec<Arc<Proxy>>,
    pub servers: Arc<tokio::sync::Mutex<Servers>>,
    /// The links the network faults act on.
    pub net: Arc<Net>,
    /// The protected resource, and its record.
    pub register: Arc<Register>,
    /// The kazoo and Curator contenders of `--mix`, prepared.
    pub foreign: Option<Foreign>,
    temp: tempfile::TempDir,
    /// The seed of the fault schedule and of the contenders' choices.
    pub seed: u64,
    /// The contenders' session timeout.
    pub session: Duration,
    /// The end of the campaign kept free of faults, to see recovery.
    pub quiet: Duration,
    /// The `zklock` binary.
    pub zklock: PathBuf,
    /// This binary (its workers and commands).
    pub chaos: PathBuf,
    /// The faults the nemesis draws from.
    pub faults: Vec<Fault>,
    /// Where the campaign's files go: `--out`, else the temporary directory.
    pub dir: PathBuf,
    /// Whether the fence refuses only stale holders (then a refusal with no fault to explain it is a violation).
    pub exact_fence: bool,
    /// What the register's history must satisfy.
    pub rules: Rules,
    /// The servers' addresses.
    pub members: Vec<SocketAddr>,
    /// The connect string straight to the servers (no proxy, no link).
    pub direct: String,
    /// The recipe's path.
    pub path: String,
    /// Whose contender each slot runs: zklock's or a foreign peer's.
    pub sides: Vec<Side>,
}

impl Setup {
    /// Checks the arguments, starts everything the contenders need, and says what the campaign will do.
    pub async fn start(args: &CampaignArgs, seed: u64) -> Result<Setup> {
        let session = Duration::from_secs(args.session_timeout.max(1));
        let quiet = session + Duration::from_secs(8);
        check_args(args, quiet)?;
        let zklock = zklock_binary(args)?;
        let chaos = chaos_binary()?;
        let faults = faults_for(args);
        let temp = tempfile::Builder::new().prefix("zklock-chaos-").tempdir()?;
        let dir = match &args.out {
            Some(out) => {
                std::fs::create_dir_all(out)?;
                out.clone()
            }
            None => temp.path().to_owned(),
        };
        let fence = fence_for(args);
        let exact_fence = fence.refuses_only_the_stale();
        let rules = rules_for(args);
        let foreign = if args.mix.is_empty() {
            None
        } else {
            let (mix, peers_dir) = (args.mix.clone(), dir.clone());
            let prepared = tokio::task::spawn_blocking(move || Foreign::prepare(&mix, &peers_dir)).await??;
            Some(prepared)
        };
        let register = Arc::new(Register::start(fence).await?);
        let servers = start_servers(args, &faults, &zklock, &dir).await?;
        let members = servers.members();
        let direct = servers.connect_string();
        let net = Arc::new(Net::start(
            &servers,
            &members,
            args.clients,
            faults.iter().any(|f| f.needs_client_links()),
        )?);
        if faults.iter().any(|f| f.needs_member_links()) && !net.has_member_links() {
            bail!("the partition, bridge and partition-oneway faults need --server ensemble (links between members)");
        }
        let servers = Arc::new(tokio::sync::Mutex::new(servers));
        let proxies = start_proxies(args, &net, &members).await?;
        let path = format!("/chaos/{}-{seed:016x}", report::name(args.recipe));
        if args.recipe == Recipe::Register {
            crate::workloads::kv::prepare(&direct, &path).await?;
        }
        if args.recipe == Recipe::Cache {
            crate::workloads::cache::prepare(&direct, &path, &dir).await?;
        }
        let sides: Vec<Side> = (0..args.clients)
            .map(|slot| foreign::side(&args.mix, slot))
            .collect();
        let setup = Setup {
            proxies,
            servers,
            net,
            register,
            foreign,
            temp,
            seed,
            session,
            quiet,
            zklock,
            chaos,
            faults,
            dir,
            exact_fence,
            rules,
            members,
            direct,
            path,
            sides,
        };
        setup.announce(args);
        Ok(setup)
    }

    /// The campaign's line on stderr: what runs on what, how long, with which faults, and where its files go.
    fn announce(&self, args: &CampaignArgs) {
        eprintln!(
            "zklock-chaos: {:?} on {:?} ({}), {} contenders{}, {} s, session timeout {} s, faults {:?}{}; files in {}",
            args.recipe,
            args.server,
            self.direct,
            args.clients,
            if args.mix.is_empty() {
                String::new()
            } else {
                format!(" {:?}", self.sides)
            },
            args.duration,
            self.session.as_secs(),
            self.faults,
            if args.no_fencing { ", NO FENCING (negative control)" } else { "" },
            self.dir.display()
        );
    }

    /// Stops everything: the fields drop in their order, the temporary directory last — kept (and said where) when
    /// `keep`.
    pub fn close(mut self, keep: bool) {
        if keep {
            self.temp.disable_cleanup(true);
            eprintln!("zklock-chaos: files kept in {}", self.temp.path().display());
        }
    }
}

/// Refuses arguments no campaign can run with.
fn check_args(args: &CampaignArgs, quiet: Duration) -> Result<()> {
    if Duration::from_secs(args.duration) < quiet + Duration::from_secs(4) {
        bail!(
            "--duration must be at least the session timeout + 12 s ({} s)",
            (quiet.as_secs() + 4)
        );
    }
    if args.clients == 0 {
        bail!("--clients must be at least 1");
    }
    if !args.mix.is_empty() && args.recipe != Recipe::Mutex {
        bail!("--mix works with --recipe mutex only");
    }
    let reconnects = matches!(
        args.recipe,
        Recipe::Mutex
            | Recipe::Rwlock
            | Recipe::Semaphore
            | Recipe::Election
            | Recipe::Queue
            | Recipe::PriorityQueue
            | Recipe::Group
    );
    if args.session == crate::args::SessionArg::Reconnecting && (!reconnects || !args.mix.is_empty()) {
        bail!(
            "--session reconnecting works with --recipe mutex, rwlock, semaphore, election, queue, priority-queue \
             or group (zklock's workers only, no --mix)"
        );
    }
    Ok(())
}

/// The faults of `--faults`, else every one that applies to the server and workload.
fn faults_for(args: &CampaignArgs) -> Vec<Fault> {
    if !args.faults.is_empty() {
        return args.faults.clone();
    }
    let mut faults = vec![Fault::Pause, Fault::Kill];
    if args.recipe == Recipe::Run {
        faults.push(Fault::KillCommand);
    }
    match args.server {
        ServerKind::Embedded | ServerKind::Zookeeper => {
            faults.extend([
                Fault::Cut,
                Fault::Blackhole,
                Fault::Expire,
                Fault::DropReply,
                Fault::RestartServer,
            ]);
            if args.server == ServerKind::Embedded {
                faults.push(Fault::DiskFull);
            }
        }
        ServerKind::Ensemble => faults.extend([
            Fault::KillLeader,
            Fault::KillFollower,
            Fault::IsolateMinority,
            Fault::IsolateMajority,
        ]),
    }
    faults
}

/// The `zklock` binary: `--zklock`, else the one next to this binary.
fn zklock_binary(args: &CampaignArgs) -> Result<PathBuf> {
    if let Some(path) = &args.zklock {
        return Ok(path.clone());
    }
    let me = std::env::current_exe()?;
    // target/<profile>/zklock-chaos, or target/<profile>/deps/<test> for tests.
    for dir in me.ancestors().skip(1).take(2) {
        let candidate = dir.join("zklock");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "no zklock binary next to {} (build it with `cargo build -p zklock-cli`, or pass --zklock)",
        me.display()
    )
}

/// This binary, for the contender processes (from a test: the one next to the test binary).
fn chaos_binary() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    if me.file_name().is_some_and(|n| n == "zklock-chaos") {
        return Ok(me);
    }
    for dir in me.ancestors().skip(1).take(2) {
        let candidate = dir.join("zklock-chaos");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("no zklock-chaos binary next to {}", me.display())
}

/// The register's fence: off for the workloads that record facts rather than critical sections, and for the
/// negative control; else as many holders as the recipe allows.
fn fence_for(args: &CampaignArgs) -> Fence {
    let fence = if args.no_fencing
        || matches!(
            args.recipe,
            Recipe::Queue | Recipe::DoubleBarrier | Recipe::Counter | Recipe::PriorityQueue
        ) {
        Fence::Off
    } else {
        match args.recipe {
            Recipe::Semaphore => Fence::leases(args.leases),
            Recipe::Rwlock => Fence::read_write(),
            _ => Fence::leases(1),
        }
    };
    // The group, two-phase commit, register, cache and persistent-node workloads record facts, not critical sections: nothing to
    // fence.
    if matches!(
        args.recipe,
        Recipe::Group | Recipe::TwoPhaseCommit | Recipe::Register | Recipe::Cache | Recipe::PersistentNode
    ) {
        Fence::Off
    } else {
        fence
    }
}

/// What the checker holds the register's history to.
fn rules_for(args: &CampaignArgs) -> Rules {
    Rules {
        shared_limit: match args.recipe {
            Recipe::Semaphore => args.leases.max(1),
            Recipe::Rwlock => usize::MAX,
            _ => 1,
        },
        counter: args.recipe != Recipe::Semaphore,
    }
}

/// Starts the server under test, with the embedded server's small disk when the disk-full fault may run, and
/// links between an ensemble's members when a fault uses them.
async fn start_servers(args: &CampaignArgs, faults: &[Fault], zklock: &Path, dir: &Path) -> Result<Servers> {
    let disk = faults.contains(&Fault::DiskFull) && args.server == ServerKind::Embedded;
    // Links between an ensemble's members only when a fault uses them: a member killed and restarted behind the
    // links took long enough to rejoin, on a loaded machine, that short campaigns saw the quorum gone to their end.
    let links = faults.iter().any(|f| {
        matches!(
            f,
            Fault::Partition | Fault::Bridge | Fault::PartitionOneway | Fault::SlowNet
        )
    });
    let (kind, zk_bin, server_dir) = (args.server, zklock.to_owned(), dir.to_owned());
    tokio::task::spawn_blocking(move || Servers::start(kind, &zk_bin, &server_dir, disk, links)).await?
}

/// One proxy per contender in front of a single server (through the contender's link to it when it has one);
/// none on an ensemble.
async fn start_proxies(args: &CampaignArgs, net: &Net, members: &[SocketAddr]) -> Result<Vec<Arc<Proxy>>> {
    let mut proxies = Vec::new();
    if args.server != ServerKind::Ensemble {
        for slot in 0..args.clients {
            // Through the contender's link to the server when it has one.
            let upstream = net.client_addrs(slot).map_or(members[0], |a| a[0]);
            proxies.push(Arc::new(Proxy::start(upstream).await?));
        }
    }
    Ok(proxies)
}
