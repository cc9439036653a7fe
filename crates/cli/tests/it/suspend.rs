//! `run --on-suspend stop` (the default): an outage shorter than the session stops the command (SIGSTOP) and
//! continues it (SIGCONT) once the session and our node are confirmed, instead of ending it; the same outage under
//! `--on-suspend kill` ends it with exit 75 (the control). The outages: a proxy in front of the server that plays dead
//! (its connections cut, new ones never answered) until the test ends it; and real ones — the embedded server and a
//! standalone ZooKeeper killed and restarted on their data, an ensemble's leader killed.

use std::time::Duration;

use zklock_testkit::{unique_path, Proxy};

use crate::support::*;

/// A `run` through a proxy to `hosts` whose command prints its pid and then waits for a line on its standard input
/// and exits 7 with it; the proxy plays dead while the command waits. Returns the run, the proxy and the command's
/// pid.
async fn run_through_an_outage(
    hosts: &str,
    on_suspend: &str,
    session_timeout: &str,
) -> (Running, Proxy, i32) {
    through_an_outage("run", hosts, on_suspend, session_timeout, &[]).await
}

/// [`run_through_an_outage`] for `subcommand` (`run` or `elect`, which take the same arguments here).
async fn through_an_outage(
    subcommand: &str,
    hosts: &str,
    on_suspend: &str,
    session_timeout: &str,
    more: &[&str],
) -> (Running, Proxy, i32) {
    let proxy = Proxy::start(hosts.split(',').next().unwrap().parse().unwrap())
        .await
        .unwrap();
    let path = unique_path("cli-run-suspend");
    let script = "echo $$; read line; echo \"got $line\"; exit 7";
    let connect = proxy.connect_string();
    let mut args = vec![
        subcommand,
        "--connect",
        &connect,
        "--session-timeout",
        session_timeout,
        "--on-suspend",
        on_suspend,
    ];
    args.extend_from_slice(more);
    args.extend([path.as_str(), "--", "sh", "-c", script]);
    let mut run = Running::zklock(&args);
    let pid: i32 = run.line("the command's pid").await.parse().unwrap();
    proxy.set_blackhole(true);
    proxy.cut_all();
    (run, proxy, pid)
}

async fn an_outage_shorter_than_the_session_stops_and_continues_the_command(hosts: &str) {
    outage_stops_and_continues("run", hosts).await;
}

async fn outage_stops_and_continues(subcommand: &str, hosts: &str) {
    let (mut run, proxy, pid) = through_an_outage(subcommand, hosts, "stop", "10s", &[]).await;
    // Stopped before the session could expire (the watchdog's SIGSTOP, about 4.5 s in with a 10 s session)...
    await_process_state(pid, "the command to be stopped", |s| s == Some('T')).await;
    // ...and continued once the server answers again and a heartbeat finds our session and node.
    proxy.set_blackhole(false);
    await_process_state(pid, "the command to be continued", |s| s != Some('T')).await;
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
    assert!(!stderr.contains("zklock: lost"), "{stderr}");
}

/// The control: the same outage with `--on-suspend kill` ends the command, and `run` exits 75.
async fn the_same_outage_ends_the_command_with_on_suspend_kill(hosts: &str) {
    let (run, proxy, pid) = run_through_an_outage(hosts, "kill", "10s").await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(exit::LOST), "{stderr}");
    exited(pid).await;
    proxy.set_blackhole(false);
}

/// An outage longer than the session: stopped, never continued, and killed once the session is known lost (exit 75).
async fn an_outage_longer_than_the_session_kills_the_stopped_command(hosts: &str) {
    let (run, _proxy, pid) = run_through_an_outage(hosts, "stop", "4s").await;
    await_process_state(pid, "the command to be stopped", |s| s == Some('T')).await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(exit::LOST), "{stderr}");
    exited(pid).await;
    assert!(
        !stderr.contains("continuing the command"),
        "never continued: {stderr}"
    );
}

