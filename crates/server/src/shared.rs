//! What every task of a running server shares.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::ops::session::SessionLimits;
use crate::state::{Durable, State};

/// Shared by the accept loop, the connections and the background tasks.
pub struct Shared {
    /// The state (see [`crate::state`] for why a std mutex).
    pub state: Mutex<State>,
    /// Configuration.
    pub config: ServerConfig,
    /// Handshake limits derived from the configuration.
    pub limits: SessionLimits,
    /// Durable zxid (written by storage callbacks) and the outboxes waiting for it.
    pub durable: Arc<Durable>,
    /// Open connections per client IP (maxClientCnxns).
    pub per_ip: Mutex<HashMap<IpAddr, usize>>,
    /// Cancelled at shutdown. Client connections' tokens descend from it through [`Durable::serving`], which
    /// a failed log cancels as well.
    pub shutdown: CancellationToken,
    /// Server start time (for `srvr`/`mntr` uptime).
    pub started: std::time::Instant,
    /// Reply latencies (for `srvr`, `stat`, `mntr` and the metrics endpoint).
    pub latency: Arc<crate::latency::Latency>,
    /// The bound on each connection's unsent notifications, and the count of connections closed for it.
    pub notification_limit: crate::outbox::NotificationLimit,
}

impl Shared {
    /// Locks the state. A poisoned lock means a handler panicked mid-update; the state may be torn, but
    /// refusing all further service would be worse for a dev server, so we log and continue.
    pub fn lock(&self) -> StateGuard<'_> {
        let guard = self.state.lock().unwrap_or_else(|poisoned| {
            tracing::error!("state lock poisoned by a panic; continuing");
            poisoned.into_inner()
        });
        StateGuard {
            guard: Some(guard),
            durable: &self.durable,
        }
    }
}

/// The locked state. Dropping it releases the lock first and then writes out what was queued under it (to
/// every outbox that got frames), on the current thread: the task that made a frame sendable sends it.
pub struct StateGuard<'a> {
    guard: Option<MutexGuard<'a, State>>,
    durable: &'a Durable,
}

impl Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.guard.as_ref().expect("held until drop")
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.guard.as_mut().expect("held until drop")
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        let dirty = std::mem::take(&mut guard.dirty);
        // Still under the lock: the next reply queued for one of these marks it again.
        for outbox in &dirty {
            outbox.marked.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        drop(guard);
        for outbox in dirty {
            outbox.flush(self.durable);
        }
    }
}

/// Decrements the per-IP connection count when a connection ends.
pub struct IpSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl IpSlot {
    /// Takes a slot for `ip`, or `None` when the IP is at its limit.
    pub fn acquire(shared: &Arc<Shared>, ip: IpAddr) -> Option<IpSlot> {
        let max = shared.config.max_client_cnxns;
        let mut map = shared.per_ip.lock().unwrap_or_else(|p| p.into_inner());
        let count = map.entry(ip).or_default();
        if max > 0 && *count >= max {
            return None;
        }
        *count += 1;
        Some(IpSlot {
            shared: shared.clone(),
            ip,
        })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut map = self.shared.per_ip.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = map.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.ip);
            }
        }
    }
}
