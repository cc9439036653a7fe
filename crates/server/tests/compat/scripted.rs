//! Scripted differential scenarios for what random streams leave out: requests that end the connection,
//! frame-size limits, watches re-registered with setWatches after a reconnect, and four-letter words.
//! Each scenario runs against the embedded server and real ZooKeeper; the transcripts must be equal.

use std::net::SocketAddr;
use std::time::Duration;

use zklock_codec::jute::{put_bool, put_buffer, put_i32, put_i64, put_str};
use zklock_codec::Decode;
use zklock_server::{Server, ServerConfig};

use crate::support::who_am_i_ids;
use crate::wire::{request_frame, Reply, Session};

fn path_body(path: &str, watch: Option<bool>) -> Vec<u8> {
    let mut w = Vec::new();
    put_str(&mut w, path);
    if let Some(watch) = watch {
        put_bool(&mut w, watch);
    }
    w
}

/// A setData body: `data` at `path` if its version is `version` (-1: any).
fn set_data_body(path: &str, data: &[u8], version: i32) -> Vec<u8> {
    let mut w = path_body(path, None);
    put_buffer(&mut w, Some(data));
    put_i32(&mut w, version);
    w
}

/// A delete body: `path` if its version is `version` (-1: any).
fn delete_body(path: &str, version: i32) -> Vec<u8> {
    let mut w = path_body(path, None);
    put_i32(&mut w, version);
    w
}

/// An auth body: `credential` for `scheme`.
fn auth_body(scheme: &str, credential: &[u8]) -> Vec<u8> {
    let mut w = Vec::new();
    put_i32(&mut w, 0);
    put_str(&mut w, scheme);
    put_buffer(&mut w, Some(credential));
    w
}

fn reply_text(reply: Option<Reply>) -> String {
    match reply {
        None => "closed".into(),
        Some(r) => format!("err {} body {} bytes", r.header.err, r.body.len()),
    }
}

/// Runs `scenario` on the embedded server and on real ZooKeeper and compares the transcripts.
async fn differential<F, Fut>(scenario: F) -> Vec<String>
where
    F: Fn(SocketAddr, String) -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    // Every four-letter word, as the testkit's ZooKeeper is configured (`4lw.commands.whitelist=*`).
    let server = Server::start(ServerConfig {
        four_letter_words: vec!["*".into()],
        ..ServerConfig::default()
    })
    .await
    .expect("embedded server starts");
    let ours = scenario(server.local_addr(), zklock_testkit::unique_path("scripted")).await;
    let real_addr = zklock_testkit::shared_standalone().member_addr(0);
    let theirs = scenario(real_addr, zklock_testkit::unique_path("scripted")).await;
    assert_eq!(ours, theirs, "embedded (left) differs from ZooKeeper 3.8 (right)");
    server.shutdown().await.expect("shutdown");
    ours
}

async fn closing_requests(addr: SocketAddr, _base: String) -> Vec<String> {
    let mut t = Vec::new();
    let mut s = Session::open(addr, 30_000).await;
    t.push(format!(
        "unknown opcode 999: {}",
        reply_text(s.call(999, &[]).await)
    ));
    t.push(format!("then closed: {}", s.conn.closed_by_server().await));

    let mut s = Session::open(addr, 30_000).await;
    let auth = auth_body("nosuchscheme", b"x");
    t.push(format!(
        "auth unknown scheme: {}",
        reply_text(s.call(100, &auth).await)
    ));
    t.push(format!("then closed: {}", s.conn.closed_by_server().await));

    let mut s = Session::open(addr, 30_000).await;
    let auth = auth_body("digest", b"someone:secret");
    t.push(format!("auth digest: {}", reply_text(s.call(100, &auth).await)));
    let who = s.call(107, &[]).await;
    t.push(format!("whoAmI: {}", reply_text(who.clone())));
    if let Some(r) = who {
        // ZooKeeper keeps a connection's identities in a hash set: their order is unspecified.
        t.push(format!("whoAmI: {:?}", who_am_i_ids(&r.body)));
    }
    t.push(format!("close: {}", s.close().await));
    t
}

/// The notifications `s` has received since the last call, as `type path` with `base` shown as `B`.
fn drain_events(s: &mut Session, base: &str) -> Vec<String> {
    s.events
        .drain(..)
        .map(|(k, p)| format!("{k} {}", p.replace(base, "B")))
        .collect()
}

