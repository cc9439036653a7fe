//! Integration tests of the recipes against real servers: real ZooKeeper 3.8 (standalone and a 3-node ensemble,
//! started by `zklock-testkit`) and the embedded server. One binary, as ripgrep does it.

mod support;

mod barrier;
mod double_barrier;
mod election;
mod fenced;
mod guard;
mod inspect;
mod interop;
mod metrics;
mod multi_lock;
mod mutex;
mod mutex_faults;
mod queue;
mod rwlock;
mod semaphore;
