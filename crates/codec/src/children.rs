//! Children listings, getAllChildrenNumber and getEphemerals.

use crate::record::record;
use crate::Stat;

record! {
    /// getChildren / getChildren2 request.
    pub struct GetChildrenRequest {
        /// Path.
        pub path: String,
        /// Leave a child watch.
        pub watch: bool,
    }

    /// getChildren reply.
    pub struct GetChildrenResponse {
        /// Child names (unordered).
        pub children: Vec<String>,
    }

    /// getChildren2 reply.
    pub struct GetChildren2Response {
        /// Child names (unordered).
        pub children: Vec<String>,
        /// The parent's stat.
        pub stat: Stat,
    }

    /// getAllChildrenNumber request.
    pub struct GetAllChildrenNumberRequest {
        /// Path.
        pub path: String,
    }

    /// getAllChildrenNumber reply.
    pub struct GetAllChildrenNumberResponse {
        /// Number of descendants.
        pub total_number: i32,
    }

    /// getEphemerals request.
    pub struct GetEphemeralsRequest {
        /// Path prefix (plain string prefix, not a path component match).
        pub prefix_path: String,
    }

    /// getEphemerals reply.
    pub struct GetEphemeralsResponse {
        /// Full paths of the session's ephemerals under the prefix.
        pub ephemerals: Vec<String>,
    }
}

/// getChildren2 request (same layout).
pub type GetChildren2Request = GetChildrenRequest;
