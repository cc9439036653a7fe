//! Wire-level behaviour checked with raw frames.

use std::time::Duration;
use zklock_codec::*;
use zklock_server::ServerConfig;

use crate::common::{client, server, server_with, Raw, WAIT};

fn create(path: &str, data: Option<&[u8]>, flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: data.map(<[u8]>::to_vec),
        acl: Acl::open_unsafe(),
        flags,
    }
}

fn err(code: ErrorCode) -> i32 {
    code.into()
}

#[tokio::test]
async fn handshake_echoes_read_only_only_when_sent() {
    let server = server().await;
    let (_, java) = Raw::session(server.local_addr()).await;
    assert_eq!(java.read_only, Some(false));
    assert_eq!(java.passwd.len(), 16);
    assert_ne!(java.passwd, vec![0; 16]);
    assert_eq!(java.time_out, 30_000);
    assert!(java.session_id >> 56 == 1, "top byte is the server id");
    let too_short = ConnectRequest {
        time_out: 1,
        ..Default::default()
    };
    let (_rust, resp) = Raw::session_with(server.local_addr(), &too_short).await;
    assert_eq!(resp.read_only, None);
    assert_eq!(resp.time_out, 4_000, "clamped to 2 x tickTime");
    assert_ne!(resp.session_id, java.session_id);
}

#[tokio::test]
async fn unknown_session_gets_the_expired_reply_then_close() {
    let server = server().await;
    let unknown = ConnectRequest {
        time_out: 30_000,
        session_id: 0x0123,
        passwd: vec![1; 16],
        read_only: Some(false),
        ..Default::default()
    };
    let (mut raw, resp) = Raw::session_with(server.local_addr(), &unknown).await;
    assert_eq!((resp.time_out, resp.session_id, resp.passwd), (0, 0, vec![0; 16]));
    assert!(raw.closed().await);
}

#[tokio::test]
async fn client_from_the_future_is_refused() {
    let server = server().await;
    let mut raw = Raw::connect(server.local_addr()).await;
    raw.send_record(&ConnectRequest {
        last_zxid_seen: i64::MAX,
        time_out: 30_000,
        ..Default::default()
    })
    .await;
    assert!(raw.read_frame().await.is_none());
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order_after_the_handshake() {
    let server = server().await;
    let mut raw = Raw::connect(server.local_addr()).await;
    // Connect, a create, a read and a ping in one write, before any reply.
    let mut bytes = Vec::new();
    for frame in [
        ConnectRequest {
            time_out: 30_000,
            ..Default::default()
        }
        .to_bytes(),
        [
            RequestHeader {
                xid: 1,
                op: OpCode::Create.into(),
            }
            .to_bytes(),
            create("/p", Some(b"v"), 0).to_bytes(),
        ]
        .concat(),
        [
            RequestHeader {
                xid: 2,
                op: OpCode::GetData.into(),
            }
            .to_bytes(),
            GetDataRequest {
                path: "/p".into(),
                watch: false,
            }
            .to_bytes(),
        ]
        .concat(),
        RequestHeader {
            xid: -2,
            op: OpCode::Ping.into(),
        }
        .to_bytes(),
    ] {
        bytes.extend_from_slice(&(frame.len() as i32).to_be_bytes());
        bytes.extend_from_slice(&frame);
    }
    raw.send_raw(&bytes).await;
    let resp = ConnectResponse::from_bytes(&raw.read_frame().await.unwrap()).unwrap();
    assert_ne!(resp.session_id, 0);
    let (h1, body) = raw.reply().await;
    assert_eq!((h1.xid, h1.err), (1, 0));
    assert_eq!(CreateResponse::from_bytes(&body).unwrap().path, "/p");
    let (h2, body) = raw.reply().await;
    assert_eq!(
        (h2.xid, h2.err, h2.zxid),
        (2, 0, h1.zxid),
        "reads report the last zxid"
    );
    assert_eq!(
        GetDataResponse::from_bytes(&body).unwrap().data,
        Some(b"v".to_vec())
    );
    let (h3, body) = raw.reply().await;
    assert_eq!((h3.xid, h3.err, body.len()), (-2, 0, 0));
}

#[tokio::test]
async fn null_and_empty_data_round_trip_distinctly() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    for (path, data) in [("/null", None), ("/empty", Some(&b""[..]))] {
        assert_eq!(raw.call(OpCode::Create, &create(path, data, 0)).await.0.err, 0);
        let (h, body) = raw
            .call(
                OpCode::GetData,
                &GetDataRequest {
                    path: path.into(),
                    watch: false,
                },
            )
            .await;
        assert_eq!(h.err, 0);
        assert_eq!(
            GetDataResponse::from_bytes(&body).unwrap().data,
            data.map(<[u8]>::to_vec)
        );
    }
}

