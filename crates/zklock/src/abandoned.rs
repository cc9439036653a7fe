//! Deletes of abandoned nodes that are still under way, so that a new attempt of the same session in the same
//! directory can wait for them.
//!
//! A cancelled or failed acquire deletes its node in the background (`own_node.rs`). When the connection is down
//! that delete is retried, and until it lands the abandoned node is still a child of the directory. A recipe that
//! *counts* children (the double barrier) would count it together with the node of the session's next attempt:
//! one participant, two arrivals (docs/reliability.md, finding 6). Such a recipe calls [`settled`] before it
//! creates its node: the session's abandoned nodes in that directory are then gone (or their delete has ended for
//! good — the session expired, or the server refused the delete).
//!
//! Keyed by session id and directory; an entry lives from the `Drop` that abandons a node (registered before the
//! drop returns, so an attempt started after it always sees it) until the background delete ends.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;
use zookeeper_client::Client;

type Key = (i64, String);

/// For each (session, directory): one token per background delete, cancelled when that delete ends.
static PENDING: LazyLock<Mutex<HashMap<Key, Vec<CancellationToken>>>> = LazyLock::new(Default::default);

fn pending() -> MutexGuard<'static, HashMap<Key, Vec<CancellationToken>>> {
    // Nothing panics while holding the lock; a poisoned map is still a consistent one.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A background delete under way; dropping it (when the delete task ends, however it ends) wakes the waiters.
#[derive(Debug)]
pub(crate) struct Pending {
    key: Key,
    token: CancellationToken,
}

/// Registers a background delete of an abandoned node of `client`'s session in `dir`.
pub(crate) fn register(client: &Client, dir: &str) -> Pending {
    let key = (client.session_id().0, dir.to_owned());
    let token = CancellationToken::new();
    pending().entry(key.clone()).or_default().push(token.clone());
    Pending { key, token }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.token.cancel();
        let mut pending = pending();
        if let Some(tokens) = pending.get_mut(&self.key) {
            tokens.retain(|token| !token.is_cancelled());
            if tokens.is_empty() {
                pending.remove(&self.key);
            }
        }
    }
}

/// Waits until every background delete of `client`'s session in `dir` that was registered before this call has
/// ended. Returns at once when there is none (the common case: one map lookup).
pub(crate) async fn settled(client: &Client, dir: &str) {
    let key = (client.session_id().0, dir.to_owned());
    let tokens = pending().get(&key).cloned().unwrap_or_default();
    if tokens.is_empty() {
        return;
    }
    tracing::debug!(%dir, count = tokens.len(), "waiting for our abandoned nodes here to be deleted");
    for token in tokens {
        token.cancelled().await;
    }
}
