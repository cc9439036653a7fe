//! The tree's node map: every znode by its path, keyed by the path the node itself holds (see
//! [`Node`](crate::tree::Node): path and data share one allocation), so a slot of the table is a single pointer and
//! no znode pays for a second copy of its path as the key.

use hashbrown::hash_table::{Entry, HashTable};
use std::hash::BuildHasher as _;

use crate::tree::{Hasher, Node};

/// Nodes by path.
#[derive(Debug, Clone, Default)]
pub struct NodeMap {
    table: HashTable<Box<Node>>,
    hasher: Hasher,
}

impl NodeMap {
    fn hash(&self, path: &[u8]) -> u64 {
        self.hasher.hash_one(path)
    }

    /// Room for `additional` more nodes without growing.
    pub fn reserve(&mut self, additional: usize) {
        let hasher = &self.hasher;
        self.table
            .reserve(additional, |n| hasher.hash_one(n.path_bytes()));
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn get(&self, path: &str) -> Option<&Node> {
        let path = path.as_bytes();
        self.table
            .find(self.hash(path), |n| n.path_bytes() == path)
            .map(|n| &**n)
    }

    pub fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        let path = path.as_bytes();
        let hash = self.hash(path);
        self.table
            .find_mut(hash, |n| n.path_bytes() == path)
            .map(|n| &mut **n)
    }

    pub fn contains_key(&self, path: &str) -> bool {
        self.get(path).is_some()
    }

    /// Puts `node` in under its own path; the node it replaces, if any.
    pub fn insert(&mut self, node: Box<Node>) -> Option<Box<Node>> {
        let hash = self.hash(node.path_bytes());
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |n| n.path_bytes() == node.path_bytes(),
            |n| hasher.hash_one(n.path_bytes()),
        ) {
            Entry::Occupied(mut slot) => Some(std::mem::replace(slot.get_mut(), node)),
            Entry::Vacant(slot) => {
                slot.insert(node);
                None
            }
        }
    }

    pub fn remove(&mut self, path: &str) -> Option<Box<Node>> {
        let path = path.as_bytes();
        let hash = self.hash(path);
        self.table
            .find_entry(hash, |n| n.path_bytes() == path)
            .ok()
            .map(|slot| slot.remove().0)
    }

    /// Every node, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        self.table.iter().map(|n| &**n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::SharedAcl;

    fn node(path: &str, data: &[u8]) -> Box<Node> {
        let acl: SharedAcl = Vec::new().into();
        Box::new(Node::new(path, Some(data), acl, 0, 1, 1))
    }

    #[test]
    fn finds_replaces_and_removes_by_the_nodes_own_path() {
        let mut map = NodeMap::default();
        for i in 0..1000 {
            assert!(map.insert(node(&format!("/n{i}"), b"x")).is_none());
        }
        assert_eq!(map.len(), 1000);
        assert_eq!(map.get("/n7").unwrap().data(), Some(&b"x"[..]));
        assert!(map.get("/n1000").is_none() && !map.contains_key("/n"));
        let old = map.insert(node("/n7", b"y")).expect("replaced");
        assert_eq!((old.data(), map.len()), (Some(&b"x"[..]), 1000));
        map.get_mut("/n7").unwrap().version = 3;
        assert_eq!(map.remove("/n7").unwrap().version, 3);
        assert!(map.get("/n7").is_none() && map.remove("/n7").is_none());
        assert_eq!(map.iter().count(), 999);
    }
}
