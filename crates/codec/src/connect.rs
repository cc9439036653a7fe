//! The handshake: the first frame of a connection has no request header.
//!
//! The trailing `readOnly` flag is optional on the wire: old clients (and the Rust client) omit it, and the
//! server must answer in kind, so it is an `Option` whose presence round-trips.

use crate::record::record;

record! {
    /// First frame from a client.
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

    /// The server's answer to [`ConnectRequest`].
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
}
