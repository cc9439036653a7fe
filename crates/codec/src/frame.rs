//! Framing: every message is a big-endian `int` length followed by that many bytes.
//!
//! "Not enough bytes yet" is `Ok(None)`, not an error: the caller reads more and tries again.

use crate::FrameError;

/// Size of the length prefix.
pub const LENGTH_PREFIX: usize = 4;

/// ZooKeeper's default `jute.maxbuffer`: the largest frame body a server accepts.
pub const DEFAULT_MAX_FRAME_LEN: usize = 1_048_575;

/// Tries to cut one frame from the front of `buf`.
///
/// Returns `Ok(Some((body, consumed)))` when a whole frame is present, `Ok(None)` when more bytes are
/// needed, and an error when the length prefix is negative or larger than `max_len`.
pub fn decode_frame(buf: &[u8], max_len: usize) -> Result<Option<(&[u8], usize)>, FrameError> {
    let Some(prefix) = buf.get(..LENGTH_PREFIX) else {
        return Ok(None);
    };
    let len = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let len = usize::try_from(len).map_err(|_| FrameError::Negative(len))?;
    if len > max_len {
        return Err(FrameError::TooLong { len, max: max_len });
    }
    let end = LENGTH_PREFIX + len;
    Ok(buf.get(LENGTH_PREFIX..end).map(|body| (body, end)))
}

/// Starts a frame in `w`: reserves the length prefix and returns the position to pass to [`end_frame`].
pub fn begin_frame(w: &mut Vec<u8>) -> usize {
    let start = w.len();
    w.extend_from_slice(&[0; LENGTH_PREFIX]);
    start
}

/// Finishes a frame started by [`begin_frame`] by writing its body length into the prefix.
pub fn end_frame(w: &mut [u8], start: usize) {
    let len = w.len() - start - LENGTH_PREFIX;
    let len = i32::try_from(len).unwrap_or(i32::MAX);
    w[start..start + LENGTH_PREFIX].copy_from_slice(&len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_frames_need_more_bytes() {
        assert_eq!(decode_frame(&[], 10), Ok(None));
        assert_eq!(decode_frame(&[0, 0, 0], 10), Ok(None));
        assert_eq!(decode_frame(&[0, 0, 0, 2, 9], 10), Ok(None));
        assert_eq!(
            decode_frame(&[0, 0, 0, 2, 9, 8, 7], 10),
            Ok(Some((&[9u8, 8][..], 6)))
        );
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert_eq!(
            decode_frame(&[255, 255, 255, 255], 10),
            Err(FrameError::Negative(-1))
        );
        assert_eq!(
            decode_frame(&[0, 0, 0, 11], 10),
            Err(FrameError::TooLong { len: 11, max: 10 })
        );
    }

    #[test]
    fn begin_end_round_trip() {
        let mut w = Vec::new();
        let start = begin_frame(&mut w);
        w.extend_from_slice(b"abc");
        end_frame(&mut w, start);
        assert_eq!(decode_frame(&w, 10), Ok(Some((&b"abc"[..], 7))));
    }
}
