//! What a cache holds: the nodes of its subtree as last read, and the one place that changes them. Every change
//! goes through [`State::apply`] (or [`State::remove_under`]), which compares what was read with what was held and
//! sends the difference as events while the state is still locked — so a subscriber that takes a copy under the
//! same lock and then listens sees every change exactly once (`Events` in `cache/mod.rs`).
//!
//! **Layout, for memory** (issue 30: at most half of Curator's 248 bytes per node). A node is held in its parent's
//! [`Dir`], by name, as one [`Child`] of 88 bytes: its name and data together in line when they fit in 21 bytes
//! (else in one allocation of their own), and its stat without the two fields the rest gives (the data's length;
//! the path). A directory's children are one dense `Vec`, filled from its listing in one go, with an index of
//! 4-byte positions by name (about 5–10 bytes a child). No node has its full path, its own `Arc` or an allocation
//! of its own: those are made only for what is handed out ([`CachedNode`]). The directories themselves — each node
//! that has children held — are in a `BTreeMap` by path, so that a subtree's directories are one range.

use std::collections::BTreeMap;
use std::hash::BuildHasher as _;
use std::ops::Bound;
use std::sync::Arc;

use hashbrown::HashTable;
use tokio::sync::broadcast;
use zookeeper_client::Stat;

use super::{CacheEvent, CachedNode};

type Events = broadcast::Sender<Arc<CacheEvent>>;

/// The nodes of the cached subtree, each in its parent's directory (the root `/` in the directory `""`).
#[derive(Debug, Default)]
pub(super) struct State {
    dirs: BTreeMap<Box<str>, Dir>,
    len: usize,
    hasher: foldhash::fast::RandomState,
    /// Set once the first full read is done (Curator's "initialized").
    pub(super) initialized: bool,
}

impl State {
    pub(super) fn get(&self, path: &str) -> Option<CachedNode> {
        let (dir, name) = split(path);
        let dir = self.dirs.get(dir)?;
        let at = dir.find(&self.hasher, name)?;
        Some(dir.children[at].node(path.to_owned()))
    }

