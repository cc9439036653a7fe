//! One client connection: a single task reads frames and handles them; replies and notifications go out
//! through the connection's [`Outbox`], written by whichever thread makes them sendable (this task for
//! replies that are durable already, the storage writer thread for replies that waited for an fsync).
//!
//! Requests pipelined behind the ConnectRequest are simply read after it: the handshake is processed
//! synchronously when its frame arrives, so they find the session established, in order.
//!
//! Limits a client cannot get around (docs/operations.md, "Exposure and limits"):
//! - reading stops while the connection's unsent replies and notifications exceed
//!   [`crate::ServerConfig::max_pending_bytes`] or its replies in flight `max_outstanding_per_connection`;
//! - a connection without a complete connect request (or four-letter word) after
//!   [`crate::ServerConfig::sessionless_cnxn_timeout`] is closed, and so is an established one from which no
//!   complete request arrives within its negotiated session timeout (clients ping every third of it): a stalled
//!   partial frame, or a client stopped behind back-pressure, does not hold a connection (nor its memory) forever.

use bytes::{Buf, BytesMut};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use zklock_codec::frame::decode_frame;
use zklock_codec::Id;

use crate::fourlw;
use crate::ops::{self, session::Handshake, Flow};
use crate::outbox::Outbox;
use crate::shared::{IpSlot, Shared};
use crate::state::Conn;
use crate::stream::Stream;

/// Serves one accepted socket (or a TLS connection's plaintext, see `tls.rs`) until it closes. `peer` is the
/// client's address; the connection's identities are `ip:<peer>` and then `ids` (a TLS client certificate's).
pub async fn serve(shared: Arc<Shared>, socket: Stream, peer: SocketAddr, _slot: IpSlot, ids: Vec<Id>) {
    if let Stream::Tcp(tcp) = &socket {
        let _ = tcp.set_nodelay(true);
    }
    // Small to start with: a session's requests are mostly tens of bytes, and ten thousand idle sessions with 8 KiB
    // each were 80 MB of resident memory (docs/benchmarks.md, "Server size"). It grows when a read fills it
    // (`read_some`) and to the size of a frame whose length is known (`handle_buffered`).
    let mut buf = BytesMut::with_capacity(INITIAL_READ_BUFFER);
    // Until the handshake completes (then: the last complete request plus the session timeout).
    let mut deadline = Instant::now() + shared.config.sessionless_cnxn_timeout;

    // A four-letter word replaces the length prefix of the first frame.
    while buf.len() < 4 {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                tracing::debug!(%peer, "no connect request in time; closing");
                return;
            }
            open = read_more(&socket, &mut buf, peer) => if !open {
                return;
            },
            _ = shared.shutdown.cancelled() => return,
        }
    }
    if let Some(cmd) = fourlw::detect(&buf[..4]) {
        // Bounded like the rest: a client that never reads the answer does not keep the connection.
        let _ = tokio::time::timeout_at(deadline, fourlw::answer(&shared, cmd, socket)).await;
        return;
    }
    if shared.durable.failed() {
        // Not serving (the log cannot be written): no session, like ZooKeeper closing a client connection while
        // it is not running. The client tries its next server.
        tracing::debug!(%peer, "not serving; closing a new client connection");
        return;
    }
    // Cancelled at shutdown and when the log fails (a failure between the check above and here cancels it
    // at once).
    let cancel = shared.durable.serving().child_token();

    let stream = Arc::new(socket);
    let outbox = Arc::new(Outbox::new(
        stream.clone(),
        cancel.clone(),
        shared.latency.clone(),
        shared.notification_limit.clone(),
        Some(peer),
    ));
    let id = shared.lock().add_conn(Conn {
        outbox: outbox.clone(),
        session: 0,
        peer,
        auth: crate::acl::Identities::new(
            std::iter::once(Id {
                scheme: "ip".into(),
                id: peer.ip().to_string(),
            })
            .chain(ids)
            .collect(),
        ),
        last_op: "NA",
        last_reply_zxid: 0,
        sasl: None,
    });

    let mut established = None;
    'conn: loop {
        loop {
            // Bounded outstanding replies and unsent bytes: stop taking requests (TCP then pushes back on the
            // client) until they drain. Checked per frame, so a burst already in the buffer is bounded too.
            while over_budget(&shared, &outbox) {
                // Announce the wait first, then re-check: a frame written meanwhile has seen the flag.
                outbox.throttle();
                if !over_budget(&shared, &outbox) {
                    break;
                }
                tokio::select! {
                    alive = wait_for_output(&shared, &stream, &outbox) => if !alive {
                        break 'conn;
                    },
                    () = tokio::time::sleep_until(deadline) => {
                        tracing::info!(%peer, "client read nothing of its replies within its session timeout; closing");
                        break 'conn;
                    }
                }
            }
            let before = established;
            let handled = handle_buffered(&shared, id, peer, &outbox, &mut buf, &mut established);
            if let Some(timeout) = established {
                if handled.frames > 0 || before.is_none() {
                    deadline = Instant::now() + timeout;
                }
            }
            match handled.stop {
                Buffered::NeedInput => break,
                Buffered::Throttled => {}
                // Other connections' turn at the state lock, then on with the rest of the burst.
                Buffered::Yield => tokio::task::yield_now().await,
                // Stop reading; the outbox closes the socket once the replies before the close are out.
                Buffered::Close => break 'conn,
            }
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                if established.is_none() {
                    tracing::debug!(%peer, "no connect request in time; closing");
                } else {
                    tracing::info!(%peer, "no complete request within the session timeout; closing");
                }
                break;
            }
            open = read_more(&stream, &mut buf, peer) => if !open {
                break;
            },
            alive = wait_for_output(&shared, &stream, &outbox) => if !alive {
                break;
            },
        }
    }
    {
        let mut st = shared.lock();
        st.close_conn(id);
        st.remove_conn(id);
    }
    // What is queued goes out once durable (e.g. at server shutdown: the replies of writes in their fsync),
    // for a bounded time: a client that stopped reading must not hold the connection open.
    let _ = tokio::time::timeout(DRAIN, async {
        while !outbox.is_closed() && output_step(&shared, &stream, &outbox).await {}
    })
    .await;
    outbox.abort();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// Waits until the socket is readable and reads what it has into `buf`; `false` once the connection is over (the
