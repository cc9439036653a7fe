//! The data tree: nodes with data, ACL, stat and children; ephemerals per session; containers.
//!
//! Mutation happens only through [`crate::txn::Txn`]s that [`crate::prep`] has validated, so the methods
//! here apply post-state without re-checking permissions. They are deterministic given (state, txn, zxid,
//! time), which is what makes log replay reproduce the tree exactly.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher as _;

use crate::node_map::Hasher;
use crate::node_map::{Keyed, NodeMap};
use std::sync::Arc;
use zklock_codec::{Acl, Stat};

use crate::path;

/// An ACL as the tree keeps it: one shared copy per distinct ACL (a tree of a million nodes typically has a
/// handful), as ZooKeeper's `ReferenceCountedACLCache` does.
pub type SharedAcl = Arc<[Acl]>;

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
    fn set_data(&mut self, data: Option<&[u8]>) {
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

    fn from_names(names: Vec<Box<str>>) -> Children {
        let mut set = HashSet::with_capacity_and_hasher(names.len(), Hasher::default());
        let mut hashed: Vec<_> = names
            .into_iter()
            .map(|n| (set.hasher().hash_one(&n), n))
            .collect();
        crate::node_map::sort_by_slot(&mut hashed, set.capacity());
        set.extend(hashed.into_iter().map(|(_, name)| name));
        Children((!set.is_empty()).then(|| Box::new(set)))
    }

    fn insert(&mut self, name: &str) {
        self.0.get_or_insert_with(Default::default).insert(name.into());
    }

    fn remove(&mut self, name: &str) {
        if let Some(set) = &mut self.0 {
            set.remove(name);
            if set.is_empty() {
                self.0 = None;
            }
        }
    }
}

/// Whether an `ephemeralOwner` value names a session (ZooKeeper's `EphemeralType.NORMAL`).
pub fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER_OWNER && (owner >> 56) & 0xff != 0xff
}

/// A change that may fire watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Node created.
    Created(String),
    /// Node deleted, with the ACL it had (watchers need READ on it to hear of it).
    Deleted(String, SharedAcl),
    /// Data changed.
    DataChanged(String),
    /// A child was created or deleted.
    ChildrenChanged(String),
}

