//! Just enough of the ZooKeeper framing for the proxy and the session killer: length-prefixed frames and header fields.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Larger frames are not parsed: the proxy stops looking at the connection and copies bytes. Real ZooKeeper
/// rejects anything above `jute.maxbuffer` (1 MiB) anyway; tests of that limit still see the bytes go through.
pub(crate) const MAX_PARSED_FRAME: usize = 16 << 20;

/// Reply-header xid of a watch notification.
pub(crate) const NOTIFICATION_XID: i32 = -1;

/// What came off the wire.
pub(crate) enum Read {
    /// A whole frame: the 4-byte length followed by the body, ready to forward as is.
    Frame(Vec<u8>),
    /// A length the proxy will not parse (negative or huge), returned as its 4 raw bytes; the caller switches to
    /// copying bytes blindly.
    Unframed([u8; 4]),
    /// The peer closed the connection cleanly between frames.
    Eof,
}

/// Reads the next frame, the 4-byte prefix already consumed being `prefix` when given.
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    prefix: Option<[u8; 4]>,
) -> std::io::Result<Read> {
    let length = match prefix {
        Some(prefix) => prefix,
        None => {
            let mut length = [0u8; 4];
            match reader.read_exact(&mut length).await {
                Ok(_) => length,
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Read::Eof),
                Err(e) => return Err(e),
            }
        }
    };
    let body_len = match usize::try_from(i32::from_be_bytes(length)) {
        Ok(n) if n <= MAX_PARSED_FRAME => n,
        _ => return Ok(Read::Unframed(length)),
    };
    let mut frame = Vec::with_capacity(4 + body_len);
    frame.extend_from_slice(&length);
    frame.resize(4 + body_len, 0);
    reader.read_exact(&mut frame[4..]).await?;
    Ok(Read::Frame(frame))
}

/// `(xid, opcode)` of a client request frame (RequestHeader), `None` if the body is too short.
pub(crate) fn request_header(frame: &[u8]) -> Option<(i32, i32)> {
    Some((int_at(frame, 4)?, int_at(frame, 8)?))
}

/// The xid of a server reply frame (ReplyHeader), `None` if the body is too short.
pub(crate) fn reply_xid(frame: &[u8]) -> Option<i32> {
    int_at(frame, 4)
}

fn int_at(frame: &[u8], offset: usize) -> Option<i32> {
    let bytes = frame.get(offset..offset + 4)?;
    Some(i32::from_be_bytes(bytes.try_into().ok()?))
}

/// Whether the first 4 bytes of a connection are a four-letter word (`ruok`, `srvr`, ...) rather than the length
/// of a ConnectRequest.
pub(crate) fn is_four_letter_word(first: &[u8; 4]) -> bool {
    first.iter().all(u8::is_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_are_read_whole_and_odd_lengths_are_not_parsed() {
        let mut input: &[u8] = &[0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff];
        let Read::Frame(frame) = read_frame(&mut input, None).await.unwrap() else {
            panic!("no frame")
        };
        assert_eq!(request_header(&frame), Some((5, 4)));
        assert!(matches!(
            read_frame(&mut input, None).await.unwrap(),
            Read::Unframed([0xff, 0xff, 0xff, 0xff])
        ));
        assert!(matches!(read_frame(&mut input, None).await.unwrap(), Read::Eof));
    }

    #[test]
    fn four_letter_words_are_told_apart_from_lengths() {
        assert!(is_four_letter_word(b"ruok"));
        assert!(!is_four_letter_word(&[0, 0, 0, 45]));
    }
}
