//! The running server: accept loop, background ticks (session expiry, container sweep), shutdown.
//!
//! The container sweep is ZooKeeper's `ContainerManager`: every `container_check_interval`
//! (`znode.container.checkIntervalMs`, 60 s by default) each container node that has had a child (`cversion > 0`)
//! and has none now is deleted. A container created a moment ago and not yet used is left alone, so a client's
//! `mkdir` followed by its create does not race the sweep; a used one may go between a client's look and its
//! create, which then fails with `NoNode` (the client creates the directory again). The sweep runs under the state
//! lock, so the check and the delete are one step: a container that gained a child is never deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::connection;
use crate::ops::session::SessionLimits;
use crate::session::Sessions;
use crate::shared::{IpSlot, Shared};
use crate::state::{Durability, Durable, State};
use crate::tree::{ttl_of, DataTree};
use crate::txn::Txn;

/// Builds the shared state from recovered (or fresh) parts.
pub fn make_shared(
    config: ServerConfig,
    tree: DataTree,
    sessions: Sessions,
    last_zxid: i64,
    log: Durability,
) -> Arc<Shared> {
    let shutdown = CancellationToken::new();
    let durable = Arc::new(Durable::new(last_zxid, shutdown.child_token()));
    let config_notification_limit = config.max_pending_notification_bytes;
    let mut state = State::new(tree, sessions, last_zxid, log, durable.clone());
    state.super_digest = config.super_digest.clone();
    // ZooKeeper registers the x509 scheme when a secure client port is configured (`configureSSLAuth`): only then
    // may ACLs name x509 ids.
    state.schemes = crate::acl::Schemes {
        x509: config.tls.is_some(),
        sasl: config.sasl.is_some(),
    };
    state.sasl = config.sasl.clone().map(Arc::new);
    state.enforce_auth_schemes = config.enforce_auth_schemes.clone();
    state.extended_types = config.extended_types_enabled;
    let (min, max) = config.session_timeout_bounds();
    let ms = |d: Duration| i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    let limits = SessionLimits {
        min_ms: ms(min),
        max_ms: ms(max),
    };
    Arc::new(Shared {
        state: Mutex::new(state),
        config,
        limits,
        durable,
        per_ip: Mutex::new(HashMap::new()),
        shutdown,
        started: std::time::Instant::now(),
        latency: Arc::default(),
        notification_limit: crate::outbox::NotificationLimit {
            max_bytes: config_notification_limit,
            closed: Arc::default(),
        },
    })
}

/// Accepts connections until shutdown, then waits (bounded) for them to finish. With `tls`, each connection starts
/// with a TLS handshake (the secure client port).
pub async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, tls: Option<crate::tls::Acceptor>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let Some(slot) = IpSlot::acquire(&shared, peer.ip()) else {
                        tracing::warn!(%peer, limit = shared.config.max_client_cnxns, "too many connections from this IP; closing");
                        drop(socket);
                        continue;
                    };
                    match &tls {
                        None => {
                            let socket = crate::stream::Stream::Tcp(socket);
                            conns.spawn(connection::serve(shared.clone(), socket, peer, slot, Vec::new()));
                        }
                        Some(tls) => {
                            conns.spawn(crate::tls::serve(shared.clone(), socket, peer, slot, tls.clone()));
                        }
                    }
                }
                Err(e) => {
                    // E.g. EMFILE: back off briefly instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                        _ = shared.shutdown.cancelled() => break,
                    }
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = shared.shutdown.cancelled() => break,
        }
    }
    drop(listener);
    // Connections see the cancelled token, flush and close. A client that stops reading could hold its
    // writer forever, so the wait is bounded.
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        conns.abort_all();
    }
}

