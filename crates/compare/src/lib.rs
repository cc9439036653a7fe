//! Side-by-side comparisons that need real ZooKeeper and the peers' toolchains (through `zklock-testkit`), run by
//! hand; the workloads they share with `zklock bench` live in `zklock-bench`.
//!
//! * [`peers`] — Apache Curator and kazoo, driven as processes (`compare-peers`).
//! * [`recipes`] — zklock's side of `compare-peers` beyond the Mutex: read-heavy `RwLock`, election fail-over,
//!   double barrier.
//! * [`caches`] — the cache section of `compare-peers`: zklock's `Cache::tree`, Curator's `CuratorCache` and kazoo's
//!   `TreeCache` on one 100,101-node tree (prime time, memory per node, change latency).
//! * [`resync`] — what re-reading that tree costs zklock's cache after a connection cut and after a new session.
//!
//! * [`flood`] — the `digest` auth flood of `compare-servers`: a bystander's latency and the server's CPU.
//! * [`naive`] — the design documents' naive lock (every release wakes every waiter), a baseline only.
//! * [`scale`] — `compare-scale`: how costs grow with waiters, lock paths and znodes (tables, JSON, SVG charts).
//!
//! Binaries: `compare-servers` (the embedded server against real ZooKeeper 3.8), `compare-peers` and
//! `compare-scale`.
#![forbid(unsafe_code)]

pub mod caches;
pub mod discovery;
pub mod flood;
pub mod naive;
pub mod peers;
pub mod recipes;
pub mod resync;
pub mod scale;
