//! A [`Session`](crate::Session) that outlives expiry: the chain of ZooKeeper sessions it has had, the task that
//! makes the next one when the current one ends, and the events that tell an application what happened.
//!
//! Each ZooKeeper session is a [`Generation`]: a `zookeeper-client` [`Client`] that never comes back once expired.
//! Generations form a chain that only grows (`next` is set once), so `Session::client()` can hand out a `&Client`
//! borrowed from the session for as long as the session lives: it follows `next` to the newest generation, one
//! atomic load per generation made since the session was built (one load in the common case). An ended generation
//! stays in the chain — a client handle of a few hundred bytes whose session is over — until the last `Session`
//! value goes.
//!
//! The task holds no `Client`: only the state watcher of the current one and a weak reference to the session's
//! [`Live`] part, so dropping every `Session` (and guard) still ends the ZooKeeper session as dropping a `Client`
//! does, and stops the task.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use zookeeper_client::{self as zk, Client, SessionState};

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::retry::RetryPolicy;

/// What a reconnecting [`Session`](crate::Session) reports on [`events`](crate::Session::events), as Curator's
/// `ConnectionStateListener` does.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    /// The connection to ZooKeeper is down (Curator's `SUSPENDED`). The session and our nodes may still be alive:
    /// `zookeeper-client` reconnects by itself within the session timeout. Guards stay held unless their
    /// [`LostPolicy`](crate::LostPolicy) says otherwise.
    Suspended,
    /// The connection is back, with the same session (Curator's `RECONNECTED`): nothing was lost.
    Reconnected,
    /// The ZooKeeper session ended (expired, or its authentication failed; Curator's `LOST`): every ephemeral node
    /// of it is gone, every guard, lease, membership and claim held on it reports lost. The session makes a new
    /// ZooKeeper session next (with backoff); nothing held is taken again by itself.
    Lost,
    /// A new ZooKeeper session is in use (its id): operations started from now on use it.
    NewSession {
        /// The id of the new ZooKeeper session.
        session_id: i64,
    },
    /// [`Session::close`](crate::Session::close) was called: no new session will be made.
    Closed,
}

/// How a reconnecting session makes a new `Client`.
pub(crate) type ConnectFn =
    dyn Fn() -> Pin<Box<dyn Future<Output = std::result::Result<Client, zk::Error>> + Send>> + Send + Sync;

/// One ZooKeeper session of a `Session`, and the one made after it once it has ended.
#[derive(Debug)]
pub(crate) struct Generation {
    pub(crate) client: Client,
    /// 0 for the first session, then 1, 2, …
    pub(crate) number: u64,
    next: OnceLock<Arc<Generation>>,
}

impl Generation {
    pub(crate) fn first(client: Client) -> Arc<Generation> {
        Arc::new(Generation {
            client,
            number: 0,
            next: OnceLock::new(),
        })
    }

    /// The newest generation made after (or being) `this`.
    pub(crate) fn newest(mut this: &Arc<Generation>) -> &Arc<Generation> {
        while let Some(next) = this.next.get() {
            this = next;
        }
        this
    }
}

