//! The faults, drawn on a seeded schedule and combined at random (up to two at once; server-level faults one at a
//! time). Every fault heals itself after a bounded hold, and every one is recorded with when it started and healed.

use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use zklock_testkit::{opcode, Proxy};

/// The writes whose reply (or request) `drop-reply` loses: every create, and `multi` (a queue's put and completion).
const CREATES_AND_MULTI: &[i32] = &[
    opcode::CREATE,
    opcode::CREATE2,
    opcode::CREATE_CONTAINER,
    opcode::CREATE_TTL,
    opcode::MULTI,
];
use zookeeper_client::{Acls, Client, CreateMode};

use crate::clock::now_ns;
use crate::contenders::Contenders;
use crate::netfault::{self, MemberFault, Net};
use crate::register::Register;
use crate::servers::{lock, signal, Servers};

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Fault {
    /// SIGSTOP a contender (preferably one inside its critical section; for `run`, the `zklock run` process) for
    /// longer than the session timeout, then SIGCONT.
    Pause,
    /// kill -9 a contender (for `run`: the `zklock run` process); a new one takes its place.
    Kill,
    /// kill -9 the command under `zklock run` (the `run` workload only).
    KillCommand,
    /// Close a contender's connections (through its proxy); it reconnects.
    Cut,
    /// A contender's proxy plays dead for less than the session timeout.
    Blackhole,
    /// A contender's proxy plays dead for longer than the session timeout: its session expires.
    Expire,
    /// The reply to a contender's next create, delete or getChildren is lost and its connection cut.
    DropReply,
    /// kill -9 the server and start it again on the same data (embedded server, standalone ZooKeeper).
    RestartServer,
    /// The embedded server's disk fills up; it is freed again (and the server restarted if it stopped).
    DiskFull,
    /// kill -9 the ensemble's leader; restart it.
    KillLeader,
    /// kill -9 a follower; restart it.
    KillFollower,
    /// Cut one member off (SIGSTOP: its peers and clients hear nothing from it); heal.
    IsolateMinority,
    /// Cut two of three members off: quorum is lost; heal.
    IsolateMajority,
    /// Random halves of the ensemble stop hearing each other (the leader alone, a follower alone, or every member
    /// alone) while every member runs and keeps its clients; heal (the ensemble only).
    Partition,
    /// One member hears both sides, the other two do not hear each other; heal (the ensemble only).
    Bridge,
    /// Bytes from one member to another stop, the other way flows; heal (the ensemble only).
    PartitionOneway,
    /// The lock holder (else any contender) is cut from every server for longer than the session timeout: its
    /// process runs, its TCP connections stay open, no byte crosses; the servers and the others carry on.
    PartitionClient,
    /// Links turn slow and lossy (50–500 ms one way with jitter, 5–30 % of chunks lost and retransmitted): member
    /// links on the ensemble, and contenders' links to the servers; heal.
    SlowNet,
}

impl Fault {
    /// Whether the fault acts on the server rather than on one contender (those run one at a time).
    fn server_level(self) -> bool {
        matches!(
            self,
            Fault::RestartServer
                | Fault::DiskFull
                | Fault::KillLeader
                | Fault::KillFollower
                | Fault::IsolateMinority
                | Fault::IsolateMajority
                | Fault::Partition
                | Fault::Bridge
                | Fault::PartitionOneway
                | Fault::SlowNet
        )
    }

    /// Whether the fault acts on the links between the ensemble's members (it needs `--server ensemble`).
    pub fn needs_member_links(self) -> bool {
        matches!(self, Fault::Partition | Fault::Bridge | Fault::PartitionOneway)
    }

    /// Whether the fault acts on the links between the contenders and the servers.
    pub fn needs_client_links(self) -> bool {
        matches!(self, Fault::PartitionClient | Fault::SlowNet)
    }
}

/// A fault that happened.
#[derive(Debug, Clone)]
pub struct Record {
    /// What it was.
    pub fault: Fault,
    /// What it hit, in words.
    pub target: String,
    /// When it started and healed (`CLOCK_MONOTONIC` ns).
    pub start_ns: u64,
    /// When it healed.
    pub heal_ns: u64,
    /// A guarantee the fault itself showed broken (an acknowledged write lost on the full disk).
    pub violation: Option<String>,
}

