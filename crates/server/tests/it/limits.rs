//! Hostile or broken clients (issue 24): memory bounded in bytes per connection, connections without a session or
//! stalled mid-frame closed, the metrics endpoint not held by partial requests, four-letter words limited to
//! ZooKeeper's safe defaults. Each bound is small in the test's configuration so each attack takes a moment; each
//! check has a control that shows it fails without the limit.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_codec::*;
use zklock_server::{Server, ServerConfig, DEFAULT_SESSIONLESS_CNXN_TIMEOUT};

use crate::common::{client, new_session, server, server_with, Raw, WAIT};

/// 1,000,000 bytes: the "1 MB node" of the issue (under jute.maxbuffer).
const BIG: usize = 1_000_000;

async fn big_node(server: &Server, path: &str) {
    let zk = client(server).await;
    let opts = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    zk.create(path, &vec![7u8; BIG], &opts)
        .await
        .expect("create the big node");
}

/// A connection with a 4 KiB receive buffer, a session, and `n` pipelined `getData` of `path` it never reads.
async fn never_reading_reader(addr: SocketAddr, path: &str, n: usize) -> Raw {
    let mut raw = Raw::connect_small(addr, 4096).await;
    raw.handshake(&new_session(30_000)).await;
    let mut bytes = Vec::new();
    for xid in 1..=n as i32 {
        let start = frame::begin_frame(&mut bytes);
        RequestHeader {
            xid,
            op: OpCode::GetData.into(),
        }
        .encode(&mut bytes);
        GetDataRequest {
            path: path.into(),
            watch: false,
        }
        .encode(&mut bytes);
        frame::end_frame(&mut bytes, start);
    }
    // Fits in the socket buffers (tens of bytes a request), so the write completes although the server stops
    // reading.
    tokio::time::timeout(WAIT, raw.stream.write_all(&bytes))
        .await
        .expect("requests written in time")
        .expect("write");
    raw
}

/// The p99 of `n` `exists` round trips of a second client, in milliseconds.
async fn exists_p99_ms(server: &Server, n: usize) -> f64 {
    zklock_testkit::exists_p99_ms(&client(server).await, n, || {}).await
}

/// Waits until the server's unsent bytes stop growing (three equal readings in a row, 20 ms apart: the bytes
/// wait in outboxes whose clients read nothing, so nothing changes them any more) and returns the highest seen.
async fn settled_pending_bytes(server: &Server) -> usize {
    let (mut last, mut same, mut highest) = (usize::MAX, 0, 0);
    let deadline = Instant::now() + WAIT;
    while same < 3 && Instant::now() < deadline {
        let now = server.figures().expect("serving").pending_output_bytes;
        highest = highest.max(now);
        same = if now == last { same + 1 } else { 0 };
        last = now;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    highest
}

/// Three connections pipeline `getData` of a 1 MB node and read nothing: the server stops reading them once a
/// connection's unsent replies pass `max_pending_bytes`, so it holds at most that plus one reply per connection,
/// and a second client's `exists` stays fast. Control: with an unbounded budget one such connection alone makes the
/// server hold far more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_reading_clients_hold_a_bounded_number_of_bytes() {
    const BUDGET: usize = 64 * 1024;
    let server = server_with(ServerConfig {
        max_pending_bytes: BUDGET,
        ..Default::default()
    })
    .await;
    big_node(&server, "/big").await;
    let mut attackers = Vec::new();
    for _ in 0..3 {
        attackers.push(never_reading_reader(server.local_addr(), "/big", 300).await);
    }
    let held = settled_pending_bytes(&server).await;
    let p99 = exists_p99_ms(&server, 200).await;
    let bound = 3 * (BUDGET + BIG + 1024);
    eprintln!("held {held} bytes for 3 attackers (bound {bound}); exists p99 {p99:.2} ms");
    assert!(held <= bound, "held {held} > {bound}");
    assert!(held >= BIG, "the attack did queue replies ({held})");
    assert!(p99 < 100.0, "exists p99 {p99:.2} ms during the attack");
    drop(attackers);
    server.shutdown().await.unwrap();

    // Control: without the byte budget (only the 1,000 replies bound), one never-reading connection makes the
    // server hold tens of replies: the check above would fail.
    let server = server_with(ServerConfig {
        max_pending_bytes: usize::MAX,
        ..Default::default()
    })
    .await;
    big_node(&server, "/big").await;
    let attacker = never_reading_reader(server.local_addr(), "/big", 40).await;
    let held = settled_pending_bytes(&server).await;
    assert!(held > bound, "without the budget {held} bytes are held");
    drop(attacker);
    server.shutdown().await.unwrap();
}

