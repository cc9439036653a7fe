//! What a recipe directory holds, as the library shows it: the public view types ([`Inspection`], [`Recipe`],
//! [`Participant`], [`NodeKind`], [`Role`]) and the participants made from the nodes read.

use std::time::{Duration, SystemTime};

use zookeeper_client::Stat;

use crate::base::error::Result;
use crate::base::names::{Contender, Marker};
use crate::base::path::child_path;
use crate::session::read::read_nodes;
use crate::session::Session;

/// What [`inspect`](crate::inspect()) found in a recipe directory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// The directory.
    pub path: String,
    /// Which recipe uses it, as far as its children tell.
    pub recipe: Recipe,
    /// Who takes part, in order: holders (or the leader) first, then those waiting in queue order. A queue's items
    /// are counted in [`Recipe::Queue`], not listed here.
    pub participants: Vec<Participant>,
    /// A [`PriorityQueue`](crate::PriorityQueue)'s items per priority, first out (lowest number) first; empty for
    /// every other recipe.
    pub items_by_priority: Vec<(i32, usize)>,
    /// What the layout shows to be unsafe, in words: e.g. a lock queue that mixes kazoo's node names with
    /// Curator's, which a stock kazoo `Lock` and a stock Curator `InterProcessMutex` do not see of each other.
    pub warnings: Vec<String>,
}

/// Which recipe a directory's children show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recipe {
    /// A lock's queue: [`Mutex`](crate::Mutex), [`RwLock`](crate::RwLock), or Curator's and kazoo's locks.
    Lock,
    /// A [`LeaderElection`](crate::LeaderElection) (or Curator's `LeaderLatch`): the holder leads.
    Election,
    /// A [`Semaphore`](crate::Semaphore): the participants are its lease nodes.
    Semaphore {
        /// How many acquirers queue for their turn to take a lease.
        acquirers: usize,
        /// How many leases it has, when recorded (zklock's and kazoo's record it; Curator's does not).
        leases: Option<usize>,
    },
    /// A [`Queue`](crate::Queue).
    Queue {
        /// How many items it holds (claimed ones included).
        items: usize,
        /// How many of them a [`take_safe`](crate::Queue::take_safe) consumer has claimed.
        claimed: usize,
    },
    /// A [`PriorityQueue`](crate::PriorityQueue) (or Curator's `DistributedPriorityQueue`); its items per
    /// priority are in [`Inspection::items_by_priority`].
    PriorityQueue {
        /// How many items it holds (claimed ones included).
        items: usize,
        /// How many of them a [`take_safe`](crate::PriorityQueue::take_safe) consumer has claimed.
        claimed: usize,
    },
    /// A [`SharedCount`](crate::SharedCount) (or Curator's): a node without children holding 4 bytes.
    SharedCount {
        /// The count.
        value: i32,
        /// The node's version.
        version: i32,
    },
    /// An [`AtomicLong`](crate::AtomicLong) (or Curator's `DistributedAtomicLong`): a node without children holding
    /// 8 bytes.
    AtomicLong {
        /// The value.
        value: i64,
        /// The node's version.
        version: i32,
    },
    /// A [`DoubleBarrier`](crate::DoubleBarrier): the participants are the members present.
    DoubleBarrier {
        /// Whether the barrier has opened (enough members arrived).
        ready: bool,
    },
    /// A [`Group`](crate::Group) (or kazoo's `Party` / `ShallowParty`): the participants are its members, in the
    /// order they joined.
    Group,
    /// A service of [`ServiceDiscovery`](crate::ServiceDiscovery) (curator-x-discovery's layout): the participants
    /// are its registered instances (their data: the instance JSON), in the order they registered.
    Service,
    /// One [`TwoPhaseCommit`](crate::TwoPhaseCommit) transaction node: the participants are its coordinator, the
    /// votes cast and the participants that have joined without voting yet.
    Transaction {
        /// How many participants the coordinator named.
        participants: usize,
        /// How many of them have joined (alive or not).
        joined: usize,
        /// How many have voted.
        votes: usize,
        /// How many of the votes are commit.
        commit_votes: usize,
        /// The outcome, once decided.
        outcome: Option<crate::recipes::coordination::transaction::Decision>,
    },
    /// A node without children: a set [`Barrier`](crate::Barrier), or a directory nobody uses right now.
    Empty,
    /// Children none of which any recipe would have made.
    Unrecognised {
        /// How many children there are.
        children: usize,
    },
}

