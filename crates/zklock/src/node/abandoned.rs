//! Deletes of abandoned nodes that are still under way, so that a new attempt of this process in the same
//! directory can wait for them.
//!
//! A cancelled or failed acquire deletes its node in the background (`node/own.rs`). When the connection is down
//! that delete is retried, and until it lands the abandoned node is still a child of the directory. A recipe that
//! *counts* children (the double barrier) would count it together with the node of the session's next attempt:
//! one participant, two arrivals (docs/reliability.md, finding 6). Such a recipe calls [`settled`] before it
//! creates its node: this process's abandoned nodes in that directory are then gone (or their delete has ended
//! for good — the session ended, or the server refused the delete).
//!
//! Keyed by directory, for every session of the process (the next attempt may come on a new session); an entry
//! lives from the `Drop` that abandons a node (registered before the drop returns, so an attempt started after it
//! always sees it) until the background delete ends.
//!
//! **Orphans.** A background delete can also end because the session ended. `zookeeper-client` declares its
//! session expired when it cannot reconnect within the session timeout — without the server's word. The server may
//! keep that session, and its ephemeral node, for a while longer (it restarts session timers after a restart, or
//! another connection kept the session alive), so the node can still count after the process has started a new
//! session. Such nodes are kept here by directory (names are unique), and [`settled`] deletes them with the new
//! session before it creates a node there (found by the fault campaign: docs/reliability.md, finding 8).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;
use zookeeper_client::Client;

use crate::base::error::Result;
use crate::base::idioms;
use crate::base::path::child_path;
use crate::base::retry::RetryPolicy;

/// For each directory: one token per background delete, cancelled when that delete ends.
static PENDING: LazyLock<Mutex<HashMap<String, Vec<CancellationToken>>>> = LazyLock::new(Default::default);

fn pending() -> MutexGuard<'static, HashMap<String, Vec<CancellationToken>>> {
    // Nothing panics while holding the lock; a poisoned map is still a consistent one.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// By directory: names of our nodes whose session ended (as far as our client knows) before we could delete them.
static ORPHANS: LazyLock<Mutex<HashMap<String, Vec<String>>>> = LazyLock::new(Default::default);

fn orphans() -> MutexGuard<'static, HashMap<String, Vec<String>>> {
    ORPHANS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remembers our node `dir`/`name` whose session ended before its delete was confirmed: the next [`settled`] in
/// `dir` deletes it with a live session.
pub(crate) fn orphan(dir: &str, name: &str) {
    tracing::debug!(%dir, %name, "our session ended before our node's delete was confirmed; deleting it later");
    orphans().entry(dir.to_owned()).or_default().push(name.to_owned());
}

/// A background delete under way; dropping it (when the delete task ends, however it ends) wakes the waiters.
#[derive(Debug)]
pub(crate) struct Pending {
    dir: String,
    token: CancellationToken,
}

/// Registers a background delete of an abandoned node in `dir`.
pub(crate) fn register(dir: &str) -> Pending {
    let token = CancellationToken::new();
    pending().entry(dir.to_owned()).or_default().push(token.clone());
    Pending {
        dir: dir.to_owned(),
        token,
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.token.cancel();
        let mut pending = pending();
        if let Some(tokens) = pending.get_mut(&self.dir) {
            tokens.retain(|token| !token.is_cancelled());
            if tokens.is_empty() {
                pending.remove(&self.dir);
            }
        }
    }
}

/// Waits until every background delete in `dir` that was registered before this call has ended, then deletes this process's orphans in `dir` (see the module documentation) with `client`. Returns at
/// once when there is nothing to do (the common case: two map lookups).
///
/// # Errors
/// Deleting an orphan failed (e.g. our session ended too); the orphans not yet deleted are kept for next time.
pub(crate) async fn settled(client: &Client, retry: &RetryPolicy, dir: &str) -> Result<()> {
    let tokens = pending().get(dir).cloned().unwrap_or_default();
    if !tokens.is_empty() {
        tracing::debug!(%dir, count = tokens.len(), "waiting for our abandoned nodes here to be deleted");
        for token in tokens {
            token.cancelled().await;
        }
    }
    let mut names = orphans().remove(dir).unwrap_or_default();
    while let Some(name) = names.pop() {
        if let Err(err) = idioms::delete_if_exists(client, retry, &child_path(dir, &name), None).await {
            names.push(name);
            orphans().entry(dir.to_owned()).or_default().extend(names);
            return Err(err);
        }
        tracing::debug!(%dir, %name, "deleted our node of an ended session");
    }
    Ok(())
}
