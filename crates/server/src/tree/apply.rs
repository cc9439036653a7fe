//! Applying transactions: create, delete, setData and setACL, each reporting the [`Event`]s that may fire watches.
//!
//! Mutation happens only through [`crate::txn::Txn`]s that [`crate::ops::prep`] has validated, so the methods
//! here apply post-state without re-checking permissions. They are deterministic given (state, txn, zxid,
//! time), which is what makes log replay reproduce the tree exactly.

use zklock_codec::Acl;

use super::node::{is_session_owner, ttl_of, Node, CONTAINER_OWNER};
use super::{DataTree, SharedAcl};
use crate::path;

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

impl DataTree {
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
        if ttl_of(owner).is_some() {
            self.ttls.insert(path.to_string());
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
        self.ttls.remove(path);
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
