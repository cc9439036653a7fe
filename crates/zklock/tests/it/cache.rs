//! Caches: what they hold and report, across reconnections, new sessions and the end of a session.

use std::collections::BTreeMap;

use zklock::zookeeper_client::{self as zk, Client};
use zklock::{Cache, CacheBuilder, CacheEvent, Error, Events, Session, SessionEvent};
use zklock_testkit::{expire_session, opcode, unique_path};

use crate::support::*;
use crate::{on_every_server, on_standalone_and_embedded};

/// The next event; panics if the cache stopped or none came within [`EVENTUALLY`].
async fn next(events: &mut Events, what: &str) -> CacheEvent {
    eventually(what, events.next()).await.expect("the cache stopped")
}

/// Events up to and including the first that `last` accepts.
async fn events_until(
    events: &mut Events,
    what: &str,
    last: impl Fn(&CacheEvent) -> bool,
) -> Vec<CacheEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next(events, what).await;
        let done = last(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Creates a marker node under `root` and returns the events up to its creation. The marker is written after
/// every write before it, and the cache reads in the order events came: once its creation is reported, every
/// earlier write has been read.
async fn settled(writer: &Client, root: &str, events: &mut Events) -> Vec<CacheEvent> {
    let marker = format!("{root}/marker-{}", uuid::Uuid::new_v4().simple());
    writer.create(&marker, b"", &PERSISTENT).await.unwrap();
    events_until(
        events,
        "the marker",
        |e| matches!(e, CacheEvent::Created(n) if n.path == marker),
    )
    .await
}

/// The path and data of each `Created` and data-changing `Changed` (`Some`) and `Deleted` (`None`) event, in
/// order. (A `Changed` of the stat only — a child came or went — is left out.)
fn changes(events: &[CacheEvent]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|event| match event {
            CacheEvent::Changed { old, new } if old.data == new.data => None,
            CacheEvent::Created(node) | CacheEvent::Changed { new: node, .. } => {
                Some((node.path.clone(), Some(node.utf8().unwrap().to_owned())))
            }
            CacheEvent::Deleted(node) => Some((node.path.clone(), None)),
            _ => None,
        })
        .collect()
}

/// The subtree at `root` as the server has it (read after `sync`, so no older than any write before the call):
/// path → (data, stat).
async fn server_tree(client: &Client, root: &str) -> BTreeMap<String, (Vec<u8>, zk::Stat)> {
    client.sync(root).await.unwrap();
    let mut tree = BTreeMap::new();
    let mut todo = vec![root.to_owned()];
    while let Some(path) = todo.pop() {
        let Ok((data, stat)) = client.get_data(&path).await else {
            continue;
        };
        if let Ok(names) = client.list_children(&path).await {
            todo.extend(names.iter().map(|name| zklock::child_path(&path, name)));
        }
        tree.insert(path, (data, stat));
    }
    tree
}

/// The cache's content in the same shape.
fn cached(cache: &Cache) -> BTreeMap<String, (Vec<u8>, zk::Stat)> {
    cache
        .nodes()
        .into_iter()
        .map(|node| (node.path, (node.data.to_vec(), node.stat)))
        .collect()
}

fn put(path: &str, data: &str) -> (String, Option<String>) {
    (path.to_owned(), Some(data.to_owned()))
}

/// Each test on every server, with the persistent watch (`<test>::<server>`) and with one-shot watches
/// (`one_shot::<test>::<server>`, the way the cache follows ZooKeeper 3.5).
macro_rules! with_both_watches {
    ($($name:ident),* $(,)?) => {
        on_every_server! {
            $(async fn $name(hosts: &str) { super::$name(hosts, false).await })*
        }
        mod one_shot {
            crate::on_every_server! {
                $(async fn $name(hosts: &str) { super::super::$name(hosts, true).await })*
            }
        }
    };
}

/// Starts `cache`, with one-shot watches if `one_shot`.
fn start(cache: CacheBuilder, one_shot: bool) -> Cache {
    if one_shot {
        cache.one_shot_watches().start()
    } else {
        cache.start()
    }
}

