//! Writes to ZooKeeper that commit only while we hold: a `multi` whose first operation checks that our own node
//! still exists, so the server itself refuses the writes of a holder that lost its lock — also one that was paused
//! and does not know yet (Kleppmann's fencing, with the lock service as the protected store).

use zookeeper_client::{self as zk, CheckWriteError, CreateOptions, MultiWriteResult};

use crate::base::error::{At as _, Error, Result};
use crate::base::retry::is_connection_loss;
use crate::node::guard::Guard;

/// A transaction of writes that commits only if our guard's node still exists at the server when it is applied.
/// Made by [`Guard::fenced_writes`] (or a leader's [`Term::fenced_writes`](crate::Term::fenced_writes)); add
/// operations, then [`commit`](FencedWrites::commit).
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let guard = zklock::Mutex::new(&client, "/locks/config")?.lock().await?;
/// let mut writes = guard.fenced_writes();
/// writes.set_data("/config/current", b"v2", None)?;
/// match writes.commit().await {
///     Ok(_) => println!("written under the lock"),
///     Err(zklock::Error::LockLost { path }) => eprintln!("{path} is no longer ours: nothing was written"),
///     Err(err) => return Err(err),
/// }
/// # Ok(()) }
/// ```
pub struct FencedWrites<'a> {
    writer: zk::CheckWriter<'a>,
    node: String,
    /// The operation and path of every write added, in order: what a failed one names.
    ops: Vec<(&'static str, String)>,
}

impl std::fmt::Debug for FencedWrites<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedWrites")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl Guard {
    /// A transaction of ZooKeeper writes that commits only while this guard's node exists at the server — that
    /// is, while we still hold (see [`FencedWrites`]).
    pub fn fenced_writes(&self) -> FencedWrites<'_> {
        FencedWrites::new(self.client(), self.path())
    }
}

impl<'a> FencedWrites<'a> {
    /// Writes fenced by `node`, our own node, on `client`, the client that created it (the one place that makes
    /// them: [`Guard::fenced_writes`] and [`Term::fenced_writes`](crate::Term::fenced_writes)).
    pub(crate) fn new(client: &'a zk::Client, node: &str) -> FencedWrites<'a> {
        let writer = client
            .new_check_writer(node, None)
            .expect("our own node's path is valid");
        FencedWrites {
            writer,
            node: node.to_owned(),
            ops: Vec::new(),
        }
    }
}

impl FencedWrites<'_> {
    /// Adds a create of `path`.
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] for an invalid path or options (nothing is sent).
    pub fn create(&mut self, path: &str, data: &[u8], options: &CreateOptions<'_>) -> Result<()> {
        self.writer.add_create(path, data, options).at("create", path)?;
        self.ops.push(("create", path.to_owned()));
        Ok(())
    }

    /// Adds a write of `data` to `path`, optionally only at `expected_version`.
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] for an invalid path (nothing is sent).
    pub fn set_data(&mut self, path: &str, data: &[u8], expected_version: Option<i32>) -> Result<()> {
        self.writer
            .add_set_data(path, data, expected_version)
            .at("setData", path)?;
        self.ops.push(("setData", path.to_owned()));
        Ok(())
    }

    /// Adds a delete of `path`, optionally only at `expected_version`.
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] for an invalid path (nothing is sent).
    pub fn delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        self.writer
            .add_delete(path, expected_version)
            .at("delete", path)?;
        self.ops.push(("delete", path.to_owned()));
        Ok(())
    }

    /// Adds a check that `path` exists at `version` (any version: `-1`).
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] for an invalid path (nothing is sent).
    pub fn check(&mut self, path: &str, version: i32) -> Result<()> {
        self.writer.add_check_version(path, version).at("check", path)?;
        self.ops.push(("check", path.to_owned()));
        Ok(())
    }

    /// Sends the transaction; returns the results of the added operations, in order.
    ///
    /// # Errors
    /// * [`Error::LockLost`] — our node no longer exists at the server: nothing was written.
    /// * [`Error::SessionExpired`] / [`Error::Closed`] — the session is over (so is the lock): nothing was written.
    /// * [`Error::ConnectionLoss`] — the connection broke with the transaction in flight: it may or may not have
    ///   been applied, and it is not retried (it need not be idempotent). Look at the data to find out.
    /// * [`Error::ZooKeeper`] — one of the added operations failed (e.g. `NoNode`, `BadVersion`): nothing was
    ///   written.
    pub async fn commit(self) -> Result<Vec<MultiWriteResult>> {
        let FencedWrites { writer, node, ops } = self;
        match writer.commit().await {
            Ok(results) => Ok(results),
            Err(CheckWriteError::CheckFailed {
                source: zk::Error::NoNode | zk::Error::BadVersion,
            }) => Err(Error::LockLost { path: node }),
            Err(CheckWriteError::RequestFailed { source }) if is_connection_loss(&source) => {
                Err(Error::ConnectionLoss { attempts: 1 })
            }
            Err(CheckWriteError::RequestFailed { source } | CheckWriteError::CheckFailed { source }) => {
                Err(Error::zk("multi", &node, source))
            }
            Err(CheckWriteError::OperationFailed { index, source }) => Err(match ops.get(index) {
                Some((op, path)) => Error::zk(op, path, source),
                None => Error::zk("multi", &node, source),
            }),
        }
    }
}
