//! `zklock watch`: the content and every change of a node or a tree, or a command run on each settled change.

use nix::sys::signal::Signal;
use zklock_testkit::hosts::embedded;
use zklock_testkit::unique_path;

use crate::support::*;

/// Reads lines until one contains `text`; the lines read, that one last.
async fn lines_until(watch: &mut Running, text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = watch
            .line(&format!("a line with {text:?} (after {seen:?})"))
            .await;
        let done = line.contains(text);
        seen.push(line);
        if done {
            return seen;
        }
    }
}

/// Prints the tree as it is, `initialized`, then each change as a line (a child's coming and going only as its own
/// line); SIGTERM ends it with 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_the_content_then_every_change() {
    for hosts in [embedded().await, zookeeper().await] {
        let root = unique_path("cli-watch");
        let writer = client(&hosts).await;
        writer.create(&root, b"top", &persistent()).await.unwrap();
        writer
            .create(&format!("{root}/a"), b"one", &persistent())
            .await
            .unwrap();
        let mut watch = Running::zklock(&["watch", "--connect", &hosts, "-r", &root]);
        let first = lines_until(&mut watch, "initialized").await;
        let mut first_two = first[..2].to_vec();
        first_two.sort();
        assert_eq!(
            first_two,
            [
                format!("created {root} \"top\""),
                format!("created {root}/a \"one\"")
            ]
        );
        assert_eq!(first[2], format!("initialized {root} (2 node(s))"));
        writer.set_data(&format!("{root}/a"), b"two", None).await.unwrap();
        assert_eq!(
            watch.line("the change").await,
            format!("changed {root}/a \"two\"")
        );
        writer
            .create(&format!("{root}/b"), b"", &persistent())
            .await
            .unwrap();
        assert_eq!(watch.line("the create").await, format!("created {root}/b \"\""));
        writer.delete(&format!("{root}/a"), None).await.unwrap();
        assert_eq!(watch.line("the delete").await, format!("deleted {root}/a"));
        watch.signal(Signal::SIGTERM);
        let (code, stderr) = watch.finish().await;
        assert_eq!(code, Some(0), "{stderr}");
    }
}

/// `--json` on a node that does not exist yet: `initialized` with no node, then its creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_json_follows_a_node_that_comes_later() {
    let hosts = embedded().await;
    let path = unique_path("cli-watch");
    let mut watch = Running::zklock(&["watch", "--connect", &hosts, "--json", &path]);
    let line: serde_json::Value = serde_json::from_str(&watch.line("initialized").await).unwrap();
    assert_eq!(
        (line["event"].as_str(), line["nodes"].as_u64()),
        (Some("initialized"), Some(0))
    );
    client(&hosts)
        .await
        .create(&path, b"v1", &persistent())
        .await
        .unwrap();
    let line: serde_json::Value = serde_json::from_str(&watch.line("the create").await).unwrap();
    assert_eq!(line["event"], "created");
    assert_eq!(line["path"], path.as_str());
    assert_eq!(line["data"], "v1");
    assert_eq!(line["version"], 0);
    assert!(line["observed_ms"].as_u64().unwrap() > 0);
    watch.signal(Signal::SIGINT);
    assert_eq!(watch.finish().await.0, Some(0));
}

/// With a command: one run at the start and one per settled change, the value on stdin and in the environment; a
/// failing run is reported and the watch goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_runs_the_command_on_every_settled_change() {
    let hosts = embedded().await;
    let path = unique_path("cli-watch");
    let writer = client(&hosts).await;
    writer.create(&path, b"v1", &persistent()).await.unwrap();
    let script = r#"echo "run exists=$ZKLOCK_WATCH_EXISTS value=$ZKLOCK_WATCH_VALUE stdin=$(cat)"; [ "$ZKLOCK_WATCH_VALUE" != bad ]"#;
    let mut watch = Running::zklock(&[
        "watch",
        "--connect",
        &hosts,
        "--debounce",
        "50ms",
        &path,
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(
        watch.line("the first run").await,
        "run exists=1 value=v1 stdin=v1"
    );
    writer.set_data(&path, b"bad", None).await.unwrap();
    assert_eq!(
        watch.line("the run after the change").await,
        "run exists=1 value=bad stdin=bad"
    );
    writer.set_data(&path, b"v3", None).await.unwrap();
    assert_eq!(
        watch.line("the run after the failed run").await,
        "run exists=1 value=v3 stdin=v3"
    );
    writer.delete(&path, None).await.unwrap();
    assert_eq!(
        watch.line("the run after the delete").await,
        "run exists=0 value= stdin="
    );
    watch.signal(Signal::SIGTERM);
    let (code, stderr) = watch.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("the command exited with status 1"), "{stderr}");
}

/// A command that is not there: 127 at once, as `zklock run` says it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_a_command_not_found_exits_127() {
    let hosts = embedded().await;
    let out = output(&[
        "watch",
        "--connect",
        &hosts,
        &unique_path("cli-watch"),
        "--",
        "no-such-command-zklock",
    ])
    .await;
    assert_exit(&out, 127, "command not found");
}

/// A server that is not there: 69, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_a_server_exits_69() {
    let out = output(&[
        "watch",
        "--connect",
        "127.0.0.1:1",
        "--connect-timeout",
        "1s",
        "/x",
    ])
    .await;
    assert_exit(&out, exit::UNAVAILABLE, "server down");
}

/// `status --watch`: a view, then another after each change (a lock taken, then released), until SIGTERM (0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_watch_shows_each_change() {
    let hosts = embedded().await;
    let path = unique_path("cli-status-watch");
    let mut watch = Running::zklock(&["status", "--connect", &hosts, "--watch", &path]);
    lines_until(&mut watch, "does not exist").await;
    let (_client, guard) = lock_held(&hosts, &path).await;
    lines_until(&mut watch, "held by 1 of 1 contender(s)").await;
    guard.release().await.unwrap();
    lines_until(&mut watch, "exists with no contenders").await;
    watch.signal(Signal::SIGTERM);
    let (code, stderr) = watch.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
}
