//! A TCP proxy between ZooKeeper clients and one server that injects faults: cut connections, lose one reply,
//! lose requests, play dead. It understands just enough of the framing to count requests and notifications and to find replies.
//!
//! Each client connection gets its own upstream connection. The first 4 bytes decide the mode: a four-letter word
//! (`ruok`, ...) is relayed byte for byte; anything else is the ZooKeeper protocol and relayed frame by frame.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::frame::{is_four_letter_word, read_frame, reply_xid, request_header, Read, NOTIFICATION_XID};

/// A fault-injecting TCP proxy listening on `127.0.0.1:<random port>` in front of one ZooKeeper server.
///
/// It runs on the tokio runtime that called [`Proxy::start`]; dropping it closes the listener and every relayed
/// connection.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: AbortHandle,
}

/// State shared by the acceptor, every relay task and the `Proxy` handle. The locks are std mutexes, not tokio
/// ones, because nothing awaits while holding them.
struct Shared {
    upstream: SocketAddr,
    /// `true` while the proxy plays dead.
    blackhole: watch::Sender<bool>,
    accepted: AtomicU64,
    notifications: AtomicU64,
    /// Notifications by the event type of their WatcherEvent (1 created, 2 deleted, 3 data changed, 4 children
    /// changed, …; −1 a session event).
    notifications_by_type: Mutex<HashMap<i32, u64>>,
    /// Bytes of whole frames relayed, server to clients and clients to server (ZooKeeper protocol only).
    bytes_to_clients: AtomicU64,
    bytes_to_server: AtomicU64,
    lost_replies: AtomicU64,
    lost_requests: AtomicU64,
    requests: Mutex<HashMap<i32, u64>>,
    /// Armed by [`Proxy::drop_reply_and_cut`]: the opcodes whose next request loses its reply.
    armed: Mutex<Option<Vec<i32>>>,
    /// Armed by [`Proxy::drop_requests_and_cut`]: the opcodes whose next requests are lost, and how many more.
    swallow: Mutex<Option<(Vec<i32>, u32)>>,
    connections: Mutex<Vec<AbortHandle>>,
}

impl Shared {
    fn count_request(&self, opcode: i32) {
        *lock(&self.requests).entry(opcode).or_default() += 1;
    }

    /// Disarms and returns `true` if `opcode` is armed: one-shot, whichever connection sends it first.
    fn take_armed(&self, opcode: i32) -> bool {
        let mut armed = lock(&self.armed);
        let hit = armed.as_ref().is_some_and(|opcodes| opcodes.contains(&opcode));
        if hit {
            *armed = None;
        }
        hit
    }

    /// Counts down and returns `true` if `opcode` is armed for [`Proxy::drop_requests_and_cut`].
    fn take_swallow(&self, opcode: i32) -> bool {
        let mut swallow = lock(&self.swallow);
        let Some((opcodes, left)) = swallow.as_mut() else {
            return false;
        };
        if !opcodes.contains(&opcode) {
            return false;
        }
        *left -= 1;
        if *left == 0 {
            *swallow = None;
        }
        true
    }

    fn track(&self, task: AbortHandle) {
        let mut connections = lock(&self.connections);
        connections.retain(|t| !t.is_finished());
        connections.push(task);
    }
}

