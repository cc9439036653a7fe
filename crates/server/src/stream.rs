//! The socket a connection task reads and its outbox writes: a client's TCP socket (the plain client port) or
//! one end of a Unix socket pair whose other end carries a TLS connection's plaintext (the secure client port,
//! see `tls.rs`). Both are used the same way — non-blocking reads and `writev`s from whichever thread makes a
//! reply sendable — so the connection code, the outbox and the four-letter words do not care which it is.

use std::io::{self, IoSlice};
use std::net::Shutdown;

use bytes::BufMut;
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// A connected stream socket.
#[derive(Debug)]
pub enum Stream {
    /// A plain client connection.
    Tcp(TcpStream),
    /// The server's end of a TLS connection's plaintext.
    Unix(UnixStream),
}

impl Stream {
    /// Waits until the socket may be readable.
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.readable().await,
            Stream::Unix(s) => s.readable().await,
        }
    }

    /// Waits until the socket may be writable.
    pub async fn writable(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.writable().await,
            Stream::Unix(s) => s.writable().await,
        }
    }

    /// Runs `f` as the I/O of `interest`: a `WouldBlock` from it clears the readiness (tokio's `try_io`).
    pub fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        match self {
            Stream::Tcp(s) => s.try_io(interest, f),
            Stream::Unix(s) => s.try_io(interest, f),
        }
    }

    /// Reads what the socket has into `buf` without waiting.
    pub fn try_read_buf<B: BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read_buf(buf),
            Stream::Unix(s) => s.try_read_buf(buf),
        }
    }

    /// Writes as much of `bufs` as the socket takes without waiting.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write_vectored(bufs),
            Stream::Unix(s) => s.try_write_vectored(bufs),
        }
    }

    /// Writes all of `bytes`, waiting for room.
    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.writable().await?;
            match self.try_io(Interest::WRITABLE, || match self {
                Stream::Tcp(s) => s.try_write(bytes),
                Stream::Unix(s) => s.try_write(bytes),
            }) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// `shutdown(2)`.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => socket2::SockRef::from(s).shutdown(how),
            Stream::Unix(s) => socket2::SockRef::from(s).shutdown(how),
        }
    }
}
