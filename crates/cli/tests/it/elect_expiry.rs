//! `zklock elect` is a long-running process: when its ZooKeeper session ends it stops the command, makes a new
//! session, campaigns again and runs the command again with a larger fencing token; `--exit-on-expiry` exits 75
//! instead. The session ends from outside in two ways: the process is paused (SIGSTOP) until the server has expired
//! its session (its node gone, seen by a watch), and `zklock serve` is stopped and started again on the same data
//! directory after the session timeout has passed. The commands append lines to one file, from which the test reads
//! each term's fencing token and interval of activity.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::elect::{read_log, temp_log, wait_for_log, Line, SCRIPT};
use crate::logs::Serve;
use crate::support::*;

/// The session timeout of the `zklock elect` processes (the minimum a default server allows: 2 ticks of 2 s).
const SESSION_TIMEOUT: &str = "4";

/// The terms seen so far: each command's fencing token, first and last line, in the order they started.
fn terms(lines: &[Line]) -> Vec<(i64, u128, u128)> {
    let mut terms: Vec<(u32, i64, u128, u128)> = Vec::new();
    for line in lines {
        match terms.iter_mut().find(|term| term.0 == line.shell) {
            Some(term) => {
                term.2 = term.2.min(line.at_ns);
                term.3 = term.3.max(line.at_ns);
            }
            None => terms.push((line.shell, line.token, line.at_ns, line.at_ns)),
        }
    }
    terms.sort_by_key(|term| term.2);
    terms
        .into_iter()
        .map(|(_, token, first, last)| (token, first, last))
        .collect()
}

fn started(lines: &[Line]) -> usize {
    lines.iter().filter(|line| line.what == "start").count()
}

/// `zklock elect [extra] --connect HOSTS ... DIR -- sh -c SCRIPT sh LOG`, its stderr going to `LOG.err`.
fn start_elect(hosts: &str, dir: &str, log: &Path, extra: &[&str]) -> tokio::process::Child {
    let stderr = std::fs::File::create(log.with_extension("err")).unwrap();
    zklock(&["elect", "--connect", hosts, "--session-timeout", SESSION_TIMEOUT])
        .args(["--kill-after", "1"])
        .args(extra)
        .args([dir, "--", "sh", "-c", SCRIPT, "sh"])
        .arg(log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start zklock elect")
}

fn stderr_of(log: &Path) -> String {
    std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
}

/// Two terms, one after the other, with a larger token the second time, and the first command gone before the
/// second started.
fn assert_second_term(lines: &[Line], said: &str) {
    let terms = terms(lines);
    assert_eq!(terms.len(), 2, "two terms: {terms:?}; zklock said: {said}");
    let ((first_token, _, first_last), (second_token, second_first, _)) = (terms[0], terms[1]);
    assert!(
        second_token > first_token,
        "the new term's fencing token {second_token} is larger than the old {first_token}"
    );
    assert!(
        first_last < second_first,
        "the old command ran on {} ms into the new term",
        (first_last - second_first) / 1_000_000
    );
}

/// Ends the elect process with SIGTERM (its command's trap exits 0) and checks that no node of it is left.
async fn stop_elect(mut elect: tokio::process::Child, hosts: &str, dir: &str, log: &Path) {
    kill(Pid::from_raw(elect.id().expect("runs") as i32), Signal::SIGTERM).unwrap();
    let status = eventually("zklock elect to exit", elect.wait()).await.unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "the command's own status; zklock said: {}",
        stderr_of(log)
    );
    let admin = client(hosts).await;
    assert_eq!(
        remaining(&admin, dir).await,
        Vec::<String>::new(),
        "no node of ours left"
    );
}

/// Pauses `elect` until the server has expired its session: its node in `dir` is gone (seen by a watch). The
/// watchdog stops the command meanwhile. Resumed, `elect` learns that its session has expired.
async fn expire_by_pause(elect: &tokio::process::Child, hosts: &str, dir: &str) {
    let admin = client(hosts).await;
    await_children(&admin, dir, 1).await;
    let pid = Pid::from_raw(elect.id().expect("runs") as i32);
    kill(pid, Signal::SIGSTOP).unwrap();
    let paused = Instant::now();
    await_children(&admin, dir, 0).await;
    eprintln!("session expired {:?} into the pause", paused.elapsed());
    kill(pid, Signal::SIGCONT).unwrap();
}