/// Everything a fault may act on.
pub struct Targets {
    pub servers: Arc<tokio::sync::Mutex<Servers>>,
    pub proxies: Vec<Arc<Proxy>>,
    pub contenders: Arc<Contenders>,
    pub register: Arc<Register>,
    pub session_timeout: Duration,
    /// The links the network faults act on.
    pub net: Arc<Net>,
    /// Proxies with a fault in progress (a second one would end the first early).
    pub busy: std::sync::Mutex<Vec<usize>>,
}

impl Targets {
    /// A proxy with no fault in progress, marked busy.
    fn claim_proxy(&self, pick: u64) -> Option<usize> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let free: Vec<usize> = (0..self.proxies.len()).filter(|i| !busy.contains(i)).collect();
        let i = *free.get((pick % free.len().max(1) as u64) as usize)?;
        busy.push(i);
        Some(i)
    }

    fn release_proxy(&self, i: usize) {
        self.busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&b| b != i);
    }
}

/// Runs faults drawn from `faults` from now until `until_ns`; returns what happened, every fault healed.
pub async fn run(faults: Vec<Fault>, seed: u64, until_ns: u64, targets: Arc<Targets>) -> Vec<Record> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x006e_656d_6573_6973);
    let server_lock = Arc::new(tokio::sync::Mutex::new(()));
    let slots = Arc::new(tokio::sync::Semaphore::new(2));
    let mut tasks = tokio::task::JoinSet::new();
    if faults.is_empty() {
        return Vec::new();
    }
    loop {
        let gap = Duration::from_millis(rng.gen_range(300..1500));
        tokio::time::sleep(gap).await;
        let fault = *faults.choose(&mut rng).expect("not empty");
        let hold = hold_time(fault, targets.session_timeout, &mut rng);
        // Every fault must have healed before `until_ns`.
        if now_ns() + hold.as_nanos() as u64 + 2_000_000_000 >= until_ns {
            break;
        }
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let server_guard = if fault.server_level() {
            Some(server_lock.clone().lock_owned().await)
        } else {
            None
        };
        let pick: u64 = rng.gen();
        let targets = targets.clone();
        tasks.spawn(async move {
            let record = inject(fault, hold, pick, &targets).await;
            drop((permit, server_guard));
            record
        });
    }
    let mut records = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(Some(record)) = done {
            records.push(record);
        }
    }
    records.sort_by_key(|r| r.start_ns);
    records
}

fn hold_time(fault: Fault, session: Duration, rng: &mut StdRng) -> Duration {
    let mut ms = |lo: u64, hi: u64| Duration::from_millis(rng.gen_range(lo..hi));
    match fault {
        // Past the session timeout and ZooKeeper's tick-bucketed expiry (tickTime 2 s), with room for a successor
        // to take over while the paused holder is still frozen.
        Fault::Pause | Fault::Expire => session + ms(2500, 4000),
        Fault::Blackhole => session.mul_f64(ms(100, 350).as_secs_f64()),
        Fault::Kill | Fault::KillCommand | Fault::Cut => Duration::ZERO,
        Fault::DropReply => ms(500, 2000),
        Fault::RestartServer => ms(0, 1000),
        Fault::DiskFull => ms(500, 2000),
        Fault::KillLeader | Fault::KillFollower => ms(500, 3000),
        Fault::IsolateMinority => ms(1000, 5000),
        Fault::IsolateMajority => ms(1000, 4000),
        // Past the followers' read timeout (syncLimit 5 × tickTime 2 s) half of the time: a partitioned leader
        // keeps leading until then.
        Fault::Partition | Fault::Bridge | Fault::PartitionOneway => ms(2000, 14000),
        Fault::PartitionClient => session + ms(2500, 4000),
        Fault::SlowNet => ms(2000, 6000),
    }
}

