//! Frames: pipelined requests, big values and oversized frames, malformed and unknown requests, a burst beyond
//! the outstanding bound, and a client that stops reading.

use zklock_codec::*;
use zklock_server::ServerConfig;

use super::{create, err};
use crate::common::{client, server, server_with, Raw, WAIT};

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
