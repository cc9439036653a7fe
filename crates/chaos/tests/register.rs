//! The `register` workload and its linearizability checker.
//!
//! * The checker's unit tests, on known linearizable and non-linearizable histories (the module is compiled
//!   into this test from `src/linearizability.rs`: the chaos crate is a binary).
//! * Short `zklock-chaos --recipe register` campaigns: the embedded server under kill -9 restarts and cut
//!   connections, and real ZooKeeper standalone, must be linearizable.
//! * The negative controls: an in-process embedded server whose reads are answered from a stale copy (the
//!   server's test-only `fault-injection` feature) must be found not linearizable, the same run without the
//!   switch linearizable, and that real history with one read made stale not linearizable.

#[path = "../src/linearizability.rs"]
#[allow(dead_code)]
mod linearizability;

#[path = "common/histories.rs"]
#[allow(dead_code)]
mod histories;

use histories::{op, read, write};
use linearizability::{check, Call, Operation, Outcome, Step, Verdict};

fn cas(p: &str, call: u64, ret: u64, key: u32, expected: i32, value: i64, outcome: Outcome) -> Operation {
    let step = Step::Set {
        key,
        value,
        expected: Some(expected),
    };
    op(p, call, ret, Call::Txn(vec![step]), outcome)
}

fn ok(versions: &[i32]) -> Outcome {
    Outcome::Applied(versions.to_vec())
}

fn verdict(history: &[Operation]) -> Verdict {
    let report = check(history, linearizability::MAX_STATES);
    eprintln!("{report}");
    report.verdict
}

fn is_no(v: Verdict) -> bool {
    matches!(v, Verdict::NotLinearizable(_))
}

#[test]
fn concurrent_writes_and_reads_linearize() {
    // a writes 1, b writes 2 concurrently; c reads 1 at version 2: b first, then a.
    let h = [
        write("a", 0, 10, 0, 1, ok(&[2])),
        write("b", 1, 9, 0, 2, ok(&[1])),
        read("c", 11, 12, 0, 1, 2),
        read("c", 13, 14, 0, 1, 2),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
}

#[test]
fn a_stale_read_is_caught() {
    // The write of 1 completed before the read began; the read still saw the initial value.
    let h = [write("a", 0, 10, 0, 1, ok(&[1])), read("b", 20, 30, 0, 0, 0)];
    assert!(is_no(verdict(&h)));
    // Concurrent with the write, the same read is fine.
    let h = [write("a", 0, 10, 0, 1, ok(&[1])), read("b", 5, 30, 0, 0, 0)];
    assert_eq!(verdict(&h), Verdict::Linearizable);
}

#[test]
fn a_lost_write_is_caught() {
    // Two acknowledged writes, the second read back as if the first never happened after it: 2 at version 2 and
    // then 1 at version 2 cannot both be.
    let h = [
        write("a", 0, 10, 0, 1, ok(&[1])),
        write("b", 20, 30, 0, 2, ok(&[2])),
        read("c", 40, 50, 0, 1, 1),
    ];
    assert!(is_no(verdict(&h)));
    // A write acknowledged with version 1 that a later read does not show at all.
    let h = [
        write("a", 0, 10, 0, 7, ok(&[1])),
        read("c", 40, 50, 0, 0, 0),
        read("c", 60, 70, 0, 0, 0),
    ];
    assert!(is_no(verdict(&h)));
}

#[test]
fn a_compare_and_set_succeeding_twice_on_one_version_is_caught() {
    let h = [
        cas("a", 0, 10, 0, 0, 1, ok(&[1])),
        cas("b", 2, 12, 0, 0, 2, ok(&[1])),
    ];
    assert!(is_no(verdict(&h)));
    // One wins, the other is refused: fine.
    let h = [
        cas("a", 0, 10, 0, 0, 1, ok(&[1])),
        cas("b", 2, 12, 0, 0, 2, Outcome::Refused(Some(0))),
        read("c", 20, 30, 0, 1, 1),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    // A refusal when the version did match (nobody else wrote) is not.
    let h = [cas("a", 0, 10, 0, 0, 1, Outcome::Refused(Some(0)))];
    assert!(is_no(verdict(&h)));
}

#[test]
fn a_read_of_a_value_never_written_is_caught() {
    let h = [write("a", 0, 10, 0, 1, ok(&[1])), read("b", 5, 30, 0, 99, 1)];
    assert!(is_no(verdict(&h)));
}

#[test]
fn real_time_order_is_respected() {
    // b's write of 2 began after a's write of 1 returned, so 2 is last; a read after both seeing 1 is wrong even
    // though the two versions would allow either order without the times.
    let h = [
        write("a", 0, 10, 0, 1, ok(&[1])),
        write("b", 20, 30, 0, 2, ok(&[2])),
        read("c", 40, 50, 0, 1, 2),
    ];
    assert!(is_no(verdict(&h)));
    // A read that saw 1 then a read that saw the initial value, one after the other: the value went back.
    let h = [
        write("a", 0, 100, 0, 1, ok(&[1])),
        read("b", 10, 20, 0, 1, 1),
        read("c", 30, 40, 0, 0, 0),
    ];
    assert!(is_no(verdict(&h)));
}

#[test]
fn unknown_writes_may_happen_late_or_never() {
    // a's write timed out; it shows up in a read long after, or not at all: both fine.
    let late = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        read("b", 100, 110, 0, 0, 0),
        read("b", 200, 210, 0, 5, 1),
    ];
    assert_eq!(verdict(&late), Verdict::Linearizable);
    let never = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        write("b", 100, 110, 0, 6, ok(&[1])),
        read("b", 200, 210, 0, 6, 1),
    ];
    assert_eq!(verdict(&never), Verdict::Linearizable);
    // But not before it was invoked, and not twice.
    let early = [
        read("b", 0, 10, 0, 5, 1),
        write("a", 20, 0, 0, 5, Outcome::Unknown),
    ];
    assert!(is_no(verdict(&early)));
    let twice = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        read("b", 100, 110, 0, 5, 1),
        read("b", 200, 210, 0, 5, 2),
    ];
    assert!(is_no(verdict(&twice)));
}

