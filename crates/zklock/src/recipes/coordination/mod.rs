//! Waiting together: the barriers, group membership, the set partitioner and two-phase commit.

pub(crate) mod barrier;
pub(crate) mod double_barrier;
pub(crate) mod group;
pub(crate) mod partitioner;
pub(crate) mod transaction;
pub(crate) mod two_phase_commit;
