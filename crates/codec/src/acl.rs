//! ACLs and the ACL requests.

use crate::record::record;
use crate::Stat;

record! {
    /// An identity: scheme (`world`, `auth`, `digest`, `ip`, ...) and id.
    pub struct Id {
        /// Scheme.
        pub scheme: String,
        /// Scheme-specific id (`anyone`, `user:hash`, ...).
        pub id: String,
    }

    /// One ACL entry.
    pub struct Acl {
        /// Permission bits ([`crate::perms`]).
        pub perms: i32,
        /// Who.
        pub id: Id,
    }

    /// getACL request.
    pub struct GetAclRequest {
        /// Node path.
        pub path: String,
    }

    /// getACL reply.
    pub struct GetAclResponse {
        /// The ACL.
        pub acl: Vec<Acl>,
        /// The node's stat.
        pub stat: Stat,
    }

    /// setACL request.
    pub struct SetAclRequest {
        /// Node path.
        pub path: String,
        /// New ACL.
        pub acl: Vec<Acl>,
        /// Expected aversion, −1 = any.
        pub version: i32,
    }

    /// setACL reply.
    pub struct SetAclResponse {
        /// The node's new stat.
        pub stat: Stat,
    }
}

impl Acl {
    /// `world:anyone` with all permissions (ZooKeeper's OPEN_ACL_UNSAFE).
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: crate::perms::ALL,
            id: Id {
                scheme: "world".into(),
                id: "anyone".into(),
            },
        }]
    }
}
