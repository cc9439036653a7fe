//! Durability glue between the state and `zklock-storage`: snapshot encoding, recovery (snapshot +
//! replay of later txns through the same [`State::apply`] the live server uses), and snapshot saving.
//!
//! Snapshot blob format (jute encoding, big-endian):
//! ```text
//! magic "ZKLKTREE" (8 bytes) | version int = 1
//! sessions: int count, then per session: id long | timeout int | password buffer
//! nodes:    int count, then per node: path ustring | data buffer (−1 = null) | acl vector<Acl> |
//!           czxid long | mzxid long | ctime long | mtime long | version int | cversion int (create counter) |
//!           aversion int | ephemeralOwner long | pzxid long
//! ```
//! Children lists are not stored: they are rebuilt from the paths.

use zklock_codec::jute::{put_buffer, put_i32, put_i64, put_str, put_vec};
use zklock_codec::{Decode, DecodeError, Reader};

use crate::state::State;
use crate::tree::{DataTree, Node, TreeBuilder};
use crate::txn::LoggedTxn;

const MAGIC: &[u8; 8] = b"ZKLKTREE";
const VERSION: i32 = 1;

/// Why recovered bytes could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryError {
    /// The snapshot blob is not ours or is damaged (its CRC passed, so this is a format bug or mismatch).
    #[error("snapshot at zxid {zxid:#x}: {reason}")]
    Snapshot {
        /// Snapshot zxid.
        zxid: i64,
        /// What is wrong.
        reason: String,
    },
    /// A logged txn does not decode.
    #[error("txn {zxid:#x}: {source}")]
    Txn {
        /// The txn's zxid.
        zxid: i64,
        /// Decode error.
        #[source]
        source: DecodeError,
    },
}

/// Serializes the tree and sessions (call under the state lock: the blob is exact at `st.last_zxid`).
pub fn snapshot_blob(st: &State) -> Vec<u8> {
    let mut w = Vec::with_capacity(64 * 1024);
    w.extend_from_slice(MAGIC);
    put_i32(&mut w, VERSION);
    let mut sessions: Vec<_> = st.sessions.iter().collect();
    sessions.sort_by_key(|s| s.id);
    put_i32(&mut w, sessions.len() as i32);
    for s in sessions {
        put_i64(&mut w, s.id);
        put_i32(&mut w, s.timeout_ms);
        put_buffer(&mut w, Some(&s.passwd));
    }
    put_i32(&mut w, st.tree.node_count() as i32);
    for n in st.tree.nodes() {
        put_str(&mut w, n.path());
        put_buffer(&mut w, n.data());
        put_vec(&mut w, &n.acl);
        for v in [n.czxid, n.mzxid, n.ctime, n.mtime] {
            put_i64(&mut w, v);
        }
        for v in [n.version, n.cversion, n.aversion] {
            put_i32(&mut w, v);
        }
        put_i64(&mut w, n.ephemeral_owner);
        put_i64(&mut w, n.pzxid);
    }
    w
}

/// A decoded snapshot: nodes and sessions `(id, timeout, password)`.
type Decoded = (DataTree, Vec<(i64, i32, Vec<u8>)>);

fn decode_snapshot(blob: &[u8]) -> Result<Decoded, String> {
    let Some(rest) = blob.strip_prefix(MAGIC.as_slice()) else {
        return Err("bad magic".into());
    };
    let mut r = Reader::new(rest);
    let e = |e: DecodeError| e.to_string();
    let version = r.read_i32().map_err(e)?;
    if version != VERSION {
        return Err(format!("unsupported snapshot version {version}"));
    }
    let count = r.read_i32().map_err(e)?.max(0) as usize;
    let mut sessions = Vec::with_capacity(count.min(r.remaining() / 16));
    for _ in 0..count {
        sessions.push((
            r.read_i64().map_err(e)?,
            r.read_i32().map_err(e)?,
            r.read_buffer().map_err(e)?.unwrap_or_default(),
        ));
    }
    let count = r.read_i32().map_err(e)?.max(0) as usize;
    let mut nodes = TreeBuilder::with_capacity(count.min(r.remaining() / 64));
    let mut last_acl: Option<(&[u8], crate::tree::SharedAcl)> = None;
    for _ in 0..count {
        // Read in place (the node packs its own copy of path and data): no allocation of its own per node.
        let path = r.read_buffer_slice().map_err(e)?.unwrap_or_default();
        let path = std::str::from_utf8(path).map_err(|_| "a node path is not UTF-8".to_owned())?;
        let data = r.read_buffer_slice().map_err(e)?;
        // Neighbours mostly share their ACL: when the bytes are those of the previous node's ACL (the encoding is
        // self-delimiting), that ACL is taken without decoding it again (the tree interns the rest).
        let at = r.rest();
        let acl = match &last_acl {
            Some((bytes, acl)) if at.starts_with(bytes) => {
                r = Reader::new(&at[bytes.len()..]);
                acl.clone()
            }
            _ => {
                let acl: Vec<zklock_codec::Acl> = r.read_vec_or_empty().map_err(e)?;
                let shared: crate::tree::SharedAcl = acl.into();
                last_acl = Some((&at[..at.len() - r.rest().len()], shared.clone()));
                shared
            }
        };
        let (czxid, mzxid, ctime, mtime) = (
            r.read_i64().map_err(e)?,
            r.read_i64().map_err(e)?,
            r.read_i64().map_err(e)?,
            r.read_i64().map_err(e)?,
        );
        let (version, cversion, aversion) = (
            r.read_i32().map_err(e)?,
            r.read_i32().map_err(e)?,
            r.read_i32().map_err(e)?,
        );
        let owner = r.read_i64().map_err(e)?;
        // `children` and `changed` are rebuilt by the TreeBuilder.
        let mut node = Node::new(path, data, acl, owner, czxid, ctime);
        (node.mzxid, node.mtime, node.pzxid) = (mzxid, mtime, r.read_i64().map_err(e)?);
        (node.version, node.cversion, node.aversion) = (version, cversion, aversion);
        nodes.push(node);
    }
    Ok((nodes.finish(), sessions))
}

