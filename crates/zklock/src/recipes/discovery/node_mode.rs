//! What kind of node a `PersistentNode` keeps: Curator's create modes for it, and what each is made as.

use std::time::Duration;

use zookeeper_client::CreateMode;

/// What kind of node a [`PersistentNode`](crate::PersistentNode) keeps.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeMode {
    /// An ephemeral node: it goes with the ZooKeeper session that made it, and is made again on the next one. A
    /// node at the path that another session owns is waited for: it is not ours to take over.
    Ephemeral,
    /// A persistent node: made again whenever it is deleted; `close` deletes it.
    Persistent,
    /// A persistent node with a time to live (Curator's `PERSISTENT_WITH_TTL`): the server deletes it once it has
    /// had no child and no change for that long, and it is made again. Needs a server with TTL nodes (ZooKeeper
    /// 3.5.3+ started with `zookeeper.extendedTypesEnabled=true`; `zklock serve --extended-types`): elsewhere the
    /// create is refused (`Unimplemented`) and the node is never made.
    PersistentWithTtl(Duration),
    /// A protected ephemeral sequential node (Curator's `EPHEMERAL_SEQUENTIAL` with protection): made as
    /// `<parent>/_c_<uuid>-<name><sequence>` for the path `<parent>/<name>`, found again by its unique prefix after
    /// a lost create reply (never a second one), and made again — with a new sequence number — after it is gone.
    /// [`actual_path`](crate::PersistentNode::actual_path) says where it is.
    EphemeralSequential,
    /// The same, persistent (Curator's `PERSISTENT_SEQUENTIAL` with protection).
    PersistentSequential,
}

impl NodeMode {
    /// The node's `CreateMode`, and its TTL.
    pub(crate) fn create_mode(self) -> (CreateMode, Option<Duration>) {
        match self {
            NodeMode::Ephemeral => (CreateMode::Ephemeral, None),
            NodeMode::Persistent => (CreateMode::Persistent, None),
            NodeMode::PersistentWithTtl(ttl) => (CreateMode::Persistent, Some(ttl)),
            NodeMode::EphemeralSequential => (CreateMode::EphemeralSequential, None),
            NodeMode::PersistentSequential => (CreateMode::PersistentSequential, None),
        }
    }

    pub(crate) fn is_sequential(self) -> bool {
        self == NodeMode::EphemeralSequential || self == NodeMode::PersistentSequential
    }
}