/// A connection with a persistent recursive watch on `path`, a 4 KiB receive buffer, that never reads.
async fn never_reading_watcher(addr: SocketAddr, path: &str) -> (Raw, ConnectResponse) {
    let mut raw = Raw::connect_small(addr, 4096).await;
    let session = raw.handshake(&new_session(30_000)).await;
    let (h, _) = raw
        .call(
            OpCode::AddWatch,
            &AddWatchRequest {
                path: path.into(),
                mode: AddWatchMode::PersistentRecursive.into(),
            },
        )
        .await;
    assert_eq!(h.err, 0);
    (raw, session)
}

/// Writes that notify a never-reading watcher: once its unsent notifications would pass the limit, the connection
/// is closed (counted in mntr), and the session lives on (the client resumes it). Control: without the limit the
/// same writes leave the connection open with more than the limit queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_never_reads_is_disconnected_and_keeps_its_session() {
    const LIMIT: usize = 256 * 1024;
    for limit in [LIMIT, 0] {
        let server = server_with(ServerConfig {
            max_pending_notification_bytes: limit,
            ..Default::default()
        })
        .await;
        let zk = client(&server).await;
        let opts = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        zk.create("/w", b"", &opts).await.unwrap();
        // A 100 KB name: each notification carries the path.
        let node = format!("/w/{}", "n".repeat(100_000));
        zk.create(&node, b"", &opts).await.unwrap();
        let (mut watcher, session) = never_reading_watcher(server.local_addr(), "/w").await;
        // 60 notifications of 100 KB: 6 MB, far past the limit and what the kernel's socket buffers take (up to
        // tcp_wmem's 4 MB).
        for _ in 0..60 {
            zk.set_data(&node, b"x", None).await.unwrap();
        }
        let figures = server.figures().unwrap();
        if limit == 0 {
            assert_eq!(figures.slow_connections_closed, 0);
            assert!(
                figures.pending_output_bytes > LIMIT,
                "without the limit the notifications pile up: {}",
                figures.pending_output_bytes
            );
            assert!(
                !watcher.closed_within(Duration::from_millis(300)).await,
                "still open"
            );
        } else {
            assert_eq!(figures.slow_connections_closed, 1, "counted");
            assert!(watcher.closed().await, "the watcher's connection is closed");
            assert!(server.figures().unwrap().pending_output_bytes < LIMIT);
            // The session lives on: the client resumes it on a new connection.
            let resume = ConnectRequest {
                time_out: 30_000,
                session_id: session.session_id,
                passwd: session.passwd.clone(),
                ..Default::default()
            };
            let (_again, resumed) = Raw::session_with(server.local_addr(), &resume).await;
            assert_eq!(resumed.session_id, session.session_id, "same session");
            assert!(resumed.time_out > 0, "not expired");
        }
        server.shutdown().await.unwrap();
    }
}