// The session expires: the command is stopped, zklock campaigns again on a new session and runs it again.
on_both_servers! {
    async fn elect_campaigns_again_after_its_session_expired(hosts: &str) {
        let dir = zklock_testkit::unique_path("cli-elect-expiry");
        let (_tmp, log) = temp_log();
        let elect = start_elect(hosts, &dir, &log, &[]);
        wait_for_log(&log, "the first term", |lines| started(lines) == 1).await;
        expire_by_pause(&elect, hosts, &dir).await;
        let lines = wait_for_log(&log, "the second term", |lines| started(lines) == 2).await;
        assert_second_term(&lines, &stderr_of(&log));
        assert!(stderr_of(&log).contains("campaigning for"), "said: {}", stderr_of(&log));
        stop_elect(elect, hosts, &dir, &log).await;
    }
}

/// The control: with `--exit-on-expiry` the same expiry ends the process with 75, and the command ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_on_expiry_exits_75_after_its_session_expired() {
    let hosts = zklock_testkit::hosts::embedded().await;
    let dir = zklock_testkit::unique_path("cli-elect-expiry-exit");
    let (_tmp, log) = temp_log();
    let mut elect = start_elect(&hosts, &dir, &log, &["--exit-on-expiry"]);
    wait_for_log(&log, "the first term", |lines| started(lines) == 1).await;
    expire_by_pause(&elect, &hosts, &dir).await;
    let status = eventually("zklock elect to exit", elect.wait()).await.unwrap();
    assert_eq!(
        status.code(),
        Some(exit::LOST),
        "zklock said: {}",
        stderr_of(&log)
    );
    assert_eq!(started(&read_log(&log)), 1, "the command ran once");
}

/// `zklock serve --data-dir D`, listening on `listen`.
async fn serve(data: &Path, listen: &str) -> Serve {
    Serve::start(&[
        "serve",
        "-q",
        "--listen",
        listen,
        "--data-dir",
        data.to_str().unwrap(),
    ])
    .await
}

/// The server goes away for longer than the session timeout and comes back on the same data directory: the
/// command is stopped while the server is away, and runs again, in a new term, once zklock leads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_carries_on_against_a_restarted_serve() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), "127.0.0.1:0").await;
    let (hosts, listen) = (server.addr.to_string(), server.addr.to_string());
    let dir = zklock_testkit::unique_path("cli-elect-restart");
    let (_tmp, log) = temp_log();
    let elect = start_elect(&hosts, &dir, &log, &[]);
    wait_for_log(&log, "the first term", |lines| started(lines) == 1).await;

    let first = read_log(&log)
        .iter()
        .find(|l| l.what == "start")
        .map(|l| l.shell)
        .expect("the first term's command");
    let (code, said) = server.stop().await;
    assert_eq!(code, Some(0), "serve stopped cleanly: {said}");
    // The command is stopped while the server is away: suspended (SIGSTOP, the default `--on-suspend stop`), then
    // killed once the session is known lost.
    await_process_state(first as i32, "the command to be stopped", |s| {
        matches!(s, Some('T') | Some('Z') | None)
    })
    .await;
    // The fault itself: the server stays away past the session timeout.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let server = serve(data.path(), &listen).await;

    let lines = wait_for_log(&log, "the second term", |lines| started(lines) == 2).await;
    assert_second_term(&lines, &stderr_of(&log));
    stop_elect(elect, &hosts, &dir, &log).await;
    let (code, said) = server.stop().await;
    assert_eq!(code, Some(0), "serve stopped cleanly: {said}");
}

/// The control: with `--exit-on-expiry` the server going away ends the process with 75.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_on_expiry_exits_75_when_serve_goes_away() {
    let data = tempfile::tempdir().unwrap();
    let server = serve(data.path(), "127.0.0.1:0").await;
    let hosts = server.addr.to_string();
    let dir = zklock_testkit::unique_path("cli-elect-restart-exit");
    let (_tmp, log) = temp_log();
    let mut elect = start_elect(&hosts, &dir, &log, &["--exit-on-expiry"]);
    wait_for_log(&log, "the first term", |lines| started(lines) == 1).await;
    server.stop().await;
    let status = eventually("zklock elect to exit", elect.wait()).await.unwrap();
    assert_eq!(
        status.code(),
        Some(exit::LOST),
        "zklock said: {}",
        stderr_of(&log)
    );
    assert_eq!(started(&read_log(&log)), 1, "the command ran once");
}
