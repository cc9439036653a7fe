//! systemd's readiness protocol (`Type=notify`): `serve` says `READY=1` once it serves and `STOPPING=1` when it shuts
//! down; `elect` says `READY=1` once it campaigns, then in `STATUS=` that it leads, with its fencing token. The
//! messages are read from a `NOTIFY_SOCKET` of the test's own, as systemd would read them. And `elect --metrics`:
//! the leader gauge, read when `STATUS=` says it leads.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tokio::net::UnixDatagram;
use zklock_testkit::unique_path;

use crate::support::*;

/// A socket where `zklock` sends its notifications, and its path.
fn notify_socket() -> (tempfile::TempDir, std::path::PathBuf, UnixDatagram) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&path).unwrap();
    (dir, path, socket)
}

/// The next message, within a bound.
async fn next(socket: &UnixDatagram) -> String {
    let mut buf = vec![0u8; 4096];
    let len = eventually("a notification", socket.recv(&mut buf)).await.unwrap();
    String::from_utf8(buf[..len].to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_says_ready_once_it_serves_and_stopping_when_it_stops() {
    let (_dir, path, socket) = notify_socket();
    let mut serve = zklock(&["serve", "--listen", "127.0.0.1:0"])
        .env("NOTIFY_SOCKET", &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ready = next(&socket).await;
    assert!(
        ready.contains("READY=1\n") && ready.contains("STATUS=serving on 127.0.0.1:"),
        "{ready:?}"
    );
    // Ready means serving: a client connects at once.
    let addr = ready.split("serving on ").nth(1).unwrap().trim().to_owned();
    client(&addr).await;
    kill(Pid::from_raw(serve.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    let stopping = next(&socket).await;
    assert!(stopping.contains("STOPPING=1\n"), "{stopping:?}");
    let status = eventually("serve to exit", serve.wait()).await.unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_says_ready_when_it_campaigns_and_when_it_leads() {
    let hosts = zklock_testkit::hosts::embedded().await;
    let path = unique_path("cli-notify-elect");
    let (_dir, socket_path, socket) = notify_socket();
    let mut elect = zklock(&["elect", "-c", &hosts, &path, "--", "sleep", "60"])
        .env("NOTIFY_SOCKET", &socket_path)
        .spawn()
        .unwrap();
    let ready = next(&socket).await;
    assert_eq!(ready, format!("READY=1\nSTATUS=campaigning for {path}\n"));
    let leading = next(&socket).await;
    assert!(
        leading.starts_with(&format!("STATUS=leading {path} (fencing token ")),
        "{leading:?}"
    );
    kill(Pid::from_raw(elect.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    let stopping = next(&socket).await;
    assert_eq!(
        stopping,
        format!("STOPPING=1\nSTATUS=leaving the election of {path}\n")
    );
    let status = eventually("elect to exit", elect.wait()).await.unwrap();
    assert_eq!(status.code(), Some(128 + 15), "the command died of our SIGTERM");
    // Without NOTIFY_SOCKET nothing is sent, and nothing fails.
    let out = output(&["elect", "-c", &hosts, &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A GET of `http://addr/metrics`: the body.
async fn scrape(addr: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    eventually("the scrape", stream.read_to_string(&mut response))
        .await
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

/// `elect --metrics ADDR`: the leader gauge is 1 with the term's token while it leads (said by `STATUS=leading`),
/// beside the library's metrics; a second process on the same address exits 71 before campaigning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_serves_its_leadership_as_a_gauge() {
    let hosts = zklock_testkit::hosts::embedded().await;
    let path = unique_path("cli-elect-metrics");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let (_dir, socket_path, socket) = notify_socket();
    let mut elect = zklock(&[
        "elect",
        "-c",
        &hosts,
        "--metrics",
        &addr,
        &path,
        "--",
        "sleep",
        "60",
    ])
    .env("NOTIFY_SOCKET", &socket_path)
    .spawn()
    .unwrap();
    assert!(next(&socket).await.starts_with("READY=1\n"));
    let leading = next(&socket).await;
    let token = leading
        .split("fencing token ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .to_owned();
    let body = scrape(&addr).await;
    assert!(
        body.contains(&format!("zklock_elect_leader{{path=\"{path}\"}} 1")),
        "{body}"
    );
    assert!(
        body.contains(&format!("zklock_elect_fencing_token{{path=\"{path}\"}} {token}")),
        "{body}"
    );
    assert!(
        body.contains("zklock_acquire_wait_seconds"),
        "the library's metrics too: {body}"
    );
    let out = output(&["elect", "-c", &hosts, "--metrics", &addr, &path, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(71), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!("cannot serve metrics at {addr}")),
        "{}",
        text(&out.stderr)
    );
    kill(Pid::from_raw(elect.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    eventually("elect to exit", elect.wait()).await.unwrap();
}