with_both_watches!(
    a_tree_cache_primes_then_reports_every_change_in_order,
    node_and_children_caches_hold_only_their_depth,
    changes_while_disconnected_and_after_reconnecting_are_seen,
    a_read_cut_in_flight_does_not_stop_the_cache,
    a_reconnecting_session_carries_the_cache_to_its_next_session,
    the_end_of_a_clients_session_ends_the_cache,
    caches_of_every_depth_on_one_path_and_session_each_hold_their_part
);

async fn a_tree_cache_primes_then_reports_every_change_in_order(hosts: &str, one_shot: bool) {
    let root = unique_path("cache");
    let writer = client(hosts).await;
    for (path, data) in [
        (root.clone(), "root"),
        (format!("{root}/a"), "1"),
        (format!("{root}/b"), "{\"on\":true}"),
    ] {
        writer.create(&path, data.as_bytes(), &PERSISTENT).await.unwrap();
    }
    let reader = client(hosts).await;
    let cache = start(Cache::tree(&reader, &root).unwrap(), one_shot);
    let mut events = cache.events();
    let primed = events_until(&mut events, "the prime", |e| *e == CacheEvent::Initialized).await;
    let mut primed = changes(&primed);
    primed.sort();
    assert_eq!(
        primed,
        [
            put(&root, "root"),
            put(&format!("{root}/a"), "1"),
            put(&format!("{root}/b"), "{\"on\":true}")
        ],
        "each node found once as created, then initialized"
    );
    #[derive(serde::Deserialize)]
    struct Flag {
        on: bool,
    }
    assert!(
        cache
            .get(&format!("{root}/b"))
            .unwrap()
            .json::<Flag>()
            .unwrap()
            .on
    );
    assert!(matches!(
        cache.get(&root).unwrap().json::<Flag>(),
        Err(Error::Unparsable { .. })
    ));

    let (a, c, d) = (
        format!("{root}/a"),
        format!("{root}/a/c"),
        format!("{root}/a/c/d"),
    );
    writer.set_data(&a, b"2", None).await.unwrap();
    writer.create(&c, b"c", &PERSISTENT).await.unwrap();
    writer.create(&d, b"d", &PERSISTENT).await.unwrap();
    writer.set_data(&d, b"d2", None).await.unwrap();
    writer.delete(&d, None).await.unwrap();
    writer.delete(&c, None).await.unwrap();
    writer.set_data(&a, b"3", None).await.unwrap();
    let seen = settled(&writer, &root, &mut events).await;
    // Per node, what was seen is the node's writes in order with some steps left out: two quick writes of one
    // node may be read as one, never out of order and never a state that did not exist. (Across nodes a read
    // may already see a later write of its node than the next event says: no order is promised there.)
    let written = [
        put(&a, "2"),
        put(&c, "c"),
        put(&d, "d"),
        put(&d, "d2"),
        (d.clone(), None),
        (c.clone(), None),
        put(&a, "3"),
    ];
    for path in [&a, &c, &d] {
        let mut rest = written.iter().filter(|(p, _)| p == path);
        for change in changes(&seen).into_iter().filter(|(p, _)| p == path) {
            assert!(
                rest.any(|w| *w == change),
                "{change:?} is out of order or never written: {seen:?}"
            );
        }
    }
    assert_eq!(cached(&cache), server_tree(&writer, &root).await);
    assert_eq!(&cache.children_of(&root)[..2], ["a", "b"]);

    // A new subscriber gets the content as it is now, then the changes.
    let mut late = cache.events();
    let replayed = events_until(&mut late, "the replay", |e| *e == CacheEvent::Initialized).await;
    assert_eq!(
        changes(&replayed)[..3],
        [
            put(&root, "root"),
            put(&a, "3"),
            put(&format!("{root}/b"), "{\"on\":true}")
        ]
    );
    writer.delete(&a, None).await.unwrap();
    let seen = events_until(&mut late, "the delete", |e| matches!(e, CacheEvent::Deleted(_))).await;
    assert_eq!(changes(&seen), [(a.clone(), None)], "{seen:?}");
}

