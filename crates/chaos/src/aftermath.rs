//! After the contenders ended: drain what a queue has left, and the cleanliness checks (no contender node, no
//! session left), and the commands' intervals of the `run` workload.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use zookeeper_client::Client;

use crate::history::{parse_interval, Interval, Op};
use crate::register::{Connection, Register};

/// Takes every item left in the queue (after the contenders ended and their claims went with their sessions),
/// recording it like a consumer does.
pub async fn drain(connect: &str, path: &str, register: &Register) -> anyhow::Result<()> {
    let (client, mut conn) = open(connect, register).await?;
    take_all(async || {
        crate::workloads::queue::consume(
            (&client).into(),
            path,
            &mut conn,
            Duration::from_secs(1),
            Duration::ZERO,
        )
        .await
    })
    .await
}

/// Takes every item left in the priority queue, like [`drain`], recording each look and item as a consumer does.
pub async fn drain_priority(connect: &str, path: &str, register: &Register) -> anyhow::Result<()> {
    let (client, mut conn) = open(connect, register).await?;
    take_all(async || {
        crate::workloads::priority_queue::consume_priority((&client).into(), path, &mut conn, Duration::ZERO)
            .await
    })
    .await
}

/// Calls `take_one` until it finds nothing left to take (at most 100,000 times).
async fn take_all(mut take_one: impl AsyncFnMut() -> zklock::Result<bool>) -> anyhow::Result<()> {
    for _ in 0..100_000 {
        if !take_one().await? {
            return Ok(());
        }
    }
    anyhow::bail!("more than 100,000 items left")
}

/// Reads the counter once every contender has ended and records its value (`final`) for the checker.
pub async fn record_final_count(connect: &str, path: &str, register: &Register) -> anyhow::Result<()> {
    let (client, mut conn) = open(connect, register).await?;
    let value = zklock::AtomicLong::new(&client, path)?.get().await?;
    conn.op(
        crate::history::Kind::Shared,
        0,
        crate::history::Action::Final,
        value,
    )
    .await?;
    Ok(())
}

/// A session of the aftermath's own (10 s timeout), and a connection to the register that records what it does.
async fn open(connect: &str, register: &Register) -> anyhow::Result<(Client, Connection)> {
    let client = session(connect).await?;
    let conn = Connection::open(&register.addr().to_string(), u32::MAX).await?;
    Ok((client, conn))
}

async fn session(connect: &str) -> std::result::Result<Client, zookeeper_client::Error> {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(connect)
        .await
}

/// The value of `key` in a `mntr` answer.
fn mntr_field(mntr: &str, key: &str) -> Option<String> {
    mntr.lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
}

