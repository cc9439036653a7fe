//! What holding something looks like: one guard type for every recipe.

use std::future::Future;

use crate::error::Result;
use crate::lost::{LostReason, LostSignal};
use crate::own_node::OwnNode;

/// Proof of holding a lock, a lease or leadership, for as long as it is not lost.
///
/// * [`fencing_token`](Guard::fencing_token) — the czxid of our node: it increases strictly from one holder to
///   the next across the whole ensemble, and stays monotonic even if the lock directory is deleted and recreated
///   (unlike the sequence suffix). Pass it to the resource you protect and have it reject smaller tokens.
/// * [`lost`](Guard::lost) — completes the moment the guard stops protecting you (see [`LostReason`]). Select on
///   it next to your critical section.
/// * [`release`](Guard::release) deletes the node and waits for ZooKeeper to confirm. Dropping the guard deletes it
///   in the background instead (best effort; in any case ZooKeeper deletes it when the session ends).
#[derive(Debug)]
pub struct Guard {
    node: OwnNode,
    lost: LostSignal,
}

impl Guard {
    pub(crate) fn new(node: OwnNode, lost: LostSignal) -> Guard {
        Guard { node, lost }
    }

    /// The fencing token: our node's creation zxid.
    pub fn fencing_token(&self) -> i64 {
        self.node.czxid
    }

    /// The full path of our node.
    pub fn path(&self) -> String {
        self.node.path()
    }

    /// The sequence number ZooKeeper gave our node (for display; use the fencing token for fencing).
    pub fn sequence(&self) -> i64 {
        self.node.sequence
    }

    /// The id of the session that owns the node.
    pub fn session_id(&self) -> i64 {
        self.node.client.session_id().0
    }

    /// Completes when the guard is lost, with the reason. Cheap to call many times; the future owns what it needs.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        self.lost.lost()
    }

    /// Whether the guard has been lost already.
    pub fn is_lost(&self) -> bool {
        self.lost.reason().is_some()
    }

    /// Why the guard was lost, if it was.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.lost.reason()
    }

    /// Deletes our node and waits for ZooKeeper to confirm; retried across connection loss. Releasing a guard
    /// whose node is already gone succeeds.
    pub async fn release(self) -> Result<()> {
        let Guard { node, lost } = self;
        drop(lost);
        node.delete().await
    }
}