#[tokio::test]
async fn invalid_paths_are_bad_arguments_in_zookeeper_order() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let cases: &[(&str, i32, ErrorCode)] = &[
        ("a", 0, ErrorCode::BadArguments),
        ("/a\u{0}b", 0, ErrorCode::BadArguments),
        ("/zookeeper/", 0, ErrorCode::BadArguments),
        ("/zookeeper//x", 0, ErrorCode::NoNode),
        ("/.", 0, ErrorCode::BadArguments),
        ("/x/..", 0, ErrorCode::NoNode),
        ("/\u{1}", 0, ErrorCode::BadArguments),
        ("/\u{fff0}", 0, ErrorCode::BadArguments),
        ("/\u{1F600}", 0, ErrorCode::BadArguments),
        ("/a", 7, ErrorCode::BadArguments),
        ("/ttl", 5, ErrorCode::Unimplemented),
        ("/zookeeper", 0, ErrorCode::NodeExists),
        ("/", 0, ErrorCode::NodeExists),
    ];
    for (path, flags, code) in cases {
        let (h, _) = raw.call(OpCode::Create, &create(path, None, *flags)).await;
        assert_eq!(h.err, err(*code), "create {path:?} flags {flags}");
    }
    for path in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config", "/"] {
        let (h, _) = raw
            .call(
                OpCode::Delete,
                &DeleteRequest {
                    path: path.into(),
                    version: -1,
                },
            )
            .await;
        assert_eq!(h.err, err(ErrorCode::BadArguments), "delete {path}");
    }
    // The trailing slash is fine for a sequential create: the suffix completes the name.
    let (h, body) = raw.call(OpCode::Create, &create("/zookeeper/", None, 2)).await;
    assert_eq!(h.err, 0);
    assert_eq!(
        CreateResponse::from_bytes(&body).unwrap().path,
        "/zookeeper/0000000000"
    );
}

#[tokio::test]
async fn every_write_consumes_a_zxid_even_when_it_fails() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let (h1, _) = raw.call(OpCode::Create, &create("/z", None, 0)).await;
    let (h2, _) = raw.call(OpCode::Create, &create("/z", None, 0)).await;
    assert_eq!(h2.err, err(ErrorCode::NodeExists));
    assert_eq!(h2.zxid, h1.zxid + 1);
    let (h3, _) = raw.exists("/z", false).await;
    assert_eq!(h3.zxid, h2.zxid, "reads do not");
    let (h4, _) = raw
        .call(
            OpCode::Delete,
            &DeleteRequest {
                path: "/nope".into(),
                version: -1,
            },
        )
        .await;
    assert_eq!((h4.err, h4.zxid), (err(ErrorCode::NoNode), h3.zxid + 1));
}

#[tokio::test]
async fn failed_multi_uses_zookeepers_encoding() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let ops = MultiRequest {
        ops: vec![
            MultiOp::Create {
                op: OpCode::Create,
                req: create("/ok", None, 0),
            },
            MultiOp::Delete(DeleteRequest {
                path: "/missing".into(),
                version: -1,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/ok".into(),
                data: None,
                version: -1,
            }),
        ],
    };
    let (h, body) = raw.call(OpCode::Multi, &ops).await;
    assert_eq!(h.err, 0, "a failed multi still has header err 0");
    let resp = MultiResponse::from_bytes(&body).unwrap();
    assert_eq!(
        resp.results,
        vec![
            MultiResult::Error(0),
            MultiResult::Error(-101),
            MultiResult::Error(-2)
        ]
    );
    let (h, _) = raw.exists("/ok", false).await;
    assert_eq!(h.err, err(ErrorCode::NoNode));
}

