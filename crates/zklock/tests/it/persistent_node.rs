//! `PersistentNode`: a node made again with its latest data whenever it is gone, and deleted by `close`.

use std::time::Duration;

use zklock::zookeeper_client::{self as zk, Client};
use zklock::{NodeMode, PersistentNode, Session, SessionEvent};
use zklock_testkit::{expire_session, opcode, unique_path};

use crate::on_every_server;
use crate::support::*;

/// Waits until the node at `path` holds `data`, read after `sync` (bounded), by the notifications of an `exists`
/// watch; its stat.
async fn holds(client: &Client, path: &str, data: &[u8]) -> zk::Stat {
    eventually(
        &format!("{path} to hold {:?}", String::from_utf8_lossy(data)),
        async {
            loop {
                client.sync(path).await.unwrap();
                let (stat, watcher) = client.check_and_watch_stat(path).await.unwrap();
                if let Some(stat) = stat {
                    if client.get_data(path).await.map(|(d, _)| d).ok().as_deref() == Some(data) {
                        return stat;
                    }
                }
                watcher.changed().await;
            }
        },
    )
    .await
}

on_every_server! {
    async fn a_persistent_node_comes_back_after_a_delete_with_its_latest_data(hosts: &str) {
        let path = format!("{}/service/host-a", unique_path("persistent-node"));
        let owner = client(hosts).await;
        let other = client(hosts).await;
        let node = PersistentNode::start(&owner, &path, NodeMode::Ephemeral, b"v1").unwrap();
        assert!(node.wait_for_initial_create(EVENTUALLY).await.unwrap());
        let first = holds(&other, &path, b"v1").await;
        assert_eq!(first.ephemeral_owner, owner.session_id().0);
        node.set_data(b"v2").await.unwrap();
        holds(&other, &path, b"v2").await;
        other.delete(&path, None).await.unwrap();
        let again = holds(&other, &path, b"v2").await;
        assert!(again.czxid > first.czxid, "made again");
        // Changed by somebody else: our data is written back.
        other.set_data(&path, b"theirs", None).await.unwrap();
        holds(&other, &path, b"v2").await;
        node.close().await.unwrap();
        other.sync(&path).await.unwrap();
        assert_eq!(other.check_stat(&path).await.unwrap(), None, "close deletes it");
    }

    async fn an_ephemeral_node_outlives_its_session_on_a_reconnecting_session(hosts: &str) {
        let path = unique_path("persistent-node");
        let connector = Client::connector().with_session_timeout(Duration::from_secs(10));
        let session = eventually("connecting", Session::reconnecting(connector, hosts)).await.unwrap();
        let mut events = session.events().unwrap();
        let observer = client(hosts).await;
        let node = PersistentNode::start(&session, &path, NodeMode::Ephemeral, b"before").unwrap();
        assert!(node.wait_for_initial_create(EVENTUALLY).await.unwrap());
        let first = holds(&observer, &path, b"before").await;
        node.set_data(b"latest").await.unwrap();
        holds(&observer, &path, b"latest").await;
        expire_session(hosts, session.client()).await;
        eventually("the new session", async {
            while !matches!(events.recv().await, Ok(SessionEvent::NewSession { .. })) {}
        })
        .await;
        let again = holds(&observer, &path, b"latest").await;
        assert_eq!(again.ephemeral_owner, session.client().session_id().0, "on the new session");
        assert_ne!(again.ephemeral_owner, first.ephemeral_owner);
        node.close().await.unwrap();
        observer.sync(&path).await.unwrap();
        assert_eq!(observer.check_stat(&path).await.unwrap(), None);
    }

    async fn a_lost_create_reply_leaves_one_node_and_another_owner_is_waited_for(hosts: &str) {
        let dir = unique_path("persistent-node");
        let path = format!("{dir}/me");
        // Somebody else's ephemeral node is there: not ours to take; it is made ours once it goes.
        let squatter = client(hosts).await;
        squatter.create(&dir, b"", &PERSISTENT).await.unwrap();
        squatter.create(&path, b"old", &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all())).await.unwrap();
        let (proxy, owner) = proxied_client(hosts).await;
        let node = PersistentNode::start(&owner, &path, NodeMode::Ephemeral, b"mine").unwrap();
        assert!(!node.wait_for_initial_create(Duration::from_millis(300)).await.unwrap(), "not ours yet");
        // The create that follows the squatter's going loses its reply, and the connection with it.
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        drop(squatter);
        assert!(node.wait_for_initial_create(EVENTUALLY).await.unwrap());
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let stat = holds(&owner, &path, b"mine").await;
        assert_eq!(stat.ephemeral_owner, owner.session_id().0);
        assert_eq!(children(&owner, &dir).await, ["me"], "one node");
        node.close().await.unwrap();
    }
}

