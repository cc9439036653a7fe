//! Registration and discovery: nodes kept in existence across session loss.

pub(crate) mod node_mode;
pub(crate) mod persistent_node;
pub(crate) mod service;
