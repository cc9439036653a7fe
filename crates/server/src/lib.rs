//! Embedded single-node ZooKeeper-wire-compatible server.
#![forbid(unsafe_code)]

mod acl;
mod config;
mod connection;
mod error;
mod fourlw;
mod ops;
mod path;
mod server;
mod session;
mod shared;
mod state;
mod tree;
mod txn;
mod watch;

pub use config::{ConfigError, ServerConfig};
pub use error::Error;

use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

use crate::shared::Shared;
use crate::state::Durability;

/// A running server. Dropping it without [`Server::shutdown`] stops accepting but does not wait.
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Server {
    /// Binds `config.listen` and starts serving; the socket is bound and accepting when this returns.
    pub async fn start(config: ServerConfig) -> Result<Server, Error> {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(Error::Bind)?;
        let local_addr = listener.local_addr().map_err(Error::Bind)?;
        let now = state::now_ms();
        let sessions = session::Sessions::new(config.tick_time, session::initial_session_id(now));
        // Without a durable log the zxid is seeded from the clock (high 32 bits = seconds, like a fresh
        // ZooKeeper epoch), so clients that reconnect after a restart are not refused for having "seen the
        // future".
        let last_zxid = (now / 1000) << 32;
        let shared = server::make_shared(
            config,
            tree::DataTree::new(),
            sessions,
            last_zxid,
            Durability::Memory,
        );
        let tasks = vec![
            tokio::spawn(server::accept_loop(shared.clone(), listener)),
            tokio::spawn(server::ticker(shared.clone())),
        ];
        tracing::info!(%local_addr, "zklock server listening");
        Ok(Server {
            local_addr,
            shared,
            tasks,
        })
    }

    /// The address the server listens on (with the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A ZooKeeper connect string for this server, `"127.0.0.1:PORT"`.
    pub fn connect_string(&self) -> String {
        self.local_addr.to_string()
    }

    /// Stops accepting, closes every connection after flushing its queued replies, and closes storage.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.shared.shutdown.cancel();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}
