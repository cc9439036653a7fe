//! `zklock status`: holder and queue in order; `--json`, `--check`, each recipe's labels.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock::Mutex;
use zklock_testkit::unique_path;
use zookeeper_client::Client;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_every_recipe() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);

    // Read/write lock: two readers share, a writer waits.
    let rw = unique_path("cli-status-rw");
    let r1 = zklock::RwLock::new(&a, &rw).unwrap().read().await.unwrap();
    let r2 = zklock::RwLock::new(&b, &rw).unwrap().read().await.unwrap();
    let stdout = status(&hosts, &rw).await;
    assert!(
        stdout.contains("held by 2 of 2") && stdout.contains("[read]"),
        "{stdout}"
    );
    assert_eq!(entries(&stdout, "reader "), 2, "{stdout}");

    // Election: the leader leads.
    let election = unique_path("cli-status-election");
    let leader = zklock::LeaderElection::new(&a, &election)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let stdout = status(&hosts, &election).await;
    assert!(
        stdout.contains("led by 1 of 1") && stdout.contains("[election]"),
        "{stdout}"
    );

    // Semaphore: two leases held.
    let sem = unique_path("cli-status-semaphore");
    let l1 = zklock::Semaphore::new(&a, &sem, 3)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let l2 = zklock::Semaphore::new(&b, &sem, 3)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let stdout = status(&hosts, &sem).await;
    assert!(stdout.contains("semaphore with 2 lease(s) held"), "{stdout}");
    assert_eq!(entries(&stdout, "lease holder "), 2, "{stdout}");

    // Queue: three items.
    let queue_path = unique_path("cli-status-queue");
    let queue = zklock::Queue::new(&a, &queue_path).unwrap();
    for item in [b"1", b"2", b"3"] {
        queue.put(item).await.unwrap();
    }
    let stdout = status(&hosts, &queue_path).await;
    assert!(stdout.contains("queue with 3 item(s)"), "{stdout}");

    // Barrier: set, then removed.
    let barrier_path = unique_path("cli-status-barrier");
    let barrier = zklock::Barrier::new(&a, &barrier_path).unwrap();
    barrier.set().await.unwrap();
    let stdout = status(&hosts, &barrier_path).await;
    assert!(stdout.contains("exists with no contenders"), "{stdout}");
    barrier.remove().await.unwrap();
    let stdout = status(&hosts, &barrier_path).await;
    assert!(stdout.contains("does not exist"), "{stdout}");

    for guard in [r1, r2, leader, l1, l2] {
        guard.release().await.unwrap();
    }
}

/// An acquirer waiting for room keeps a lease node while it waits (Curator's layout): it is shown as waiting,
/// not counted as a holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_acquirer_waiting_for_room_is_not_a_holder() {
    let hosts = zookeeper().await;
    let (a, b, observer) = (client(&hosts).await, client(&hosts).await, client(&hosts).await);
    let sem = unique_path("cli-status-semaphore-wait");
    let held = lease(&a, &sem, "holder").await.unwrap();
    let b_session = b.session_id().0;
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            lease(&b, &sem, "waits for room")
                .await
                .map(|lease| lease.session_id())
        })
    };
    // The waiter holds the gate and has created its lease node: two lease nodes, one lease held.
    let leases = format!("{sem}/leases");
    await_children(&observer, &leases, 2).await;
    let stdout = status(&hosts, &sem).await;
    assert!(
        stdout.contains("semaphore with 1 lease(s) held, 1 acquirer(s) queued"),
        "{stdout}"
    );
    let holder_line = stdout.lines().find(|l| l.contains("holder ")).expect(&stdout);
    let waiting_line = stdout.lines().find(|l| l.contains("waiting")).expect(&stdout);
    assert!(holder_line.ends_with("\"holder\""), "{stdout}");
    assert!(waiting_line.ends_with("\"waits for room\""), "{stdout}");
    held.release().await.unwrap();
    let session = waiter.await.unwrap().unwrap();
    assert_eq!(session, b_session);
}

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

/// `--check`: 0 held, 1 free (or absent), 3 unreachable, 2 for an invalid path (with or without `--check`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_exits_0_held_1_free_3_unreachable_2_bad_path() {
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
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("invalid path"),
            "{}",
            text(&out.stderr)
        );
        let out = output(&["status", "--connect", &hosts, bad]).await;
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out.stderr));
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
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
}

/// An election's nodes are a leader and candidates, not holders and waiters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_shows_leader_and_candidates() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);
    let election = unique_path("cli-status-labels");
    let leader = campaign(&a, &election, "leads").await.unwrap();
    let candidate = {
        let election = election.clone();
        tokio::spawn(async move { campaign(&b, &election, "stands by").await.map(|_| ()) })
    };
    await_children(&a, &election, 2).await;

    let stdout = status(&hosts, &election).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("led by 1 of 2"), "{stdout}");
    assert!(
        lines[1].trim_start().starts_with("leader ") && lines[1].ends_with("\"leads\""),
        "{stdout}"
    );
    assert!(
        lines[4].trim_start().starts_with("candidate ") && lines[4].ends_with("\"stands by\""),
        "{stdout}"
    );
    assert!(!stdout.contains("holder"), "{stdout}");

    let found = status_json(&hosts, &election).await;
    assert_eq!(found["recipe"], "election", "{found}");
    assert_eq!(found["holders"][0]["role"], "leader", "{found}");
    assert_eq!(found["waiters"][0]["role"], "candidate", "{found}");
    assert_eq!(
        found["holders"][0]["fencing_token"],
        leader.fencing_token(),
        "{found}"
    );

    leader.release().await.unwrap();
    candidate.await.unwrap().unwrap();
}

