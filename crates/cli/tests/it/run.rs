//! `zklock run`: environment, exit codes, exclusion, and the child never outliving the lock.

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock_testkit::unique_path;

use crate::support::*;

/// `zklock run PATH -- sh -c SCRIPT`, run to its end (bounded).
async fn run_sh(hosts: &str, path: &str, script: &str) -> std::process::Output {
    output(&["run", "--connect", hosts, path, "--", "sh", "-c", script]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_environment_and_exit_code() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-env");
    let script = "echo \"$ZKLOCK_PATH|$ZKLOCK_NODE|$ZKLOCK_FENCING_TOKEN\"; exit 7";
    let out = run_sh(&hosts, &path, script).await;
    assert_eq!(out.status.code(), Some(7), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let fields: Vec<&str> = stdout.trim().split('|').collect();
    assert_eq!(fields[0], path);
    assert!(
        fields[1].starts_with(&format!("{path}/_c_")) && fields[1].contains("-lock-"),
        "{stdout}"
    );
    assert!(fields[2].parse::<i64>().unwrap() > 0, "{stdout}");
    // The lock node is gone afterwards.
    let client = client(&hosts).await;
    assert_eq!(client.list_children(&path).await.unwrap(), Vec::<String>::new());
}

/// `-w 0` (and a timeout shorter than a round trip) takes a free lock, as `flock -w 0` does: the timeout bounds
/// the wait for the turn, not the create of our node (issue 33.2). For a mutex, `--shared`, `--leases` and `elect
/// --timeout 0`, on ZooKeeper and on the embedded server; a held lock still times out at once, leaving no node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_wait_takes_a_free_lock() {
    for hosts in [zookeeper().await, zklock_testkit::hosts::embedded().await] {
        let h = hosts.as_str();
        for (flags, path) in [
            (&["run", "-w", "0"][..], unique_path("cli-run-zero")),
            (&["run", "-w", "1ms"], unique_path("cli-run-zero-ms")),
            (
                &["run", "-w", "0", "--shared"],
                unique_path("cli-run-zero-shared"),
            ),
            (
                &["run", "-w", "0", "--leases", "2"],
                unique_path("cli-run-zero-leases"),
            ),
            (&["elect", "--timeout", "0"], unique_path("cli-elect-zero")),
        ] {
            let mut args = vec!["-q", "--connect", h];
            args.extend_from_slice(flags);
            args.extend([path.as_str(), "--", "echo", "ran"]);
            let out = output(&args).await;
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
            assert_eq!(text(&out.stdout), "ran\n", "{args:?}");
        }
        let path = unique_path("cli-run-zero-held");
        let (holder, guard) = lock_held(h, &path).await;
        let out = output(&["-q", "--connect", h, "run", "-w", "0", &path, "--", "echo", "ran"]).await;
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty());
        assert_eq!(
            holder.list_children(&path).await.unwrap().len(),
            1,
            "no node left behind"
        );
        guard.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_lock_exits_1_with_nonblock_and_timeout() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-busy");
    let (holder, guard) = lock_held(&hosts, &path).await;
    let out = output(&["run", "--connect", &hosts, "--nonblock", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("is locked"), "{stderr}");
    let out = output(&[
        "run",
        "--connect",
        &hosts,
        "--timeout",
        "0.3",
        &path,
        "--",
        "true",
    ])
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("timed out"), "{}", text(&out.stderr));
    assert_eq!(
        holder.list_children(&path).await.unwrap().len(),
        1,
        "no node left by the failed attempts"
    );
    guard.release().await.unwrap();
    let out = output(&["run", "--connect", &hosts, "--nonblock", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_command_exits_127_and_releases() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-missing");
    let out = output(&[
        "run",
        "--connect",
        &hosts,
        &path,
        "--",
        "/nonexistent/zklock-test-command",
    ])
    .await;
    assert_eq!(out.status.code(), Some(127));
    let client = client(&hosts).await;
    assert!(client.list_children(&path).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_runs_keep_a_counter_exact() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-counter");
    let (_dir, counter) = temp_file("counter", "0\n");
    let script = format!(
        "v=$(cat '{0}'); sleep 0.05; echo $((v + 1)) > '{0}'",
        counter.display()
    );
    let mut runs = Vec::new();
    for _ in 0..8 {
        runs.push(zklock(&["run", "--connect", &hosts, &path, "--", "sh", "-c", &script]).output());
    }
    for out in futures::future::join_all(runs).await {
        let out = out.unwrap();
        assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    }
    assert_eq!(std::fs::read_to_string(&counter).unwrap().trim(), "8");
}

/// Starts `zklock run` with a child that prints its pid and then sleeps; returns the process and the child's pid.
async fn run_sleeper(hosts: &str, path: &str, script: &str) -> (tokio::process::Child, i32) {
    let mut zklock = zklock(&[
        "run",
        "--connect",
        hosts,
        "--kill-after",
        "2",
        path,
        "--",
        "sh",
        "-c",
        script,
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(zklock.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("the child started")
        .unwrap()
        .unwrap();
    (zklock, line.trim().parse().unwrap())
}

fn alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_is_stopped_when_the_lock_is_lost() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-lost");
    let (zklock, child) = run_sleeper(&hosts, &path, "echo $$; exec sleep 120").await;
    assert!(alive(child));
    // Somebody deletes our lock node: the lock is lost, the child must be stopped.
    let admin = client(&hosts).await;
    let nodes = admin.list_children(&path).await.unwrap();
    assert_eq!(nodes.len(), 1);
    admin.delete(&format!("{path}/{}", nodes[0]), None).await.unwrap();
    let out = tokio::time::timeout(EVENTUALLY, zklock.wait_with_output())
        .await
        .expect("zklock exits")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(exit::LOST),
        "stderr: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("lost the lock"),
        "{}",
        text(&out.stderr)
    );
    assert!(!alive(child), "the command was stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_dies_with_zklock_even_on_kill_9() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-kill9");
    // The command forks a grandchild (the backgrounded sleep) and prints its pid.
    let (mut zklock, grandchild) = run_sleeper(&hosts, &path, "sleep 120 & echo $!; wait").await;
    assert!(alive(grandchild));
    zklock.start_kill().unwrap(); // SIGKILL
    zklock.wait().await.unwrap();
    // The shell dies of its parent-death signal; its background sleep is killed by the watchdog.
    exited(grandchild).await;
    // Its lock goes with the session: another run gets it (within the session timeout).
    let out = output(&["run", "--connect", &hosts, "--timeout", "30", &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_left_behind_by_the_command_are_killed_before_release() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-run-leftover");
    // The shell exits at once, leaving a background sleep in the command's process group.
    let script = "sleep 120 & echo $!";
    let out = run_sh(&hosts, &path, script).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let leftover: i32 = text(&out.stdout).trim().parse().unwrap();
    exited(leftover).await;
}

/// A `zklock run` inside the command of a `zklock run` on the same path would wait for ever for its own parent: it
/// is refused at once (exit 64, naming ZKLOCK_PATH), before it connects (issue 33.9). With `-n` it is let through and
/// finds the lock busy (exit 1); on another path it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_run_on_the_same_path_is_refused() {
    let hosts = zklock_testkit::hosts::embedded().await;
    let (path, other) = (unique_path("cli-run-nested"), unique_path("cli-run-nested-other"));
    let me = env!("CARGO_BIN_EXE_zklock");
    let inner = |flags: &str, on: &str| format!("{me} run -q {flags} --connect {hosts} {on} -- echo inner");
    for (script, status, says) in [
        (inner("", &path), exit::USAGE, "ZKLOCK_PATH"),
        (inner("-n", &path), 1, ""),
        (inner("", &other), 0, ""),
        // An elect on the path of the run around it waits for it as much.
        (
            format!("{me} elect -q --connect {hosts} {path} -- echo inner"),
            exit::USAGE,
            "ZKLOCK_PATH",
        ),
    ] {
        let out = output(&["run", "--connect", &hosts, &path, "--", "sh", "-c", &script]).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{script}: {stderr}");
        assert!(stderr.contains(says), "{script}: {stderr}");
        assert_eq!(
            text(&out.stdout),
            if status == 0 { "inner\n" } else { "" },
            "{script}"
        );
    }
}

/// The server gone while `run --on-suspend kill` holds the lock: the command is ended (exit 75), and what zklock says
/// names the outage — the connection to the server and for how long — and how long an outage the settings
/// tolerate, instead of guessing at a paused or starved zklock (issue 33.3). (The default, `stop`, is
/// `suspend.rs`'s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_outage_is_named_as_the_cause() {
    let data = tempfile::tempdir().unwrap();
    let serve = crate::logs::Serve::on_data_dir(data.path()).await;
    let hosts = serve.addr.to_string();
    let path = unique_path("cli-run-outage");
    let script = "echo started; exec sleep 60";
    let mut run = Running::zklock(&[
        "run",
        "--connect",
        &hosts,
        "--on-suspend",
        "kill",
        &path,
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(run.line("the command to start").await, "started");
    serve.stop_with(nix::sys::signal::Signal::SIGKILL).await;
    let (code, stderr) = run.finish().await;
    assert_eq!(code, Some(exit::LOST), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the connection to ZooKeeper at {hosts} has been down for"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("an outage of about 2.5s stops the command"),
        "{stderr}"
    );
    assert!(!stderr.contains("paused or starved"), "{stderr}");
}

/// `--connect-timeout`: a `run` started while no server answers keeps trying, and takes the lock once the server
/// is up (issue 33.16); `--connect-timeout 0` fails at once (exit 69), as every command did before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_a_server_that_comes_up() {
    let addr = format!("127.0.0.1:{}", zklock_testkit::ports::free_port().unwrap());
    let path = unique_path("cli-run-connect-timeout");
    let out = output(&["run", "-c", &addr, "--connect-timeout", "0", &path, "--", "true"]).await;
    assert_eq!(
        out.status.code(),
        Some(exit::UNAVAILABLE),
        "{}",
        text(&out.stderr)
    );
    let mut run = zklock(&[
        "-v",
        "run",
        "-c",
        &addr,
        "--connect-timeout",
        "60",
        &path,
        "--",
        "echo",
        "ran",
    ])
    .env_remove("ZKLOCK_LOG")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Started once the run has been refused and is trying again: the log says so.
    let mut stderr = BufReader::new(run.stderr.take().unwrap()).lines();
    eventually("the run to try again", async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("trying again") {
                return;
            }
        }
        panic!("the run ended without trying again");
    })
    .await;
    let serve = crate::logs::Serve::start(&["serve", "--listen", &addr]).await;
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let out = eventually("the run to end", run.wait_with_output())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "ran\n");
    serve.stop().await;
}

/// A session timeout the server clamps is said, with what it became (issue 33.9); one it grants is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clamped_session_timeout_is_reported() {
    for hosts in [zookeeper().await, zklock_testkit::hosts::embedded().await] {
        let path = unique_path("cli-run-clamped");
        let out = output(&[
            "run",
            "-c",
            &hosts,
            "--session-timeout",
            "100",
            &path,
            "--",
            "true",
        ])
        .await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains("set the session timeout to 40.0s (asked 100.0s"),
            "{stderr}"
        );
        let out = output(&[
            "run",
            "-c",
            &hosts,
            "--session-timeout",
            "10",
            &path,
            "--",
            "true",
        ])
        .await;
        assert!(
            !text(&out.stderr).contains("set the session timeout"),
            "{}",
            text(&out.stderr)
        );
    }
}

/// zklock's own failures cannot be taken for the command's status (issue 33.7): they are sysexits(3) codes, as
/// flock(1)'s are. A command exiting 2, 3, 4 or 5 — zklock's own usage error, unreachable ZooKeeper, lost lock and
/// busy data directory before — makes `run` exit with just that; ZooKeeper unreachable is 69 and a usage error (a
/// bad flag, clap's) 64, whatever the command would have done; `--help` and `--version` are still 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklocks_own_failures_are_not_the_commands_statuses() {
    let hosts = zklock_testkit::hosts::embedded().await;
    let path = unique_path("cli-run-own-status");
    for status in [2, 3, 4, 5] {
        let out = run_sh(&hosts, &path, &format!("exit {status}")).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "the command's own: {stderr}");
        assert!(!stderr.contains("zklock"), "zklock said nothing: {stderr}");
    }
    let closed = format!("127.0.0.1:{}", zklock_testkit::ports::free_port().unwrap());
    let unreachable = [
        "run",
        "-c",
        &closed,
        "--connect-timeout",
        "0",
        &path,
        "--",
        "sh",
        "-c",
        "exit 3",
    ];
    let out = output(&unreachable).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
    let bad_flag = [
        "run",
        "-c",
        &hosts,
        "--no-such-flag",
        &path,
        "--",
        "sh",
        "-c",
        "exit 3",
    ];
    let out = output(&bad_flag).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::USAGE), "{stderr}");
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
    for args in [&["run", "--help"][..], &["--version"], &["run", "--version"]] {
        let out = output(args).await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
}
