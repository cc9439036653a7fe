//! The server state behind one `std::sync::Mutex`: tree, sessions, watches, connections and the zxid.
//!
//! A std mutex, not a tokio one, because nothing awaits while it is held: every request is validated,
//! applied, logged (queued to the storage writer thread, which does not block) and its notifications and
//! reply queued to the connections' outboxes, all in one critical section. That single lock is what orders
//! everything: zxids are assigned in lock order, log appends happen in zxid order, and a notification
//! queued by a write always precedes that write's reply in every connection's channel.
//!
//! Durability: every queued message carries the zxid it depends on (`after`); it is written only once the
//! log is durable up to that zxid (see [`crate::outbox`]). Outboxes that got frames are remembered in
//! `dirty` and flushed by [`crate::shared::StateGuard`] once the lock is released, so no socket is written
//! while the lock is held. Reads depend only on what they observed (see [`State::reply_zxid`]), so they can
//! never reveal state that a crash could still lose.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;
use zklock_codec::frame::{begin_frame, end_frame};
use zklock_codec::{xid, Encode, EventType, KeeperState, ReplyHeader, Stat, WatcherEvent};

use crate::acl::Identities;
pub use crate::outbox::Durable;
use crate::outbox::Outbox;
use crate::session::Sessions;
use crate::tree::{DataTree, Event};
use crate::txn::{LoggedTxn, Txn};
use crate::watch::{ConnId, WatchManager};

/// A connection as the state sees it.
#[derive(Debug)]
pub struct Conn {
    /// Outgoing queue, counters and the close signal.
    pub outbox: Arc<Outbox>,
    /// Attached session, 0 before the handshake completes.
    pub session: i64,
    /// Remote address.
    pub peer: SocketAddr,
    /// Proven identities (`ip:<peer>` first).
    pub auth: Identities,
    /// Last operation's name (for `cons`).
    pub last_op: &'static str,
    /// The highest zxid put in a reply header so far: headers never go backwards on a connection.
    pub last_reply_zxid: i64,
    /// The connection's SASL exchange, once it has sent a SASL request (`ops/sasl.rs`).
    pub sasl: Option<crate::sasl::digest_md5::DigestMd5>,
}

/// Where txns go to become durable.
pub enum Durability {
    /// In-memory only: a txn counts as durable as soon as it is applied.
    Memory,
    /// The durable log; replies wait for its fsync callbacks.
    Storage(zklock_storage::Storage),
}

/// Counters for the four-letter words.
#[derive(Debug, Default, Clone)]
pub struct Counters {
    /// Requests received.
    pub received: u64,
    /// Replies and notifications sent (queued).
    pub sent: u64,
}

/// Everything behind the lock.
pub struct State {
    /// The data tree.
    pub tree: DataTree,
    /// Sessions.
    pub sessions: Sessions,
    /// Watches.
    pub watches: WatchManager,
    /// Open connections.
    pub conns: HashMap<ConnId, Conn>,
    /// Last applied (and queued-to-log) zxid.
    pub last_zxid: i64,
    /// Counters.
    pub counters: Counters,
    next_conn: ConnId,
    log: Durability,
    durable: Arc<Durable>,
    /// Txns applied since the last snapshot.
    pub since_snapshot: u64,
    /// Bytes logged since the last snapshot (records as the log stores them).
    pub since_snapshot_bytes: u64,
    /// `super:hash` digest that bypasses ACLs, if configured.
    pub super_digest: Option<String>,
    /// The optional ACL schemes: `x509` with a secure client port, `sasl` with SASL configured.
    pub schemes: crate::acl::Schemes,
    /// SASL DIGEST-MD5 users, when SASL is configured (then ACLs may name `sasl` ids).
    pub sasl: Option<Arc<crate::sasl::SaslConfig>>,
    /// The schemes one of which a connection must have before its requests are served (empty: none).
    pub enforce_auth_schemes: Vec<String>,
    /// TTL nodes may be created (ZooKeeper's `zookeeper.extendedTypesEnabled`).
    pub extended_types: bool,
    /// Outboxes that got frames under the lock, flushed once it is released.
    pub dirty: Vec<Arc<Outbox>>,
    /// Test-only: `getData` answers from stale copies (`fault-injection` feature).
    #[cfg(feature = "fault-injection")]
    pub stale_reads: Option<crate::fault_injection::StaleReads>,
}

