//! One clock for every process of a campaign: `CLOCK_MONOTONIC`, which is system-wide on Linux, so times taken
//! by the harness, the workers and the commands of `zklock run` can be compared.

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub fn now_ns() -> u64 {
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always available on Linux");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}
