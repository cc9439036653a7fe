//! Writes that happen once, whatever the connection does: [`Session::commit_once`] sends one or more writes as one
//! request and settles a lost reply by a **receipt** — a node of ours, unique to this write, created in the same
//! transaction — and [`Session::compare_and_set`] builds the read → decide → write-at-the-version-read loop on it
//! (the counters' change; a queue's `put` and a claimed item's completion are the same shape).
//!
//! After a lost reply we `sync` (so a lagging ensemble member has seen everything the leader committed) and read
//! the receipt: there, the write happened (and the receipt says what it wrote); absent, it did not, and we send it
//! again. A retried write that ZooKeeper then refuses (`NodeExists`, `BadVersion`, `NoNode`) was refused because of
//! somebody else: our earlier attempts are known not to have committed. The receipt is ephemeral: a session that
//! ends before we could look makes the look fail with [`Error::SessionExpired`] rather than answer "no" — the write
//! then happened once or not at all, never twice.

use zookeeper_client::{self as zk, CreateMode, MultiWriteError, MultiWriteResult, Stat};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::path::child_path;
use crate::base::retry::{is_connection_loss, Attempts};
use crate::session::Session;

/// One write of [`Session::commit_once`]. Created nodes get the session's [`acls`](Session::acls).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write<'a> {
    /// Create `path` holding `data`.
    Create(&'a str, &'a [u8], CreateMode),
    /// Set the data of `path` at `version`.
    SetData(&'a str, &'a [u8], i32),
    /// Delete `path` (at `version`, if given).
    Delete(&'a str, Option<i32>),
}

impl Write<'_> {
    /// The node written.
    pub(crate) fn path(&self) -> &str {
        match self {
            Write::Create(path, ..) | Write::SetData(path, ..) | Write::Delete(path, _) => path,
        }
    }
}

/// What [`Session::commit_once`] did.
#[derive(Debug)]
pub(crate) enum Committed {
    /// The writes happened (once). `stat`: of the receipt, or else of the first node created or written, when
    /// known; `found`: the receipt's data when it was found after a lost reply (`None`: our own attempt answered,
    /// or the receipt is a delete); `created`: the paths of the nodes created (with their sequence numbers), when
    /// our attempt answered (empty after a lost reply).
    Done {
        stat: Option<Stat>,
        found: Option<Vec<u8>>,
        created: Vec<String>,
    },
    /// ZooKeeper refused write number `index` with `error`, and no attempt of ours committed.
    Refused { index: usize, error: zk::Error },
}