/// Every tick: expire sessions whose deadline passed and take a snapshot when due; every
/// `container_check_interval`: delete empty containers and, with extended types on, expired TTL nodes (a tick
/// shorter than `tickTime` when that interval is).
pub async fn ticker(shared: Arc<Shared>) {
    let sweep_every = shared.config.container_check_interval;
    let tick = shared
        .config
        .tick_time
        .min(sweep_every)
        .max(Duration::from_millis(1));
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_sweep = Instant::now() + sweep_every;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shared.shutdown.cancelled() => return,
        }
        let snapshot = on_tick(&shared, &mut next_sweep);
        if let Some((storage, zxid, blob)) = snapshot {
            let saved = tokio::task::spawn_blocking(move || storage.save_snapshot(zxid, &blob)).await;
            match saved {
                Ok(Ok(())) => tracing::info!(zxid = format!("{zxid:#x}"), "snapshot saved"),
                Ok(Err(e)) => tracing::warn!(error = %e, "snapshot failed; the log still has everything"),
                Err(e) => tracing::warn!(error = %e, "snapshot task failed"),
            }
        }
    }
}

/// One tick's work under the lock; returns a snapshot to write (outside the lock) when one is due.
fn on_tick(shared: &Shared, next_sweep: &mut Instant) -> Option<(zklock_storage::Storage, i64, Vec<u8>)> {
    if shared.durable.failed() {
        // Not serving: nothing can be logged any more, and the tree may hold txns that never became durable,
        // so it must not be snapshotted either.
        return None;
    }
    let mut st = shared.lock();
    for id in st.sessions.expired(Instant::now()) {
        let conn = st.sessions.get(id).and_then(|s| s.conn);
        tracing::info!(session = format!("0x{id:x}"), "session expired");
        st.commit(Txn::CloseSession { id });
        if let Some(conn) = conn {
            st.close_conn(conn);
        }
    }
    if Instant::now() >= *next_sweep {
        *next_sweep = Instant::now() + shared.config.container_check_interval;
        let empty: Vec<String> = st
            .tree
            .containers()
            .filter(|p| {
                st.tree
                    .get(p)
                    .is_some_and(|n| n.children.is_empty() && n.cversion > 0)
            })
            .cloned()
            .collect();
        for path in empty {
            st.commit(Txn::Delete { path });
        }
        // ZooKeeper's `ContainerManager` deletes TTL nodes in the same pass (only with extended types on, as its
        // `EphemeralType.get` sees TTL owners only then): those without children whose mtime is more than their
        // TTL ago.
        if shared.config.extended_types_enabled {
            let now = crate::state::now_ms();
            let expired: Vec<String> = st
                .tree
                .ttls()
                .filter(|p| {
                    st.tree.get(p).is_some_and(|n| {
                        n.children.is_empty()
                            && ttl_of(n.ephemeral_owner).is_some_and(|ttl| now.saturating_sub(n.mtime) > ttl)
                    })
                })
                .cloned()
                .collect();
            for path in expired {
                st.commit(Txn::Delete { path });
            }
        }
    }
    if st.since_snapshot < shared.config.snap_count && st.since_snapshot_bytes < shared.config.snap_size_limit
    {
        return None;
    }
    let storage = st.storage().cloned()?;
    // Serialized under the lock so the blob is exactly the state at `last_zxid`; written outside it.
    st.since_snapshot = 0;
    st.since_snapshot_bytes = 0;
    Some((storage, st.last_zxid, crate::persist::snapshot_blob(&st)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::CONTAINER_OWNER;
    use zklock_codec::Acl;

    fn create(path: &str, owner: i64, parent_cversion: i32) -> Txn {
        Txn::Create {
            path: path.into(),
            data: None,
            acl: Acl::open_unsafe(),
            owner,
            parent_cversion,
        }
    }

    #[tokio::test]
    async fn sweep_deletes_containers_that_had_children_and_are_empty() {
        let sessions = Sessions::new(Duration::from_secs(2), 1 << 56);
        let shared = make_shared(
            ServerConfig::default(),
            DataTree::new(),
            sessions,
            0,
            Durability::Memory,
        );
        {
            let mut st = shared.lock();
            st.commit(create("/used", CONTAINER_OWNER, 1));
            st.commit(create("/never-used", CONTAINER_OWNER, 2));
            st.commit(create("/used/child", 0, 1));
            st.commit(Txn::Delete {
                path: "/used/child".into(),
            });
        }
        let mut due = Instant::now();
        assert!(
            on_tick(&shared, &mut due).is_none(),
            "no snapshot without storage"
        );
        let st = shared.lock();
        assert!(st.tree.get("/used").is_none(), "emptied container is swept");
        assert!(
            st.tree.get("/never-used").is_some(),
            "a container that never had a child stays"
        );
    }
}
