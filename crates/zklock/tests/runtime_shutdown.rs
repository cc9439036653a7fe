//! Shutting a runtime down while guards are held: never a panic, and every node left behind is named in a log line
//! (the runtime is gone, so nothing can delete it before the session ends); closing the `Session` first leaves no
//! node at all.
//!
//! The test runs this binary again as child processes (one runtime each, against the embedded server), 50 in all,
//! in three ways of ending: the runtime dropped, `shutdown_timeout`, and `Session::close` before the drop. It asserts
//! that no child's stderr says "panicked", and looks at the server right after each child has exited: a node of
//! the child's session that no warning of the child named fails the test (the check's negative control: the
//! children that do not close leave nodes, and each must be found named).

use std::process::Command;
use std::time::Duration;

use zklock::zookeeper_client::Client;
use zklock::{Mutex, Session};

const CHILD: &str = "ZKLOCK_SHUTDOWN_CHILD";
const RUNS: usize = 50;
/// Guards each child holds when its runtime shuts down (plus one acquire waiting behind the first).
const HELD: usize = 3;

fn main() {
    match std::env::var(CHILD) {
        Ok(args) => child(&args),
        Err(_) => parent(),
    }
}

/// `args`: `<connect string> <root> <how>`.
fn child(args: &str) {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter("warn")
        .with_ansi(false)
        .init();
    let mut args = args.split(' ');
    let (hosts, root, how) = (args.next().unwrap(), args.next().unwrap(), args.next().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let session = runtime.block_on(async {
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(hosts)
            .await
            .unwrap();
        println!("session={}", client.session_id().0);
        let session = Session::new(&client);
        let (ready, mut held) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..HELD {
            let (mutex, ready) = (
                Mutex::new(&session, &format!("{root}/{i}")).unwrap(),
                ready.clone(),
            );
            tokio::spawn(async move {
                let guard = mutex.lock().await.unwrap();
                ready.send(()).unwrap();
                std::future::pending::<()>().await;
                drop(guard);
            });
        }
        for _ in 0..HELD {
            held.recv().await.unwrap();
        }
        // An acquire of our own, waiting behind our first guard.
        let waiter = Mutex::new(&session, &format!("{root}/0")).unwrap();
        tokio::spawn(async move { waiter.lock().await });
        while client.list_children(&format!("{root}/0")).await.unwrap().len() < 2 {
            tokio::task::yield_now().await;
        }
        session
    });
    match how {
        "drop" => drop(runtime),
        "shutdown_timeout" => runtime.shutdown_timeout(Duration::from_millis(200)),
        "close" => {
            runtime.block_on(session.clone().close()).unwrap();
            drop(runtime);
        }
        other => panic!("unknown way {other}"),
    }
    drop(session);
}

fn parent() {
    let hosts = zklock_testkit::shared_embedded();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let admin = runtime.block_on(Client::connect(&hosts)).unwrap();
    let ways = ["drop", "shutdown_timeout", "close"];
    let mut left = 0;
    for run in 0..RUNS {
        let how = ways[run % ways.len()];
        let root = zklock_testkit::unique_path("runtime-shutdown");
        let out = Command::new(std::env::current_exe().unwrap())
            .env(CHILD, format!("{hosts} {root} {how}"))
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(
            out.status.success(),
            "run {run} ({how}): {}\n{stderr}",
            out.status
        );
        assert!(
            !stderr.contains("panicked"),
            "run {run} ({how}) printed a panic:\n{stderr}"
        );
        let session: i64 = stdout
            .lines()
            .find_map(|line| line.strip_prefix("session="))
            .expect("the child's session")
            .parse()
            .unwrap();
        let nodes = runtime.block_on(nodes_of(&admin, &root, session));
        if how == "close" {
            assert_eq!(
                nodes,
                Vec::<String>::new(),
                "run {run}: closed first, nothing is left"
            );
        } else {
            assert!(nodes.len() <= HELD + 1, "run {run} ({how}): {nodes:?}");
        }
        for node in &nodes {
            // The warning names the node, or its unique prefix when the create's reply had not been seen yet.
            let named = |line: &str| {
                line.contains("until the ZooKeeper session ends")
                    && line
                        .split_once("path=")
                        .is_some_and(|(_, path)| node.starts_with(path.split(' ').next().unwrap_or_default()))
            };
            assert!(
                stderr.lines().any(named),
                "run {run} ({how}): {node} stays, and no warning says so:\n{stderr}"
            );
        }
        left += nodes.len();
    }
    assert!(
        left > 0,
        "no shutdown left a node: the check of the warnings checked nothing"
    );
    println!("runtime_shutdown: {RUNS} runs, no panic; {left} nodes left by runtime shutdowns, each named in a warning");
}

/// Every node under `root` (one level of directories) whose ephemeral owner is `session`.
async fn nodes_of(admin: &Client, root: &str, session: i64) -> Vec<String> {
    let mut ours = Vec::new();
    for dir in admin.list_children(root).await.unwrap_or_default() {
        let dir = format!("{root}/{dir}");
        for name in admin.list_children(&dir).await.unwrap_or_default() {
            let path = format!("{dir}/{name}");
            if let Ok(Some(stat)) = admin.check_stat(&path).await {
                if stat.ephemeral_owner == session {
                    ours.push(path);
                }
            }
        }
    }
    ours.sort();
    ours
}