/// The tree.
///
/// Memory (measured by `compare-scale`, docs/benchmarks.md): nodes are boxed, so the hash table holds a key and a
/// pointer per node (a table is up to half empty right after it grows, and a slot of a whole node would be six times
/// bigger); keys and child names are `Box<str>` (no spare capacity); ACLs are shared ([`SharedAcl`]).
#[derive(Debug, Clone)]
pub struct DataTree {
    nodes: NodeMap<Node>,
    ephemerals: HashMap<i64, BTreeSet<String>>,
    containers: BTreeSet<String>,
    /// One copy of every distinct ACL in use (and some no longer in use, until [`DataTree::intern`] sweeps).
    acls: HashSet<SharedAcl>,
    /// When `acls` is swept next: at twice its size after the last sweep.
    acls_sweep_at: usize,
    /// Bytes of paths and data (`mntr`'s `zk_approximate_data_size`, as ZooKeeper counts it), kept as nodes
    /// come, go and change.
    data_size: usize,
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// A tree with `/`, `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config` exactly as a fresh
    /// ZooKeeper 3.8 shows them: zero stats, empty (not null) data, the built-ins added without counting as
    /// child creates (so `/` reports cversion −1 and `/zookeeper` −2), and `/zookeeper/config` readable
    /// by anyone, writable by nobody, with aversion −1.
    pub fn new() -> Self {
        let mut t = DataTree::empty();
        let open = t.intern(Acl::open_unsafe());
        t.insert_node(Node::new("/", Some(&[]), open.clone(), 0, 0, 0));
        for p in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
            t.insert_node(Node::new(p, Some(&[]), open.clone(), 0, 0, 0));
            if let Some(parent) = t.nodes.get_mut(path::parent(p)) {
                parent.children.insert(path::basename(p));
            }
        }
        let read_only = t.intern(vec![Acl {
            perms: zklock_codec::perms::READ,
            id: zklock_codec::Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }]);
        if let Some(n) = t.nodes.get_mut("/zookeeper/config") {
            n.acl = read_only;
            n.aversion = -1;
        }
        t
    }

    fn empty() -> Self {
        DataTree {
            nodes: NodeMap::default(),
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
            acls: HashSet::new(),
            acls_sweep_at: 64,
            data_size: 0,
        }
    }

    /// The shared copy of `acl`. Copies no node uses any more are dropped once the table has doubled since the
    /// last sweep, so a stream of distinct ACLs cannot grow it without bound.
    pub fn intern(&mut self, acl: impl Into<SharedAcl> + AsRef<[Acl]>) -> SharedAcl {
        if let Some(shared) = self.acls.get(acl.as_ref()) {
            return shared.clone();
        }
        if self.acls.len() >= self.acls_sweep_at {
            self.acls.retain(|a| Arc::strong_count(a) > 1);
            self.acls_sweep_at = (self.acls.len() * 2).max(64);
        }
        let shared: SharedAcl = acl.into();
        self.acls.insert(shared.clone());
        shared
    }

    /// Puts a node in the map, keeping the data size.
    fn insert_node(&mut self, node: Node) {
        self.data_size += size_of_node(&node);
        if let Some(old) = self.nodes.insert(Box::new(node)) {
            self.forget(&old);
        }
    }

    /// [`DataTree::insert_node`] for many nodes at once, in the node map's slot order ([`NodeMap::insert_all`]).
    #[allow(clippy::vec_box)] // the map's own boxes, made once by the caller
    fn insert_nodes(&mut self, nodes: Vec<Box<Node>>) {
        self.data_size += nodes.iter().map(|n| size_of_node(n)).sum::<usize>();
        for old in self.nodes.insert_all(nodes) {
            self.forget(&old);
        }
    }

    /// Takes a node out of the data size.
    fn forget(&mut self, node: &Node) {
        self.data_size -= size_of_node(node);
    }

    /// Whether `path` is one of the built-in nodes that can never be deleted.
    pub fn is_special(path: &str) -> bool {
        matches!(
            path,
            "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
        )
    }

    /// Looks up a node.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(path)
    }

    /// The zxid a read of `path` depends on: the node's latest change, or for a missing node the latest
    /// change of its nearest existing ancestor (whose child delete or create decided that it is missing).
    pub fn changed_at(&self, path: &str) -> i64 {
        let mut at = path;
        loop {
            if let Some(n) = self.nodes.get(at) {
                return n.changed;
            }
            if at == "/" || at.is_empty() || !at.starts_with('/') {
                // Not a valid absolute path: nothing in the tree decided the answer.
                return self.nodes.get("/").map_or(0, |n| n.changed);
            }
            at = path::parent(at);
        }
    }

    /// Number of nodes, including built-ins.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Ephemeral nodes: a sum over the sessions that own some (the per-session sets are the index), not a scan
    /// of the tree.
    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(BTreeSet::len).sum()
    }

    /// Bytes of paths and data, as ZooKeeper's `approximateDataSize` counts them (kept as nodes change: no scan).
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// All nodes (for snapshots and `dump`).
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    /// Ephemeral paths by session.
    pub fn ephemerals(&self) -> &HashMap<i64, BTreeSet<String>> {
        &self.ephemerals
    }

    /// Ephemeral paths of one session, sorted.
    pub fn ephemerals_of(&self, session: i64) -> Vec<String> {
        self.ephemerals
            .get(&session)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Container nodes (candidates for the cleanup sweep).
    pub fn containers(&self) -> impl Iterator<Item = &String> {
        self.containers.iter()
    }

    /// Number of descendants of `path` (not counting itself).
    pub fn descendant_count(&self, path: &str) -> usize {
        let mut count = 0;
        let mut stack = vec![path.to_string()];
        while let Some(p) = stack.pop() {
            if let Some(n) = self.nodes.get(p.as_str()) {
                count += n.children.len();
                stack.extend(n.children.iter().map(|c| path::join(&p, c)));
            }
        }
        count
    }

    /// Applies a create. `parent_cversion` is the parent's cversion after the create.
    #[allow(clippy::too_many_arguments)]
    pub fn create(
        &mut self,
        path: &str,
        data: Option<Vec<u8>>,
        acl: Vec<Acl>,
        owner: i64,
        parent_cversion: i32,
        zxid: i64,
        time: i64,
        events: &mut Vec<Event>,
    ) {
        let parent_path = path::parent(path);
        let Some(parent) = self.nodes.get_mut(parent_path) else {
            tracing::error!(path, "create txn without parent; skipped");
            return;
        };
        parent.children.insert(path::basename(path));
        parent.cversion = parent_cversion;
        parent.pzxid = parent.pzxid.max(zxid);
        parent.changed = parent.changed.max(zxid);
        if is_session_owner(owner) {
            self.ephemerals.entry(owner).or_default().insert(path.to_string());
        }
        if owner == CONTAINER_OWNER {
            self.containers.insert(path.to_string());
        }
        let acl = self.intern(acl);
        self.insert_node(Node::new(path, data.as_deref(), acl, owner, zxid, time));
        events.push(Event::Created(path.to_string()));
        events.push(Event::ChildrenChanged(parent_path.to_string()));
    }

    /// Applies a delete (the node has no children; cversion of the parent is not changed).
    pub fn delete(&mut self, path: &str, zxid: i64, events: &mut Vec<Event>) {
        let Some(node) = self.nodes.remove(path) else {
            tracing::error!(path, "delete txn for a missing node; skipped");
            return;
        };
        self.forget(&node);
        if node.is_ephemeral() {
            if let Some(set) = self.ephemerals.get_mut(&node.ephemeral_owner) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&node.ephemeral_owner);
                }
            }
        }
        self.containers.remove(path);
        let parent_path = path::parent(path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.remove(path::basename(path));
            parent.pzxid = parent.pzxid.max(zxid);
            parent.changed = parent.changed.max(zxid);
        }
        events.push(Event::Deleted(path.to_string(), node.acl.clone()));
        events.push(Event::ChildrenChanged(parent_path.to_string()));
    }

    /// Applies a setData with the node's new version.
    pub fn set_data(
        &mut self,
        path: &str,
        data: Option<Vec<u8>>,
        version: i32,
        zxid: i64,
        time: i64,
        events: &mut Vec<Event>,
    ) {
        let Some(node) = self.nodes.get_mut(path) else {
            tracing::error!(path, "setData txn for a missing node; skipped");
            return;
        };
        let (old, new) = (
            node.data().map_or(0, <[u8]>::len),
            data.as_ref().map_or(0, Vec::len),
        );
        node.set_data(data.as_deref());
        node.version = version;
        node.mzxid = zxid;
        node.mtime = time;
        node.changed = node.changed.max(zxid);
        self.data_size = self.data_size - old + new;
        events.push(Event::DataChanged(path.to_string()));
    }

    /// Applies a setACL with the node's new aversion (fires no watch, like ZooKeeper).
    pub fn set_acl(&mut self, path: &str, acl: Vec<Acl>, aversion: i32, zxid: i64) {
        if !self.nodes.contains_key(path) {
            return;
        }
        let acl = self.intern(acl);
        if let Some(node) = self.nodes.get_mut(path) {
            node.acl = acl;
            node.aversion = aversion;
            node.changed = node.changed.max(zxid);
        }
    }
}