/// `--log-format json` under an outage longer than the session: every line of stderr is a JSON object — the
/// watchdog's (its own process), zklock's own lines and the library's log events — saying what the text says (the
/// stop, the loss; exit 75).
async fn json_lines_through_an_outage(subcommand: &str, hosts: &str) {
    let more = ["--log-format", "json", "--exit-on-expiry"];
    let more = if subcommand == "run" {
        &more[..2]
    } else {
        &more[..]
    };
    let (run, _proxy, pid) = through_an_outage(subcommand, hosts, "stop", "4s", more).await;
    await_process_state(pid, "the command to be stopped", |s| s == Some('T')).await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(exit::LOST), "{stderr}");
    let objects = json_lines(&stderr);
    let said = |level: &str, words: &str| {
        objects
            .iter()
            .any(|o| o["level"] == level && o["message"].as_str().is_some_and(|m| m.contains(words)))
    };
    assert!(
        said(
            "WARN",
            "watchdog: the ZooKeeper session was not confirmed in time"
        ),
        "{stderr}"
    );
    assert!(
        said("WARN", "lock node suspended"),
        "the library's event: {stderr}"
    );
    assert!(said("ERROR", "lost "), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_run_log_format_json_writes_every_line_as_json() {
    json_lines_through_an_outage("run", &zklock_testkit::hosts::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_embedded_elect_log_format_json_writes_every_line_as_json() {
    json_lines_through_an_outage("elect", &zklock_testkit::hosts::embedded().await).await;
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
async fn on_embedded_the_same_outage_ends_the_command_with_on_suspend_kill() {
    let hosts = zklock_testkit::hosts::embedded().await;
    the_same_outage_ends_the_command_with_on_suspend_kill(&hosts).await;
}

/// A command that ticks for `secs` seconds (one line every 100 ms: `tick N NANOS`), then exits 7.
fn ticking(secs: u32) -> String {
    format!(
        "echo started; i=0; while [ $i -lt {} ]; do echo \"tick $i $(date +%s%N)\"; i=$((i+1)); sleep 0.1; done; exit 7",
        secs * 10
    )
}

/// `zklock run` (defaults but the session timeout: `--on-suspend stop`) of a [`ticking`] command on `hosts`,
/// started.
async fn run_ticking(hosts: &str, secs: u32, session_timeout: &str) -> Running {
    let path = unique_path("cli-run-restart");
    let mut run = Running::zklock(&[
        "run",
        "--connect",
        hosts,
        "--session-timeout",
        session_timeout,
        &path,
        "--",
        "sh",
        "-c",
        &ticking(secs),
    ]);
    assert_eq!(run.line("the command to start").await, "started");
    run
}

/// Reads the ticking command's output to its end; its exit and stderr, the ticks seen, and the longest silence
/// between two ticks (a pause shows as one).
async fn finish_ticking(mut run: Running) -> (Option<i32>, String, usize, Duration) {
    let (mut ticks, mut last, mut longest) = (0, None::<u128>, 0u128);
    while let Some(line) = run.next_line("the next tick").await {
        let at: u128 = line.rsplit(' ').next().unwrap().parse().unwrap();
        longest = longest.max(last.map_or(0, |last| at - last));
        last = Some(at);
        ticks += 1;
    }
    let (code, stderr) = run.finish().await;
    (code, stderr, ticks, Duration::from_nanos(longest as u64))
}

/// A restart of the server whose session and our lock node survive ends no `run` job: the command ticks to its end
/// and `run` exits with its status (7). `outage`: how long the server is away (2.5 s: the command does not even
/// stop; 6 s: it is stopped, then goes on — a silence in its ticks, and the watchdog's word for both).
async fn a_restart_of_the_embedded_server_ends_no_run_job(outage: Duration, stopped: bool) {
    let data = tempfile::tempdir().unwrap();
    let serve = crate::logs::Serve::on_data_dir(data.path()).await;
    let (hosts, listen) = (serve.addr.to_string(), serve.addr.to_string());
    let run = run_ticking(&hosts, 15, "10s").await;
    serve.stop_with(nix::sys::signal::Signal::SIGKILL).await;
    tokio::time::sleep(outage).await;
    let data_dir = data.path().to_str().unwrap();
    let serve =
        crate::logs::Serve::start(&["serve", "-q", "--listen", &listen, "--data-dir", data_dir]).await;
    let (code, stderr, ticks, silence) = finish_ticking(run).await;
    eprintln!("{outage:?} outage: {ticks} ticks, longest silence {silence:?}");
    assert_eq!(code, Some(7), "the command's own status: it went on\n{stderr}");
    assert_eq!(ticks, 150, "every tick: {stderr}");
    assert!(!stderr.contains("zklock: lost"), "{stderr}");
    if stopped {
        assert!(stderr.contains("stopping the command (SIGSTOP)"), "{stderr}");
        assert!(stderr.contains("continuing the command (SIGCONT)"), "{stderr}");
        assert!(
            silence >= Duration::from_secs(1),
            "the pause shows in the ticks: {silence:?}"
        );
    }
    serve.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_5_s_restart_of_the_embedded_server_ends_no_run_job() {
    a_restart_of_the_embedded_server_ends_no_run_job(Duration::from_millis(2500), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_6_s_restart_of_the_embedded_server_pauses_the_run_job_and_it_goes_on() {
    a_restart_of_the_embedded_server_ends_no_run_job(Duration::from_secs(6), true).await;
}

/// A standalone ZooKeeper killed and started again on its data 2.5 s later: the job goes on. (A 20 s session: the
/// outage is the 2.5 s plus the JVM's start, which takes seconds more on a loaded 2-core machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_5_s_restart_of_zookeeper_ends_no_run_job() {
    let mut zk = tokio::task::spawn_blocking(|| zklock_testkit::ZooKeeper::standalone().unwrap())
        .await
        .unwrap();
    let run = run_ticking(&zk.connect_string(), 20, "20s").await;
    let zk = tokio::task::spawn_blocking(move || {
        zk.kill(0);
        std::thread::sleep(Duration::from_millis(2500));
        zk.restart(0).expect("ZooKeeper serves again");
        zk
    })
    .await
    .unwrap();
    let (code, stderr, ticks, silence) = finish_ticking(run).await;
    eprintln!("ZooKeeper restart: {ticks} ticks, longest silence {silence:?}");
    assert_eq!(code, Some(7), "the command's own status: it went on\n{stderr}");
    assert_eq!(ticks, 200, "every tick: {stderr}");
    assert!(!stderr.contains("zklock: lost"), "{stderr}");
    drop(zk);
}

/// An ensemble's leader killed: the members elect another, our session lives on (through another member), and the
/// job goes on. (A 20 s session, which outlasts the election on a loaded machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_leader_kill_ends_no_run_job() {
    let mut zk = tokio::task::spawn_blocking(|| zklock_testkit::ZooKeeper::ensemble(3).unwrap())
        .await
        .unwrap();
    let run = run_ticking(&zk.connect_string(), 20, "20s").await;
    let zk = tokio::task::spawn_blocking(move || {
        let leader = zk.wait_for_leader(Duration::from_secs(60)).expect("a leader");
        zk.kill(leader);
        zk.wait_for_leader(Duration::from_secs(60)).expect("a new leader");
        zk
    })
    .await
    .unwrap();
    let (code, stderr, ticks, silence) = finish_ticking(run).await;
    eprintln!("leader kill: {ticks} ticks, longest silence {silence:?}");
    assert_eq!(code, Some(7), "the command's own status: it went on\n{stderr}");
    assert_eq!(ticks, 200, "every tick: {stderr}");
    assert!(!stderr.contains("zklock: lost"), "{stderr}");
    drop(zk);
}
