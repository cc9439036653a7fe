//! Learning a session's password: `zookeeper_client` keeps it private, but sends it in every ConnectRequest.

use std::io;
use std::net::Ipv4Addr;

use tokio::net::TcpListener;
use zookeeper_client::Client;

use crate::frame::{read_frame, Read};

/// What re-attaching a session takes.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub session_id: i64,
    pub password: Vec<u8>,
    pub timeout_ms: i32,
}

/// Lets a throw-away client re-attach `client`'s session against a local listener that is not a server, and reads
/// the session id, password and timeout from the ConnectRequest it sends. No server sees that attempt.
pub(crate) async fn capture_credentials(client: &Client) -> io::Result<Credentials> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let decoy = listener.local_addr()?.to_string();
    let connector = Client::connector()
        .with_session(client.session().clone())
        .with_session_timeout(client.session_timeout());
    // The attempt never completes (nobody answers); the task is aborted once the request has been read. No
    // session task exists yet at that point, so aborting leaves nothing behind.
    let attempt = tokio::spawn(async move { connector.connect(&decoy).await.map(drop) });
    let captured = async {
        let (mut socket, _) = listener.accept().await?;
        match read_frame(&mut socket, None).await? {
            Read::Frame(frame) => parse_connect_request(&frame[4..]),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no ConnectRequest from the client",
            )),
        }
    }
    .await;
    attempt.abort();
    captured
}

/// ConnectRequest: protocolVersion i32, lastZxidSeen i64, timeOut i32, sessionId i64, passwd buffer, [readOnly].
pub(crate) fn parse_connect_request(body: &[u8]) -> io::Result<Credentials> {
    let invalid = || io::Error::new(io::ErrorKind::InvalidData, "malformed ConnectRequest");
    let timeout_ms = i32::from_be_bytes(
        body.get(12..16)
            .ok_or_else(invalid)?
            .try_into()
            .map_err(|_| invalid())?,
    );
    let session_id = i64::from_be_bytes(
        body.get(16..24)
            .ok_or_else(invalid)?
            .try_into()
            .map_err(|_| invalid())?,
    );
    let length = i32::from_be_bytes(
        body.get(24..28)
            .ok_or_else(invalid)?
            .try_into()
            .map_err(|_| invalid())?,
    );
    let length = usize::try_from(length).map_err(|_| invalid())?;
    let password = body.get(28..28 + length).ok_or_else(invalid)?.to_vec();
    Ok(Credentials {
        session_id,
        password,
        timeout_ms,
    })
}