/// The reconnecting part of a `Session`, shared by all its clones.
pub(crate) struct Live {
    connect: Box<ConnectFn>,
    backoff: RetryPolicy,
    /// The newest generation's number.
    generation: watch::Sender<u64>,
    events: broadcast::Sender<SessionEvent>,
    /// Cancelled by `Session::close`: no new session is made after it.
    closed: CancellationToken,
    /// Cancelled when the last `Session` goes: the task ends.
    dropped: CancellationToken,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("generation", &*self.generation.borrow())
            .field("closed", &self.closed.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

/// How many events a slow [`events`](crate::Session::events) receiver may fall behind before it misses some.
const EVENTS_CAPACITY: usize = 64;

impl Live {
    /// Connects the first session and starts the task that replaces it when it ends.
    pub(crate) async fn start(connect: Box<ConnectFn>) -> Result<(Arc<Live>, Arc<Generation>)> {
        let client = connect().await.map_err(|err| Error::zk("connect", "/", err))?;
        let first = Generation::first(client);
        let live = Arc::new(Live {
            connect,
            // Quick first retries (an expiry from outside: the server is there), at most 1 s apart (an outage;
            // each attempt itself keeps trying the servers for up to the session timeout).
            backoff: RetryPolicy::default()
                .with_initial_backoff(Duration::from_millis(50))
                .with_max_backoff(Duration::from_secs(1)),
            generation: watch::Sender::new(0),
            events: broadcast::Sender::new(EVENTS_CAPACITY),
            closed: CancellationToken::new(),
            dropped: CancellationToken::new(),
        });
        tokio::spawn(run(
            Arc::downgrade(&live),
            Arc::clone(&first),
            live.dropped.clone(),
        ));
        Ok((live, first))
    }

    pub(crate) fn events(&self) -> broadcast::Receiver<SessionEvent> {
        self.events.subscribe()
    }

    fn emit(&self, event: SessionEvent) {
        tracing::info!(?event, "ZooKeeper session state");
        // No receiver is no error.
        let _ = self.events.send(event);
    }

    pub(crate) fn close(&self) {
        if !self.closed.is_cancelled() {
            self.closed.cancel();
            self.emit(SessionEvent::Closed);
        }
    }

    /// Waits until the newest generation of the chain starting at `head` is a session not known to have ended,
    /// and returns it; [`Error::Closed`] once the session has been closed.
    pub(crate) async fn usable(&self, head: &Arc<Generation>) -> Result<Arc<Generation>> {
        let mut generation = self.generation.subscribe();
        loop {
            if self.closed.is_cancelled() {
                return Err(Error::Closed);
            }
            let newest = Generation::newest(head);
            if idioms::session_ended(newest.client.state()).is_none() {
                return Ok(Arc::clone(newest));
            }
            tokio::select! {
                changed = generation.changed() => {
                    if changed.is_err() {
                        return Err(Error::Closed);
                    }
                }
                () = self.closed.cancelled() => return Err(Error::Closed),
            }
        }
    }
}

/// Hands `event` to the receivers; `false` once the session is closed or gone (the task then ends).
fn emit(live: &Weak<Live>, event: SessionEvent) -> bool {
    match live.upgrade() {
        Some(live) if !live.closed.is_cancelled() => {
            live.emit(event);
            true
        }
        _ => false,
    }
}

/// The task: reports the state of the current session and, when it ends, makes the next one.
async fn run(live: Weak<Live>, mut current: Arc<Generation>, dropped: CancellationToken) {
    let mut states = current.client.state_watcher();
    // A session may have ended before we watched it.
    let mut state = states.peek_state();
    loop {
        if idioms::session_ended(state).is_some() {
            if !emit(&live, SessionEvent::Lost) {
                return;
            }
            tracing::warn!(session = %current.client.session_id(), %state, "ZooKeeper session ended; making a new one");
            let Some(next) = reconnect(&live, &current, &dropped).await else {
                return;
            };
            current = next;
            states = current.client.state_watcher();
            state = states.peek_state();
            continue;
        }
        state = tokio::select! {
            state = states.changed() => state,
            () = dropped.cancelled() => return,
        };
        let event = match state {
            SessionState::Disconnected => SessionEvent::Suspended,
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => SessionEvent::Reconnected,
            _ => continue,
        };
        if !emit(&live, event) {
            return;
        }
    }
}

/// Connects new sessions, with jittered backoff, until one is made, or the session is closed or gone. Holds the
/// session's `Live` only between awaits, so that dropping every `Session` ends this too.
async fn reconnect(
    live: &Weak<Live>,
    current: &Arc<Generation>,
    dropped: &CancellationToken,
) -> Option<Arc<Generation>> {
    let mut attempt = 0;
    loop {
        let (connecting, closed) = {
            let live = live.upgrade()?;
            ((live.connect)(), live.closed.clone())
        };
        let client = tokio::select! {
            client = connecting => client,
            () = closed.cancelled() => return None,
            () = dropped.cancelled() => return None,
        };
        let live = live.upgrade()?;
        if live.closed.is_cancelled() {
            return None;
        }
        match client {
            Ok(client) => {
                let session_id = client.session_id().0;
                let next = Arc::new(Generation {
                    client,
                    number: current.number + 1,
                    next: OnceLock::new(),
                });
                current
                    .next
                    .set(Arc::clone(&next))
                    .expect("only this task appends to the chain");
                live.generation.send_replace(next.number);
                live.emit(SessionEvent::NewSession { session_id });
                return Some(next);
            }
            Err(err) => {
                attempt += 1;
                let pause = live.backoff.backoff(attempt);
                drop(live);
                tracing::warn!(%err, attempt, ?pause, "making a new ZooKeeper session failed; trying again");
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = closed.cancelled() => return None,
                    () = dropped.cancelled() => return None,
                }
            }
        }
    }
}