impl Committed {
    /// A refusal the caller has no answer for, as an error naming the write's operation and path.
    pub(crate) fn refused(index: usize, error: zk::Error, writes: &[Write<'_>]) -> Error {
        let op = match writes.get(index) {
            Some(Write::SetData(..)) => "setData",
            Some(Write::Delete(..)) => "delete",
            _ => "create",
        };
        Error::zk(op, writes.get(index).map_or("", Write::path), error)
    }
}

impl Session {
    /// Sends `writes` as one request (a `multi` when there are several) until it is answered, and settles a lost
    /// reply by the last write when `receipt` says it is ours alone:
    /// * the create of a node of ours that nobody else would make: its presence after a `sync` says the request
    ///   committed;
    /// * the delete of a node of ours that nobody else deletes (a claim): the request is sent again, and when its
    ///   first delete then finds its node gone and ours is gone too, our earlier attempt committed.
    ///
    /// Without `receipt` the writes are sent again (for creates of nodes whose existence is the answer anyway).
    pub(crate) async fn commit_once(&self, writes: &[Write<'_>], receipt: bool) -> Result<Committed> {
        // One ZooKeeper session from the first request to the last (see `Session::pinned`).
        let this = &self.pinned();
        let (made, gone) = match writes.last().filter(|_| receipt) {
            Some(Write::Create(path, _, mode)) => (Some((*path, *mode)), None),
            Some(Write::Delete(path, _)) => (None, Some(*path)),
            _ => (None, None),
        };
        // An ephemeral receipt that another session owns is not ours, whatever its name promised (a group member id
        // that two processes were given): what is found of it counts only if our session owns it.
        let session_id = this.client().session_id().0;
        let ours = |mode: CreateMode, stat: &Stat| {
            !matches!(mode, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
                || stat.ephemeral_owner == session_id
        };
        let mut lost = Attempts::default();
        let mut reply_lost = false;
        loop {
            let Some(reply) = this.retry().within(&lost, this.send(writes)).await else {
                return Err(lost.timed_out());
            };
            // Settled by our receipt: what our earlier attempt created is not known.
            let done = |stat, found| {
                Ok(Committed::Done {
                    stat,
                    found,
                    created: Vec::new(),
                })
            };
            match reply {
                Ok((stat, created)) => {
                    return Ok(Committed::Done {
                        stat,
                        found: None,
                        created,
                    })
                }
                Err(MultiWriteError::OperationFailed { index, source }) => {
                    // Our receipt exists: made by our own earlier attempt if it is ours. Gone again since the
                    // refusal, or another session's: the refusal stands.
                    if let Some((path, mode)) =
                        made.filter(|_| index + 1 == writes.len() && source == zk::Error::NodeExists)
                    {
                        match this.find(path).await? {
                            Some((data, stat)) if ours(mode, &stat) => return done(Some(stat), Some(data)),
                            _ => {}
                        }
                    }
                    // Only our own earlier attempt deletes our receipt together with the nodes before it.
                    let first_gone =
                        index == 0 && source == zk::Error::NoNode && matches!(writes[0], Write::Delete(..));
                    if let Some(path) = gone.filter(|_| reply_lost && first_gone) {
                        if this.find(path).await?.is_none() {
                            tracing::debug!(%path, "found our write done after a lost reply");
                            return done(None, None);
                        }
                    }
                    return Ok(Committed::Refused { index, error: source });
                }
                Err(MultiWriteError::RequestFailed { source }) if is_connection_loss(&source) => {
                    this.retry().pause(&mut lost).await?;
                    reply_lost = true;
                    if let Some((path, mode)) = made {
                        match this.find(path).await? {
                            Some((data, stat)) if ours(mode, &stat) => {
                                tracing::debug!(%path, "found our write after a lost reply");
                                return done(Some(stat), Some(data));
                            }
                            _ => {}
                        }
                    }
                }
                Err(err) => {
                    let path = writes.first().map_or("", Write::path);
                    return Err(Error::zk("multi", path, zk::Error::from(err)));
                }
            }
        }
    }

    /// Sends `writes`: one request alone (whose reply carries the created node's stat), or a `multi`. Answers the
    /// stat (see [`Committed::Done`]) and the paths created.
    async fn send(
        &self,
        writes: &[Write<'_>],
    ) -> std::result::Result<(Option<Stat>, Vec<String>), MultiWriteError> {
        let client = self.client();
        let single = match *writes {
            [Write::Create(path, data, mode)] => {
                let options = mode.with_acls(self.acls());
                client.create(path, data, &options).await.map(|(stat, sequence)| {
                    let created = match mode {
                        CreateMode::PersistentSequential | CreateMode::EphemeralSequential => {
                            format!("{path}{sequence}")
                        }
                        _ => path.to_owned(),
                    };
                    (Some(stat), vec![created])
                })
            }
            _ => return self.send_multi(writes).await,
        };
        single.map_err(|source| match source {
            source if is_connection_loss(&source) => MultiWriteError::RequestFailed { source },
            source => MultiWriteError::OperationFailed { index: 0, source },
        })
    }

    /// Sends `writes` as one `multi`.
    async fn send_multi(
        &self,
        writes: &[Write<'_>],
    ) -> std::result::Result<(Option<Stat>, Vec<String>), MultiWriteError> {
        let mut multi = self.client().new_multi_writer();
        for write in writes {
            match *write {
                Write::Create(path, data, mode) => multi.add_create(path, data, &mode.with_acls(self.acls())),
                Write::SetData(path, data, version) => multi.add_set_data(path, data, Some(version)),
                Write::Delete(path, version) => multi.add_delete(path, version),
            }
            .map_err(|source| MultiWriteError::OperationFailed { index: 0, source })?;
        }
        let results = multi.commit().await?;
        let stat = results.iter().rev().find_map(|result| match result {
            MultiWriteResult::Create { stat, .. } | MultiWriteResult::SetData { stat }
                if !stat.is_invalid() =>
            {
                Some(*stat)
            }
            _ => None,
        });
        let created = results
            .into_iter()
            .filter_map(|result| match result {
                MultiWriteResult::Create { path, .. } => Some(path),
                _ => None,
            })
            .collect();
        Ok((stat, created))
    }

    /// The node `receipt` as a read after a `sync` sees it, in one round trip (`idioms::read_synced`): every write
    /// acknowledged to anybody before this call is in it, whichever ensemble member answers. After a lost reply: is
    /// our receipt there?
    pub(crate) async fn find(&self, receipt: &str) -> Result<Option<(Vec<u8>, Stat)>> {
        let client = self.client();
        idioms::read_synced(client, self.retry(), "getData", receipt, || {
            client.get_data(receipt)
        })
        .await
    }

    /// One change of the node `path`, written exactly once: read the node, ask `decide` what to write over what was
    /// read (its data, `None` for no node, and its version, -1 for no node; `None`: write nothing), and write it only
    /// over that — `setData` at the version read, or `create` (its missing parents as container nodes) — in one
    /// transaction with this change's receipt, an ephemeral child `<path>/<receipt_prefix><id>` holding the change.
    /// Somebody else's write in between makes us read again (and ask again). The receipt is deleted in the background
    /// when the change has ended, however it ended.
    pub(crate) async fn compare_and_set(
        &self,
        path: &str,
        receipt_prefix: &str,
        mut decide: impl FnMut(Option<&[u8]>, i32) -> Result<Option<Vec<u8>>>,
    ) -> Result<Swapped> {
        // One ZooKeeper session from the first request to the last (see `Session::pinned`).
        let this = &self.pinned();
        let receipt = child_path(
            path,
            &format!("{receipt_prefix}{}", uuid::Uuid::new_v4().simple()),
        );
        let _receipt = DeleteOnDrop(self, &receipt);
        let mut contended = 0;
        loop {
            let (pre, version) = match this.get(path).await? {
                Some((data, stat)) => (Some(data), stat.version),
                None => (None, -1),
            };
            let Some(post) = decide(pre.as_deref(), version)? else {
                return Ok(Swapped::Declined { current: pre });
            };
            let made = if version == -1 { 0 } else { version.wrapping_add(1) };
            let record = Record {
                pre,
                post,
                version: made,
            };
            let bytes = record.encode();
            let write = match version {
                -1 => Write::Create(path, &record.post, CreateMode::Persistent),
                _ => Write::SetData(path, &record.post, version),
            };
            let writes = [write, Write::Create(&receipt, &bytes, CreateMode::Ephemeral)];
            match this.commit_once(&writes, true).await? {
                Committed::Done { found: None, .. } => return Ok(record.into()),
                Committed::Done {
                    found: Some(data), ..
                } => {
                    return Record::decode(&data).map(Swapped::from).ok_or_else(|| {
                        Error::zk("getData", &receipt, zk::Error::BadArguments(&"not a receipt"))
                    })
                }
                Committed::Refused {
                    index: 0,
                    error: zk::Error::NoNode,
                } if version == -1 => this.mkdir(idioms::parent_of(path), CreateMode::Container).await?,
                // Somebody else wrote (created, deleted) the node since we read it: read again.
                Committed::Refused {
                    index: 0,
                    error: zk::Error::BadVersion | zk::Error::NodeExists | zk::Error::NoNode,
                } => {
                    contended += 1;
                    if contended > 1 {
                        tokio::time::sleep(this.retry().backoff(contended - 1)).await;
                    }
                }
                Committed::Refused { index, error } => return Err(Committed::refused(index, error, &writes)),
            }
        }
    }
}

/// What [`Session::compare_and_set`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Swapped {
    /// Our write happened: the node's data before (`None`: it did not exist) and after, and the version it made.
    Written {
        pre: Option<Vec<u8>>,
        post: Vec<u8>,
        version: i32,
    },
    /// Nothing was written (the decision declined): the data found (`None`: no node).
    Declined { current: Option<Vec<u8>> },
}

/// Deletes a receipt when its change ends, in the background: the delete is sent at once, after every write of
/// the change (a session's requests are processed in order), so it finds the receipt if one was made.
struct DeleteOnDrop<'a>(&'a Session, &'a str);

impl Drop for DeleteOnDrop<'_> {
    fn drop(&mut self) {
        // Without a runtime the receipt goes with the session.
        if tokio::runtime::Handle::try_current().is_ok() {
            self.0.delete_in_background(self.1, "a receipt");
        }
    }
}

/// What a receipt holds: the write of the attempt that created it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    pre: Option<Vec<u8>>,
    post: Vec<u8>,
    version: i32,
}

impl From<Record> for Swapped {
    fn from(record: Record) -> Swapped {
        Swapped::Written {
            pre: record.pre,
            post: record.post,
            version: record.version,
        }
    }
}

impl Record {
    /// `version` (4 bytes), `1` and the length of `pre` (4 bytes) and `pre`, or `0`; then `post`.
    fn encode(&self) -> Vec<u8> {
        let mut out = self.version.to_be_bytes().to_vec();
        match &self.pre {
            Some(pre) => {
                out.push(1);
                out.extend_from_slice(&(pre.len() as u32).to_be_bytes());
                out.extend_from_slice(pre);
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.post);
        out
    }

    fn decode(data: &[u8]) -> Option<Record> {
        let version = i32::from_be_bytes(data.get(..4)?.try_into().ok()?);
        let (pre, post) = match data.get(4)? {
            0 => (None, data.get(5..)?),
            1 => {
                let len = u32::from_be_bytes(data.get(5..9)?.try_into().ok()?) as usize;
                (Some(data.get(9..9 + len)?.to_vec()), data.get(9 + len..)?)
            }
            _ => return None,
        };
        Some(Record {
            pre,
            post: post.to_vec(),
            version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_round_trip() {
        for record in [
            Record {
                pre: None,
                post: 7i64.to_be_bytes().to_vec(),
                version: 0,
            },
            Record {
                pre: Some(5i32.to_be_bytes().to_vec()),
                post: 6i32.to_be_bytes().to_vec(),
                version: 12,
            },
            Record {
                pre: Some(Vec::new()),
                post: Vec::new(),
                version: i32::MAX,
            },
        ] {
            assert_eq!(Record::decode(&record.encode()), Some(record));
        }
        assert_eq!(Record::decode(b"\0\0"), None);
        assert_eq!(Record::decode(&[0, 0, 0, 1, 1, 0, 0, 0, 9, 1]), None);
    }

    #[test]
    fn parents() {
        assert_eq!(idioms::parent_of("/a/b"), "/a");
        assert_eq!(idioms::parent_of("/a"), "/");
    }
}
