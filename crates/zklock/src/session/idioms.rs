//! The idioms of `base/idioms.rs` as methods of the session context: every recipe holds a [`Session`], so none passes a
//! client and a retry policy around.

use zookeeper_client::{self as zk, CreateMode, OneshotWatcher, Stat, WatchedEvent};

use crate::base::error::{At as _, Error, Result};
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

    /// Whether an operation that failed with `err` while it held nothing goes on with the next ZooKeeper session:
    /// on a [reconnecting](Session::reconnecting) session not pinned to one of them, when the ZooKeeper session
    /// ended.
    pub(crate) fn carries_on(&self, err: &Error) -> bool {
        self.follows_new_sessions() && matches!(err, Error::SessionExpired | Error::AuthFailed)
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

    /// Creates `path` with `data`, `mode` (a TTL node with `ttl`) and the session's ACLs, its missing parents
    /// persistent, retried after a connection loss:
    /// the path made (with its sequence number for a sequential mode), or `None` when a node is there already (for a
    /// fixed path: made by an earlier attempt whose reply was lost, or by somebody else: the caller looks). A
    /// sequential create is sent once, not retried: after a lost reply (an error) it may have happened; protect it
    /// by a unique prefix and look for it ([`find_prefixed`](Session::find_prefixed)) before creating again.
    pub(crate) async fn create_at(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<std::time::Duration>,
    ) -> Result<Option<String>> {
        let client = self.client();
        let options = mode.with_acls(self.acls());
        let options = match ttl {
            Some(ttl) => options.with_ttl(ttl),
            None => options,
        };
        let sequential = matches!(
            mode,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        );
        loop {
            // A sequential create is sent once: sent again after a lost reply, it would make a second node.
            let created = match sequential {
                true => client.create(path, data, &options).await.at("create", path),
                false => {
                    self.retry()
                        .run_at("create", path, || client.create(path, data, &options))
                        .await
                }
            };
            match created {
                Ok((_, sequence)) if sequential => return Ok(Some(format!("{path}{sequence}"))),
                Ok(_) => return Ok(Some(path.to_owned())),
                Err(Error::ZooKeeper {
                    source: zk::Error::NodeExists,
                    ..
                }) => return Ok(None),
                Err(Error::ZooKeeper {
                    source: zk::Error::NoNode,
                    ..
                }) => self.mkdir(parent_of(path), CreateMode::Persistent).await?,
                Err(err) => return Err(err),
            }
        }
    }

    /// The first child of `dir` whose name starts with `prefix`, with its stat, after a `sync` (see
    /// [`list_synced`]): the look that finds a protected node of ours — made by a create whose reply was lost,
    /// say — before creating another.
    pub(crate) async fn find_prefixed(&self, dir: &str, prefix: &str) -> Result<Option<(String, Stat)>> {
        let mut names = list_synced(self.client(), self.retry(), dir).await?;
        names.retain(|name| name.starts_with(prefix));
        names.sort();
        for name in names {
            let path = crate::base::path::child_path(dir, &name);
            if let Some(stat) = self.exists(&path).await? {
                return Ok(Some((path, stat)));
            }
        }
        Ok(None)
    }

    /// Curator's protected create: the sequential node `<dir>/<prefix><sequence>` (`prefix` unique to its maker),
    /// unless one of that prefix is there already ([`find_prefixed`](Session::find_prefixed): made by an earlier
    /// attempt whose reply was lost) — looked for only when an earlier attempt was sent (`sent_before`): a fresh
    /// prefix is nobody's yet, and its first create costs no look. An attempt whose reply is lost now is an error:
    /// the caller looks again.
    pub(crate) async fn create_protected(
        &self,
        dir: &str,
        prefix: &str,
        data: &[u8],
        mode: CreateMode,
        sent_before: bool,
    ) -> Result<()> {
        if !sent_before || self.find_prefixed(dir, prefix).await?.is_none() {
            let path = crate::base::path::child_path(dir, prefix);
            self.create_at(&path, data, mode, None).await?;
        }
        Ok(())
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