impl Keyed for Node {
    fn key(&self) -> &[u8] {
        self.path_bytes()
    }
}

/// What a node counts for in the data size: its path and data bytes, as ZooKeeper's `approximateDataSize`.
fn size_of_node(node: &Node) -> usize {
    node.bytes.len()
}

/// Builds a tree from snapshot nodes as they are decoded, one at a time (no intermediate list of a million nodes):
/// children lists, the ephemeral / container indexes, the shared ACLs and the counters are rebuilt. O(n): children
/// are gathered per parent as the nodes go by (the snapshot holds nodes in no particular order, so a parent may
/// come after its children) and handed to their parents at the end.
pub struct TreeBuilder {
    t: DataTree,
    /// The nodes, put into the node map all at once at the end ([`NodeMap::insert_all`]: in slot order). Boxed
    /// already: the map holds each node in an allocation of its own, so the box is made once, here.
    #[allow(clippy::vec_box)]
    nodes: Vec<Box<Node>>,
    /// Child names by parent, gathered in a list (growing a list is a copy; growing a hash set rehashes every name)
    /// and put in a set of the right size at the end.
    by_parent: HashMap<String, Vec<Box<str>>, Hasher>,
}

impl TreeBuilder {
    /// A builder for about `nodes` nodes.
    pub fn with_capacity(nodes: usize) -> TreeBuilder {
        let mut t = DataTree::empty();
        t.nodes.reserve(nodes);
        TreeBuilder {
            t,
            nodes: Vec::with_capacity(nodes),
            by_parent: HashMap::default(),
        }
    }

