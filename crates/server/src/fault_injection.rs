//! Test-only faults, compiled only with the `fault-injection` feature (which the `zklock` binary never enables)
//! and reachable only from Rust code in the same process ([`crate::Server::answer_reads_from_a_stale_copy`]):
//! no configuration key, command-line flag or environment variable turns them on.
//!
//! `StaleReads`: `getData` answers from a copy of the node that is refreshed only every fourth read of its path,
//! as a lagging replica or a read cache would — the negative control of the `register` workload's
//! linearizability checker (`zklock-chaos`), which must find such reads.

use std::collections::HashMap;

use zklock_codec::Stat;

/// How many reads of a path one copy answers before it is refreshed.
const READS_PER_COPY: u32 = 4;

/// The stale copies, per path.
#[derive(Default)]
pub struct StaleReads {
    copies: HashMap<String, (u32, Option<Vec<u8>>, Stat)>,
}

impl StaleReads {
    /// The answer to a read of `path` whose fresh answer is `(data, stat)`: the copy, refreshed every
    /// [`READS_PER_COPY`] reads.
    pub fn read(&mut self, path: &str, data: Option<Vec<u8>>, stat: Stat) -> (Option<Vec<u8>>, Stat) {
        let copy = self
            .copies
            .entry(path.to_owned())
            .or_insert_with(|| (0, data.clone(), stat.clone()));
        copy.0 += 1;
        if copy.0 % READS_PER_COPY == 0 {
            *copy = (copy.0, data, stat);
        }
        (copy.1.clone(), copy.2.clone())
    }
}