    /// Whether the node at `path` is held.
    pub(super) fn contains(&self, path: &str) -> bool {
        let (dir, name) = split(path);
        self.dirs
            .get(dir)
            .is_some_and(|dir| dir.find(&self.hasher, name).is_some())
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Every node held, in path order.
    pub(super) fn nodes(&self) -> Vec<CachedNode> {
        let mut nodes: Vec<CachedNode> = self
            .dirs
            .iter()
            .flat_map(|(dir, held)| {
                held.children
                    .iter()
                    .map(|child| child.node(join(dir, child.name())))
            })
            .collect();
        nodes.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        nodes
    }

    /// The names of the children of `path` held, in order.
    pub(super) fn children(&self, path: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .dirs
            .get(path)
            .map(|dir| dir.children.iter().map(|child| child.name().to_owned()).collect())
            .unwrap_or_default();
        names.sort_unstable();
        names
    }

    /// Applies what a read of `path` found (`None`: no node there), sending the event it makes: created, changed
    /// (data or stat differ), deleted (with every descendant held: a node that is gone has none). Reads are
    /// applied in the order they were sent on one session, so each is newer than what it replaces.
    pub(super) fn apply(&mut self, path: &str, read: Option<(Vec<u8>, Stat)>, events: &Events) {
        let (dir_path, name) = split(path);
        let Some((data, stat)) = read else {
            self.remove_under(path, events);
            let Some(dir) = self.dirs.get_mut(dir_path) else {
                return;
            };
            if let Some(old) = dir.remove(&self.hasher, name) {
                self.len -= 1;
                if dir.children.is_empty() {
                    self.dirs.remove(dir_path);
                }
                let _ = events.send(Arc::new(CacheEvent::Deleted(old.node(path.to_owned()))));
            }
            return;
        };
        let dir = match self.dirs.get_mut(dir_path) {
            Some(dir) => dir,
            None => self.dirs.entry(dir_path.into()).or_default(),
        };
        let new = Child::new(name, &data, &stat);
        match dir.find(&self.hasher, name) {
            Some(at) if dir.children[at] == new => {}
            Some(at) => {
                let old = std::mem::replace(&mut dir.children[at], new);
                let event = CacheEvent::Changed {
                    old: old.node(path.to_owned()),
                    new: dir.children[at].node(path.to_owned()),
                };
                let _ = events.send(Arc::new(event));
            }
            None => {
                let _ = events.send(Arc::new(CacheEvent::Created(new.node(path.to_owned()))));
                dir.insert(&self.hasher, new);
                self.len += 1;
            }
        }
    }

    /// Removes every descendant of `path` held, deepest first (as ZooKeeper deletes them: reverse path order), each
    /// with its event.
    pub(super) fn remove_under(&mut self, path: &str, events: &Events) {
        let (from, to) = if path == "/" {
            (String::from("/"), String::from("0"))
        } else {
            (format!("{path}/"), format!("{path}0"))
        };
        let below = (Bound::Excluded(from.as_str()), Bound::Excluded(to.as_str()));
        let mut dirs: Vec<Box<str>> = self
            .dirs
            .range::<str, _>(below)
            .map(|(dir, _)| dir.clone())
            .collect();
        if self.dirs.contains_key(path) {
            dirs.push(path.into());
        }
        if dirs.is_empty() {
            return;
        }
        let mut gone: Vec<CachedNode> = Vec::new();
        for dir in dirs {
            if let Some(held) = self.dirs.remove(&dir) {
                self.len -= held.children.len();
                gone.extend(
                    held.children
                        .iter()
                        .map(|child| child.node(join(&dir, child.name()))),
                );
            }
        }
        gone.sort_unstable_by(|a, b| b.path.cmp(&a.path));
        for node in gone {
            let _ = events.send(Arc::new(CacheEvent::Deleted(node)));
        }
    }

    /// Removes the children of `dir` held that are not in `names` (a listing of `dir`), with their descendants, and
    /// makes room for the rest in one allocation: their reads follow.
    pub(super) fn keep_children(&mut self, dir: &str, names: &[String], events: &Events) {
        let listed: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
        for name in self.children(dir) {
            if !listed.contains(name.as_str()) {
                self.apply(&join(dir, &name), None, events);
            }
        }
        if names.is_empty() {
            return;
        }
        let held = match self.dirs.get_mut(dir) {
            Some(held) => held,
            None => self.dirs.entry(dir.into()).or_default(),
        };
        held.reserve(&self.hasher, names.len());
    }
}

/// A path's directory and name: `/a/b` is in `/a` as `b`, `/a` in `/` as `a`, and `/` in `""` as `""`.
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) if path.len() == 1 => ("", ""),
        Some(0) => ("/", &path[1..]),
        Some(at) => (&path[..at], &path[at + 1..]),
        None => ("", path),
    }
}

/// The path of `name` in directory `dir` ([`split`]'s inverse).
fn join(dir: &str, name: &str) -> String {
    match dir {
        "" => String::from("/"),
        "/" => format!("/{name}"),
        _ => format!("{dir}/{name}"),
    }
}

/// The children held of one node: dense, in no order, with an index of their positions by name.
#[derive(Debug, Default)]
struct Dir {
    children: Vec<Child>,
    index: HashTable<u32>,
}

impl Dir {
    fn find(&self, hasher: &foldhash::fast::RandomState, name: &str) -> Option<usize> {
        let hash = hasher.hash_one(name);
        self.index
            .find(hash, |&at| self.children[at as usize].name() == name)
            .map(|&at| at as usize)
    }

    /// Room for `more` children beyond those held, exactly.
    fn reserve(&mut self, hasher: &foldhash::fast::RandomState, more: usize) {
        let more = more.saturating_sub(self.children.len());
        self.children.reserve_exact(more);
        let children = &self.children;
        self.index
            .reserve(more, |&at| hasher.hash_one(children[at as usize].name()));
    }

    /// Adds a child not held yet.
    fn insert(&mut self, hasher: &foldhash::fast::RandomState, child: Child) {
        let at = u32::try_from(self.children.len()).expect("fewer than 2^32 children");
        let hash = hasher.hash_one(child.name());
        self.children.push(child);
        let children = &self.children;
        self.index
            .insert_unique(hash, at, |&at| hasher.hash_one(children[at as usize].name()));
    }