async fn node_and_children_caches_hold_only_their_depth(hosts: &str, one_shot: bool) {
    let root = unique_path("cache");
    let writer = client(hosts).await;
    let reader = client(hosts).await;
    let node = start(Cache::node(&reader, &root).unwrap(), one_shot);
    let children = start(Cache::children(&reader, &root).unwrap(), one_shot);
    node.initialized().await.unwrap();
    children.initialized().await.unwrap();
    assert!(node.is_empty(), "no node yet");
    let (mut node_events, mut child_events) = (node.events(), children.events());
    next(&mut node_events, "initialized").await;
    next(&mut child_events, "initialized").await;

    writer.create(&root, b"r", &PERSISTENT).await.unwrap();
    writer
        .create(&format!("{root}/x"), b"x", &PERSISTENT)
        .await
        .unwrap();
    writer
        .create(&format!("{root}/x/deep"), b"deep", &PERSISTENT)
        .await
        .unwrap();
    writer.set_data(&format!("{root}/x"), b"x2", None).await.unwrap();
    writer.set_data(&root, b"r2", None).await.unwrap();
    let seen = events_until(&mut node_events, "the node's change", |e| {
        e.node().is_some_and(|n| *n.data == *b"r2")
    })
    .await;
    assert!(
        changes(&seen).iter().all(|(path, _)| *path == root),
        "only the node itself: {seen:?}"
    );
    let marker = settled(&writer, &root, &mut child_events).await;
    let marker = marker.last().unwrap().node().unwrap().path.clone();
    writer.delete(&marker, None).await.unwrap();
    events_until(
        &mut child_events,
        "the marker's delete",
        |e| matches!(e, CacheEvent::Deleted(n) if n.path == marker),
    )
    .await;
    assert_eq!(
        children
            .nodes()
            .iter()
            .map(|n| n.path.clone())
            .collect::<Vec<_>>(),
        [root.clone(), format!("{root}/x")]
    );
    assert_eq!(*children.get(&format!("{root}/x")).unwrap().data, *b"x2");
    assert_eq!(node.len(), 1);
}

/// A tree cache, then a children cache and a node cache, on one path and one session. ZooKeeper before 3.9 keeps one
/// watch mode per path and session (ZOOKEEPER-4466; the embedded server matches 3.8): the last `addWatch` replaces
/// the others. With a non-recursive watch for the node cache the tree cache then heard of nothing below the path
/// (CI: "timed out waiting for the marker"); every cache now adds the same recursive watch.
async fn caches_of_every_depth_on_one_path_and_session_each_hold_their_part(hosts: &str, one_shot: bool) {
    let root = unique_path("cache");
    let writer = client(hosts).await;
    writer.create(&root, b"r", &PERSISTENT).await.unwrap();
    writer
        .create(&format!("{root}/a"), b"a", &PERSISTENT)
        .await
        .unwrap();
    let reader = client(hosts).await;
    // One after the other, the node cache last: its watch was the one left.
    let tree = start(Cache::tree(&reader, &root).unwrap(), one_shot);
    tree.initialized().await.unwrap();
    let children = start(Cache::children(&reader, &root).unwrap(), one_shot);
    children.initialized().await.unwrap();
    let node = start(Cache::node(&reader, &root).unwrap(), one_shot);
    node.initialized().await.unwrap();
    let mut events = [tree.events(), children.events(), node.events()];

    writer
        .create(&format!("{root}/a/deep"), b"d", &PERSISTENT)
        .await
        .unwrap();
    writer.set_data(&format!("{root}/a"), b"a2", None).await.unwrap();
    writer
        .create(&format!("{root}/b"), b"b", &PERSISTENT)
        .await
        .unwrap();
    writer.set_data(&root, b"r2", None).await.unwrap();
    // The root's data is the last write: once each cache reports it, each has read every write before it.
    for events in &mut events {
        events_until(events, "the root's last change", |e| {
            e.node().is_some_and(|n| n.path == root && *n.data == *b"r2")
        })
        .await;
    }
    let server = server_tree(&writer, &root).await;
    let depth = |path: &str| path[root.len()..].matches('/').count();
    for (cache, most) in [(&tree, 2), (&node, 0), (&children, 1)] {
        let part: BTreeMap<_, _> = server
            .iter()
            .filter(|(path, _)| depth(path) <= most)
            .map(|(path, node)| (path.clone(), node.clone()))
            .collect();
        assert_eq!(cached(cache), part, "the cache of depth {most}");
    }
}

