//! The idioms of `base/idioms.rs` as methods of the session context: every recipe holds a [`Session`], so none passes a
//! client and a retry policy around.

use zookeeper_client::{CreateMode, OneshotWatcher, Stat, WatchedEvent};

use crate::base::error::{At as _, Result};
use crate::base::idioms::*;
use crate::session::listener::QueueEvent;
use crate::session::Session;

/// The idioms as methods of the session context: every recipe holds a [`Session`], so none passes a client and a
/// retry policy around.
impl Session {
    /// Creates `dir` and its missing parents (`mkdir -p`) with the session's
    /// [`parent_acls`](Session::parent_acls): `CreateMode::Persistent`, or `CreateMode::Container` for queue
    /// directories the server may delete when they are empty again (see [`mkdir_containers`]). Existing nodes are
    /// fine; `/` exists.
    pub(crate) async fn mkdir(&self, dir: &str, mode: CreateMode) -> Result<()> {
        if dir == "/" {
            return Ok(());
        }
        if mode == CreateMode::Container {
            return mkdir_containers(self.client(), self.retry(), dir, self.parent_acls()).await;
        }
        let options = mode.with_acls(self.parent_acls());
        let client = self.client();
        self.retry()
            .run_at("create", dir, || client.mkdir(dir, &options))
            .await
    }

    /// Deletes `path` (only at `version`, if given); a node already gone is fine.
    pub(crate) async fn delete_if_exists(&self, path: &str, version: Option<i32>) -> Result<()> {
        delete_if_exists(self.client(), self.retry(), path, version).await
    }

    /// Deletes `path` (any version) in the background — a receipt whose write is settled, say: the request is
    /// sent now, only its reply (and, after a connection loss, a retry) is awaited later. A node that cannot be
    /// deleted is left to the end of the session if it is ephemeral; `what` names it in the debug log.
    pub(crate) fn delete_in_background(&self, path: &str, what: &'static str) {
        let delete = self.client().delete(path, None);
        let (session, path) = (self.clone(), path.to_owned());
        tokio::spawn(async move {
            let result = match delete.await {
                Err(err) if crate::base::retry::is_connection_loss(&err) => {
                    session.delete_if_exists(&path, None).await
                }
                other => other.at("delete", &path).if_exists().map(drop),
            };
            if let Err(err) = result {
                tracing::debug!(%path, %err, "removing {what} failed");
            }
        });
    }

    /// The children of `dir`; empty if it does not exist.
    pub(crate) async fn list_or_empty(&self, dir: &str) -> Result<Vec<String>> {
        list_or_empty(self.client(), self.retry(), dir).await
    }

    /// The stat of `path`; `None` if it does not exist.
    pub(crate) async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let client = self.client();
        self.retry()
            .run_at("exists", path, || client.check_stat(path))
            .await
    }

    /// The data and stat of `path`; `None` if it does not exist.
    pub(crate) async fn get(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        let client = self.client();
        self.retry()
            .run_at("getData", path, || client.get_data(path))
            .await
            .if_exists()
    }

    /// The stat of `path` (`None`: it does not exist) and a watch that fires when it is created, changed or deleted.
    pub(crate) async fn watch_exists(&self, path: &str) -> Result<(Option<Stat>, OneshotWatcher)> {
        let client = self.client();
        self.retry()
            .run_at("exists", path, || client.check_and_watch_stat(path))
            .await
    }

    /// The one wait of every recipe: tells the listener we wait `on` a node, waits for `watcher` to fire, fails if
    /// the notification says the session ended, and tells the listener we were woken. Whatever else the
    /// notification says, the caller looks again: a notification is a reason to look, never an answer.
    pub(crate) async fn await_change(&self, watcher: OneshotWatcher, on: &str) -> Result<WatchedEvent> {
        self.emit(QueueEvent::Waiting { on: on.to_owned() });
        let event = changed(watcher).await?;
        self.emit(QueueEvent::Woken { by: on.to_owned() });
        Ok(event)
    }
}
