//! Why a connection to ZooKeeper could not be made, in words: `zookeeper-client` keeps trying the hosts of a
//! connect string until the session timeout and then reports `timeout` (or `no hosts`), dropping what each attempt
//! met — a refused connection, an unknown host. So after such a failure zklock tries each host once itself, with a
//! plain TCP connection, and names what it met.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use zookeeper_client as zk;

use crate::base::error::Error;

/// How long one host's TCP connection may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The error of a failed connection to servers zklock was not told of (a `connect` closure's).
pub(crate) fn unnamed(source: zk::Error) -> Error {
    Error::Connect {
        hosts: String::new(),
        reason: None,
        source,
    }
}

/// The error of a failed connection to `hosts` (a connect string; empty when unknown).
pub(crate) async fn connect_error(hosts: &str, source: zk::Error) -> Error {
    let reason = match source {
        zk::Error::Timeout | zk::Error::NoHosts | zk::Error::ConnectionLoss | zk::Error::Custom(_)
            if !hosts.is_empty() =>
        {
            let hosts = hosts.to_owned();
            tokio::task::spawn_blocking(move || unreachable(&hosts))
                .await
                .ok()
                .flatten()
        }
        _ => None,
    };
    Error::Connect {
        hosts: hosts.to_owned(),
        reason,
        source,
    }
}

/// Why no host of `hosts` takes a TCP connection (`127.0.0.1:2181: connection refused; …`), or `None` if one
/// does (then the failure was something else: the handshake, the session).
fn unreachable(hosts: &str) -> Option<String> {
    let mut reasons = Vec::new();
    for host in servers(hosts) {
        match probe(host) {
            Ok(()) => return None,
            Err(why) => reasons.push(format!("{host}: {why}")),
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// The `host:port` entries of a connect string (`tcp://a:2181,b:2181/chroot`): without the chroot and the
/// protocol prefixes.
fn servers(hosts: &str) -> impl Iterator<Item = &str> {
    hosts
        .split(',')
        .map(|host| host.split_once("://").map_or(host, |(_, rest)| rest))
        .map(|host| host.split_once('/').map_or(host, |(host, _)| host))
        .filter(|host| !host.is_empty())
}

fn probe(host: &str) -> Result<(), String> {
    let addrs: Vec<SocketAddr> = host
        .to_socket_addrs()
        .map_err(|err| format!("cannot resolve it: {err}"))?
        .collect();
    let mut last = "it resolves to no address".to_owned();
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = "connection refused (nothing listens there)".to_owned();
            }
            Err(err) => last = err.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_of_a_connect_string() {
        let hosts: Vec<_> = servers("tcp://a:1,b:2,tcp+tls://c:3/chroot/x").collect();
        assert_eq!(hosts, ["a:1", "b:2", "c:3"]);
    }

    #[tokio::test]
    async fn a_refused_connection_is_named() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = connect_error(&addr, zk::Error::Timeout).await.to_string();
        assert!(err.contains(&format!("{addr}: connection refused")), "{err}");
        assert!(err.contains("zookeeper-client: "), "{err}");
    }
}