/// A group's members in the order they joined, with their data; a two-phase commit transaction's outcome, votes
/// and coordinator; `--json` and `--check` for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_groups_and_transactions() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);

    let group = unique_path("cli-status-group");
    let mut members = Vec::new();
    for (client, data) in [(&a, "first member"), (&b, "second member")] {
        let group = zklock::Group::new(client, &group).unwrap().with_data(data);
        members.push(group.join().await.unwrap());
    }
    let stdout = status(&hosts, &group).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("group with 2 member(s)"), "{stdout}");
    assert!(
        lines[1].trim_start().starts_with("member ") && lines[1].contains("[party]"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("first member") && lines[4].contains("second member"),
        "{stdout}"
    );
    let report = status_json(&hosts, &group).await;
    assert_eq!(
        (report["recipe"].as_str(), report["held"].as_bool()),
        (Some("group"), Some(true)),
        "{report}"
    );
    assert_eq!(report["holders"][1]["data"], "second member", "{report}");
    assert_eq!(check(&hosts, &group).await, Some(0), "a group with members");
    for member in members {
        member.leave().await.unwrap();
    }
    assert_eq!(check(&hosts, &group).await, Some(1), "nobody left");

    let transactions = unique_path("cli-status-2pc");
    let tx = format!("{transactions}/tx");
    let coordinator = zklock::TwoPhaseCommit::new(&a, &transactions)
        .unwrap()
        .begin("tx", &["x", "y"])
        .await
        .unwrap();
    let x = {
        let tpc = zklock::TwoPhaseCommit::new(&b, &transactions).unwrap();
        tokio::spawn(async move { tpc.join("tx", "x").await?.vote(zklock::Decision::Commit).await })
    };
    await_children(&a, &tx, 4).await; // coordinator-, joined-x, alive-…-x, vote-x
    let stdout = status(&hosts, &tx).await;
    assert!(
        stdout.contains(
            "two-phase commit transaction, undecided; 1 of 2 participant(s) voted (1 commit), 1 joined"
        ),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.trim_start().starts_with("coordinator ")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("voted ") && l.ends_with("\"commit\"")),
        "{stdout}"
    );
    let report = status_json(&hosts, &tx).await;
    assert_eq!(
        (report["recipe"].as_str(), report["outcome"].as_str()),
        (Some("transaction"), Some("undecided")),
        "{report}"
    );
    assert_eq!(
        (
            report["counts"]["participants"].as_u64(),
            report["counts"]["votes"].as_u64()
        ),
        (Some(2), Some(1)),
        "{report}"
    );
    assert_eq!(check(&hosts, &tx).await, Some(0), "the coordinator holds it open");
    let y = zklock::TwoPhaseCommit::new(&a, &transactions)
        .unwrap()
        .join("tx", "y")
        .await
        .unwrap();
    assert_eq!(
        y.vote(zklock::Decision::Abort).await.unwrap(),
        zklock::Decision::Abort
    );
    assert_eq!(coordinator.decide().await.unwrap(), zklock::Decision::Abort);
    assert_eq!(x.await.unwrap().unwrap(), zklock::Decision::Abort);
    let report = status_json(&hosts, &tx).await;
    assert_eq!(report["outcome"], "abort", "{report}");
}

/// A semaphore's acquirers are all listed in their order, not only counted; a directory that merely has a child
/// named `locks` (a parent of lock directories) is no semaphore, and `run` is not refused there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_waiters_are_listed_and_a_child_named_locks_is_no_semaphore() {
    let hosts = zookeeper().await;
    let (a, b, c, observer) = (
        client(&hosts).await,
        client(&hosts).await,
        client(&hosts).await,
        client(&hosts).await,
    );
    let sem = unique_path("cli-status-semaphore-queue");
    let held = lease(&a, &sem, "holds").await.unwrap();
    let mut waiters = Vec::new();
    for (client, data) in [(b, "first to wait"), (c, "second to wait")] {
        let path = sem.clone();
        waiters.push(tokio::spawn(async move {
            let lease = lease(&client, &path, data).await.unwrap();
            lease.release().await.unwrap();
        }));
        await_children(&observer, &format!("{sem}/locks"), waiters.len()).await;
    }
    let stdout = status(&hosts, &sem).await;
    assert!(
        stdout.contains("semaphore with 1 lease(s) held, 2 acquirer(s) queued"),
        "{stdout}"
    );
    let firsts: Vec<&str> = stdout.lines().filter(|l| l.contains(". [")).collect();
    assert_eq!(firsts.len(), 3, "{stdout}");
    assert!(
        firsts[0].contains("lease holder") && firsts[0].ends_with("\"holds\""),
        "{stdout}"
    );
    assert!(
        firsts[1].contains("waiting") && firsts[1].ends_with("\"first to wait\""),
        "{stdout}"
    );
    assert!(
        firsts[2].contains("waiting") && firsts[2].ends_with("\"second to wait\""),
        "{stdout}"
    );
    held.release().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }

    // A parent of lock directories, one of them called `locks`.
    let parent = unique_path("cli-status-parent");
    let lock = Mutex::new(&a, &format!("{parent}/locks/deploy"))
        .unwrap()
        .lock()
        .await
        .unwrap();
    let stdout = status(&hosts, &parent).await;
    assert!(!stdout.contains("semaphore"), "{stdout}");
    let out = output(&["run", "--connect", &hosts, "--nonblock", &parent, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    lock.release().await.unwrap();
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
