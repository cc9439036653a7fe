//! Watch notifications and watch management requests.

use crate::record::record;

record! {
    /// A watch notification (reply xid −1).
    pub struct WatcherEvent {
        /// [`crate::EventType`].
        pub event_type: i32,
        /// [`crate::KeeperState`].
        pub state: i32,
        /// Path (client-visible, i.e. without chroot — the client strips it).
        pub path: String,
    }

    /// setWatches (re-arm after reconnect).
    pub struct SetWatches {
        /// zxid the client last saw.
        pub relative_zxid: i64,
        /// Data watches.
        pub data_watches: Vec<String>,
        /// Exist watches.
        pub exist_watches: Vec<String>,
        /// Child watches.
        pub child_watches: Vec<String>,
    }

    /// setWatches2 (with persistent watches).
    pub struct SetWatches2 {
        /// zxid the client last saw.
        pub relative_zxid: i64,
        /// Data watches.
        pub data_watches: Vec<String>,
        /// Exist watches.
        pub exist_watches: Vec<String>,
        /// Child watches.
        pub child_watches: Vec<String>,
        /// Persistent watches.
        pub persistent_watches: Vec<String>,
        /// Persistent recursive watches.
        pub persistent_recursive_watches: Vec<String>,
    }

    /// addWatch request.
    pub struct AddWatchRequest {
        /// Path.
        pub path: String,
        /// [`crate::AddWatchMode`].
        pub mode: i32,
    }

    /// checkWatches / removeWatches request.
    pub struct RemoveWatchesRequest {
        /// Path.
        pub path: String,
        /// [`crate::WatcherType`].
        pub watcher_type: i32,
    }
}

/// checkWatches request (same layout).
pub type CheckWatchesRequest = RemoveWatchesRequest;