/// peer closed it or the read failed). Cancel-safe: nothing is read until the socket is ready, and then at once.
async fn read_more(socket: &Stream, buf: &mut BytesMut, peer: SocketAddr) -> bool {
    if socket.readable().await.is_err() {
        return false;
    }
    match read_some(socket, buf) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "read failed");
            false
        }
    }
}

/// How long a closing connection may take to write out its queued frames.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the connection holds too much unsent output to take another request.
fn over_budget(shared: &Shared, outbox: &Outbox) -> bool {
    outbox.outstanding.load(Ordering::SeqCst) >= shared.config.max_outstanding_per_connection.max(1)
        || outbox.pending_bytes.load(Ordering::SeqCst) >= shared.config.max_pending_bytes.max(1)
}

/// What [`handle_buffered`] did.
struct Handled {
    /// Complete frames handled.
    frames: usize,
    /// Why it stopped.
    stop: Buffered,
}

/// What [`handle_buffered`] stopped at.
enum Buffered {
    /// No complete frame left: read more.
    NeedInput,
    /// The outstanding-reply bound is reached.
    Throttled,
    /// [`FRAMES_PER_LOCK`] frames were handled: the lock is let go before the rest.
    Yield,
    /// The connection must close (after its queued replies).
    Close,
}

/// The most frames one connection handles under one acquisition of the state lock. A burst of pipelined requests
/// costs one lock per this many; a flood of them (64 KiB of `auth` packets is 1,600, each a SHA-1) no longer holds
/// every other client for milliseconds (issue 33.19: a bystander's p99 during a digest auth flood).
const FRAMES_PER_LOCK: usize = 64;

