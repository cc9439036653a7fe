//! Caches beside kazoo's and Curator's: zklock's `Cache::tree` and `Cache::node`, kazoo's `TreeCache` and
//! `DataWatch` (`tests/peers/kazoo_cache_view_peer.py`) and Curator's `CuratorCache` of the tree and
//! single-node `CuratorCache`s (`tests/peers/CuratorCacheViewPeer.java`) follow one tree through the same
//! writes — data changes, creates and deletes, nested directories made and removed, an ephemeral node, a
//! `multi` — and must end with the same view: path → data and stat, each peer's view dumped as JSON and
//! compared field by field with zklock's.
//!
//! What is compared: data and every stat field for the tree and for each single node. The exception: kazoo's and
//! Curator's caches read a node's stat only with its data (a data watch, or Curator's persistent recursive watch,
//! which reports no child changes), so their `cversion`, `numChildren` and `pzxid` of a node whose children changed
//! after it was last read are stale by design; those three are compared with theirs only on nodes whose children did
//! not change after their last data change, and zklock's (which re-reads a parent when a child comes or goes) with
//! the server's everywhere.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use zklock::zookeeper_client::{self as zk, Client};
use zklock::{Cache, CacheEvent, Events};
use zklock_testkit::peers::{self, CuratorPeer, PeerProcess, PEER_TIMEOUT};
use zklock_testkit::unique_path;

use crate::on_standalone_and_embedded;
use crate::support::*;

/// The stat fields a node's children change, which kazoo's and Curator's caches do not re-read (see the module
/// documentation).
const CHILD_FIELDS: [&str; 3] = ["cversion", "numChildren", "pzxid"];

/// Bound on the whole scenario (two peer processes, a JVM among them, on a loaded 2-core machine).
const SCENARIO: Duration = Duration::from_secs(240);

/// A node as every view shows it: `{"data": "<hex>", "stat": {...}}`, the stat fields named as in ZooKeeper's Java
/// `Stat` (and kazoo's `ZnodeStat`).
fn node_json(data: &[u8], stat: &zk::Stat) -> Value {
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    json!({
        "data": hex,
        "stat": {
            "czxid": stat.czxid,
            "mzxid": stat.mzxid,
            "pzxid": stat.pzxid,
            "ctime": stat.ctime,
            "mtime": stat.mtime,
            "version": stat.version,
            "cversion": stat.cversion,
            "aversion": stat.aversion,
            "ephemeralOwner": stat.ephemeral_owner,
            "dataLength": stat.data_length,
            "numChildren": stat.num_children,
        }
    })
}

/// A view of a tree: path → node.
type Tree = BTreeMap<String, Value>;
/// A view of single nodes: path → node, or `Value::Null` for none.
type Nodes = BTreeMap<String, Value>;

/// What a peer holds: its tree cache and its single-node caches.
#[derive(Debug, Clone, serde::Deserialize)]
struct View {
    tree: Tree,
    nodes: Nodes,
}

/// The subtree at `root` as the server has it, read after `sync` (so no older than any write before the call).
async fn server_tree(client: &Client, root: &str) -> Tree {
    client.sync(root).await.unwrap();
    let mut tree = Tree::new();
    let mut todo = vec![root.to_owned()];
    while let Some(path) = todo.pop() {
        let Ok((data, stat)) = client.get_data(&path).await else {
            continue;
        };
        if let Ok(names) = client.list_children(&path).await {
            todo.extend(names.iter().map(|name| zklock::child_path(&path, name)));
        }
        tree.insert(path, node_json(&data, &stat));
    }
    tree
}

/// The nodes at `paths` as the server has them (after `sync`).
async fn server_nodes(client: &Client, paths: &[String]) -> Nodes {
    let mut nodes = Nodes::new();
    for path in paths {
        client.sync(path).await.unwrap();
        let node = match client.get_data(path).await {
            Ok((data, stat)) => node_json(&data, &stat),
            Err(zk::Error::NoNode) => Value::Null,
            Err(err) => panic!("reading {path}: {err}"),
        };
        nodes.insert(path.clone(), node);
    }
    nodes
}

/// What a zklock cache holds, as a tree view.
fn zklock_tree(cache: &Cache) -> Tree {
    cache
        .nodes()
        .into_iter()
        .map(|node| (node.path.clone(), node_json(&node.data, &node.stat)))
        .collect()
}

