//! One client connection: a reader loop (bytes → frames → requests) and a writer task (queued frames →
//! socket, each released only once the log is durable up to the zxid it depends on).
//!
//! Requests pipelined behind the ConnectRequest are simply read after it: the handshake is processed
//! synchronously when its frame arrives, so they find the session established, in order.

use bytes::{Buf, BytesMut};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Notify};
use zklock_codec::frame::decode_frame;
use zklock_codec::Id;

use crate::fourlw;
use crate::ops::{self, session::Handshake, Flow};
use crate::shared::{IpSlot, Shared};
use crate::state::{Conn, ConnShared, Durable, Outgoing};

/// Serves one accepted socket until it closes.
pub async fn serve(shared: Arc<Shared>, socket: TcpStream, peer: SocketAddr, _slot: IpSlot) {
    let _ = socket.set_nodelay(true);
    let (mut rd, wr) = socket.into_split();
    let cancel = shared.shutdown.child_token();
    let mut buf = BytesMut::with_capacity(8 * 1024);

    // A four-letter word replaces the length prefix of the first frame.
    while buf.len() < 4 {
        tokio::select! {
            n = rd.read_buf(&mut buf) => match n {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = cancel.cancelled() => return,
        }
    }
    if let Some(cmd) = fourlw::detect(&buf[..4]) {
        fourlw::answer(&shared, cmd, wr).await;
        return;
    }

    let (tx, rx) = mpsc::unbounded_channel();
    let conn_shared = Arc::new(ConnShared {
        outstanding: AtomicUsize::new(0),
        drained: Notify::new(),
        cancel: cancel.clone(),
        received: AtomicUsize::new(0),
        sent: AtomicUsize::new(0),
    });
    let id = shared.lock().add_conn(Conn {
        tx,
        shared: conn_shared.clone(),
        session: 0,
        peer,
        auth: vec![Id {
            scheme: "ip".into(),
            id: peer.ip().to_string(),
        }],
        last_op: "NA",
        last_reply_zxid: 0,
    });
    let writer = tokio::spawn(write_loop(
        rx,
        wr,
        shared.durable_rx.clone(),
        shared.durable.clone(),
        conn_shared.clone(),
    ));

    let max_frame = shared.config.max_frame_len;
    let max_outstanding = shared.config.max_outstanding_per_connection.max(1);
    let mut established = false;
    'conn: loop {
        loop {
            // Bounded outstanding replies: stop taking requests (TCP then pushes back on the client) until
            // the writer drains. Checked per frame, so a burst already in the buffer is bounded too.
            while conn_shared.outstanding.load(Ordering::SeqCst) >= max_outstanding {
                tokio::select! {
                    _ = conn_shared.drained.notified() => {}
                    _ = cancel.cancelled() => break 'conn,
                }
            }
            let (body, used) = match decode_frame(&buf, max_frame) {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "bad frame; closing connection");
                    break 'conn;
                }
            };
            let flow = {
                let mut st = shared.lock();
                if established {
                    ops::handle(&mut st, id, body)
                } else {
                    ops::session::connect(&mut st, id, body, &shared.limits).map(|h| {
                        established = h == Handshake::Established;
                        if established {
                            Flow::Continue
                        } else {
                            Flow::Close
                        }
                    })
                }
            };
            buf.advance(used);
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Close) => break 'conn,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "closing connection");
                    break 'conn;
                }
            }
        }
        tokio::select! {
            n = rd.read_buf(&mut buf) => match n {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "read failed");
                    break;
                }
            },
            _ = cancel.cancelled() => break,
        }
    }
    {
        let mut st = shared.lock();
        st.close_conn(id);
        st.remove_conn(id);
    }
    let _ = writer.await;
}

/// Drains a connection's queue to the socket, batching whatever is ready into one write.
async fn write_loop(
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut wr: OwnedWriteHalf,
    mut durable_rx: watch::Receiver<i64>,
    durable: Arc<Durable>,
    cs: Arc<ConnShared>,
) {
    let mut out: Vec<u8> = Vec::with_capacity(8 * 1024);
    let mut replies = 0usize;
    let mut closing = false;
    'outer: while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            let (after, frame) = match msg {
                Outgoing::Frame { after, bytes, reply } => {
                    replies += usize::from(reply);
                    (after, Some(bytes))
                }
                Outgoing::Close { after } => {
                    closing = true;
                    (after, None)
                }
            };
            if *durable_rx.borrow() < after {
                // Not durable yet: send what is ready first, then wait for the group commit.
                if flush(&mut wr, &mut out, &mut replies, &cs).await.is_err() {
                    break 'outer;
                }
                let ok = durable_rx
                    .wait_for(|d| *d >= after || durable.failed.load(Ordering::SeqCst))
                    .await
                    .is_ok();
                if !ok || durable.failed.load(Ordering::SeqCst) {
                    break 'outer;
                }
            }
            if let Some(bytes) = frame {
                out.extend_from_slice(&bytes);
                cs.sent.fetch_add(1, Ordering::Relaxed);
            }
            if closing {
                break;
            }
            next = rx.try_recv().ok();
        }
        if flush(&mut wr, &mut out, &mut replies, &cs).await.is_err() || closing {
            break;
        }
    }
    let _ = wr.shutdown().await;
    // Stop the reader too (it may be waiting for bytes that will never be answered).
    cs.cancel.cancel();
}

async fn flush(
    wr: &mut OwnedWriteHalf,
    out: &mut Vec<u8>,
    replies: &mut usize,
    cs: &ConnShared,
) -> std::io::Result<()> {
    if !out.is_empty() {
        wr.write_all(out).await?;
        out.clear();
    }
    if *replies > 0 {
        cs.outstanding.fetch_sub(*replies, Ordering::SeqCst);
        *replies = 0;
        cs.drained.notify_one();
    }
    Ok(())
}
