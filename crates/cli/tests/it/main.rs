//! End-to-end tests of the `zklock` binary against real servers. One binary for the crate.

mod support;

mod demo;
mod elect;
mod input;
mod interop;
mod logs;
mod manual;
mod metrics;
mod parity;
mod pause;
mod run;
mod serve_disk_full;
mod signals;
mod status;
