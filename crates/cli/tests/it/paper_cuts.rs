//! Issue 18, item 5, the command line's paper cuts: what is stored in the lock node, usage errors before the
//! network, `-q` and `--conflict-exit-code` on a busy lock, `--connect` before the subcommand, and
//! `elect --observe` whose reader goes away.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock::LeaderElection;
use zklock_testkit::unique_path;

use crate::support::*;

/// A loopback port that refuses connections for as long as the value lives: bound by a socket of ours that does not
/// listen, so that nothing else can take it meanwhile. (A port bound and released is only free for a moment: in CI a
/// server of a concurrent test was given the same port by the kernel, and `run` to the "closed" port succeeded.)
struct ClosedPort {
    hosts: String,
    _held: tokio::net::TcpSocket,
}

fn closed_port() -> ClosedPort {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    ClosedPort {
        hosts: format!("127.0.0.1:{port}"),
        _held: socket,
    }
}

/// The data `zklock run ARGS PATH -- sh -c cat sh EXTRA...` stores in its lock node, read while it holds.
async fn stored(hosts: &str, flags: &[&str], extra: &[&str]) -> String {
    let path = unique_path("cli-describe");
    let mut args = vec!["run", "-c", hosts];
    args.extend_from_slice(flags);
    args.extend_from_slice(&[&path, "--", "sh", "-c", "cat", "sh"]);
    args.extend_from_slice(extra);
    let mut run = zklock(&args)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let admin = client(hosts).await;
    let [node] = &await_children(&admin, &path, 1).await[..] else {
        unreachable!()
    };
    let (data, _) = admin.get_data(&format!("{path}/{node}")).await.unwrap();
    drop(run.stdin.take()); // the command reads EOF and exits
    let out = tokio::time::timeout(EVENTUALLY, run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    String::from_utf8(data).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_command_line_hides_credentials_and_can_be_left_out() {
    let hosts = zookeeper().await;
    let secrets = [
        "--password=hunter2",
        "--token",
        "tok3n",
        "api_key=k3y",
        "https://alice:pa55@db.example/x",
    ];
    let data = stored(&hosts, &[], &secrets).await;
    assert!(
        data.ends_with(
            " cmd=sh -c cat sh --password=*** --token *** api_key=*** https://alice:***@db.example/x"
        ),
        "{data}"
    );
    for secret in ["hunter2", "tok3n", "k3y", "pa55"] {
        assert!(!data.contains(secret), "{secret} stored: {data}");
    }
    // Negative control: plain arguments are stored as given.
    let data = stored(&hosts, &[], &["--level=9", "/srv/x"]).await;
    assert!(data.ends_with(" cmd=sh -c cat sh --level=9 /srv/x"), "{data}");
    // --no-describe: host and pid only; --describe TEXT: the text instead of the command line.
    let data = stored(&hosts, &["--no-describe"], &["--level=9"]).await;
    assert!(
        data.starts_with("host=") && !data.contains("cmd=") && !data.contains("level"),
        "{data}"
    );
    let data = stored(&hosts, &["--describe", "nightly"], &["--level=9"]).await;
    assert!(
        data.ends_with(" note=nightly") && !data.contains("cmd="),
        "{data}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_errors_come_before_the_network() {
    let closed = closed_port();
    let h = closed.hosts.as_str();
    let mut cases: Vec<Vec<&str>> = Vec::new();
    for path in ["locks/x", "", "/locks/x/", "/zookeeper/x", "/a//b"] {
        cases.extend([
            vec!["run", "-c", h, path, "--", "true"],
            vec!["elect", "-c", h, path, "--", "true"],
            vec!["elect", "-c", h, "--observe", path],
            vec!["status", "-c", h, path],
            vec!["counter", "-c", h, "get", path],
            vec!["revoke", "-c", h, path],
            vec!["reap", "-c", h, path],
            vec!["demo", "-c", h, "--path", path],
        ]);
    }
    cases.extend([
        vec!["run", "-c", h, "/", "--", "true"],
        vec!["run", "-c", h, "--acl", "creator", "/l", "--", "true"],
        // Directories nobody could queue in (issue 33.9).
        vec!["run", "-c", h, "--acl", "world:r", "/l", "--", "true"],
        vec!["elect", "-c", h, "--parent-acl", "world:rw", "/l", "--", "true"],
        vec!["counter", "-c", h, "--acl", "creator", "add", "/c"],
        vec!["counter", "-c", h, "--kind", "shared", "set", "/c", "99999999999"],
        vec![
            "run",
            "-c",
            h,
            "--describe",
            "x",
            "--no-describe",
            "/l",
            "--",
            "true",
        ],
        vec!["run", "-c", h, "-n", "-E", "256", "/l", "--", "true"],
        vec!["run", "-c", h, "--no-such-flag", "/l", "--", "true"],
        vec!["demo", "-c", h, "--workers", "0"],
    ]);
    for args in &cases {
        let out = output(args).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot connect"), "{args:?}: {stderr}");
    }
    // Negative control: valid arguments reach the (closed) port (tried once: --connect-timeout 0).
    let once = "--connect-timeout=0";
    for args in [
        vec!["run", "-c", h, once, "/locks/x", "--", "true"],
        vec!["run", "-c", h, once, "--acl", "world:rcd", "/l", "--", "true"],
        vec!["status", "-c", h, once, "/"],
        vec!["reap", "-c", h, once, "/"],
    ] {
        let out = output(&args).await;
        assert_eq!(
            out.status.code(),
            Some(exit::UNAVAILABLE),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_and_conflict_exit_code_on_a_busy_lock() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-conflict");
    let (holder, guard) = lock_held(&hosts, &path).await;
    let election = unique_path("cli-conflict-election");
    let leader = LeaderElection::new(&holder, &election)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let h = hosts.as_str();
    // (args, status, says something)
    let cases: [(Vec<&str>, i32, bool); 6] = [
        (vec!["run", "-c", h, "-n", &path, "--", "echo", "ran"], 1, true),
        (
            vec!["-q", "run", "-c", h, "-n", &path, "--", "echo", "ran"],
            1,
            false,
        ),
        (
            vec!["run", "-q", "-c", h, "-n", "-E", "75", &path, "--", "echo", "ran"],
            75,
            false,
        ),
        (
            vec![
                "run",
                "-c",
                h,
                "--conflict-exit-code",
                "75",
                "-n",
                &path,
                "--",
                "echo",
                "ran",
            ],
            75,
            true,
        ),
        (
            vec![
                "-q", "run", "-c", h, "-w", "200ms", "-E", "0", &path, "--", "echo", "ran",
            ],
            0,
            false,
        ),
        (
            vec![
                "-q", "elect", "-c", h, "-n", "-E", "9", &election, "--", "echo", "ran",
            ],
            9,
            false,
        ),
    ];
    for (args, status, says) in &cases {
        let out = output(args).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(*status), "{args:?}: {stderr}");
        assert_eq!(!stderr.is_empty(), *says, "{args:?}: {stderr:?}");
        assert!(out.stdout.is_empty(), "{args:?}: the command ran");
    }
    guard.release().await.unwrap();
    drop(leader);
    // Free: the command's own status, -E notwithstanding.
    let out = output(&[
        "run", "-c", h, "-n", "-E", "75", &path, "--", "sh", "-c", "exit 1",
    ])
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_goes_before_or_after_the_subcommand() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-global-connect");
    // A lock's directory is no counter: the counter gets a path of its own.
    let counter = format!("{path}-counter");
    for args in [
        vec!["-c", &hosts, "run", &path, "--", "true"],
        vec!["--connect", &hosts, "status", &path],
        vec!["-q", "-c", &hosts, "counter", "add", &counter],
        vec!["status", &path, "-c", &hosts],
    ] {
        let out = output(&args).await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    }
    // The last one given wins, as for any flag; serve takes none.
    let out = output(&["-c", &closed_port().hosts, "status", "-c", &hosts, &path]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = output(&["-c", &hosts, "serve", "--dry-run"]).await;
    assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
    let out = output(&["serve", "-c", &hosts, "--dry-run"]).await;
    assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("serve takes no --connect"),
        "{}",
        text(&out.stderr)
    );
    let out = zklock(&["serve", "--dry-run", "--listen", "127.0.0.1:0"])
        .env("ZKLOCK_CONNECT", &hosts)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_to_a_closed_port_fails_fast() {
    let closed = closed_port();
    let start = Instant::now();
    let out = output(&["bench", "-c", &closed.hosts, "--duration", "1"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_ends_when_its_reader_goes_away() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-observe-reader");
    let mut observer = zklock(&["elect", "-c", &hosts, "--observe", &path])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(observer.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.as_deref(), Some("no leader"));
    // As `| head -1` does: read one line and go. Nothing changes in the election meanwhile, so nothing is written.
    drop(lines);
    let out = tokio::time::timeout(EVENTUALLY, observer.wait_with_output())
        .await
        .expect("zklock elect --observe exits when its reader is gone")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// `elect --observe` on a path a mutex holds is refused as `elect -n` is there (exit 64, naming the mutex's node),
/// instead of printing "no leader" for ever while somebody holds it (issue 33.9); on ZooKeeper and on the embedded
/// server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_on_a_held_mutex_is_refused() {
    for hosts in [zookeeper().await, zklock_testkit::hosts::embedded().await] {
        let path = unique_path("cli-observe-mutex");
        let (_holder, guard) = lock_held(&hosts, &path).await;
        for args in [
            vec!["elect", "-c", &hosts, "--observe", &path],
            vec!["elect", "-c", &hosts, "-n", &path, "--", "true"],
        ] {
            let out = output(&args).await;
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(exit::USAGE), "{args:?}: {stderr}");
            assert!(
                stderr.contains("never runs beside it") && stderr.contains("-lock-"),
                "{args:?}: {stderr}"
            );
            assert!(out.stdout.is_empty(), "{args:?}");
        }
        guard.release().await.unwrap();
    }
}

/// `serve --help` does not offer the `--connect` it refuses; `bench --help` shows its own options under a heading of
/// their own, apart from the options every command has (issue 33.9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_bench_help_show_their_own_options() {
    let serve = text(&output(&["serve", "--help"]).await.stdout);
    assert!(
        serve.contains("--listen") && !serve.contains("--connect"),
        "{serve}"
    );
    let run = text(&output(&["run", "--help"]).await.stdout);
    assert!(run.contains("--connect"), "{run}");
    let bench = text(&output(&["bench", "--help"]).await.stdout);
    let (common, own) = bench.split_once("\nBenchmark:\n").expect("a Benchmark heading");
    for flag in ["--duration", "--clients", "--rounds"] {
        assert!(own.contains(flag) && !common.contains(flag), "{flag}: {bench}");
    }
}
