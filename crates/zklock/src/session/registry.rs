//! What [`Session::close`](crate::Session::close) needs: the nodes of ours that are alive on a session, so that
//! closing removes them all at once, and a flag that refuses new ones afterwards.
//!
//! Every [`OwnNode`](crate::node::own::OwnNode) (a lock, lease or election contender, a group member, a double
//! barrier participant, a two-phase-commit party) registers here from the moment its create may be sent until it
//! is dropped. Known by directory and unique prefix, not by name: a node whose create reply was lost is found by
//! its prefix, as the node itself does.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;
use zookeeper_client::{self as zk, Client};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::path::child_path;
use crate::base::retry::RetryPolicy;

/// The live nodes of one session's recipes.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    /// Cancelled by `close`: no node is registered afterwards, and lost signals report `ClientClosed`.
    closed: CancellationToken,
    next: AtomicU64,
    /// id → (directory, unique prefix).
    live: Mutex<HashMap<u64, (String, String)>>,
}

/// One node's entry; dropping it removes the entry.
#[derive(Debug)]
pub(crate) struct Registration {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.live().remove(&self.id);
    }
}

impl Registry {
    fn live(&self) -> MutexGuard<'_, HashMap<u64, (String, String)>> {
        // Nothing panics while holding the lock; a poisoned map is still a consistent one.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers our node `dir`/`unique…`; [`Error::Closed`] once the session has been closed.
    pub(crate) fn register(self: &Arc<Self>, dir: &str, unique: &str) -> Result<Registration> {
        let mut live = self.live();
        // Checked under the lock, so `close` (which sets the flag before it takes the lock) sees every node
        // registered before it.
        if self.closed.is_cancelled() {
            return Err(Error::Closed);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        live.insert(id, (dir.to_owned(), unique.to_owned()));
        Ok(Registration {
            registry: Arc::clone(self),
            id,
        })
    }

    /// Cancelled once the session has been closed.
    pub(crate) fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Refuses new nodes, then deletes every registered one: one listing per directory, then every delete sent
    /// before the first reply is awaited. Returns how many nodes were deleted.
    pub(crate) async fn close(&self, client: &Client, retry: &RetryPolicy) -> Result<usize> {
        self.closed.cancel();
        let mut by_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (dir, unique) in self.live().values() {
            by_dir.entry(dir.clone()).or_default().push(unique.clone());
        }
        let mut paths = Vec::new();
        for (dir, uniques) in by_dir {
            let children = idioms::list_or_empty(client, retry, &dir).await?;
            paths.extend(
                children
                    .iter()
                    .filter(|name| uniques.iter().any(|unique| name.starts_with(unique.as_str())))
                    .map(|name| child_path(&dir, name)),
            );
        }
        // `zookeeper-client` sends a request when the method is called: all deletes go out now.
        let sent: Vec<_> = paths
            .iter()
            .map(|path| (path, client.delete(path, None)))
            .collect();
        let mut deleted = 0;
        for (path, reply) in sent {
            match reply.await {
                Ok(()) => deleted += 1,
                Err(zk::Error::NoNode) => {}
                Err(err) if crate::base::retry::is_connection_loss(&err) => {
                    idioms::delete_if_exists(client, retry, path, None).await?;
                    deleted += 1;
                }
                Err(err) => return Err(Error::zk("delete", path, err)),
            }
        }
        Ok(deleted)
    }
}
