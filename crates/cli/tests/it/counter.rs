//! `zklock counter get|set|add`: Curator's two counter layouts, their exit statuses, concurrent adds from several
//! processes; and `zklock status` on counters and priority queues.

use std::collections::BTreeSet;

use zklock::{PriorityQueue, SharedCount};
use zklock_testkit::unique_path;
use zookeeper_client as zk;

use crate::support::*;

/// Runs `zklock counter ARGS… --connect HOSTS`; returns the exit status, stdout and stderr.
async fn counter(hosts: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["counter", "--connect", hosts];
    all.extend_from_slice(args);
    let out = output(&all).await;
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// A Curator shared count at `path`, set to `value` by `client`.
async fn shared_count(client: &zk::Client, path: &str, value: i32) {
    SharedCount::new(client, path, 0)
        .unwrap()
        .set(value)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_set_and_add_a_long_and_a_shared_count() {
    let hosts = zookeeper().await;
    let observer = client(&hosts).await;
    let path = unique_path("cli-counter-long");
    let (status, stdout, stderr) = counter(&hosts, &["get", &path]).await;
    assert_eq!((status, stdout.as_str()), (Some(0), "0\n"));
    assert!(
        stderr.contains("does not exist"),
        "a missing counter is said to be: {stderr}"
    );
    assert_eq!(
        observer.check_stat(&path).await.unwrap(),
        None,
        "get creates nothing"
    );
    assert_eq!(
        counter(&hosts, &["add", &path]).await.1,
        "1\n",
        "add adds 1 by default"
    );
    assert_eq!(counter(&hosts, &["add", &path, "-3"]).await.1, "-2\n");
    assert_eq!(counter(&hosts, &["set", &path, "42"]).await.1, "42\n");
    assert_eq!(
        observer.get_data(&path).await.unwrap().0,
        42i64.to_be_bytes(),
        "Curator's 8 bytes"
    );
    let (code, json, _) = counter(&hosts, &["--json", "get", &path]).await;
    assert_eq!(code, Some(0));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["kind"], "long");
    assert_eq!(json["value"], 42);
    assert_eq!(json["version"], 2);
    let (_, json, _) = counter(&hosts, &["add", "--json", &path, "8"]).await;
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (json["previous"].as_i64(), json["value"].as_i64()),
        (Some(42), Some(50))
    );

    // A shared count (4 bytes) is recognised by its data, and changed as one.
    let shared = unique_path("cli-counter-shared");
    shared_count(&observer, &shared, 7).await;
    assert_eq!(counter(&hosts, &["get", &shared]).await.1, "7\n");
    assert_eq!(counter(&hosts, &["add", &shared, "5"]).await.1, "12\n");
    assert_eq!(
        observer.get_data(&shared).await.unwrap().0,
        12i32.to_be_bytes(),
        "still Curator's 4 bytes"
    );
    let new_shared = unique_path("cli-counter-new-shared");
    assert_eq!(
        counter(&hosts, &["--kind", "shared", "set", &new_shared, "-9"])
            .await
            .1,
        "-9\n"
    );
    assert_eq!(
        observer.get_data(&new_shared).await.unwrap().0,
        (-9i32).to_be_bytes()
    );

    // `zklock status` shows both.
    let stdout = text(&output(&["status", "--connect", &hosts, &path]).await.stdout);
    assert!(
        stdout.contains("counter (DistributedAtomicLong) 50, version 3"),
        "{stdout}"
    );
    let stdout = text(&output(&["status", "--connect", &hosts, &shared]).await.stdout);
    assert!(stdout.contains("shared count 12, version 1"), "{stdout}");
    let out = output(&["status", "--json", "--check", "--connect", &hosts, &shared]).await;
    assert_eq!(out.status.code(), Some(1), "a counter is never held");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (json["recipe"].as_str(), json["value"].as_i64()),
        (Some("shared_count"), Some(12))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_and_failures_have_their_statuses() {
    let hosts = zookeeper().await;
    let observer = client(&hosts).await;
    // Something that is no counter is refused and left as it is.
    let other = unique_path("cli-counter-other");
    let mode = persistent();
    observer.create(&other, b"abc", &mode).await.unwrap();
    let (code, _, stderr) = counter(&hosts, &["add", &other]).await;
    assert_eq!(code, Some(exit::USAGE), "{stderr}");
    assert!(
        stderr.contains("holds 3 bytes") && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    assert_eq!(observer.get_data(&other).await.unwrap().0, b"abc");
    let (code, _, stderr) = counter(&hosts, &["--kind", "shared", "get", &other]).await;
    assert_eq!(code, Some(exit::USAGE), "{stderr}");
    // A value a shared count cannot hold; a shared count asked to be a long.
    let shared = unique_path("cli-counter-range");
    shared_count(&observer, &shared, 1).await;
    let (code, _, stderr) = counter(&hosts, &["set", &shared, "2147483648"]).await;
    assert_eq!(code, Some(exit::USAGE), "{stderr}");
    assert!(stderr.contains("does not fit a shared count"), "{stderr}");
    let (code, _, stderr) = counter(&hosts, &["--kind", "long", "add", &shared]).await;
    assert_eq!(code, Some(exit::USAGE), "{stderr}");
    assert_eq!(observer.get_data(&shared).await.unwrap().0, 1i32.to_be_bytes());
    // Bad arguments.
    for args in [
        &["get", "relative"][..],
        &["get", &shared, "5"],
        &["set", &shared],
        &["add", &shared, "many"],
        &["count", &shared],
    ] {
        let (code, _, stderr) = counter(&hosts, args).await;
        assert_eq!(code, Some(exit::USAGE), "{args:?}: {stderr}");
    }
    // No server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = closed.local_addr().unwrap().to_string();
    drop(closed);
    let (code, _, stderr) = counter(&nobody, &["get", &shared]).await;
    assert_eq!(code, Some(exit::UNAVAILABLE), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_from_many_processes_are_each_counted_once() {
    const PROCESSES: i64 = 6;
    let hosts = zookeeper().await;
    for kind in ["long", "shared"] {
        let path = unique_path("cli-counter-many");
        let runs: Vec<_> = (0..PROCESSES)
            .map(|_| {
                let (hosts, path) = (hosts.clone(), path.clone());
                tokio::spawn(async move { counter(&hosts, &["--kind", kind, "add", &path]).await })
            })
            .collect();
        let mut seen = BTreeSet::new();
        for run in runs {
            let (code, stdout, stderr) = run.await.unwrap();
            assert_eq!(code, Some(0), "{stderr}");
            seen.insert(stdout.trim().parse::<i64>().unwrap());
        }
        assert_eq!(
            seen,
            (1..=PROCESSES).collect(),
            "{kind}: each add saw its own value"
        );
        assert_eq!(
            counter(&hosts, &["get", &path]).await.1,
            format!("{PROCESSES}\n"),
            "{kind}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_priority_queue_by_priority() {
    let hosts = zookeeper().await;
    let client = client(&hosts).await;
    let path = unique_path("cli-status-pqueue");
    let queue = PriorityQueue::new(&client, &path).unwrap();
    for (data, priority) in [("a", 5), ("b", -1), ("c", 5), ("d", 0)] {
        queue.put(data.as_bytes(), priority).await.unwrap();
    }
    let claimed = queue.take_safe().await.unwrap();
    assert_eq!(claimed.data(), b"b");
    let stdout = text(&output(&["status", "--connect", &hosts, &path]).await.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].contains("priority queue with 4 item(s), 1 claimed"),
        "{stdout}"
    );
    let by_priority: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        by_priority,
        [
            "priority -1: 1 item(s)",
            "priority 0: 1 item(s)",
            "priority 5: 2 item(s)"
        ],
        "{stdout}"
    );
    let out = output(&["status", "--json", "--connect", &hosts, &path]).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["recipe"], "priority_queue");
    assert_eq!(
        (
            json["counts"]["items"].as_u64(),
            json["counts"]["claimed"].as_u64()
        ),
        (Some(4), Some(1))
    );
    assert_eq!(
        json["priorities"],
        serde_json::json!([
            {"priority": -1, "items": 1}, {"priority": 0, "items": 1}, {"priority": 5, "items": 2}
        ])
    );
    claimed.complete().await.unwrap();
}

/// `set` and `add` on a node that is no counter — a lock's directory (held, or idle), a queue, a node with other
/// children — refuse with exit 64 and write nothing; `get` says what it is too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_is_no_counter_is_refused_and_left_alone() {
    let hosts = zookeeper().await;
    let a = client(&hosts).await;
    let lock = unique_path("cli-counter-lock");
    let guard = zklock::Mutex::new(&a, &lock).unwrap().lock().await.unwrap();
    let queue = unique_path("cli-counter-queue");
    zklock::Queue::new(&a, &queue).unwrap().put(b"job").await.unwrap();
    let plain = unique_path("cli-counter-parent");
    a.create(&plain, b"", &persistent()).await.unwrap();
    a.create(&format!("{plain}/child"), b"", &persistent())
        .await
        .unwrap();
    for (path, what) in [
        (&lock, "a lock's directory"),
        (&queue, "a queue"),
        (&plain, "no recipe"),
    ] {
        let before = a.get_data(path).await.unwrap();
        for args in [
            &["set", path.as_str(), "5"][..],
            &["add", path.as_str()],
            &["get", path.as_str()],
        ] {
            let (status, stdout, stderr) = counter(&hosts, args).await;
            assert_eq!(status, Some(exit::USAGE), "{args:?}: {stdout} {stderr}");
            assert!(
                stderr.contains(what) && stderr.contains("not a counter"),
                "{args:?}: {stderr}"
            );
        }
        assert_eq!(a.get_data(path).await.unwrap(), before, "{path}: nothing written");
    }
    guard.release().await.unwrap();
    // An idle directory — it has had children, as a lock's has once its last contender left — is no counter either.
    let idle = unique_path("cli-counter-idle");
    let mode = persistent();
    a.create(&idle, b"", &mode).await.unwrap();
    a.create(&format!("{idle}/gone"), b"", &mode).await.unwrap();
    a.delete(&format!("{idle}/gone"), None).await.unwrap();
    let (status, _, stderr) = counter(&hosts, &["add", &idle]).await;
    assert_eq!(status, Some(exit::USAGE), "{stderr}");
    assert!(stderr.contains("has had children"), "{stderr}");
    assert_eq!(
        a.get_data(&idle).await.unwrap().0,
        Vec::<u8>::new(),
        "nothing written"
    );
}

/// The servers a counter's rules are checked on: real ZooKeeper and the embedded server.
async fn both_servers() -> [String; 2] {
    [zookeeper().await, zklock_testkit::hosts::embedded().await]
}

/// Runs `zklock counter ARGS…`, expecting a usage failure (exit 64) whose message has every one of `words`.
async fn refused(hosts: &str, args: &[&str], words: &[&str]) {
    let (status, stdout, stderr) = counter(hosts, args).await;
    assert_eq!(status, Some(exit::USAGE), "{args:?}: {stdout} {stderr}");
    for word in words {
        assert!(stderr.contains(word), "{args:?}: no {word:?} in {stderr}");
    }
}

/// A node that merely has a counter's length is no counter: text in 4 or 8 bytes ("data" once became "datb"), or
/// no data at all, is refused by get, set and add and left as it is, unless `--kind` says it is a counter; a
/// directory with other children is refused whatever its data. Real counters up to ±150,000,000 never read as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_node_of_a_counters_length_is_refused_unless_kind_says_so() {
    for hosts in both_servers().await {
        let a = client(&hosts).await;
        let mode = persistent();
        let [data, words, empty] =
            ["cli-counter-data", "cli-counter-words", "cli-counter-empty"].map(unique_path);
        a.create(&data, b"data", &mode).await.unwrap();
        a.create(&words, b"1234567\n", &mode).await.unwrap();
        a.create(&empty, b"", &mode).await.unwrap();
        for (path, words) in [
            (&data, &["\"data\"", "not a counter", "--kind shared"][..]),
            (&words, &["\"1234567\\n\"", "not a counter", "--kind long"]),
            (&empty, &["without data", "not a counter", "--kind long"]),
        ] {
            let before = a.get_data(path).await.unwrap();
            for args in [&["add", path.as_str()][..], &["set", path, "5"], &["get", path]] {
                refused(&hosts, args, words).await;
            }
            assert_eq!(a.get_data(path).await.unwrap(), before, "{path}: nothing written");
        }
        // `--kind` says it is a counter: then it is one.
        assert_eq!(
            counter(&hosts, &["--kind", "shared", "add", &data]).await.1,
            "1684108386\n"
        );
        assert_eq!(a.get_data(&data).await.unwrap().0, b"datb");
        assert_eq!(counter(&hosts, &["--kind", "long", "add", &empty]).await.1, "1\n");
        assert_eq!(a.get_data(&empty).await.unwrap().0, 1i64.to_be_bytes());

        // A lock's directory holding 8 bytes, and a node of 8 bytes with a child of its own, are no counters.
        let lock = unique_path("cli-counter-lock8");
        a.create(&lock, &8i64.to_be_bytes(), &mode).await.unwrap();
        let guard = zklock::Mutex::new(&a, &lock).unwrap().lock().await.unwrap();
        let parent = unique_path("cli-counter-parent8");
        a.create(&parent, &8i64.to_be_bytes(), &mode).await.unwrap();
        a.create(&format!("{parent}/child"), b"", &mode).await.unwrap();
        for (path, what) in [(&lock, "a lock's directory"), (&parent, "no recipe")] {
            for args in [&["add", path.as_str()][..], &["--kind", "long", "set", path, "5"]] {
                refused(&hosts, args, &[what, "not a counter"]).await;
            }
            assert_eq!(a.get_data(path).await.unwrap().0, 8i64.to_be_bytes(), "{path}");
        }
        guard.release().await.unwrap();

        // Counters within ±150,000,000 never read as text: no `--kind` needed.
        for (value, kind) in [
            (150_000_000, "shared"),
            (-150_000_000, "shared"),
            (150_000_000, "long"),
        ] {
            let path = unique_path("cli-counter-bound");
            let (status, _, stderr) =
                counter(&hosts, &["--kind", kind, "set", &path, &value.to_string()]).await;
            assert_eq!(status, Some(0), "{stderr}");
            let (status, stdout, stderr) = counter(&hosts, &["add", &path, "-1"]).await;
            assert_eq!(
                (status, stdout),
                (Some(0), format!("{}\n", value - 1)),
                "{kind}: {stderr}"
            );
        }
    }
}

/// `add` refuses a sum its counter cannot hold (exit 64, as `set` does for a value out of range) and writes
/// nothing; it never wraps (4 + 2147483647 once became -2147483645).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_refuses_to_overflow_a_counter() {
    for hosts in both_servers().await {
        let observer = client(&hosts).await;
        let [high, low] = ["cli-counter-overflow-high", "cli-counter-overflow-low"].map(unique_path);
        shared_count(&observer, &high, 4).await;
        shared_count(&observer, &low, -4).await;
        let [max, min] = ["cli-counter-overflow-max", "cli-counter-overflow-min"].map(unique_path);
        for (path, value) in [(&max, i64::MAX), (&min, i64::MIN + 1)] {
            let (status, _, stderr) = counter(&hosts, &["set", path, &value.to_string()]).await;
            assert_eq!(status, Some(0), "{stderr}");
        }
        for (path, args, sum) in [
            (&high, &["add", &high, "2147483647"][..], "2147483651"),
            (&low, &["add", &low, "-2147483647"], "-2147483651"),
            (&max, &["add", &max], "9223372036854775808"),
            (
                &min,
                &["--kind", "long", "add", &min, "-2"],
                "-9223372036854775809",
            ),
        ] {
            let before = observer.get_data(path).await.unwrap();
            refused(&hosts, args, &[sum, "does not fit", "nothing was changed"]).await;
            assert_eq!(
                observer.get_data(path).await.unwrap(),
                before,
                "{args:?}: nothing written"
            );
        }
        // Up to the edge is fine.
        for (path, delta, now) in [
            (&high, "2147483643", "2147483647"),
            (&low, "-2147483644", "-2147483648"),
            (&max, "-1", "9223372036854775806"),
            (&min, "-1", "-9223372036854775808"),
        ] {
            let (status, stdout, stderr) = counter(&hosts, &["add", path, delta]).await;
            assert_eq!(
                (status, stdout),
                (Some(0), format!("{now}\n")),
                "{path} {delta}: {stderr}"
            );
        }
    }
}
