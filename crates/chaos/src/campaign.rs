//! One campaign: server, register, contenders, nemesis; then the cleanliness check and the checker's verdict.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::args::CampaignArgs;
use crate::checker::{self, Rules, Violation};
use crate::clock::now_ns;
use crate::contenders::{Contenders, Launch, SlotReport};
use crate::fence::Fence;
use crate::linearizability::Verdict;
use crate::nemesis::{self, Fault, Targets};
use crate::netfault;
use crate::register::Register;
use crate::servers::{lock, ServerKind, Servers};
use crate::workloads::foreign::{self, Foreign, Side, WorkerLine};
use crate::Recipe;
use crate::{aftermath, report};

/// Runs the campaign; the process exit status.
pub async fn main(args: CampaignArgs) -> i32 {
    let seed = args.seed.unwrap_or_else(rand::random::<u64>);
    match campaign(&args, seed).await {
        Ok(0) => 0,
        Ok(_) => 1,
        Err(err) => {
            eprintln!("zklock-chaos: {err:#}");
            println!("chaos: campaign failed to run ({err}), seed {seed}");
            2
        }
    }
}

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

async fn campaign(args: &CampaignArgs, seed: u64) -> Result<usize> {
    let session = Duration::from_secs(args.session_timeout.max(1));
    let quiet = session + Duration::from_secs(8);
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
    // The group and two-phase commit workloads record facts, not critical sections: nothing to fence.
    let fence = if matches!(
        args.recipe,
        Recipe::Group | Recipe::TwoPhaseCommit | Recipe::Register
    ) {
        Fence::Off
    } else {
        fence
    };
    let exact_fence = fence.refuses_only_the_stale();
    let rules = Rules {
        shared_limit: match args.recipe {
            Recipe::Semaphore => args.leases.max(1),
            Recipe::Rwlock => usize::MAX,
            _ => 1,
        },
        counter: args.recipe != Recipe::Semaphore,
    };
    let foreign = if args.mix.is_empty() {
        None
    } else {
        let (mix, peers_dir) = (args.mix.clone(), dir.clone());
        let prepared = tokio::task::spawn_blocking(move || Foreign::prepare(&mix, &peers_dir)).await??;
        Some(prepared)
    };
    let register = Arc::new(Register::start(fence).await?);
    let disk = faults.contains(&Fault::DiskFull) && args.server == ServerKind::Embedded;
    // Links between an ensemble's members only when a fault uses them: a member killed and restarted behind the
    // links took long enough to rejoin, on a loaded machine, that short campaigns saw the quorum gone to their end.
    let links = faults.iter().any(|f| {
        matches!(
            f,
            Fault::Partition | Fault::Bridge | Fault::PartitionOneway | Fault::SlowNet
        )
    });
    let (kind, zk_bin, server_dir) = (args.server, zklock.clone(), dir.clone());
    let servers =
        tokio::task::spawn_blocking(move || Servers::start(kind, &zk_bin, &server_dir, disk, links))
            .await??;
    let members = servers.members();
    let direct = servers.connect_string();
    let net = Arc::new(netfault::Net::start(
        &servers,
        &members,
        args.clients,
        faults.iter().any(|f| f.needs_client_links()),
    )?);
    if faults.iter().any(|f| f.needs_member_links()) && !net.has_member_links() {
        bail!("the partition, bridge and partition-oneway faults need --server ensemble (links between members)");
    }
    let servers = Arc::new(tokio::sync::Mutex::new(servers));
    let mut proxies = Vec::new();
    if args.server != ServerKind::Ensemble {
        for slot in 0..args.clients {
            // Through the contender's link to the server when it has one.
            let upstream = net.client_addrs(slot).map_or(members[0], |a| a[0]);
            proxies.push(Arc::new(zklock_testkit::Proxy::start(upstream).await?));
        }
    }
    let path = format!("/chaos/{}-{seed:016x}", report::name(args.recipe));
    if args.recipe == Recipe::Register {
        crate::workloads::kv::prepare(&direct, &path).await?;
    }
    let sides: Vec<Side> = (0..args.clients)
        .map(|slot| foreign::side(&args.mix, slot))
        .collect();
    eprintln!(
        "zklock-chaos: {:?} on {:?} ({direct}), {} contenders{}, {} s, session timeout {} s, faults {:?}{}; files in {}",
        args.recipe,
        args.server,
        args.clients,
        if args.mix.is_empty() {
            String::new()
        } else {
            format!(" {sides:?}")
        },
        args.duration,
        session.as_secs(),
        faults,
        if args.no_fencing { ", NO FENCING (negative control)" } else { "" },
        dir.display()
    );

    let start_ns = now_ns();
    let until_ns = start_ns + args.duration * 1_000_000_000;
    let hard_ns = until_ns + (session * 3 + Duration::from_secs(20)).as_nanos() as u64;
    let faults_until_ns = until_ns - quiet.as_nanos() as u64;
    let contenders = Arc::new(Contenders::new(args.clients));
    let mut slots = tokio::task::JoinSet::new();
    for (slot, &side) in sides.iter().enumerate() {
        let through_links = net
            .client_addrs(slot)
            .map(|a| a.iter().map(ToString::to_string).collect::<Vec<_>>().join(","));
        let connect = match proxies.get(slot) {
            Some(proxy) => proxy.connect_string(),
            None => through_links.unwrap_or_else(|| direct.clone()),
        };
        let launch = match (side, &foreign) {
            (Side::Foreign(peer), Some(foreign)) => Launch {
                argv: foreign.argv(
                    peer,
                    &WorkerLine {
                        connect: &connect,
                        path: &path,
                        register: register.addr().to_string(),
                        client: slot,
                        session_timeout_ms: args.session_timeout * 1000,
                        until_ns,
                        seed: seed ^ ((slot as u64 + 1) << 32),
                        curator_sees_kazoo: args.mix.contains(&foreign::Peer::Kazoo) && !args.stock_curator,
                    },
                ),
                log: dir.join(format!("contender-{slot}.log")),
            },
            _ => launch_for(
                args, &chaos, &zklock, &dir, slot, &connect, &path, &register, until_ns, seed,
            ),
        };
        let contenders = contenders.clone();
        slots.spawn(async move { (slot, contenders.run_slot(slot, launch, until_ns, hard_ns).await) });
    }
    let targets = Arc::new(Targets {
        servers: servers.clone(),
        proxies: proxies.clone(),
        contenders: contenders.clone(),
        register: register.clone(),
        session_timeout: session,
        net: net.clone(),
        busy: std::sync::Mutex::new(Vec::new()),
    });
    let nemesis = tokio::spawn(nemesis::run(faults.clone(), seed, faults_until_ns, targets));
    let progress = {
        let (register, kv_dir) = (
            register.clone(),
            (args.recipe == Recipe::Register).then(|| dir.clone()),
        );
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                eprintln!(
                    "zklock-chaos: {:.0} s, {} ops so far",
                    (now_ns() - start_ns) as f64 / 1e9,
                    kv_dir
                        .as_deref()
                        .map_or_else(|| register.len(), crate::workloads::kv::answered)
                );
            }
        })
    };
    let records = nemesis.await.context("the nemesis task failed")?;
    // On real ZooKeeper, liveness is judged from when the servers serve again, not from the last heal: zklock
    // cannot acquire while ZooKeeper has no quorum (measured here, and said when it took long; see
    // `aftermath::serving_again`). The embedded server's own recovery is ours to judge: from the heal.
    let serving_ns = if records.is_empty() || args.server == ServerKind::Embedded {
        Some(start_ns)
    } else {
        aftermath::serving_again(&members, until_ns).await
    };
    let mut reports: BTreeMap<usize, SlotReport> = BTreeMap::new();
    while let Some(done) = slots.join_next().await {
        let (slot, report) = done.context("a contender slot failed")?;
        reports.insert(slot, report);
    }
    progress.abort();

    let mut violations: Vec<Violation> = Vec::new();
    for (slot, report) in &reports {
        if report.overdue > 0 {
            violations.push(format!(
                "liveness: contender {slot} had {} process(es) still running {} s after the deadline (killed)",
                report.overdue,
                (hard_ns - until_ns) / 1_000_000_000
            ));
        }
    }
    violations.extend(records.iter().filter_map(|r| r.violation.clone()));
    // Cleanliness: every contender node goes with its session.
    let bound = session + Duration::from_secs(7);
    if let Err(left) = aftermath::wait_clean(&direct, &path, bound).await {
        violations.push(format!("cleanliness: {left}"));
    }
    if args.recipe == Recipe::Queue {
        if let Err(err) = aftermath::drain(&direct, &path, &register).await {
            violations.push(format!("queue: draining what is left failed: {err}"));
        }
    }
    if args.recipe == Recipe::PriorityQueue {
        if let Err(err) = aftermath::drain_priority(&direct, &path, &register).await {
            violations.push(format!("priority queue: draining what is left failed: {err}"));
        }
    }
    if args.recipe == Recipe::Counter {
        if let Err(err) = aftermath::record_final_count(&direct, &path, &register).await {
            violations.push(format!("counter: reading its final value failed: {err}"));
        }
    }
    if let Err(left) = aftermath::wait_no_sessions(&members, bound).await {
        violations.push(format!("cleanliness: {left}"));
    }
    let mut ops = register.ops();
    let mut unjudged = None;
    if args.recipe == Recipe::Register {
        let (report, acknowledged) = crate::workloads::kv::judge(&dir).await?;
        println!("{report}");
        match report.verdict {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable(why) => violations.push(format!("linearizability: {why}")),
            Verdict::Unknown(why) => unjudged = Some(why),
        }
        ops = acknowledged;
    } else if args.recipe == Recipe::Group {
        violations.extend(crate::workloads::group::check(&ops, session.as_nanos() as u64));
    } else if args.recipe == Recipe::TwoPhaseCommit {
        violations.extend(crate::workloads::two_phase_commit::check(&ops));
    } else if args.recipe == Recipe::Queue {
        violations.extend(checker::check_queue(&ops));
    } else if args.recipe == Recipe::PriorityQueue {
        violations.extend(checker::check_queue(&ops));
        // Judged on single servers only: an ensemble member may not have seen an acknowledged put yet.
        if args.server != ServerKind::Ensemble {
            violations.extend(checker::check_priority_order(&ops, session.as_nanos() as u64));
        }
    } else if args.recipe == Recipe::Counter {
        violations.extend(checker::check_counter(&ops));
    } else if args.recipe == Recipe::DoubleBarrier {
        violations.extend(checker::check_barrier(&ops, args.clients));
    } else {
        violations.extend(checker::check_register(&ops, rules));
    }
    let mut intervals = Vec::new();
    if args.recipe == Recipe::Run {
        intervals = aftermath::command_intervals(&dir, &ops)?;
        violations.extend(checker::check_intervals(&intervals));
    }
    let last_heal_ns = records.iter().map(|r| r.heal_ns).max().unwrap_or(start_ns);
    let healed_ns = serving_ns.unwrap_or(u64::MAX).max(last_heal_ns);
    if healed_ns > last_heal_ns + 1_000_000_000 {
        match serving_ns {
            Some(_) => eprintln!(
                "zklock-chaos: the servers served again {:.1} s after the last fault healed",
                (healed_ns - last_heal_ns) as f64 / 1e9
            ),
            None => eprintln!("zklock-chaos: the servers did not serve again before the end"),
        }
    }
    let recovery_bound = (session + Duration::from_secs(5)).as_nanos() as u64;
    if healed_ns.saturating_add(recovery_bound) <= until_ns {
        if let Err(v) = checker::check_recovery(&ops, healed_ns, recovery_bound) {
            violations.push(v);
        }
    } else {
        // A fault that took long to heal (a JVM restarting on a loaded machine) left the contenders, who stop at
        // the end, less time than a recovery may take: liveness cannot be judged, which is said, not assumed.
        eprintln!(
            "zklock-chaos: liveness not judged: the last fault healed and the servers served {:.1} s before the end, \
             less than the {:.1} s a recovery may take",
            until_ns.saturating_sub(healed_ns) as f64 / 1e9,
            recovery_bound as f64 / 1e9
        );
    }
    if exact_fence {
        // A fault's victim learns it lost its lock within a session timeout of the heal.
        let grace = (session + Duration::from_secs(2)).as_nanos() as u64;
        let explained: Vec<(u64, u64)> = records.iter().map(|r| (r.start_ns, r.heal_ns + grace)).collect();
        violations.extend(checker::check_refusals(&ops, &explained));
    }
    let (recoveries, isolated) = recovery_times(&ops, &records);

    report::write_files(&dir, &ops, &records, &intervals, &violations)?;
    report::report(
        args,
        seed,
        &ops,
        &records,
        &reports,
        &recoveries,
        &isolated,
        &violations,
        &intervals,
    );
    if !violations.is_empty() {
        keep_server_logs(&servers, &dir).await;
    }
    if (!violations.is_empty() || unjudged.is_some()) && args.out.is_none() {
        let kept = temp.keep();
        eprintln!("zklock-chaos: files kept in {}", kept.display());
    }
    drop(proxies);
    drop(servers);
    if let Some(why) = unjudged {
        bail!("the linearizability checker could not decide: {why}");
    }
    Ok(violations.len())
}

