//! `zklock status`: holder and queue in order; `--json`, `--check`, each recipe's labels. The tests of a lock are
//! in `mutex.rs`, those of the other recipes in `recipes.rs`; here are the helpers both use.

use zklock::Mutex;
use zookeeper_client::Client;

use crate::support::*;

mod mutex;
mod recipes;
mod tree;

/// `client` takes the lock at `path`, with `data`.
async fn lock(client: &Client, path: &str, data: &str) -> zklock::Result<zklock::Guard> {
    Mutex::new(client, path)?.with_data(data).lock().await
}

/// `client` campaigns in the election at `path`, with `data`.
async fn campaign(client: &Client, path: &str, data: &str) -> zklock::Result<zklock::Leadership> {
    zklock::LeaderElection::new(client, path)?
        .with_data(data)
        .campaign()
        .await
}

/// `client` takes the lease of the one-lease semaphore at `path`, with `data`.
async fn lease(client: &Client, path: &str, data: &str) -> zklock::Result<zklock::Lease> {
    zklock::Semaphore::new(client, path, 1)?
        .with_data(data)
        .acquire()
        .await
}

/// What `zklock status PATH` shows.
async fn status(hosts: &str, path: &str) -> String {
    text(&output(&["status", "--connect", hosts, path]).await.stdout)
}

/// What `zklock status --json PATH` says.
async fn status_json(hosts: &str, path: &str) -> serde_json::Value {
    json(&output(&["status", "--connect", hosts, "--json", path]).await)
}

/// The exit code of `zklock status --check PATH`.
async fn check(hosts: &str, path: &str) -> Option<i32> {
    output(&["status", "--connect", hosts, "--check", path])
        .await
        .status
        .code()
}

/// How many entries of `status`'s output (its lines, indented) start with `label`.
fn entries(stdout: &str, label: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with(label))
        .count()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|err| panic!("{err}: {}", text(&out.stdout)))
}
