//! The queues: FIFO, priority and delay, in their Curator and ZooKeeper-recipe layouts.

pub(crate) mod claim;
pub(crate) mod curator;
pub(crate) mod delay;
pub(crate) mod items;
pub(crate) mod layout;
pub(crate) mod priority;
pub(crate) mod queue;
