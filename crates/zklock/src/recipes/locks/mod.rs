//! The lock family: queues of contender nodes on the contention engine, and kazoo's time lease on a lock.

pub(crate) mod election;
pub(crate) mod lease;
pub(crate) mod multi_lock;
pub(crate) mod mutex;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
