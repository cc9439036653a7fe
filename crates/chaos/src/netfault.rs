//! The network faults: links between the ensemble's members and between each contender and the servers, cut or
//! slowed while every process runs and every TCP connection stays open (the testkit's `LinkProxy`: bytes are held,
//! not refused; a close is not passed on while its way is stopped). Unlike SIGSTOP, a partitioned member keeps
//! running and keeps its clients, and believes what it believed until its own timeouts tell it otherwise.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::runtime::Handle;
use zklock_testkit::{Condition, Direction, LinkProxy, Slowness};

use crate::servers::Servers;

/// The links of one contender: to every member, all obeying the same two directions.
struct ClientLinks {
    up: Arc<Direction>,
    down: Arc<Direction>,
    proxies: Vec<LinkProxy>,
}

/// Every link a network fault may act on.
pub struct Net {
    /// `members[i][j]`: bytes from member `i` to member `j` (the ensemble only; empty otherwise).
    members: Vec<Vec<Option<Arc<Direction>>>>,
    clients: Vec<ClientLinks>,
    /// Contenders whose links a fault holds (a second fault would end the first early).
    busy: Mutex<Vec<usize>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Net {
    /// The member links of `servers` (an ensemble started with peer links), and `clients` contenders' links to
    /// every one of `members`, when `client_links`.
    pub fn start(
        servers: &Servers,
        members: &[SocketAddr],
        clients: usize,
        client_links: bool,
    ) -> Result<Net> {
        let members_links = match servers {
            Servers::ZooKeeper(zk) => {
                let zk = zk.lock().unwrap_or_else(|e| e.into_inner());
                match zk.peer_links() {
                    Some(links) => (0..zk.members())
                        .map(|i| {
                            (0..zk.members())
                                .map(|j| (i != j).then(|| links.direction(i, j)))
                                .collect()
                        })
                        .collect(),
                    None => Vec::new(),
                }
            }
            Servers::Embedded(_) => Vec::new(),
        };
        let mut links = Vec::new();
        if client_links {
            for _ in 0..clients {
                let (up, down) = (Direction::new(), Direction::new());
                let proxies = members
                    .iter()
                    .map(|&member| LinkProxy::start(&Handle::current(), member, up.clone(), down.clone()))
                    .collect::<std::io::Result<Vec<_>>>()
                    .context("starting the contenders' links")?;
                links.push(ClientLinks { up, down, proxies });
            }
        }
        Ok(Net {
            members: members_links,
            clients: links,
            busy: Mutex::new(Vec::new()),
        })
    }

    /// Whether the members reach each other through links.
    pub fn has_member_links(&self) -> bool {
        !self.members.is_empty()
    }

    /// Where contender `slot` reaches each member (`None` without client links).
    pub fn client_addrs(&self, slot: usize) -> Option<Vec<SocketAddr>> {
        self.clients
            .get(slot)
            .map(|c| c.proxies.iter().map(LinkProxy::addr).collect())
    }

    fn direction(&self, from: usize, to: usize) -> &Direction {
        self.members[from][to].as_deref().expect("two different members")
    }

    /// Stops every byte between the groups `a` and `b`, both ways; returns what to heal.
    fn split(&self, a: &[usize], b: &[usize]) -> Vec<(usize, usize)> {
        let mut stopped = Vec::new();
        for &i in a {
            for &j in b {
                stopped.extend([(i, j), (j, i)]);
            }
        }
        self.stop(&stopped);
        stopped
    }

    fn stop(&self, pairs: &[(usize, usize)]) {
        for &(i, j) in pairs {
            self.direction(i, j).set(Condition::Stop);
        }
    }

    fn heal(&self, pairs: &[(usize, usize)]) {
        for &(i, j) in pairs {
            self.direction(i, j).set(Condition::Pass);
        }
    }

    /// Contender `slot`'s links, claimed for one fault; `None` when another fault holds them.
    fn claim(&self, slot: usize) -> Option<&ClientLinks> {
        let links = self.clients.get(slot)?;
        let mut busy = lock(&self.busy);
        if busy.contains(&slot) {
            return None;
        }
        busy.push(slot);
        Some(links)
    }

    fn release(&self, slot: usize) {
        lock(&self.busy).retain(|&s| s != slot);
    }
}

/// A member fault, held for `hold`: `what` draws its links from `pick`, with the current leader. Returns the
/// description and the directions to heal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberFault {
    /// Random halves: the leader alone, a follower alone, or every member alone (no quorum anywhere).
    Partition,
    /// One member sees both sides; the other two do not see each other.
    Bridge,
    /// Bytes from one member to another stop; the other way flows.
    Oneway,
}