async fn changes_while_disconnected_and_after_reconnecting_are_seen(hosts: &str, one_shot: bool) {
    // zookeeper-client 0.11.2 does not re-register persistent watches after a reconnection: without the
    // cache's own re-arm, the change after the reconnection below is never reported.
    let root = unique_path("cache");
    let writer = client(hosts).await;
    writer.create(&root, b"0", &PERSISTENT).await.unwrap();
    writer
        .create(&format!("{root}/gone"), b"g", &PERSISTENT)
        .await
        .unwrap();
    let (proxy, reader) = proxied_client(hosts).await;
    let cache = start(Cache::tree(&reader, &root).unwrap(), one_shot);
    let mut events = cache.events();
    events_until(&mut events, "the prime", |e| *e == CacheEvent::Initialized).await;
    for round in 1..=2u8 {
        let session = reader.session_id();
        let mut states = reader.state_watcher();
        proxy.set_blackhole(true);
        proxy.cut_all();
        eventually("the disconnection", async {
            while states.changed().await != zk::SessionState::Disconnected {}
        })
        .await;
        // Made while the cache cannot hear of them: the re-sync reports them.
        writer.set_data(&root, &[b'0' + round], None).await.unwrap();
        if round == 1 {
            writer.delete(&format!("{root}/gone"), None).await.unwrap();
        }
        proxy.set_blackhole(false);
        let seen = settled(&writer, &root, &mut events).await;
        assert!(
            changes(&seen).contains(&(root.clone(), Some(round.to_string()))),
            "{seen:?}"
        );
        if round == 1 {
            assert!(
                changes(&seen).contains(&(format!("{root}/gone"), None)),
                "{seen:?}"
            );
        }
        assert_eq!(reader.session_id(), session, "the same session");
        // One-shot watches are the client's to set again; the persistent one is the cache's.
        let add_watches = proxy.requests(opcode::ADD_WATCH);
        assert_eq!(add_watches == 0, one_shot, "{add_watches} addWatch requests");
        // Made after the reconnection: only a watch registered again reports it.
        let fresh = format!("{root}/after-{round}");
        writer.create(&fresh, b"new", &PERSISTENT).await.unwrap();
        let seen = events_until(&mut events, "the change after reconnecting", |e| {
            e.node().is_some_and(|n| n.path == fresh)
        })
        .await;
        assert!(matches!(seen.last(), Some(CacheEvent::Created(_))), "{seen:?}");
    }
    assert_eq!(cached(&cache), server_tree(&writer, &root).await);
}

async fn a_read_cut_in_flight_does_not_stop_the_cache(hosts: &str, one_shot: bool) {
    // A request in flight when the connection is reset fails with `zk::Error::Custom`, not `ConnectionLoss`:
    // the cache must take it for the connection loss it is, and read again once the connection is back.
    let root = unique_path("cache");
    let writer = client(hosts).await;
    writer.create(&root, b"0", &PERSISTENT).await.unwrap();
    let (proxy, reader) = proxied_client(hosts).await;
    let cache = start(Cache::tree(&reader, &root).unwrap(), one_shot);
    let mut events = cache.events();
    events_until(&mut events, "the prime", |e| *e == CacheEvent::Initialized).await;
    proxy.drop_reply_and_cut(&[opcode::GET_DATA]);
    writer.set_data(&root, b"1", None).await.unwrap();
    let seen = settled(&writer, &root, &mut events).await;
    assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
    assert!(changes(&seen).contains(&put(&root, "1")), "{seen:?}");
    assert_eq!(cache.ended(), None);
}