/// Injects one fault, holds it, heals it. `None` when there was nothing to hit (no contender running).
async fn inject(fault: Fault, hold: Duration, pick: u64, t: &Targets) -> Option<Record> {
    let start_ns = now_ns();
    let mut violation = None;
    let choose = |n: usize| (pick % n.max(1) as u64) as usize;
    let target = match fault {
        Fault::Pause => {
            let pid = holder_soon(t, pick).await?;
            let target = t.contenders.describe(pid);
            t.contenders.set_paused(pid, true);
            signal(pid, Signal::SIGSTOP);
            tokio::time::sleep(hold).await;
            signal(pid, Signal::SIGCONT);
            t.contenders.set_paused(pid, false);
            target
        }
        Fault::Kill => {
            let pid = t.contenders.pick_any(pick)?;
            let target = t.contenders.describe(pid);
            signal(pid, Signal::SIGKILL);
            target
        }
        Fault::KillCommand => {
            let pid = t.contenders.pick_command(&t.register.inside(), pick)?;
            signal(pid, Signal::SIGKILL);
            format!("command pid {pid}")
        }
        Fault::Cut => {
            let i = choose(t.proxies.len());
            t.proxies.get(i)?.cut_all();
            format!("contender {i}")
        }
        Fault::Blackhole | Fault::Expire => {
            let i = t.claim_proxy(pick)?;
            let proxy = &t.proxies[i];
            proxy.set_blackhole(true);
            tokio::time::sleep(hold).await;
            proxy.set_blackhole(false);
            t.release_proxy(i);
            format!("contender {i}")
        }
        Fault::DropReply => {
            let i = t.claim_proxy(pick)?;
            let proxy = &t.proxies[i];
            let (ops, name): (&[i32], &str) = match pick % 3 {
                0 => (CREATES_AND_MULTI, "create/multi"),
                1 => (&[opcode::DELETE], "delete"),
                _ => (&[opcode::GET_CHILDREN, opcode::GET_CHILDREN2], "getChildren"),
            };
            // Half of the time the reply is lost (the request was executed), half of the time the request itself.
            let lose_request = (pick / 3) % 2 == 1;
            let lost = || proxy.lost_replies() + proxy.lost_requests();
            let before = lost();
            if lose_request {
                proxy.drop_requests_and_cut(ops, 1);
            } else {
                proxy.drop_reply_and_cut(ops);
            }
            let deadline = tokio::time::Instant::now() + hold;
            while lost() == before && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // Disarm if it did not fire.
            proxy.drop_reply_and_cut(&[]);
            proxy.drop_requests_and_cut(&[], 0);
            t.release_proxy(i);
            let what = if lose_request { "request" } else { "reply" };
            let fired = if lost() > before {
                ""
            } else {
                " (no such request came)"
            };
            format!("contender {i}, {name} {what}{fired}")
        }
        Fault::RestartServer => restart_server(t, hold).await,
        Fault::DiskFull => {
            let (target, lost) = disk_full(t, hold).await;
            violation = lost;
            target
        }
        Fault::KillLeader | Fault::KillFollower | Fault::IsolateMinority | Fault::IsolateMajority => {
            ensemble_fault(fault, t, hold, pick).await?
        }
        Fault::Partition | Fault::Bridge | Fault::PartitionOneway => {
            let kind = match fault {
                Fault::Partition => MemberFault::Partition,
                Fault::Bridge => MemberFault::Bridge,
                _ => MemberFault::Oneway,
            };
            member_links_fault(kind, t, hold, pick).await?
        }
        Fault::PartitionClient => {
            let pid = holder_soon(t, pick).await?;
            let slot = t.contenders.slot_of(pid)?;
            let what = netfault::partition_client(&t.net, slot, hold).await?;
            format!("{what} ({})", t.contenders.describe(pid))
        }
        Fault::SlowNet => netfault::slow_net(&t.net, hold, pick).await,
    };
    Some(Record {
        fault,
        target,
        start_ns,
        heal_ns: now_ns(),
        violation,
    })
}

