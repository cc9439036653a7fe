//! Behaviour through the Rust `zookeeper-client` 0.11.

use std::time::Duration;
use tokio::time::timeout;
use zookeeper_client as zk;

use crate::common::{client, server, server_with, WAIT};

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

#[tokio::test]
async fn create_get_set_delete() {
    let server = server().await;
    let c = client(&server).await;
    let (stat, _) = c.create("/a", b"hello", &persistent()).await.unwrap();
    assert_eq!(
        (stat.version, stat.cversion, stat.num_children, stat.data_length),
        (0, 0, 0, 5)
    );
    assert_eq!((stat.czxid, stat.pzxid), (stat.mzxid, stat.mzxid));
    let (data, got) = c.get_data("/a").await.unwrap();
    assert_eq!((data.as_slice(), got), (&b"hello"[..], stat));

    let set = c.set_data("/a", b"world", Some(0)).await.unwrap();
    assert_eq!(set.version, 1);
    assert!(set.mzxid > stat.mzxid);
    assert_eq!(set.czxid, stat.czxid);
    assert_eq!(
        c.set_data("/a", b"x", Some(0)).await.unwrap_err(),
        zk::Error::BadVersion
    );

    c.create("/a/b", b"", &persistent()).await.unwrap();
    assert_eq!(c.delete("/a", None).await.unwrap_err(), zk::Error::NotEmpty);
    assert_eq!(c.list_children("/a").await.unwrap(), vec!["b".to_string()]);
    let (_, parent) = c.get_children("/a").await.unwrap();
    assert_eq!((parent.cversion, parent.num_children), (1, 1));
    assert_eq!(
        c.create("/a", b"", &persistent()).await.unwrap_err(),
        zk::Error::NodeExists
    );
    assert_eq!(
        c.create("/nope/x", b"", &persistent()).await.unwrap_err(),
        zk::Error::NoNode
    );
    assert_eq!(
        c.delete("/a/b", Some(3)).await.unwrap_err(),
        zk::Error::BadVersion
    );
    c.delete("/a/b", Some(0)).await.unwrap();
    c.delete("/a", None).await.unwrap();
    assert_eq!(c.check_stat("/a").await.unwrap(), None);
    assert_eq!(c.get_data("/a").await.unwrap_err(), zk::Error::NoNode);
    let mut root = c.list_children("/").await.unwrap();
    root.sort();
    assert_eq!(root, vec!["zookeeper".to_string()]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn sequential_suffix_follows_parent_cversion() {
    let server = server().await;
    let c = client(&server).await;
    c.create("/q", b"", &persistent()).await.unwrap();
    let seq = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
    let (_, s0) = c.create("/q/n-", b"", &seq).await.unwrap();
    let (_, s1) = c.create("/q/n-", b"", &seq).await.unwrap();
    assert_eq!(
        (s0.to_string(), s1.to_string()),
        ("0000000000".into(), "0000000001".into())
    );
    // Deletes never decrement cversion, so numbers are never reused.
    c.delete("/q/n-0000000001", None).await.unwrap();
    c.create("/q/plain", b"", &persistent()).await.unwrap();
    let (_, s3) = c.create("/q/n-", b"", &seq).await.unwrap();
    assert_eq!(s3.to_string(), "0000000003");
    let mut children = c.list_children("/q").await.unwrap();
    children.sort();
    assert_eq!(children, ["n-0000000000", "n-0000000003", "plain"]);
}

#[tokio::test]
async fn ephemerals_vanish_when_the_session_closes() {
    let server = server().await;
    let owner = client(&server).await;
    let observer = client(&server).await;
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    let (stat, _) = owner.create("/e", b"", &eph).await.unwrap();
    assert_eq!(stat.ephemeral_owner, owner.session_id().0);
    assert_eq!(
        owner.create("/e/child", b"", &persistent()).await.unwrap_err(),
        zk::Error::NoChildrenForEphemerals
    );
    assert_eq!(owner.list_ephemerals("/").await.unwrap(), vec!["/e".to_string()]);
    let (_, watcher) = observer.check_and_watch_stat("/e").await.unwrap();
    drop(owner);
    let event = timeout(WAIT, watcher.changed())
        .await
        .expect("deleted event in time");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (zk::EventType::NodeDeleted, "/e")
    );
    assert_eq!(observer.check_stat("/e").await.unwrap(), None);
}

#[tokio::test]
async fn one_shot_watches_fire_once() {
    let server = server().await;
    let c = client(&server).await;
    let writer = client(&server).await;
    // exists on a missing node leaves a watch that fires on creation.
    let (none, created) = c.check_and_watch_stat("/w").await.unwrap();
    assert_eq!(none, None);
    let (_, _, children) = c.get_and_watch_children("/").await.unwrap();
    writer.create("/w", b"", &persistent()).await.unwrap();
    let e = timeout(WAIT, created.changed()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (zk::EventType::NodeCreated, "/w")
    );
    let e = timeout(WAIT, children.changed()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (zk::EventType::NodeChildrenChanged, "/")
    );

    let (_, _, data) = c.get_and_watch_data("/w").await.unwrap();
    writer.set_data("/w", b"1", None).await.unwrap();
    let e = timeout(WAIT, data.changed()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (zk::EventType::NodeDataChanged, "/w")
    );
    // The notification precedes the write's reply, so a watch set after the reply sees only later changes.
    let (_, _, data) = c.get_and_watch_data("/w").await.unwrap();
    writer.delete("/w", None).await.unwrap();
    let e = timeout(WAIT, data.changed()).await.unwrap();
    assert_eq!(
        (e.event_type, e.path.as_str()),
        (zk::EventType::NodeDeleted, "/w")
    );
}

#[tokio::test]
async fn persistent_recursive_watch_sees_descendants() {
    let server = server().await;
    let c = client(&server).await;
    c.create("/r", b"", &persistent()).await.unwrap();
    let mut w = c
        .watch("/r", zk::AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    c.create("/r/a", b"", &persistent()).await.unwrap();
    c.set_data("/r/a", b"x", None).await.unwrap();
    c.delete("/r/a", None).await.unwrap();
    let mut got = vec![];
    for _ in 0..3 {
        let e = timeout(WAIT, w.changed()).await.unwrap();
        got.push((e.event_type, e.path));
    }
    use zk::EventType::*;
    assert_eq!(
        got,
        vec![
            (NodeCreated, "/r/a".into()),
            (NodeDataChanged, "/r/a".into()),
            (NodeDeleted, "/r/a".into())
        ]
    );
}

#[tokio::test]
async fn multi_commits_all_or_nothing() {
    let server = server().await;
    let c = client(&server).await;
    let mut m = c.new_multi_writer();
    m.add_create("/m", b"", &persistent()).unwrap();
    m.add_create("/m/x", b"1", &persistent()).unwrap();
    m.add_set_data("/m/x", b"2", Some(0)).unwrap();
    m.add_check_version("/m/x", 1).unwrap();
    let results = m.commit().await.unwrap();
    assert_eq!(results.len(), 4);
    // Like ZooKeeper, a plain create inside multi reports its path only (the client marks the stat invalid).
    assert!(
        matches!(&results[1], zk::MultiWriteResult::Create { path, stat } if path == "/m/x" && stat.is_invalid())
    );
    assert!(matches!(&results[2], zk::MultiWriteResult::SetData { stat } if stat.version == 1));
    // All ops share one zxid.
    let (_, m_stat) = c.get_data("/m").await.unwrap();
    let (_, x_stat) = c.get_data("/m/x").await.unwrap();
    assert_eq!(m_stat.czxid, x_stat.czxid);

    let mut m = c.new_multi_writer();
    m.add_create("/m/y", b"", &persistent()).unwrap();
    m.add_delete("/m/missing", None).unwrap();
    m.add_create("/m/z", b"", &persistent()).unwrap();
    let err = m.commit().await.unwrap_err();
    assert!(
        matches!(
            err,
            zk::MultiWriteError::OperationFailed {
                index: 1,
                source: zk::Error::NoNode
            }
        ),
        "{err:?}"
    );
    assert_eq!(c.check_stat("/m/y").await.unwrap(), None);

    let mut r = c.new_multi_reader();
    r.add_get_data("/m/x").unwrap();
    r.add_get_children("/missing").unwrap();
    let results = r.commit().await.unwrap();
    assert!(matches!(&results[0], zk::MultiReadResult::Data { data, .. } if data == b"2"));
    assert!(matches!(
        &results[1],
        zk::MultiReadResult::Error {
            err: zk::Error::NoNode
        }
    ));
}

#[tokio::test]
async fn digest_acl_is_enforced() {
    let server = server().await;
    let owner = zk::Client::connector()
        .with_auth("digest", b"alice:secret")
        .connect(&server.connect_string())
        .await
        .unwrap();
    let creator_all = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    owner.create("/private", b"s", &creator_all).await.unwrap();
    let (acl, _) = owner.get_acl("/private").await.unwrap();
    assert_eq!(acl[0].scheme(), "digest");
    assert!(acl[0].id().starts_with("alice:"));
    let stranger = client(&server).await;
    assert_eq!(
        stranger.get_data("/private").await.unwrap_err(),
        zk::Error::NoAuth
    );
    assert_eq!(
        stranger.create("/x", b"", &creator_all).await.unwrap_err(),
        zk::Error::InvalidAcl
    );
    stranger.auth("digest", b"alice:secret").await.unwrap();
    assert_eq!(stranger.get_data("/private").await.unwrap().0, b"s");
    let users = stranger.list_auth_users().await.unwrap();
    assert!(
        users
            .iter()
            .any(|u| u.scheme() == "digest" && u.user() == "alice"),
        "{users:?}"
    );
}

#[tokio::test]
async fn connection_limit_per_ip() {
    let server = server_with(zklock_server::ServerConfig {
        max_client_cnxns: 2,
        ..Default::default()
    })
    .await;
    let _a = client(&server).await;
    let _b = client(&server).await;
    let addr = server.connect_string();
    let third = zk::Client::connector()
        .with_connection_timeout(Duration::from_millis(500))
        .with_session_timeout(Duration::from_secs(4))
        .with_fail_eagerly()
        .connect(&addr);
    assert!(timeout(WAIT, third).await.expect("fails in time").is_err());
}

/// The fixture calls for testing a service (issue 33.14): `expire_session` ends a session as its timeout would —
/// its ephemeral node gone for others, its client told `Expired` — and `disconnect_session` cuts its connection
/// only: the client reconnects and resumes the same session, its ephemeral node still there. Each on a session
/// of its own; a session that does not exist is `false`.
#[tokio::test]
async fn sessions_expired_or_cut_on_request() {
    let server = server().await;
    let observer = client(&server).await;
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());

    let cut = client(&server).await;
    cut.create("/cut", b"", &ephemeral).await.unwrap();
    let mut states = cut.state_watcher();
    assert!(server.disconnect_session(cut.session_id().0));
    timeout(WAIT, async {
        while states.changed().await != zk::SessionState::Disconnected {}
        while states.changed().await != zk::SessionState::SyncConnected {}
    })
    .await
    .expect("disconnected, then connected again");
    assert!(
        observer.check_stat("/cut").await.unwrap().is_some(),
        "the session lives on"
    );
    cut.check_stat("/").await.expect("the resumed session serves");

    let expired = client(&server).await;
    expired.create("/expired", b"", &ephemeral).await.unwrap();
    let mut states = expired.state_watcher();
    assert!(server.expire_session(expired.session_id().0));
    assert!(
        observer.check_stat("/expired").await.unwrap().is_none(),
        "its ephemeral node is gone"
    );
    timeout(WAIT, async {
        while states.changed().await != zk::SessionState::Expired {}
    })
    .await
    .expect("the client is told its session expired");
    assert!(
        !server.expire_session(expired.session_id().0),
        "no such session any more"
    );
    assert!(!server.disconnect_session(0x7fff_ffff), "no such session");
}