/// Rebuilds `st` from what storage recovered: the snapshot, then every later txn in order.
pub fn recover(st: &mut State, recovered: zklock_storage::Recovered) -> Result<(), RecoveryError> {
    if let Some((zxid, blob)) = recovered.snapshot {
        let (tree, sessions) =
            decode_snapshot(&blob).map_err(|reason| RecoveryError::Snapshot { zxid, reason })?;
        // The blob is done with: its pages go back before the log is replayed.
        drop(blob);
        st.tree = tree;
        for (id, timeout, passwd) in sessions {
            st.sessions.insert(id, timeout, passwd);
        }
        st.last_zxid = zxid;
    }
    let replayed = recovered.txns.len();
    // What the log holds beyond the snapshot counts towards the next snapshot, so that a server restarted again
    // and again before reaching `snapCount` / `snapSizeLimitInKb` still snapshots and prunes its log.
    st.since_snapshot = replayed as u64;
    st.since_snapshot_bytes = recovered.txns.iter().map(|(_, p)| p.len() as u64 + 28).sum();
    for (zxid, payload) in recovered.txns {
        let logged = LoggedTxn::from_bytes(&payload).map_err(|source| RecoveryError::Txn { zxid, source })?;
        st.apply(zxid, logged.time, &logged.txn, &mut Vec::new(), &mut Vec::new());
        st.last_zxid = zxid;
    }
    st.last_zxid = st.last_zxid.max(recovered.last_zxid);
    tracing::info!(
        last_zxid = format!("{:#x}", st.last_zxid),
        replayed,
        nodes = st.tree.node_count(),
        sessions = st.sessions.len(),
        "recovered"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use zklock_codec::Acl;

    fn state() -> State {
        let durable = Arc::new(crate::state::Durable::new(0, Default::default()));
        let sessions = crate::session::Sessions::new(std::time::Duration::from_secs(2), 1 << 56);
        State::new(
            DataTree::new(),
            sessions,
            0,
            crate::state::Durability::Memory,
            durable,
        )
    }

    #[tokio::test]
    async fn snapshot_round_trips() {
        let mut st = state();
        st.commit(crate::txn::Txn::CreateSession {
            id: 7,
            timeout_ms: 4000,
            passwd: vec![1; 16],
        });
        st.commit(crate::txn::Txn::Create {
            path: "/a".into(),
            data: None,
            acl: Acl::open_unsafe(),
            owner: 7,
            parent_cversion: 1,
        });
        let blob = snapshot_blob(&st);
        let mut restored = state();
        let recovered = zklock_storage::Recovered {
            snapshot: Some((st.last_zxid, blob)),
            txns: vec![],
            last_zxid: st.last_zxid,
        };
        recover(&mut restored, recovered).unwrap();
        assert_eq!(restored.tree.get("/a"), st.tree.get("/a"));
        assert_eq!(
            restored.tree.get("/").map(|n| n.stat()),
            st.tree.get("/").map(|n| n.stat())
        );
        assert_eq!(restored.tree.ephemerals_of(7), vec!["/a".to_string()]);
        assert_eq!(
            restored.sessions.get(7).map(|s| s.passwd.clone()),
            Some(vec![1; 16])
        );
        assert_eq!(restored.last_zxid, 2);
    }
}
