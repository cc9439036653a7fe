//! `zklock run` and Java services using Apache Curator's `InterProcessMutex` share one lock.

// The Curator peer (`crates/zklock/tests/peers/CuratorPeer.java`), launched as the zklock crate's interop tests
// launch it.
use zklock_testkit::peers::{Counter, Peer};
use zklock_testkit::unique_path;

use crate::support::*;

/// Rounds of each Curator process.
const CURATOR_ROUNDS: usize = 20;
/// Concurrent lanes of `zklock run`, each running [`RUNS_PER_LANE`] commands one after the other.
const LANES: usize = 4;
const RUNS_PER_LANE: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_mutex_and_zklock_run_keep_a_counter_exact() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-interop-curator");
    let counter = Counter::new();
    let rounds = CURATOR_ROUNDS.to_string();
    let mut peers = Vec::new();
    for _ in 0..2 {
        let args = ["mutex", "increment", &hosts, &path, &rounds, counter.path()];
        peers.push(Peer::curator(&args).await);
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
    let expected = 2 * CURATOR_ROUNDS + LANES * RUNS_PER_LANE;
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