    /// Takes a child out: the last one moves into its place.
    fn remove(&mut self, hasher: &foldhash::fast::RandomState, name: &str) -> Option<Child> {
        let hash = hasher.hash_one(name);
        let children = &self.children;
        let entry = self
            .index
            .find_entry(hash, |&at| children[at as usize].name() == name)
            .ok()?;
        let (at, _) = entry.remove();
        let at = at as usize;
        let last = self.children.len() - 1;
        let child = self.children.swap_remove(at);
        if at != last {
            let moved = hasher.hash_one(self.children[at].name());
            if let Some(slot) = self.index.find_mut(moved, |&i| i as usize == last) {
                *slot = at as u32;
            }
        }
        Some(child)
    }
}

/// How many bytes of name and data a [`Child`] keeps in line.
const INLINE: usize = 21;

/// A node as held in its directory: 88 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Child {
    name_and_data: Packed,
    stat: Stamp,
}

const _: () = assert!(std::mem::size_of::<Child>() == 88);

impl Child {
    fn new(name: &str, data: &[u8], stat: &Stat) -> Child {
        let len = name.len() + data.len();
        let name_and_data = if len <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..name.len()].copy_from_slice(name.as_bytes());
            bytes[name.len()..len].copy_from_slice(data);
            Packed::Inline {
                name_len: name.len() as u8,
                len: len as u8,
                bytes,
            }
        } else {
            let mut bytes = Vec::with_capacity(len);
            bytes.extend_from_slice(name.as_bytes());
            bytes.extend_from_slice(data);
            Packed::Heap {
                name_len: u32::try_from(name.len()).expect("a name under 4 GiB"),
                bytes: bytes.into_boxed_slice(),
            }
        };
        Child {
            name_and_data,
            stat: Stamp::of(stat),
        }
    }

    fn split(&self) -> (&[u8], &[u8]) {
        match &self.name_and_data {
            Packed::Inline { name_len, len, bytes } => {
                bytes[..usize::from(*len)].split_at(usize::from(*name_len))
            }
            Packed::Heap { name_len, bytes } => bytes.split_at(*name_len as usize),
        }
    }

    fn name(&self) -> &str {
        // Made from a `&str` and split at its end: always UTF-8.
        std::str::from_utf8(self.split().0).unwrap_or_default()
    }

    fn data(&self) -> &[u8] {
        self.split().1
    }

    fn node(&self, path: String) -> CachedNode {
        let data = self.data();
        CachedNode {
            path,
            data: Arc::from(data),
            stat: self.stat.stat(data.len()),
        }
    }
}

/// A node's name followed by its data.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Packed {
    Inline {
        name_len: u8,
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap {
        name_len: u32,
        bytes: Box<[u8]>,
    },
}

/// A [`Stat`] without its data length (the data's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    ctime: i64,
    mtime: i64,
    ephemeral_owner: i64,
    version: i32,
    cversion: i32,
    aversion: i32,
    num_children: i32,
}

impl Stamp {
    fn of(stat: &Stat) -> Stamp {
        Stamp {
            czxid: stat.czxid,
            mzxid: stat.mzxid,
            pzxid: stat.pzxid,
            ctime: stat.ctime,
            mtime: stat.mtime,
            ephemeral_owner: stat.ephemeral_owner,
            version: stat.version,
            cversion: stat.cversion,
            aversion: stat.aversion,
            num_children: stat.num_children,
        }
    }