/// Copies the end of each ZooKeeper member's own log (elections, sessions expired, connections refused) beside the
/// campaign's files, as `zookeeper-<member>.log`: the members' directories go with the servers.
async fn keep_server_logs(servers: &tokio::sync::Mutex<Servers>, dir: &Path) {
    let Servers::ZooKeeper(zk) = &*servers.lock().await else {
        return;
    };
    let zk = lock(zk);
    for member in 0..zk.members() {
        let file = dir.join(format!("zookeeper-{member}.log"));
        if let Err(err) = std::fs::write(&file, zk.log_tail(member, SERVER_LOG_LINES)) {
            eprintln!("zklock-chaos: writing {}: {err}", file.display());
        }
    }
}

/// Lines of each member's log kept with a campaign that found a violation (about a minute of a busy member).
const SERVER_LOG_LINES: usize = 3000;

#[allow(clippy::too_many_arguments)]
fn launch_for(
    args: &CampaignArgs,
    chaos: &Path,
    zklock: &Path,
    dir: &Path,
    slot: usize,
    connect: &str,
    path: &str,
    register: &Register,
    until_ns: u64,
    seed: u64,
) -> Launch {
    let s = |v: &dyn ToString| v.to_string();
    let argv = if args.recipe == Recipe::Run {
        let work_ms = 50 + (seed.wrapping_add(slot as u64) % 100);
        vec![
            s(&zklock.display()),
            s(&"run"),
            s(&"--connect"),
            s(&connect),
            s(&"--session-timeout"),
            s(&args.session_timeout),
            s(&"--timeout"),
            s(&(args.session_timeout * 3)),
            s(&path),
            s(&"--"),
            s(&chaos.display()),
            s(&"__command"),
            s(&"--register"),
            s(&register.addr()),
            s(&"--client"),
            s(&slot),
            s(&"--log"),
            s(&dir.join(format!("command-{slot}-{{k}}.log")).display()),
            s(&"--work-ms"),
            s(&work_ms),
            s(&"--long-ms"),
            s(&(args.session_timeout * 1500)),
            s(&"--launch"),
            s(&"{k}"),
        ]
    } else {
        vec![
            s(&chaos.display()),
            s(&"__worker"),
            s(&"--recipe"),
            s(&report::name(args.recipe)),
            s(&"--connect"),
            s(&connect),
            s(&"--path"),
            s(&path),
            s(&"--register"),
            s(&register.addr()),
            s(&"--client"),
            s(&slot),
            s(&"--session-timeout-ms"),
            s(&(args.session_timeout * 1000)),
            s(&"--leases"),
            s(
                &if matches!(args.recipe, Recipe::DoubleBarrier | Recipe::TwoPhaseCommit) {
                    args.clients
                } else {
                    args.leases
                },
            ),
            s(&"--until-ns"),
            s(&until_ns),
            s(&"--seed"),
            s(&(seed ^ ((slot as u64 + 1) << 32))),
            s(&"--launch"),
            s(&"{k}"),
        ]
    };
    let mut argv = argv;
    if args.mix.contains(&foreign::Peer::Kazoo) {
        argv.push("--kazoo-contenders".to_owned()); // queue behind kazoo's nodes too
    }
    if args.recipe == Recipe::Register {
        argv.push("--history".to_owned());
        argv.push(dir.join(format!("kv-{slot}-{{k}}.history")).display().to_string());
    }
    if args.recipe == Recipe::Counter && args.no_fencing {
        argv.push("--naive".to_owned()); // the counter's negative control
    }
    if matches!(args.recipe, Recipe::Group | Recipe::TwoPhaseCommit) && args.no_fencing {
        argv.push("--naive".to_owned()); // their negative controls: report what was wished, not what happened
    }
    Launch {
        argv,
        log: dir.join(format!("contender-{slot}.log")),
    }
}

