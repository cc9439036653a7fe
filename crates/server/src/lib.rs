//! Embedded single-node ZooKeeper-wire-compatible server.
//!
//! Any ZooKeeper client (the Java client and zkCli, Curator, kazoo, the Rust `zookeeper-client`) can use
//! it: the bytes it sends match Apache ZooKeeper 3.8 wherever a client can see them, checked request by
//! request against a real 3.8.0 server (replies, error codes, stats, zxids, notifications and multi
//! results are byte-identical; only session ids, times and the order of children differ).
//!
//! ```no_run
//! # async fn demo() -> Result<(), zklock_server::Error> {
//! use zklock_server::{Server, ServerConfig};
//! let server = Server::start(ServerConfig::default()).await?; // 127.0.0.1:<free port>, temp data dir
//! let connect = server.connect_string(); // "127.0.0.1:PORT" for any ZooKeeper client
//! # let _ = connect;
//! server.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! # Architecture
//!
//! - `connection.rs`: one task per connection reads frames and handles every complete one under one
//!   acquisition of the state lock. `stream.rs`: the socket it reads — a client's TCP socket, or for a TLS client
//!   (`tls.rs`, rustls, on the secure client port) one end of a Unix socket pair whose other end a bridge task
//!   copies to and from the TLS stream, so both kinds of connection share every line of the code below.
//! - `outbox.rs`: a connection's outgoing queue. Each frame waits until the log is durable up to the zxid it
//!   depends on and is then written (non-blocking `writev`) by whichever thread made it sendable: the
//!   connection's own task for replies that are durable already (most reads), the task that queued a
//!   notification, or the storage writer thread right after the fsync that covers it (group commit: one
//!   fsync, then every reply it made durable). No task hand-off or runtime wake-up per reply; only a full
//!   socket hands the outbox back to its connection task.
//! - `state.rs`: tree, sessions, watches and connections behind one `std::sync::Mutex` (nothing awaits
//!   while it is held). The lock orders everything: zxids, log appends, and every notification a write
//!   causes is queued before that write's reply.
//! - `ops/`: one function per request, grouped by concern (`read`, `write`, `multi`, `watches`,
//!   `session`); `ops/prep.rs` validates writes in ZooKeeper's check order and turns them into `Txn`s.
//! - `tree.rs` (and `tree/`), `watch.rs`, `session.rs`, `acl.rs`, `path.rs`: the data tree, watch tables, session
//!   table, ACL/digest rules and path validation. `txn.rs` + `persist.rs`: what goes to `zklock-storage` and how a
//!   start recovers (newest snapshot + replay of later txns through the same apply code).
//! - `fourlw.rs`: four-letter words (`ruok srvr stat mntr cons envi wchs dump conf isro ...`).
//! - `metrics.rs`: the figures `mntr` reports ([`Figures`]), read in one place, and the Prometheus endpoint that
//!   serves the same figures ([`Server::serve_metrics`]).
//!
//! # Implemented
//!
//! Every client request of ZooKeeper 3.8: create/create2/createContainer (createTTL answers like a
//! ZooKeeper without extended types: Unimplemented), delete, exists, getData, setData, getACL, setACL,
//! getChildren(2), sync, check, multi, multiRead, auth (digest), SASL (DIGEST-MD5), setWatches(2), addWatch,
//! checkWatches/removeWatches, getEphemerals, getAllChildrenNumber, whoAmI, ping, closeSession. Sessions
//! (timeout negotiation, tick-bucketed expiry, reconnect and move, expired reply), one-shot, persistent and
//! persistent-recursive watches, container sweep, digest ACLs with an optional super digest, SASL DIGEST-MD5 with the
//! users of a JAAS `Server` section ([`ServerConfig::sasl`]: `sasl:<user>` ids and ACLs, a SASL super user, and
//! authentication required with [`ServerConfig::enforce_auth_schemes`], ZooKeeper's `sessionRequireClientSASLAuth`
//! / `enforce.auth.*`; `sasl/`, `ops/sasl.rs`), TLS on a secure
//! client port beside the plain one ([`TlsConfig`]: PEM or PKCS12 stores, `ssl.clientAuth`, client certificates
//! as `x509` ids, an x509 super user), zoo.cfg keys it does not apply reported at start ([`IgnoredKey`]), the built-in
//! `/zookeeper` nodes, limits (frame size, connections per IP, outstanding requests and unsent bytes per connection,
//! unsent notification bytes per connection, the deadline for a connect request and, once connected, for each
//! request: docs/operations.md, "Exposure and limits"), four-letter words as ZooKeeper 3.5+ allows them by default
//! (`srvr`, plus `ruok` and `isro`; the others only when listed), a data directory locked against a second server
//! and private files (0700 directories, 0600 files), and
//! durability: every reply after the fsync of its txn, snapshots every `snapCount` txns (100,000) or
//! `snapSizeLimitInKb` logged bytes (4 GiB; log files roll at that size too, so pruning bounds the disk use) and at shutdown,
//! sessions and zxid surviving restarts.
//!
//! # When the log cannot be written (a full disk)
//!
//! A data directory without room for one preallocation step of the log is refused at start
//! ([`StorageError::NoRoom`], with the numbers). If a write or fsync of the log fails later (`ENOSPC`, `EIO`),
//! the server stops serving at once, because it can no longer make anything durable and a server that looks
//! healthy but cannot write is one clients never fail over from: nothing more is acknowledged (the failed
//! batch's replies are dropped), every client connection is closed, new sessions are refused (the connection
//! is closed, as ZooKeeper does while not running), `ruok` gets no answer, and `srvr`, `stat`, `mntr`, `cons`,
//! `dump`, `wchs`, `wchc`, `wchp` answer ZooKeeper's "This ZooKeeper instance is not currently serving
//! requests" (`isro`: "null"). No snapshot is written from then on (the tree may hold txns that never became
//! durable). It does not recover by itself — after a failed fsync the state of the file is unknown — so
//! [`Server::log_failure`] tells the owner, who shuts the server down (`zklock serve` exits 1). Restarted on the
//! same directory once there is room, it has every acknowledged write.
//!
//! ZooKeeper quirks reproduced on purpose (a client can see them): stats report
//! `cversion = 2 × child creates − numChildren`, so deletes show up in it, while sequence suffixes use the
//! create counter; container and TTL markers are reported as `ephemeralOwner` 0; inside a multi a create's
//! opcode is derived from its flags (plain creates answer with the path only); notifications carry zxid
//! −1, auth and SASL replies zxid 0; a rejected multiRead answers MarshallingError *with* an empty result
//! list.
//!
//! # Not implemented (and why)
//!
//! - Replication, observers, reconfig (answered `ReconfigDisabled`): a single node never pretends to be an
//!   ensemble; use real ZooKeeper for that.
//! - SASL GSSAPI (Kerberos) and custom authentication providers: real Kerberos deployments run real ZooKeeper. Without
//!   a JAAS file, SASL requests are answered like a ZooKeeper without SASL configured (success, no identity).
//! - ZooKeeper 3.8.0's acceptance of a SASL user name its JAAS section does not list, given the password of the user
//!   its shared callback handler looked up last: refused here (`tests/compat/sasl.rs` pins both behaviours).
//! - Of TLS: JKS and BCFKS stores, encrypted PEM keys, cipher suite lists, revocation checks, port unification
//!   (`client.portUnification`); X.509 v1 certificates are refused (rustls/webpki), which Java accepts.
//! - TTL nodes and quotas: off by default in ZooKeeper 3.8 too (`extendedTypesEnabled`, quota enforcement).
//! - The admin HTTP server and JMX (the figures of `mntr` are served to Prometheus by
//!   [`Server::serve_metrics`]); `mntr`'s file descriptor counts are reported as 0.
#![forbid(unsafe_code)]

