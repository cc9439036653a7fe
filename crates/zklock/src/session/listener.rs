//! Progress events of a contender, for progress displays (the demo), logs and tests.

use std::fmt;
use std::sync::Arc;

/// What happened to one contender.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueEvent {
    /// Our node exists (full path).
    Created {
        /// The full path of our node.
        path: String,
    },
    /// We are waiting for this node (full path) to go away; it is the only one we watch.
    Waiting {
        /// The full path of the node we watch.
        on: String,
    },
    /// The watch on the node we waited for fired.
    Woken {
        /// The full path of the node we watched.
        by: String,
    },
    /// Our turn has come.
    Acquired {
        /// The full path of our node.
        path: String,
        /// The guard's fencing token.
        fencing_token: i64,
    },
}

/// A callback that receives every [`QueueEvent`] of the contenders it is attached to. It runs inline on the
/// acquiring task, so it must be quick.
#[derive(Clone)]
pub struct Listener(Arc<dyn Fn(&QueueEvent) + Send + Sync>);

impl Listener {
    /// Wraps a callback.
    pub fn new(f: impl Fn(&QueueEvent) + Send + Sync + 'static) -> Listener {
        Listener(Arc::new(f))
    }

    pub(crate) fn call(&self, event: &QueueEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Listener")
    }
}
