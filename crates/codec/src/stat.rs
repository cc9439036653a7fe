//! The node `Stat` (68 bytes on the wire).

use crate::record::record;

record! {
    /// Node metadata, in wire order.
    pub struct Stat {
        /// zxid of the create.
        pub czxid: i64,
        /// zxid of the last data change.
        pub mzxid: i64,
        /// Create time (ms since epoch).
        pub ctime: i64,
        /// Last modification time (ms since epoch).
        pub mtime: i64,
        /// Data version.
        pub version: i32,
        /// Children version.
        pub cversion: i32,
        /// ACL version.
        pub aversion: i32,
        /// Owning session for ephemerals, a marker for containers/TTL nodes, else 0.
        pub ephemeral_owner: i64,
        /// Data length.
        pub data_length: i32,
        /// Number of children.
        pub num_children: i32,
        /// zxid of the last child create/delete.
        pub pzxid: i64,
    }
}

/// Encoded size of a [`Stat`].
pub const STAT_LEN: usize = 68;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Encode;

    #[test]
    fn stat_is_68_bytes() {
        assert_eq!(Stat::default().to_bytes().len(), STAT_LEN);
    }
}
