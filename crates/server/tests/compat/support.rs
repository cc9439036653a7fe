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

/// Creates `path` (persistent, no data) whose ACL grants `permission` to the one id `scheme:id`: "ok", or the
/// error's name.
pub async fn create_with_acl(
    client: &zookeeper_client::Client,
    path: &str,
    permission: zookeeper_client::Permission,
    (scheme, id): (&str, &str),
) -> String {
    let acl = [zookeeper_client::Acl::new(
        permission,
        zookeeper_client::AuthId::new(scheme, id),
    )];
    let mode = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(&acl));
    outcome(client.create(path, b"", &mode).await)
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

/// The session's identities (`whoami`), sorted, as text.
pub async fn who(client: &zookeeper_client::Client) -> String {
    format!("{:?}", crate::shared::auth_ids(client).await)
}

/// The identities in the body of a raw whoAmI reply, sorted (their order is unspecified, see [`who`]); lenient, as a
/// reply that differs must still print.
pub fn who_am_i_ids(body: &[u8]) -> Vec<String> {
    let mut r = zklock_codec::Reader::new(body);
    let mut ids = Vec::new();
    for _ in 0..r.read_i32().unwrap_or(0).clamp(0, 10) {
        ids.push(format!(
            "{}:{}",
            r.read_string().unwrap(),
            r.read_string().unwrap()
        ));
    }
    ids.sort();
    ids
}
