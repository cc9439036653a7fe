//! The links between the members of an ensemble ([`crate::Builder::peer_links`]): member `i` reaches member `j`'s
//! quorum and election ports through two [`LinkProxy`]s of its own, named in its `zoo.cfg` (ZooKeeper takes each
//! member's static configuration as it is: a member's own entry is where it listens, the others are where it
//! connects; with reconfiguration off, which is the default, the views never have to agree).
//!
//! Each ordered pair of members has one [`Direction`] (bytes from `i` to `j`), shared by every connection between
//! the two — the follower's quorum connection to the leader and the election connection, whichever member opened
//! it — so that stopping `i → j` stops exactly what `i` sends to `j`.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;

use crate::config::MemberPorts;
use crate::link::{Condition, Direction, LinkProxy};

/// The links of an ensemble, with the runtime their relays run on.
pub struct PeerLinks {
    /// `directions[i][j]`: bytes from member `i` to member `j` (`None` on the diagonal).
    directions: Vec<Vec<Option<Arc<Direction>>>>,
    /// `view[i][j]`: the (quorum, election) ports member `i` names for member `j`.
    view: Vec<Vec<(u16, u16)>>,
    proxies: Vec<LinkProxy>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl PeerLinks {
    /// Starts the links of the members listening on `ports`.
    pub(crate) fn start(ports: &[MemberPorts]) -> io::Result<PeerLinks> {
        let n = ports.len();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zk-peer-links")
            .enable_all()
            .build()?;
        let directions: Vec<Vec<Option<Arc<Direction>>>> = (0..n)
            .map(|i| (0..n).map(|j| (i != j).then(Direction::new)).collect())
            .collect();
        // Bind every listener first: an election link must know the address of the link back.
        let bind = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0));
        let mut listeners = Vec::new();
        for _ in 0..n * n {
            listeners.push(Some((bind()?, bind()?)));
        }
        let mut view = vec![vec![(0, 0); n]; n];
        for (i, row) in view.iter_mut().enumerate() {
            for (j, entry) in row.iter_mut().enumerate() {
                *entry = if i == j {
                    (ports[j].peer, ports[j].election)
                } else {
                    let (quorum, election) = listeners[i * n + j].as_ref().expect("bound");
                    (quorum.local_addr()?.port(), election.local_addr()?.port())
                };
            }
        }
        let mut proxies = Vec::new();
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let (quorum, election) = listeners[i * n + j].take().expect("bound once");
                let forward = directions[i][j].clone().expect("off the diagonal");
                let backward = directions[j][i].clone().expect("off the diagonal");
                let to = |port| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
                let back = to(view[j][i].1);
                let handle = runtime.handle();
                proxies.push(LinkProxy::serve(
                    handle,
                    quorum,
                    to(ports[j].peer),
                    forward.clone(),
                    backward.clone(),
                    None,
                )?);
                proxies.push(LinkProxy::serve(
                    handle,
                    election,
                    to(ports[j].election),
                    forward,
                    backward,
                    Some(back),
                )?);
            }
        }
        Ok(PeerLinks {
            directions,
            view,
            proxies,
            runtime: Some(runtime),
        })
    }

    /// The (quorum, election) ports member `i`'s configuration names for member `j`.
    pub(crate) fn view(&self, i: usize) -> &[(u16, u16)] {
        &self.view[i]
    }

    /// Bytes from member `from` to member `to`.
    ///
    /// # Panics
    /// `from == to`, or either is not a member.
    pub fn direction(&self, from: usize, to: usize) -> Arc<Direction> {
        self.directions[from][to]
            .clone()
            .expect("a link joins two different members")
    }

    /// Every direction passes again.
    pub fn heal(&self) {
        for direction in self.directions.iter().flatten().flatten() {
            direction.set(Condition::Pass);
        }
    }
}

impl Drop for PeerLinks {
    fn drop(&mut self) {
        self.proxies.clear();
        // Dropping a runtime may not block inside an async context (where a campaign may drop the ensemble).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for PeerLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLinks")
            .field("view", &self.view)
            .finish_non_exhaustive()
    }
}
