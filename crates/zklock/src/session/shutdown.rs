//! Ending a ZooKeeper session from our side: what [`Session::shutdown`](crate::Session::shutdown) does after
//! `close` has deleted our nodes.
//!
//! `zookeeper-client` 0.11 has no `Client::close`: it sends `closeSession` only when the last clone of a `Client`
//! is dropped, and the application and every recipe hold clones. So zklock ends the session the way ZooKeeper
//! allows any client that knows a session's id and password to: it connects once more with them
//! (`Connector::with_session`) — the server moves the session to that connection and closes the old one — and
//! drops that client at once, which sends `closeSession`. The server then deletes every ephemeral node of the
//! session, and the application's `Client`, reconnecting, learns that its session is over (`Expired`). This needs
//! the connect string, so it works for sessions zklock connected ([`Session::connect`](crate::Session::connect),
//! [`Session::reconnecting`](crate::Session::reconnecting)).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::{self as zk, Client, SessionInfo};

use crate::base::error::Result;
use crate::base::idioms;

type ResumeFn = dyn Fn(SessionInfo) -> Pin<Box<dyn Future<Output = std::result::Result<Client, zk::Error>> + Send>>
    + Send
    + Sync;

/// How to connect to the servers again with a given session.
#[derive(Clone)]
pub(crate) struct Resume {
    hosts: String,
    connect: Arc<ResumeFn>,
}

impl std::fmt::Debug for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resume")
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// How long to wait, after a `closeSession`, for our own client to see its session over before trying again.
const WAIT: Duration = Duration::from_secs(2);

/// How many connections with the session to try.
const TRIES: u32 = 5;

impl Resume {
    pub(crate) fn new(connector: zk::Connector, hosts: &str) -> Resume {
        let owned = hosts.to_owned();
        Resume {
            hosts: hosts.to_owned(),
            connect: Arc::new(move |session| {
                let (connector, hosts) = (connector.clone(), owned.clone());
                Box::pin(async move { connector.with_session(session).connect(&hosts).await })
            }),
        }
    }

    /// Ends the ZooKeeper session of `client`, and waits until `client` itself sees it over (the server's word):
    /// `Ok(true)`; `Ok(false)` if it does not within a few tries.
    ///
    /// Our own client, kicked off the session by the server, reconnects at once and may take the session back
    /// before the `closeSession` is sent: then the next try.
    pub(crate) async fn end(&self, client: &Client) -> Result<bool> {
        let mut states = client.state_watcher();
        for tries in 1..=TRIES {
            if idioms::session_ended(client.state()).is_some() {
                return Ok(true);
            }
            match (self.connect)(client.session().clone()).await {
                // Its last handle: dropping it sends `closeSession` (its task keeps the connection until answered).
                Ok(closer) => drop(closer),
                Err(zk::Error::SessionExpired | zk::Error::SessionMoved) => {}
                Err(err) if tries < TRIES => {
                    tracing::debug!(%err, tries, "closing the ZooKeeper session: connecting with it failed");
                }
                Err(err) => return Err(super::connect::connect_error(&self.hosts, err).await),
            }
            let over = async {
                while !states.peek_state().is_terminated() {
                    states.changed().await;
                }
            };
            if tokio::time::timeout(WAIT, over).await.is_ok() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