mod acl;
mod config;
mod connection;
mod error;
#[cfg(feature = "fault-injection")]
mod fault_injection;
mod fourlw;
mod latency;
mod metrics;
mod node_map;
mod ops;
mod outbox;
mod path;
mod persist;
mod sasl;
mod server;
mod session;
mod shared;
mod state;
mod stream;
mod tls;
mod tree;
mod txn;
mod watch;

pub use acl::MOST_IDS;
pub use config::{
    ClientAuth, ConfigError, IgnoredKey, JaasError, SaslConfig, ServerConfig, Store, StoreKind, TlsConfig,
    TlsProtocol, DEFAULT_FOUR_LETTER_WORDS, DEFAULT_SESSIONLESS_CNXN_TIMEOUT,
};
pub use error::Error;
pub use latency::LatencyFigures;
pub use metrics::Figures;
pub use sasl::DEFAULT_SECTION as JAAS_SERVER_SECTION;
pub use tls::TlsError;
pub use zklock_storage::{StorageError, LOCK_FILE};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::task::JoinHandle;

use crate::shared::Shared;
use crate::state::Durability;

/// A running server. Dropping it without [`Server::shutdown`] stops accepting but does not wait.
pub struct Server {
    local_addr: SocketAddr,
    /// The secure client port's address, when TLS is configured.
    secure_addr: Option<SocketAddr>,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    /// Where the transaction log lives (for error messages).
    log_dir: PathBuf,
    /// The temporary data directory, when the config had none (removed when the server goes).
    temp_dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Recovers the data directory, binds `config.listen` and starts serving; the socket is bound and
    /// accepting when this returns.
    ///
    /// # Errors
    /// Bind failures, an unusable data directory, a log directory without room for one preallocation step
    /// of the log ([`StorageError::NoRoom`], inside [`Error::Storage`]), and storage corruption (see
    /// `zklock-storage` for the torn-tail policy: a torn last record is a clean end of log, damage elsewhere
    /// refuses to start).
    pub async fn start(mut config: ServerConfig) -> Result<Server, Error> {
        for ignored in &config.ignored {
            tracing::warn!("{ignored}");
        }
        // ZooKeeper's AuthenticationHelper refuses to start on a scheme without a provider.
        if let Some(scheme) = config
            .enforce_auth_schemes
            .iter()
            .find(|scheme| !config.known_auth_scheme(scheme))
        {
            return Err(Error::UnknownAuthScheme(scheme.clone()));
        }
        // The stores are read before anything else: a TLS mistake must not leave a half-started server.
        let acceptor = match &config.tls {
            Some(tls) => Some(tls::Acceptor::new(tls)?),
            None if !config.plain_client_port => return Err(Error::NoClientPort),
            None => None,
        };
        let (data_dir, temp_dir) = match &config.data_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                // Owner only, as a data directory should be (its log holds ACL-protected data and digest hashes).
                let temp = tempfile::Builder::new()
                    .prefix("zklock-server-")
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir()
                    .map_err(Error::DataDir)?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let mut options = zklock_storage::StorageOptions::new(data_dir);
        options.log_dir = config.data_log_dir.clone();
        // Old log files can only be pruned whole, after a snapshot: a log file no larger than what a snapshot
        // is taken after keeps the disk use bounded by about (snapshots kept + 1) × `snap_size_limit`.
        options.log_roll_bytes = options
            .log_roll_bytes
            .min(config.snap_size_limit.max(options.preallocate_bytes));
        let log_dir = options.log_dir().to_path_buf();
        let (storage, recovered) =
            tokio::task::spawn_blocking(move || zklock_storage::Storage::open(options)).await??;

        let listener = if config.plain_client_port {
            let listener = tokio::net::TcpListener::bind(config.listen)
                .await
                .map_err(Error::Bind)?;
            config.listen = listener.local_addr().map_err(Error::Bind)?;
            Some(listener)
        } else {
            None
        };
        let secure = match (&acceptor, config.tls.as_mut()) {
            (Some(acceptor), Some(tls)) => {
                let listener = tokio::net::TcpListener::bind(tls.listen)
                    .await
                    .map_err(|e| Error::SecureBind(tls.listen, e))?;
                // With the real port, for `conf` and the owner.
                tls.listen = listener
                    .local_addr()
                    .map_err(|e| Error::SecureBind(tls.listen, e))?;
                Some((listener, acceptor.clone()))
            }
            _ => None,
        };
        let secure_addr = config.tls.as_ref().map(|tls| tls.listen);
        let local_addr = if config.plain_client_port {
            config.listen
        } else {
            secure_addr.unwrap_or(config.listen)
        };
        // Session ids are seeded from the clock, so they stay unique across restarts; recovered sessions
        // move the counter past themselves as well.
        let sessions = session::Sessions::new(config.tick_time, session::initial_session_id(state::now_ms()));
        let shared = server::make_shared(config, tree::DataTree::new(), sessions, 0, Durability::Memory);
        {
            let mut st = shared.lock();
            persist::recover(&mut st, recovered)?;
            st.mark_durable();
            // Replies waiting for the log are written once per fsync, on the writer thread, right after it.
            let durable = shared.durable.clone();
            storage.on_batch(Box::new(move || durable.wake_waiters()));
            st.set_log(Durability::Storage(storage));
        }
        let mut tasks = vec![tokio::spawn(server::ticker(shared.clone()))];
        if let Some(listener) = listener {
            tasks.push(tokio::spawn(server::accept_loop(shared.clone(), listener, None)));
            tracing::info!(%local_addr, "zklock server listening");
        }
        if let Some((listener, acceptor)) = secure {
            tasks.push(tokio::spawn(server::accept_loop(
                shared.clone(),
                listener,
                Some(acceptor),
            )));
            tracing::info!(addr = ?secure_addr, "zklock server listening with TLS");
        }
        Ok(Server {
            local_addr,
            secure_addr,
            shared,
            tasks,
            log_dir,
            temp_dir,
        })
    }

