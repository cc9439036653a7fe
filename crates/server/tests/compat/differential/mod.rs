//! Differential testing: the same seeded random request streams against real ZooKeeper 3.8 and the
//! embedded server, traces compared op by op (see `exec` for what is normalised). Streams include connection
//! losses and re-attaches with setWatches2; `fixed` has hand-written cases, `chroot` a real client's view of
//! persistent watches under a chroot.
//!
//! Replay a failure with `ZKLOCK_DIFF_SEED=<seed>`; size a run with `ZKLOCK_DIFF_STREAMS` (default 20) and
//! `ZKLOCK_DIFF_OPS` (ops per stream, default 500). `ZKLOCK_DIFF_CANDIDATE=zookeeper` compares two real
//! ZooKeepers instead, which checks the harness itself (they must always agree).

mod chroot;
mod exec;
mod fixed;
mod gen;
mod known;
mod ops;
mod shrink;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use zklock_server::{Server, ServerConfig};
use zklock_testkit::ZooKeeper;

use crate::support::env_or;

/// Whole-run budget: streams not started by then are skipped (and reported), so CI time stays bounded.
const BUDGET: Duration = Duration::from_secs(150);

async fn start_zookeeper() -> ZooKeeper {
    tokio::task::spawn_blocking(ZooKeeper::standalone)
        .await
        .expect("join")
        .expect("real ZooKeeper starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_random_streams() {
    zklock_testkit::init_tracing();
    let seed: u64 = env_or("ZKLOCK_DIFF_SEED", rand::random());
    let streams: u64 = env_or("ZKLOCK_DIFF_STREAMS", 20);
    let per_stream: usize = env_or("ZKLOCK_DIFF_OPS", 500);
    eprintln!("differential: seed {seed} (replay with ZKLOCK_DIFF_SEED={seed}), {streams} streams x {per_stream} ops");

    // Dedicated servers: another test's writes would shift the zxids this test compares.
    let reference = start_zookeeper().await;
    let reference_addr = reference.member_addr(0);
    let (candidate_addr, _candidate_zk, candidate_server): (SocketAddr, Option<ZooKeeper>, Option<Server>) =
        if std::env::var("ZKLOCK_DIFF_CANDIDATE").as_deref() == Ok("zookeeper") {
            let zk = start_zookeeper().await;
            (zk.member_addr(0), Some(zk), None)
        } else {
            let server = Server::start(ServerConfig::default())
                .await
                .expect("embedded server starts");
            (server.local_addr(), None, Some(server))
        };

    let started = Instant::now();
    let mut total = 0;
    for k in 0..streams {
        if started.elapsed() > BUDGET {
            eprintln!("differential: time budget used up after {k} streams");
            break;
        }
        let stream_seed = seed.wrapping_add(k);
        let ops = gen::stream(stream_seed, per_stream);
        if let Some(mismatch) = shrink::compare(reference_addr, candidate_addr, &ops).await {
            let minimal = shrink::shrink(reference_addr, candidate_addr, &ops, &mismatch).await;
            let replay = shrink::compare(reference_addr, candidate_addr, &minimal).await;
            panic!(
                "{}",
                report(seed, stream_seed, &mismatch, &minimal, replay.as_ref())
            );
        }
        total += ops.len();
    }
    eprintln!("differential: {total} ops agreed in {:?}", started.elapsed());
    assert!(total >= 500, "too few ops ran within the budget: {total}");
    if let Some(server) = candidate_server {
        server.shutdown().await.expect("shutdown");
    }
}

fn report(
    seed: u64,
    stream_seed: u64,
    first: &shrink::Mismatch,
    minimal: &[ops::Op],
    replay: Option<&shrink::Mismatch>,
) -> String {
    let mut text = format!(
        "differential mismatch: seed {seed} (ZKLOCK_DIFF_SEED={seed}), stream seed {stream_seed}, first at op {}\n\
         reference: {}\ncandidate: {}\n\nshrunk to {} ops:\n",
        first.index,
        first.reference.get(first.index).map_or("<none>", String::as_str),
        first.candidate.get(first.index).map_or("<none>", String::as_str),
        minimal.len()
    );
    for (i, op) in minimal.iter().enumerate() {
        text.push_str(&format!("  {i}: {op:?}\n"));
    }
    match replay {
        Some(m) => {
            for i in 0..m.reference.len().max(m.candidate.len()) {
                let r = m.reference.get(i).map_or("<none>", String::as_str);
                let c = m.candidate.get(i).map_or("<none>", String::as_str);
                let mark = if r == c { " " } else { "*" };
                text.push_str(&format!("{mark}{i} zookeeper: {r}\n{mark}{i} candidate: {c}\n"));
            }
        }
        None => text.push_str("(the shrunk sequence no longer mismatches on replay: timing-dependent?)\n"),
    }
    text
}

/// Hand-written sequences for the divergences found (and fixed) so far, which random streams reach only
/// rarely (see `known`): each must trace the same on both servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_fixed_cases() {
    zklock_testkit::init_tracing();
    let cases = fixed::cases();
    let reference = start_zookeeper().await;
    let server = Server::start(ServerConfig::default())
        .await
        .expect("embedded server starts");
    for (name, ops) in &cases {
        if let Some(m) = shrink::compare(reference.member_addr(0), server.local_addr(), ops).await {
            let mut text = format!("case {name:?} differs at op {}\n", m.index);
            for i in 0..m.reference.len().max(m.candidate.len()) {
                let r = m.reference.get(i).map_or("<none>", String::as_str);
                let c = m.candidate.get(i).map_or("<none>", String::as_str);
                text.push_str(&format!("{i} zookeeper: {r}\n{i} candidate: {c}\n"));
            }
            panic!("{text}");
        }
    }
    server.shutdown().await.expect("shutdown");
}

/// Persistent and persistent-recursive watches through a `zookeeper-client` connected with a chroot (see
/// `chroot`): the same events, with the same chroot-relative paths, from both servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_chroot_watches() {
    zklock_testkit::init_tracing();
    let server = Server::start(ServerConfig::default())
        .await
        .expect("embedded server starts");
    let ours = chroot::trace(server.local_addr(), &zklock_testkit::unique_path("chroot")).await;
    let reference = zklock_testkit::shared_standalone().member_addr(0);
    let theirs = chroot::trace(reference, &zklock_testkit::unique_path("chroot")).await;
    eprintln!("{theirs:#?}");
    assert_eq!(ours, theirs, "embedded (left) differs from ZooKeeper 3.8 (right)");
    // Not merely equal: the chroot node itself is "/", a node below it its path from the chroot.
    assert!(theirs[0].contains(r#""NodeDataChanged /""#), "{theirs:#?}");
    assert!(theirs[2].contains(r#""NodeCreated /x/y/z""#), "{theirs:#?}");
    server.shutdown().await.expect("shutdown");
}
