//! Client helpers both test binaries use (`it` and `compat` include this file as their module `shared`).

use std::time::Duration;

use zookeeper_client as zk;

/// A session on the plain port at `addr` (10 s session timeout); panics unless it is established within 30 s.
pub async fn plain_client(addr: &str) -> zk::Client {
    tokio::time::timeout(
        Duration::from_secs(30),
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(addr),
    )
    .await
    .expect("connect in time")
    .expect("connect")
}

/// The session's identities (`whoami`) as `scheme:id`, sorted: ZooKeeper keeps a connection's identities in a hash
/// set, their order is not part of the contract.
pub async fn auth_ids(client: &zk::Client) -> Vec<String> {
    let mut ids: Vec<String> = client
        .list_auth_users()
        .await
        .expect("whoami")
        .iter()
        .map(|u| format!("{}:{}", u.scheme(), u.user()))
        .collect();
    ids.sort();
    ids
}
