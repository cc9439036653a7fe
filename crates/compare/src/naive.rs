//! The naive lock of the ZooKeeper design documents — a benchmark baseline, **not a recipe to use**.
//!
//! Everybody tries to create the same ephemeral node; whoever succeeds holds the lock. The losers set an `exists`
//! watch on that node and, when it changes, all try again. So every release wakes every waiter (the *herd
//! effect*): N waiters cost N notifications, N failed creates and N new watches per hand-off, and the order of
//! the hand-offs is whoever's create the server happens to take first. The fair lock (`zklock::Mutex`, Curator's
//! `InterProcessMutex`) queues sequential nodes and wakes exactly one waiter per release; `compare-scale` runs this
//! one beside it to show what that saves.
//!
//! No fencing, no lost signal, no handling of connection loss (a lost create reply would leave our own node
//! blocking us until the session ends): it exists only to be measured.

use zookeeper_client::{self as zk, Acls, CreateMode};

/// The naive lock on one node path (its parent must exist; [`NaiveLock::lock`] creates missing parents).
#[derive(Debug, Clone)]
pub struct NaiveLock {
    client: zk::Client,
    path: String,
}

/// Holding a [`NaiveLock`]: [`NaiveGuard::release`] deletes the node.
#[derive(Debug)]
pub struct NaiveGuard {
    client: zk::Client,
    path: String,
}

impl NaiveLock {
    /// A lock on the node `path` (e.g. `/locks/naive/lock`), for the session of `client`.
    pub fn new(client: &zk::Client, path: &str) -> NaiveLock {
        NaiveLock {
            client: client.clone(),
            path: path.to_string(),
        }
    }

    /// Waits until our create of the node succeeds. `on_watch` is called each time we start waiting on a watch
    /// (with `true`) and when that wait ends (with `false`), so a benchmark can tell when everybody waits.
    pub async fn lock_observed(&self, on_watch: impl Fn(bool)) -> Result<NaiveGuard, zk::Error> {
        let mode = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        loop {
            match self.client.create(&self.path, b"", &mode).await {
                Ok(_) => {
                    return Ok(NaiveGuard {
                        client: self.client.clone(),
                        path: self.path.clone(),
                    })
                }
                Err(zk::Error::NodeExists) => {
                    // Held by somebody: watch the node and try again when it changes (or at once if it is gone).
                    let (stat, watcher) = self.client.check_and_watch_stat(&self.path).await?;
                    if stat.is_some() {
                        on_watch(true);
                        let event = watcher.changed().await;
                        on_watch(false);
                        if event.event_type == zk::EventType::Session && event.session_state.is_terminated() {
                            return Err(zk::Error::SessionExpired);
                        }
                    }
                }
                Err(zk::Error::NoNode) => {
                    let parent = match self.path.rfind('/') {
                        Some(0) | None => return Err(zk::Error::NoNode),
                        Some(i) => &self.path[..i],
                    };
                    match self
                        .client
                        .mkdir(parent, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
                        .await
                    {
                        Ok(()) | Err(zk::Error::NodeExists) => {}
                        Err(err) => return Err(err),
                    }
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// [`NaiveLock::lock_observed`] without an observer.
    pub async fn lock(&self) -> Result<NaiveGuard, zk::Error> {
        self.lock_observed(|_| {}).await
    }
}

impl NaiveGuard {
    /// Deletes the node, waking every waiter.
    pub async fn release(self) -> Result<(), zk::Error> {
        self.client.delete(&self.path, None).await
    }
}
