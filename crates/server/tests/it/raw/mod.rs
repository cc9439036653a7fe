//! Wire-level behaviour checked with raw frames.
//!
//! By topic: `sessions` (handshakes, moving and expiring sessions), `requests` (replies and error codes of single
//! requests and multi), `watches` (notifications and setWatches), `frames` (pipelining, frame sizes, malformed
//! input, back-pressure) and `port` (four-letter words, the connect string); this file holds their request
//! builders.

use zklock_codec::{Acl, CreateRequest, ErrorCode};

mod frames;
mod port;
mod requests;
mod sessions;
mod watches;

fn create(path: &str, data: Option<&[u8]>, flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: data.map(<[u8]>::to_vec),
        acl: Acl::open_unsafe(),
        flags,
    }
}

fn err(code: ErrorCode) -> i32 {
    code.into()
}
