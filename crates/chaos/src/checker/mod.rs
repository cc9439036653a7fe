//! The independent checker: reads only what the protected resource recorded (and what the commands of
//! `zklock run` logged about themselves), never zklock's own opinion, and lists every broken guarantee.
//!
//! One check a file: `register.rs` the fenced register's history (fencing order, overlaps, the holder limit, the
//! counter); `barrier.rs` the double barrier; `queue.rs` the queue; `counter.rs` the `AtomicLong` counter;
//! `priority_order.rs` the priority queue's order; `intervals.rs` the commands of `zklock run`; `recovery.rs`
//! liveness after the last fault; `refusals.rs` the fence's refusals with no fault to explain them; `cache.rs` the
//! tree caches' events and final views (from the `cache` workload's history files, not the register).

mod barrier;
mod cache;
mod counter;
mod intervals;
mod priority_order;
mod queue;
mod recovery;
mod refusals;
mod register;
#[cfg(test)]
mod testing;

pub use barrier::check_barrier;
pub use cache::check_cache;
pub use counter::check_counter;
pub use intervals::check_intervals;
pub use priority_order::check_priority_order;
pub use queue::check_queue;
pub use recovery::check_recovery;
pub use refusals::check_refusals;
pub use register::{check_register, Rules};

/// A broken guarantee, in words.
pub type Violation = String;
