//! Watch registrations, following ZooKeeper's `WatchManager`: two tables (data/exist watches and child
//! watches), each mapping a path to the connections watching it and how. Persistent and
//! persistent-recursive watches live in both tables, as in ZooKeeper, and a recursive watch also matches
//! events on descendants (never children-changed ones). As in ZooKeeper 3.8 (`WatcherModeManager`), a
//! connection has ONE mode per path and table: a later registration replaces the earlier one's mode.
//! A notification goes only to a connection with READ on the node (Debian's 3.8.0 checks the node's ACL
//! before delivering, the backported CVE-2024-23944 fix).

use std::collections::{HashMap, HashSet};
use zklock_codec::{perms, Acl, EventType};

use crate::acl::{self, AuthIds};
use crate::path;
use crate::tree::{DataTree, Event};

/// Connection identifier (watches belong to connections, not sessions).
pub type ConnId = u64;

/// One of the two watch tables.
#[derive(Debug, Default)]
struct Table {
    by_path: HashMap<String, HashMap<ConnId, Kind>>,
    by_conn: HashMap<ConnId, HashSet<String>>,
    /// Registrations in the table, kept as they come and go (`mntr`'s `zk_watch_count` without a scan).
    watches: usize,
}

/// Which kind of registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One-shot.
    Standard,
    /// Persistent (addWatch mode 0).
    Persistent,
    /// Persistent recursive (addWatch mode 1).
    Recursive,
}

impl Table {
    /// Registers `conn` on `path`, replacing the mode it had there (ZooKeeper's `setWatcherMode`).
    fn add(&mut self, path: &str, conn: ConnId, kind: Kind) {
        let replaced = self
            .by_path
            .entry(path.to_string())
            .or_default()
            .insert(conn, kind);
        if replaced.is_none() {
            self.watches += 1;
        }
        self.by_conn.entry(conn).or_default().insert(path.to_string());
    }

    /// Removes `conn`'s watch on `path`, whatever its mode; returns whether there was one.
    fn remove(&mut self, path: &str, conn: ConnId) -> bool {
        let Some(watchers) = self.by_path.get_mut(path) else {
            return false;
        };
        if watchers.remove(&conn).is_none() {
            return false;
        }
        self.watches -= 1;
        if watchers.is_empty() {
            self.by_path.remove(path);
        }
        if let Some(paths) = self.by_conn.get_mut(&conn) {
            paths.remove(path);
        }
        true
    }

    /// ZooKeeper 3.8.0's `containsWatcher`, quirk included: true when ANY connection watches `path` in
    /// this table (it tests the path's watcher set for presence, not for this connection).
    fn contains(&self, path: &str) -> bool {
        self.by_path.get(path).is_some_and(|w| !w.is_empty())
    }

    /// ZooKeeper's `triggerWatch`: collects the connections to notify (excluding `suppress`), consuming
    /// one-shot watches on `path`.
    fn trigger(&mut self, path: &str, ty: EventType, suppress: &HashSet<ConnId>) -> HashSet<ConnId> {
        let mut out = HashSet::new();
        let mut at = Some(path.to_string());
        let mut at_parent = false;
        while let Some(p) = at {
            if let Some(watchers) = self.by_path.get_mut(&p) {
                let mut emptied = vec![];
                for (conn, kind) in watchers.iter() {
                    match kind {
                        Kind::Recursive => {
                            if ty != EventType::NodeChildrenChanged {
                                out.insert(*conn);
                            }
                        }
                        _ if at_parent => {}
                        Kind::Persistent => {
                            out.insert(*conn);
                        }
                        Kind::Standard => {
                            out.insert(*conn);
                            emptied.push(*conn);
                        }
                    }
                }
                self.watches -= emptied.len();
                for conn in emptied {
                    watchers.remove(&conn);
                    if let Some(paths) = self.by_conn.get_mut(&conn) {
                        paths.remove(&p);
                    }
                }
                if watchers.is_empty() {
                    self.by_path.remove(&p);
                }
            }
            at = (p != "/").then(|| path::parent(&p).to_string());
            at_parent = true;
        }
        out.retain(|c| !suppress.contains(c));
        out
    }

    fn remove_conn(&mut self, conn: ConnId) {
        for p in self.by_conn.remove(&conn).unwrap_or_default() {
            if let Some(w) = self.by_path.get_mut(&p) {
                if w.remove(&conn).is_some() {
                    self.watches -= 1;
                }
                if w.is_empty() {
                    self.by_path.remove(&p);
                }
            }
        }
    }

    fn count(&self) -> usize {
        self.watches
    }
}

/// All watches of the server.
#[derive(Debug, Default)]
pub struct WatchManager {
    data: Table,
    child: Table,
}

