//! Test support for the zklock workspace: real ZooKeeper 3.8 servers, on-demand session expiry and a
//! fault-injecting TCP proxy.
//!
//! * [`ZooKeeper`] — a standalone server or an ensemble of real ZooKeeper JVMs on 127.0.0.1 (Debian package
//!   `zookeeper`), with kill/restart of members, optionally a TLS client port ([`Builder::secure_client_port`],
//!   stores made with [`keytool`]); [`shared_standalone`] / [`shared_ensemble`] for one instance per
//!   test binary, and [`unique_path`] so tests sharing one never collide.
//! * [`expire_session`] — expire a client's session now, as ZooKeeper's own tests do.
//! * [`Proxy`] — cut connections, lose a reply, play dead, count requests and notifications.
//! * [`LinkProxy`] and [`PeerLinks`] — byte links that stop one way or both, or turn slow and lossy, while the
//!   processes on both ends run; an ensemble's members can reach each other only through them
//!   ([`Builder::peer_links`]).
//! * [`peers`] — find Java and kazoo, compile the Curator peer and run peers line by line, for interop tests and
//!   benchmarks.
//! * [`Tmpfs`] — a small real tmpfs (needs root) to fill up, for disk-full tests.
//!
//! Every server process is tied to the test process with `PR_SET_PDEATHSIG`, so none outlives it.
#![deny(unsafe_code)]

pub mod certs;
mod config;
mod embedded;
mod fourlw;
mod frame;
pub mod hosts;
pub mod install;
pub mod kdc;
pub mod keytool;
pub mod link;
mod peer_links;
pub mod peers;
pub mod ports;
mod proxy;
mod session;
mod shared;
mod spawn;
mod tempdirs;
mod tmpfs;
mod zookeeper;

pub use embedded::{embedded_sasl_config, shared_embedded, start_embedded};
pub use fourlw::four_letter_word;
pub use link::{Condition, Direction, LinkProxy, Slowness};
pub use peer_links::PeerLinks;
pub use proxy::Proxy;
pub use session::{await_deleted, exists_p99_ms, expire_session};
pub use shared::{shared_ensemble, shared_standalone, shared_zookeeper};
pub use spawn::spawn_tied_to_process;
pub use tmpfs::{Filled, Tmpfs};
/// The embedded server's settings, for [`start_embedded`] (so that tests need no dependency on the server crate).
pub use zklock_server::ServerConfig;
pub use zookeeper::{Builder, ZooKeeper, DEFAULT_START_TIMEOUT, DEFAULT_TICK_TIME_MS};

use rand::Rng;

/// `"/<prefix>-<16 random hex digits>"`: a fresh top-level path, so tests sharing a server never collide.
pub fn unique_path(prefix: &str) -> String {
    format!("/{prefix}-{:016x}", rand::thread_rng().gen::<u64>())
}

/// Request opcodes of the ZooKeeper protocol, for [`Proxy::requests`] and [`Proxy::drop_reply_and_cut`]: the
/// codec's [`OpCode`](zklock_codec::OpCode)s as the raw `int` of the wire.
pub mod opcode {
    use zklock_codec::OpCode;

    /// `create`.
    pub const CREATE: i32 = OpCode::Create as i32;
    /// `delete`.
    pub const DELETE: i32 = OpCode::Delete as i32;
    /// `exists`.
    pub const EXISTS: i32 = OpCode::Exists as i32;
    /// `getData`.
    pub const GET_DATA: i32 = OpCode::GetData as i32;
    /// `setData`.
    pub const SET_DATA: i32 = OpCode::SetData as i32;
    /// `getChildren`.
    pub const GET_CHILDREN: i32 = OpCode::GetChildren as i32;
    /// `sync`.
    pub const SYNC: i32 = OpCode::Sync as i32;
    /// `ping`.
    pub const PING: i32 = OpCode::Ping as i32;
    /// `getChildren2`.
    pub const GET_CHILDREN2: i32 = OpCode::GetChildren2 as i32;
    /// `multi`.
    pub const MULTI: i32 = OpCode::Multi as i32;
    /// `checkWatches`.
    pub const CHECK_WATCHES: i32 = OpCode::CheckWatches as i32;
    /// `removeWatches`.
    pub const REMOVE_WATCHES: i32 = OpCode::RemoveWatches as i32;
    /// `create2` (create returning a stat; what `zookeeper-client` sends).
    pub const CREATE2: i32 = OpCode::Create2 as i32;
    /// `createContainer`.
    pub const CREATE_CONTAINER: i32 = OpCode::CreateContainer as i32;
    /// `createTTL`.
    pub const CREATE_TTL: i32 = OpCode::CreateTtl as i32;
    /// `setWatches`.
    pub const SET_WATCHES: i32 = OpCode::SetWatches as i32;
    /// `addWatch`.
    pub const ADD_WATCH: i32 = OpCode::AddWatch as i32;
    /// Every create variant: `create`, `create2`, `createContainer`, `createTTL`.
    pub const ALL_CREATES: &[i32] = &[CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL];
}

/// Installs a `tracing` subscriber for tests, once per process: filtered by `RUST_LOG` (default: warnings, and the
/// changes of a reconnecting session's ZooKeeper sessions), written through the test harness's capture so output
/// shows only for failing tests. Every test of `on_servers!` calls it.
pub fn init_tracing() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,zklock::session::reconnect=info"));
        // Another subscriber may already be installed by the test itself; keep that one.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .with_ansi(false)
            .try_init();
    });
}
