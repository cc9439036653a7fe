//! create / create2 / createContainer / createTTL.

use crate::record::record;
use crate::{Acl, Stat};

record! {
    /// create, create2 and createContainer request.
    pub struct CreateRequest {
        /// Path (the sequence suffix is appended for sequential modes).
        pub path: String,
        /// Data; null and empty differ.
        pub data: Option<Vec<u8>>,
        /// ACL of the new node.
        pub acl: Vec<Acl>,
        /// Raw [`crate::CreateMode`].
        pub flags: i32,
    }

    /// createTTL request.
    pub struct CreateTtlRequest {
        /// Path.
        pub path: String,
        /// Data.
        pub data: Option<Vec<u8>>,
        /// ACL.
        pub acl: Vec<Acl>,
        /// Raw [`crate::CreateMode`].
        pub flags: i32,
        /// Time to live in ms.
        pub ttl: i64,
    }

    /// create reply.
    pub struct CreateResponse {
        /// Actual path (with suffix).
        pub path: String,
    }

    /// create2 / createContainer / createTTL reply.
    pub struct Create2Response {
        /// Actual path.
        pub path: String,
        /// The new node's stat.
        pub stat: Stat,
    }
}