    /// Completes once the server has stopped serving because its transaction log could not be written (a
    /// write or fsync failed: a full disk, an I/O error) and returns [`Error::LogWrite`], which names the log
    /// directory and the OS error. Never completes while the log works.
    ///
    /// From that moment nothing more is acknowledged, every client connection is closed, new sessions are
    /// refused and `ruok` gets no answer (details in the crate docs), so clients fail over to another server.
    /// The server does not recover by itself (after a failed fsync the state of the file is unknown); the
    /// owner should call [`Server::shutdown`] (which then returns the storage error and writes no snapshot)
    /// and restart on the same directory once the disk has room: every acknowledged write is there.
    /// Cancel-safe; may be awaited any number of times.
    pub async fn log_failure(&self) -> Error {
        let error = self.shared.durable.failure().await;
        Error::LogWrite {
            dir: self.log_dir.clone(),
            error,
        }
    }

    /// Serves the figures `mntr` reports ([`Figures`]) in Prometheus text format at `http://ADDR/metrics`, from
    /// now until [`Server::shutdown`], each scrape reading them anew. Returns the address bound (with the real port
    /// when `addr` had port 0). Metric names are the `mntr` keys (`zk_znode_count`, …; see `metrics.rs`). Like
    /// `mntr`, it answers ZooKeeper's not-serving line (HTTP 503) once the log cannot be written.
    ///
    /// # Errors
    /// [`Error::MetricsBind`] when `addr` cannot be bound.
    pub async fn serve_metrics(&mut self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(Error::MetricsBind)?;
        let bound = listener.local_addr().map_err(Error::MetricsBind)?;
        self.tasks
            .push(tokio::spawn(metrics::serve(self.shared.clone(), listener)));
        tracing::info!(%bound, "serving metrics at http://{bound}/metrics");
        Ok(bound)
    }