#[test]
fn multi_is_atomic_across_keys() {
    let txn = |p: &str, call, ret, steps: Vec<Step>, outcome| op(p, call, ret, Call::Txn(steps), outcome);
    let both = vec![
        Step::Set {
            key: 0,
            value: 1,
            expected: Some(0),
        },
        Step::Set {
            key: 1,
            value: 2,
            expected: None,
        },
    ];
    // Applied: a reader sees both or neither.
    let h = [
        txn("a", 0, 10, both.clone(), ok(&[1, 1])),
        read("b", 20, 30, 0, 1, 1),
        read("b", 40, 50, 1, 2, 1),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    let torn = [
        txn("a", 0, 100, both.clone(), ok(&[1, 1])),
        read("b", 10, 20, 1, 2, 1), // the second half seen...
        read("b", 30, 40, 0, 0, 0), // ...then the first half not yet: torn
    ];
    assert!(is_no(verdict(&torn)));
    // Refused at its first step (key 0 was at version 1): nothing of it may show on key 1.
    let h = [
        write("c", 0, 10, 0, 9, ok(&[1])),
        txn("a", 20, 30, both.clone(), Outcome::Refused(Some(0))),
        read("b", 40, 50, 1, 0, 0),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
    let h = [
        write("c", 0, 10, 0, 9, ok(&[1])),
        txn("a", 20, 30, both.clone(), Outcome::Refused(Some(0))),
        read("b", 40, 50, 1, 2, 1),
    ];
    assert!(is_no(verdict(&h)));
    // A check that held does not change the version.
    let checked = vec![
        Step::Check { key: 0, version: 0 },
        Step::Set {
            key: 1,
            value: 3,
            expected: None,
        },
    ];
    let h = [
        txn("a", 0, 10, checked, ok(&[1])),
        read("b", 20, 30, 0, 0, 0),
        read("b", 20, 30, 1, 3, 1),
    ];
    assert_eq!(verdict(&h), Verdict::Linearizable);
}

#[test]
fn independent_keys_are_searched_apart() {
    let mut h = Vec::new();
    for key in 0..3u32 {
        for i in 0..200u64 {
            let t = i * 100;
            let value = (key as i64) * 1000 + i as i64 + 1;
            h.push(write("w", t, t + 50, key, value, ok(&[i as i32 + 1])));
            h.push(read("r", t + 10, t + 90, key, value, i as i32 + 1));
        }
    }
    let report = check(&h, linearizability::MAX_STATES);
    assert_eq!(report.verdict, Verdict::Linearizable, "{report}");
    assert_eq!((report.ops, report.keys, report.groups), (1200, 3, 3));
}

#[test]
fn the_search_gives_up_past_its_bound_and_says_so() {
    // Many concurrent unknown writes and reads that rule out most orders: more configurations than the bound.
    // Every value is read (by concurrent reads that fix the order: value 8 first ... value 1 last), so no two
    // writes are alike and none can be set aside as interchangeable.
    let mut h = Vec::new();
    for i in 0..8u64 {
        h.push(write("w", i, 0, 0, i as i64 + 1, Outcome::Unknown));
        h.push(read("r", 1000, 1010 + i, 0, i as i64 + 1, 8 - i as i32));
    }
    let report = check(&h, 100);
    assert!(matches!(report.verdict, Verdict::Unknown(_)), "{report}");
    assert!(report.to_string().starts_with("linearizable: unknown"));
    // With room enough, the same history is settled.
    let report = check(&h, linearizability::MAX_STATES);
    assert_eq!(report.verdict, Verdict::Linearizable, "{report}");
}

// ---- campaigns ----

/// Runs `zklock-chaos` with `args`: exit code, stdout, stderr.
fn chaos(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zklock-chaos"))
        .args(args)
        .output()
        .expect("zklock-chaos runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("zklock-chaos {}\n{stdout}", args.join(" "));
    (out.status.code(), stdout, stderr)
}

/// A `--recipe register` campaign that must be linearizable, with work done and faults injected.
fn linearizable_campaign(server: &str, seed: &str, more: &[&str]) {
    let mut args = vec![
        "--server",
        server,
        "--recipe",
        "register",
        "--clients",
        "3",
        "--duration",
        "25",
        "--seed",
        seed,
    ];
    args.extend_from_slice(more);
    let (code, stdout, stderr) = chaos(&args);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let verdict = stdout
        .lines()
        .find(|l| l.starts_with("linearizable: "))
        .unwrap_or_else(|| panic!("no verdict line: {stdout}\n{stderr}"));
    assert!(verdict.starts_with("linearizable: yes ("), "{verdict}");
    let n: Vec<u64> = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    assert!(n.len() == 4 && n[0] >= 20, "too little work: {stdout}\n{stderr}");
    assert!(n[1] >= 1, "no fault was injected: {stdout}\n{stderr}");
}

#[test]
fn register_on_embedded_under_restarts_and_cuts_is_linearizable() {
    linearizable_campaign("embedded", "21", &["--faults", "restart-server,cut"]);
}

#[test]
fn register_on_zookeeper_is_linearizable() {
    linearizable_campaign("zookeeper", "22", &[]);
}

// ---- the negative control ----

fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Creates the workload's znodes at `path` (value 0, version 0), as the campaign does.
async fn prepare(connect: &str, path: &str) {
    let client = zookeeper_client::Client::connect(connect).await.unwrap();
    let options = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.create(path, b"", &options).await.unwrap();
    for key in 0..4 {
        client
            .create(&format!("{path}/k{key}"), b"0", &options)
            .await
            .unwrap();
    }
}

/// `zklock-chaos __check-register DIR`: its exit code and verdict line.
fn check_dir(dir: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zklock-chaos"))
        .arg("__check-register")
        .arg(dir)
        .output()
        .unwrap();
    let verdict = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    eprintln!("{verdict}");
    (out.status.code(), verdict)
}

/// Three `register` workers on `connect` for 3 s, then `zklock-chaos __check-register` on their histories: its
/// exit code and verdict line.
async fn run_and_check(connect: &str, path: &str, dir: &std::path::Path) -> (Option<i32>, String) {
    prepare(connect, path).await;
    let until = (now_ns() + 3_000_000_000).to_string();
    let mut workers = Vec::new();
    for client in 0..3 {
        let history = dir.join(format!("kv-{client}-1.history"));
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_zklock-chaos"));
        command.args([
            "__worker",
            "--recipe",
            "register",
            "--connect",
            connect,
            "--path",
            path,
            "--register",
            "unused",
            "--client",
            &client.to_string(),
            "--session-timeout-ms",
            "4000",
            "--until-ns",
            &until,
            "--seed",
            &(client + 100).to_string(),
            "--history",
            history.to_str().unwrap(),
        ]);
        workers.push(tokio::task::spawn_blocking(move || command.output().unwrap()));
    }
    for worker in workers {
        let out = worker.await.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    check_dir(dir)
}

/// Replaces the answer of the last read in `dir`'s first history that saw version 10 or more by the initial
/// `(0, version 0)`: a stale read of a key written many times, each write acknowledged well before that read began.
fn make_one_read_stale(dir: &std::path::Path) {
    let file = dir.join("kv-0-1.history");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines
        .iter()
        .rposition(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 6 && f[0] == "ok" && f[3] == "read" && f[5].parse::<i32>().is_ok_and(|v| v >= 10)
        })
        .expect("a read that saw version 10 or more");
    let f: Vec<String> = lines[at].split_whitespace().map(str::to_owned).collect();
    lines[at] = format!("ok {} {} read 0 0", f[1], f[2]);
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_server_answering_stale_reads_is_not_linearizable() {
    let server = zklock_server::Server::start(zklock_server::ServerConfig::default())
        .await
        .unwrap();
    let connect = server.connect_string();
    // The same workload on the same server, first as it is, then with the stale copies on.
    let fresh = tempfile::tempdir().unwrap();
    let (code, verdict) = run_and_check(&connect, "/fresh", fresh.path()).await;
    assert_eq!(code, Some(0), "{verdict}");
    assert!(verdict.starts_with("linearizable: yes ("), "{verdict}");
    // The history-level control: that real history with one read made stale.
    make_one_read_stale(fresh.path());
    let (code, verdict) = check_dir(fresh.path());
    assert_eq!(code, Some(1), "{verdict}");
    assert!(verdict.starts_with("linearizable: no ("), "{verdict}");
    server.answer_reads_from_a_stale_copy();
    let stale = tempfile::tempdir().unwrap();
    let (code, verdict) = run_and_check(&connect, "/stale", stale.path()).await;
    assert_eq!(code, Some(1), "{verdict}");
    assert!(verdict.starts_with("linearizable: no ("), "{verdict}");
    server.shutdown().await.unwrap();
}