    fn stat(&self, data_length: usize) -> Stat {
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            pzxid: self.pzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            ephemeral_owner: self.ephemeral_owner,
            version: self.version,
            cversion: self.cversion,
            aversion: self.aversion,
            num_children: self.num_children,
            data_length: i32::try_from(data_length).unwrap_or(i32::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(version: i32) -> Stat {
        Stat {
            czxid: 1,
            mzxid: 2 + i64::from(version),
            pzxid: 3,
            ctime: 4,
            mtime: 5,
            version,
            cversion: 6,
            aversion: 7,
            ephemeral_owner: 8,
            data_length: 0,
            num_children: 0,
        }
    }

    fn read(data: &[u8], version: i32) -> Option<(Vec<u8>, Stat)> {
        let mut stat = stat(version);
        stat.data_length = data.len() as i32;
        Some((data.to_vec(), stat))
    }

    fn drain(events: &mut broadcast::Receiver<Arc<CacheEvent>>) -> Vec<String> {
        let mut seen = Vec::new();
        while let Ok(event) = events.try_recv() {
            seen.push(match &*event {
                CacheEvent::Created(node) => format!("+{}", node.path),
                CacheEvent::Changed { new, .. } => format!("~{}", new.path),
                CacheEvent::Deleted(node) => format!("-{}", node.path),
                other => format!("{other:?}"),
            });
        }
        seen
    }

    /// Paths split and join back, the root and top-level nodes included.
    #[test]
    fn paths_split_into_directory_and_name_and_join_back() {
        for (path, dir, name) in [
            ("/", "", ""),
            ("/a", "/", "a"),
            ("/a/b", "/a", "b"),
            ("/a/b/c", "/a/b", "c"),
        ] {
            assert_eq!(split(path), (dir, name));
            assert_eq!(join(dir, name), path);
        }
    }

    /// Data and stat come back as they were read, in line or not; the events say what changed; deleting a node
    /// deletes its descendants first, deepest first; a removal moves the last child and the index follows it.
    #[test]
    fn nodes_come_back_as_read_and_deletions_go_deepest_first() {
        let (sender, mut events) = broadcast::channel(64);
        let mut state = State::default();
        let long = vec![7u8; 100];
        state.apply("/", read(b"root", 0), &sender);
        state.apply("/a", read(b"short", 0), &sender);
        state.apply("/a/x", read(&long, 0), &sender);
        state.apply("/a/y", read(b"", 0), &sender);
        state.apply("/a/y/z", read(b"deep", 0), &sender);
        state.apply("/a-b", read(b"sibling", 0), &sender);
        assert_eq!(state.len(), 6);
        assert_eq!(
            drain(&mut events),
            ["+/", "+/a", "+/a/x", "+/a/y", "+/a/y/z", "+/a-b"]
        );
        let x = state.get("/a/x").unwrap();
        assert_eq!(&*x.data, &long[..]);
        assert_eq!(x.stat, read(&long, 0).unwrap().1);
        assert_eq!(&*state.get("/a").unwrap().data, b"short");
        assert_eq!(state.children("/a"), ["x", "y"]);
        assert_eq!(state.children("/"), ["a", "a-b"]);
        let paths: Vec<String> = state.nodes().into_iter().map(|n| n.path).collect();
        assert_eq!(paths, ["/", "/a", "/a-b", "/a/x", "/a/y", "/a/y/z"], "path order");

        // The same read again is no event; a new version is one.
        state.apply("/a/x", read(&long, 0), &sender);
        state.apply("/a/y", read(b"now", 1), &sender);
        assert_eq!(drain(&mut events), ["~/a/y"]);

        // /a/x goes: /a/y moves into its place, and is still found.
        state.apply("/a/x", None, &sender);
        assert_eq!(drain(&mut events), ["-/a/x"]);
        assert_eq!(&*state.get("/a/y").unwrap().data, b"now");
        assert!(state.get("/a/x").is_none());

        state.apply("/a", None, &sender);
        assert_eq!(drain(&mut events), ["-/a/y/z", "-/a/y", "-/a"]);
        assert_eq!(state.len(), 2);
        assert_eq!(state.children("/"), ["a-b"]);

        // A listing without a child removes it.
        state.keep_children("/", &[], &sender);
        assert_eq!(drain(&mut events), ["-/a-b"]);
        assert_eq!(state.len(), 1);
    }

    /// Many children in one directory, removed in an order other than added: the index stays right.
    #[test]
    fn the_index_follows_every_removal() {
        let (sender, _events) = broadcast::channel(4);
        let mut state = State::default();
        let names: Vec<String> = (0..500).map(|i| format!("n{i:04}")).collect();
        state.keep_children("/d", &names, &sender);
        for (i, name) in names.iter().enumerate() {
            state.apply(&format!("/d/{name}"), read(name.as_bytes(), i as i32), &sender);
        }
        for name in names.iter().step_by(3) {
            state.apply(&format!("/d/{name}"), None, &sender);
        }
        for (i, name) in names.iter().enumerate() {
            let held = state.get(&format!("/d/{name}"));
            if i % 3 == 0 {
                assert!(held.is_none(), "{name}");
            } else {
                let held = held.unwrap_or_else(|| panic!("{name} lost"));
                assert_eq!(&*held.data, name.as_bytes());
                assert_eq!(held.stat.version, i as i32);
            }
        }
        assert_eq!(state.len(), 500 - 167);
    }
}