/// What zklock's single-node caches hold (`caches[i]` caches `paths[i]`).
fn zklock_nodes(paths: &[String], caches: &[Cache]) -> Nodes {
    paths
        .iter()
        .zip(caches)
        .map(|(path, cache)| {
            let node = cache
                .get(path)
                .map_or(Value::Null, |node| node_json(&node.data, &node.stat));
            (path.clone(), node)
        })
        .collect()
}

/// `node` without the stat fields named in `ignored`.
fn without(node: &Value, ignored: &[&str]) -> Value {
    let mut node = node.clone();
    if let Some(stat) = node.get_mut("stat").and_then(Value::as_object_mut) {
        for field in ignored {
            stat.remove(*field);
        }
    }
    node
}

/// Every difference between two views (`left` named `left_name`, `right` named `right_name`), one line each, the
/// stat fields `ignored(path)` names left out. Empty when they agree.
fn differences<'a>(
    left_name: &str,
    left: &BTreeMap<String, Value>,
    right_name: &str,
    right: &BTreeMap<String, Value>,
    ignored: impl Fn(&str) -> &'a [&'a str],
) -> Vec<String> {
    let mut found = Vec::new();
    let paths: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    for path in paths {
        match (left.get(path), right.get(path)) {
            (Some(_), None) => found.push(format!("{path}: held by {left_name}, not by {right_name}")),
            (None, Some(_)) => found.push(format!("{path}: held by {right_name}, not by {left_name}")),
            (Some(l), Some(r)) => {
                let (l, r) = (without(l, ignored(path)), without(r, ignored(path)));
                if l.is_null() || r.is_null() {
                    if l != r {
                        found.push(format!("{path}: {left_name} {l}, {right_name} {r}"));
                    }
                    continue;
                }
                if l["data"] != r["data"] {
                    found.push(format!(
                        "{path}: data {left_name} {:?}, {right_name} {:?}",
                        text(&l["data"]),
                        text(&r["data"])
                    ));
                }
                let fields: std::collections::BTreeSet<&String> = l["stat"]
                    .as_object()
                    .into_iter()
                    .chain(r["stat"].as_object())
                    .flat_map(|stat| stat.keys())
                    .collect();
                for field in fields {
                    if l["stat"][field] != r["stat"][field] {
                        found.push(format!(
                            "{path}: stat.{field} {left_name} {}, {right_name} {}",
                            l["stat"][field], r["stat"][field]
                        ));
                    }
                }
            }
            (None, None) => unreachable!(),
        }
    }
    found
}

