//! The data tree: nodes with data, ACL, stat and children; ephemerals per session; containers.
//!
//! - this file: [`DataTree`], its built-in nodes and what a read asks of it;
//! - `node.rs`: one znode ([`Node`], path and data in one allocation) and its child names;
//! - `apply.rs`: applying a validated transaction (create, delete, setData, setACL) and the [`Event`]s it fires;
//!   deterministic given (state, txn, zxid, time), which is what makes log replay reproduce the tree exactly;
//! - `accounting.rs`: the shared ACLs ([`SharedAcl`]) and the data size, kept as nodes change;
//! - `builder.rs`: a tree rebuilt from snapshot nodes ([`TreeBuilder`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use zklock_codec::Acl;

use crate::node_map::NodeMap;
use crate::path;

mod accounting;
mod apply;
mod builder;
mod node;
#[cfg(test)]
mod tests;

pub use accounting::SharedAcl;
pub use apply::Event;
pub use builder::TreeBuilder;
pub use node::{is_session_owner, ttl_of, ttl_owner, Node, CONTAINER_OWNER};

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
    /// TTL nodes (owner [`ttl_owner`]): candidates for the sweep once their TTL has passed.
    ttls: BTreeSet<String>,
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
            ttls: BTreeSet::new(),
            acls: HashSet::new(),
            acls_sweep_at: 64,
            data_size: 0,
        }
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

    /// TTL nodes (candidates for the cleanup sweep once expired).
    pub fn ttls(&self) -> impl Iterator<Item = &String> {
        self.ttls.iter()
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
}
