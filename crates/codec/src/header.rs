//! Request and reply headers.

use crate::record::record;
use crate::{ErrorCode, OpCode};

record! {
    /// Precedes every request after the handshake.
    pub struct RequestHeader {
        /// Client-chosen id echoed in the reply (special values in [`crate::xid`]).
        pub xid: i32,
        /// Raw opcode; see [`RequestHeader::op_code`].
        pub op: i32,
    }

    /// Precedes every reply and notification.
    pub struct ReplyHeader {
        /// The request's xid, or a special xid.
        pub xid: i32,
        /// The server's last processed zxid.
        pub zxid: i64,
        /// Error code; a body follows only when it is 0.
        pub err: i32,
    }
}

impl RequestHeader {
    /// The opcode, if known.
    pub fn op_code(&self) -> Result<OpCode, crate::DecodeError> {
        OpCode::try_from(self.op)
    }
}

impl ReplyHeader {
    /// A reply header with the given error code.
    pub fn new(xid: i32, zxid: i64, err: ErrorCode) -> Self {
        ReplyHeader {
            xid,
            zxid,
            err: err.into(),
        }
    }
}
