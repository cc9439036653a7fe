//! Running the `zklock` binary in tests.

use std::process::Output;
use std::time::Duration;

use zookeeper_client::{self as zk, Client};

/// Generous bound for "this must happen" on a loaded 2-core machine.
pub const EVENTUALLY: Duration = Duration::from_secs(60);

/// The connect string of this test binary's shared real ZooKeeper.
pub async fn zookeeper() -> String {
    tokio::task::spawn_blocking(|| zklock_testkit::shared_standalone().connect_string())
        .await
        .unwrap()
}

/// `zklock` with `args`, not yet started.
pub fn zklock(args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_zklock"));
    command.args(args).env_remove("ZKLOCK_CONNECT").kill_on_drop(true);
    command
}

/// Runs `zklock` to completion (bounded).
pub async fn output(args: &[&str]) -> Output {
    tokio::time::timeout(EVENTUALLY, zklock(args).output())
        .await
        .unwrap_or_else(|_| panic!("zklock {args:?} did not finish"))
        .expect("run zklock")
}

/// A client session for inspecting or preparing the tree.
pub async fn client(hosts: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(hosts)
        .await
        .expect("connect")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits (an event: a pidfd becomes readable when its process ends — any process, not only our children) until
/// `pid` has exited.
pub async fn exited(pid: i32) {
    let pid = rustix::process::Pid::from_raw(pid).expect("a valid pid");
    let pidfd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return, // already gone (and reaped)
        Err(err) => panic!("pidfd_open: {err}"),
    };
    tokio::time::timeout(
        EVENTUALLY,
        tokio::task::spawn_blocking(move || {
            let mut fds = [rustix::event::PollFd::new(&pidfd, rustix::event::PollFlags::IN)];
            while rustix::event::poll(&mut fds, None).expect("poll") == 0 {}
        }),
    )
    .await
    .expect("the process exited")
    .unwrap();
}

/// Waits, with child watches, until `dir` has `count` children; returns them.
pub async fn await_children(client: &Client, dir: &str, count: usize) -> Vec<String> {
    let wait = async {
        loop {
            match client.list_and_watch_children(dir).await {
                Ok((children, _)) if children.len() == count => return children,
                Ok((_, watcher)) => drop(watcher.changed().await),
                Err(zk::Error::NoNode) => {
                    let (stat, watcher) = client.check_and_watch_stat(dir).await.unwrap();
                    if stat.is_none() {
                        drop(watcher.changed().await);
                    }
                }
                Err(err) => panic!("listing {dir}: {err}"),
            }
        }
    };
    tokio::time::timeout(EVENTUALLY, wait)
        .await
        .unwrap_or_else(|_| panic!("{dir}: never {count} children"))
}

/// Runs each body against the shared real ZooKeeper and the embedded server: `mod NAME { zookeeper, embedded }`.
macro_rules! on_both_servers {
    ($(async fn $name:ident($hosts:ident : &str) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            async fn body($hosts: &str) $body
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn zookeeper() {
                body(&crate::support::zookeeper().await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                let hosts = tokio::task::spawn_blocking(zklock_testkit::shared_embedded).await.unwrap();
                body(&hosts).await
            }
        }
    )*};
}