async fn restart_server(t: &Targets, hold: Duration) -> String {
    let mut servers = t.servers.lock().await;
    match &mut *servers {
        Servers::Embedded(e) => {
            e.kill();
            tokio::time::sleep(hold).await;
            if let Err(err) = tokio::task::block_in_place(|| e.launch()) {
                return format!("embedded server: RESTART FAILED: {err:#}");
            }
            "embedded server".to_owned()
        }
        Servers::ZooKeeper(zk) => {
            let zk = zk.clone();
            tokio::task::spawn_blocking(move || {
                let mut zk = lock(&zk);
                zk.kill(0);
                std::thread::sleep(hold);
                match zk.restart(0) {
                    Ok(()) => "ZooKeeper".to_owned(),
                    Err(err) => format!("ZooKeeper: RESTART FAILED: {err}"),
                }
            })
            .await
            .unwrap_or_else(|e| format!("ZooKeeper: restart task failed: {e}"))
        }
    }
}

/// Fills the embedded server's disk, writes to it until a write fails (bounded), frees the disk, restarts the
/// server if it stopped, and checks that every write it acknowledged is there. Returns the target description and
/// the violation, if an acknowledged write was lost.
async fn disk_full(t: &Targets, hold: Duration) -> (String, Option<String>) {
    let mut servers = t.servers.lock().await;
    let Servers::Embedded(e) = &mut *servers else {
        return ("not an embedded server".to_owned(), None);
    };
    let filler = match e.fill_disk() {
        Ok(filler) => filler,
        Err(err) => return (format!("cannot fill the disk: {err}"), None),
    };
    let connect = e.addr.to_string();
    // Large writes use up what is left of the log's preallocated space, so the full disk is hit at once.
    let mut acked = Vec::new();
    let mut failure = String::from("no write failed");
    match connect_direct(&connect).await {
        Ok(client) => {
            let mode = CreateMode::Persistent.with_acls(Acls::anyone_all());
            let _ = client.create(DISK_DIR, b"", &mode).await;
            let data = vec![0x5Au8; 256 * 1024];
            let deadline = tokio::time::Instant::now() + hold + Duration::from_secs(3);
            for n in 0..64 {
                if tokio::time::Instant::now() > deadline {
                    break;
                }
                let path = format!("{DISK_DIR}/w{n}-{}", now_ns());
                match tokio::time::timeout(Duration::from_secs(3), client.create(&path, &data, &mode)).await {
                    Ok(Ok(_)) => acked.push(path),
                    Ok(Err(err)) => {
                        failure = format!("write {n} failed: {err}");
                        break;
                    }
                    Err(_) => {
                        failure = format!("write {n} got no reply");
                        break;
                    }
                }
            }
        }
        Err(err) => failure = format!("cannot connect: {err}"),
    }
    // A server that can no longer write must stop serving; give it a moment to exit.
    for _ in 0..50 {
        if !e.running() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = !e.running();
    let _ = std::fs::remove_file(&filler);
    if stopped {
        if let Err(err) = tokio::task::block_in_place(|| e.launch()) {
            return (
                format!("embedded server stopped on the full disk; RESTART FAILED: {err:#}"),
                None,
            );
        }
    }
    let lost = match verify_and_remove(&connect, &acked).await {
        Ok(missing) if missing.is_empty() => None,
        Ok(missing) => Some(format!(
            "durability: {} of {} writes acknowledged on the full disk are gone after it was freed: {missing:?}",
            missing.len(),
            acked.len()
        )),
        Err(err) => Some(format!("durability: cannot read back the writes acknowledged on the full disk: {err}")),
    };
    let what = if stopped {
        "stopped, restarted"
    } else {
        "kept running"
    };
    (
        format!(
            "embedded server ({what}; {} writes acknowledged, then {failure})",
            acked.len()
        ),
        lost,
    )
}

/// Where the disk-full fault writes.
const DISK_DIR: &str = "/chaos-disk";

async fn connect_direct(connect: &str) -> Result<Client, String> {
    let connecting = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect);
    match tokio::time::timeout(Duration::from_secs(10), connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("timed out".to_owned()),
    }
}

