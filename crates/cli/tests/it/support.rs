//! Running the `zklock` binary in tests.

use std::process::Output;
use std::time::Duration;

use zookeeper_client::Client;

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
