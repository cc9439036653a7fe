//! A znode ([`Node`]: path and data in one allocation, the stat fields, the ACL) and its child names
//! ([`Children`]).

use std::collections::HashSet;
use std::hash::BuildHasher as _;

use zklock_codec::Stat;

use super::SharedAcl;
use crate::node_map::{Hasher, Keyed};

/// `ephemeralOwner` marking a container node.
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// One znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's path and then its data, in one allocation: with the node's own box, two allocations per znode
    /// instead of three, and the node map is keyed by this path ([`NodeMap`](crate::node_map::NodeMap)), so it
    /// keeps no copy of it. A boxed slice: no spare capacity.
    bytes: Box<[u8]>,
    /// Where the path ends in `bytes`.
    path_len: u32,
    /// Null data, which differs from empty.
    null_data: bool,
    /// ACL (already fixed up), shared with every node that has the same one.
    pub acl: SharedAcl,
    /// Stat fields (numChildren and dataLength are derived).
    pub czxid: i64,
    /// zxid of the last setData.
    pub mzxid: i64,
    /// Creation time, ms.
    pub ctime: i64,
    /// Last setData time, ms.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Number of successful child creates (wraps). This is the counter sequential names use; clients see
    /// `2 * cversion - numChildren` instead (see [`Node::stat`]).
    pub cversion: i32,
    /// ACL version.
    pub aversion: i32,
    /// Owning session / container marker / 0.
    pub ephemeral_owner: i64,
    /// zxid of the last child create or delete.
    pub pzxid: i64,
    /// Child names, unordered as in ZooKeeper (whose `DataNode` keeps a `HashSet`: clients sort what they list).
    pub children: Children,
    /// The zxid of the latest change a read of this node can see: its create, setData and setACL, and the
    /// create or delete of a child. A read waits only until this zxid is durable, not for unrelated writes
    /// in flight (see [`crate::state`]). Not persisted: after recovery everything is durable, so it is
    /// rebuilt from the stat zxids.
    pub changed: i64,
}

/// A path and data packed as a node keeps them.
fn pack(path: &str, data: Option<&[u8]>) -> Box<[u8]> {
    let data = data.unwrap_or_default();
    let mut bytes = Vec::with_capacity(path.len() + data.len());
    bytes.extend_from_slice(path.as_bytes());
    bytes.extend_from_slice(data);
    bytes.into_boxed_slice()
}

impl Node {
    /// A node at `path` as a create makes it.
    pub fn new(path: &str, data: Option<&[u8]>, acl: SharedAcl, owner: i64, zxid: i64, time: i64) -> Self {
        Node {
            bytes: pack(path, data),
            path_len: path.len() as u32,
            null_data: data.is_none(),
            acl,
            czxid: zxid,
            mzxid: zxid,
            ctime: time,
            mtime: time,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: owner,
            pzxid: zxid,
            children: Children::default(),
            changed: zxid,
        }
    }

    /// The stat as ZooKeeper's `DataNode.copyStat` reports it: cversion is translated from "child creates"
    /// to "child changes" (`2 * creates - numChildren`: every create of a child no longer present was
    /// matched by a delete), and container / TTL markers are reported as owner 0.
    pub fn stat(&self) -> Stat {
        let num_children = self.children.len() as i32;
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: self.aversion,
            ephemeral_owner: if self.is_ephemeral() {
                self.ephemeral_owner
            } else {
                0
            },
            data_length: self.data().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: self.pzxid,
        }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        // Made from a `&str` (`pack`), cut at its end: valid UTF-8, checked again only here (snapshots, `dump`).
        std::str::from_utf8(self.path_bytes()).unwrap_or_default()
    }

    /// The node's path as bytes (what the node map hashes and compares).
    pub fn path_bytes(&self) -> &[u8] {
        &self.bytes[..self.path_len as usize]
    }

    /// The data; `None` (null) differs from empty.
    pub fn data(&self) -> Option<&[u8]> {
        (!self.null_data).then(|| &self.bytes[self.path_len as usize..])
    }

    /// Replaces the data (one new allocation, path and data together).
    pub(super) fn set_data(&mut self, data: Option<&[u8]>) {
        self.bytes = pack(self.path(), data);
        self.null_data = data.is_none();
    }

    /// Whether this is a session-owned ephemeral (not a container or TTL node).
    pub fn is_ephemeral(&self) -> bool {
        is_session_owner(self.ephemeral_owner)
    }
}

/// A node's child names: a hash set, which builds in O(n) on restart (a sorted set had to sort a million names
/// first), allocated only once the node has a child (most nodes never do: 8 bytes each instead of 40).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
// The box is the point: an empty `HashSet` with its hasher is 40 bytes in every node, a `None` box 8.
#[allow(clippy::box_collection)]
pub struct Children(Option<Box<HashSet<Box<str>, Hasher>>>);

impl Children {
    /// Number of children.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |set| set.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().flat_map(|set| set.iter().map(|name| &**name))
    }

    pub(super) fn from_names(names: Vec<Box<str>>) -> Children {
        let mut set = HashSet::with_capacity_and_hasher(names.len(), Hasher::default());
        let mut hashed: Vec<_> = names
            .into_iter()
            .map(|n| (set.hasher().hash_one(&n), n))
            .collect();
        crate::node_map::sort_by_slot(&mut hashed, set.capacity());
        set.extend(hashed.into_iter().map(|(_, name)| name));
        Children((!set.is_empty()).then(|| Box::new(set)))
    }

    pub(super) fn insert(&mut self, name: &str) {
        self.0.get_or_insert_with(Default::default).insert(name.into());
    }

    pub(super) fn remove(&mut self, name: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(name);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// ZooKeeper's `EphemeralType.EXTENDED_MASK`: the top byte of an `ephemeralOwner` that encodes an extended type.
const EXTENDED_MASK: i64 = 0xff00_0000_0000_0000_u64 as i64;

/// The largest TTL, in ms (ZooKeeper's `EphemeralType.TTL.maxValue()`: the low 40 bits).
pub const MAX_TTL: i64 = 0x0000_00ff_ffff_ffff;

/// The `ephemeralOwner` of a TTL node, as ZooKeeper's `EphemeralType.TTL.toEphemeralOwner` encodes it
/// (`0xff00000000000000 | ttl`, the reserved bits and the TTL type bits zero); `None` for a TTL out of
/// `1..=MAX_TTL`.
pub fn ttl_owner(ttl: i64) -> Option<i64> {
    (1..=MAX_TTL).contains(&ttl).then_some(EXTENDED_MASK | ttl)
}

/// The TTL, in ms, of a TTL node's `ephemeralOwner` (`None` for any other owner).
pub fn ttl_of(owner: i64) -> Option<i64> {
    let ttl = owner & MAX_TTL;
    (owner & !MAX_TTL == EXTENDED_MASK && ttl != 0).then_some(ttl)
}

/// Whether an `ephemeralOwner` value names a session (ZooKeeper's `EphemeralType.NORMAL`).
pub fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && (owner >> 56) & 0xff != 0xff
}

impl Keyed for Node {
    fn key(&self) -> &[u8] {
        self.path_bytes()
    }
}

/// What a node counts for in the data size: its path and data bytes, as ZooKeeper's `approximateDataSize`.
pub(super) fn size_of_node(node: &Node) -> usize {
    node.bytes.len()
}