/// Milliseconds since the Unix epoch (txn time).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Encodes `header` + an already encoded body as one frame.
pub fn frame(header: &ReplyHeader, body: &[u8]) -> Vec<u8> {
    let mut w = Vec::with_capacity(4 + 16 + body.len());
    let start = begin_frame(&mut w);
    header.encode(&mut w);
    w.extend_from_slice(body);
    end_frame(&mut w, start);
    w
}

impl State {
    /// A state with the given tree, sessions and zxid (fresh or recovered).
    pub fn new(
        tree: DataTree,
        sessions: Sessions,
        last_zxid: i64,
        log: Durability,
        durable: Arc<Durable>,
    ) -> Self {
        State {
            tree,
            sessions,
            watches: WatchManager::default(),
            conns: HashMap::new(),
            last_zxid,
            counters: Counters::default(),
            next_conn: 1,
            log,
            durable,
            since_snapshot: 0,
            since_snapshot_bytes: 0,
            super_digest: None,
            schemes: Default::default(),
            sasl: None,
            enforce_auth_schemes: Vec::new(),
            extended_types: false,
            dirty: Vec::new(),
            #[cfg(feature = "fault-injection")]
            stale_reads: None,
        }
    }

    /// The durable log handle, if any.
    pub fn storage(&self) -> Option<&zklock_storage::Storage> {
        match &self.log {
            Durability::Storage(s) => Some(s),
            Durability::Memory => None,
        }
    }

    /// Marks everything applied so far as durable (after recovery: it came from disk).
    pub fn mark_durable(&self) {
        self.durable.advance(self.last_zxid);
    }

    /// Switches durability (after recovery, from replay mode to the live log).
    pub fn set_log(&mut self, log: Durability) {
        self.log = log;
    }

    /// Takes the storage out (at shutdown).
    pub fn take_storage(&mut self) -> Option<zklock_storage::Storage> {
        match std::mem::replace(&mut self.log, Durability::Memory) {
            Durability::Storage(s) => Some(s),
            Durability::Memory => None,
        }
    }