/// Hex data as text, for messages (lossy UTF-8).
fn text(hex: &Value) -> String {
    let hex = hex.as_str().unwrap_or_default();
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Panics with the differences, if any.
fn assert_agree(what: &str, differences: Vec<String>, views: &str) {
    assert!(
        differences.is_empty(),
        "{what} differ:\n  {}\n{views}",
        differences.join("\n  ")
    );
}

/// A peer process holding caches: `kazoo_cache_view_peer.py` or `CuratorCacheViewPeer.java`; its stderr is
/// collected and shown when it fails. Killed (by pid) when dropped.
struct CachePeer {
    process: PeerProcess,
    stderr: Arc<StdMutex<String>>,
}

impl CachePeer {
    fn spawn(name: &str, mut command: Command) -> CachePeer {
        let mut process = PeerProcess::spawn(name.to_owned(), &mut command, Stdio::piped())
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stderr = Arc::new(StdMutex::new(String::new()));
        let mut pipe = process.take_stderr().expect("stderr is piped");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        CachePeer { process, stderr }
    }

    /// kazoo's `TreeCache` of `root` and a `DataWatch` on each of `nodes`.
    async fn kazoo(hosts: &str, root: &str, nodes: &[String]) -> CachePeer {
        let python = tokio::task::spawn_blocking(|| {
            static PYTHON: OnceLock<Result<std::path::PathBuf, String>> = OnceLock::new();
            PYTHON.get_or_init(peers::kazoo_python).clone()
        })
        .await
        .unwrap()
        .unwrap_or_else(|why| {
            panic!("{why}\nthe kazoo interop tests need Python 3 with kazoo: run scripts/test")
        });
        let mut command = Command::new(python);
        command
            .arg("-u")
            .arg(peers::sources().join("kazoo_cache_view_peer.py"))
            .args([hosts, root])
            .args(nodes);
        CachePeer::spawn("kazoo caches", command)
    }

    /// Curator's `CuratorCache` of `root` and a single-node `CuratorCache` on each of `nodes`.
    async fn curator(hosts: &str, root: &str, nodes: &[String]) -> CachePeer {
        let java = tokio::task::spawn_blocking(curator_cache_peer).await.unwrap();
        let mut command = Command::new(&java.java);
        command
            .args([
                "-Xmx128m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                &java.classpath,
                "CuratorCacheViewPeer",
            ])
            .args([hosts, root])
            .args(nodes);
        CachePeer::spawn("Curator caches", command)
    }

    /// Waits for the next line, which must be `word` or start with `word `; the rest.
    async fn expect(&mut self, word: &str) -> String {
        let line = match self.process.next_line(PEER_TIMEOUT).await {
            Ok(line) => line,
            Err(e) => self.fail(&e.describe(word)).await,
        };
        match line.strip_prefix(word) {
            Some("") => String::new(),
            Some(rest) if rest.starts_with(' ') => rest[1..].to_owned(),
            _ => {
                self.fail(&format!("said {line:?} where we expected {word}"))
                    .await
            }
        }
    }

    async fn send(&mut self, line: &str) {
        if let Err(e) = self.process.send(line).await {
            self.fail(&format!("cannot send {line:?}: {e}")).await;
        }
    }

    /// Waits until the peer's tree cache holds `path`.
    async fn seen(&mut self, path: &str) {
        self.send(&format!("await {path}")).await;
        self.expect("SEEN").await;
    }

    /// What the peer holds now.
    async fn view(&mut self) -> View {
        self.send("dump").await;
        let json = self.expect("VIEW").await;
        match serde_json::from_str(&json) {
            Ok(view) => view,
            Err(e) => {
                self.fail(&format!("sent a view that does not parse ({e}): {json}"))
                    .await
            }
        }
    }

    /// Closes stdin; the peer must exit with status 0.
    async fn finish(mut self) {
        if let Err(e) = self.process.finish(PEER_TIMEOUT).await {
            self.fail(&e.to_string()).await;
        }
    }

    async fn fail(&mut self, what: &str) -> ! {
        self.process.kill(Duration::from_secs(5)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stderr = self.stderr.lock().unwrap().clone();
        panic!(
            "peer `{}` (pid {}) {what}; its stderr:\n{stderr}",
            self.process.name(),
            self.process.pid()
        );
    }
}

/// Compiles `CuratorCacheViewPeer.java` once per test process, into
/// `<tmp>/zklock-interop/cache-view-peer-<nanos>-<pid>-0` (the test kit sweeps such directories once their process
/// is gone). Blocks.
fn curator_cache_peer() -> CuratorPeer {
    static JAVA: OnceLock<Result<CuratorPeer, String>> = OnceLock::new();
    let compiled = JAVA.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let classes = std::env::temp_dir()
            .join("zklock-interop")
            .join(format!("cache-view-peer-{nanos:x}-{}-0", std::process::id()));
        std::fs::create_dir_all(&classes).map_err(|e| format!("cannot create {}: {e}", classes.display()))?;
        peers::compile_against_curator(&peers::sources().join("CuratorCacheViewPeer.java"), &classes)
    });
    match compiled {
        Ok(java) => java.clone(),
        Err(why) => panic!(
            "{why}\nthe Curator interop tests need a JDK and the Curator 5.4 jars in /usr/share/java: \
             run scripts/test"
        ),
    }
}

