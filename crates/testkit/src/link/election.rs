//! ZooKeeper's election handshake, as far as a link between two members must know it.
//!
//! A member opening an election connection first sends an initial message: protocol version (a negative `long`),
//! its server id (`long`), then its election address as a length-prefixed string (`int` + bytes,
//! `host:port|host:port...`). A receiver with a higher id closes the connection and connects back to that
//! advertised address (ZooKeeper 3.8 `QuorumCnxManager.handleConnection`), which would bypass the links. The link
//! replaces the address with that of the link back to the sender, as a NAT would.

use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// ZooKeeper reads at most this much of an initial message's address (its `maxBuffer` default is far larger;
/// a real address list is a few dozen bytes).
const MAX_ADDRESS_LEN: usize = 4096;

/// Reads the initial message from `from`, writes it to `to` with `advertise` as the election address. An old
/// protocol message (a non-negative first `long`: just the id) is passed on unchanged.
pub(crate) async fn rewrite_initial_message<R, W>(
    from: &mut R,
    to: &mut W,
    advertise: SocketAddr,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let version = from.read_i64().await?;
    if version >= 0 {
        return to.write_all(&version.to_be_bytes()).await;
    }
    let sid = from.read_i64().await?;
    let len = from.read_i32().await?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&n| n <= MAX_ADDRESS_LEN)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("initial message address of {len} bytes"),
            )
        })?;
    let mut address = vec![0u8; len];
    from.read_exact(&mut address).await?;
    let message = encode(version, sid, &advertise.to_string());
    tracing::debug!(sid, from = %String::from_utf8_lossy(&address), to = %advertise, "link rewrote an election address");
    to.write_all(&message).await
}

fn encode(version: i64, sid: i64, address: &str) -> Vec<u8> {
    let mut message = Vec::with_capacity(20 + address.len());
    message.extend_from_slice(&version.to_be_bytes());
    message.extend_from_slice(&sid.to_be_bytes());
    message.extend_from_slice(&(address.len() as i32).to_be_bytes());
    message.extend_from_slice(address.as_bytes());
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_address_is_replaced_and_the_length_follows() {
        let sent = encode(-65536, 3, "127.0.0.1:4|127.0.0.2:5");
        let mut out = Vec::new();
        rewrite_initial_message(&mut &sent[..], &mut out, "127.0.0.1:40000".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(out, encode(-65536, 3, "127.0.0.1:40000"));
    }

    #[tokio::test]
    async fn an_old_protocol_message_passes() {
        let mut out = Vec::new();
        rewrite_initial_message(
            &mut &7i64.to_be_bytes()[..],
            &mut out,
            "127.0.0.1:1".parse().unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(out, 7i64.to_be_bytes());
    }
}