    /// Test-only (`fault-injection` feature): from now on `getData` answers from a copy of each node refreshed
    /// only every fourth read of its path — stale reads, for the negative control of a linearizability checker.
    #[cfg(feature = "fault-injection")]
    pub fn answer_reads_from_a_stale_copy(&self) {
        self.shared.lock().stale_reads = Some(Default::default());
    }

    /// The figures `mntr` reports, now; `None` once the server stopped serving because its log cannot be written
    /// (when `mntr` answers the not-serving line).
    pub fn figures(&self) -> Option<Figures> {
        if self.shared.durable.failed() {
            return None;
        }
        let st = self.shared.lock();
        Some(metrics::Figures::read(&self.shared, &st))
    }

    /// Writes a backup while serving: a new data directory `dir` (it must not exist, or be empty) with one snapshot
    /// of the whole state as it is now, at the last zxid applied, taken under the state lock like every snapshot —
    /// so it holds every write acknowledged before the call (and may hold writes whose fsync was in flight, whose
    /// clients were not told yet). A server started on `dir` restores that state: its tree and its sessions (which
    /// then expire unless their clients come back). Returns the backup's zxid.
    ///
    /// # Errors
    /// [`Error::Storage`] when `dir` is not empty or cannot be written; [`Error::DataDir`] when the server stopped
    /// serving (its state may hold writes that never became durable).
    pub async fn backup(&self, dir: &std::path::Path) -> Result<i64, Error> {
        if self.shared.durable.failed() {
            return Err(Error::DataDir(std::io::Error::other(
                "the server stopped serving (its log cannot be written): no backup of a state that may not be durable",
            )));
        }
        let (zxid, blob) = {
            let st = self.shared.lock();
            (st.last_zxid, crate::persist::snapshot_blob(&st))
        };
        let dir = dir.to_owned();
        tokio::task::spawn_blocking(move || zklock_storage::Storage::write_backup(&dir, zxid, &blob))
            .await
            .map_err(|e| Error::DataDir(std::io::Error::other(e)))??;
        tracing::info!(zxid = format!("0x{zxid:x}"), "backup written");
        Ok(zxid)
    }

