//! Embedded single-node ZooKeeper-wire-compatible server.
#![forbid(unsafe_code)]

mod acl;
mod config;
mod connection;
mod error;
mod fourlw;
mod ops;
mod path;
mod persist;
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
    /// The temporary data directory, when the config had none (removed when the server goes).
    temp_dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Recovers the data directory, binds `config.listen` and starts serving; the socket is bound and
    /// accepting when this returns.
    ///
    /// # Errors
    /// Bind failures, an unusable data directory, and storage corruption (see `zklock-storage` for the
    /// torn-tail policy: a torn last record is a clean end of log, damage elsewhere refuses to start).
    pub async fn start(config: ServerConfig) -> Result<Server, Error> {
        let (data_dir, temp_dir) = match &config.data_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("zklock-server-")
                    .tempdir()
                    .map_err(Error::DataDir)?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let mut options = zklock_storage::StorageOptions::new(data_dir);
        options.log_dir = config.data_log_dir.clone();
        let (storage, recovered) =
            tokio::task::spawn_blocking(move || zklock_storage::Storage::open(options)).await??;

        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(Error::Bind)?;
        let local_addr = listener.local_addr().map_err(Error::Bind)?;
        // Session ids are seeded from the clock, so they stay unique across restarts; recovered sessions
        // move the counter past themselves as well.
        let sessions = session::Sessions::new(config.tick_time, session::initial_session_id(state::now_ms()));
        let shared = server::make_shared(config, tree::DataTree::new(), sessions, 0, Durability::Memory);
        {
            let mut st = shared.lock();
            persist::recover(&mut st, recovered)?;
            st.mark_durable();
            st.set_log(Durability::Storage(storage));
        }
        let tasks = vec![
            tokio::spawn(server::accept_loop(shared.clone(), listener)),
            tokio::spawn(server::ticker(shared.clone())),
        ];
        tracing::info!(%local_addr, "zklock server listening");
        Ok(Server {
            local_addr,
            shared,
            tasks,
            temp_dir,
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

    /// Stops accepting, closes every connection after flushing its queued replies, writes a final
    /// snapshot and closes the log. Sessions are not closed: they survive into the next start.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.shared.shutdown.cancel();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        let (storage, snapshot) = {
            let mut st = self.shared.lock();
            let snapshot = (st.since_snapshot > 0).then(|| (st.last_zxid, persist::snapshot_blob(&st)));
            (st.take_storage(), snapshot)
        };
        if let Some(storage) = storage {
            tokio::task::spawn_blocking(move || {
                if let Some((zxid, blob)) = snapshot {
                    storage.save_snapshot(zxid, &blob)?;
                }
                storage.close()
            })
            .await??;
        }
        if let Some(dir) = self.temp_dir.take() {
            dir.close().map_err(Error::DataDir)?;
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}