/// A poisoned lock only means a relay task panicked; the counters are still meaningful.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Proxy {
    /// Starts a proxy on `127.0.0.1:0` forwarding to `upstream` (one server, e.g. [`crate::ZooKeeper::member_addr`]).
    ///
    /// # Errors
    /// The listening socket cannot be bound.
    pub async fn start(upstream: SocketAddr) -> io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            blackhole: watch::Sender::new(false),
            accepted: AtomicU64::new(0),
            notifications: AtomicU64::new(0),
            notifications_by_type: Mutex::new(HashMap::new()),
            bytes_to_clients: AtomicU64::new(0),
            bytes_to_server: AtomicU64::new(0),
            lost_replies: AtomicU64::new(0),
            lost_requests: AtomicU64::new(0),
            requests: Mutex::new(HashMap::new()),
            armed: Mutex::new(None),
            swallow: Mutex::new(None),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = tokio::spawn(accept_loop(listener, shared.clone())).abort_handle();
        tracing::debug!(%addr, %upstream, "proxy started");
        Ok(Proxy {
            addr,
            shared,
            acceptor,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `"127.0.0.1:<port>"` of the proxy, for `Client::connect`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The server the proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream
    }

    /// Closes every current connection (both sides), so clients see a connection loss and reconnect; new
    /// connections are accepted as usual.
    pub fn cut_all(&self) {
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        tracing::debug!(count = connections.len(), "proxy cutting all connections");
        for connection in connections {
            connection.abort();
        }
    }

    /// Arms a one-shot "lost reply" fault: the next request (on any connection) whose opcode is in `opcodes`
    /// (e.g. `&[1, 15]` for create and create2) is forwarded to the server, but the server's reply to it is
    /// swallowed and that connection is closed at that moment. The write happened; the client only sees a
    /// connection loss. Arming again replaces the previous set.
    pub fn drop_reply_and_cut(&self, opcodes: &[i32]) {
        *lock(&self.shared.armed) = Some(opcodes.to_vec());
    }

    /// Arms a "lost request" fault for the next `count` requests (on any connection) whose opcode is in `opcodes`:
    /// each is swallowed before it reaches the server and its connection is closed at that moment. The client
    /// sees a connection loss for a request that was never executed. Arming again replaces the previous one;
    /// `count` 0 disarms.
    pub fn drop_requests_and_cut(&self, opcodes: &[i32], count: u32) {
        *lock(&self.shared.swallow) = (count > 0).then(|| (opcodes.to_vec(), count));
    }

    /// Number of requests swallowed by [`Proxy::drop_requests_and_cut`] so far.
    pub fn lost_requests(&self) -> u64 {
        self.shared.lost_requests.load(Ordering::SeqCst)
    }

    /// Whether a [`Proxy::drop_reply_and_cut`] fault is still waiting for its request.
    pub fn is_armed(&self) -> bool {
        lock(&self.shared.armed).is_some()
    }

    /// While `on`, the proxy plays a dead server: frames on current connections are held (not forwarded, in either
    /// direction) and new connections are accepted but never answered. Switching it off forwards what was held and
    /// closes the connections that arrived meanwhile, so their clients reconnect.
    pub fn set_blackhole(&self, on: bool) {
        tracing::debug!(on, "proxy blackhole");
        self.shared.blackhole.send_replace(on);
    }

    /// Number of watch notifications (reply xid −1) forwarded to clients so far. A notification is counted before
    /// it is written, so a client that has seen it also sees it counted.
    pub fn notifications(&self) -> u64 {
        self.shared.notifications.load(Ordering::SeqCst)
    }

    /// Number of watch notifications of this event type (`WatcherEvent.type`: 1 NodeCreated, 2 NodeDeleted,
    /// 3 NodeDataChanged, 4 NodeChildrenChanged, −1 a session event) forwarded so far, counted like
    /// [`Proxy::notifications`].
    pub fn notifications_of(&self, event_type: i32) -> u64 {
        lock(&self.shared.notifications_by_type)
            .get(&event_type)
            .copied()
            .unwrap_or(0)
    }

    /// Bytes forwarded from the server to clients so far: whole frames (length prefix included) of the ZooKeeper
    /// protocol — replies, notifications, ping replies and the ConnectResponse; not four-letter words. Counted
    /// before the frame is written, like [`Proxy::notifications`].
    pub fn bytes_to_clients(&self) -> u64 {
        self.shared.bytes_to_clients.load(Ordering::SeqCst)
    }

    /// Bytes forwarded from clients to the server so far, counted like [`Proxy::bytes_to_clients`].
    pub fn bytes_to_server(&self) -> u64 {
        self.shared.bytes_to_server.load(Ordering::SeqCst)
    }

    /// Number of requests with this opcode forwarded to the server so far (counted before forwarding, so by the
    /// time a client has its reply the request is counted). The ConnectRequest is not a request here.
    pub fn requests(&self, opcode: i32) -> u64 {
        lock(&self.shared.requests).get(&opcode).copied().unwrap_or(0)
    }

    /// Number of client connections accepted so far (including four-letter-word ones).
    pub fn connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Number of replies swallowed by [`Proxy::drop_reply_and_cut`] so far.
    pub fn lost_replies(&self) -> u64 {
        self.shared.lost_replies.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.cut_all();
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.addr)
            .field("upstream", &self.shared.upstream)
            .finish()
    }
}

/// The next connection `listener` accepts. A failure (out of file descriptors and the like) is logged as `who`'s
/// and tried again after a short pause instead of spinning.
pub(crate) async fn accept(listener: &TcpListener, who: &str) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((client, _)) => return client,
            Err(error) => {
                tracing::warn!(%error, "{who} accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let client = accept(&listener, "proxy").await;
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        let task = if *shared.blackhole.borrow() {
            tokio::spawn(hold_in_blackhole(client, shared.clone()))
        } else {
            tokio::spawn(relay(client, shared.clone()))
        };
        shared.track(task.abort_handle());
    }
}

/// Keeps a connection that arrived while blackholed open and silent until the blackhole ends, then closes it.
async fn hold_in_blackhole(client: TcpStream, shared: Arc<Shared>) {
    let mut blackhole = shared.blackhole.subscribe();
    let _ = blackhole.wait_for(|on| !*on).await;
    drop(client);
}

async fn relay(mut client: TcpStream, shared: Arc<Shared>) {
    let upstream = match TcpStream::connect(shared.upstream).await {
        Ok(upstream) => upstream,
        // Closing the client's connection is what it would see from a dead server, too.
        Err(error) => return tracing::debug!(%error, "proxy cannot reach upstream"),
    };
    if let Err(error) = relay_connected(&mut client, upstream, &shared).await {
        tracing::debug!(%error, "proxy connection ended");
    }
}

