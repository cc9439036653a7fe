//! `zklock serve` under clients that never read (issue 24): its resident memory (VmRSS of the process) stays
//! bounded, and a second client's `exists` stays fast. The frames are written by hand: the attackers are raw
//! sockets with a 4 KiB receive buffer that send and never read.

use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;
use zookeeper_client as zk;

use crate::logs::Serve;
use crate::support::*;

/// The growth allowed while attacked (the bound).
const MAX_GROWTH: u64 = 64 << 20;

/// VmRSS of `pid`, in bytes.
fn rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb * 1024
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A ConnectRequest for a new session (30 s).
fn connect_request() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0i32.to_be_bytes()); // protocol version
    b.extend_from_slice(&0i64.to_be_bytes()); // last zxid seen
    b.extend_from_slice(&30_000i32.to_be_bytes());
    b.extend_from_slice(&0i64.to_be_bytes()); // session id
    b.extend_from_slice(&16i32.to_be_bytes());
    b.extend_from_slice(&[0; 16]);
    b.push(0); // read-only
    frame(&b)
}

/// A request: header (xid, opcode), then `rest`.
fn request(xid: i32, op: i32, rest: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&xid.to_be_bytes());
    b.extend_from_slice(&op.to_be_bytes());
    b.extend_from_slice(rest);
    frame(&b)
}

/// Connects with a 4 KiB receive buffer, and sends `bytes` (a connect request and what follows it), never reading.
async fn never_reading(addr: SocketAddr, bytes: Vec<u8>) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.expect("connect");
    timeout(EVENTUALLY, stream.write_all(&bytes))
        .await
        .expect("the requests fit in the socket buffers")
        .expect("write");
    stream
}

/// `n` `exists` round trips of a client; returns the p99 in milliseconds, sampling the server's RSS after each.
async fn exists_p99_ms(c: &zk::Client, n: usize, pid: i32, peak: &mut u64) -> f64 {
    zklock_testkit::exists_p99_ms(c, n, || *peak = (*peak).max(rss(pid))).await
}

/// Three connections pipeline 3,000 `getData` of a 1 MB node each and read nothing: with the default
/// configuration the server grows by less than 64 MiB and a second client's `exists` p99 stays under 100 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reading_readers_do_not_grow_the_server() {
    let serve = Serve::start(&["serve", "--listen", "127.0.0.1:0"]).await;
    let pid = serve.pid();
    let c = client(&serve.addr.to_string()).await;
    c.create("/big", &vec![1u8; 1_000_000], &persistent())
        .await
        .unwrap();
    // Warm: one 1 MB reply read in full, so the baseline has what any reader costs.
    assert_eq!(c.get_data("/big").await.unwrap().0.len(), 1_000_000);
    let before = rss(pid);

    let mut get = Vec::new();
    string(&mut get, "/big");
    get.push(0);
    let mut attackers = Vec::new();
    for _ in 0..3 {
        let mut bytes = connect_request();
        for xid in 1..=3000 {
            bytes.extend(request(xid, 4, &get));
        }
        attackers.push(never_reading(serve.addr, bytes).await);
    }
    let mut peak = rss(pid);
    let p99 = exists_p99_ms(&c, 300, pid, &mut peak).await;
    let growth = peak.saturating_sub(before);
    eprintln!(
        "getData attack: RSS {} -> peak {} MiB (+{:.1} MiB); exists p99 {p99:.2} ms",
        before >> 20,
        peak >> 20,
        growth as f64 / (1 << 20) as f64
    );
    assert!(growth < MAX_GROWTH, "grew {growth} bytes");
    assert!(p99 < 100.0, "exists p99 {p99:.2} ms");
    drop(attackers);
    drop(c);
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
}

/// 30 connections with a persistent recursive watch that never read, and 150 writes whose notifications carry a
/// 100 KB path: each connection is closed when its unsent notifications would pass 1 MiB (counted in `mntr`), so
/// the server grows by less than 64 MiB (without the limit: 30 x 150 x 100 KB, 450 MB, less what the kernel holds).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reading_watchers_are_disconnected_before_they_grow_the_server() {
    let (_dir, config) = temp_file(
        "zoo.cfg",
        "maxClientPendingNotificationBytes=1048576\n4lw.commands.whitelist=mntr\n",
    );
    let serve = Serve::start(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ])
    .await;
    let pid = serve.pid();
    let c = client(&serve.addr.to_string()).await;
    c.create("/w", b"", &persistent()).await.unwrap();
    let node = format!("/w/{}", "p".repeat(100_000));
    c.create(&node, b"", &persistent()).await.unwrap();
    c.set_data(&node, b"warm", None).await.unwrap();
    let before = rss(pid);

    let mut add_watch = Vec::new();
    string(&mut add_watch, "/w");
    add_watch.extend_from_slice(&1i32.to_be_bytes()); // persistent recursive
    let mut watchers = Vec::new();
    for _ in 0..30 {
        let mut bytes = connect_request();
        bytes.extend(request(1, 106, &add_watch));
        watchers.push(never_reading(serve.addr, bytes).await);
    }
    let mut peak = rss(pid);
    // 15 MB for each watcher: past what the kernel's socket buffers take (up to tcp_wmem's 4 MB) and the limit.
    for _ in 0..150 {
        c.set_data(&node, b"x", None).await.unwrap();
        peak = peak.max(rss(pid));
    }
    let growth = peak.saturating_sub(before);
    let mntr = tokio::task::spawn_blocking({
        let addr = serve.addr;
        move || zklock_testkit::four_letter_word(addr, "mntr", EVENTUALLY).expect("mntr")
    })
    .await
    .unwrap();
    eprintln!(
        "notification attack: RSS {} -> peak {} MiB (+{:.1} MiB)",
        before >> 20,
        peak >> 20,
        growth as f64 / (1 << 20) as f64
    );
    assert!(
        mntr.contains("zk_slow_connections_closed\t30\n"),
        "every watcher was closed: {mntr}"
    );
    assert!(growth < MAX_GROWTH, "grew {growth} bytes");
    drop(watchers);
    drop(c);
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("closing a connection whose client does not read its notifications"),
        "logged: {stderr}"
    );
}