/// From each fault's heal to the next new critical section, for every fault and for the "isolated" ones: those
/// with no other fault in progress or starting in that time (the others measure the storm, not the one fault).
///
/// The same figures as [`checker::check_recovery`] once per fault (and every other fault per fault), in
/// `O((ops + faults) log)`: the first new section after a heal `h` is the first acquisition `p` (in the ops' order)
/// with `h < key(p)`, where `key(p)` is the smaller of its own time and the earliest time of an earlier acquisition
/// of its section (an acquisition at or before `h` makes its section old). The running maximum of `key` is sorted,
/// so a binary search finds `p`. A fault is isolated when no fault healing after it started before its recovery
/// ended: a suffix minimum of start times over the faults sorted by heal.
pub fn recovery_times(
    ops: &[crate::history::Op],
    records: &[crate::nemesis::Record],
) -> (Vec<u64>, Vec<u64>) {
    // The acquisitions as the checker counts them (its own predicate, asked one op at a time, so that the two
    // cannot drift apart): with `h` just before the op, `check_recovery` answers for it alone.
    let acquisitions: Vec<&crate::history::Op> = ops
        .iter()
        .filter(|op| {
            let alone = crate::history::Op { at_ns: 1, ..**op };
            checker::check_recovery(&[alone], 0, u64::MAX).is_ok()
        })
        .collect();
    let mut earliest: std::collections::HashMap<(u32, i64), u64> = std::collections::HashMap::new();
    let mut running_max: Vec<u64> = Vec::with_capacity(acquisitions.len());
    let mut max = 0u64;
    for op in &acquisitions {
        let first = earliest.entry(op.section()).or_insert(u64::MAX);
        let key = op.at_ns.min(*first);
        *first = (*first).min(op.at_ns);
        max = max.max(key);
        running_max.push(max);
    }
    let took = |heal: u64| -> Option<u64> {
        let p = running_max.partition_point(|&m| m <= heal);
        acquisitions.get(p).map(|op| op.at_ns - heal)
    };
    let mut by_heal: Vec<usize> = (0..records.len()).collect();
    by_heal.sort_by_key(|&i| records[i].heal_ns);
    let mut later_start = vec![u64::MAX; records.len() + 1];
    for at in (0..by_heal.len()).rev() {
        later_start[at] = later_start[at + 1].min(records[by_heal[at]].start_ns);
    }
    let mut recoveries: Vec<u64> = Vec::new();
    let mut isolated: Vec<u64> = Vec::new();
    for r in records {
        let Some(took) = took(r.heal_ns) else {
            continue;
        };
        recoveries.push(took);
        let until = r.heal_ns + took;
        let after = by_heal.partition_point(|&j| records[j].heal_ns <= r.heal_ns);
        if later_start[after] >= until {
            isolated.push(took);
        }
    }
    (recoveries, isolated)
}

