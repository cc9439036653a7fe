//! A minimal raw ZooKeeper client: one TCP connection, frames in and out, nothing hidden.
//!
//! The differential test needs byte-level control (invalid paths, null data, odd opcodes) and must see every
//! notification in arrival order, which a client library would validate, reorder or swallow.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_codec::frame::decode_frame;
use zklock_codec::jute::{put_buffer, put_i32, put_i64};
use zklock_codec::{ConnectResponse, Decode, Reader, ReplyHeader};

/// Generous bound for one reply on a loaded 2-core machine (includes fsync on the embedded server).
pub const REPLY_WAIT: Duration = Duration::from_secs(30);

/// xid of notifications.
pub const XID_NOTIFICATION: i32 = -1;
/// xid of pings.
pub const XID_PING: i32 = -2;
/// xid of auth requests.
pub const XID_AUTH: i32 = -4;

/// One raw connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A reply or notification as read from the wire.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The header.
    pub header: ReplyHeader,
    /// Bytes after the header.
    pub body: Vec<u8>,
}

impl Conn {
    /// Opens a TCP connection.
    pub async fn connect(addr: SocketAddr) -> io::Result<Conn> {
        let stream = tokio::time::timeout(REPLY_WAIT, TcpStream::connect(addr))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "tcp connect"))??;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
        })
    }

    /// Writes bytes as they are.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends one frame: `xid`, `op`, then `body`.
    pub async fn send(&mut self, xid: i32, op: i32, body: &[u8]) -> io::Result<()> {
        self.send_raw(&request_frame(xid, op, body)).await
    }

    /// The next frame body; `None` when the server closed the connection.
    pub async fn read_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        let read = async {
            loop {
                let decoded = decode_frame(&self.buf, usize::MAX >> 1)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                if let Some((body, used)) = decoded {
                    let body = body.to_vec();
                    self.buf.drain(..used);
                    return Ok(Some(body));
                }
                self.buf.reserve(64 * 1024);
                match self.stream.read_buf(&mut self.buf).await {
                    Ok(0) => return Ok(None),
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(None),
                    Err(e) => return Err(e),
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(REPLY_WAIT, read)
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no frame from the server"))?
    }

    /// The next reply or notification; `None` when the server closed the connection.
    pub async fn read_reply(&mut self) -> io::Result<Option<Reply>> {
        let Some(frame) = self.read_frame().await? else {
            return Ok(None);
        };
        let mut r = Reader::new(&frame);
        let header = ReplyHeader::decode(&mut r)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        Ok(Some(Reply {
            header,
            body: r.rest().to_vec(),
        }))
    }

    /// Sends a ConnectRequest and reads the ConnectResponse (`None`: closed without one).
    pub async fn handshake(&mut self, request: &[u8]) -> io::Result<Option<ConnectResponse>> {
        let mut frame = Vec::new();
        put_i32(&mut frame, request.len() as i32);
        frame.extend_from_slice(request);
        self.send_raw(&frame).await?;
        match self.read_frame().await? {
            None => Ok(None),
            Some(body) => ConnectResponse::from_bytes(&body)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
        }
    }

    /// Reads replies until the server closes the connection (bounded): the frames that came first, and
    /// whether it closed.
    pub async fn drain_until_closed(&mut self) -> (Vec<Reply>, bool) {
        let mut frames = Vec::new();
        for _ in 0..1000 {
            match self.read_reply().await {
                Ok(Some(reply)) => frames.push(reply),
                Ok(None) => return (frames, true),
                Err(_) => return (frames, false),
            }
        }
        (frames, false)
    }

    /// Reads until the server closes the connection (bounded); true if it did.
    pub async fn closed_by_server(&mut self) -> bool {
        let wait = async {
            let mut chunk = vec![0u8; 4096];
            loop {
                match self.stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(REPLY_WAIT, wait).await.is_ok()
    }
}

/// `len, xid, op, body` as one frame.
pub fn request_frame(xid: i32, op: i32, body: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(12 + body.len());
    put_i32(&mut w, (8 + body.len()) as i32);
    put_i32(&mut w, xid);
    put_i32(&mut w, op);
    w.extend_from_slice(body);
    w
}

/// A ConnectRequest body (Java/kazoo style, with the readOnly byte).
pub fn connect_request(last_zxid: i64, timeout_ms: i32, session_id: i64, password: &[u8]) -> Vec<u8> {
    let mut w = Vec::new();
    put_i32(&mut w, 0);
    put_i64(&mut w, last_zxid);
    put_i32(&mut w, timeout_ms);
    put_i64(&mut w, session_id);
    put_buffer(&mut w, Some(password));
    w.push(0);
    w
}

/// A raw connection with an established session, for scripted scenarios.
pub struct Session {
    /// The connection.
    pub conn: Conn,
    /// Session id from the ConnectResponse.
    pub id: i64,
    /// Session password from the ConnectResponse.
    pub password: Vec<u8>,
    /// Negotiated timeout.
    pub timeout_ms: i32,
    /// Notifications received so far: (type, path).
    pub events: Vec<(i32, String)>,
    next_xid: i32,
}

impl Session {
    /// Connects and creates a new session asking for `timeout_ms`.
    pub async fn open(addr: SocketAddr, timeout_ms: i32) -> Session {
        Self::attach(addr, timeout_ms, 0, &[0; 16])
            .await
            .expect("the server accepts a new session")
    }

    /// Connects with the given session id and password; `None` if the server refused (timeout 0 reply or
    /// closed connection).
    pub async fn attach(addr: SocketAddr, timeout_ms: i32, id: i64, password: &[u8]) -> Option<Session> {
        let mut conn = Conn::connect(addr).await.expect("tcp connect");
        let resp = conn
            .handshake(&connect_request(0, timeout_ms, id, password))
            .await
            .expect("handshake I/O")?;
        if resp.time_out <= 0 {
            return None;
        }
        Some(Session {
            conn,
            id: resp.session_id,
            password: resp.passwd,
            timeout_ms: resp.time_out,
            events: Vec::new(),
            next_xid: 0,
        })
    }

    /// Sends a request and reads its reply (notifications before it are kept in `events`); `None` if the
    /// server closed the connection.
    pub async fn call(&mut self, op: i32, body: &[u8]) -> Option<Reply> {
        self.next_xid += 1;
        let xid = match op {
            11 => XID_PING,
            100 => XID_AUTH,
            _ => self.next_xid,
        };
        self.conn.send(xid, op, body).await.ok()?;
        loop {
            let reply = self.conn.read_reply().await.ok()??;
            if reply.header.xid == XID_NOTIFICATION {
                let mut r = Reader::new(&reply.body);
                let kind = r.read_i32().unwrap_or(0);
                let _state = r.read_i32();
                self.events.push((kind, r.read_string().unwrap_or_default()));
            } else if reply.header.xid == xid {
                return Some(reply);
            }
        }
    }

    /// create (opcode 1) with open ACL and `mode`; returns the error code.
    pub async fn create(&mut self, path: &str, data: &[u8], mode: i32) -> i32 {
        let mut w = Vec::new();
        zklock_codec::jute::put_str(&mut w, path);
        put_buffer(&mut w, Some(data));
        put_i32(&mut w, 1);
        put_i32(&mut w, 31);
        zklock_codec::jute::put_str(&mut w, "world");
        zklock_codec::jute::put_str(&mut w, "anyone");
        put_i32(&mut w, mode);
        self.call(1, &w).await.map_or(i32::MIN, |r| r.header.err)
    }

    /// exists, optionally watching; returns the reply (err 0 = exists, −101 = no node).
    pub async fn exists(&mut self, path: &str, watch: bool) -> Option<Reply> {
        let mut w = Vec::new();
        zklock_codec::jute::put_str(&mut w, path);
        zklock_codec::jute::put_bool(&mut w, watch);
        self.call(3, &w).await
    }

    /// closeSession; true if the server replied.
    pub async fn close(&mut self) -> bool {
        self.call(-11, &[]).await.is_some()
    }
}
