//! Jute primitives: big-endian integers, 1-byte bools, length-prefixed buffers and strings (−1 = null), and
//! counted vectors. [`Reader`] does checked reads over an untrusted frame; writes go to a `Vec<u8>`.

use crate::DecodeError;

/// Smallest encoded size of any vector element we decode (an `int` or a length prefix). Used to bound
/// preallocation: a hostile count can never make us reserve more elements than the frame could hold.
const MIN_ELEMENT_LEN: usize = 4;

/// A record that can be written in jute encoding.
pub trait Encode {
    /// Appends the encoding of `self` to `w`.
    fn encode(&self, w: &mut Vec<u8>);

    /// Encodes into a fresh vector.
    fn to_bytes(&self) -> Vec<u8> {
        let mut w = Vec::new();
        self.encode(&mut w);
        w
    }
}

/// A record that can be read from jute encoding.
pub trait Decode: Sized {
    /// Reads one record, advancing the reader. Never panics, whatever the bytes.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes one record from the start of `bytes`; trailing bytes are ignored, as ZooKeeper does.
    fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(&mut Reader::new(bytes))
    }
}

/// Checked cursor over an untrusted byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The unconsumed bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.buf.len() < n {
            return Err(DecodeError::UnexpectedEof {
                needed: n,
                remaining: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Reads a big-endian `int`.
    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_be_bytes)
    }

    /// Reads a big-endian `long`.
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        self.array().map(i64::from_be_bytes)
    }

    /// An optional trailing bool: `None` when nothing is left (the handshake's `readOnly`).
    pub fn read_trailing_bool(&mut self) -> Result<Option<bool>, DecodeError> {
        if self.remaining() > 0 {
            self.read_bool().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Reads a `boolean` (one byte; any non-zero value is true, like Java's `DataInput.readBoolean`).
    pub fn read_bool(&mut self) -> Result<bool, DecodeError> {
        self.array::<1>().map(|[b]| b != 0)
    }

    /// Reads a length prefix: `None` for −1 (null), error for other negatives or lengths past the frame end.
    fn read_len(&mut self) -> Result<Option<usize>, DecodeError> {
        match self.read_i32()? {
            -1 => Ok(None),
            n if n < 0 => Err(DecodeError::InvalidLength(n)),
            n => Ok(Some(n as usize)),
        }
    }

    /// Reads a `buffer`; `None` is the null buffer (length −1), distinct from an empty one.
    pub fn read_buffer(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        match self.read_len()? {
            None => Ok(None),
            Some(n) => self.take(n).map(|b| Some(b.to_vec())),
        }
    }

    /// Reads a `buffer` in place: a slice of the input, `None` for the null buffer.
    pub fn read_buffer_slice(&mut self) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.read_len()? {
            None => Ok(None),
            Some(n) => self.take(n).map(Some),
        }
    }

    /// Reads a `ustring`; `None` is null. Invalid UTF-8 is replaced by U+FFFD, as Java's decoder does
    /// (and U+FFFD then fails path validation, like on the real server).
    pub fn read_ustring(&mut self) -> Result<Option<String>, DecodeError> {
        match self.read_len()? {
            None => Ok(None),
            Some(n) => self
                .take(n)
                // Valid UTF-8 (every path) is copied as it is; `from_utf8_lossy` alone was 8 % of a restart.
                .map(|b| {
                    Some(match std::str::from_utf8(b) {
                        Ok(text) => text.to_owned(),
                        Err(_) => String::from_utf8_lossy(b).into_owned(),
                    })
                }),
        }
    }

    /// Reads a `ustring`, mapping null to the empty string (clients such as kazoo send `""` as null).
    pub fn read_string(&mut self) -> Result<String, DecodeError> {
        self.read_ustring().map(Option::unwrap_or_default)
    }

    /// Reads a `vector<T>`; `None` is the null vector (count −1).
    pub fn read_vec<T: Decode>(&mut self) -> Result<Option<Vec<T>>, DecodeError> {
        let Some(count) = self.read_len()? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(count.min(self.remaining() / MIN_ELEMENT_LEN));
        for _ in 0..count {
            out.push(T::decode(self)?);
        }
        Ok(Some(out))
    }

    /// Reads a `vector<T>`, mapping null to empty.
    pub fn read_vec_or_empty<T: Decode>(&mut self) -> Result<Vec<T>, DecodeError> {
        self.read_vec().map(Option::unwrap_or_default)
    }
}

/// Appends a big-endian `int`.
pub fn put_i32(w: &mut Vec<u8>, v: i32) {
    w.extend_from_slice(&v.to_be_bytes());
}

/// Appends a big-endian `long`.
pub fn put_i64(w: &mut Vec<u8>, v: i64) {
    w.extend_from_slice(&v.to_be_bytes());
}

/// An optional trailing bool: written only when present (see [`Reader::read_trailing_bool`]).
pub fn put_trailing_bool(w: &mut Vec<u8>, v: Option<bool>) {
    if let Some(v) = v {
        put_bool(w, v);
    }
}

/// Appends a `boolean` byte.
pub fn put_bool(w: &mut Vec<u8>, v: bool) {
    w.push(u8::from(v));
}

/// Appends a `buffer`; `None` encodes as length −1.
pub fn put_buffer(w: &mut Vec<u8>, v: Option<&[u8]>) {
    match v {
        None => put_i32(w, -1),
        Some(b) => {
            put_len(w, b.len());
            w.extend_from_slice(b);
        }
    }
}

/// Appends a non-null `ustring`.
pub fn put_str(w: &mut Vec<u8>, v: &str) {
    put_buffer(w, Some(v.as_bytes()));
}

/// Appends a `vector<T>`.
pub fn put_vec<T: Encode>(w: &mut Vec<u8>, v: &[T]) {
    put_len(w, v.len());
    for item in v {
        item.encode(w);
    }
}

/// Lengths beyond i32 cannot be framed at all; saturating keeps encoding total and the frame limit rejects it.
fn put_len(w: &mut Vec<u8>, len: usize) {
    put_i32(w, i32::try_from(len).unwrap_or(i32::MAX));
}

/// The empty body of ping, closeSession and whoAmI requests.
impl Encode for () {
    fn encode(&self, _: &mut Vec<u8>) {}
}

impl Decode for () {
    fn decode(_: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

impl Encode for String {
    fn encode(&self, w: &mut Vec<u8>) {
        put_str(w, self);
    }
}

impl Decode for String {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.read_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_and_empty_buffers_differ() {
        let mut w = Vec::new();
        put_buffer(&mut w, None);
        put_buffer(&mut w, Some(b""));
        assert_eq!(w, [255, 255, 255, 255, 0, 0, 0, 0]);
        let mut r = Reader::new(&w);
        assert_eq!(r.read_buffer().unwrap(), None);
        assert_eq!(r.read_buffer().unwrap(), Some(vec![]));
    }

    #[test]
    fn hostile_lengths_are_errors() {
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(matches!(r.read_buffer(), Err(DecodeError::UnexpectedEof { .. })));
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(r.read_buffer(), Err(DecodeError::InvalidLength(-2)));
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(r.read_vec::<String>().is_err());
    }
}