#[tokio::test]
async fn notification_precedes_the_reply_of_the_write_that_caused_it() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let (h, _) = raw.exists("/n", true).await;
    assert_eq!(h.err, err(ErrorCode::NoNode));
    let xid = raw.send(OpCode::Create, &create("/n", None, 0)).await;
    let (first, body) = raw.reply().await;
    assert_eq!(first.xid, xid::NOTIFICATION);
    let ev = WatcherEvent::from_bytes(&body).unwrap();
    assert_eq!((ev.event_type, ev.state, ev.path.as_str()), (1, 3, "/n"));
    let (second, _) = raw.reply().await;
    assert_eq!(second.xid, xid);
    // addWatch replies with a 4-byte body.
    let (h, body) = raw
        .call(
            OpCode::AddWatch,
            &AddWatchRequest {
                path: "/n".into(),
                mode: 0,
            },
        )
        .await;
    assert_eq!((h.err, body.len()), (0, 4));
    // As in ZooKeeper 3.8, checkWatches/removeWatches match a watcher whatever its mode; 3.8 has no watcher type 4.
    for (op, watcher_type, expected) in [
        (OpCode::CheckWatches, 2, 0),
        (OpCode::RemoveWatches, 3, 0),
        (OpCode::RemoveWatches, 3, err(ErrorCode::NoWatcher)),
        (OpCode::RemoveWatches, 4, err(ErrorCode::MarshallingError)),
    ] {
        let request = RemoveWatchesRequest {
            path: "/n".into(),
            watcher_type,
        };
        let (h, _) = raw.call(op, &request).await;
        assert_eq!(h.err, expected, "{op:?} of watcher type {watcher_type}");
    }
}

#[tokio::test]
async fn set_watches_reports_missed_events() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let (h0, _) = raw.call(OpCode::Create, &create("/d", None, 0)).await;
    raw.call(
        OpCode::SetData,
        &SetDataRequest {
            path: "/d".into(),
            data: None,
            version: -1,
        },
    )
    .await;
    raw.call(OpCode::Create, &create("/c", None, 0)).await;
    let w = SetWatches {
        relative_zxid: h0.zxid,
        data_watches: vec!["/d".into(), "/gone".into()],
        exist_watches: vec!["/c".into(), "/later".into()],
        child_watches: vec![],
    };
    raw.send_xid(xid::SET_WATCHES, OpCode::SetWatches, &w).await;
    let mut events = vec![];
    loop {
        let (h, body) = raw.reply().await;
        if h.xid == xid::SET_WATCHES {
            break;
        }
        let e = WatcherEvent::from_bytes(&body).unwrap();
        events.push((e.event_type, e.path));
    }
    events.sort();
    assert_eq!(
        events,
        vec![(1, "/c".into()), (2, "/gone".into()), (3, "/d".into())]
    );
    // The exist watch on /later was armed.
    let xid = raw.send(OpCode::Create, &create("/later", None, 0)).await;
    let (h, body) = raw.reply().await;
    assert_eq!(h.xid, -1);
    assert_eq!(WatcherEvent::from_bytes(&body).unwrap().path, "/later");
    assert_eq!(raw.reply().await.0.xid, xid);
}

