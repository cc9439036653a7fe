//! Building a tree from a snapshot ([`TreeBuilder`]).

use std::collections::HashMap;

use super::node::{ttl_of, Children, Node, CONTAINER_OWNER};
use super::DataTree;
use crate::node_map::Hasher;
use crate::path;

/// Builds a tree from snapshot nodes as they are decoded, one at a time (no intermediate list of a million nodes):
/// children lists, the ephemeral / container indexes, the shared ACLs and the counters are rebuilt. O(n): children
/// are gathered per parent as the nodes go by (the snapshot holds nodes in no particular order, so a parent may
/// come after its children) and handed to their parents at the end.
pub struct TreeBuilder {
    t: DataTree,
    /// The nodes, put into the node map all at once at the end
    /// ([`NodeMap::insert_all`](crate::node_map::NodeMap::insert_all): in slot order). Boxed
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
        if ttl_of(node.ephemeral_owner).is_some() {
            t.ttls.insert(path.to_string());
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
