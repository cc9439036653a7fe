//! The handshake: the first frame of a connection has no request header.
//!
//! The trailing `readOnly` flag is optional on the wire: old clients (and the Rust client) omit it, and the
//! server must answer in kind, so it is an `Option` whose presence round-trips.

use crate::jute::{put_buffer, put_i32, put_i64, put_trailing_bool, Decode, Encode, Reader};
use crate::DecodeError;

/// First frame from a client.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Always 0.
    pub protocol_version: i32,
    /// Highest zxid the client has seen.
    pub last_zxid_seen: i64,
    /// Requested session timeout in ms.
    pub time_out: i32,
    /// 0 for a new session, else the session to resume.
    pub session_id: i64,
    /// Session password (empty for a new session).
    pub passwd: Vec<u8>,
    /// Whether the client accepts a read-only server; `None` when the client did not send the byte.
    pub read_only: Option<bool>,
}

impl Encode for ConnectRequest {
    fn encode(&self, w: &mut Vec<u8>) {
        put_i32(w, self.protocol_version);
        put_i64(w, self.last_zxid_seen);
        put_i32(w, self.time_out);
        put_i64(w, self.session_id);
        put_buffer(w, Some(&self.passwd));
        put_trailing_bool(w, self.read_only);
    }
}

impl Decode for ConnectRequest {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32()?,
            last_zxid_seen: r.read_i64()?,
            time_out: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?.unwrap_or_default(),
            read_only: r.read_trailing_bool()?,
        })
    }
}

/// The server's answer to [`ConnectRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// Negotiated timeout in ms; 0 means the session is invalid (expired or unknown).
    pub time_out: i32,
    /// The session id; 0 when invalid.
    pub session_id: i64,
    /// The session password (16 bytes).
    pub passwd: Vec<u8>,
    /// Read-only flag, written only when the client sent one.
    pub read_only: Option<bool>,
}

impl Encode for ConnectResponse {
    fn encode(&self, w: &mut Vec<u8>) {
        put_i32(w, self.protocol_version);
        put_i32(w, self.time_out);
        put_i64(w, self.session_id);
        put_buffer(w, Some(&self.passwd));
        put_trailing_bool(w, self.read_only);
    }
}

impl Decode for ConnectResponse {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32()?,
            time_out: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?.unwrap_or_default(),
            read_only: r.read_trailing_bool()?,
        })
    }
}
