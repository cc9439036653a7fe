//! Signals to `zklock run` / `zklock elect`: HUP, INT, TERM, QUIT, USR1 and USR2 reach the command's process group,
//! and a signal that makes `zklock` end (an SSH logout's SIGHUP) never leaves the session — and so the lock — behind.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use zklock_testkit::unique_path;

use crate::support::*;

/// How soon the lock must be free once `zklock` has exited: far below any session timeout (10 s here).
const FREED_WITHIN: Duration = Duration::from_secs(1);

/// The command: reports the signal it traps on stdout and exits 0; says `ready` once the trap is set. It waits in
/// `wait` for a background `sleep` (which a non-interactive shell starts with SIGQUIT ignored, so no core dump),
/// and `wait` returns as soon as a trapped signal arrives.
fn trap_script(signal: &str) -> String {
    format!("trap 'echo got-{signal}; exit 0' {signal}; echo ready; sleep 120 & wait")
}

/// Starts `zklock <kind> --connect HOSTS PATH -- sh -c SCRIPT` and waits for the command's `ready`.
async fn start(kind: &str, hosts: &str, path: &str, script: &str) -> Running {
    let mut zklock = Running::zklock(&[kind, "--connect", hosts, path, "--", "sh", "-c", script]);
    assert_eq!(zklock.line("the command to start").await, "ready");
    zklock
}

/// Sends `signal` to `zklock <kind>` while its command traps it: the command must get it (and exit 0, and so must
/// `zklock`).
async fn reaches_the_command(kind: &str, signal: Signal) {
    let hosts = zookeeper().await;
    let name = signal.as_str().trim_start_matches("SIG");
    let path = unique_path(&format!("cli-signal-{kind}-{name}"));
    let mut zklock = start(kind, &hosts, &path, &trap_script(name)).await;
    zklock.signal(signal);
    let line = zklock.next_line("the command's report").await;
    let (status, stderr) = zklock.finish().await;
    assert_eq!(line, Some(format!("got-{name}")), "stderr: {stderr}");
    assert_eq!(status, Some(0), "stderr: {stderr}");
    let client = client(&hosts).await;
    assert_eq!(client.list_children(&path).await.unwrap(), Vec::<String>::new());
}

/// USR1, USR2 and QUIT reach the command of `zklock run`, HUP that of `zklock elect`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_reach_the_command() {
    for (kind, signal) in [
        ("run", Signal::SIGUSR1),
        ("run", Signal::SIGUSR2),
        ("run", Signal::SIGQUIT),
        ("elect", Signal::SIGHUP),
    ] {
        reaches_the_command(kind, signal).await;
    }
}

/// Polls (bounded by `FREED_WITHIN` from now) until `path` has `left` children; panics with what is there.
async fn freed_at_once(client: &zookeeper_client::Client, path: &str, left: usize) {
    let exited = Instant::now();
    loop {
        let children = client.list_children(path).await.unwrap();
        if children.len() == left {
            return;
        }
        assert!(
            exited.elapsed() < FREED_WITHIN,
            "{path} still has {children:?} {:?} after zklock exited",
            exited.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hup_while_running_reaches_the_command_and_frees_the_lock_at_once() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-signal-hup-running");
    // The command dies of SIGHUP, as most do; before that it says it got it.
    let script = "trap 'echo got-HUP; trap - HUP; kill -HUP $$' HUP; echo ready; sleep 120 & wait";
    let admin = client(&hosts).await;
    let mut zklock = start("run", &hosts, &path, script).await;
    zklock.signal(Signal::SIGHUP);
    let line = zklock.next_line("the command's report").await;
    let (status, stderr) = zklock.finish().await;
    freed_at_once(&admin, &path, 0).await;
    assert_eq!(line.as_deref(), Some("got-HUP"), "stderr: {stderr}");
    assert_eq!(
        status,
        Some(128 + Signal::SIGHUP as i32),
        "the command died of SIGHUP; stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hup_while_waiting_ends_the_wait_and_leaves_no_node() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-signal-hup-waiting");
    let (holder, guard) = lock_held(&hosts, &path).await;
    let waiter = Running::zklock(&["run", "--connect", &hosts, &path, "--", "true"]);
    // Waiting: its node is queued behind the holder's.
    await_children(&holder, &path, 2).await;
    waiter.signal(Signal::SIGHUP);
    let (status, stderr) = waiter.finish().await;
    assert_eq!(status, Some(128 + Signal::SIGHUP as i32), "stderr: {stderr}");
    assert!(stderr.contains("SIGHUP while waiting"), "{stderr}");
    // Only the holder's node is left, at once.
    freed_at_once(&holder, &path, 1).await;
    assert!(guard.release().await.is_ok());
}