/// The end of a scenario of two sessions: pings `a` (the notifications it is owed arrive before the reply),
/// records the ping's reply and, under `label`, the notifications `a` received since the last drain, and closes
/// both sessions.
async fn finish(mut t: Vec<String>, mut a: Session, mut b: Session, base: &str, label: &str) -> Vec<String> {
    t.push(format!("ping: {}", reply_text(a.call(11, &[]).await)));
    let events = drain_events(&mut a, base);
    t.push(format!("{label}: {events:?}"));
    assert!(a.close().await);
    assert!(b.close().await);
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_end_the_connection() {
    let t = differential(closing_requests).await;
    assert_eq!(t[0], "unknown opcode 999: err -6 body 0 bytes");
    assert_eq!(t[2], "auth unknown scheme: err -115 body 0 bytes");
    assert_eq!(t[6], r#"whoAmI: ["digest:someone", "ip:127.0.0.1"]"#);
}

/// The auth schemes a client may name beside `digest`, and digest ids in ACLs (issue 33.20): `ip` is answered OK
/// (the connection's address is already its id), `x509` on a connection without a client certificate is refused
/// and closed, and a digest id is `user:hash` as Java's `split(":")` counts it (a trailing empty hash is no hash).
async fn auth_schemes_and_digest_ids(addr: SocketAddr, base: String) -> Vec<String> {
    let mut t = Vec::new();
    let mut s = Session::open(addr, 30_000).await;
    t.push(format!(
        "auth ip: {}",
        reply_text(s.call(100, &auth_body("ip", b"anything")).await)
    ));
    t.push(format!("then ping: {}", reply_text(s.call(11, &[]).await)));
    let who = s.call(107, &[]).await;
    t.push(format!("whoAmI: {:?}", who.map(|r| who_am_i_ids(&r.body))));
    t.push(format!("close: {}", s.close().await));

    let mut s = Session::open(addr, 30_000).await;
    t.push(format!(
        "auth x509 without a certificate: {}",
        reply_text(s.call(100, &auth_body("x509", b"")).await)
    ));
    t.push(format!("then closed: {}", s.conn.closed_by_server().await));

    let client = zookeeper_client::Client::connect(&addr.to_string())
        .await
        .expect("connect");
    for (i, id) in [
        "alice:",
        "alice::",
        ":hash",
        "alice:hash:",
        "alice:h:x",
        "alice:hash",
    ]
    .iter()
    .enumerate()
    {
        let path = format!("{base}-{i}");
        let outcome = crate::support::create_with_acl(
            &client,
            &path,
            zookeeper_client::Permission::ALL,
            ("digest", id),
        )
        .await;
        t.push(format!("ACL digest:{id}: {outcome}"));
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_schemes_and_digest_ids_as_zookeeper() {
    let t = differential(auth_schemes_and_digest_ids).await;
    assert_eq!(t[0], "auth ip: err 0 body 0 bytes");
    assert_eq!(t[4], "auth x509 without a certificate: err -115 body 0 bytes");
    assert_eq!(t[6], "ACL digest:alice:: InvalidAcl", "{t:#?}");
}

async fn frame_limits(addr: SocketAddr, base: String) -> Vec<String> {
    let mut t = Vec::new();
    let mut s = Session::open(addr, 30_000).await;
    let big = vec![b'x'; 512 * 1024];
    t.push(format!("create 512 KiB: {}", s.create(&base, &big, 0).await));
    let got = s.call(4, &path_body(&base, Some(false))).await;
    t.push(format!("get 512 KiB: {}", reply_text(got)));
    // Just over jute.maxbuffer: the server drops the connection without a reply.
    let mut huge = Vec::new();
    put_str(&mut huge, &format!("{base}-huge"));
    put_buffer(&mut huge, Some(&vec![b'y'; 2 * 1024 * 1024]));
    put_i32(&mut huge, 0);
    put_i32(&mut huge, 0);
    // The server may stop reading once it has seen the length; a failed write is part of the answer.
    let _ = s.conn.send_raw(&request_frame(99, 1, &huge)).await;
    let closed = s.conn.closed_by_server().await;
    t.push(format!("2 MiB frame: closed {closed}"));
    let mut s = Session::open(addr, 30_000).await;
    let delete = delete_body(&base, -1);
    t.push(format!("delete: {}", reply_text(s.call(2, &delete).await)));
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_size_limits() {
    let t = differential(frame_limits).await;
    assert_eq!(
        t[..3],
        [
            "create 512 KiB: 0",
            "get 512 KiB: err 0 body 524360 bytes",
            "2 MiB frame: closed true"
        ]
    );
}

/// Watches set on one connection, the connection dropped, changes made by another session, then the
/// session re-attached with setWatches(relative zxid): the missed changes are reported at once, and
/// watches on unchanged nodes are re-registered.
async fn set_watches(addr: SocketAddr, base: String) -> Vec<String> {
    let mut t = Vec::new();
    let mut a = Session::open(addr, 30_000).await;
    for p in ["", "/d", "/same", "/gone"] {
        assert_eq!(a.create(&format!("{base}{p}"), b"v", 0).await, 0);
    }
    let mut last_zxid = 0;
    for (op, p) in [(4, "/d"), (3, "/missing"), (8, ""), (4, "/same"), (4, "/gone")] {
        let r = a
            .call(op, &path_body(&format!("{base}{p}"), Some(true)))
            .await
            .unwrap();
        last_zxid = r.header.zxid;
    }
    let (id, password) = (a.id, a.password.clone());
    drop(a);
    let mut b = Session::open(addr, 30_000).await;
    let set = set_data_body(&format!("{base}/d"), b"changed", -1);
    t.push(format!("setData: {}", reply_text(b.call(5, &set).await)));
    t.push(format!(
        "create missing: {}",
        b.create(&format!("{base}/missing"), b"", 0).await
    ));
    let delete = delete_body(&format!("{base}/gone"), -1);
    t.push(format!("delete gone: {}", reply_text(b.call(2, &delete).await)));

    let mut a = Session::attach(addr, 30_000, id, &password)
        .await
        .expect("re-attach");
    let mut sw = Vec::new();
    put_i64(&mut sw, last_zxid);
    let list = |w: &mut Vec<u8>, paths: &[&str]| {
        put_i32(w, paths.len() as i32);
        for p in paths {
            put_str(w, &format!("{base}{p}"));
        }
    };
    list(&mut sw, &["/d", "/same", "/gone"]);
    list(&mut sw, &["/missing"]);
    list(&mut sw, &[""]);
    a.conn.send(-8, 101, &sw).await.unwrap();
    // Everything the setWatches produced arrives before the reply to the next request.
    let ping = a.call(11, &[]).await;
    t.push(format!("ping after setWatches: {}", reply_text(ping)));
    let mut events = drain_events(&mut a, &base);
    events.sort();
    t.push(format!("events: {events:?}"));
    // The watch on /same was re-registered: a change now fires it.
    let set = set_data_body(&format!("{base}/same"), b"later", -1);
    t.push(format!("setData same: {}", reply_text(b.call(5, &set).await)));
    finish(t, a, b, &base, "events").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_watches_after_reconnect() {
    let t = differential(set_watches).await;
    eprintln!("{t:#?}");
    // Not merely equal: the missed changes were reported (data changed, created, children changed, deleted).
    assert_eq!(
        t[4], r#"events: ["1 B/missing", "2 B/gone", "3 B/d", "4 B"]"#,
        "{t:#?}"
    );
    assert_eq!(t[7], r#"events: ["3 B/same"]"#, "{t:#?}");
}

async fn four_letter_words(addr: SocketAddr, _base: String) -> Vec<String> {
    let word = |w: &'static str| async move {
        tokio::task::spawn_blocking(move || {
            zklock_testkit::four_letter_word(addr, w, Duration::from_secs(30))
        })
        .await
        .expect("join")
        .expect("answer")
    };
    let mut t = vec![format!("ruok: {:?}", word("ruok").await)];
    let envi = word("envi").await;
    t.push(format!(
        "envi has zookeeper.version: {}",
        envi.contains("zookeeper.version=")
    ));
    let srvr = word("srvr").await;
    t.push(format!(
        "srvr mode: {:?}",
        srvr.lines().find(|l| l.starts_with("Mode:"))
    ));
    t.push(format!(
        "srvr has Zxid: {}",
        srvr.lines().any(|l| l.starts_with("Zxid: 0x"))
    ));
    let mntr = word("mntr").await;
    t.push(format!(
        "mntr has zk_server_state: {}",
        mntr.contains("zk_server_state\tstandalone")
    ));
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_letter_words_answer_like_zookeeper() {
    differential(four_letter_words).await;
}

/// ConnectResponse details: timeout clamping, the readOnly byte only when the client sent one, a
/// 16-byte password, and refusal of a client that has seen a newer zxid than the server.
async fn handshakes(addr: SocketAddr, _base: String) -> Vec<String> {
    let mut t = Vec::new();
    for (timeout, with_read_only) in [(1, true), (10_000, false), (1_000_000, true)] {
        let mut conn = crate::wire::Conn::connect(addr).await.unwrap();
        let mut request = crate::wire::connect_request(0, timeout, 0, &[]);
        if !with_read_only {
            request.pop();
        }
        let mut frame = (request.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&request);
        conn.send_raw(&frame).await.unwrap();
        let body = conn.read_frame().await.unwrap().expect("ConnectResponse");
        let resp = zklock_codec::ConnectResponse::from_bytes(&body).unwrap();
        t.push(format!(
            "asked {timeout} (readOnly sent: {with_read_only}): got {} bytes, timeout {}, password {} bytes, readOnly {:?}, id nonzero {}",
            body.len(),
            resp.time_out,
            resp.passwd.len(),
            resp.read_only,
            resp.session_id != 0
        ));
        conn.send(1, -11, &[]).await.unwrap();
        t.push(format!(
            "closed after closeSession: {}",
            conn.closed_by_server().await
        ));
    }
    // A client that has seen zxid 2^40 must go elsewhere: no session for it here.
    let mut conn = crate::wire::Conn::connect(addr).await.unwrap();
    let answer = conn
        .handshake(&crate::wire::connect_request(1 << 40, 30_000, 0, &[0; 16]))
        .await;
    t.push(format!(
        "lastZxidSeen ahead of the server: answered {:?}",
        answer.map(|r| r.map(|r| r.time_out))
    ));
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_details() {
    let t = differential(handshakes).await;
    eprintln!("{t:#?}");
    assert!(t[0].contains("timeout 4000"), "{t:#?}");
    assert!(t[4].contains("timeout 40000"), "{t:#?}");
}

/// Forty requests pipelined in one write: replies in request order with their xids, and another
/// session's notifications in the order of the writes.
async fn pipelined(addr: SocketAddr, base: String) -> Vec<String> {
    let mut t = Vec::new();
    let mut a = Session::open(addr, 30_000).await;
    assert_eq!(a.create(&base, b"", 0).await, 0);
    for i in 0..10 {
        assert_eq!(a.create(&format!("{base}/n{i}"), b"", 0).await, 0);
        a.exists(&format!("{base}/n{i}"), true).await.unwrap();
    }
    a.call(8, &path_body(&base, Some(true))).await.unwrap();
    let mut b = Session::open(addr, 30_000).await;
    let mut wire = Vec::new();
    let mut xid = 100;
    for i in 0..10 {
        let node = format!("{base}/n{i}");
        let set = set_data_body(&node, b"x", -1);
        let mut create = path_body(&format!("{base}/m{i}"), None);
        put_buffer(&mut create, None);
        put_i32(&mut create, 1);
        put_i32(&mut create, 31);
        put_str(&mut create, "world");
        put_str(&mut create, "anyone");
        put_i32(&mut create, 0);
        let delete = delete_body(&node, if i % 2 == 0 { -1 } else { 0 });
        for (op, body) in [
            (5, set),
            (4, path_body(&node, Some(false))),
            (1, create),
            (2, delete),
        ] {
            wire.extend_from_slice(&request_frame(xid, op, &body));
            xid += 1;
        }
    }
    b.conn.send_raw(&wire).await.unwrap();
    let mut replies = Vec::new();
    for _ in 0..40 {
        let r = b.conn.read_reply().await.unwrap().expect("reply");
        replies.push(format!("{}:{}", r.header.xid, r.header.err));
    }
    t.push(format!("replies: {replies:?}"));
    finish(t, a, b, &base, "events in order").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_and_notification_order() {
    let t = differential(pipelined).await;
    assert!(
        t[0].starts_with(r#"replies: ["100:0", "101:0", "102:0", "103:0", "104:0""#),
        "{t:#?}"
    );
}
