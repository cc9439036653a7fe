//! Watch registrations, following ZooKeeper's `WatchManager`: two tables (data/exist watches and child
//! watches), each mapping a path to the connections watching it and how. Persistent and
//! persistent-recursive watches live in both tables, as in ZooKeeper, and a recursive watch also matches
//! events on descendants (never children-changed ones).

use std::collections::{HashMap, HashSet};
use zklock_codec::EventType;

use crate::path;
use crate::tree::Event;

/// Connection identifier (watches belong to connections, not sessions).
pub type ConnId = u64;

/// How one connection watches one path in one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Modes {
    standard: bool,
    persistent: bool,
    recursive: bool,
}

impl Modes {
    fn is_empty(&self) -> bool {
        !(self.standard || self.persistent || self.recursive)
    }
}

/// One of the two watch tables.
#[derive(Debug, Default)]
struct Table {
    by_path: HashMap<String, HashMap<ConnId, Modes>>,
    by_conn: HashMap<ConnId, HashSet<String>>,
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
    fn add(&mut self, path: &str, conn: ConnId, kind: Kind) {
        let m = self
            .by_path
            .entry(path.to_string())
            .or_default()
            .entry(conn)
            .or_default();
        match kind {
            Kind::Standard => m.standard = true,
            Kind::Persistent => m.persistent = true,
            Kind::Recursive => m.recursive = true,
        }
        self.by_conn.entry(conn).or_default().insert(path.to_string());
    }

    /// Removes the given kinds; returns whether anything was removed.
    fn remove(&mut self, path: &str, conn: ConnId, kinds: &[Kind]) -> bool {
        let Some(watchers) = self.by_path.get_mut(path) else {
            return false;
        };
        let Some(m) = watchers.get_mut(&conn) else {
            return false;
        };
        let mut removed = false;
        for k in kinds {
            let flag = match k {
                Kind::Standard => &mut m.standard,
                Kind::Persistent => &mut m.persistent,
                Kind::Recursive => &mut m.recursive,
            };
            removed |= std::mem::take(flag);
        }
        if m.is_empty() {
            watchers.remove(&conn);
            if watchers.is_empty() {
                self.by_path.remove(path);
            }
            if let Some(paths) = self.by_conn.get_mut(&conn) {
                paths.remove(path);
            }
        }
        removed
    }

    fn contains(&self, path: &str, conn: ConnId, kinds: &[Kind]) -> bool {
        self.by_path
            .get(path)
            .and_then(|w| w.get(&conn))
            .is_some_and(|m| {
                kinds.iter().any(|k| match k {
                    Kind::Standard => m.standard,
                    Kind::Persistent => m.persistent,
                    Kind::Recursive => m.recursive,
                })
            })
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
                for (conn, m) in watchers.iter_mut() {
                    if m.recursive && ty != EventType::NodeChildrenChanged {
                        out.insert(*conn);
                    }
                    if !at_parent && (m.standard || m.persistent) {
                        out.insert(*conn);
                        m.standard = false;
                        if m.is_empty() {
                            emptied.push(*conn);
                        }
                    }
                }
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
                w.remove(&conn);
                if w.is_empty() {
                    self.by_path.remove(&p);
                }
            }
        }
    }

    fn count(&self) -> usize {
        self.by_path.values().map(HashMap::len).sum()
    }
}

/// All watches of the server.
#[derive(Debug, Default)]
pub struct WatchManager {
    data: Table,
    child: Table,
}

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
    pub fn remove(&mut self, path: &str, conn: ConnId, target: Target, remove: bool) -> bool {
        use Kind::*;
        const ALL: &[Kind] = &[Standard, Persistent, Recursive];
        let (data, child): (&[Kind], &[Kind]) = match target {
            Target::Children => (&[], ALL),
            Target::Data => (ALL, &[]),
            Target::Any => (ALL, ALL),
        };
        if remove {
            let a = self.data.remove(path, conn, data);
            let b = self.child.remove(path, conn, child);
            a || b
        } else {
            self.data.contains(path, conn, data) || self.child.contains(path, conn, child)
        }
    }

    /// Drops every watch of a closed connection.
    pub fn remove_conn(&mut self, conn: ConnId) {
        self.data.remove_conn(conn);
        self.child.remove_conn(conn);
    }

    /// Turns tree events into notifications, in the order ZooKeeper's `DataTree` triggers them.
    pub fn trigger(&mut self, events: &[Event], out: &mut Vec<Notification>) {
        let none = HashSet::new();
        let emit = |conns: HashSet<ConnId>, ty: EventType, p: &str, out: &mut Vec<Notification>| {
            let mut conns: Vec<_> = conns.into_iter().collect();
            conns.sort_unstable();
            out.extend(conns.into_iter().map(|c| (c, ty, p.to_string())));
        };
        for e in events {
            match e {
                Event::Created(p) => {
                    let c = self.data.trigger(p, EventType::NodeCreated, &none);
                    emit(c, EventType::NodeCreated, p, out);
                }
                Event::DataChanged(p) => {
                    let c = self.data.trigger(p, EventType::NodeDataChanged, &none);
                    emit(c, EventType::NodeDataChanged, p, out);
                }
                Event::ChildrenChanged(p) => {
                    let c = self.child.trigger(p, EventType::NodeChildrenChanged, &none);
                    emit(c, EventType::NodeChildrenChanged, p, out);
                }
                Event::Deleted(p) => {
                    let first = self.data.trigger(p, EventType::NodeDeleted, &none);
                    let second = self.child.trigger(p, EventType::NodeDeleted, &first);
                    emit(
                        first.union(&second).copied().collect(),
                        EventType::NodeDeleted,
                        p,
                        out,
                    );
                }
            }
        }
    }

    /// (watched paths, total watches) for `srvr`/`mntr`/`wchs`.
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
        w.trigger(events, &mut out);
        out
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
        let out = fire(&mut w, &[Event::Deleted("/a".into())]);
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
        assert!(!w.remove("/a", 1, Target::Any, false));
        assert!(w.remove("/a", 2, Target::Data, true));
        assert!(
            w.remove("/a", 2, Target::Children, false),
            "the child-table half stays, as in 3.8"
        );
    }
}