    /// Registers a new connection and returns its id.
    pub fn add_conn(&mut self, conn: Conn) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(id, conn);
        id
    }

    /// Forgets a closed connection: its watches go, its session stays (until timeout).
    pub fn remove_conn(&mut self, id: ConnId) {
        if let Some(conn) = self.conns.remove(&id) {
            self.watches.remove_conn(id);
            if let Some(s) = self.sessions.get_mut(conn.session) {
                if s.conn == Some(id) {
                    s.conn = None;
                }
            }
        }
    }

    /// Queues a frame to a connection, to be sent once everything committed so far is durable. Replies
    /// count against its outstanding bound.
    pub fn send(&mut self, conn: ConnId, bytes: Vec<u8>, reply: bool) {
        self.send_after(conn, bytes, reply, self.last_zxid);
    }

    /// The zxid a reply waits for and carries in its header. A write (or any reply that depends on
    /// everything, `observed == None`) gets the last zxid. A read that revealed nothing newer than
    /// `observed` gets `max(observed, durable zxid, previous header on this connection)`: never a zxid
    /// that is not yet durable unless the read saw it (a client that saw a zxid the log could still lose
    /// would be refused after a crash, as ZooKeeper refuses a client ahead of it), never lower than
    /// before on the same connection, and no wait for unrelated writes still in their fsync.
    pub fn reply_zxid(&mut self, conn: ConnId, observed: Option<i64>) -> i64 {
        let durable = self.durable.zxid();
        let Some(c) = self.conns.get_mut(&conn) else {
            return self.last_zxid;
        };
        let zxid = match observed {
            None => self.last_zxid,
            Some(seen) => seen.max(durable).max(c.last_reply_zxid).min(self.last_zxid),
        };
        c.last_reply_zxid = c.last_reply_zxid.max(zxid);
        zxid
    }

    /// Like [`State::send`], but waiting only until the log is durable up to `after`.
    pub fn send_after(&mut self, conn: ConnId, bytes: Vec<u8>, reply: bool, after: i64) {
        if let Some(c) = self.conns.get(&conn) {
            self.counters.sent += 1;
            tracing::trace!(
                target: "zklock_server::timeline",
                session = c.session,
                peer = %c.peer,
                xid = crate::outbox::frame_xid(&bytes),
                after,
                reply,
                "queued"
            );
            c.outbox.push(after, bytes, reply);
            Self::mark_dirty(&mut self.dirty, &c.outbox);
        }
    }

    /// Asks a connection to close after everything queued so far.
    pub fn close_conn(&mut self, conn: ConnId) {
        let after = self.last_zxid;
        if let Some(c) = self.conns.get(&conn) {
            c.outbox.push_close(after);
            Self::mark_dirty(&mut self.dirty, &c.outbox);
        }
    }

    fn mark_dirty(dirty: &mut Vec<Arc<Outbox>>, outbox: &Arc<Outbox>) {
        // Under the state lock, like the clearing in `StateGuard::drop`: relaxed is enough.
        if !outbox.marked.swap(true, std::sync::atomic::Ordering::Relaxed) {
            dirty.push(outbox.clone());
        }
    }

    /// Assigns the next zxid to `txn`, applies it, queues it to the log and sends its notifications.
    /// Returns the zxid and, per leaf txn, the affected node's stat after it (for replies).
    pub fn commit(&mut self, txn: Txn) -> (i64, Vec<Option<Stat>>) {
        let zxid = self.last_zxid + 1;
        let time = now_ms();
        let mut events = Vec::new();
        let mut stats = Vec::new();
        self.apply(zxid, time, &txn, &mut events, &mut stats);
        self.last_zxid = zxid;
        self.since_snapshot += 1;
        match &self.log {
            Durability::Memory => self.durable.advance(zxid),
            Durability::Storage(storage) => {
                let durable = self.durable.clone();
                let payload = LoggedTxn { time, txn }.to_bytes();
                // A log record is its payload plus 28 bytes of framing (zklock-storage's format).
                self.since_snapshot_bytes += payload.len() as u64 + 28;
                storage.append(
                    zxid,
                    payload,
                    // Only recorded here: the storage's batch hook flushes the waiting outboxes once per
                        // fsync (see `crate::Server::start`).
                    Box::new(move |res| match res {
                        Ok(()) => {
                            tracing::trace!(target: "zklock_server::timeline", zxid, "durable");
                            durable.mark(zxid)
                        }
                        Err(e) => {
                            if durable.fail(&e) {
                                tracing::error!(
                                    zxid,
                                    error = %e,
                                    "transaction log write failed; stopped serving: nothing more is acknowledged, \
                                     every connection is closed, new sessions are refused"
                                );
                            }
                        }
                    }),
                );
            }
        }
        self.notify(&events);
        (zxid, stats)
    }

    /// Applies a txn to tree and sessions (also used for log replay).
    pub fn apply(
        &mut self,
        zxid: i64,
        time: i64,
        txn: &Txn,
        events: &mut Vec<Event>,
        stats: &mut Vec<Option<Stat>>,
    ) {
        match txn {
            Txn::CreateSession {
                id,
                timeout_ms,
                passwd,
            } => {
                self.sessions.insert(*id, *timeout_ms, passwd.clone());
                stats.push(None);
            }
            Txn::CloseSession { id } => {
                for path in self.tree.ephemerals_of(*id) {
                    self.tree.delete(&path, zxid, events);
                }
                self.sessions.remove(*id);
                stats.push(None);
            }
            Txn::Create {
                path,
                data,
                acl,
                owner,
                parent_cversion,
            } => {
                self.tree.create(
                    path,
                    data.clone(),
                    acl.clone(),
                    *owner,
                    *parent_cversion,
                    zxid,
                    time,
                    events,
                );
                stats.push(self.tree.get(path).map(|n| n.stat()));
            }
            Txn::Delete { path } => {
                self.tree.delete(path, zxid, events);
                stats.push(None);
            }
            Txn::SetData { path, data, version } => {
                self.tree
                    .set_data(path, data.clone(), *version, zxid, time, events);
                stats.push(self.tree.get(path).map(|n| n.stat()));
            }
            Txn::SetAcl { path, acl, aversion } => {
                self.tree.set_acl(path, acl.clone(), *aversion, zxid);
                stats.push(self.tree.get(path).map(|n| n.stat()));
            }
            Txn::Check { .. } | Txn::Error { .. } => stats.push(None),
            Txn::Multi(txns) => {
                for t in txns {
                    self.apply(zxid, time, t, events, stats);
                }
            }
        }
    }

    /// Sends watch notifications for `events` (header zxid −1, as ZooKeeper 3.8 does).
    fn notify(&mut self, events: &[Event]) {
        let mut out = Vec::new();
        let conns = &self.conns;
        self.watches
            .trigger(events, &self.tree, |c| conns.get(&c).map(|c| &*c.auth), &mut out);
        for (conn, ty, path) in out {
            let bytes = notification(ty, &path);
            self.send(conn, bytes, false);
        }
    }
}

