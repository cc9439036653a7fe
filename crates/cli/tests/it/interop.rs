//! `zklock run` shares one lock with Java services using Apache Curator's `InterProcessMutex` and with Python
//! services using kazoo's `Lock` (made with `extra_lock_patterns=["-lock-"]`): exclusion both ways, proved by a
//! counter that two holders at once would lose an update of.

// The Curator peer (`crates/zklock/tests/peers/CuratorPeer.java`), launched as the zklock crate's interop tests
// launch it.
use zklock_testkit::peers::{Counter, Peer};
use zklock_testkit::unique_path;

use crate::support::*;

/// Rounds of each peer process.
const PEER_ROUNDS: usize = 20;
/// Concurrent lanes of `zklock run`, each running [`RUNS_PER_LANE`] commands one after the other.
const LANES: usize = 4;
const RUNS_PER_LANE: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_mutex_and_zklock_run_keep_a_counter_exact() {
    keep_a_counter_exact("curator").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_lock_and_zklock_run_keep_a_counter_exact() {
    keep_a_counter_exact("kazoo").await;
}

/// Two peer processes (`curator` or `kazoo`) and four lanes of `zklock run` increment one counter under one lock.
async fn keep_a_counter_exact(peer: &str) {
    let hosts = zookeeper().await;
    let path = unique_path(&format!("cli-interop-{peer}"));
    let counter = Counter::new();
    let rounds = PEER_ROUNDS.to_string();
    let mut peers = Vec::new();
    for _ in 0..2 {
        peers.push(match peer {
            "curator" => Peer::curator(&["mutex", "increment", &hosts, &path, &rounds, counter.path()]).await,
            _ => Peer::kazoo(&["increment", &hosts, &path, &rounds, counter.path()]).await,
        });
    }
    // A JVM takes a second or more to start: wait until both are connected, then start everybody at once.
    for peer in &mut peers {
        peer.expect("READY").await;
    }
    for peer in &mut peers {
        peer.send("GO").await;
    }
    // The command reads, pauses and writes: two holders at once would lose an update.
    let script = format!(
        "v=$(cat '{0}'); sleep 0.01; echo $((v + 1)) > '{0}'",
        counter.path()
    );
    let lanes: Vec<_> = (0..LANES)
        .map(|_| {
            let (hosts, path, script) = (hosts.clone(), path.clone(), script.clone());
            tokio::spawn(async move {
                for _ in 0..RUNS_PER_LANE {
                    let out = output(&["run", "--connect", &hosts, &path, "--", "sh", "-c", &script]).await;
                    assert!(out.status.success(), "zklock run failed: {}", text(&out.stderr));
                }
            })
        })
        .collect();
    for lane in lanes {
        tokio::time::timeout(EVENTUALLY, lane)
            .await
            .expect("the zklock runs finished")
            .unwrap();
    }
    for mut peer in peers {
        peer.expect("DONE").await;
        peer.finish().await;
    }
    let expected = 2 * PEER_ROUNDS + LANES * RUNS_PER_LANE;
    assert_eq!(
        counter.value().await,
        expected as u64,
        "lost updates: two holders at once"
    );
    let client = client(&hosts).await;
    let left = match client.list_children(&path).await {
        Ok(children) => children,
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(err) => panic!("listing {path}: {err}"),
    };
    assert_eq!(left, Vec::<String>::new(), "no lock node left behind");
}
