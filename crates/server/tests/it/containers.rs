//! Container nodes (`createContainer`, opcode 19) and their sweep, as ZooKeeper's `ContainerManager` does it: every
//! `znode.container.checkIntervalMs` each container that has had a child and has none now is deleted — the ones
//! never used and the ones with children stay, and a chain of containers goes from the inside out. The interval
//! comes from zoo.cfg here (a Java system property for ZooKeeper) and may be shorter than `tickTime`.

use std::time::Duration;

use zklock_server::{Server, ServerConfig};
use zookeeper_client::{Acls, Client, CreateMode};

use crate::common::{client, server_with, WAIT};

/// A server read from a zoo.cfg that sweeps every 50 ms, with a 10 s tick, on a free local port.
async fn sweeping_server(dir: &tempfile::TempDir) -> Server {
    let cfg = dir.path().join("zoo.cfg");
    let data = dir.path().join("data");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=10000\ndataDir={}\nznode.container.checkIntervalMs=50\n",
            data.display()
        ),
    )
    .unwrap();
    let mut config = ServerConfig::from_zoo_cfg(&cfg).unwrap();
    assert_eq!(config.container_check_interval, Duration::from_millis(50));
    config.listen = "127.0.0.1:0".parse().unwrap();
    server_with(config).await
}

async fn create(client: &Client, path: &str, mode: CreateMode) {
    client
        .create(path, b"", &mode.with_acls(Acls::anyone_all()))
        .await
        .unwrap_or_else(|err| panic!("create {path}: {err}"));
}

/// Waits (an `exists` watch, bounded) until `path` is deleted.
async fn deleted(client: &Client, path: &str) {
    tokio::time::timeout(WAIT, async {
        loop {
            let (stat, watcher) = client.check_and_watch_stat(path).await.unwrap();
            if stat.is_none() {
                return;
            }
            watcher.changed().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{path} was never deleted"));
}

async fn exists(client: &Client, path: &str) -> bool {
    client.check_stat(path).await.unwrap().is_some()
}

#[tokio::test]
async fn emptied_containers_are_swept_at_the_configured_interval() {
    let dir = tempfile::tempdir().unwrap();
    let server = sweeping_server(&dir).await;
    let zk = client(&server).await;
    // A chain of containers with a persistent leaf; a container never used; a container that keeps a child.
    create(&zk, "/outer", CreateMode::Container).await;
    create(&zk, "/outer/inner", CreateMode::Container).await;
    create(&zk, "/outer/inner/leaf", CreateMode::Persistent).await;
    create(&zk, "/never-used", CreateMode::Container).await;
    create(&zk, "/busy", CreateMode::Container).await;
    create(&zk, "/busy/child", CreateMode::Persistent).await;
    // A persistent node that had a child is no container: it stays.
    create(&zk, "/plain", CreateMode::Persistent).await;
    create(&zk, "/plain/child", CreateMode::Persistent).await;
    zk.delete("/plain/child", None).await.unwrap();

    zk.delete("/outer/inner/leaf", None).await.unwrap();
    let emptied = std::time::Instant::now();
    deleted(&zk, "/outer/inner").await;
    deleted(&zk, "/outer").await;
    // Two sweeps, well within one 10 s tick: the sweep keeps a clock of its own.
    assert!(
        emptied.elapsed() < Duration::from_secs(5),
        "took {:?}",
        emptied.elapsed()
    );
    for kept in ["/never-used", "/busy", "/busy/child", "/plain"] {
        assert!(exists(&zk, kept).await, "{kept} stays");
    }
    zk.delete("/busy/child", None).await.unwrap();
    deleted(&zk, "/busy").await;
    assert!(exists(&zk, "/never-used").await, "a container never used stays");
    server.shutdown().await.unwrap();
}

#[test]
fn the_sweep_runs_every_minute_unless_configured() {
    assert_eq!(
        ServerConfig::default().container_check_interval,
        Duration::from_secs(60)
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("zoo.cfg");
    std::fs::write(&cfg, "znode.container.checkIntervalMs=soon\n").unwrap();
    assert!(
        ServerConfig::from_zoo_cfg(&cfg).is_err(),
        "a bad value is an error"
    );
}
