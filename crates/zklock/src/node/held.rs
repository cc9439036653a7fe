//! Something held through a node of ours — a double-barrier participation, a group membership, a claimed queue
//! item: the node, its lost signal, the hand-over from "held" to "ours to delete", and a delete on drop that happens
//! once. The queue recipes' [`Guard`](crate::Guard) is the same idea with a queue's rules around
//! it (`node/guard.rs`).

use std::future::Future;

use crate::base::error::{Error, LostReason, Result};
use crate::base::idioms::IfExists;
use crate::node::lost::LostSignal;
use crate::node::own::OwnNode;
use crate::session::Session;

/// The public `lost`, `is_lost` and `lost_reason` of something held through `self.$held` (a [`Held`]). The
/// holder names each, with its doc comment, where its type is:
///
/// ```ignore
/// crate::node::held::lost_methods! {
///     held:
///     /// Completes when the guard is lost, with the reason.
///     pub fn lost;
///     /// Whether the guard has been lost already.
///     pub fn is_lost;
///     /// Why the guard was lost, if it was.
///     pub fn lost_reason;
/// }
/// ```
macro_rules! lost_methods {
    (
        $held:ident:
        $(#[$lost_doc:meta])* pub fn lost;
        $(#[$is_lost_doc:meta])* pub fn is_lost;
        $(#[$reason_doc:meta])* pub fn lost_reason;
    ) => {
        $(#[$lost_doc])*
        pub fn lost(&self) -> impl ::std::future::Future<Output = $crate::base::error::LostReason> + Send + 'static {
            self.$held.lost()
        }

        $(#[$is_lost_doc])*
        pub fn is_lost(&self) -> bool {
            self.$held.lost_reason().is_some()
        }

        $(#[$reason_doc])*
        pub fn lost_reason(&self) -> Option<$crate::base::error::LostReason> {
            self.$held.lost_reason()
        }
    };
}
pub(crate) use lost_methods;

/// The public `suspended`, `resumed` and `is_suspended` of something held through `self.$held` (a [`Held`]), as
/// [`Guard`](crate::Guard)'s: `crate::node::held::suspension_methods!(held);` where the type is.
macro_rules! suspension_methods {
    ($held:ident) => {
        /// Completes when this is **suspended** (`None`) — held under a suspending
        /// [`LostPolicy`](crate::LostPolicy), its session not confirmed in time — or lost (with the reason). While
        /// suspended nothing may act under it; see [`Guard::suspended`](crate::Guard::suspended).
        pub fn suspended(
            &self,
        ) -> impl ::std::future::Future<Output = Option<$crate::base::error::LostReason>> + Send + 'static {
            self.$held.signal().suspended()
        }

        /// Completes when this is held and not suspended (at once unless suspended now): `Ok`, the same node — or
        /// with the reason it was lost instead ([`Guard::resumed`](crate::Guard::resumed)).
        pub fn resumed(
            &self,
        ) -> impl ::std::future::Future<Output = ::std::result::Result<(), $crate::base::error::LostReason>>
               + Send
               + 'static {
            self.$held.signal().resumed()
        }

        /// Whether this is suspended now.
        pub fn is_suspended(&self) -> bool {
            self.$held.signal().is_suspended()
        }
    };
}
pub(crate) use suspension_methods;

/// Our node and its lost signal. Dropping it deletes the node in the background (once: see [`OwnNode`]).
#[derive(Debug)]
pub(crate) struct Held {
    // Declared (so dropped) before the node: the signal is dismissed before the node's own delete is sent.
    lost: LostSignal,
    node: OwnNode,
}

impl Held {
    /// Starts watching `node` (created already) for its loss, under the session's [`LostPolicy`](crate::LostPolicy).
    /// A disconnection counts only once it is [`hold`](Held::hold)ing.
    pub(crate) fn watch(mut node: OwnNode, session: &Session) -> Held {
        let lost = LostSignal::for_node(&mut node, session.lost_policy());
        Held::new(node, lost)
    }

    /// `node` with the lost signal already started for it ([`LostSignal::for_node`]).
    pub(crate) fn new(node: OwnNode, lost: LostSignal) -> Held {
        Held { lost, node }
    }

    /// Our node.
    pub(crate) fn node(&self) -> &OwnNode {
        &self.node
    }

    /// Its lost signal.
    pub(crate) fn signal(&self) -> &LostSignal {
        &self.lost
    }

    /// From now on the node is held: disconnections count, per the policy, and the session validity is kept.
    pub(crate) fn hold(&self) {
        self.lost.set_holding();
    }

    /// The full path of the node.
    pub(crate) fn path(&self) -> String {
        self.node.path()
    }

    /// The node's creation zxid (-1 if unknown).
    pub(crate) fn czxid(&self) -> i64 {
        self.node.czxid
    }

    /// Completes when the node is lost (`Released` if this is dropped first).
    pub(crate) fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        self.lost.lost()
    }

    /// Why the node was lost, if it was.
    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        self.lost.lost_reason()
    }

    /// The error for a wait that found our node gone: the end of the session, or a deletion by somebody else.
    pub(crate) async fn vanished(&self) -> Error {
        self.lost
            .vanished(&self.node.client, &self.node.retry, &self.node.path())
            .await
    }

    /// Replaces the node's data (whatever its version).
    ///
    /// # Errors
    /// When the node is gone, [`vanished`](Held::vanished)'s error: the end of the session, or
    /// [`Error::NodeDeleted`].
    pub(crate) async fn set_data(&self, data: &[u8]) -> Result<()> {
        let (client, path) = (&self.node.client, self.node.path());
        let set = self
            .node
            .retry
            .run_at("setData", &path, || client.set_data(&path, data, None));
        match set.await.if_exists()? {
            Some(_) => Ok(()),
            None => Err(self.vanished().await),
        }
    }

    /// Stops watching: from now on the node's going is ours, not a loss. The node itself stays ours to delete.
    pub(crate) fn into_node(self) -> OwnNode {
        let Held { lost, node } = self;
        drop(lost);
        node
    }
}
