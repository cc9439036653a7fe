//! Requests on one node: delete, exists, getData, setData, check, sync.

use crate::record::record;
use crate::Stat;

record! {
    /// delete request.
    pub struct DeleteRequest {
        /// Path.
        pub path: String,
        /// Expected version, −1 = any.
        pub version: i32,
    }

    /// exists / getData request (path + watch flag).
    pub struct ExistsRequest {
        /// Path.
        pub path: String,
        /// Leave a watch.
        pub watch: bool,
    }

    /// exists / setData reply: a stat only.
    pub struct StatResponse {
        /// The stat.
        pub stat: Stat,
    }

    /// getData request.
    pub struct GetDataRequest {
        /// Path.
        pub path: String,
        /// Leave a data watch.
        pub watch: bool,
    }

    /// getData reply.
    pub struct GetDataResponse {
        /// Data (null round-trips).
        pub data: Option<Vec<u8>>,
        /// The stat.
        pub stat: Stat,
    }

    /// setData request.
    pub struct SetDataRequest {
        /// Path.
        pub path: String,
        /// New data.
        pub data: Option<Vec<u8>>,
        /// Expected version, −1 = any.
        pub version: i32,
    }

    /// check (version) request, used inside multi.
    pub struct CheckVersionRequest {
        /// Path.
        pub path: String,
        /// Expected version, −1 = any.
        pub version: i32,
    }

    /// sync request.
    pub struct SyncRequest {
        /// Path.
        pub path: String,
    }

    /// sync reply.
    pub struct SyncResponse {
        /// Path.
        pub path: String,
    }

    /// Body of an error result in multi, and the 4-byte body of addWatch's reply.
    pub struct ErrorResponse {
        /// Error code.
        pub err: i32,
    }
}

/// setData reply (same layout as exists).
pub type SetDataResponse = StatResponse;
/// exists reply.
pub type ExistsResponse = StatResponse;
