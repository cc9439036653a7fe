//! Opening and closing many sessions at once.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::StreamExt;
use zookeeper_client as zk;

use super::progress;

/// Session timeout of every benchmark session: long enough that a load generator busy with thousands of sessions
/// on one thread never lets one expire.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Sessions connecting at once.
const CONNECTING_AT_ONCE: usize = 128;

/// Raises this process's open-file limit to its hard limit (once; the servers it starts inherit it) and returns
/// the limit: each session is a socket, and a session through the counting proxy three.
pub fn open_file_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
        let limit = getrlimit(Resource::Nofile);
        if limit.current != limit.maximum {
            let raised = Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            };
            if let Err(e) = setrlimit(Resource::Nofile, raised) {
                progress!("could not raise the open-file limit: {e}");
            }
        }
        getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
    })
}

/// Fails when `sockets` more open files would not fit under the limit (with room for everything else).
pub fn check_open_files(sockets: usize, what: &str) -> Result<()> {
    let limit = open_file_limit();
    let needed = sockets as u64 + 512;
    if needed > limit {
        anyhow::bail!(
            "{what} needs about {needed} open files and the limit is {limit} (raise the hard limit: ulimit -Hn)"
        );
    }
    Ok(())
}

/// Opens one session.
pub async fn connect(hosts: &str) -> Result<zk::Client, zk::Error> {
    zk::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .connect(hosts)
        .await
}

/// Opens `n` sessions, `CONNECTING_AT_ONCE` at a time, saying how far it got every few seconds when there are
/// many.
pub async fn connect_many(hosts: &str, n: usize, what: &str) -> Result<Vec<zk::Client>> {
    let started = Instant::now();
    let mut last_said = Instant::now();
    let mut clients = Vec::with_capacity(n);
    let mut connecting = futures::stream::iter(0..n)
        .map(|_| connect(hosts))
        .buffer_unordered(CONNECTING_AT_ONCE);
    while let Some(client) = connecting.next().await {
        clients.push(
            client.with_context(|| format!("connecting session {} of {n} to {hosts}", clients.len() + 1))?,
        );
        if last_said.elapsed() > Duration::from_secs(5) {
            progress!("  {what}: {} of {n} sessions connected", clients.len());
            last_said = Instant::now();
        }
    }
    if n >= 1000 {
        progress!(
            "  {what}: {n} sessions connected in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(clients)
}

/// Closes every session and waits (briefly, each) for the server's confirmation, so that their ephemeral nodes
/// are gone now rather than a session timeout later. Every other clone of the clients must be dropped first.
pub async fn close_many(clients: Vec<zk::Client>) {
    futures::stream::iter(clients)
        .map(zklock_bench::close)
        .buffer_unordered(512)
        .collect::<Vec<()>>()
        .await;
}