/// Handles the complete frames in `buf`, up to [`FRAMES_PER_LOCK`], under one acquisition of the state lock
/// (pipelined requests cost one lock and, for replies durable already, one `writev` when the guard is dropped).
fn handle_buffered(
    shared: &Shared,
    id: crate::watch::ConnId,
    peer: SocketAddr,
    outbox: &Outbox,
    buf: &mut BytesMut,
    established: &mut Option<Duration>,
) -> Handled {
    let max_frame = shared.config.max_frame_len;
    let mut st = shared.lock();
    let mut frames = 0;
    let stop = loop {
        if over_budget(shared, outbox) {
            break Buffered::Throttled;
        }
        if frames == FRAMES_PER_LOCK {
            break Buffered::Yield;
        }
        let (body, used) = match decode_frame(buf, max_frame) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                // Room for the rest of the frame at once, when its length is known (bounded by `max_frame`).
                if let Some(len) = buf
                    .get(..4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
                {
                    if len <= max_frame {
                        buf.reserve((4 + len).saturating_sub(buf.len()));
                    }
                }
                break Buffered::NeedInput;
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "bad frame; closing connection");
                break Buffered::Close;
            }
        };
        frames += 1;
        let flow = if established.is_some() {
            ops::handle(&mut st, id, body)
        } else {
            ops::session::connect(&mut st, id, body, &shared.limits).map(|h| {
                if h != Handshake::Established {
                    return Flow::Close;
                }
                // From now on, a complete request is due within the negotiated session timeout.
                let timeout_ms = st
                    .conns
                    .get(&id)
                    .and_then(|c| st.sessions.get(c.session))
                    .map_or(shared.limits.max_ms, |s| s.timeout_ms);
                *established = Some(Duration::from_millis(
                    u64::try_from(timeout_ms.max(1)).unwrap_or(1),
                ));
                Flow::Continue
            })
        };
        buf.advance(used);
        match flow {
            Ok(Flow::Continue) => {}
            Ok(Flow::Close) => {
                break Buffered::Close;
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "closing connection");
                break Buffered::Close;
            }
        }
    };
    // The guard's drop writes the replies that are durable already.
    Handled { frames, stop }
}

/// The read buffer a connection starts with.
const INITIAL_READ_BUFFER: usize = 512;

/// The most a read buffer grows by doubling (a bigger frame still gets room for itself).
const MAX_READ_BUFFER: usize = 64 * 1024;

/// Reads what the socket has. A read that did not fill the buffer has drained the socket, so the readiness is
/// cleared right away instead of by one more read that would only return `WouldBlock`: one syscall per request
/// saved. (Safe with tokio's readiness tracking: data arriving after the read sets it again.)
fn read_some(stream: &Stream, buf: &mut BytesMut) -> std::io::Result<usize> {
    if buf.len() == buf.capacity() {
        // Full: a burst of pipelined requests. Double (up to a bound), so that bursts take few reads.
        buf.reserve(buf.capacity().clamp(INITIAL_READ_BUFFER, MAX_READ_BUFFER));
    }
    let mut drained = 0;
    let result = stream.try_io(tokio::io::Interest::READABLE, || {
        let space = buf.capacity() - buf.len();
        let n = stream.try_read_buf(buf)?;
        if n > 0 && n < space {
            drained = n;
            // Reported as WouldBlock so that tokio clears the readiness; the bytes are in `buf`.
            return Err(std::io::ErrorKind::WouldBlock.into());
        }
        Ok(n)
    });
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && drained > 0 => Ok(drained),
        other => other,
    }
}

/// Waits for something on the output side: the socket writable again after it filled up (then flushes),
/// replies drained, or the connection told to end. `false` when the connection must end.
async fn wait_for_output(shared: &Shared, stream: &Stream, outbox: &Arc<Outbox>) -> bool {
    if outbox.cancel.is_cancelled() || outbox.is_closed() {
        return false;
    }
    tokio::select! {
        alive = output_step(shared, stream, outbox) => alive && !outbox.cancel.is_cancelled(),
        _ = outbox.cancel.cancelled() => false,
    }
}

/// One wait on the output side: if the socket filled up, until it is writable (then flushes what is ready);
/// otherwise until the outbox wakes us (replies drained, socket full, closed). `false` if the socket failed.
async fn output_step(shared: &Shared, stream: &Stream, outbox: &Arc<Outbox>) -> bool {
    if outbox.is_blocked() {
        if stream.writable().await.is_err() {
            return false;
        }
        outbox.unblock(&shared.durable);
    } else {
        outbox.wake.notified().await;
    }
    true
}
