//! End-to-end tests of the `zklock` binary against real servers. One binary for the crate.

mod support;

mod cleanup;
mod counter;
mod demo;
mod elect;
mod input;
mod interop;
mod logs;
mod manual;
mod metrics;
mod parity;
mod pause;
mod revoke;
mod run;
mod secure;
mod serve_attack;
mod serve_dir;
mod serve_disk_full;
mod serve_tls;
mod signals;
mod status;
