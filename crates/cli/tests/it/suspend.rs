//! `run --on-suspend stop`: an outage shorter than the session stops the command (SIGSTOP) and continues it
//! (SIGCONT) once the session and our node are confirmed, instead of ending it; the same outage under the default
//! (`kill`) ends it with exit 4 (the control). The outage: a proxy in front of the server that plays dead (its
//! connections cut, new ones never answered) until the test ends it.

use std::time::Duration;

use zklock_testkit::{unique_path, Proxy};

use crate::support::*;

/// The state letter of process `pid` (`/proc/PID/stat`: R, S, T for stopped…).
fn state(pid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name in parentheses (which may hold spaces): " S ...".
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
        .unwrap_or('?')
}

/// Polls (no event tells a process's stop to a non-parent) until process `pid` is in a state `ok` accepts.
async fn await_state(pid: i32, what: &str, ok: impl Fn(char) -> bool) {
    eventually(what, async {
        while !ok(state(pid)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// A `run` through a proxy to `hosts` whose command prints its pid and then waits for a line on its standard input
/// and exits 7 with it; the proxy plays dead while the command waits. Returns the run, the proxy and the command's
/// pid.
async fn run_through_an_outage(
    hosts: &str,
    on_suspend: &str,
    session_timeout: &str,
) -> (Running, Proxy, i32) {
    through_an_outage("run", hosts, on_suspend, session_timeout).await
}

/// [`run_through_an_outage`] for `subcommand` (`run` or `elect`, which take the same arguments here).
async fn through_an_outage(
    subcommand: &str,
    hosts: &str,
    on_suspend: &str,
    session_timeout: &str,
) -> (Running, Proxy, i32) {
    let proxy = Proxy::start(hosts.split(',').next().unwrap().parse().unwrap())
        .await
        .unwrap();
    let path = unique_path("cli-run-suspend");
    let script = "echo $$; read line; echo \"got $line\"; exit 7";
    let connect = proxy.connect_string();
    let mut run = Running::zklock(&[
        subcommand,
        "--connect",
        &connect,
        "--session-timeout",
        session_timeout,
        "--on-suspend",
        on_suspend,
        &path,
        "--",
        "sh",
        "-c",
        script,
    ]);
    let pid: i32 = run.line("the command's pid").await.parse().unwrap();
    proxy.set_blackhole(true);
    proxy.cut_all();
    (run, proxy, pid)
}

async fn an_outage_shorter_than_the_session_stops_and_continues_the_command(hosts: &str) {
    outage_stops_and_continues("run", hosts).await;
}

async fn outage_stops_and_continues(subcommand: &str, hosts: &str) {
    let (mut run, proxy, pid) = through_an_outage(subcommand, hosts, "stop", "10s").await;
    // Stopped before the session could expire (the watchdog's SIGSTOP, about 4.5 s in with a 10 s session)...
    await_state(pid, "the command to be stopped", |s| s == 'T').await;
    // ...and continued once the server answers again and a heartbeat finds our session and node.
    proxy.set_blackhole(false);
    await_state(pid, "the command to be continued", |s| s != 'T').await;
    run.send("after").await;
    assert_eq!(run.line("the command's answer").await, "got after");
    let (code, stderr) = run.finish().await;
    assert_eq!(
        code,
        Some(7),
        "the command's own status: it was never ended\n{stderr}"
    );
    // Said by the watchdog, which stops at the end of the session's confirmed validity (zklock says so too when the
    // outage outlasts the validity).
    assert!(stderr.contains("stopping the command (SIGSTOP)"), "{stderr}");
    assert!(stderr.contains("continuing the command (SIGCONT)"), "{stderr}");
    assert!(!stderr.contains("lost"), "{stderr}");
}

/// The control: the same outage with the default `--on-suspend kill` ends the command, and `run` exits 4.
async fn the_same_outage_ends_the_command_by_default(hosts: &str) {
    let (run, proxy, pid) = run_through_an_outage(hosts, "kill", "10s").await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(4), "{stderr}");
    exited(pid).await;
    proxy.set_blackhole(false);
}

/// An outage longer than the session: stopped, never continued, and killed once the session is known lost (exit 4).
async fn an_outage_longer_than_the_session_kills_the_stopped_command(hosts: &str) {
    let (run, _proxy, pid) = run_through_an_outage(hosts, "stop", "4s").await;
    await_state(pid, "the command to be stopped", |s| s == 'T').await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(4), "{stderr}");
    exited(pid).await;
    assert!(
        !stderr.contains("continuing the command"),
        "never continued: {stderr}"
    );
}

/// `elect --on-suspend stop`: the leader's command is stopped and continued in the same term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_an_outage_shorter_than_the_session_stops_and_continues_the_leaders_command() {
    let hosts = zklock_testkit::hosts::embedded().await;
    outage_stops_and_continues("elect", &hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_an_outage_longer_than_the_session_kills_the_stopped_command() {
    let hosts = zklock_testkit::hosts::embedded().await;
    an_outage_longer_than_the_session_kills_the_stopped_command(&hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_zookeeper_an_outage_shorter_than_the_session_stops_and_continues_the_command() {
    an_outage_shorter_than_the_session_stops_and_continues_the_command(&zookeeper().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_an_outage_shorter_than_the_session_stops_and_continues_the_command() {
    let hosts = zklock_testkit::hosts::embedded().await;
    an_outage_shorter_than_the_session_stops_and_continues_the_command(&hosts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_the_same_outage_ends_the_command_by_default() {
    let hosts = zklock_testkit::hosts::embedded().await;
    the_same_outage_ends_the_command_by_default(&hosts).await;
}
