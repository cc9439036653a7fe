//! What a cache holds: the nodes of its subtree as last read, and the one place that changes them. Every change
//! goes through [`State::apply`] (or [`State::remove_under`]), which compares what was read with what was held and
//! sends the difference as events while the state is still locked — so a subscriber that takes a copy under the
//! same lock and then listens sees every change exactly once (`Events` in `cache/mod.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::broadcast;
use zookeeper_client::Stat;

use super::{CacheEvent, CachedNode};

/// A node as held: its data and stat (the path is the map's key).
#[derive(Debug, Clone)]
struct Entry {
    data: Arc<[u8]>,
    stat: Stat,
}

/// The nodes of the cached subtree, by full path. A `BTreeMap` keeps a node's descendants in one range: every
/// path under `/a` sorts between `/a/` and `/a0` (`0` follows `/`).
#[derive(Debug, Default)]
pub(super) struct State {
    nodes: BTreeMap<Box<str>, Entry>,
    /// Set once the first full read is done (Curator's "initialized").
    pub(super) initialized: bool,
}

impl State {
    pub(super) fn get(&self, path: &str) -> Option<CachedNode> {
        self.nodes.get(path).map(|entry| node(path, entry))
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Every node held, in path order.
    pub(super) fn nodes(&self) -> Vec<CachedNode> {
        self.nodes.iter().map(|(path, entry)| node(path, entry)).collect()
    }

    /// The names of the children of `path` held, in order.
    pub(super) fn children(&self, path: &str) -> Vec<String> {
        let prefix = if path == "/" {
            String::from("/")
        } else {
            format!("{path}/")
        };
        self.under(path)
            .map(|(child, _)| &child[prefix.len()..])
            .filter(|rest| !rest.contains('/'))
            .map(str::to_owned)
            .collect()
    }

    /// Applies what a read of `path` found (`None`: no node there), sending the event it makes: created, changed
    /// (data or stat differ), deleted (with every descendant held: a node that is gone has none). Reads are
    /// applied in the order they were sent on one session, so each is newer than what it replaces.
    pub(super) fn apply(
        &mut self,
        path: &str,
        read: Option<(Vec<u8>, Stat)>,
        events: &broadcast::Sender<Arc<CacheEvent>>,
    ) {
        match read {
            None => {
                self.remove_under(path, events);
                if let Some(old) = self.nodes.remove(path) {
                    let _ = events.send(Arc::new(CacheEvent::Deleted(node(path, &old))));
                }
            }
            Some((data, stat)) => match self.nodes.get_mut(path) {
                Some(held) if held.stat == stat && *held.data == *data => {}
                Some(held) => {
                    let old = node(path, held);
                    *held = Entry {
                        data: data.into(),
                        stat,
                    };
                    let new = node(path, held);
                    let _ = events.send(Arc::new(CacheEvent::Changed { old, new }));
                }
                None => {
                    let entry = Entry {
                        data: data.into(),
                        stat,
                    };
                    let _ = events.send(Arc::new(CacheEvent::Created(node(path, &entry))));
                    self.nodes.insert(path.into(), entry);
                }
            },
        }
    }

    /// Removes every descendant of `path` held, deepest first (as ZooKeeper deletes them), each with its event.
    pub(super) fn remove_under(&mut self, path: &str, events: &broadcast::Sender<Arc<CacheEvent>>) {
        let gone: Vec<Box<str>> = self.under(path).map(|(child, _)| child.into()).collect();
        for child in gone.into_iter().rev() {
            if let Some(old) = self.nodes.remove(&child) {
                let _ = events.send(Arc::new(CacheEvent::Deleted(node(&child, &old))));
            }
        }
    }

    /// Removes the children of `dir` held that are not in `names` (a listing of `dir`), with their descendants.
    pub(super) fn keep_children(
        &mut self,
        dir: &str,
        names: &[String],
        events: &broadcast::Sender<Arc<CacheEvent>>,
    ) {
        let listed: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        for name in self.children(dir) {
            if !listed.contains(name.as_str()) {
                let path = crate::base::path::child_path(dir, &name);
                self.apply(&path, None, events);
            }
        }
    }

    /// Every node strictly below `path`, in path order.
    fn under<'a>(&'a self, path: &str) -> impl DoubleEndedIterator<Item = (&'a str, &'a Entry)> + 'a {
        let (from, to) = if path == "/" {
            (String::from("/"), String::from("0"))
        } else {
            (format!("{path}/"), format!("{path}0"))
        };
        self.nodes
            .range::<str, _>((
                std::ops::Bound::Excluded(from.as_str()),
                std::ops::Bound::Excluded(to.as_str()),
            ))
            .map(|(path, entry)| (&**path, entry))
    }
}

fn node(path: &str, entry: &Entry) -> CachedNode {
    CachedNode {
        path: path.to_owned(),
        data: Arc::clone(&entry.data),
        stat: entry.stat,
    }
}