#[tokio::test]
async fn big_values_work_and_oversized_frames_close_the_connection() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let big = vec![7u8; 512 * 1024];
    let (h, _) = raw.call(OpCode::Create, &create("/big", Some(&big), 0)).await;
    assert_eq!(h.err, 0);
    let (_, body) = raw
        .call(
            OpCode::GetData,
            &GetDataRequest {
                path: "/big".into(),
                watch: false,
            },
        )
        .await;
    assert_eq!(
        GetDataResponse::from_bytes(&body).unwrap().data.unwrap().len(),
        big.len()
    );
    // Just the length prefix of a 2 MiB frame is enough: the server must hang up.
    raw.send_raw(&(2 * 1024 * 1024i32).to_be_bytes()).await;
    assert!(raw.closed().await);
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    raw.send_raw(&(-5i32).to_be_bytes()).await;
    assert!(raw.closed().await);
}

#[tokio::test]
async fn malformed_and_unknown_requests_close_the_connection() {
    let server = server().await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    // A create whose body is cut short: no reply, just a close.
    raw.send_raw(&[0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]).await;
    assert!(raw.closed().await);
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    // SASL is not configured: like ZooKeeper, answer with a null token (zxid 0) and carry on.
    let (h, body) = raw.call(OpCode::Sasl, &SyncRequest { path: "/".into() }).await;
    assert_eq!((h.err, h.zxid, body), (0, 0, vec![0xff; 4]));
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    raw.send_xid(5, OpCode::Ping, &()).await;
    raw.send_raw(&[0, 0, 0, 8, 0, 0, 0, 6, 0, 0, 0, 10]).await; // opcode 10 does not exist
    assert_eq!(raw.reply().await.0.xid, -2);
    let (h, _) = raw.reply().await;
    assert_eq!((h.xid, h.zxid, h.err), (6, -1, err(ErrorCode::Unimplemented)));
    assert!(raw.closed().await);
}

#[tokio::test]
async fn session_moves_to_a_new_connection_and_close_deletes_ephemerals() {
    let server = server().await;
    let (mut a, resp) = Raw::session(server.local_addr()).await;
    assert_eq!(a.call(OpCode::Create, &create("/eph", None, 1)).await.0.err, 0);
    let mut b = Raw::connect(server.local_addr()).await;
    let req = ConnectRequest {
        time_out: 30_000,
        session_id: resp.session_id,
        passwd: vec![9; 16],
        ..Default::default()
    };
    assert_eq!(b.handshake(&req).await.session_id, 0, "wrong password is refused");
    let mut b = Raw::connect(server.local_addr()).await;
    let req = ConnectRequest {
        passwd: resp.passwd.clone(),
        ..req
    };
    assert_eq!(b.handshake(&req).await.session_id, resp.session_id);
    assert!(a.closed().await, "the old connection is dropped");
    let (h, body) = b.exists("/eph", true).await;
    assert_eq!(h.err, 0);
    assert_eq!(
        StatResponse::from_bytes(&body).unwrap().stat.ephemeral_owner,
        resp.session_id
    );
    // closeSession: the deleted event (this connection watches /eph) comes before the close reply.
    let close = b.send(OpCode::CloseSession, &()).await;
    let (h, body) = b.reply().await;
    assert_eq!(
        (h.xid, WatcherEvent::from_bytes(&body).unwrap().event_type),
        (-1, 2)
    );
    assert_eq!(b.reply().await.0.xid, close);
    assert!(b.closed().await);
}

#[tokio::test]
async fn sessions_expire_without_pings() {
    let server = server_with(ServerConfig {
        tick_time: Duration::from_millis(50),
        ..Default::default()
    })
    .await;
    let short = ConnectRequest {
        time_out: 100,
        ..Default::default()
    };
    let (mut raw, resp) = Raw::session_with(server.local_addr(), &short).await;
    assert_eq!(resp.time_out, 100);
    assert_eq!(
        raw.call(OpCode::Create, &create("/short", None, 1)).await.0.err,
        0
    );
    let watcher = client(&server).await;
    let (stat, gone) = watcher.check_and_watch_stat("/short").await.unwrap();
    if stat.is_some() {
        let e = tokio::time::timeout(WAIT, gone.changed())
            .await
            .expect("expiry in time");
        assert_eq!(e.event_type, zookeeper_client::EventType::NodeDeleted);
    }
    assert!(raw.closed().await, "the expired session's connection is closed");
}

