//! Compatibility suite: the embedded server side by side with real ZooKeeper 3.8 (Debian's 3.8.0, run by
//! `zklock-testkit`), and real clients against it.
//!
//! - `differential`: seeded random request streams (≥ 10,000 ops per run) against real ZooKeeper and the
//!   embedded server, compared op by op; mismatches are shrunk to a short sequence. Env:
//!   `ZKLOCK_DIFF_SEED` (replay), `ZKLOCK_DIFF_STREAMS`, `ZKLOCK_DIFF_OPS`, `ZKLOCK_DIFF_CANDIDATE=zookeeper`
//!   (harness self-check: two real servers), `ZKLOCK_DIFF_ALL=1` (include known divergences, see
//!   `differential/known.rs`), `ZKLOCK_DIFF_DUMP=<prefix>` (write the traces).
//! - `scripted`: differential scenarios streams leave out (connection-ending requests, frame limits,
//!   setWatches after a reconnect, four-letter words).
//! - `clients`: the Rust `zookeeper-client`, kazoo (python scripts in this directory), zkCli and Apache
//!   Curator (`CuratorCheck.java`).
//! - `sessions`: expiry by timeout, moving a session, ephemerals gone before the close reply.
//! - `recovery`: `zklock serve` as a process (built with `cargo build -p zklock-cli` if missing, see
//!   `serve.rs`): SIGKILL under load, kazoo's 500 nodes, torn log tail, corrupted record.
//! - `tls`: a secure client port (keytool-made PKCS12 stores), client certificates, digest ACLs and the super users,
//!   against real ZooKeeper started with TLS and a super digest.
//! - `ttl`: TTL nodes (`createTTL`): refused without extended types, their stat, validation and expiry with them,
//!   against a real ZooKeeper of their own started with `zookeeper.extendedTypesEnabled=true`.
//! - `fuzz`: random bytes at a live socket (proptest, bounded): the server survives and keeps serving.

mod clients;
mod differential;
mod fuzz;
mod process;
mod recovery;
mod sasl;
mod scripted;
mod serve;
mod sessions;
#[path = "../shared/mod.rs"]
mod shared;
mod support;
mod tls;
mod ttl;
mod wire;
