//! Sessions on the wire: the handshake's echo and clamping, unknown and future sessions, a session moved to
//! another connection, and expiry without pings.

use std::time::Duration;

use zklock_codec::*;
use zklock_server::ServerConfig;

use super::create;
use crate::common::{client, server, server_with, Raw, WAIT};

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
