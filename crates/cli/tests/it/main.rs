//! End-to-end tests of the `zklock` binary against real servers. One binary for the crate.

#[macro_use]
mod support;

mod cleanup;
mod counter;
mod demo;
mod discovery;
mod elect;
mod elect_expiry;
mod foreign;
mod input;
mod interop;
#[cfg(feature = "sasl-gssapi")]
mod kerberos;
mod logs;
mod manual;
mod metrics;
mod notify;
mod operations_doc;
mod paper_cuts;
mod parity;
mod pause;
mod revoke;
mod run;
mod run_description;
mod sasl;
mod secure;
mod serve_attack;
mod serve_dir;
mod serve_disk_full;
mod serve_tls;
mod signals;
mod status;
mod suspend;
mod terminal;
mod watch;
