//! Connecting to ZooKeeper (or an embedded server) and closing sessions properly on the way out.

use std::time::Duration;

use anyhow::{Context, Result};
use zookeeper_client::Client;

use crate::cli::{ConnectArgs, OptionalConnectArgs};

/// How long a server may take to accept a TCP connection when we look for why none could be reached.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects with the requested session timeout (`hosts` is a connect string checked by
/// [`crate::cli::connect_string`]; `session_timeout` a duration checked by [`crate::cli::seconds`]).
///
/// Fails fast and says why: every server is tried once ("fail eagerly"), and when none can be reached the error
/// gives each one's reason as the operating system tells it (connection refused, name not known); a chroot that
/// does not exist is named as such rather than failing every later request.
pub async fn connect(hosts: &str, session_timeout: f64) -> Result<Client> {
    let timeout = Duration::from_secs_f64(session_timeout.max(0.1));
    let connect = Client::connector()
        .with_session_timeout(timeout)
        .with_fail_eagerly()
        .connect(hosts);
    let client = match tokio::time::timeout(timeout + Duration::from_secs(5), connect).await {
        Err(_) => anyhow::bail!("no ZooKeeper answered at {hosts}"),
        Ok(Err(zookeeper_client::Error::NoHosts)) => {
            anyhow::bail!(
                "cannot connect to ZooKeeper at {hosts}: {}",
                unreachable(hosts).await
            )
        }
        Ok(result) => result.with_context(|| format!("cannot connect to ZooKeeper at {hosts}"))?,
    };
    if client.path() != "/" {
        let found = client
            .check_stat("/")
            .await
            .with_context(|| format!("cannot connect to ZooKeeper at {hosts}"))?;
        if found.is_none() {
            let chroot = client.path().to_owned();
            close(client).await;
            anyhow::bail!("the chroot {chroot} does not exist on ZooKeeper at {hosts} (create it first)");
        }
    }
    Ok(client)
}

/// Why no server of `hosts` can be reached, as the operating system says it, one reason per server.
async fn unreachable(hosts: &str) -> String {
    let servers = hosts.split('/').next().unwrap_or(hosts);
    let mut reasons = Vec::new();
    for server in servers.split(',') {
        let server = server.strip_prefix("tcp://").unwrap_or(server);
        let address = if server.ends_with(']') || !server.contains(':') {
            format!("{server}:2181")
        } else {
            server.to_owned()
        };
        let reason =
            match tokio::time::timeout(CONNECTION_TIMEOUT, tokio::net::TcpStream::connect(&address)).await {
                Err(_) => "no answer".to_owned(),
                Ok(Err(err)) => err.to_string(),
                // It accepts connections now, yet no session could be established a moment ago.
                Ok(Ok(_)) => "no ZooKeeper session could be established".to_owned(),
            };
        reasons.push((server, reason));
    }
    match &reasons[..] {
        [(_, reason)] => reason.clone(),
        _ => reasons
            .iter()
            .map(|(server, reason)| format!("{server}: {reason}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Connects using `--connect`/`ZKLOCK_CONNECT`.
pub async fn connect_args(args: &ConnectArgs) -> Result<Client> {
    connect(&args.hosts, args.session_timeout).await
}

/// Closes the session and waits (briefly) for ZooKeeper to confirm, so that our ephemeral nodes disappear now
/// rather than a session timeout later. One helper for the binary and the benchmark workloads it runs: it lives in
/// `zklock-bench`, which the binary depends on anyway (for `zklock bench`).
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
