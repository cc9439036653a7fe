//! The lock family: queues of contender nodes on the contention engine.

pub(crate) mod election;
pub(crate) mod multi_lock;
pub(crate) mod mutex;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