/// `zklock-chaos __rescore DIR`: the recovery figures of a kept campaign, from its `register.history` and
/// `faults.history` alone.
pub fn rescore(dir: &std::path::Path) -> Result<()> {
    use clap::ValueEnum as _;
    let ops: Vec<crate::history::Op> = std::fs::read_to_string(dir.join("register.history"))?
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.parse().map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    let mut records = Vec::new();
    for line in std::fs::read_to_string(dir.join("faults.history"))?.lines() {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        if line.starts_with('#') || f.len() < 3 {
            continue;
        }
        let fault = Fault::value_variants()
            .iter()
            .copied()
            .find(|v| format!("{v:?}") == f[0])
            .ok_or_else(|| anyhow::anyhow!("unknown fault {:?}", f[0]))?;
        records.push(crate::nemesis::Record {
            fault,
            target: f.get(3).unwrap_or(&"").to_string(),
            start_ns: f[1].parse()?,
            heal_ns: f[2].parse()?,
            violation: None,
        });
    }
    let (mut all, mut alone) = recovery_times(&ops, &records);
    all.sort_unstable();
    alone.sort_unstable();
    let p = |v: &[u64], q: f64| report::percentile(v, q);
    println!(
        "faults={} recovered={} recovery_p50_ms={:.0} recovery_p99_ms={:.0} isolated={} isolated_p50_ms={:.0} \
         isolated_p99_ms={:.0}",
        records.len(),
        all.len(),
        p(&all, 0.5),
        p(&all, 0.99),
        alone.len(),
        p(&alone, 0.5),
        p(&alone, 0.99)
    );
    Ok(())
}