    /// The temporary data directory the server made because its configuration named none (removed when the
    /// server goes); `None` when it keeps its data where it was told.
    pub fn temporary_data_dir(&self) -> Option<&std::path::Path> {
        self.temp_dir.as_ref().map(tempfile::TempDir::path)
    }

    /// Expires session `id` now, as its timeout passing would: its ephemeral nodes are deleted (their watches
    /// fire) and its connection is closed; the client learns `SessionExpired` when it reconnects. For testing a
    /// service against the embedded server (docs/library.md, "Testing your service"). `false` when there is no
    /// such session.
    pub fn expire_session(&self, id: i64) -> bool {
        let mut st = self.shared.lock();
        let Some(session) = st.sessions.get(id) else {
            return false;
        };
        let conn = session.conn;
        tracing::info!(session = format!("0x{id:x}"), "session expired on request");
        st.commit(txn::Txn::CloseSession { id });
        if let Some(conn) = conn {
            st.close_conn(conn);
        }
        true
    }

    /// Closes the connection of session `id` without ending the session, as a network cut would: the client
    /// reconnects and resumes it within its timeout. For testing (see [`expire_session`](Server::expire_session)).
    /// `false` when the session has no connection.
    pub fn disconnect_session(&self, id: i64) -> bool {
        let mut st = self.shared.lock();
        let Some(conn) = st.sessions.get(id).and_then(|s| s.conn) else {
            return false;
        };
        tracing::info!(session = format!("0x{id:x}"), "connection closed on request");
        st.close_conn(conn);
        true
    }

    /// The address the server listens on for plaintext clients (with the real port when `listen` had port 0);
    /// for a TLS-only server (`plain_client_port: false`), the secure client port's.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The secure client port's address (with the real port), when TLS is configured.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// A ZooKeeper connect string for this server, `"127.0.0.1:PORT"` with the address of
    /// [`Server::local_addr`] (a wildcard listen address is reported as the matching loopback address, which
    /// clients can always reach).
    pub fn connect_string(&self) -> String {
        reachable(self.local_addr).to_string()
    }

    /// The connect string of the secure client port (`"127.0.0.1:PORT"`, as [`Server::connect_string`]), for a
    /// TLS client; `None` without TLS.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_addr.map(|addr| reachable(addr).to_string())
    }

    /// Stops accepting, closes every connection after flushing its queued replies, writes a final
    /// snapshot and closes the log. Sessions are not closed: they survive into the next start.
    ///
    /// After a log failure ([`Server::log_failure`]) no snapshot is written and the storage error is returned.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.shared.shutdown.cancel();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        let failed = self.shared.durable.failed();
        let (storage, snapshot) = {
            let mut st = self.shared.lock();
            // After a log failure the tree may hold txns that never became durable: no snapshot of it.
            let snapshot =
                (st.since_snapshot > 0 && !failed).then(|| (st.last_zxid, persist::snapshot_blob(&st)));
            (st.take_storage(), snapshot)
        };
        if let Some(storage) = storage {
            tokio::task::spawn_blocking(move || {
                if let Some((zxid, blob)) = snapshot {
                    storage.save_snapshot(zxid, &blob)?;
                }
                storage.close()
            })
            .await??;
        }
        if let Some(dir) = self.temp_dir.take() {
            dir.close().map_err(Error::DataDir)?;
        }
        Ok(())
    }
}

/// `addr`, with a wildcard IP replaced by the loopback address of its family.
fn reachable(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    addr
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}
