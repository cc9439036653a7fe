//! Real clients against the embedded server: the Rust `zookeeper-client`, kazoo (python) and zkCli (Java).

use std::time::Duration;

use tokio::process::Command;
use zklock_server::{Server, ServerConfig};
use zookeeper_client as zk;

use crate::process::{python_ok, run};
use crate::support::WAIT;

async fn server() -> Server {
    Server::start(ServerConfig::default())
        .await
        .expect("embedded server starts")
}

async fn client(connect: &str) -> zk::Client {
    tokio::time::timeout(WAIT, zk::Client::connect(connect))
        .await
        .expect("connect in time")
        .expect("connect")
}

#[tokio::test]
async fn rust_client_basics() {
    let server = server().await;
    let c = client(&server.connect_string()).await;
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let (stat, _) = c.create("/base", b"v0", &open).await.unwrap();
    assert_eq!((stat.version, stat.czxid), (0, stat.mzxid));
    let (data, _, watcher) = c.get_and_watch_data("/base").await.unwrap();
    assert_eq!(data, b"v0");
    let stat = c.set_data("/base", b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    let event = tokio::time::timeout(WAIT, watcher.changed())
        .await
        .expect("data watch fires");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (zk::EventType::NodeDataChanged, "/base")
    );
    assert!(matches!(
        c.set_data("/base", b"v2", Some(0)).await,
        Err(zk::Error::BadVersion)
    ));

    let seq = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let (_, n1) = c.create("/base/q-", b"", &seq).await.unwrap();
    let (_, n2) = c.create("/base/q-", b"", &seq).await.unwrap();
    assert_eq!((n1.into_i64(), n2.into_i64()), (0, 1));
    let mut children = c.list_children("/base").await.unwrap();
    children.sort();
    assert_eq!(children, ["q-0000000000", "q-0000000001"]);
    assert!(matches!(c.delete("/base", None).await, Err(zk::Error::NotEmpty)));

    // A second session sees the first one's ephemerals vanish when it closes.
    let other = client(&server.connect_string()).await;
    let (_, _, watcher) = other.get_and_watch_children("/base").await.unwrap();
    // Dropping the client closes its session.
    drop(c);
    let event = tokio::time::timeout(WAIT, watcher.changed())
        .await
        .expect("child watch fires");
    assert_eq!(event.event_type, zk::EventType::NodeChildrenChanged);
    assert!(other.list_children("/base").await.unwrap().is_empty());

    let mut multi = other.new_multi_writer();
    multi.add_create("/base/m", b"1", &open).unwrap();
    multi.add_set_data("/base/m", b"2", Some(0)).unwrap();
    multi.add_delete("/base/nope", None).unwrap();
    assert!(matches!(
        multi.commit().await,
        Err(zk::MultiWriteError::OperationFailed {
            index: 2,
            source: zk::Error::NoNode
        })
    ));
    assert_eq!(other.check_stat("/base/m").await.unwrap(), None);
    other.delete("/base", None).await.unwrap();
    drop(other);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn kazoo_basics() {
    let server = server().await;
    python_ok("kazoo_basics.py", &[&server.connect_string(), "/kazoo"]).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn kazoo_lock_two_contenders() {
    let server = server().await;
    python_ok("kazoo_lock.py", &[&server.connect_string(), "/locks/kazoo"]).await;
    server.shutdown().await.unwrap();
}

/// Runs `zkCli.sh -server <connect> <args...>`, returns (success, output lines that are not log lines).
async fn zkcli(connect: &str, args: &[&str]) -> (bool, Vec<String>) {
    let mut command = Command::new("/usr/share/zookeeper/bin/zkCli.sh");
    command.arg("-server").arg(connect).args(args);
    let output = run(command, Duration::from_secs(120)).await;
    // zkCli prints results to stdout and some (e.g. "Created /x", errors) to stderr.
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = text
        .lines()
        .filter(|l| !is_log_line(l))
        .map(str::to_string)
        .collect();
    (output.status.success(), lines)
}

/// zkCli prints log4j lines (`2026-01-01 ... INFO ...`) and a connect banner among its output.
fn is_log_line(line: &str) -> bool {
    line.trim().is_empty()
        || line.starts_with("Connecting to ")
        || line.starts_with("WATCHER::")
        || line.starts_with("WatchedEvent ")
        || line.contains(" INFO ")
        || line.contains(" WARN ")
        || line.contains(" ERROR ")
        || line.contains("log4j")
        || line.starts_with("SLF4J")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkcli_against_embedded_matches_zookeeper() {
    let server = server().await;
    let real = zklock_testkit::shared_standalone().connect_string();
    let path = zklock_testkit::unique_path("zkcli");
    let child = format!("{path}/c");
    let script: [Vec<&str>; 6] = [
        vec!["create", &path, "y"],
        vec!["create", &child, "z"],
        vec!["get", &path],
        vec!["ls", &path],
        vec!["delete", &path],
        vec!["deleteall", &path],
    ];
    let mut transcript = Vec::new();
    for args in &script {
        let (ok_real, out_real) = zkcli(&real, args).await;
        let (ok_ours, out_ours) = zkcli(&server.connect_string(), args).await;
        assert_eq!(
            (ok_ours, &out_ours),
            (ok_real, &out_real),
            "zkCli {args:?}: embedded (left) differs from ZooKeeper (right)"
        );
        transcript.push((args.clone(), ok_ours, out_ours));
    }
    // And the outputs are the expected ones, not merely equal.
    assert_eq!(transcript[0].2, [format!("Created {path}")]);
    assert_eq!(transcript[2].2, ["y"]);
    assert_eq!(transcript[3].2, ["[c]"]);
    assert!(
        transcript[4].2.iter().any(|l| l.contains("Node not empty")),
        "{:?}",
        transcript[4]
    );
    let (_, out) = zkcli(&server.connect_string(), &["ls", "/"]).await;
    assert_eq!(out, ["[zookeeper]"]);
    server.shutdown().await.unwrap();
}

/// Apache Curator (Java): CRUD and `InterProcessMutex` with two contenders (`CuratorCheck.java`, run with
/// Java's single-file source launcher against the Debian jars).
#[tokio::test]
async fn curator_crud_and_mutex() {
    let server = server().await;
    let classpath = [
        "curator-client",
        "curator-framework",
        "curator-recipes",
        "zookeeper",
        "zookeeper-jute",
        "guava",
        "slf4j-api",
        "netty-all",
    ]
    .iter()
    .map(|jar| format!("/usr/share/java/{jar}.jar"))
    .collect::<Vec<_>>()
    .join(":");
    let mut command = Command::new("java");
    command
        .arg("-cp")
        .arg(classpath)
        .arg(crate::process::script("CuratorCheck.java"))
        .arg(server.connect_string());
    crate::process::run_ok("CuratorCheck", command).await;
    server.shutdown().await.unwrap();
}
