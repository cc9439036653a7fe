//! Connecting to ZooKeeper (or an embedded server) and closing sessions properly on the way out.

use std::time::Duration;

use anyhow::{Context, Result};
use zookeeper_client::Client;

use crate::cli::{ConnectArgs, OptionalConnectArgs};

/// Connects with the requested session timeout; a clear error if nobody answers.
pub async fn connect(hosts: &str, session_timeout: f64) -> Result<Client> {
    let timeout = Duration::from_secs_f64(session_timeout.max(0.1));
    let connect = Client::connector().with_session_timeout(timeout).connect(hosts);
    tokio::time::timeout(timeout + Duration::from_secs(5), connect)
        .await
        .map_err(|_| anyhow::anyhow!("no ZooKeeper answered at {hosts}"))?
        .with_context(|| format!("cannot connect to ZooKeeper at {hosts}"))
}

/// Connects using `--connect`/`ZKLOCK_CONNECT`.
pub async fn connect_args(args: &ConnectArgs) -> Result<Client> {
    connect(&args.hosts, args.session_timeout).await
}

/// Closes the session and waits (briefly) for ZooKeeper to confirm, so that our ephemeral nodes disappear now
/// rather than a session timeout later. One helper for the binary and the benchmark workloads it runs: it lives in
/// `zklock-bench`, which the binary depends on anyway (without the test-only `compare` feature).
pub use zklock_bench::close;

/// Either the server named by `--connect`, or an embedded one started for this command.
pub struct Target {
    pub hosts: String,
    pub session_timeout: f64,
    pub embedded: Option<zklock_server::Server>,
}

impl Target {
    pub async fn resolve(args: &OptionalConnectArgs) -> Result<Target> {
        match &args.hosts {
            Some(hosts) => Ok(Target {
                hosts: hosts.clone(),
                session_timeout: args.session_timeout,
                embedded: None,
            }),
            None => {
                let server = zklock_server::Server::start(zklock_server::ServerConfig::default())
                    .await
                    .context("cannot start the embedded server")?;
                Ok(Target {
                    hosts: server.connect_string(),
                    session_timeout: args.session_timeout,
                    embedded: Some(server),
                })
            }
        }
    }

    pub async fn connect(&self) -> Result<Client> {
        connect(&self.hosts, self.session_timeout).await
    }

    pub async fn shutdown(self) -> Result<()> {
        if let Some(server) = self.embedded {
            server.shutdown().await.context("embedded server shutdown")?;
        }
        Ok(())
    }
}