/// A connection that sends nothing, or part of a connect request, is closed after the sessionless deadline; an
/// established session that stalls in the middle of a frame is closed after its session timeout, while one that
/// pings stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_without_a_session_or_stalled_mid_frame_are_closed() {
    assert_eq!(
        ServerConfig::default().sessionless_cnxn_timeout,
        DEFAULT_SESSIONLESS_CNXN_TIMEOUT
    );
    assert_eq!(
        DEFAULT_SESSIONLESS_CNXN_TIMEOUT,
        Duration::from_secs(10),
        "ZooKeeper's default"
    );
    let deadline = Duration::from_millis(400);
    let server = server_with(ServerConfig {
        sessionless_cnxn_timeout: deadline,
        tick_time: Duration::from_millis(100),
        ..Default::default()
    })
    .await;
    let addr = server.local_addr();

    let start = Instant::now();
    let mut silent = Raw::connect(addr).await;
    let mut partial = Raw::connect(addr).await;
    partial.send_raw(&[0, 0, 0, 45, 0, 0]).await;
    let mut half_word = Raw::connect(addr).await;
    half_word.send_raw(b"ru").await;
    assert!(silent.closed().await && partial.closed().await && half_word.closed().await);
    assert!(start.elapsed() >= deadline, "not before the deadline");

    // Established with a 600 ms session timeout, then half a frame and nothing more.
    let (mut stalled, resp) = Raw::session_with(addr, &new_session(600)).await;
    assert_eq!(resp.time_out, 600);
    let (mut pinging, _) = Raw::session_with(addr, &new_session(600)).await;
    let stalled_at = Instant::now();
    stalled.send_raw(&[0, 0, 0, 20, 0, 0, 0]).await;
    // The other one sends a complete request every 150 ms for 1.5 s: well past both deadlines, and stays open.
    for _ in 0..10 {
        let (h, _) = pinging.exists("/", false).await;
        assert_eq!(h.err, 0);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(stalled.closed().await, "the stalled connection is closed");
    assert!(stalled_at.elapsed() >= Duration::from_millis(600));
    assert!(
        !pinging.closed_within(Duration::from_millis(50)).await,
        "the pinging one is not"
    );
    server.shutdown().await.unwrap();
}

/// 60 connections that never send anything fill the per-IP cap (the 61st is refused at once), and are closed
/// after the sessionless deadline: a new session from the same IP then succeeds, well within 20 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_lock_an_ip_out() {
    let server = server_with(ServerConfig {
        sessionless_cnxn_timeout: Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    let addr = server.local_addr();
    assert_eq!(ServerConfig::default().max_client_cnxns, 60);
    let start = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..60 {
        idle.push(Raw::connect(addr).await);
    }
    // The cap holds: one more is closed without a session (the control: the IP is locked out now).
    let mut refused = Raw::connect(addr).await;
    refused.send_record(&new_session(30_000)).await;
    assert!(refused.read_frame().await.is_none(), "over the cap: closed");
    for conn in &mut idle {
        assert!(conn.closed().await, "an idle connection is closed");
    }
    let (_, session) = Raw::session(addr).await;
    assert_ne!(session.session_id, 0);
    let took = start.elapsed();
    eprintln!("a new session after {took:?}");
    assert!(took < Duration::from_secs(20));
    server.shutdown().await.unwrap();
}

/// A four-letter word's whole answer.
async fn ask(addr: SocketAddr, word: &str) -> String {
    tokio::time::timeout(WAIT, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(word.as_bytes()).await.unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out).await;
        out
    })
    .await
    .expect("answered in time")
}

/// A server answering the four-letter words `words` (its whitelist).
async fn answering(words: &[&str]) -> Server {
    server_with(ServerConfig {
        four_letter_words: words.iter().map(|w| w.to_string()).collect(),
        ..Default::default()
    })
    .await
}

