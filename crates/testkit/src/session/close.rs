//! Closing a session over a raw connection: ConnectRequest and closeSession pipelined in one write.

use std::io;
use std::net::SocketAddr;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::credentials::Credentials;
use crate::frame::{read_frame, reply_xid, Read};

const CLOSE_SESSION: i32 = -11;
const CLOSE_XID: i32 = 1;

/// How a close attempt ended.
#[derive(Debug)]
pub(crate) enum Closed {
    /// The server replied to our closeSession: the session is gone.
    Now,
    /// The server refused the re-attach (session timeout 0): the session had already ended.
    Already,
    /// The connection closed before the reply, most likely because the original client re-attached first.
    Interrupted,
}

/// Tries the servers of `connect` in order until one accepts a connection, then closes the session through it.
pub(crate) async fn close_session(connect: &str, credentials: &Credentials) -> io::Result<Closed> {
    let hosts = connect.split('/').next().unwrap_or_default();
    let mut last_error = io::Error::new(io::ErrorKind::InvalidInput, format!("no servers in {connect:?}"));
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let addrs: Vec<SocketAddr> = match tokio::net::lookup_host(host).await {
            Ok(addrs) => addrs.collect(),
            Err(error) => {
                last_error = error;
                continue;
            }
        };
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => return close_over(stream, credentials).await,
                Err(error) => last_error = error,
            }
        }
    }
    Err(last_error)
}

async fn close_over(mut stream: TcpStream, credentials: &Credentials) -> io::Result<Closed> {
    stream.write_all(&requests(credentials)).await?;
    let response = match read_frame(&mut stream, None).await? {
        Read::Frame(frame) => frame,
        Read::Eof => return Ok(Closed::Interrupted),
        Read::Unframed(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, "bad ConnectResponse")),
    };
    // ConnectResponse: protocolVersion i32, timeOut i32, ... A refused (expired) session gets timeOut 0.
    let timeout = response
        .get(8..12)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    if !matches!(timeout, Some(t) if t > 0) {
        return Ok(Closed::Already);
    }
    loop {
        match read_frame(&mut stream, None).await? {
            Read::Frame(reply) if reply_xid(&reply) == Some(CLOSE_XID) => return Ok(Closed::Now),
            Read::Frame(_) => continue,
            Read::Eof => return Ok(Closed::Interrupted),
            Read::Unframed(_) => return Err(io::Error::new(io::ErrorKind::InvalidData, "bad reply frame")),
        }
    }
}

/// The ConnectRequest re-attaching the session followed by a closeSession request, as bytes on the wire.
fn requests(credentials: &Credentials) -> Vec<u8> {
    let mut connect = Vec::new();
    connect.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    connect.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen: nothing seen, so any server accepts us
    connect.extend_from_slice(&credentials.timeout_ms.to_be_bytes());
    connect.extend_from_slice(&credentials.session_id.to_be_bytes());
    connect.extend_from_slice(&(credentials.password.len() as i32).to_be_bytes());
    connect.extend_from_slice(&credentials.password);
    connect.push(0); // readOnly: false
    let mut close = Vec::new();
    close.extend_from_slice(&CLOSE_XID.to_be_bytes());
    close.extend_from_slice(&CLOSE_SESSION.to_be_bytes());
    let mut wire = Vec::new();
    for body in [connect, close] {
        wire.extend_from_slice(&(body.len() as i32).to_be_bytes());
        wire.extend_from_slice(&body);
    }
    wire
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::credentials::parse_connect_request;

    #[test]
    fn connect_request_round_trips_and_close_follows_it() {
        let credentials = Credentials {
            session_id: 0x1234_5678_9abc,
            password: vec![7; 16],
            timeout_ms: 6000,
        };
        let wire = requests(&credentials);
        let first_len = i32::from_be_bytes(wire[0..4].try_into().unwrap()) as usize;
        assert_eq!(first_len, 45, "Java clients send 45-byte ConnectRequests too");
        let parsed = parse_connect_request(&wire[4..4 + first_len]).unwrap();
        assert_eq!(parsed.session_id, credentials.session_id);
        assert_eq!(parsed.password, credentials.password);
        assert_eq!(parsed.timeout_ms, 6000);
        let close = &wire[4 + first_len..];
        assert_eq!(close, [0, 0, 0, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xf5]);
    }
}
