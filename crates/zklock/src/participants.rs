//! What a recipe directory holds, as the library shows it: the public view types ([`Inspection`], [`Recipe`],
//! [`Participant`], [`NodeKind`], [`Role`]) and the helpers every recipe uses to read its participants. Each
//! recipe reads its own layout with these; `inspect.rs` only picks the recipe.

use std::time::{Duration, SystemTime};

use zookeeper_client::Stat;

use crate::error::Result;
use crate::idioms::IfExists;
use crate::node::{Contender, Marker};
use crate::path::child_path;
use crate::retry::is_connection_loss;
use crate::session::Session;

/// What [`inspect`] found in a recipe directory.
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
    },
    /// A [`Queue`](crate::Queue).
    Queue {
        /// How many items it holds (claimed ones included).
        items: usize,
        /// How many of them a [`take_safe`](crate::Queue::take_safe) consumer has claimed.
        claimed: usize,
    },
    /// A [`DoubleBarrier`](crate::DoubleBarrier): the participants are the members present.
    DoubleBarrier {
        /// Whether the barrier has opened (enough members arrived).
        ready: bool,
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
    /// The data stored in the node (`with_data`).
    pub data: Vec<u8>,
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

/// A participant from its node's name, data and stat.
pub(crate) fn participant(
    dir: &str,
    name: &str,
    sequence: Option<i64>,
    kind: NodeKind,
    role: Role,
    data: Vec<u8>,
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
        data,
    }
}

/// Reads the data and stat of the children `names` of `dir`: all requests are sent at once (ZooKeeper answers them
/// in order on the one session), each retried on its own after a connection loss. `None` for a node gone since
/// the listing.
pub(crate) async fn read_nodes(
    session: &Session,
    dir: &str,
    names: &[&str],
) -> Result<Vec<Option<(Vec<u8>, Stat)>>> {
    let (client, retry) = (session.client(), session.retry());
    let paths: Vec<String> = names.iter().map(|name| child_path(dir, name)).collect();
    // `zookeeper-client` sends a request when the method is called: these are all on their way now.
    let reads: Vec<_> = paths.iter().map(|path| client.get_data(path)).collect();
    let mut nodes = Vec::with_capacity(reads.len());
    for (path, read) in paths.iter().zip(reads) {
        let read = match read.await {
            Err(err) if is_connection_loss(&err) => retry.run(|| client.get_data(path)).await,
            other => other.map_err(Into::into),
        };
        nodes.push(read.if_exists()?);
    }
    Ok(nodes)
}