/// The acknowledged paths that are missing; then removes them all.
async fn verify_and_remove(connect: &str, acked: &[String]) -> Result<Vec<String>, String> {
    let client = connect_direct(connect).await?;
    let mut missing = Vec::new();
    for path in acked {
        match client.check_stat(path).await {
            Ok(Some(_)) => {
                let _ = client.delete(path, None).await;
            }
            Ok(None) => missing.push(path.clone()),
            Err(err) => return Err(err.to_string()),
        }
    }
    if let Ok(children) = client.list_children(DISK_DIR).await {
        for child in children {
            let _ = client.delete(&format!("{DISK_DIR}/{child}"), None).await;
        }
    }
    let _ = client.delete(DISK_DIR, None).await;
    Ok(missing)
}

/// A partition of the member links, held, healed; healed only once the ensemble serves again.
async fn member_links_fault(kind: MemberFault, t: &Targets, hold: Duration, pick: u64) -> Option<String> {
    let zk = t.servers.lock().await.zookeeper()?;
    let leader = {
        let zk = zk.clone();
        tokio::task::spawn_blocking(move || lock(&zk).leader())
            .await
            .ok()?
    };
    let (what, stopped) = netfault::member_fault(&t.net, kind, leader, pick);
    tokio::time::sleep(hold).await;
    netfault::heal_members(&t.net, &stopped);
    let served = tokio::task::spawn_blocking(move || lock(&zk).wait_for_leader(Duration::from_secs(30)))
        .await
        .ok()?;
    let outcome = match served {
        Ok(_) => String::new(),
        Err(err) => format!("; NOT SERVING AFTER THE HEAL: {err}"),
    };
    Some(format!("{what}{outcome}"))
}

async fn ensemble_fault(fault: Fault, t: &Targets, hold: Duration, pick: u64) -> Option<String> {
    let zk = t.servers.lock().await.zookeeper()?;
    let result = tokio::task::spawn_blocking(move || {
        let mut zk = lock(&zk);
        let members = zk.members();
        if members < 3 {
            return None;
        }
        let leader = zk.leader();
        let followers: Vec<usize> = (0..members).filter(|&i| Some(i) != leader).collect();
        let follower = followers[(pick % followers.len() as u64) as usize];
        match fault {
            Fault::KillLeader | Fault::KillFollower => {
                let victim = if fault == Fault::KillLeader {
                    leader.unwrap_or(follower)
                } else {
                    follower
                };
                zk.kill(victim);
                std::thread::sleep(hold);
                let outcome = match zk.restart(victim) {
                    Ok(()) => String::new(),
                    Err(err) => format!("; RESTART FAILED: {err}"),
                };
                Some(format!("member {victim}{outcome}"))
            }
            _ => {
                let victims: Vec<usize> = if fault == Fault::IsolateMinority {
                    vec![follower]
                } else {
                    // The leader and one follower: the remaining member alone has no quorum.
                    vec![leader.unwrap_or(followers[0]), follower]
                };
                let pids: Vec<u32> = victims.iter().filter_map(|&i| zk.pid(i)).collect();
                for &pid in &pids {
                    signal(pid, Signal::SIGSTOP);
                }
                std::thread::sleep(hold);
                for &pid in &pids {
                    signal(pid, Signal::SIGCONT);
                }
                // Healed only once the ensemble serves again.
                let _ = zk.wait_for_leader(Duration::from_secs(30));
                Some(format!("members {victims:?}"))
            }
        }
    })
    .await
    .ok()?;
    result
}

/// A contender inside its critical section, waited for (polling the register, bounded by 2 s): critical sections
/// last milliseconds, so a fault aimed at "whoever holds now" would mostly hit one that holds nothing, and a
/// negative control would then depend on its seed and the machine's load. After the bound, any contender.
async fn holder_soon(t: &Targets, pick: u64) -> Option<u32> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let inside = t.register.inside();
        if !inside.is_empty() || tokio::time::Instant::now() >= deadline {
            return t.contenders.pick_holder(&inside, pick);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