async fn a_reconnecting_session_carries_the_cache_to_its_next_session(hosts: &str, one_shot: bool) {
    let root = unique_path("cache");
    let writer = client(hosts).await;
    writer.create(&root, b"before", &PERSISTENT).await.unwrap();
    let connector = Client::connector().with_session_timeout(std::time::Duration::from_secs(10));
    let session = eventually("connecting", Session::reconnecting(connector, hosts))
        .await
        .unwrap();
    let mut session_events = session.events().unwrap();
    let cache = start(Cache::tree(&session, &root).unwrap(), one_shot);
    let mut events = cache.events();
    events_until(&mut events, "the prime", |e| *e == CacheEvent::Initialized).await;
    // Its own ephemeral node goes with the old session; the cache reports that too.
    let mine = format!("{root}/mine");
    session
        .client()
        .create(
            &mine,
            b"e",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await
        .unwrap();
    events_until(
        &mut events,
        "the ephemeral",
        |e| matches!(e, CacheEvent::Created(n) if n.path == mine),
    )
    .await;
    let kept = format!("{root}/kept");
    writer.create(&kept, b"1", &PERSISTENT).await.unwrap();
    events_until(
        &mut events,
        "the child",
        |e| matches!(e, CacheEvent::Created(n) if n.path == kept),
    )
    .await;
    let first = session.client().clone();
    expire_session(hosts, &first).await;
    // Changed while no session of the cache watches it: the next session's read must see it.
    writer.set_data(&kept, b"2", None).await.unwrap();
    // Seen failing twice (docs/reliability.md, "Known intermittent"): what the session went through is kept.
    let mut seen_events = Vec::new();
    let new_session = tokio::time::timeout(EVENTUALLY, async {
        loop {
            let event = session_events.recv().await;
            seen_events.push(format!("{event:?}"));
            match event {
                Ok(SessionEvent::NewSession { .. }) => return true,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return false,
                _ => {}
            }
        }
    });
    if new_session.await != Ok(true) {
        panic!(
            "no new session within {EVENTUALLY:?}: the expired client {} is {:?}, the session's events {seen_events:?}",
            first.session_id(),
            first.state(),
        );
    }
    writer.set_data(&root, b"after", None).await.unwrap();
    let seen = settled(&writer, &root, &mut events).await;
    assert!(changes(&seen).contains(&put(&root, "after")), "{seen:?}");
    // A re-sync reads a directory's children in the listing's order, not in zxid order: the marker may come first.
    if !changes(&seen).contains(&put(&kept, "2")) {
        events_until(&mut events, "the child's change", |e| {
            e.node().is_some_and(|n| n.path == kept && *n.data == *b"2")
        })
        .await;
    }
    assert!(
        changes(&seen).contains(&(mine.clone(), None)),
        "the expired session's node is reported gone: {seen:?}"
    );
    // The re-sync done, a marker's creation is reported after its parent is read again: then the view is the tree.
    settled(&writer, &root, &mut events).await;
    assert_eq!(cached(&cache), server_tree(&writer, &root).await);
    assert_eq!(cache.ended(), None);
    session.close().await.unwrap();
    assert_eq!(
        eventually("the end", events.next()).await,
        None,
        "a closed session ends the events"
    );
    assert_eq!(cache.ended(), Some(Error::Closed));
}

async fn the_end_of_a_clients_session_ends_the_cache(hosts: &str, one_shot: bool) {
    let root = unique_path("cache");
    let reader = client(hosts).await;
    let cache = start(Cache::tree(&reader, &root).unwrap(), one_shot);
    let mut events = cache.events();
    events_until(&mut events, "the prime", |e| *e == CacheEvent::Initialized).await;
    expire_session(hosts, &reader).await;
    assert_eq!(eventually("the end", events.next()).await, None);
    assert_eq!(cache.ended(), Some(Error::SessionExpired));
    assert!(cache.initialized().await.is_ok(), "what it held is kept");
}

on_standalone_and_embedded! {
    async fn a_subscriber_that_falls_behind_starts_again_from_the_content(hosts: &str) {
        const NODES: usize = 5_000;
        let root = unique_path("cache");
        let writer = client(hosts).await;
        writer.create(&root, b"", &PERSISTENT).await.unwrap();
        let reader = client(hosts).await;
        let cache = Cache::children(&reader, &root).unwrap().start();
        cache.initialized().await.unwrap();
        let mut behind = cache.events();
        let mut keeping_up = cache.events();
        create_children(&writer, &root, NODES).await;
        // The last child's creation is read last (a subscriber that itself falls behind gets it in its replay).
        let last = format!("{root}/n{:05}", NODES - 1);
        events_until(&mut keeping_up, "the creates", |e| matches!(e, CacheEvent::Created(n) if n.path == last)).await;
        assert!(matches!(next(&mut behind, "the replay's first").await, CacheEvent::Created(n) if n.path == root));
        assert_eq!(next(&mut behind, "initialized").await, CacheEvent::Initialized);
        assert_eq!(next(&mut behind, "the reset").await, CacheEvent::Reset, "4,096 events behind");
        let replayed = events_until(&mut behind, "the replay", |e| *e == CacheEvent::Initialized).await;
        assert_eq!(replayed.len(), NODES + 2, "the root, every child, initialized");
    }

    async fn a_prime_whose_batched_read_breaks_reads_one_node_at_a_time(hosts: &str) {
        // The prime reads nodes 256 to a `multiRead`; a batch that breaks the connection (a reply too large for
        // something on the way, say) makes the cache read one node at a time from then on.
        const MULTI_READ: i32 = 22;
        let root = unique_path("cache");
        let writer = client(hosts).await;
        writer.create(&root, b"", &PERSISTENT).await.unwrap();
        create_children(&writer, &root, 600).await;
        let (proxy, reader) = proxied_client(hosts).await;
        proxy.drop_requests_and_cut(&[MULTI_READ], 1);
        let cache = Cache::children(&reader, &root).unwrap().start();
        eventually("the prime", cache.initialized()).await.unwrap();
        assert_eq!(proxy.lost_requests(), 1, "the fault was injected");
        assert_eq!(cache.len(), 601);
        assert_eq!(cached(&cache), server_tree(&writer, &root).await);
        // The next re-sync (after a reconnection) sends no batch. (Batches sent with the one that broke may have
        // reached the server before the cut: they are counted already.)
        let batches = proxy.requests(MULTI_READ);
        let mut events = cache.events();
        events_until(&mut events, "the replay", |e| *e == CacheEvent::Initialized).await;
        proxy.cut_all();
        settled(&writer, &root, &mut events).await;
        assert_eq!(proxy.requests(MULTI_READ), batches, "no batch after the one that broke");
    }

    async fn a_tree_past_64k_nodes_is_held_whole(hosts: &str) {
        // Curator 5.4's CuratorCache stops at 65,635 nodes of a 100,101-node tree (docs/benchmarks.md).
        const DIRS: usize = 66;
        const LEAVES: usize = 1_000;
        let root = unique_path("cache");
        let writer = client(hosts).await;
        writer.create(&root, b"", &PERSISTENT).await.unwrap();
        for dir in 0..DIRS {
            let dir = format!("{root}/d{dir:03}");
            writer.create(&dir, b"", &PERSISTENT).await.unwrap();
            create_children(&writer, &dir, LEAVES).await;
        }
        let reader = client(hosts).await;
        let cache = Cache::tree(&reader, &root).unwrap().start();
        eventually("the prime", cache.initialized()).await.unwrap();
        assert_eq!(cache.len(), 1 + DIRS * (1 + LEAVES));
        assert!(cache.len() > 65_636);
    }
}

/// Creates children `n00000`… of `dir`, 1,000 to a `multi`.
async fn create_children(writer: &Client, dir: &str, n: usize) {
    for start in (0..n).step_by(1_000) {
        let mut multi = writer.new_multi_writer();
        for i in start..n.min(start + 1_000) {
            multi
                .add_create(&format!("{dir}/n{i:05}"), b"value-of-node", &PERSISTENT)
                .unwrap();
        }
        multi.commit().await.unwrap();
    }
}