/// By default only `srvr`, `ruok` and `isro` are answered; every other word gets ZooKeeper 3.8's exact refusal
/// (checked against a real 3.8.0 with no whitelist configured). `*` restores them all; `srvr` is answered whatever
/// the list says, as in ZooKeeper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_letter_words_default_to_zookeepers_safe_set() {
    let server = server_with(ServerConfig::default()).await;
    let addr = server.local_addr();
    assert_eq!(ask(addr, "ruok").await, "imok");
    assert_eq!(ask(addr, "isro").await, "rw");
    assert!(ask(addr, "srvr").await.starts_with("Zookeeper version: "));
    for word in [
        "dump", "cons", "stat", "envi", "wchc", "wchp", "conf", "mntr", "wchs",
    ] {
        assert_eq!(
            ask(addr, word).await,
            format!("{word} is not executed because it is not in the whitelist.\n")
        );
    }
    server.shutdown().await.unwrap();

    let all = answering(&["*"]).await;
    let addr = all.local_addr();
    assert!(ask(addr, "dump").await.starts_with("SessionTracker dump:"));
    assert!(ask(addr, "mntr").await.contains("zk_server_state\tstandalone"));
    assert!(ask(addr, "conf").await.contains("clientPort="));
    all.shutdown().await.unwrap();

    let listed = answering(&["mntr"]).await;
    let addr = listed.local_addr();
    assert!(ask(addr, "mntr").await.contains("zk_slow_connections_closed\t0"));
    assert!(
        ask(addr, "srvr").await.starts_with("Zookeeper version: "),
        "always"
    );
    assert!(
        ask(addr, "ruok").await.contains("not in the whitelist"),
        "listed words only"
    );
    listed.shutdown().await.unwrap();
}

/// A scrape, on a fresh connection.
async fn scrape(addr: SocketAddr) -> Option<String> {
    get(addr, "/metrics").await
}

/// The whole answer to `GET path` on the metrics endpoint at `addr`, or `None` when it gives none in time.
pub async fn get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    tokio::time::timeout(WAIT, s.read_to_string(&mut out))
        .await
        .ok()?
        .ok()?;
    (!out.is_empty()).then_some(out)
}

/// 64 partial HTTP requests fill the metrics endpoint (a 65th connection gets nothing), and are closed after the
/// header deadline, so a scrape succeeds seconds later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partial_requests_do_not_hold_the_metrics_endpoint() {
    let mut server = server_with(ServerConfig::default()).await;
    let metrics = server
        .serve_metrics("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    assert!(scrape(metrics).await.unwrap().starts_with("HTTP/1.1 200"));
    let start = Instant::now();
    let mut partial = Vec::new();
    for _ in 0..64 {
        let mut s = TcpStream::connect(metrics).await.unwrap();
        s.write_all(b"GET /metr").await.unwrap();
        partial.push(s);
    }
    assert_eq!(scrape(metrics).await, None, "full: the control");
    for s in &mut partial {
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(WAIT, s.read_to_end(&mut rest)).await;
        assert!(closed.is_ok(), "a partial request is closed in time");
    }
    let body = scrape(metrics)
        .await
        .expect("a scrape after the partial requests went");
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    let took = start.elapsed();
    eprintln!("scraped again after {took:?}");
    assert!(took < Duration::from_secs(10));
    server.shutdown().await.unwrap();
}

/// One connection's identities are bounded (issue 33.19): `auth` packets with ever new digest credentials are
/// answered OK up to `MOST_IDS` identities (the connection's `ip` id is one), then `AuthFailed` and the connection
/// closed; the same credential again adds nothing. Meanwhile another client is served. Control: the last packet
/// under the bound is answered OK, so the refusal is the bound's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_holds_a_bounded_number_of_identities() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let auth = |i: usize| AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: format!("user{i}:pw").into_bytes(),
    };
    let digests = zklock_server::MOST_IDS - 1;
    for i in 0..digests {
        raw.send_xid(-4, OpCode::Auth, &auth(i)).await;
    }
    raw.send_xid(-4, OpCode::Auth, &auth(0)).await;
    for i in 0..=digests {
        let (h, _) = raw.reply().await;
        assert_eq!((h.xid, h.err), (-4, 0), "auth {i} of {digests} and one again: OK");
    }
    let other = client(&server).await;
    other.check_stat("/").await.expect("another client is served");
    raw.send_xid(-4, OpCode::Auth, &auth(digests)).await;
    let (h, _) = raw.reply().await;
    assert_eq!(h.err, i32::from(ErrorCode::AuthFailed), "one identity too many");
    assert!(raw.closed().await, "and the connection closed");
    other
        .check_stat("/")
        .await
        .expect("another client is still served");
}
