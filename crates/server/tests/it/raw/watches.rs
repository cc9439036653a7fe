//! Watches on the wire: a notification before the reply of the write that caused it, addWatch and
//! removeWatches replies, and setWatches reporting missed events.

use zklock_codec::*;

use super::{create, err};
use crate::common::{server, Raw};

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
