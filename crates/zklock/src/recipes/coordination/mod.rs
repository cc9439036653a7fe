//! Waiting together: the barriers, group membership and two-phase commit.

pub(crate) mod barrier;
pub(crate) mod double_barrier;
pub(crate) mod group;
pub(crate) mod transaction;
pub(crate) mod two_phase_commit;
