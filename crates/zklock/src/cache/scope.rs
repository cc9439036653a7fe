//! What a cache follows — a path, and how deep below it — and the bound on its reads in flight: shared by the two
//! ways of following, one persistent watch (`sync.rs`) and one-shot watches (`oneshot.rs`).

/// At most this many reads in flight: a burst of events waits in the watcher's queue, not in ours.
pub(super) const IN_FLIGHT: usize = 1024;

/// What the cache follows: a path, and how deep below it.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    pub(super) root: String,
    /// 0: the node only; 1: it and its children; `None`: the whole subtree.
    pub(super) depth: Option<usize>,
    /// Follow with one-shot watches (`oneshot.rs`) instead of a persistent one.
    pub(super) one_shot: bool,
    /// Hold names only (`CacheBuilder::names_only`): the listings and the creation and deletion events say which
    /// nodes exist, and nothing is read.
    pub(super) names_only: bool,
}

/// What a names-only cache holds of a node besides its name: no data, and this stat (no node has a zero `czxid`).
pub(super) const UNREAD: zookeeper_client::Stat = zookeeper_client::Stat {
    czxid: 0,
    mzxid: 0,
    ctime: 0,
    mtime: 0,
    version: 0,
    cversion: 0,
    aversion: 0,
    ephemeral_owner: 0,
    data_length: 0,
    num_children: 0,
    pzxid: 0,
};

impl Scope {
    /// How many levels `path` is below the root, if it is the root or under it.
    pub(super) fn level(&self, path: &str) -> Option<usize> {
        if path == self.root {
            return Some(0);
        }
        let rest = if self.root == "/" {
            path.strip_prefix('/')?
        } else {
            path.strip_prefix(self.root.as_str())?.strip_prefix('/')?
        };
        Some(rest.split('/').count())
    }

    pub(super) fn holds(&self, path: &str) -> bool {
        self.level(path)
            .is_some_and(|level| self.depth.is_none_or(|depth| level <= depth))
    }

    /// Whether the children of `path` (at `level`) are cached too.
    pub(super) fn lists(&self, level: usize) -> bool {
        self.depth.is_none_or(|depth| level < depth)
    }
}
