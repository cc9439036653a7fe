//! TTL nodes across a restart: the TTL lives in the node's `ephemeralOwner` (`0xff00000000000000 | ttl`, as
//! ZooKeeper encodes it), which the snapshot and the log keep, so a TTL node restored from either still expires
//! after its TTL — and is not taken for an ephemeral of a session. Against real ZooKeeper: `compat/ttl.rs`.

use std::path::Path;
use std::time::{Duration, Instant};

use zklock_server::ServerConfig;
use zookeeper_client::{Acls, CreateMode};

use crate::common::{client, server_with, WAIT};

/// Long enough for a shutdown and a start on a loaded machine, short enough for a test.
const TTL: Duration = Duration::from_secs(4);

fn config(dir: &Path) -> ServerConfig {
    ServerConfig {
        data_dir: Some(dir.to_path_buf()),
        extended_types_enabled: true,
        container_check_interval: Duration::from_millis(50),
        ..Default::default()
    }
}

/// Creates a TTL node and a sequential one, restarts per `between`, and checks both are back with their stat and
/// then expire once their TTL has passed.
async fn ttl_survives_restart(between: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with(config(dir.path())).await;
    let zk = client(&server).await;
    let ttl = |mode: CreateMode| mode.with_acls(Acls::anyone_all()).with_ttl(TTL);
    let created = Instant::now();
    let (stat, _) = zk.create("/t", b"x", &ttl(CreateMode::Persistent)).await.unwrap();
    let (_, seq) = zk
        .create("/s-", b"", &ttl(CreateMode::PersistentSequential))
        .await
        .unwrap();
    let sequential = format!("/s-{seq}");
    assert_eq!(stat.ephemeral_owner, 0, "ZooKeeper shows a TTL node's owner as 0");
    drop(zk);
    server.shutdown().await.unwrap();
    between(dir.path());

    let server = server_with(config(dir.path())).await;
    let zk = client(&server).await;
    let (_, restored) = zk.get_data("/t").await.expect("/t is back after the restart");
    assert!(
        created.elapsed() < TTL,
        "the restart took longer than the TTL ({:?}): nothing checked",
        created.elapsed()
    );
    assert_eq!(restored, stat, "the same stat");
    assert!(zk.check_stat(&sequential).await.unwrap().is_some());
    for path in ["/t", sequential.as_str()] {
        tokio::time::timeout(WAIT, zklock_testkit::await_deleted(&zk, path))
            .await
            .unwrap_or_else(|_| panic!("{path} never expired after the restart"));
    }
    assert!(
        created.elapsed() >= TTL,
        "expired after {:?}, before its TTL",
        created.elapsed()
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn ttl_node_survives_a_restart_from_the_snapshot() {
    ttl_survives_restart(|_| {}).await;
}

#[tokio::test]
async fn ttl_node_survives_a_restart_from_the_log_alone() {
    ttl_survives_restart(|dir| {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("snapshot.")
            {
                std::fs::remove_file(path).unwrap();
            }
        }
    })
    .await;
}

/// Without extended types the sweep leaves TTL nodes alone, as ZooKeeper's `EphemeralType.get` only knows TTL
/// owners with them on: a TTL node made while they were on stays after a restart with them off, and comes back
/// under the sweep when they are on again.
#[tokio::test]
async fn ttl_nodes_are_swept_only_with_extended_types() {
    let dir = tempfile::tempdir().unwrap();
    // The first server must not sweep the node it makes (its TTL is 1 ms): no sweep during this test.
    let quiet = ServerConfig {
        container_check_interval: Duration::from_secs(3600),
        ..config(dir.path())
    };
    let server = server_with(quiet).await;
    let zk = client(&server).await;
    let short = CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_millis(1));
    zk.create("/t", b"", &short).await.unwrap();
    drop(zk);
    server.shutdown().await.unwrap();

    let off = ServerConfig {
        extended_types_enabled: false,
        ..config(dir.path())
    };
    let server = server_with(off).await;
    let zk = client(&server).await;
    assert!(zk.check_stat("/t").await.unwrap().is_some(), "/t is back");
    // A container emptied now goes in the next sweep, the pass that would also take an expired TTL node.
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    zk.create("/c", b"", &container).await.unwrap();
    zk.create("/c/x", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    zk.delete("/c/x", None).await.unwrap();
    tokio::time::timeout(WAIT, zklock_testkit::await_deleted(&zk, "/c"))
        .await
        .expect("a sweep ran");
    assert!(
        zk.check_stat("/t").await.unwrap().is_some(),
        "not swept while off"
    );
    drop(zk);
    server.shutdown().await.unwrap();

    let server = server_with(config(dir.path())).await;
    let zk = client(&server).await;
    tokio::time::timeout(WAIT, zklock_testkit::await_deleted(&zk, "/t"))
        .await
        .expect("swept once extended types are on again");
    server.shutdown().await.unwrap();
}