/// Asks `peer` for its view until its tree and nodes agree with `tree` and `nodes` (the stat fields `ignored(path)`
/// names left out), for at most [`EVENTUALLY`]; its last view.
async fn converged<'a>(
    peer: &mut CachePeer,
    tree: &Tree,
    nodes: &Nodes,
    ignored: impl Fn(&str) -> &'a [&'a str] + Copy,
) -> View {
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        let view = peer.view().await;
        let agrees = differences("peer", &view.tree, "server", tree, ignored).is_empty()
            && differences("peer", &view.nodes, "server", nodes, ignored).is_empty();
        if agrees || tokio::time::Instant::now() >= deadline {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most [`EVENTUALLY`]) until the tree cache's events report the creation of `marker`: the cache reads
/// in the order events came, so every write before the marker has then been read.
async fn settled(events: &mut Events, marker: &str) {
    eventually("zklock's cache to see the marker", async {
        loop {
            match events.next().await {
                Some(CacheEvent::Created(node)) if node.path == marker => return,
                Some(_) => {}
                None => panic!("the cache stopped"),
            }
        }
    })
    .await
}

async fn create(writer: &Client, path: &str, data: &[u8]) {
    writer
        .create(path, data, &PERSISTENT)
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
}

async fn set(writer: &Client, path: &str, data: &[u8]) {
    writer
        .set_data(path, data, None)
        .await
        .unwrap_or_else(|e| panic!("set {path}: {e}"));
}

async fn delete(writer: &Client, path: &str) {
    writer
        .delete(path, None)
        .await
        .unwrap_or_else(|e| panic!("delete {path}: {e}"));
}

/// The scenario: the tree before the caches start, the caches, the writes, then every view compared.
async fn caches_agree(hosts: &str) {
    let root = unique_path("cache-interop");
    let p = |rest: &str| format!("{root}/{rest}");
    let writer = client(hosts).await;
    // Before the caches start (found by their first read).
    create(&writer, &root, b"r0").await;
    for (path, data) in [
        ("a", &b"a0"[..]),
        ("a/x", b"x0"),
        ("gone", b"g"),
        ("d1", b"d1"),
        ("d1/e1", b"e1"),
        ("d1/e1/f1", b"f1"),
        ("empty", b""),
    ] {
        create(&writer, &p(path), data).await;
    }
    // The single nodes watched: one changed throughout, one created later, one deleted, one made and changed by
    // the multi.
    let watched = [p("a"), p("n1"), p("gone"), p("m1/m2")];

    let kazoo = CachePeer::kazoo(hosts, &root, &watched);
    let curator = CachePeer::curator(hosts, &root, &watched);
    let (mut kazoo, mut curator) = tokio::join!(kazoo, curator);
    let reader = client(hosts).await;
    let tree = Cache::tree(&reader, &root).unwrap().start();
    let mut events = tree.events();
    let singles: Vec<Cache> = watched
        .iter()
        .map(|path| Cache::node(&reader, path).unwrap().start())
        .collect();
    eventually("zklock's tree cache to initialize", tree.initialized())
        .await
        .unwrap();
    for single in &singles {
        eventually("zklock's node cache to initialize", single.initialized())
            .await
            .unwrap();
    }
    kazoo.expect("READY").await;
    curator.expect("READY").await;

    // The writes, with every cache running.
    set(&writer, &root, b"r1").await;
    set(&writer, &p("a"), b"a1").await;
    create(&writer, &p("n1"), b"n1-0").await;
    create(&writer, &p("n1/n2"), b"").await;
    create(&writer, &p("n1/n2/n3"), &[0, 0xff, b'\n', b'"', b'\\']).await;
    set(&writer, &p("a"), b"a2").await;
    delete(&writer, &p("gone")).await;
    delete(&writer, &p("d1/e1/f1")).await;
    delete(&writer, &p("d1/e1")).await;
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    writer.create(&p("eph"), b"ephemeral", &ephemeral).await.unwrap();
    let mut multi = writer.new_multi_writer();
    multi.add_create(&p("m1"), b"m1", &PERSISTENT).unwrap();
    multi.add_create(&p("m1/m2"), b"m2", &PERSISTENT).unwrap();
    multi.add_set_data(&p("n1"), b"n1-1", Some(0)).unwrap();
    multi.add_set_data(&p("a/x"), b"x1", None).unwrap();
    multi.add_delete(&p("empty"), None).unwrap();
    multi
        .add_create(&p("d1/e2"), "é2".as_bytes(), &PERSISTENT)
        .unwrap();
    multi.add_set_data(&p("m1/m2"), b"m2-1", None).unwrap();
    multi.commit().await.unwrap();
    create(&writer, &p("n1/n2/n3/n4"), b"deep").await;
    delete(&writer, &p("n1/n2/n3/n4")).await;
    set(&writer, &p("m1/m2"), b"m2-2").await;
    set(&writer, &p("a"), b"a3").await;
    let marker = p("marker");
    create(&writer, &marker, b"").await;

    // zklock's tree: the marker technique; every other view: until it agrees with the server, for a bounded time.
    settled(&mut events, &marker).await;
    let server = server_tree(&writer, &root).await;
    let server_singles = server_nodes(&writer, &watched).await;
    let zklock = zklock_tree(&tree);
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    let mut zklock_singles = zklock_nodes(&watched, &singles);
    while zklock_singles != server_singles && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        zklock_singles = zklock_nodes(&watched, &singles);
    }
    kazoo.seen(&marker).await;
    curator.seen(&marker).await;
    // The child fields of a node whose children changed after its last data change: stale in kazoo's and Curator's
    // caches by design (see the module documentation).
    let stale: Vec<String> = server
        .iter()
        .filter(|(_, node)| node["stat"]["pzxid"].as_i64() > node["stat"]["mzxid"].as_i64())
        .map(|(path, _)| path.clone())
        .collect();
    let peer_ignores = |path: &str| -> &[&str] {
        if stale.iter().any(|p| p == path) {
            &CHILD_FIELDS
        } else {
            &[]
        }
    };
    let kazoo_view = converged(&mut kazoo, &server, &server_singles, peer_ignores).await;
    let curator_view = converged(&mut curator, &server, &server_singles, peer_ignores).await;

    let views = format!(
        "server: {}\nzklock: {}\nkazoo: {}\nCurator: {}\nsingle nodes: server {}, zklock {}, kazoo {}, Curator {}",
        json!(server),
        json!(zklock),
        json!(kazoo_view.tree),
        json!(curator_view.tree),
        json!(server_singles),
        json!(zklock_singles),
        json!(kazoo_view.nodes),
        json!(curator_view.nodes),
    );
    // The peers' views against zklock's: the tree caches, then the single-node caches (DataWatch, CuratorCache with
    // SINGLE_NODE_CACHE, Cache::node).
    assert_agree(
        "zklock's Cache::tree and kazoo's TreeCache",
        differences("zklock", &zklock, "kazoo", &kazoo_view.tree, peer_ignores),
        &views,
    );
    assert_agree(
        "zklock's Cache::tree and Curator's CuratorCache",
        differences("zklock", &zklock, "Curator", &curator_view.tree, peer_ignores),
        &views,
    );
    assert_agree(
        "zklock's Cache::node and kazoo's DataWatch",
        differences(
            "zklock",
            &zklock_singles,
            "kazoo",
            &kazoo_view.nodes,
            peer_ignores,
        ),
        &views,
    );
    assert_agree(
        "zklock's Cache::node and Curator's single-node CuratorCache",
        differences(
            "zklock",
            &zklock_singles,
            "Curator",
            &curator_view.nodes,
            peer_ignores,
        ),
        &views,
    );
    // zklock's views against the server's, every field.
    assert_agree(
        "zklock's Cache::tree and the server",
        differences("zklock", &zklock, "server", &server, |_| &[]),
        &views,
    );
    assert_agree(
        "zklock's Cache::node and the server",
        differences("zklock", &zklock_singles, "server", &server_singles, |_| &[]),
        &views,
    );
    // The scenario did what it says: the views are not trivially equal.
    assert_eq!(text(&zklock[&p("a")]["data"]), "a3");
    assert!(
        !zklock.contains_key(&p("gone"))
            && !zklock.contains_key(&p("d1/e1"))
            && !zklock.contains_key(&p("empty"))
    );
    assert_eq!(zklock[&p("n1/n2/n3")]["data"], json!("00ff0a225c"), "binary data");
    assert_eq!(
        zklock[&p("eph")]["stat"]["ephemeralOwner"],
        json!(writer.session_id().0)
    );
    assert_eq!(zklock_singles[&p("gone")], Value::Null);
    assert_eq!(text(&zklock_singles[&p("m1/m2")]["data"]), "m2-2");
    assert_eq!(zklock.len(), 12, "{:?}", zklock.keys().collect::<Vec<_>>());

    kazoo.finish().await;
    curator.finish().await;
}

on_standalone_and_embedded! {
    async fn tree_and_node_caches_agree_with_kazoo_and_curator(hosts: &str) {
        tokio::time::timeout(SCENARIO, caches_agree(hosts)).await.expect("the scenario took too long");
    }
}
