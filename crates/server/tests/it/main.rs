//! Integration tests of the embedded server (one test binary): the Rust `zookeeper-client` for client-level
//! behaviour (over TLS too: `tls/`), and a raw jute socket (our codec) for wire details a client library hides
//! (`raw/`).

mod backup;
mod client;
mod common;
mod containers;
mod disk_full;
mod durability;
mod limits;
mod raw;
#[path = "../shared/mod.rs"]
mod shared;
mod tls;
mod ttl;
