//! Persistent and persistent-recursive watches as a client connected WITH A CHROOT sees them (issue 30.6).
//!
//! A chroot is the client's alone: the server never hears of it, and sends every notification with the full
//! path of the node that changed, which the client cuts the chroot off. So what must match is what the server
//! sends — here through `zookeeper-client`, as an application sees it: event types and chroot-relative paths
//! of a recursive watch on the chroot itself, a persistent and a recursive watch below it, on two sessions,
//! while another session changes nodes inside the chroot, the chroot node itself, and a sibling sharing its
//! prefix. (ClickHouse Keeper once sent a recursive watch's own path instead of the changed node's, which a
//! chrooted client turns into the wrong node.)

use std::net::SocketAddr;
use std::time::Duration;

use zookeeper_client as zk;
use zookeeper_client::AddWatchMode::{Persistent, PersistentRecursive};

use crate::support::WAIT;

/// How long a watcher with nothing more to report is waited on, once the events it is owed have arrived.
const QUIET: Duration = Duration::from_millis(200);

async fn client(connect: &str) -> zk::Client {
    tokio::time::timeout(WAIT, zk::Client::connect(connect))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// The scenario on the server at `addr` under a fresh `base`: one line per watcher with the events it got,
/// as `type path`.
pub async fn trace(addr: SocketAddr, base: &str) -> Vec<String> {
    let plain = client(&addr.to_string()).await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for p in ["", "/app"] {
        plain.create(&format!("{base}{p}"), b"", &open).await.unwrap();
    }
    let chroot = format!("{addr}{base}/app");
    let (a, b) = (client(&chroot).await, client(&chroot).await);
    let mut watchers = vec![
        ("A recursive /", watch(&a, "/", PersistentRecursive).await),
        ("A persistent /x", watch(&a, "/x", Persistent).await),
        ("B recursive /x/y", watch(&b, "/x/y", PersistentRecursive).await),
    ];
    change(&plain, base, &a).await;
    // Notifications come before the reply of a later request on the same session.
    for c in [&a, &b] {
        c.sync("/").await.unwrap();
    }
    let mut trace = Vec::new();
    for (name, watcher) in &mut watchers {
        trace.push(format!("{name}: {:?}", drain(watcher).await));
    }
    trace
}

/// An addWatch in `mode` that must succeed.
async fn watch(client: &zk::Client, path: &str, mode: zk::AddWatchMode) -> zk::PersistentWatcher {
    client.watch(path, mode).await.expect("addWatch")
}

/// Changes inside and around the chroot `{base}/app`, by the plain session and by the chrooted one.
async fn change(plain: &zk::Client, base: &str, chrooted: &zk::Client) {
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let at = |p: &str| format!("{base}/app{p}");
    plain.create(&at("/x"), b"", &open).await.unwrap();
    plain.set_data(&at("/x"), b"1", None).await.unwrap();
    plain.create(&at("/x/y"), b"", &open).await.unwrap();
    plain.create(&at("/x/y/z"), b"", &open).await.unwrap();
    chrooted.set_data("/x/y/z", b"2", None).await.unwrap();
    chrooted.create("/x/y/w", b"", &open).await.unwrap();
    plain.set_data(&at(""), b"3", None).await.unwrap();
    plain.create(&format!("{base}/apple"), b"", &open).await.unwrap();
    plain.set_data(base, b"4", None).await.unwrap();
    for p in ["/x/y/w", "/x/y/z", "/x/y", "/x"] {
        plain.delete(&at(p), None).await.unwrap();
    }
    chrooted.create("/x", b"", &open).await.unwrap();
}

/// The events `watcher` has received, as `type path`.
async fn drain(watcher: &mut zk::PersistentWatcher) -> Vec<String> {
    let mut events = Vec::new();
    while let Ok(e) = tokio::time::timeout(QUIET, watcher.changed()).await {
        events.push(format!("{:?} {}", e.event_type, e.path));
    }
    events
}