/// When the servers serve again after the last fault (`now_ns`), waiting at most until `deadline_ns`: a leader (or
/// a standalone server) and a majority of members that say they lead or follow it. `None`: not before the deadline.
/// A member cut from its peers may stay out of the quorum for a while after its links are back (an election
/// whose notification interval grew while it could reach nobody); until then that is ZooKeeper's unavailability,
/// not a stalled lock.
pub async fn serving_again(members: &[std::net::SocketAddr], deadline_ns: u64) -> Option<u64> {
    let majority = members.len() / 2 + 1;
    loop {
        let polled = members.to_vec();
        let states = tokio::task::spawn_blocking(move || {
            polled
                .iter()
                .filter_map(|&addr| {
                    let mntr =
                        zklock_testkit::four_letter_word(addr, "mntr", Duration::from_millis(500)).ok()?;
                    mntr_field(&mntr, "zk_server_state")
                })
                .collect::<Vec<String>>()
        })
        .await
        .unwrap_or_default();
        let led = states.iter().any(|s| s == "leader" || s == "standalone");
        let serving = states
            .iter()
            .filter(|s| ["leader", "follower", "standalone"].contains(&s.as_str()))
            .count();
        let now = crate::clock::now_ns();
        if led && serving >= majority {
            return Some(now);
        }
        if now >= deadline_ns {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the server (the leader, in an ensemble) has no session left: `zk_global_sessions` of `mntr`.
pub async fn wait_no_sessions(
    members: &[std::net::SocketAddr],
    bound: Duration,
) -> std::result::Result<(), String> {
    let deadline = tokio::time::Instant::now() + bound;
    let members = members.to_vec();
    loop {
        let members = members.clone();
        let sessions = tokio::task::spawn_blocking(move || {
            members.iter().find_map(|&addr| {
                let mntr = zklock_testkit::four_letter_word(addr, "mntr", Duration::from_secs(2)).ok()?;
                let state = mntr_field(&mntr, "zk_server_state")?;
                if state != "leader" && state != "standalone" {
                    return None;
                }
                mntr_field(&mntr, "zk_global_sessions")?.parse::<u64>().ok()
            })
        })
        .await
        .ok()
        .flatten();
        match sessions {
            Some(0) => return Ok(()),
            other if tokio::time::Instant::now() >= deadline => {
                return Err(match other {
                    Some(n) => format!(
                        "{n} session(s) left {:.0} s after the last contender ended",
                        bound.as_secs_f64()
                    ),
                    None => "no server answered mntr with its session count".to_owned(),
                })
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Waits until no ephemeral node is left under `path` (every contender's node went with its session).
pub async fn wait_clean(connect: &str, path: &str, bound: Duration) -> std::result::Result<(), String> {
    let client = session(connect)
        .await
        .map_err(|e| format!("cannot connect to check for leftover nodes: {e}"))?;
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        match ephemerals_under(&client, path).await {
            Ok(left) if left.is_empty() => return Ok(()),
            Ok(left) if tokio::time::Instant::now() >= deadline => {
                return Err(format!(
                    "{} contender node(s) left {:.0} s after the last contender ended: {left:?}",
                    left.len(),
                    bound.as_secs_f64()
                ))
            }
            Err(err) if tokio::time::Instant::now() >= deadline => {
                return Err(format!("cannot list {path}: {err}"))
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn ephemerals_under(
    client: &Client,
    path: &str,
) -> std::result::Result<Vec<String>, zookeeper_client::Error> {
    Ok(ephemeral_stats_under(client, path)
        .await?
        .into_iter()
        .map(|(path, _)| path)
        .collect())
}

/// Every ephemeral node under `path` with its stat, depth first.
async fn ephemeral_stats_under(
    client: &Client,
    path: &str,
) -> std::result::Result<Vec<(String, zookeeper_client::Stat)>, zookeeper_client::Error> {
    let mut left = Vec::new();
    let mut queue = vec![path.to_owned()];
    while let Some(dir) = queue.pop() {
        let children = match client.list_children(&dir).await {
            Ok(children) => children,
            Err(zookeeper_client::Error::NoNode) => continue,
            Err(err) => return Err(err),
        };
        for child in children {
            let full = format!("{dir}/{child}");
            if let Some(stat) = client.check_stat(&full).await? {
                if stat.ephemeral_owner != 0 {
                    left.push((full.clone(), stat));
                }
            }
            queue.push(full);
        }
    }
    Ok(left)
}

/// The ephemeral nodes under `path` (contenders' nodes), one a line with the session that owns it and its czxid,
/// sorted by path; read after a `sync`. Taken just before the contenders stop, it shows what a stalled queue was
/// waiting behind (docs/reliability.md, finding 10).
pub async fn nodes_now(connect: &str, path: &str) -> std::result::Result<String, String> {
    let client = session(connect)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    client.sync(path).await.map_err(|e| format!("sync {path}: {e}"))?;
    let mut nodes = ephemeral_stats_under(&client, path)
        .await
        .map_err(|e| format!("cannot list {path}: {e}"))?;
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = String::new();
    for (path, stat) in nodes {
        lines.push_str(&format!(
            "{path} session 0x{:x} czxid 0x{:x}\n",
            stat.ephemeral_owner, stat.czxid
        ));
    }
    Ok(lines)
}

/// The commands' intervals, each extended to the last operation the register saw with its token.
pub fn command_intervals(dir: &Path, ops: &[Op]) -> Result<Vec<Interval>> {
    let mut last_op: BTreeMap<i64, u64> = BTreeMap::new();
    for op in ops {
        let at = last_op.entry(op.token).or_default();
        *at = (*at).max(op.at_ns);
    }
    let mut intervals = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("command-") && name.ends_with(".log")) {
            continue;
        }
        let text = std::fs::read_to_string(entry.path())?;
        if let Some(mut iv) = parse_interval(&name, &text) {
            if let Some(&at) = last_op.get(&iv.token) {
                iv.last_ns = iv.last_ns.max(at);
            }
            intervals.push(iv);
        }
    }
    Ok(intervals)
}
