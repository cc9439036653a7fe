//! A lock held by another client library on the same path — kazoo's `Lock` (made with
//! `extra_lock_patterns=["-lock-"]`, as the library's documentation says) or Curator's `InterProcessMutex`: `zklock
//! status` shows the holder, and `zklock run` never runs beside it. `--nonblock` is busy (exit 1), `--timeout` waits
//! and is busy, a blocking `run` queues behind the foreign holder (its log says so) and runs its command only once
//! that holder has released. And a path another kind of recipe uses is refused (exit 64), never shared. Real peer
//! processes against the shared real ZooKeeper and the embedded server.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock_testkit::peers::Peer;
use zklock_testkit::unique_path;

use crate::support::*;

on_both_servers! {
    async fn run_never_runs_beside_a_kazoo_holder(hosts: &str) {
        let path = unique_path("cli-foreign-kazoo");
        let peer = Peer::kazoo(&["hold", hosts, &path]).await;
        never_beside(hosts, &path, peer).await;
    }

    async fn run_never_runs_beside_a_curator_holder(hosts: &str) {
        let path = unique_path("cli-foreign-curator");
        let peer = Peer::curator(&["mutex", "hold", hosts, &path]).await;
        never_beside(hosts, &path, peer).await;
    }

    async fn run_and_elect_refuse_a_path_a_curator_reader_holds(hosts: &str) {
        // A mutex and an election cannot be ordered with Curator's reader: refused, not shared.
        let path = unique_path("cli-foreign-mixed");
        let mut peer = Peer::curator(&["read", "hold", hosts, &path]).await;
        peer.expect("ACQUIRED").await;
        let out = output(&["run", "--connect", hosts, "--nonblock", &path, "--", "true"]).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{stderr}");
        assert!(stderr.contains("in use by a read/write lock's reader"), "{stderr}");
        let out = output(&["elect", "--connect", hosts, "--nonblock", &path, "--", "true"]).await;
        assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
        peer.send("release").await;
        peer.expect("RELEASED").await;
        peer.finish().await;
    }
}

/// The peer is about to hold `path` (it prints `ACQUIRED` once it does and releases on a line on stdin).
async fn never_beside(hosts: &str, path: &str, mut peer: Peer) {
    peer.expect("ACQUIRED").await;
    let out = output(&["status", "--connect", hosts, "--check", path]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "status --check: held: {}",
        text(&out.stdout)
    );

    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let script = format!("echo ran >> '{}'", ran.display());
    let command = ["--", "sh", "-c", script.as_str()];
    let with = |flags: &[&'static str]| -> Vec<String> {
        ["run", "--connect", hosts]
            .iter()
            .chain(flags)
            .chain(&[path])
            .chain(&command)
            .map(|s| s.to_string())
            .collect()
    };
    for flags in [&["--nonblock"][..], &["--timeout", "0.5"][..]] {
        let args = with(flags);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = output(&args).await;
        assert_eq!(
            out.status.code(),
            Some(1),
            "{flags:?}: busy: {}",
            text(&out.stderr)
        );
        assert!(
            !ran.exists(),
            "{flags:?}: the command ran beside the foreign holder"
        );
    }

    // Blocking: it queues behind the foreign holder and says so (`-vv`: the library's "waiting for the contender
    // ahead of us"); its command has not run then, and runs once the holder has released.
    let args = with(&[]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.insert(0, "-vv");
    let mut run = zklock(&args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zklock run");
    let mut stderr = BufReader::new(run.stderr.take().unwrap()).lines();
    let waiting = async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("waiting for the contender ahead of us") {
                return;
            }
        }
        panic!("zklock run ended without waiting");
    };
    tokio::time::timeout(EVENTUALLY, waiting)
        .await
        .expect("zklock run queued behind the foreign holder");
    let drain = tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    assert!(!ran.exists(), "the command ran while the foreign holder held");
    peer.send("release").await;
    peer.expect("RELEASED").await;
    peer.finish().await;
    let status = tokio::time::timeout(EVENTUALLY, run.wait())
        .await
        .expect("zklock run ended after the release")
        .unwrap();
    drain.await.unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n", "ran once");
}
