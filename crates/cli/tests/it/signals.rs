//! Signals to `zklock run` / `zklock elect`: HUP, INT, TERM, QUIT, USR1 and USR2 reach the command's process group,
//! and a signal that makes `zklock` end (an SSH logout's SIGHUP) never leaves the session — and so the lock — behind.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use zklock::Mutex;
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
async fn start(kind: &str, hosts: &str, path: &str, script: &str) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut zklock = zklock(&[kind, "--connect", hosts, path, "--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(zklock.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("the command started")
        .unwrap();
    assert_eq!(line.as_deref(), Some("ready"));
    (zklock, lines)
}

fn send(zklock: &Child, signal: Signal) {
    let pid = zklock.id().expect("zklock runs") as i32;
    kill(Pid::from_raw(pid), signal).unwrap();
}

/// Sends `signal` to `zklock <kind>` while its command traps it: the command must get it (and exit 0, and so must
/// `zklock`).
async fn reaches_the_command(kind: &str, signal: Signal) {
    let hosts = zookeeper().await;
    let name = signal.as_str().trim_start_matches("SIG");
    let path = unique_path(&format!("cli-signal-{kind}-{name}"));
    let (zklock, mut lines) = start(kind, &hosts, &path, &trap_script(name)).await;
    send(&zklock, signal);
    let line = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("the command reported")
        .unwrap();
    let out = tokio::time::timeout(EVENTUALLY, zklock.wait_with_output())
        .await
        .expect("zklock exits")
        .unwrap();
    assert_eq!(
        line.as_deref(),
        Some(format!("got-{name}").as_str()),
        "stderr: {}",
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let client = client(&hosts).await;
    assert_eq!(client.list_children(&path).await.unwrap(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usr1_reaches_the_command() {
    reaches_the_command("run", Signal::SIGUSR1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usr2_reaches_the_command() {
    reaches_the_command("run", Signal::SIGUSR2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quit_reaches_the_command() {
    reaches_the_command("run", Signal::SIGQUIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hup_reaches_the_command_of_elect() {
    reaches_the_command("elect", Signal::SIGHUP).await;
}

/// Polls (bounded by `FREED_WITHIN` from now) until `path` has no children; panics with what is left.
async fn freed_at_once(hosts: &str, path: &str) {
    let exited = Instant::now();
    let client = client(hosts).await;
    loop {
        let children = client.list_children(path).await.unwrap();
        if children.is_empty() {
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
    let (zklock, mut lines) = start("run", &hosts, &path, script).await;
    send(&zklock, Signal::SIGHUP);
    let line = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("the command reported")
        .unwrap();
    let out = tokio::time::timeout(EVENTUALLY, zklock.wait_with_output())
        .await
        .expect("zklock exits")
        .unwrap();
    freed_at_once(&hosts, &path).await;
    assert_eq!(line.as_deref(), Some("got-HUP"), "stderr: {}", text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(128 + Signal::SIGHUP as i32),
        "the command died of SIGHUP; stderr: {}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hup_while_waiting_ends_the_wait_and_leaves_no_node() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-signal-hup-waiting");
    let holder = client(&hosts).await;
    let guard = Mutex::new(&holder, &path).unwrap().lock().await.unwrap();
    let mut waiter = zklock(&["run", "--connect", &hosts, &path, "--", "true"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Waiting: its node is queued behind the holder's (an event would need a watch per poll; this is bounded).
    let deadline = Instant::now() + EVENTUALLY;
    while holder.list_children(&path).await.unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "the waiter never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    send(&waiter, Signal::SIGHUP);
    let status = tokio::time::timeout(Duration::from_secs(10), waiter.wait())
        .await
        .expect("zklock exits promptly")
        .unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut waiter.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert_eq!(
        status.code(),
        Some(128 + Signal::SIGHUP as i32),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("SIGHUP while waiting"), "{stderr}");
    // Only the holder's node is left, at once.
    let started = Instant::now();
    loop {
        let children = holder.list_children(&path).await.unwrap();
        if children.len() == 1 {
            break;
        }
        assert!(
            started.elapsed() < FREED_WITHIN,
            "the waiter's node is still there: {children:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(guard.release().await.is_ok());
}
