//! What the tree keeps beside its nodes, kept as nodes come, go and change (no scan): one shared copy of every
//! distinct ACL ([`SharedAcl`], [`DataTree::intern`]) and the data size ([`DataTree::data_size`]).

use std::sync::Arc;

use zklock_codec::Acl;

use super::node::{size_of_node, Node};
use super::DataTree;

/// An ACL as the tree keeps it: one shared copy per distinct ACL (a tree of a million nodes typically has a
/// handful), as ZooKeeper's `ReferenceCountedACLCache` does.
pub type SharedAcl = Arc<[Acl]>;

impl DataTree {
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
    pub(super) fn insert_node(&mut self, node: Node) {
        self.data_size += size_of_node(&node);
        if let Some(old) = self.nodes.insert(Box::new(node)) {
            self.forget(&old);
        }
    }

    /// [`DataTree::insert_node`] for many nodes at once, in the node map's slot order
    /// ([`NodeMap::insert_all`](crate::node_map::NodeMap::insert_all)).
    #[allow(clippy::vec_box)] // the map's own boxes, made once by the caller
    pub(super) fn insert_nodes(&mut self, nodes: Vec<Box<Node>>) {
        self.data_size += nodes.iter().map(|n| size_of_node(n)).sum::<usize>();
        for old in self.nodes.insert_all(nodes) {
            self.forget(&old);
        }
    }

    /// Takes a node out of the data size.
    pub(super) fn forget(&mut self, node: &Node) {
        self.data_size -= size_of_node(node);
    }
}
