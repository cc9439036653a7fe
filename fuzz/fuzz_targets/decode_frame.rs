//! Feeds arbitrary bytes through framing and every request decoder the server uses: none may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zklock_codec::{frame, ConnectRequest, Decode, MultiRequest, Reader, RequestHeader};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    // Bounded: each frame consumes at least its 4-byte prefix.
    while let Ok(Some((body, used))) = frame::decode_frame(rest, frame::DEFAULT_MAX_FRAME_LEN) {
        let _ = ConnectRequest::from_bytes(body);
        let mut r = Reader::new(body);
        if RequestHeader::decode(&mut r).is_ok() {
            let _ = MultiRequest::decode(&mut r.clone());
            let _ = zklock_codec::CreateRequest::decode(&mut r.clone());
            let _ = zklock_codec::SetWatches2::decode(&mut r);
        }
        rest = &rest[used..];
    }
});
