//! The ground floor: what every layer above speaks — the errors, checked paths, retries across connection loss,
//! the names of queue nodes (ours and our peers'), and the plain ZooKeeper idioms on a client and a retry policy.

pub(crate) mod error;
pub(crate) mod idioms;
pub(crate) mod metrics;
pub(crate) mod names;
pub(crate) mod path;
pub(crate) mod retry;