on_every_server! {
    async fn a_protected_sequential_node_is_made_once_and_again_with_a_new_sequence_number(hosts: &str) {
        let dir = unique_path("persistent-sequential");
        let (proxy, owner) = proxied_client(hosts).await;
        let other = client(hosts).await;
        other.create(&dir, b"", &PERSISTENT).await.unwrap();
        // The first create loses its reply, and the connection with it: found by its prefix, never made twice.
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let node = PersistentNode::start(&owner, &format!("{dir}/worker-"), NodeMode::EphemeralSequential, b"v1").unwrap();
        assert!(node.wait_for_initial_create(EVENTUALLY).await.unwrap());
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let first = node.actual_path().unwrap();
        let name = first.rsplit('/').next().unwrap();
        assert!(name.starts_with("_c_") && name.contains("-worker-"), "protected: {first}");
        assert!(name.ends_with(|c: char| c.is_ascii_digit()), "sequential: {first}");
        let stat = holds(&other, &first, b"v1").await;
        assert_eq!(stat.ephemeral_owner, owner.session_id().0);
        assert_eq!(children(&other, &dir).await.len(), 1, "one node");
        node.set_data(b"v2").await.unwrap();
        holds(&other, &first, b"v2").await;
        // Deleted by somebody else: made again, a new sequence number, the latest data.
        other.delete(&first, None).await.unwrap();
        let again = eventually("the node again", async {
            loop {
                match node.actual_path() {
                    Some(path) if path != first => return path,
                    _ => tokio::task::yield_now().await,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        holds(&other, &again, b"v2").await;
        assert_eq!(children(&other, &dir).await.len(), 1, "one node");
        node.close().await.unwrap();
        assert!(children(&other, &dir).await.is_empty(), "close deletes it");
    }
}

/// `NodeMode::PersistentWithTtl` on the embedded server with TTL nodes: made as a TTL node (ZooKeeper shows its
/// owner as 0), deleted by the server's reaper once its TTL has passed with no change and no child, made again — a
/// new node (a later czxid) — and deleted by `close`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_expired_by_the_server_is_made_again() {
    let hosts = tokio::task::spawn_blocking(|| {
        zklock_testkit::start_embedded(zklock_testkit::ServerConfig {
            extended_types_enabled: true,
            container_check_interval: Duration::from_millis(50),
            ..Default::default()
        })
    })
    .await
    .unwrap();
    let path = format!("{}/ttl", unique_path("persistent-ttl"));
    let (owner, observer) = (client(&hosts).await, client(&hosts).await);
    let node = PersistentNode::start(
        &owner,
        &path,
        NodeMode::PersistentWithTtl(Duration::from_millis(300)),
        b"t",
    )
    .unwrap();
    assert!(node.wait_for_initial_create(EVENTUALLY).await.unwrap());
    let first = holds(&observer, &path, b"t").await;
    assert_eq!(first.ephemeral_owner, 0, "a TTL node shows no owner");
    // The reaper deletes it once its TTL has passed; the node is made again.
    let again = eventually("the node made again", async {
        loop {
            let stat = holds(&observer, &path, b"t").await;
            if stat.czxid > first.czxid {
                return stat;
            }
            let (_, watcher) = observer.check_and_watch_stat(&path).await.unwrap();
            watcher.changed().await;
        }
    })
    .await;
    assert!(again.czxid > first.czxid);
    node.close().await.unwrap();
    observer.sync(&path).await.unwrap();
    // A TTL node deleted by close stays deleted (no task makes it again).
    assert_eq!(observer.check_stat(&path).await.unwrap(), None);
}
