//! What a new user types first: durations, connect strings, a forgotten `--`, an unreachable server, a missing
//! chroot, and `zklock serve`'s address — each a clear message with the right exit status, never a backtrace.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use zklock_testkit::unique_path;

use crate::support::*;

/// `zklock serve` on a free loopback port with a temporary data directory; killed when dropped.
struct Served {
    _process: tokio::process::Child,
    hosts: String,
}

async fn serve() -> Served {
    serve_with(&[]).await
}

/// [`serve`] with more arguments.
async fn serve_with(more: &[&str]) -> Served {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(more);
    let mut process = zklock(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start zklock serve");
    let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(EVENTUALLY, lines.next_line())
        .await
        .expect("zklock serve says where it listens")
        .unwrap()
        .expect("a line");
    let hosts = line
        .strip_prefix("zklock server listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();
    Served {
        _process: process,
        hosts,
    }
}

/// Exit 64 (clap's usage errors are zklock's EX_USAGE too), one clap error naming the bad value, no panic.
fn assert_usage_error(args: &[&str], out: &std::process::Output, expected: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::USAGE), "zklock {args:?}: {stderr}");
    assert!(stderr.contains(expected), "zklock {args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "zklock {args:?}: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_nan_negative_and_absurd_durations_are_usage_errors() {
    // Nothing may be reached: the values are refused before connecting.
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--timeout", "inf", "/l", "--", "true"], "finite"),
        (&["run", "--timeout", "1e30", "/l", "--", "true"], "a year"),
        (&["run", "--timeout", "400days", "/l", "--", "true"], "a year"),
        (&["run", "--timeout=-5", "/l", "--", "true"], "negative"),
        (&["run", "--timeout", "-0.5", "/l", "--", "true"], "negative"),
        (
            &["run", "--kill-after", "nan", "/l", "--", "true"],
            "not a number",
        ),
        (
            &["run", "--timeout", "soon", "/l", "--", "true"],
            "not a duration",
        ),
        (
            &["elect", "--kill-after", "NaN", "/l", "--", "true"],
            "not a number",
        ),
        (&["status", "--session-timeout", "inf", "/l"], "finite"),
        (
            &["run", "--session-timeout", "-1", "/l", "--", "true"],
            "negative",
        ),
        (&["bench", "--duration", "inf"], "finite"),
        (&["demo", "--session-timeout", "1e300"], "a year"),
    ];
    for (args, expected) in cases {
        let out = output(args).await;
        assert_usage_error(args, &out, expected);
        assert!(text(&out.stderr).contains("invalid value"), "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn human_durations_and_bare_seconds_work() {
    let served = serve().await;
    for (timeout, kill_after, session_timeout) in [("1m30s", "250ms", "10s"), ("90", "1.5", "10")] {
        let path = unique_path("cli-input-durations");
        let args = [
            "run",
            "--connect",
            &served.hosts,
            "--timeout",
            timeout,
            "--kill-after",
            kill_after,
            "--session-timeout",
            session_timeout,
            &path,
            "--",
            "true",
        ];
        let out = output(&args).await;
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_connect_string_is_a_usage_error() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "-c", "zk1:99999", "/l", "--", "true"], "bad port"),
        (
            &["run", "-c", "zk1:2181,,zk2:2181", "/l", "--", "true"],
            "empty server",
        ),
        (
            &["elect", "-c", "zk1:2181/app/", "/l", "--", "true"],
            "bad chroot",
        ),
        (&["status", "-c", "zk1:0", "/l"], "bad port"),
        (&["status", "-c", "/chroot-only", "/l"], "no servers"),
    ];
    for (args, expected) in cases {
        let out = output(args).await;
        assert_usage_error(args, &out, expected);
    }
    let out = output(&["run", "-c", "zk1:99999", "/l", "--", "true"]).await;
    assert!(text(&out.stderr).contains("expected host:port[,host:port...][/chroot]"));
    // From the environment too.
    let out = zklock(&["status", "/l"])
        .env("ZKLOCK_CONNECT", "zk1:port")
        .output()
        .await
        .unwrap();
    assert_usage_error(&["status", "/l"], &out, "bad port");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_fails_fast_with_the_os_reason() {
    // A port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hosts = format!("127.0.0.1:{port}");
    // With --connect-timeout 0: one try (by default a refused connection is tried again for 5 s, below).
    for args in [
        vec!["run", "-c", &hosts, "--connect-timeout", "0", "/l", "--", "true"],
        vec!["status", "-c", &hosts, "--connect-timeout", "0", "/l"],
    ] {
        let start = Instant::now();
        let out = output(&args).await;
        let elapsed = start.elapsed();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{args:?}: {stderr}");
        assert!(elapsed < Duration::from_secs(3), "{args:?} took {elapsed:?}");
        assert!(stderr.contains(&hosts), "{stderr}");
        assert!(stderr.contains("Connection refused"), "{stderr}");
        assert!(!stderr.contains("timeout"), "{stderr}");
    }
    // By default, tried again for --connect-timeout (5 s), and said so.
    let out = output(&["status", "-c", &hosts, "--connect-timeout", "1s", "/l"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
    assert!(
        stderr.contains("Connection refused") && stderr.contains(" times over "),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_chroot_is_named() {
    let served = serve().await;
    let hosts = format!("{}/no-such-chroot", served.hosts);
    let out = output(&["run", "-c", &hosts, "/l", "--", "true"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
    assert!(
        stderr.contains("the chroot /no-such-chroot does not exist"),
        "{stderr}"
    );
    // Once it exists, the same connect string works.
    client(&served.hosts)
        .await
        .create(
            "/no-such-chroot",
            b"",
            &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let out = output(&["run", "-c", &hosts, "/l", "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_without_double_dash_gets_a_hint() {
    for args in [
        vec!["run", "/lock", "ls", "-l"],
        vec!["elect", "--kill-after", "1s", "/e", "./scheduler"],
    ] {
        let out = output(&args).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{args:?}: {stderr}");
        assert!(stderr.contains("put -- before the command"), "{stderr}");
    }
    let out = output(&["run", "/lock", "ls", "-l"]).await;
    assert!(
        text(&out.stderr).contains("zklock run /lock -- ls -l"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_listens_on_loopback_2181_by_default() {
    // The dry run binds the port and lets it go: 2181 may be in use on this machine, which it then says.
    let free = std::net::TcpListener::bind("127.0.0.1:2181").is_ok();
    let out = output(&["serve", "--dry-run"]).await;
    if free {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("would listen on 127.0.0.1:2181 "),
            "{}",
            text(&out.stdout)
        );
    } else {
        assert_eq!(out.status.code(), Some(exit::OS_ERROR), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("cannot listen on 127.0.0.1:2181: address in use"));
    }
    let port = zklock_testkit::ports::free_port().unwrap();
    let out = output(&["serve", "--dry-run", "--listen", &format!("127.0.0.1:{port}")]).await;
    assert!(text(&out.stdout).contains(&format!("would listen on 127.0.0.1:{port} ")));
    // A port in use fails the dry run as it would fail the start (issue 33.9).
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = busy.local_addr().unwrap().to_string();
    let out = output(&["serve", "--dry-run", "--listen", &address]).await;
    assert_eq!(out.status.code(), Some(exit::OS_ERROR), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("cannot listen on {address}: address in use")));
    let out = output(&["serve", "--help"]).await;
    assert!(text(&out.stdout).contains("127.0.0.1:2181"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_a_busy_port_says_so() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = busy.local_addr().unwrap().to_string();
    let out = output(&["serve", "--listen", &address]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::OS_ERROR), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {address}: address in use")),
        "{stderr}"
    );
    drop(busy);
}

/// `serve --extended-types` takes TTL nodes; without it a TTL create is Unimplemented, as ZooKeeper answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_ttl_nodes_only_with_extended_types() {
    let ttl = zookeeper_client::CreateMode::Persistent
        .with_acls(zookeeper_client::Acls::anyone_all())
        .with_ttl(std::time::Duration::from_secs(60));
    let plain = serve().await;
    let err = client(&plain.hosts)
        .await
        .create("/t", b"", &ttl)
        .await
        .unwrap_err();
    assert_eq!(err, zookeeper_client::Error::Unimplemented);
    let extended = serve_with(&["--extended-types"]).await;
    let client = client(&extended.hosts).await;
    client.create("/t", b"", &ttl).await.unwrap();
    assert!(client.check_stat("/t").await.unwrap().is_some());
}