/// One watch notification frame.
pub fn notification(ty: EventType, path: &str) -> Vec<u8> {
    let event = WatcherEvent {
        event_type: ty.into(),
        state: KeeperState::SyncConnected.into(),
        path: path.to_string(),
    };
    frame(
        &ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: 0,
        },
        &event.to_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(last_zxid: i64, durable_zxid: i64) -> State {
        let durable = Arc::new(Durable::new(durable_zxid, Default::default()));
        let sessions = Sessions::new(std::time::Duration::from_secs(2), 1 << 56);
        State::new(DataTree::new(), sessions, last_zxid, Durability::Memory, durable)
    }

    /// A connection whose outbox writes into a real loopback socket.
    async fn conn(st: &mut State) -> ConnId {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        std::mem::forget(client.unwrap()); // keep the peer open for the test's lifetime
        let stream = Arc::new(crate::stream::Stream::Tcp(accepted.unwrap().0));
        st.add_conn(Conn {
            outbox: Arc::new(Outbox::new(
                stream,
                tokio_util::sync::CancellationToken::new(),
                Default::default(),
                Default::default(),
                None,
            )),
            session: 0,
            peer: "127.0.0.1:1".parse().unwrap(),
            auth: Default::default(),
            last_op: "NA",
            last_reply_zxid: 0,
            sasl: None,
        })
    }

    #[tokio::test]
    async fn reads_wait_only_for_what_they_observed() {
        // zxids 6..=10 are applied but not yet durable.
        let mut st = state(10, 5);
        let (a, b) = (conn(&mut st).await, conn(&mut st).await);
        assert_eq!(
            st.reply_zxid(a, Some(3)),
            5,
            "an old node: the durable zxid, no wait"
        );
        assert_eq!(st.reply_zxid(a, Some(8)), 8, "a node changed at 8 waits for 8");
        assert_eq!(
            st.reply_zxid(a, Some(3)),
            8,
            "headers never go backwards on a connection"
        );
        assert_eq!(
            st.reply_zxid(b, Some(3)),
            5,
            "other connections are not held back"
        );
        assert_eq!(
            st.reply_zxid(b, None),
            10,
            "writes and other requests depend on everything"
        );
        st.durable.advance(10);
        assert_eq!(st.reply_zxid(a, Some(3)), 10);
    }
}
