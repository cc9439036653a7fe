//! What the examples share: a ZooKeeper session from the command line.

/// Connects to the ZooKeeper named by the example's first argument (a connect string such as
/// `127.0.0.1:2181` or `zk1:2181,zk2:2181,zk3:2181`), `127.0.0.1:2181` without one.
pub async fn connect() -> Result<zookeeper_client::Client, zookeeper_client::Error> {
    let hosts = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    zookeeper_client::Client::connect(&hosts).await
}