/// Where each path is deleted within one txn's events: `(index, ACL it had)`, in order.
type Deletions<'t> = HashMap<&'t str, Vec<(usize, &'t [Acl])>>;

fn deletions(events: &[Event]) -> Deletions<'_> {
    let mut out: Deletions<'_> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if let Event::Deleted(p, acl) = e {
            out.entry(p.as_str()).or_default().push((i, &acl[..]));
        }
    }
    out
}

/// The ACL of the node an event (at index `i` of `events`) is about, as ZooKeeper passes it to the
/// watchers: the node as it is after the txn, or, if a later op of the same txn deleted it, as it was
/// when deleted. `deletions` is built once per txn (a `multi` touching k watched nodes costs O(k), not O(k²)).
fn acl_at<'t>(
    tree: &'t DataTree,
    events: &'t [Event],
    deletions: &mut Option<Deletions<'t>>,
    i: usize,
    path: &str,
) -> Option<&'t [Acl]> {
    if let Event::Deleted(_, acl) = &events[i] {
        return Some(acl);
    }
    deletions
        .get_or_insert_with(|| self::deletions(events))
        .get(path)
        .and_then(|at| at.iter().find(|(j, _)| *j > i))
        .map(|&(_, acl)| acl)
        .or_else(|| tree.get(path).map(|n| &n.acl[..]))
}

/// The identities of a connection that is gone.
static NO_IDS: &AuthIds = &[];

/// A notification to send: (connection, event type, path).
pub type Notification = (ConnId, EventType, String);

/// Which table checkWatches / removeWatches address (ZooKeeper 3.8 matches any mode in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The child table.
    Children,
    /// The data/exist table.
    Data,
    /// Both.
    Any,
}

impl WatchManager {
    /// Registers a data or exist watch.
    pub fn add_data(&mut self, path: &str, conn: ConnId) {
        self.data.add(path, conn, Kind::Standard);
    }

    /// Registers a child watch.
    pub fn add_child(&mut self, path: &str, conn: ConnId) {
        self.child.add(path, conn, Kind::Standard);
    }

    /// Registers a persistent or recursive watch (in both tables, as ZooKeeper does).
    pub fn add_persistent(&mut self, path: &str, conn: ConnId, recursive: bool) {
        let kind = if recursive {
            Kind::Recursive
        } else {
            Kind::Persistent
        };
        self.data.add(path, conn, kind);
        self.child.add(path, conn, kind);
    }

    /// Removes or, with `remove == false`, only looks for watches; returns whether any matched.
    /// Like ZooKeeper 3.8.0, the check (checkWatches) is satisfied by any connection's watch on the path.
    pub fn remove(&mut self, path: &str, conn: ConnId, target: Target, remove: bool) -> bool {
        let (data, child) = match target {
            Target::Children => (false, true),
            Target::Data => (true, false),
            Target::Any => (true, true),
        };
        if remove {
            let a = data && self.data.remove(path, conn);
            let b = child && self.child.remove(path, conn);
            a || b
        } else {
            (data && self.data.contains(path)) || (child && self.child.contains(path))
        }
    }

    /// Drops every watch of a closed connection.
    pub fn remove_conn(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }

    /// Turns tree events into notifications, in the order ZooKeeper's `DataTree` triggers them. `tree` is
    /// the tree after the events; `auth` gives a connection's identities: a connection without READ on
    /// the node does not get the notification (its one-shot watch is consumed all the same, as in
    /// ZooKeeper, which checks at delivery).
    pub fn trigger<'a>(
        &mut self,
        events: &[Event],
        tree: &DataTree,
        auth: impl Fn(ConnId) -> Option<&'a AuthIds>,
        out: &mut Vec<Notification>,
    ) {
        let none = HashSet::new();
        let mut deletions = None;
        for (i, e) in events.iter().enumerate() {
            let (ty, p, conns) = match e {
                Event::Created(p) => (
                    EventType::NodeCreated,
                    p,
                    self.data.trigger(p, EventType::NodeCreated, &none),
                ),
                Event::DataChanged(p) => (
                    EventType::NodeDataChanged,
                    p,
                    self.data.trigger(p, EventType::NodeDataChanged, &none),
                ),
                Event::ChildrenChanged(p) => (
                    EventType::NodeChildrenChanged,
                    p,
                    self.child.trigger(p, EventType::NodeChildrenChanged, &none),
                ),
                Event::Deleted(p, _) => {
                    let first = self.data.trigger(p, EventType::NodeDeleted, &none);
                    let second = self.child.trigger(p, EventType::NodeDeleted, &first);
                    (EventType::NodeDeleted, p, first.union(&second).copied().collect())
                }
            };
            if conns.is_empty() {
                continue;
            }
            let acl = acl_at(tree, events, &mut deletions, i, p);
            let mut conns: Vec<_> = conns
                .into_iter()
                .filter(|c| {
                    let ids = auth(*c).unwrap_or(NO_IDS);
                    acl.is_none_or(|acl| acl::check(acl, perms::READ, ids).is_ok())
                })
                .collect();
            conns.sort_unstable();
            out.extend(conns.into_iter().map(|c| (c, ty, p.to_string())));
        }
    }

    /// Total watches (`mntr`), without a scan.
    pub fn total(&self) -> usize {
        self.data.count() + self.child.count()
    }

    /// (watched paths, total watches) for `wchs`: the path count is a scan of the watched paths.
    pub fn counts(&self) -> (usize, usize) {
        let paths: HashSet<&String> = self
            .data
            .by_path
            .keys()
            .chain(self.child.by_path.keys())
            .collect();
        (paths.len(), self.data.count() + self.child.count())
    }

    /// Per-connection watched paths (for `wchs`/`wchc`-style reports).
    pub fn by_conn(&self) -> HashMap<ConnId, HashSet<String>> {
        let mut out: HashMap<ConnId, HashSet<String>> = HashMap::new();
        for t in [&self.data, &self.child] {
            for (c, paths) in &t.by_conn {
                out.entry(*c).or_default().extend(paths.iter().cloned());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(w: &mut WatchManager, events: &[Event]) -> Vec<Notification> {
        let mut out = vec![];
        let tree = DataTree::new();
        w.trigger(events, &tree, |_| None, &mut out);
        out
    }

    fn deleted(p: &str) -> Event {
        Event::Deleted(p.into(), Vec::new().into())
    }

    #[test]
    fn one_shot_watches_fire_once() {
        let mut w = WatchManager::default();
        w.add_data("/a", 1);
        w.add_child("/", 1);
        let ev = [Event::Created("/a".into()), Event::ChildrenChanged("/".into())];
        assert_eq!(
            fire(&mut w, &ev),
            vec![
                (1, EventType::NodeCreated, "/a".into()),
                (1, EventType::NodeChildrenChanged, "/".into())
            ]
        );
        assert!(fire(&mut w, &ev).is_empty());
    }

    #[test]
    fn delete_notifies_data_and_child_watchers_once() {
        let mut w = WatchManager::default();
        w.add_data("/a", 1);
        w.add_child("/a", 1);
        w.add_child("/a", 2);
        let out = fire(&mut w, &[deleted("/a")]);
        assert_eq!(
            out,
            vec![
                (1, EventType::NodeDeleted, "/a".into()),
                (2, EventType::NodeDeleted, "/a".into())
            ]
        );
    }

    #[test]
    fn recursive_watches_skip_children_changed() {
        let mut w = WatchManager::default();
        w.add_persistent("/a", 1, true);
        w.add_persistent("/a", 2, false);
        let ev = [Event::Created("/a/b".into()), Event::ChildrenChanged("/a".into())];
        assert_eq!(
            fire(&mut w, &ev),
            vec![
                (1, EventType::NodeCreated, "/a/b".into()),
                (2, EventType::NodeChildrenChanged, "/a".into())
            ]
        );
        assert_eq!(fire(&mut w, &ev).len(), 2, "persistent watches stay");
        assert!(w.remove("/a", 1, Target::Any, true));
        assert!(
            w.remove("/a", 1, Target::Any, false),
            "3.8.0's check matches any connection's watch on the path"
        );
        assert!(!w.remove("/a", 1, Target::Any, true));
        assert!(w.remove("/a", 2, Target::Data, true));
        assert!(
            w.remove("/a", 2, Target::Children, false),
            "the child-table half stays, as in 3.8"
        );
    }

    #[test]
    fn one_mode_per_connection_and_path() {
        let mut w = WatchManager::default();
        w.add_persistent("/a", 1, false);
        w.add_data("/a", 1);
        let ev = [Event::DataChanged("/a".into())];
        assert_eq!(fire(&mut w, &ev).len(), 1);
        assert!(
            fire(&mut w, &ev).is_empty(),
            "the standard watch replaced the persistent one"
        );
        w.add_child("/b", 1);
        w.add_persistent("/b", 1, true);
        let ev = [Event::ChildrenChanged("/b".into())];
        assert!(fire(&mut w, &ev).is_empty(), "recursive replaced the child watch");
    }

    #[test]
    fn notifications_need_read() {
        let mut w = WatchManager::default();
        w.add_data("/a", 1);
        w.add_data("/a", 2);
        let acl = vec![Acl {
            perms: perms::READ,
            id: zklock_codec::Id {
                scheme: "digest".into(),
                id: "u:x".into(),
            },
        }];
        let reader = vec![zklock_codec::Id {
            scheme: "digest".into(),
            id: "u:x".into(),
        }];
        let mut out = vec![];
        let tree = DataTree::new();
        w.trigger(
            &[Event::Deleted("/a".into(), acl.into())],
            &tree,
            |c| (c == 1).then_some(&reader),
            &mut out,
        );
        assert_eq!(out, vec![(1, EventType::NodeDeleted, "/a".into())]);
    }
}