async fn relay_connected(client: &mut TcpStream, mut upstream: TcpStream, shared: &Shared) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let mut first = [0u8; 4];
    tokio::io::AsyncReadExt::read_exact(client, &mut first).await?;
    if is_four_letter_word(&first) {
        upstream.write_all(&first).await?;
        tokio::io::copy_bidirectional(client, &mut upstream).await?;
        return Ok(());
    }
    let (mut client_read, mut client_write) = client.split();
    let (mut upstream_read, mut upstream_write) = upstream.split();
    // The xid whose reply must be swallowed, set by the request direction before it forwards that request, so
    // it is always in place before the reply can arrive.
    let lose_reply_to = Mutex::new(None);
    tokio::select! {
        r = client_to_server(first, &mut client_read, &mut upstream_write, shared, &lose_reply_to) => r,
        r = server_to_client(&mut upstream_read, &mut client_write, shared, &lose_reply_to) => r,
    }
}

/// Waits while the proxy is blackholed.
async fn light(shared: &Shared) {
    let _ = shared.blackhole.subscribe().wait_for(|on| !*on).await;
}

async fn client_to_server(
    first: [u8; 4],
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    shared: &Shared,
    lose_reply_to: &Mutex<Option<i32>>,
) -> io::Result<()> {
    let mut prefix = Some(first);
    // The first frame is the ConnectRequest, which has no RequestHeader.
    let mut connect_request = true;
    loop {
        match read_frame(from, prefix.take()).await? {
            Read::Frame(frame) => {
                light(shared).await;
                if !std::mem::take(&mut connect_request) {
                    if let Some((xid, opcode)) = request_header(&frame) {
                        if shared.take_swallow(opcode) {
                            // Returning ends the relay: both connections close and the request goes nowhere.
                            tracing::debug!(xid, opcode, "proxy swallowed a request and cuts the connection");
                            shared.lost_requests.fetch_add(1, Ordering::SeqCst);
                            return Ok(());
                        }
                        shared.count_request(opcode);
                        if shared.take_armed(opcode) {
                            tracing::debug!(xid, opcode, "proxy will lose the reply to this request");
                            *lock(lose_reply_to) = Some(xid);
                        }
                    }
                }
                shared
                    .bytes_to_server
                    .fetch_add(frame.len() as u64, Ordering::SeqCst);
                to.write_all(&frame).await?;
            }
            Read::Unframed(length) => {
                pass_unframed(length, from, to, shared).await?;
                return half_close(to).await;
            }
            Read::Eof => {
                light(shared).await;
                return half_close(to).await;
            }
        }
    }
}

/// A length the proxy will not parse (see [`Read::Unframed`]): passes it and the rest through blindly, as it comes.
async fn pass_unframed(
    length: [u8; 4],
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    shared: &Shared,
) -> io::Result<()> {
    light(shared).await;
    to.write_all(&length).await?;
    tokio::io::copy(from, to).await.map(drop)
}

/// The client finished sending: pass the half-close on and keep relaying replies until the server closes.
async fn half_close<W: AsyncWrite + Unpin>(to: &mut W) -> io::Result<()> {
    to.shutdown().await?;
    std::future::pending().await
}

async fn server_to_client(
    from: &mut (impl AsyncRead + Unpin),
    to: &mut (impl AsyncWrite + Unpin),
    shared: &Shared,
    lose_reply_to: &Mutex<Option<i32>>,
) -> io::Result<()> {
    // The first frame is the ConnectResponse, which has no ReplyHeader.
    let mut connect_response = true;
    loop {
        match read_frame(from, None).await? {
            Read::Frame(frame) => {
                light(shared).await;
                if !std::mem::take(&mut connect_response) {
                    let xid = reply_xid(&frame);
                    if xid.is_some() && xid == *lock(lose_reply_to) {
                        // Returning ends the relay: both connections close without this reply reaching the client.
                        tracing::debug!(?xid, "proxy swallowed a reply and cuts the connection");
                        shared.lost_replies.fetch_add(1, Ordering::SeqCst);
                        return Ok(());
                    }
                    if xid == Some(NOTIFICATION_XID) {
                        // After the length (4) and the ReplyHeader (xid 4, zxid 8, err 4): the event's type.
                        if let Some(event_type) = frame.get(20..24) {
                            let event_type = i32::from_be_bytes(event_type.try_into().expect("4 bytes"));
                            *lock(&shared.notifications_by_type).entry(event_type).or_default() += 1;
                        }
                        shared.notifications.fetch_add(1, Ordering::SeqCst);
                    }
                }
                shared
                    .bytes_to_clients
                    .fetch_add(frame.len() as u64, Ordering::SeqCst);
                to.write_all(&frame).await?;
            }
            Read::Unframed(length) => return pass_unframed(length, from, to, shared).await,
            Read::Eof => {
                // A partitioned client would not learn that the server closed either.
                light(shared).await;
                return Ok(());
            }
        }
    }
}
