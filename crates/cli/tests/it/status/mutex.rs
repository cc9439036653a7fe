//! `zklock status` of a lock (a `Mutex`'s directory): its holder and queue in order, `--json` with the holder's
//! fencing token, `--check`'s exit statuses, and data from other clients written out, never obeyed.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock::Mutex;
use zklock_testkit::unique_path;

use super::{check, json, lock, status, status_json};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_holder_and_queue_in_order() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status");
    let out = output(&["status", "--connect", &hosts, &path]).await;
    assert!(
        text(&out.stdout).contains("does not exist"),
        "{}",
        text(&out.stdout)
    );
    let (a, b) = (client(&hosts).await, client(&hosts).await);
    let guard = lock(&a, &path, "first holder").await.unwrap();
    let waiter = {
        let path = path.clone();
        tokio::spawn(async move { lock(&b, &path, "second in line").await.map(|_| ()) })
    };
    // Wait until the waiter is queued.
    await_children(&a, &path, 2).await;
    let out = output(&["status", "--connect", &hosts, &path]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("held by 1 of 2"), "{stdout}");
    // Three lines each: who and the data; since when, the token (holders only) and the session; the node.
    assert!(
        lines[1].contains("holder") && lines[1].contains("\"first holder\""),
        "{stdout}"
    );
    assert!(
        lines[2].contains(" UTC (") && lines[2].contains(" ago)") && lines[2].contains("token "),
        "{stdout}"
    );
    assert!(
        lines[2].contains(&format!("0x{:x}", a.session_id().0)),
        "{stdout}"
    );
    assert!(lines[3].trim_start().starts_with("node _c_"), "{stdout}");
    assert!(
        lines[4].contains("waiting") && lines[4].contains("second in line"),
        "{stdout}"
    );
    assert!(
        !lines[5].contains("token"),
        "a waiter has no fencing token yet: {stdout}"
    );
    assert!(lines.iter().all(|line| line.chars().count() <= 100), "{stdout}");
    guard.release().await.unwrap();
    waiter.await.unwrap().unwrap();
}

