//! Network links between processes on 127.0.0.1 that can be partitioned one way or both, or made slow and lossy,
//! while the processes run and their TCP connections stay open.
//!
//! A [`LinkProxy`] listens on `127.0.0.1:<random port>` and relays every connection to one upstream address, byte
//! for byte. Each way of the relay obeys a [`Direction`]: bytes from the connecting side to the upstream side
//! obey `forward`, the replies obey `backward`. Directions are shared: every connection between two ZooKeeper
//! members, in either proxy, obeys the same two directions, so "member 1 → member 2 stops" holds whoever opened
//! the connection (see [`crate::PeerLinks`]).
//!
//! What it cannot do: reorder bytes inside one connection (TCP delivers in order whatever the network does), or
//! refuse the TCP handshake of a new connection while a direction is stopped (the kernel completes it before the
//! proxy accepts): such a connection is accepted and then silent until both directions pass, as a peer whose
//! SYN-ACK never arrives.

mod direction;
mod election;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

pub use direction::{Condition, Direction, Slowness};

/// Chunks read ahead of delivery on one way of one connection (then the sender's TCP buffers fill up).
const CHUNKS_IN_FLIGHT: usize = 256;
const CHUNK: usize = 64 * 1024;

/// A TCP relay whose two ways obey two [`Direction`]s. Dropping it closes the listener and every connection.
#[derive(Debug)]
pub struct LinkProxy {
    addr: SocketAddr,
    acceptor: AbortHandle,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
}

/// The parts of a link every connection shares.
struct Ends {
    upstream: SocketAddr,
    forward: Arc<Direction>,
    backward: Arc<Direction>,
    /// For a ZooKeeper election port: the address the connecting member's first message advertises is replaced
    /// with this one, so that a member that answers by connecting back comes through its own link.
    advertise: Option<SocketAddr>,
}

impl LinkProxy {
    /// Starts a link on `127.0.0.1:0` to `upstream`, its tasks on `runtime`.
    ///
    /// # Errors
    /// The listening socket cannot be bound.
    pub fn start(
        runtime: &Handle,
        upstream: SocketAddr,
        forward: Arc<Direction>,
        backward: Arc<Direction>,
    ) -> io::Result<LinkProxy> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        Self::serve(runtime, listener, upstream, forward, backward, None)
    }

    /// Relays the connections `listener` accepts (see [`LinkProxy::start`]); `advertise`: see [`Ends`].
    pub(crate) fn serve(
        runtime: &Handle,
        listener: std::net::TcpListener,
        upstream: SocketAddr,
        forward: Arc<Direction>,
        backward: Arc<Direction>,
        advertise: Option<SocketAddr>,
    ) -> io::Result<LinkProxy> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let ends = Arc::new(Ends {
            upstream,
            forward,
            backward,
            advertise,
        });
        let connections = Arc::new(Mutex::new(Vec::new()));
        let acceptor = runtime
            .spawn(accept_loop(listener, ends, connections.clone(), runtime.clone()))
            .abort_handle();
        Ok(LinkProxy {
            addr,
            acceptor,
            connections,
        })
    }

    /// The address to connect to instead of the upstream one.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        for connection in std::mem::take(&mut *self.connections.lock().unwrap_or_else(|e| e.into_inner())) {
            connection.abort();
        }
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    ends: Arc<Ends>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    runtime: Handle,
) {
    let listener = match TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => return tracing::warn!(%error, "link cannot listen"),
    };
    loop {
        let client = crate::proxy::accept(&listener, "link").await;
        let task = runtime.spawn(connection(client, ends.clone())).abort_handle();
        let mut list = connections.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|t| !t.is_finished());
        list.push(task);
    }
}

async fn connection(client: TcpStream, ends: Arc<Ends>) {
    // A handshake needs both ways.
    ends.forward.open().await;
    ends.backward.open().await;
    let upstream = match TcpStream::connect(ends.upstream).await {
        Ok(upstream) => upstream,
        Err(error) => return tracing::debug!(%error, "link cannot reach upstream"),
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (mut client_read, client_write) = client.into_split();
    let (upstream_read, mut upstream_write) = upstream.into_split();
    if let Some(advertise) = ends.advertise {
        if let Err(error) =
            election::rewrite_initial_message(&mut client_read, &mut upstream_write, advertise).await
        {
            return tracing::debug!(%error, "link: no initial message");
        }
    }
    let forward = pump(client_read, upstream_write, &ends.forward, &ends.backward);
    let backward = pump(upstream_read, client_write, &ends.backward, &ends.forward);
    // Either way failing (an end reset the connection) ends both; a clean close of both ways ends it too.
    let _ = tokio::try_join!(forward, backward);
}

enum Chunk {
    Bytes(Instant, Vec<u8>),
    Eof,
    Failed(io::Error),
}

/// Relays one way: reads ahead into a queue, delivers each chunk when `way` lets it through. An error learnt
/// from the receiver (it closed or reset) travels back the other way, so it is reported only once `back` passes.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    way: &Direction,
    back: &Direction,
) -> io::Result<()> {
    let (tx, mut rx) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let read = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            let chunk = match from.read(&mut buf).await {
                Ok(0) => Chunk::Eof,
                Ok(n) => Chunk::Bytes(Instant::now(), buf[..n].to_vec()),
                Err(error) => Chunk::Failed(error),
            };
            let last = !matches!(chunk, Chunk::Bytes(..));
            if tx.send(chunk).await.is_err() || last {
                return;
            }
        }
    };
    let deliver = async {
        let mut rng = rand::rngs::StdRng::from_entropy();
        let mut last_due = Instant::now();
        let mut condition = way.subscribe();
        while let Some(chunk) = rx.recv().await {
            // Held while stopped; late while slow, never before the chunk ahead of it.
            loop {
                let now = *condition.borrow_and_update();
                match now {
                    Condition::Stop => {
                        let _ = condition.changed().await;
                    }
                    Condition::Pass => break,
                    Condition::Slow(slow) => {
                        let sent = match &chunk {
                            Chunk::Bytes(sent, _) => *sent,
                            _ => Instant::now(),
                        };
                        last_due = last_due.max(slow.due(sent, &mut rng));
                        tokio::select! {
                            () = tokio::time::sleep_until(last_due) => break,
                            _ = condition.changed() => {}
                        }
                    }
                }
            }
            match chunk {
                Chunk::Bytes(_, bytes) => {
                    if let Err(error) = to.write_all(&bytes).await {
                        back.open().await;
                        return Err(error);
                    }
                    way.count(bytes.len());
                }
                Chunk::Eof => {
                    let _ = to.shutdown().await;
                    return Ok(());
                }
                Chunk::Failed(error) => return Err(error),
            }
        }
        Ok(())
    };
    // The reader stops once it queued its last chunk; delivery may go on after it, never the other way round.
    tokio::pin!(deliver);
    tokio::select! {
        delivered = &mut deliver => return delivered,
        () = read => {}
    }
    deliver.await
}

#[cfg(test)]
mod tests;
