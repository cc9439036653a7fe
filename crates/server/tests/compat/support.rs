//! Small helpers shared by the compat tests.

use std::str::FromStr;
use std::time::Duration;

/// Generous bound for "this must happen" waits on a loaded 2-core machine.
pub const WAIT: Duration = Duration::from_secs(30);

/// The environment variable `name` parsed, or `default` when unset or unparsable.
pub fn env_or<T: FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// "ok", or the error's name: what a side-by-side run compares.
pub fn outcome<T>(result: Result<T, zookeeper_client::Error>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => format!("{e:?}"),
    }
}

/// The ACL of `path` as text (scheme:id:permissions each), or the error's name.
pub async fn acl_of(client: &zookeeper_client::Client, path: &str) -> String {
    match client.get_acl(path).await {
        Ok((acl, _)) => format!(
            "{:?}",
            acl.iter()
                .map(|a| format!("{}:{}:{:?}", a.scheme(), a.id(), a.permission()))
                .collect::<Vec<_>>()
        ),
        Err(e) => format!("{e:?}"),
    }
}

/// The session's identities (`whoami`), sorted: ZooKeeper keeps a connection's identities in a hash set, their
/// order is not part of the contract.
pub async fn who(client: &zookeeper_client::Client) -> String {
    let mut ids: Vec<String> = client
        .list_auth_users()
        .await
        .expect("whoami")
        .iter()
        .map(|u| format!("{}:{}", u.scheme(), u.user()))
        .collect();
    ids.sort();
    format!("{ids:?}")
}
