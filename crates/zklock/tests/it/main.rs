//! Integration tests of the recipes against real servers: real ZooKeeper 3.8 (standalone and a 3-node ensemble,
//! started by `zklock-testkit`) and the embedded server. One binary, as ripgrep does it.

mod support;

mod acl;
mod barrier;
mod cache;
mod cache_interop;
mod containers;
mod counter;
mod delay_queue;
mod discovery;
mod double_barrier;
mod election;
mod errors;
mod fenced;
mod group;
mod guard;
mod inspect;
mod interop;
mod logging;
mod lost_create_elsewhere;
mod metrics;
mod multi_lock;
mod mutex;
mod mutex_faults;
mod partitioner;
mod persistent_node;
mod priority_queue;
mod queue;
mod reconnect;
mod revocation;
mod rwlock;
mod semaphore;
mod sharing;
mod shutdown;
mod suspend;
mod two_phase_commit;
