//! `examples/service.rs` as a real process against the embedded server: it leads, processes the queue's items,
//! carries on after its session expired (it is paused with SIGSTOP until the server has expired the session: its
//! leader node gone), and on SIGTERM exits 0 leaving no node of ours — looked for at the server as soon as it has
//! exited. The control: a second run killed with SIGKILL leaves its leader node, and the same look finds it.
//!
//! The test runs this binary again as the service: the example is compiled into it (`#[path]`), and the child
//! calls the example's own `main` (so its signal handling is what is tested), with the session timeout at 4 s.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use zklock::zookeeper_client::{self as zk, Client};

#[path = "../examples/service.rs"]
#[allow(dead_code)]
mod service;

const CHILD: &str = "ZKLOCK_SERVICE_CHILD";
/// Generous bound for "this must happen" on a loaded machine.
const EVENTUALLY: Duration = Duration::from_secs(60);

fn main() {
    if std::env::var_os(CHILD).is_some() {
        if let Err(err) = service::main() {
            eprintln!("service: {err}");
            std::process::exit(1);
        }
        return;
    }
    let hosts = zklock_testkit::shared_embedded();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    runtime.block_on(parent(&hosts));
    println!("service_example: ok in {:?}", started.elapsed());
}

/// The service, started: its standard output read line by line.
struct Service {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Service {
    fn start(hosts: &str, base: &str) -> Service {
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .args([hosts, base, "4"])
            .env(CHILD, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the service");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Service { child, lines }
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.child.id().expect("runs") as i32), signal).unwrap();
    }

    /// The rest of the next line that starts with `prefix` (earlier lines are skipped).
    async fn next(&mut self, prefix: &str) -> String {
        let find = async {
            while let Some(line) = self.lines.next_line().await.unwrap() {
                if let Some(rest) = line.strip_prefix(prefix) {
                    return rest.to_owned();
                }
            }
            panic!("the service ended before printing {prefix:?}");
        };
        tokio::time::timeout(EVENTUALLY, find)
            .await
            .unwrap_or_else(|_| panic!("no {prefix:?} line in time"))
    }

    async fn exit_code(mut self) -> Option<i32> {
        let status = tokio::time::timeout(EVENTUALLY, self.child.wait()).await;
        status.expect("the service exited in time").unwrap().code()
    }
}

/// The children of `dir` now, after a sync (none if it is gone).
async fn children(client: &Client, dir: &str) -> Vec<String> {
    match client.sync(dir).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(err) => panic!("sync {dir}: {err}"),
    }
    match client.list_children(dir).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => Vec::new(),
        Err(err) => panic!("listing {dir}: {err}"),
    }
}

/// Waits (child watches) until `dir` has `count` children.
async fn await_count(client: &Client, dir: &str, count: usize) {
    let wait = async {
        loop {
            match client.list_and_watch_children(dir).await {
                Ok((children, _)) if children.len() == count => return,
                Ok((_, watcher)) => drop(watcher.changed().await),
                Err(zk::Error::NoNode) if count == 0 => return,
                Err(zk::Error::NoNode) => {
                    drop(client.check_and_watch_stat(dir).await.unwrap().1.changed().await)
                }
                Err(err) => panic!("listing {dir}: {err}"),
            }
        }
    };
    tokio::time::timeout(EVENTUALLY, wait)
        .await
        .unwrap_or_else(|_| panic!("{dir}: never {count} children"));
}

async fn parent(hosts: &str) {
    let base = zklock_testkit::unique_path("service-example");
    let (leader, jobs) = (format!("{base}/leader"), format!("{base}/jobs"));
    let admin = Client::connect(hosts).await.unwrap();
    let queue = zklock::Queue::new(&admin, &jobs).unwrap();

    let mut service = Service::start(hosts, &base);
    let first_term: i64 = service.next("leading ").await.parse().unwrap();
    let mut processed = BTreeSet::new();
    for item in ["a", "b", "c"] {
        queue.put(item.as_bytes()).await.unwrap();
    }
    for _ in 0..3 {
        assert!(
            processed.insert(service.next("processed ").await),
            "an item processed twice"
        );
    }

    // Paused until the server has expired its session (its leader node is gone), then resumed.
    await_count(&admin, &leader, 1).await;
    service.signal(Signal::SIGSTOP);
    let paused = Instant::now();
    await_count(&admin, &leader, 0).await;
    println!("session expired {:?} into the pause", paused.elapsed());
    service.signal(Signal::SIGCONT);
    let second_term: i64 = service.next("leading ").await.parse().unwrap();
    assert!(
        second_term > first_term,
        "a new term, a larger token: {first_term} then {second_term}"
    );
    queue.put(b"d").await.unwrap();
    assert!(
        processed.insert(service.next("processed ").await),
        "an item processed twice"
    );
    assert_eq!(processed, BTreeSet::from(["a", "b", "c", "d"].map(str::to_owned)));
    assert_eq!(queue.len().await.unwrap(), 0, "every item completed");

    // SIGTERM: a clean exit, and no node of ours left, looked for as soon as it has exited.
    service.signal(Signal::SIGTERM);
    assert_eq!(service.exit_code().await, Some(0));
    assert_eq!(
        children(&admin, &leader).await,
        Vec::<String>::new(),
        "the leader node is gone"
    );
    assert_eq!(
        children(&admin, &format!("{jobs}/claims")).await,
        Vec::<String>::new(),
        "no claim is left"
    );

    // The control: killed outright, the service leaves its leader node until its session expires.
    let mut killed = Service::start(hosts, &base);
    killed.next("leading ").await;
    killed.signal(Signal::SIGKILL);
    assert_eq!(killed.exit_code().await, None, "killed by a signal");
    assert_eq!(
        children(&admin, &leader).await.len(),
        1,
        "the check finds a node left behind"
    );
}