#[tokio::test]
async fn four_letter_words() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server_with(ServerConfig {
        four_letter_words: vec!["ruok".into(), "envi".into()],
        ..Default::default()
    })
    .await;
    async fn ask(addr: std::net::SocketAddr, cmd: &[u8]) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(cmd).await.unwrap();
        let mut out = String::new();
        tokio::time::timeout(WAIT, s.read_to_string(&mut out))
            .await
            .unwrap()
            .unwrap();
        out
    }
    assert_eq!(ask(server.local_addr(), b"ruok").await, "imok");
    assert!(ask(server.local_addr(), b"envi")
        .await
        .contains("zookeeper.version=3.8.0"));
    assert_eq!(
        ask(server.local_addr(), b"dump").await,
        "dump is not executed because it is not in the whitelist.\n"
    );
    // As in ZooKeeper, which adds srvr to every whitelist.
    assert!(ask(server.local_addr(), b"srvr")
        .await
        .starts_with("Zookeeper version: "));
}

#[tokio::test]
async fn a_burst_beyond_the_outstanding_bound_is_answered_in_order() {
    let server = server_with(ServerConfig {
        max_outstanding_per_connection: 2,
        ..Default::default()
    })
    .await;
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let mut bytes = Vec::new();
    for i in 0..300 {
        let body = [
            RequestHeader {
                xid: i + 1,
                op: OpCode::Create.into(),
            }
            .to_bytes(),
            create(&format!("/burst{i}"), None, 0).to_bytes(),
        ]
        .concat();
        bytes.extend_from_slice(&(body.len() as i32).to_be_bytes());
        bytes.extend_from_slice(&body);
    }
    raw.send_raw(&bytes).await;
    for i in 0..300 {
        let (h, _) = raw.reply().await;
        assert_eq!((h.xid, h.err), (i + 1, 0));
    }
}

#[tokio::test]
async fn wildcard_listen_reports_a_loopback_connect_string() {
    let server = server_with(ServerConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..Default::default()
    })
    .await;
    let connect = server.connect_string();
    assert_eq!(connect, format!("127.0.0.1:{}", server.local_addr().port()));
    let c = client(&server).await;
    assert!(c.check_stat("/zookeeper").await.unwrap().is_some());
}

/// 20 MiB of replies to a client that does not read: far more than the socket buffers hold, so the connection's
/// outbox is left with a full socket and partly written frames. Other clients are served meanwhile, and once the
/// slow client reads it gets every reply, complete and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_holds_up_nobody_and_gets_every_reply_later() {
    let server = server().await;
    let (mut slow, _) = Raw::session(server.local_addr()).await;
    let big: Vec<u8> = (0..512 * 1024).map(|i| (i % 251) as u8).collect();
    let (h, _) = slow.call(OpCode::Create, &create("/big", Some(&big), 0)).await;
    assert_eq!(h.err, 0);
    let mut bytes = Vec::new();
    for xid in 100..140 {
        let body = [
            RequestHeader {
                xid,
                op: OpCode::GetData.into(),
            }
            .to_bytes(),
            GetDataRequest {
                path: "/big".into(),
                watch: false,
            }
            .to_bytes(),
        ]
        .concat();
        bytes.extend_from_slice(&(body.len() as i32).to_be_bytes());
        bytes.extend_from_slice(&body);
    }
    slow.send_raw(&bytes).await;

    let other = client(&server).await;
    for i in 0..20 {
        let path = format!("/other{i}");
        let mode = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        tokio::time::timeout(WAIT, other.create(&path, b"x", &mode))
            .await
            .expect("another client is served while one does not read")
            .unwrap();
    }

    for xid in 100..140 {
        let (h, body) = slow.reply().await;
        assert_eq!((h.xid, h.err), (xid, 0));
        assert_eq!(
            GetDataResponse::from_bytes(&body).unwrap().data.as_deref(),
            Some(&big[..])
        );
    }
}
