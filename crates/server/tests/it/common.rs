//! Test support: a server per test and a raw protocol client.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zklock_codec::frame::{begin_frame, decode_frame, end_frame};
use zklock_codec::{
    ConnectRequest, ConnectResponse, Decode, Encode, ExistsRequest, OpCode, ReplyHeader, RequestHeader,
};
use zklock_server::{Server, ServerConfig};

/// Generous bound for "this must happen" waits on a loaded 2-core machine.
pub const WAIT: Duration = Duration::from_secs(20);

pub async fn server() -> Server {
    server_with(ServerConfig::default()).await
}

pub async fn server_with(config: ServerConfig) -> Server {
    Server::start(config).await.expect("server starts")
}

pub async fn client(server: &Server) -> zookeeper_client::Client {
    tokio::time::timeout(WAIT, zookeeper_client::Client::connect(&server.connect_string()))
        .await
        .expect("connect in time")
        .expect("connect")
}

/// The connect request of a new session asking for `time_out` ms: a zeroed 16-byte password, no readOnly byte.
pub fn new_session(time_out: i32) -> ConnectRequest {
    ConnectRequest {
        time_out,
        passwd: vec![0; 16],
        ..Default::default()
    }
}

/// A raw ZooKeeper protocol connection.
pub struct Raw {
    pub stream: TcpStream,
    buf: Vec<u8>,
    next_xid: i32,
}

impl Raw {
    pub async fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).await.expect("tcp connect");
        Raw {
            stream,
            buf: Vec::new(),
            next_xid: 1,
        }
    }

    /// Connects with a receive buffer of about `bytes` (the kernel doubles it and has a floor): a client whose
    /// window fills at once when it does not read.
    pub async fn connect_small(addr: SocketAddr, bytes: u32) -> Raw {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(bytes).expect("SO_RCVBUF");
        let stream = socket.connect(addr).await.expect("tcp connect");
        Raw {
            stream,
            buf: Vec::new(),
            next_xid: 1,
        }
    }

    /// Connects and completes a handshake for a new session (Java-style, with the readOnly byte).
    pub async fn session(addr: SocketAddr) -> (Raw, ConnectResponse) {
        let req = ConnectRequest {
            read_only: Some(false),
            ..new_session(30_000)
        };
        Raw::session_with(addr, &req).await
    }

    /// Connects and sends `req` as the connect request: the connection and the server's answer (a new or
    /// resumed session, or a refusal).
    pub async fn session_with(addr: SocketAddr, req: &ConnectRequest) -> (Raw, ConnectResponse) {
        let mut raw = Raw::connect(addr).await;
        let resp = raw.handshake(req).await;
        (raw, resp)
    }

    pub async fn handshake(&mut self, req: &ConnectRequest) -> ConnectResponse {
        self.send_record(req).await;
        let body = self.read_frame().await.expect("connect response");
        ConnectResponse::from_bytes(&body).expect("decodes")
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    pub async fn send_record(&mut self, rec: &impl Encode) {
        let mut w = Vec::new();
        let start = begin_frame(&mut w);
        rec.encode(&mut w);
        end_frame(&mut w, start);
        self.send_raw(&w).await;
    }

    /// Sends a request with a fresh xid and returns the xid.
    pub async fn send(&mut self, op: OpCode, req: &impl Encode) -> i32 {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.send_xid(xid, op, req).await;
        xid
    }

    pub async fn send_xid(&mut self, xid: i32, op: OpCode, req: &impl Encode) {
        let mut w = Vec::new();
        let start = begin_frame(&mut w);
        RequestHeader { xid, op: op.into() }.encode(&mut w);
        req.encode(&mut w);
        end_frame(&mut w, start);
        self.send_raw(&w).await;
    }

    /// Next frame body, or `None` when the server closed the connection.
    pub async fn read_frame(&mut self) -> Option<Vec<u8>> {
        tokio::time::timeout(WAIT, async {
            loop {
                if let Some((body, used)) = decode_frame(&self.buf, usize::MAX >> 1).expect("valid frame") {
                    let body = body.to_vec();
                    self.buf.drain(..used);
                    return Some(body);
                }
                self.buf.reserve(64 * 1024);
                match self.stream.read_buf(&mut self.buf).await {
                    Ok(0) | Err(_) => return None,
                    Ok(_) => {}
                }
            }
        })
        .await
        .expect("frame or close in time")
    }

    /// Next reply: header and body bytes.
    pub async fn reply(&mut self) -> (ReplyHeader, Vec<u8>) {
        let frame = self.read_frame().await.expect("reply");
        let mut r = zklock_codec::Reader::new(&frame);
        let h = ReplyHeader::decode(&mut r).expect("reply header");
        (h, r.rest().to_vec())
    }

    /// Sends a request and returns its reply (skipping notifications).
    pub async fn call(&mut self, op: OpCode, req: &impl Encode) -> (ReplyHeader, Vec<u8>) {
        let xid = self.send(op, req).await;
        loop {
            let (h, body) = self.reply().await;
            if h.xid == xid {
                return (h, body);
            }
            assert_eq!(h.xid, -1, "only notifications may come between");
        }
    }

    /// An exists request, answered.
    pub async fn exists(&mut self, path: &str, watch: bool) -> (ReplyHeader, Vec<u8>) {
        let req = ExistsRequest {
            path: path.into(),
            watch,
        };
        self.call(OpCode::Exists, &req).await
    }

    /// Whether the server closes the connection within `limit` (reads until EOF).
    pub async fn closed_within(&mut self, limit: Duration) -> bool {
        tokio::time::timeout(limit, async {
            let mut chunk = vec![0u8; 4096];
            loop {
                match self.stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => {}
                }
            }
        })
        .await
        .unwrap_or(false)
    }

    /// Whether the server closes the connection (reads until EOF, bounded in time).
    pub async fn closed(&mut self) -> bool {
        self.closed_within(WAIT).await
    }
}
