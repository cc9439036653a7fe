//! Our node, from the create request to its delete: the node itself and its creation ([`own`]), deletes still
//! under way ([`abandoned`]), the lost signal ([`lost`]), holding through a node ([`held`]) and the queue recipes'
//! public [`Guard`](guard::Guard), with its fenced writes and revocation.

pub(crate) mod abandoned;
pub(crate) mod fenced;
pub(crate) mod guard;
pub(crate) mod held;
pub(crate) mod lost;
pub(crate) mod own;
pub(crate) mod revocation;
