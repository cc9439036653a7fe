//! The data tree: nodes with data, ACL, stat and children; ephemerals per session; containers.
//!
//! Mutation happens only through [`crate::txn::Txn`]s that [`crate::prep`] has validated, so the methods
//! here apply post-state without re-checking permissions. They are deterministic given (state, txn, zxid,
//! time), which is what makes log replay reproduce the tree exactly.

use std::collections::{BTreeSet, HashMap};
use zklock_codec::{Acl, Stat};

use crate::path;

/// `ephemeralOwner` marking a container node.
pub const CONTAINER_OWNER: i64 = i64::MIN;

/// One znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Data; `None` (null) differs from empty.
    pub data: Option<Vec<u8>>,
    /// ACL (already fixed up).
    pub acl: Vec<Acl>,
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
    /// Child names. A `BTreeSet` so listings, snapshots and replays are deterministic.
    pub children: BTreeSet<String>,
    /// The zxid of the latest change a read of this node can see: its create, setData and setACL, and the
    /// create or delete of a child. A read waits only until this zxid is durable, not for unrelated writes
    /// in flight (see [`crate::state`]). Not persisted: after recovery everything is durable, so it is
    /// rebuilt from the stat zxids.
    pub changed: i64,
}

impl Node {
    fn new(data: Option<Vec<u8>>, acl: Vec<Acl>, owner: i64, zxid: i64, time: i64) -> Self {
        Node {
            data,
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
            children: BTreeSet::new(),
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
            data_length: self.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: self.pzxid,
        }
    }

    /// Whether this is a session-owned ephemeral (not a container or TTL node).
    pub fn is_ephemeral(&self) -> bool {
        is_session_owner(self.ephemeral_owner)
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
    Deleted(String, Vec<Acl>),
    /// Data changed.
    DataChanged(String),
    /// A child was created or deleted.
    ChildrenChanged(String),
}

/// The tree.
#[derive(Debug, Clone)]
pub struct DataTree {
    nodes: HashMap<String, Node>,
    ephemerals: HashMap<i64, BTreeSet<String>>,
    containers: BTreeSet<String>,
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
        let mut t = DataTree {
            nodes: HashMap::new(),
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
        };
        let open = Acl::open_unsafe();
        t.nodes
            .insert("/".into(), Node::new(Some(vec![]), open.clone(), 0, 0, 0));
        for p in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
            t.nodes
                .insert(p.into(), Node::new(Some(vec![]), open.clone(), 0, 0, 0));
            if let Some(parent) = t.nodes.get_mut(path::parent(p)) {
                parent.children.insert(path::basename(p).to_string());
            }
        }
        if let Some(n) = t.nodes.get_mut("/zookeeper/config") {
            n.acl = vec![Acl {
                perms: zklock_codec::perms::READ,
                id: zklock_codec::Id {
                    scheme: "world".into(),
                    id: "anyone".into(),
                },
            }];
            n.aversion = -1;
        }
        t
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

    /// All nodes (for snapshots and `dump`).
    pub fn nodes(&self) -> impl Iterator<Item = (&String, &Node)> {
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
            if let Some(n) = self.nodes.get(&p) {
                count += n.children.len();
                stack.extend(n.children.iter().map(|c| path::join(&p, c)));
            }
        }
        count
    }

    /// A tree from snapshot nodes; children lists and the ephemeral / container indexes are rebuilt.
    pub fn from_nodes(nodes: Vec<(String, Node)>) -> Self {
        let mut t = DataTree {
            nodes: HashMap::new(),
            ephemerals: HashMap::new(),
            containers: BTreeSet::new(),
        };
        let paths: Vec<String> = nodes.iter().map(|(p, _)| p.clone()).collect();
        for (path, mut node) in nodes {
            node.children.clear();
            node.changed = node.czxid.max(node.mzxid).max(node.pzxid);
            if node.is_ephemeral() {
                t.ephemerals
                    .entry(node.ephemeral_owner)
                    .or_default()
                    .insert(path.clone());
            }
            if node.ephemeral_owner == CONTAINER_OWNER {
                t.containers.insert(path.clone());
            }
            t.nodes.insert(path, node);
        }
        for path in paths.iter().filter(|p| p.as_str() != "/") {
            if let Some(parent) = t.nodes.get_mut(path::parent(path)) {
                parent.children.insert(path::basename(path).to_string());
            }
        }
        t
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
        parent.children.insert(path::basename(path).to_string());
        parent.cversion = parent_cversion;
        parent.pzxid = parent.pzxid.max(zxid);
        parent.changed = parent.changed.max(zxid);
        if is_session_owner(owner) {
            self.ephemerals.entry(owner).or_default().insert(path.to_string());
        }
        if owner == CONTAINER_OWNER {
            self.containers.insert(path.to_string());
        }
        self.nodes
            .insert(path.to_string(), Node::new(data, acl, owner, zxid, time));
        events.push(Event::Created(path.to_string()));
        events.push(Event::ChildrenChanged(parent_path.to_string()));
    }

    /// Applies a delete (the node has no children; cversion of the parent is not changed).
    pub fn delete(&mut self, path: &str, zxid: i64, events: &mut Vec<Event>) {
        let Some(node) = self.nodes.remove(path) else {
            tracing::error!(path, "delete txn for a missing node; skipped");
            return;
        };
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
        events.push(Event::Deleted(path.to_string(), node.acl));
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
        node.data = data;
        node.version = version;
        node.mzxid = zxid;
        node.mtime = time;
        node.changed = node.changed.max(zxid);
        events.push(Event::DataChanged(path.to_string()));
    }

    /// Applies a setACL with the node's new aversion (fires no watch, like ZooKeeper).
    pub fn set_acl(&mut self, path: &str, acl: Vec<Acl>, aversion: i32, zxid: i64) {
        if let Some(node) = self.nodes.get_mut(path) {
            node.acl = acl;
            node.aversion = aversion;
            node.changed = node.changed.max(zxid);
        }
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
        let restored = DataTree::from_nodes(t.nodes().map(|(p, n)| (p.clone(), n.clone())).collect());
        assert_eq!(restored.changed_at("/a"), 6, "rebuilt from the stat zxids");
    }
}