/// Applies `fault` to the member links; returns its description and the directions it stopped.
pub fn member_fault(
    net: &Net,
    fault: MemberFault,
    leader: Option<usize>,
    pick: u64,
) -> (String, Vec<(usize, usize)>) {
    let n = net.members.len();
    let mut rng = StdRng::seed_from_u64(pick);
    let leader = leader.unwrap_or(0);
    let others = |m: usize| (0..n).filter(move |&o| o != m).collect::<Vec<_>>();
    let role = |m: usize| if m == leader { "leader" } else { "follower" };
    match fault {
        MemberFault::Partition => match rng.gen_range(0..5) {
            0 | 1 => {
                let rest = others(leader);
                let healed = net.split(&[leader], &rest);
                (format!("leader {leader} | {rest:?}"), healed)
            }
            2 | 3 => {
                let followers = others(leader);
                let alone = followers[rng.gen_range(0..followers.len())];
                let rest = others(alone);
                let healed = net.split(&[alone], &rest);
                (format!("follower {alone} | {rest:?}"), healed)
            }
            _ => {
                let mut healed = Vec::new();
                for i in 0..n {
                    for j in (i + 1)..n {
                        healed.extend(net.split(&[i], &[j]));
                    }
                }
                ("every member alone".to_owned(), healed)
            }
        },
        MemberFault::Bridge => {
            let bridge = rng.gen_range(0..n);
            let sides = others(bridge);
            let healed = net.split(&sides[..1], &sides[1..]);
            (
                format!(
                    "{} {bridge} bridges {} {} and {} {}",
                    role(bridge),
                    role(sides[0]),
                    sides[0],
                    role(sides[1]),
                    sides[1]
                ),
                healed,
            )
        }
        MemberFault::Oneway => {
            let from = rng.gen_range(0..n);
            let to = others(from)[rng.gen_range(0..n - 1)];
            net.stop(&[(from, to)]);
            (
                format!("{} {from} -> {} {to} stopped", role(from), role(to)),
                vec![(from, to)],
            )
        }
    }
}

/// Ends a member fault.
pub fn heal_members(net: &Net, stopped: &[(usize, usize)]) {
    net.heal(stopped);
}

/// Cuts contender `slot` from every server for `hold`: its process runs, its TCP connections stay open, no byte
/// crosses either way. `None` when another fault holds its links.
pub async fn partition_client(net: &Net, slot: usize, hold: Duration) -> Option<String> {
    let links = net.claim(slot)?;
    links.up.set(Condition::Stop);
    links.down.set(Condition::Stop);
    tokio::time::sleep(hold).await;
    links.up.set(Condition::Pass);
    links.down.set(Condition::Pass);
    net.release(slot);
    Some(format!("contender {slot} cut from every server"))
}

/// A slowness drawn from `rng`: 50–500 ms one way, jitter up to half of that, 5–30 % of chunks lost.
fn slowness(rng: &mut StdRng) -> Slowness {
    let delay = Duration::from_millis(rng.gen_range(50..=500));
    Slowness {
        delay,
        jitter: delay.mul_f64(rng.gen_range(0.0..0.5)),
        loss: rng.gen_range(0.05..0.30),
    }
}

/// Makes chosen links slow and lossy for `hold`: member links (all of them, or one member's) on an ensemble, and
/// one contender's links or every free contender's. Heals them all.
pub async fn slow_net(net: &Net, hold: Duration, pick: u64) -> String {
    let mut rng = StdRng::seed_from_u64(pick);
    let slow = slowness(&mut rng);
    let mut members = Vec::new();
    let mut what = Vec::new();
    let n = net.members.len();
    if n > 0 {
        if rng.gen_bool(0.5) {
            members = (0..n)
                .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
                .collect();
            what.push("every member link".to_owned());
        } else {
            let m = rng.gen_range(0..n);
            members = (0..n)
                .filter(|&o| o != m)
                .flat_map(|o| [(m, o), (o, m)])
                .collect();
            what.push(format!("member {m}'s links"));
        }
    }
    let slots: Vec<usize> = if net.clients.is_empty() {
        Vec::new()
    } else if rng.gen_bool(0.5) {
        vec![rng.gen_range(0..net.clients.len())]
    } else {
        (0..net.clients.len()).collect()
    };
    let claimed: Vec<usize> = slots.into_iter().filter(|&s| net.claim(s).is_some()).collect();
    if !claimed.is_empty() {
        what.push(format!("contenders {claimed:?}"));
    }
    for &(i, j) in &members {
        net.direction(i, j).set(Condition::Slow(slow));
    }
    for &s in &claimed {
        net.clients[s].up.set(Condition::Slow(slow));
        net.clients[s].down.set(Condition::Slow(slow));
    }
    tokio::time::sleep(hold).await;
    net.heal(&members);
    for &s in &claimed {
        net.clients[s].up.set(Condition::Pass);
        net.clients[s].down.set(Condition::Pass);
        net.release(s);
    }
    format!(
        "{} ({} ms ± {} ms, {:.0} % lost)",
        if what.is_empty() {
            "nothing".to_owned()
        } else {
            what.join(", ")
        },
        slow.delay.as_millis(),
        slow.jitter.as_millis(),
        slow.loss * 100.0
    )
}