    /// Adds one node (its `children` and `changed` are rebuilt).
    pub fn push(&mut self, mut node: Node) {
        let t = &mut self.t;
        node.children = Children::default();
        node.changed = node.czxid.max(node.mzxid).max(node.pzxid);
        node.acl = t.intern(node.acl);
        let path = node.path();
        if node.is_ephemeral() {
            t.ephemerals
                .entry(node.ephemeral_owner)
                .or_default()
                .insert(path.to_string());
        }
        if node.ephemeral_owner == CONTAINER_OWNER {
            t.containers.insert(path.to_string());
        }
        if path != "/" {
            let (parent, name) = (path::parent(path), path::basename(path));
            match self.by_parent.get_mut(parent) {
                Some(children) => children.push(name.into()),
                None => {
                    self.by_parent.insert(parent.to_string(), vec![name.into()]);
                }
            }
        }
        self.nodes.push(Box::new(node));
    }

    /// The tree.
    pub fn finish(self) -> DataTree {
        let TreeBuilder {
            mut t,
            nodes,
            by_parent,
        } = self;
        t.insert_nodes(nodes);
        for (parent, names) in by_parent {
            if let Some(node) = t.nodes.get_mut(parent.as_str()) {
                node.children = Children::from_names(names);
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_tree_matches_zookeeper() {
        let t = DataTree::new();
        let stat = |p: &str| t.get(p).unwrap().stat();
        assert_eq!((stat("/").cversion, stat("/").num_children), (-1, 1));
        assert_eq!(
            (stat("/zookeeper").cversion, stat("/zookeeper").num_children),
            (-2, 2)
        );
        assert_eq!(stat("/zookeeper/config").aversion, -1);
    }

    #[test]
    fn create_delete_maintain_parent_stat() {
        let mut t = DataTree::new();
        let mut ev = vec![];
        t.create(
            "/a",
            Some(b"x".to_vec()),
            Acl::open_unsafe(),
            0,
            1,
            5,
            100,
            &mut ev,
        );
        assert_eq!(
            ev,
            vec![Event::Created("/a".into()), Event::ChildrenChanged("/".into())]
        );
        let root = t.get("/").unwrap().stat();
        assert_eq!(
            (root.cversion, root.pzxid, root.num_children),
            (0, 5, 2),
            "2 * 1 create - 2 children"
        );
        t.create("/a/e", None, Acl::open_unsafe(), 77, 1, 6, 100, &mut ev);
        assert_eq!(t.ephemerals_of(77), vec!["/a/e".to_string()]);
        t.delete("/a/e", 7, &mut ev);
        let a = t.get("/a").unwrap().stat();
        assert_eq!(
            (a.cversion, a.pzxid, a.num_children),
            (2, 7, 0),
            "the delete shows in the reported cversion"
        );
        assert_eq!(t.get("/a").unwrap().cversion, 1, "but not in the create counter");
        assert!(t.ephemerals_of(77).is_empty());
        assert_eq!(t.descendant_count("/"), 4);
    }

    #[test]
    fn changed_at_tracks_what_a_read_can_see() {
        let mut t = DataTree::new();
        let mut ev = vec![];
        t.create("/a", None, Acl::open_unsafe(), 0, 1, 3, 100, &mut ev);
        t.create("/b", None, Acl::open_unsafe(), 0, 2, 4, 100, &mut ev);
        assert_eq!(
            (t.changed_at("/a"), t.changed_at("/b"), t.changed_at("/")),
            (3, 4, 4)
        );
        t.set_data("/a", Some(vec![1]), 1, 6, 100, &mut ev);
        assert_eq!(
            (t.changed_at("/a"), t.changed_at("/b")),
            (6, 4),
            "setData moves only its node"
        );
        t.set_acl("/b", Acl::open_unsafe(), 1, 7);
        assert_eq!(t.changed_at("/b"), 7, "setACL counts (a read reveals the ACL)");
        assert_eq!(
            t.changed_at("/b/x/y"),
            7,
            "a missing node depends on its nearest ancestor"
        );
        t.delete("/b", 8, &mut ev);
        assert_eq!(t.changed_at("/b"), 8, "the parent records the delete");
        assert_eq!(t.changed_at("no-slash"), 8);
        let mut restored = TreeBuilder::with_capacity(t.node_count());
        for n in t.nodes() {
            restored.push(n.clone());
        }
        let restored = restored.finish();
        assert_eq!(restored.changed_at("/a"), 6, "rebuilt from the stat zxids");
    }
}
