//! Compatibility suite: the embedded server side by side with real ZooKeeper 3.8, and real clients
//! (Rust `zookeeper-client`, kazoo, zkCli) against it.
//!
//! - `differential`: seeded random request streams, real ZooKeeper vs the embedded server.

mod clients;
mod differential;
mod fuzz;
mod process;
mod recovery;
mod scripted;
mod serve;
mod sessions;
mod support;
mod wire;
