//! The recipes, by family, each a small set of rules on the layers below.

pub(crate) mod coordination;
pub(crate) mod counters;
pub(crate) mod discovery;
pub(crate) mod locks;
pub(crate) mod queues;
