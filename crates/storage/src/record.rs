//! Byte layout of log files: the file header and the framed records (see the crate docs).

/// Largest payload a single record may carry (64 MiB). Keeps a corrupted length field from
/// looking like a plausible record.
pub const MAX_PAYLOAD_LEN: usize = 64 << 20;

/// First bytes of every log file.
pub(crate) const LOG_MAGIC: &[u8; 8] = b"ZKLKLOG\0";
/// Log format version written into the header.
pub(crate) const LOG_VERSION: u32 = 1;
/// Size of the log file header.
pub(crate) const LOG_HEADER_LEN: usize = 16;
/// Marker at the start of every record ("ZKTR"); non-zero so zero fill never parses.
pub(crate) const RECORD_MARKER: u32 = 0x5A4B_5452;
/// marker + len + zxid + batch_start.
pub(crate) const RECORD_HEADER_LEN: usize = 24;
/// Trailing CRC.
pub(crate) const RECORD_TRAILER_LEN: usize = 4;
/// Bytes a record occupies besides its payload.
pub(crate) const RECORD_OVERHEAD: usize = RECORD_HEADER_LEN + RECORD_TRAILER_LEN;

/// The header written at offset 0 of a new log file.
pub(crate) fn log_header() -> [u8; LOG_HEADER_LEN] {
    let mut h = [0u8; LOG_HEADER_LEN];
    h[..8].copy_from_slice(LOG_MAGIC);
    h[8..12].copy_from_slice(&LOG_VERSION.to_be_bytes());
    let crc = crc32c::crc32c(&h[..12]);
    h[12..16].copy_from_slice(&crc.to_be_bytes());
    h
}

/// Checks a log file header; `Err` says what is wrong with it.
pub(crate) fn check_log_header(buf: &[u8]) -> Result<(), String> {
    if buf.len() < LOG_HEADER_LEN {
        return Err(format!("file header truncated ({} bytes)", buf.len()));
    }
    if &buf[..8] != LOG_MAGIC {
        return Err("bad file magic".into());
    }
    let crc = u32::from_be_bytes(buf[12..16].try_into().expect("4 bytes"));
    if crc != crc32c::crc32c(&buf[..12]) {
        return Err("file header checksum mismatch".into());
    }
    let version = u32::from_be_bytes(buf[8..12].try_into().expect("4 bytes"));
    if version != LOG_VERSION {
        return Err(format!("unsupported log format version {version}"));
    }
    Ok(())
}

/// Appends one framed record to `out`. The caller has checked the payload length.
pub(crate) fn encode_record(out: &mut Vec<u8>, zxid: i64, batch_start: u64, payload: &[u8]) {
    debug_assert!(payload.len() <= MAX_PAYLOAD_LEN);
    let start = out.len();
    out.extend_from_slice(&RECORD_MARKER.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&zxid.to_be_bytes());
    out.extend_from_slice(&batch_start.to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// A record that decoded and checksummed correctly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordView {
    /// The record's zxid.
    pub zxid: i64,
    /// Offset of the first record of the batch this record was written in.
    pub batch_start: u64,
    /// Offset of the payload within the buffer.
    pub payload_at: usize,
    /// Payload length.
    pub payload_len: usize,
    /// Total bytes of the framed record.
    pub total_len: usize,
}

/// Decodes the record starting at `buf[at..]`; `Err` says why there is no valid record.
pub(crate) fn decode_record(buf: &[u8], at: usize) -> Result<RecordView, String> {
    let rest = &buf[at.min(buf.len())..];
    if rest.len() < 4 {
        return Err("record header truncated".into());
    }
    let marker = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes"));
    if marker != RECORD_MARKER {
        return Err(if marker == 0 {
            "zero fill instead of a record".into()
        } else {
            format!("bad record marker {marker:#010x}")
        });
    }
    if rest.len() < RECORD_HEADER_LEN {
        return Err("record header truncated".into());
    }
    let len = u32::from_be_bytes(rest[4..8].try_into().expect("4 bytes")) as usize;
    if len > MAX_PAYLOAD_LEN {
        return Err(format!("record length {len} exceeds the maximum"));
    }
    let total_len = RECORD_OVERHEAD + len;
    if rest.len() < total_len {
        return Err(format!(
            "record of {total_len} bytes runs past the end of the file"
        ));
    }
    let body = &rest[..RECORD_HEADER_LEN + len];
    let crc = u32::from_be_bytes(
        rest[RECORD_HEADER_LEN + len..total_len]
            .try_into()
            .expect("4 bytes"),
    );
    if crc != crc32c::crc32c(body) {
        return Err("record checksum mismatch".into());
    }
    Ok(RecordView {
        zxid: i64::from_be_bytes(rest[8..16].try_into().expect("8 bytes")),
        batch_start: u64::from_be_bytes(rest[16..24].try_into().expect("8 bytes")),
        payload_at: at + RECORD_HEADER_LEN,
        payload_len: len,
        total_len,
    })
}

/// Finds every CRC-valid record that starts after `from` by probing each position where the
/// marker occurs. Used only on the (rare) recovery path to tell a torn tail from corruption.
pub(crate) fn valid_records_after(buf: &[u8], from: usize) -> Vec<(usize, RecordView)> {
    let marker = RECORD_MARKER.to_be_bytes();
    let mut found = Vec::new();
    // The usual case on open is a zero-filled tail; checking that is much cheaper than probing.
    if buf
        .get(from + 1..)
        .is_none_or(|rest| rest.iter().all(|&b| b == 0))
    {
        return found;
    }
    let mut at = from + 1;
    while at + RECORD_OVERHEAD <= buf.len() {
        if buf[at..at + 4] == marker {
            if let Ok(view) = decode_record(buf, at) {
                found.push((at, view));
            }
        }
        at += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let mut buf = vec![0u8; 3];
        encode_record(&mut buf, 42, 3, b"hello");
        let view = decode_record(&buf, 3).unwrap();
        assert_eq!(view.zxid, 42);
        assert_eq!(view.batch_start, 3);
        assert_eq!(
            &buf[view.payload_at..view.payload_at + view.payload_len],
            b"hello"
        );
        assert_eq!(view.total_len, buf.len() - 3);
    }

    #[test]
    fn zero_fill_and_flips_are_rejected() {
        assert!(decode_record(&[0u8; 64], 0).is_err());
        let mut buf = Vec::new();
        encode_record(&mut buf, 1, 0, b"abc");
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert!(decode_record(&bad, 0).is_err(), "flip at {i} accepted");
        }
    }

    #[test]
    fn header_round_trip() {
        check_log_header(&log_header()).unwrap();
        assert!(check_log_header(&[0u8; 16]).is_err());
        assert!(check_log_header(&log_header()[..10]).is_err());
    }
}