/// `--json` shows the holder's fencing token — the one `zklock run` gave its command — its session and data, and
/// the waiters in order; the human view shows the token too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_carries_the_holders_fencing_token() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status-json");
    let gone = status_json(&hosts, &path).await;
    assert_eq!(gone["path"], path.as_str());
    assert_eq!(gone["exists"], false, "{gone}");
    assert_eq!(gone["held"], false, "{gone}");
    assert_eq!(gone["holders"], serde_json::json!([]), "{gone}");

    // `zklock run` holds the lock; its command prints its fencing token and waits for its stdin to close.
    let mut run = zklock(&[
        "run",
        "--connect",
        &hosts,
        "--describe",
        "nightly backup",
        &path,
        "--",
        "sh",
        "-c",
        "echo \"$ZKLOCK_FENCING_TOKEN\"; cat >/dev/null",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(run.stdout.take().unwrap()).lines();
    let token: i64 = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("the command started")
        .unwrap()
        .expect("a token")
        .trim()
        .parse()
        .unwrap();

    let b = client(&hosts).await;
    let b_session = b.session_id().0;
    let waiter = {
        let path = path.clone();
        tokio::spawn(async move {
            lock(&b, &path, "second in line")
                .await
                .map(|guard| guard.fencing_token())
        })
    };
    await_children(&client(&hosts).await, &path, 2).await;

    let found = status_json(&hosts, &path).await;
    assert_eq!(found["path"], path.as_str(), "{found}");
    assert_eq!(found["exists"], true, "{found}");
    assert_eq!(found["recipe"], "lock", "{found}");
    assert_eq!(found["held"], true, "{found}");
    assert_eq!(found["counts"]["holders"], 1, "{found}");
    assert_eq!(found["counts"]["waiters"], 1, "{found}");
    let holder = &found["holders"][0];
    assert_eq!(holder["fencing_token"], token, "{found}");
    assert_eq!(holder["role"], "holder", "{found}");
    assert_eq!(holder["kind"], "lock", "{found}");
    assert!(
        holder["data"].as_str().unwrap().contains("nightly backup"),
        "{found}"
    );
    let session = holder["session_id"].as_str().unwrap();
    assert!(
        session.starts_with("0x") && i64::from_str_radix(&session[2..], 16).unwrap() != 0,
        "{found}"
    );
    assert!(holder["name"].as_str().unwrap().contains("-lock-"), "{found}");
    let waiting = &found["waiters"][0];
    assert_eq!(waiting["role"], "waiting", "{found}");
    assert_eq!(waiting["data"], "second in line", "{found}");
    assert_eq!(waiting["session_id"], format!("0x{b_session:x}"), "{found}");
    assert!(waiting["fencing_token"].as_i64().unwrap() > token, "{found}");

    let stdout = status(&hosts, &path).await;
    let holder_line = stdout.lines().nth(2).expect(&stdout);
    assert!(holder_line.contains(&format!("token {token} ")), "{stdout}");

    drop(run.stdin.take()); // the command's `read` ends
    let out = tokio::time::timeout(EVENTUALLY, run.wait_with_output())
        .await
        .expect("zklock run exits")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let next = waiter.await.unwrap().unwrap();
    assert_eq!(next, waiting["fencing_token"].as_i64().unwrap());
}

/// `--check`: 0 held, 1 free (or absent), 69 unreachable, 64 for an invalid path (with or without `--check`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_exits_0_held_1_free_69_unreachable_64_bad_path() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status-check");
    assert_eq!(check(&hosts, &path).await, Some(1), "absent: free");
    let out = output(&["status", "--connect", &hosts, &path]).await;
    assert_eq!(out.status.code(), Some(0), "without --check, free is success");

    let a = client(&hosts).await;
    let guard = Mutex::new(&a, &path).unwrap().lock().await.unwrap();
    assert_eq!(check(&hosts, &path).await, Some(0), "held");
    let out = output(&["status", "--connect", &hosts, "--check", "--json", &path]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["held"], true);
    guard.release().await.unwrap();
    assert_eq!(
        check(&hosts, &path).await,
        Some(1),
        "released: an idle directory is free"
    );

    for bad in ["no-slash", "/a//b", "/trailing/"] {
        let out = output(&["status", "--connect", &hosts, "--check", bad]).await;
        assert_eq!(
            out.status.code(),
            Some(exit::USAGE),
            "{bad}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("invalid path"),
            "{}",
            text(&out.stderr)
        );
        let out = output(&["status", "--connect", &hosts, bad]).await;
        assert_eq!(
            out.status.code(),
            Some(exit::USAGE),
            "{bad}: {}",
            text(&out.stderr)
        );
    }

    // A port nobody listens on: connection refused.
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let out = output(&[
        "status",
        "--connect",
        &refused.to_string(),
        "--session-timeout",
        "1",
        "--check",
        &path,
    ])
    .await;
    assert_eq!(
        out.status.code(),
        Some(exit::UNAVAILABLE),
        "stderr: {}",
        text(&out.stderr)
    );
}

/// Data written by other clients is shown, never obeyed: newlines and terminal escapes are written out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_from_other_clients_cannot_fake_lines_or_drive_the_terminal() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status-untrusted");
    let a = client(&hosts).await;
    let evil = "deploy\n  holder  9. [lock] \"fake\"\u{1b}[2J\u{1b}]0;owned\u{7}\r\u{202e}";
    let guard = lock(&a, &path, evil).await.unwrap();
    let stdout = status(&hosts, &path).await;
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\r') && !stdout.contains('\u{7}'),
        "{stdout:?}"
    );
    assert!(!stdout.contains('\u{202e}'), "{stdout:?}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains(". [")).count(),
        1,
        "{stdout}"
    );
    assert!(stdout.contains("\\n  holder  9."), "written out: {stdout}");
    guard.release().await.unwrap();
}