/// One participant of a recipe: a node of a contender, a lease holder, a candidate, a barrier member.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The node's name (its last path segment).
    pub name: String,
    /// The full path of the node.
    pub path: String,
    /// The sequence number ZooKeeper appended (`None` for double-barrier members, whose nodes are not sequential).
    pub sequence: Option<i64>,
    /// What kind of node it is.
    pub kind: NodeKind,
    /// Where it stands.
    pub role: Role,
    /// The id of the session that owns the node.
    pub session_id: i64,
    /// The node's creation zxid: the fencing token of its guard.
    pub fencing_token: i64,
    /// When the node was created (by the server's clock).
    pub created: SystemTime,
    /// The data stored in the node (`with_data`); empty when it is not [`data_readable`](Participant::data_readable).
    pub data: Vec<u8>,
    /// Whether our session may read the node's data. `false` when the node's ACL denies us `READ` (ZooKeeper's
    /// `NoAuth`): `data` is then unknown (and empty), while everything else — name, order, session, fencing token,
    /// creation time — is still known, from the node's name and its stat, which ZooKeeper shows to anybody.
    pub data_readable: bool,
}

/// What kind of node a [`Participant`] is, read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeKind {
    /// An exclusive lock contender (zklock's `Mutex`, Curator's `InterProcessMutex`).
    Lock,
    /// A reader of a read/write lock (zklock's or Curator's).
    Read,
    /// A writer of a read/write lock (zklock's or Curator's).
    Write,
    /// kazoo's `Lock` (or `WriteLock`) contender.
    KazooLock,
    /// kazoo's `ReadLock` contender.
    KazooRead,
    /// A leader-election candidate.
    Candidate,
    /// A semaphore lease.
    Lease,
    /// A double-barrier member.
    Member,
    /// A group member in kazoo's `Party` layout (a [`Group`](crate::Group)'s default).
    GroupMember,
    /// A group member in kazoo's `ShallowParty` layout.
    ShallowGroupMember,
    /// A two-phase commit transaction's coordinator.
    Coordinator,
    /// A two-phase commit vote (its data: `commit` or `abort`).
    Vote,
    /// A two-phase commit participant that has joined (and not voted yet).
    TransactionParticipant,
    /// A registered service instance (its data: curator-x-discovery's instance JSON).
    ServiceInstance,
}

/// Where a [`Participant`] stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Holds the lock or a lease, or leads the election.
    Holder,
    /// Waits: in a lock's or an election's queue, for a free lease, or for the double barrier to open.
    Waiting,
    /// Has entered an open double barrier.
    Entered,
    /// Belongs to a group.
    Member,
    /// Has voted in a two-phase commit transaction.
    Voted,
}

impl From<Marker> for NodeKind {
    fn from(marker: Marker) -> NodeKind {
        match marker {
            Marker::Lock => NodeKind::Lock,
            Marker::Read => NodeKind::Read,
            Marker::Write => NodeKind::Write,
            Marker::KazooLock => NodeKind::KazooLock,
            Marker::KazooRead => NodeKind::KazooRead,
            Marker::Latch => NodeKind::Candidate,
            Marker::Lease => NodeKind::Lease,
        }
    }
}

/// Reads the contenders' nodes (see [`read_nodes`]) and makes participants of them, all in the role `role`.
pub(crate) async fn read_contenders(
    session: &Session,
    dir: &str,
    contenders: &[Contender],
    role: Role,
) -> Result<Vec<Participant>> {
    let names: Vec<&str> = contenders.iter().map(|c| c.name.as_str()).collect();
    let read = read_nodes(session, dir, &names).await?;
    Ok(contenders
        .iter()
        .zip(read)
        .filter_map(|(contender, read)| {
            let (data, stat) = read?;
            Some(participant(
                dir,
                &contender.name,
                Some(contender.sequence),
                contender.marker.into(),
                role,
                data,
                &stat,
            ))
        })
        .collect())
}

/// The participants named `names` in `dir` that are still there, all of `kind` and `role`, in the order given
/// (nodes without a sequence number: a double barrier's members, a kazoo semaphore's leases).
pub(crate) async fn read_members(
    session: &Session,
    dir: &str,
    names: &[&str],
    kind: NodeKind,
    role: Role,
) -> Result<Vec<Participant>> {
    let read = read_nodes(session, dir, names).await?;
    Ok(names
        .iter()
        .zip(read)
        .filter_map(|(name, read)| {
            let (data, stat) = read?;
            Some(participant(dir, name, None, kind, role, data, &stat))
        })
        .collect())
}

/// A participant from its node's name, data (`None`: not readable) and stat.
pub(crate) fn participant(
    dir: &str,
    name: &str,
    sequence: Option<i64>,
    kind: NodeKind,
    role: Role,
    data: Option<Vec<u8>>,
    stat: &Stat,
) -> Participant {
    Participant {
        name: name.to_owned(),
        path: child_path(dir, name),
        sequence,
        kind,
        role,
        session_id: stat.ephemeral_owner,
        fencing_token: stat.czxid,
        created: SystemTime::UNIX_EPOCH + Duration::from_millis(stat.ctime.max(0) as u64),
        data_readable: data.is_some(),
        data: data.unwrap_or_default(),
    }
}
