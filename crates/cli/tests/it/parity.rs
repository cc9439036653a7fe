//! The command line's parity with the library: `run --shared` / `--write` (a read/write lock), `run --leases N` (a
//! semaphore), `elect --nonblock` / `--timeout`, and `elect --observe`. Real `zklock` processes against the shared
//! real ZooKeeper. The commands hold until the test writes a line to their standard input, and say when they start
//! on their standard output, so the test waits for events, not for time.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::mpsc;
use zklock_testkit::unique_path;

use crate::support::*;

/// A command that says it started (with its node) and holds until a line arrives on its standard input.
const HOLD: &str = r#"echo "started $ZKLOCK_NODE"; read x"#;

/// `zklock ARGS -- sh -c SCRIPT sh EXTRA...`, started, its output lines sent to `lines` as `(tag, line)`.
fn hold(
    tag: usize,
    args: &[&str],
    script: &str,
    extra: &[&str],
    lines: &mpsc::UnboundedSender<(usize, String)>,
) -> Running {
    let mut command = zklock(args);
    command.args(["--", "sh", "-c", script, "sh"]).args(extra);
    let mut held = Running::start(&mut command);
    held.forward_lines(tag, lines.clone());
    held
}

/// The next line (bounded).
async fn next_line(lines: &mut mpsc::UnboundedReceiver<(usize, String)>, what: &str) -> (usize, String) {
    tokio::time::timeout(EVENTUALLY, lines.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|| panic!("no more output while waiting for {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_runs_overlap_and_a_writer_waits_for_both() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-rw");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    // Each reader marks that it is done after its release; the writer checks that both are.
    let reader = format!(r#"{HOLD}; touch "$1/$2.done""#);
    let writer = r#"if [ -e "$1/r1.done" ] && [ -e "$1/r2.done" ]; then echo "after both"; else echo "too early"; exit 9; fi"#;
    let shared = ["run", "--connect", &hosts, "--shared", &path];
    let r1 = hold(1, &shared, &reader, &[dir, "r1"], &tx);
    let r2 = hold(2, &shared, &reader, &[dir, "r2"], &tx);
    // Both start while neither has been released: they hold the lock at the same time.
    let mut started = Vec::new();
    for _ in 0..2 {
        let (tag, line) = next_line(&mut lines, "both readers to start").await;
        assert!(
            line.starts_with(&format!("started {path}/_c_")) && line.contains("-__READ__"),
            "{line}"
        );
        started.push(tag);
    }
    started.sort();
    assert_eq!(started, [1, 2]);
    let w = hold(
        3,
        &["run", "--connect", &hosts, "--write", &path],
        writer,
        &[dir],
        &tx,
    );
    // The writer is queued behind both readers...
    let nodes = await_children(&admin, &path, 3).await;
    assert_eq!(
        nodes.iter().filter(|n| n.contains("-__WRIT__")).count(),
        1,
        "{nodes:?}"
    );
    // ... and stays so until both are done.
    assert_eq!(r1.end("go").await.0, Some(0));
    assert_eq!(r2.end("go").await.0, Some(0));
    let (tag, line) = next_line(&mut lines, "the writer's command").await;
    assert_eq!((tag, line.as_str()), (3, "after both"));
    let (status, stderr) = w.finish().await;
    assert_eq!(status, Some(0), "{stderr}");
    assert!(admin.list_children(&path).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_leases_let_exactly_two_of_three_run() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-leases");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    // Each command marks itself running and says how many are (itself included) when it starts.
    let script = r#"touch "$1/running.$$"; echo "started $(ls "$1" | grep -c '^running\.') $ZKLOCK_NODE"; read x; rm "$1/running.$$""#;
    let args = ["run", "--connect", &hosts, "--leases", "2", &path];
    let mut runs: Vec<Option<Running>> = (0..3)
        .map(|tag| Some(hold(tag, &args, script, &[dir], &tx)))
        .collect();
    let running = |line: &str| -> usize {
        let mut fields = line.split(' ');
        assert_eq!(fields.next(), Some("started"), "{line}");
        let count = fields.next().unwrap().parse().unwrap();
        let node = fields.next().unwrap();
        assert!(
            node.starts_with(&format!("{path}/leases/_c_")) && node.contains("-lease-"),
            "{line}"
        );
        count
    };
    // Two start without anybody being released: two at once.
    let (first, line) = next_line(&mut lines, "the first lease holder").await;
    assert!(running(&line) <= 2, "{line}");
    let (second, line) = next_line(&mut lines, "the second lease holder").await;
    assert!(running(&line) <= 2, "{line}");
    // The third holds the acquirers' gate and waits with its lease node for room.
    await_children(&admin, &format!("{path}/leases"), 3).await;
    assert!(
        lines.try_recv().is_err(),
        "a third command started while two held leases"
    );
    // One leaves: the third starts, alongside the one still running.
    let held = runs[first].take().unwrap();
    assert_eq!(held.end("go").await.0, Some(0));
    let (third, line) = next_line(&mut lines, "the third lease holder").await;
    assert!(![first, second].contains(&third));
    assert_eq!(running(&line), 2, "{line}");
    for tag in [second, third] {
        let held = runs[tag].take().unwrap();
        let (status, stderr) = held.end("go").await;
        assert_eq!(status, Some(0), "{stderr}");
    }
    assert!(admin
        .list_children(&format!("{path}/leases"))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_of_lock_are_not_mixed_on_one_path() {
    let hosts = zookeeper().await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    // `zklock run FLAGS PATH -- true`.
    let run_true = async |flags: &[&str], path: &str| {
        let mut args = vec!["run", "--connect", &hosts];
        args.extend(flags);
        args.extend([path, "--", "true"]);
        output(&args).await
    };
    let refused = async |flags: &[&str], path: &str, what: &str| {
        let out = run_true(flags, path).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{flags:?}: {stderr}");
        assert!(
            stderr.contains(&format!("in use by {what}")),
            "{flags:?}: {stderr}"
        );
    };
    // A mutex holds: neither side of a read/write lock nor a semaphore may join.
    let path = unique_path("cli-parity-mix");
    let mutex = hold(0, &["run", "--connect", &hosts, &path], HOLD, &[], &tx);
    next_line(&mut lines, "the mutex holder").await;
    refused(&["--shared", "--nonblock"], &path, "a mutex").await;
    refused(&["--write"], &path, "a mutex").await;
    refused(&["--leases", "2"], &path, "a mutex").await;
    assert_eq!(mutex.end("go").await.0, Some(0));
    // A reader holds: no mutex, no semaphore.
    let reader = hold(
        1,
        &["run", "--connect", &hosts, "--shared", &path],
        HOLD,
        &[],
        &tx,
    );
    next_line(&mut lines, "the reader").await;
    refused(&[], &path, "a read/write lock").await;
    // A writer is busy, and says why: readers hold it.
    let out = run_true(&["--write", "--nonblock"], &path).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("read-locked by 1 reader(s)"), "{stderr}");
    refused(&["--leases", "1"], &path, "a read/write lock").await;
    assert_eq!(reader.end("go").await.0, Some(0));
    // Free again: a plain run goes ahead.
    let out = run_true(&["--nonblock"], &path).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A semaphore's directory: no mutex, no read/write lock — also once idle, as long as it stays one.
    let path = unique_path("cli-parity-mix-sem");
    let lease = hold(
        2,
        &["run", "--connect", &hosts, "--leases", "3", &path],
        HOLD,
        &[],
        &tx,
    );
    next_line(&mut lines, "the lease holder").await;
    refused(&[], &path, "a semaphore").await;
    // Another number of leases than the holder's: refused, not one lease too many.
    let out = run_true(&["--leases", "4", "--nonblock"], &path).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::USAGE), "{stderr}");
    assert!(
        stderr.contains("semaphore of 3 lease(s)") && stderr.contains("not 4"),
        "{stderr}"
    );
    refused(&["--shared"], &path, "a semaphore").await;
    assert_eq!(lease.end("go").await.0, Some(0));
    refused(&["--write"], &path, "a semaphore").await;
    let out = run_true(&["--leases", "3"], &path).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The new guards stop the command when lost, as the mutex's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_read_lock_or_lease_stops_the_command() {
    let hosts = zookeeper().await;
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    for (tag, flags, what) in [
        (0, &["--shared"][..], "lost the read lock"),
        (1, &["--write"][..], "lost the write lock"),
        (2, &["--leases", "2"][..], "lost a lease"),
    ] {
        let path = unique_path("cli-parity-lost");
        let mut args = vec!["run", "--connect", &hosts, "--kill-after", "1"];
        args.extend(flags);
        args.push(&path);
        let held = hold(tag, &args, HOLD, &[], &tx);
        let (_, line) = next_line(&mut lines, "the command").await;
        let node = line.strip_prefix("started ").unwrap();
        admin.delete(node, None).await.unwrap();
        let (status, stderr) = held.finish().await;
        assert_eq!(status, Some(exit::LOST), "{flags:?}: {stderr}");
        assert!(stderr.contains(what), "{flags:?}: {stderr}");
    }
}

/// The watchdog guards the new kinds of guard too: with `zklock` paused (SIGSTOP) while its command holds a read lock
/// or a lease, the command is ended (`--on-suspend kill`) without `zklock`'s help (before ZooKeeper could expire the
/// session); resumed, `zklock` exits 75. (The default `stop` stops it instead: `pause.rs`, `suspend.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_reader_or_lease_holder_is_stopped_by_the_watchdog() {
    let hosts = zookeeper().await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    for (tag, flags) in [(0, &["--shared"][..]), (1, &["--leases", "2"][..])] {
        let path = unique_path("cli-parity-pause");
        let mut args = vec![
            "run",
            "--connect",
            &hosts,
            "--session-timeout",
            "4",
            "--kill-after",
            "1",
            "--on-suspend",
            "kill",
        ];
        args.extend(flags);
        args.push(&path);
        let held = hold(tag, &args, r#"echo "started $$"; read x"#, &[], &tx);
        let (_, line) = next_line(&mut lines, "the command").await;
        let command: i32 = line.strip_prefix("started ").unwrap().parse().unwrap();
        held.signal(Signal::SIGSTOP);
        exited(command).await;
        held.signal(Signal::SIGCONT);
        let (status, stderr) = held.finish().await;
        assert_eq!(status, Some(exit::LOST), "{flags:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_nonblock_is_busy_while_another_leads() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-elect-nb");
    let nonblock = async || {
        output(&[
            "elect",
            "--connect",
            &hosts,
            "--nonblock",
            &path,
            "--",
            "echo",
            "led",
        ])
        .await
    };
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    let leader = hold(0, &["elect", "--connect", &hosts, &path], HOLD, &[], &tx);
    next_line(&mut lines, "the leader's command").await;
    let out = nonblock().await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("another candidate leads") && stderr.contains("--nonblock"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "the command did not run");
    assert_eq!(
        admin.list_children(&path).await.unwrap().len(),
        1,
        "only the leader's node"
    );
    assert_eq!(leader.end("go").await.0, Some(0));
    // Nobody leads: --nonblock leads at once.
    let out = nonblock().await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "led\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_timeout_gives_up_and_withdraws() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-elect-timeout");
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    let leader = hold(0, &["elect", "--connect", &hosts, &path], HOLD, &[], &tx);
    let (_, line) = next_line(&mut lines, "the leader's command").await;
    let leader_node = line
        .strip_prefix("started ")
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let began = Instant::now();
    let mut candidate = Running::zklock(&[
        "elect",
        "--connect",
        &hosts,
        "--timeout",
        "1s",
        &path,
        "--",
        "echo",
        "led",
    ]);
    // It campaigns: its node queues behind the leader's...
    await_children(&admin, &path, 2).await;
    // ... and it gives up after the timeout.
    assert_eq!(
        candidate.next_line("the end of its output").await,
        None,
        "the command did not run"
    );
    let (status, stderr) = candidate.finish().await;
    assert_eq!(status, Some(1), "{stderr}");
    assert!(began.elapsed() >= Duration::from_secs(1));
    assert!(stderr.contains("timed out after 1s campaigning"), "{stderr}");
    assert_eq!(
        admin.list_children(&path).await.unwrap(),
        [leader_node],
        "no candidate node left behind"
    );
    assert_eq!(leader.end("go").await.0, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_observe_prints_each_leader() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-observe");
    let admin = client(&hosts).await;
    let (tx, mut lines) = mpsc::unbounded_channel();
    let (obs_tx, mut observed) = mpsc::unbounded_channel();
    let observer = |tag: usize, json: bool| {
        let mut args = vec!["elect", "--connect", &hosts, "--observe", &path];
        if json {
            args.push("--json");
        }
        let mut process = Running::zklock(&args);
        process.forward_lines(tag, obs_tx.clone());
        process
    };
    let json = observer(0, true);
    let human = observer(1, false);
    // Nobody leads yet: both say so first (in either order).
    let mut first = [
        next_line(&mut observed, "no leader").await,
        next_line(&mut observed, "no leader").await,
    ];
    first.sort();
    let nobody: serde_json::Value = serde_json::from_str(&first[0].1).unwrap();
    assert_eq!(first[0].0, 0);
    assert_eq!(
        (&nobody["path"], &nobody["leader"]),
        (&serde_json::json!(path), &serde_json::Value::Null)
    );
    assert!(
        nobody["observed_ms"].as_u64().is_some_and(|ms| ms > 0),
        "when it was seen: {nobody}"
    );
    assert_eq!(first[1], (1, "no leader".to_owned()));
    let a = hold(0, &["elect", "--connect", &hosts, &path], HOLD, &[], &tx);
    let (_, line) = next_line(&mut lines, "A's command").await;
    let a_node = line.strip_prefix("started ").unwrap().to_owned();
    let b = hold(1, &["elect", "--connect", &hosts, &path], HOLD, &[], &tx);
    await_children(&admin, &path, 2).await;
    // Each observer's next line is A, then (once A's zklock is stopped) B.
    let leader_of = |observed: &(usize, String)| -> Option<(String, i64, String)> {
        let (tag, line) = observed;
        if *tag == 0 {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["path"], path.as_str(), "{line}");
            let leader = value.get("leader").filter(|l| !l.is_null())?;
            assert!(leader["session_id"].as_str().unwrap().starts_with("0x"), "{line}");
            Some((
                leader["node"].as_str().unwrap().to_owned(),
                leader["fencing_token"].as_i64().unwrap(),
                leader["data"].as_str().unwrap().to_owned(),
            ))
        } else {
            if line == "no leader" {
                return None;
            }
            let fields: Vec<&str> = line.splitn(8, ' ').collect();
            assert_eq!(
                (fields[0], fields[2], fields[4], fields[6]),
                ("leader", "token", "session", "data"),
                "{line}"
            );
            Some((
                fields[1].to_owned(),
                fields[3].parse().unwrap(),
                fields[7].to_owned(),
            ))
        }
    };
    let mut a_tokens = Vec::new();
    for _ in 0..2 {
        let line = next_line(&mut observed, "A as leader").await;
        let (node, token, data) = leader_of(&line).unwrap_or_else(|| panic!("a leader: {line:?}"));
        assert_eq!(node, a_node, "{line:?}");
        assert!(data.contains(&format!("pid={} ", a.pid())), "{line:?}");
        a_tokens.push(token);
    }
    a.signal(Signal::SIGTERM);
    let (status, stderr) = a.finish().await;
    assert_eq!(
        status,
        Some(143),
        "its command died of the forwarded SIGTERM: {stderr}"
    );
    next_line(&mut lines, "B's command").await;
    let mut seen = [false, false];
    while seen != [true, true] {
        let line = next_line(&mut observed, "B as leader").await;
        // A moment without a leader may be reported in between.
        let Some((node, token, data)) = leader_of(&line) else {
            continue;
        };
        assert_ne!(node, a_node, "{line:?}");
        assert!(data.contains(&format!("pid={} ", b.pid())), "{line:?}");
        assert!(token > a_tokens[0], "{line:?}");
        assert!(!seen[line.0], "one line per change: {line:?}");
        seen[line.0] = true;
    }
    for process in [json, human] {
        process.signal(Signal::SIGINT);
        assert_eq!(process.finish().await.0, Some(0));
    }
    assert_eq!(b.end("go").await.0, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_exit_64() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-parity-usage");
    let flags: [&[&str]; 14] = [
        &["run", "--leases", "0"],
        &["run", "--leases", "two"],
        &["run", "--shared", "--leases", "2"],
        &["run", "--write", "--leases", "2"],
        &["run", "--shared", "--write"],
        &["run", "--shared", "--nonblock", "--timeout", "1"],
        &["elect", "--nonblock", "--timeout", "1"],
        &["elect", "--timeout", "inf"],
        &["elect", "--timeout", "-1s"],
        &["elect", "--json"],
        &["elect", "--observe"],
        &["elect", "--observe", "--nonblock"],
        &["elect", "--observe", "--timeout", "1"],
        &["elect", "--observe", "--describe", "x"],
    ];
    for flags in flags {
        let mut args = vec![flags[0], "--connect", &hosts];
        args.extend(&flags[1..]);
        // A command: with --observe it is the mistake; without, what would run were the flags accepted.
        args.extend([path.as_str(), "--", "true"]);
        let out = output(&args).await;
        assert_eq!(
            out.status.code(),
            Some(exit::USAGE),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    // An invalid path is a usage error too, with --observe as without.
    let out = output(&["elect", "--connect", &hosts, "--observe", "no-slash"]).await;
    assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
}
