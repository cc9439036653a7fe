//! Decoding errors. Every decoder returns these instead of panicking: the bytes come from the network.

/// Why a jute record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The record needs more bytes than the frame holds.
    #[error("record truncated: needed {needed} more bytes, {remaining} left")]
    UnexpectedEof {
        /// Bytes the next field needs.
        needed: usize,
        /// Bytes left in the frame.
        remaining: usize,
    },
    /// A length or count field is negative (other than −1 = null) or larger than the frame.
    #[error("invalid length {0}")]
    InvalidLength(i32),
    /// A field that must not be null was null (length −1).
    #[error("unexpected null")]
    UnexpectedNull,
    /// A numeric code (opcode, create mode, ...) outside its enumeration.
    #[error("invalid {what} {value}")]
    InvalidValue {
        /// Which enumeration.
        what: &'static str,
        /// The offending value.
        value: i32,
    },
}

/// Why a frame could not be cut from the byte stream. Either is fatal for the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length prefix is negative.
    #[error("negative frame length {0}")]
    Negative(i32),
    /// The length prefix exceeds the configured maximum (jute.maxbuffer).
    #[error("frame length {len} exceeds maximum {max}")]
    TooLong {
        /// Announced length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
}