#[cfg(test)]
mod recovery_times_tests {
    use super::*;
    use crate::history::{Action, Kind, Op};
    use crate::nemesis::Record;
    use rand::{Rng, SeedableRng};

    /// The definition, as it was computed before (`check_recovery` once per fault): quadratic.
    fn by_definition(ops: &[Op], records: &[Record]) -> (Vec<u64>, Vec<u64>) {
        let mut recoveries: Vec<u64> = Vec::new();
        let mut isolated: Vec<u64> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let Ok(took) = checker::check_recovery(ops, r.heal_ns, u64::MAX) else {
                continue;
            };
            recoveries.push(took);
            let until = r.heal_ns + took;
            let alone = records
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .all(|(_, o)| o.heal_ns <= r.heal_ns || o.start_ns >= until);
            if alone {
                isolated.push(took);
            }
        }
        (recoveries, isolated)
    }

    /// `n` ops over `n × 10` ms by 4 clients in sections of 1–5 ops (some rejected, some not acquisitions, times
    /// a little out of order), and `faults` faults.
    fn synthetic(rng: &mut rand::rngs::StdRng, n: usize, faults: usize) -> (Vec<Op>, Vec<Record>) {
        let mut ops = Vec::with_capacity(n);
        let mut tokens = [0i64; 4];
        let mut left = [0u32; 4];
        for i in 0..n {
            let client = rng.gen_range(0..4u32);
            if left[client as usize] == 0 {
                tokens[client as usize] += 1;
                left[client as usize] = rng.gen_range(1..=5);
            }
            left[client as usize] -= 1;
            ops.push(Op {
                seq: i as u64,
                at_ns: (i as u64 * 10 + rng.gen_range(0..15)) * 1_000_000,
                client,
                token: tokens[client as usize],
                kind: Kind::Exclusive,
                action: match rng.gen_range(0..10) {
                    0 => Action::Arrive,
                    1..4 => Action::Read,
                    _ => Action::Write,
                },
                value: 0,
                accepted: rng.gen_range(0..20) != 0,
            });
        }
        let end = n as u64 * 10_000_000;
        let records = (0..faults)
            .map(|_| {
                let start_ns = rng.gen_range(0..end);
                Record {
                    fault: Fault::Pause,
                    target: String::new(),
                    start_ns,
                    heal_ns: start_ns + rng.gen_range(0..3_000_000_000),
                    violation: None,
                }
            })
            .collect();
        (ops, records)
    }

    #[test]
    fn the_sweep_gives_the_definitions_figures() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        for round in 0..40 {
            let (ops, records) = synthetic(&mut rng, 50 + round * 40, 1 + round % 25);
            assert_eq!(
                recovery_times(&ops, &records),
                by_definition(&ops, &records),
                "round {round}"
            );
        }
        // Ties: faults healing at the same instant, ops at the heal.
        let (mut ops, mut records) = synthetic(&mut rng, 500, 30);
        for (i, r) in records.iter_mut().enumerate() {
            r.heal_ns = ops[(i * 7) % ops.len()].at_ns;
            r.start_ns = r.start_ns.min(r.heal_ns);
        }
        records[1].heal_ns = records[0].heal_ns;
        ops.iter_mut().for_each(|op| op.at_ns -= op.at_ns % 20_000_000);
        assert_eq!(recovery_times(&ops, &records), by_definition(&ops, &records));
    }

    #[test]
    fn six_hundred_thousand_ops_and_two_thousand_faults_in_seconds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7003);
        let (ops, records) = synthetic(&mut rng, 600_000, 2_400);
        let started = std::time::Instant::now();
        let (all, alone) = recovery_times(&ops, &records);
        let took = started.elapsed();
        eprintln!(
            "recovery_times: {} ops, {} faults: {} recoveries, {} isolated in {:.2} s",
            ops.len(),
            records.len(),
            all.len(),
            alone.len(),
            took.as_secs_f64()
        );
        assert!(all.len() > 2_000, "{}", all.len());
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }
}
