//! Wire constants as `#[repr(i32)]` enums with checked conversion from the raw `int`.

use crate::DecodeError;

/// Declares a `#[repr(i32)]` enum with `TryFrom<i32>` (error names the enumeration) and `From<Self> for i32`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $value:expr,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(i32)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)*
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
        }

        impl TryFrom<i32> for $name {
            type Error = DecodeError;
            fn try_from(value: i32) -> Result<Self, DecodeError> {
                match value {
                    $($value => Ok($name::$variant),)*
                    _ => Err(DecodeError::InvalidValue { what: $what, value }),
                }
            }
        }

        impl From<$name> for i32 {
            fn from(v: $name) -> i32 {
                v as i32
            }
        }
    };
}

wire_enum! {
    /// Request type in the `RequestHeader`.
    OpCode, "opcode" {
        /// Watch notification (server → client only).
        Notification = 0,
        /// create (path only reply).
        Create = 1,
        /// delete.
        Delete = 2,
        /// exists.
        Exists = 3,
        /// getData.
        GetData = 4,
        /// setData.
        SetData = 5,
        /// getACL.
        GetAcl = 6,
        /// setACL.
        SetAcl = 7,
        /// getChildren.
        GetChildren = 8,
        /// sync.
        Sync = 9,
        /// ping.
        Ping = 11,
        /// getChildren2 (children + stat).
        GetChildren2 = 12,
        /// check version (inside multi).
        Check = 13,
        /// multi (transaction).
        Multi = 14,
        /// create2 (path + stat reply).
        Create2 = 15,
        /// reconfig (not supported by a single node).
        Reconfig = 16,
        /// checkWatches.
        CheckWatches = 17,
        /// removeWatches.
        RemoveWatches = 18,
        /// createContainer.
        CreateContainer = 19,
        /// deleteContainer (server internal).
        DeleteContainer = 20,
        /// createTTL.
        CreateTtl = 21,
        /// multiRead.
        MultiRead = 22,
        /// auth.
        Auth = 100,
        /// setWatches.
        SetWatches = 101,
        /// sasl.
        Sasl = 102,
        /// getEphemerals.
        GetEphemerals = 103,
        /// getAllChildrenNumber.
        GetAllChildrenNumber = 104,
        /// setWatches2 (with persistent watches).
        SetWatches2 = 105,
        /// addWatch (persistent / persistent-recursive).
        AddWatch = 106,
        /// whoAmI.
        WhoAmI = 107,
        /// createSession (txn type).
        CreateSession = -10,
        /// closeSession.
        CloseSession = -11,
        /// error result inside multi.
        Error = -1,
    }
}

wire_enum! {
    /// `err` in the `ReplyHeader` (KeeperException codes).
    ErrorCode, "error code" {
        /// Success.
        Ok = 0,
        /// System error.
        SystemError = -1,
        /// Runtime inconsistency (also: multi ops after the failing one).
        RuntimeInconsistency = -2,
        /// Data inconsistency.
        DataInconsistency = -3,
        /// Connection loss.
        ConnectionLoss = -4,
        /// Marshalling error.
        MarshallingError = -5,
        /// Unimplemented operation.
        Unimplemented = -6,
        /// Operation timeout.
        OperationTimeout = -7,
        /// Bad arguments.
        BadArguments = -8,
        /// Unknown session.
        UnknownSession = -12,
        /// New config no quorum.
        NewConfigNoQuorum = -13,
        /// Reconfig in progress.
        ReconfigInProgress = -14,
        /// API error.
        ApiError = -100,
        /// Node does not exist.
        NoNode = -101,
        /// Not authorised.
        NoAuth = -102,
        /// Version mismatch.
        BadVersion = -103,
        /// Ephemeral nodes may not have children.
        NoChildrenForEphemerals = -108,
        /// Node already exists.
        NodeExists = -110,
        /// Node has children.
        NotEmpty = -111,
        /// Session expired.
        SessionExpired = -112,
        /// Invalid callback.
        InvalidCallback = -113,
        /// Invalid ACL.
        InvalidAcl = -114,
        /// Authentication failed.
        AuthFailed = -115,
        /// Session moved.
        SessionMoved = -118,
        /// Not read-only.
        NotReadOnly = -119,
        /// Ephemeral on local session.
        EphemeralOnLocalSession = -120,
        /// No such watcher.
        NoWatcher = -121,
        /// Request timeout.
        RequestTimeout = -122,
        /// Reconfig disabled.
        ReconfigDisabled = -123,
        /// Session closed because client failed to authenticate.
        SessionClosedRequireSaslAuth = -124,
        /// Quota exceeded.
        QuotaExceeded = -125,
        /// Throttled.
        Throttled = -127,
    }
}

wire_enum! {
    /// Flags of create requests.
    CreateMode, "create mode" {
        /// Persistent.
        Persistent = 0,
        /// Ephemeral.
        Ephemeral = 1,
        /// Persistent sequential.
        PersistentSequential = 2,
        /// Ephemeral sequential.
        EphemeralSequential = 3,
        /// Container.
        Container = 4,
        /// Persistent with TTL.
        PersistentWithTtl = 5,
        /// Persistent sequential with TTL.
        PersistentSequentialWithTtl = 6,
    }
}

impl CreateMode {
    /// Whether the server appends a `%010d` sequence suffix.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            Self::PersistentSequential | Self::EphemeralSequential | Self::PersistentSequentialWithTtl
        )
    }

    /// Whether the node is owned by the creating session.
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }

    /// Whether the node expires after a TTL.
    pub fn is_ttl(self) -> bool {
        matches!(self, Self::PersistentWithTtl | Self::PersistentSequentialWithTtl)
    }
}

wire_enum! {
    /// Type of a watch notification.
    EventType, "event type" {
        /// Connection state change only.
        None = -1,
        /// Node created.
        NodeCreated = 1,
        /// Node deleted.
        NodeDeleted = 2,
        /// Node data changed.
        NodeDataChanged = 3,
        /// Children changed.
        NodeChildrenChanged = 4,
        /// Data watch removed.
        DataWatchRemoved = 5,
        /// Child watch removed.
        ChildWatchRemoved = 6,
        /// Persistent watch removed.
        PersistentWatchRemoved = 7,
    }
}

wire_enum! {
    /// Session state carried in watch notifications.
    KeeperState, "keeper state" {
        /// Disconnected.
        Disconnected = 0,
        /// Connected.
        SyncConnected = 3,
        /// Auth failed.
        AuthFailed = 4,
        /// Connected read-only.
        ConnectedReadOnly = 5,
        /// SASL authenticated.
        SaslAuthenticated = 6,
        /// Session expired.
        Expired = -112,
        /// Closed.
        Closed = 7,
    }
}

wire_enum! {
    /// Mode of `addWatch`.
    AddWatchMode, "add watch mode" {
        /// Persistent watch on one node (data, children, created, deleted).
        Persistent = 0,
        /// Persistent watch on a node and all its descendants (no children-changed events).
        PersistentRecursive = 1,
    }
}

wire_enum! {
    /// Watcher type in checkWatches / removeWatches.
    WatcherType, "watcher type" {
        /// Child watches.
        Children = 1,
        /// Data (and exist) watches.
        Data = 2,
        /// Any watch, including persistent ones.
        Any = 3,
    }
}

/// ACL permission bits.
pub mod perms {
    /// Read data and list children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 2;
    /// Create children.
    pub const CREATE: i32 = 4;
    /// Delete children.
    pub const DELETE: i32 = 8;
    /// Set ACL.
    pub const ADMIN: i32 = 16;
    /// All of the above.
    pub const ALL: i32 = READ | WRITE | CREATE | DELETE | ADMIN;
}

/// Special request/reply xids.
pub mod xid {
    /// Watch notification.
    pub const NOTIFICATION: i32 = -1;
    /// Ping.
    pub const PING: i32 = -2;
    /// Auth request.
    pub const AUTH: i32 = -4;
    /// setWatches sent by some clients on reconnect.
    pub const SET_WATCHES: i32 = -8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_conversion() {
        for op in OpCode::ALL {
            assert_eq!(OpCode::try_from(i32::from(*op)), Ok(*op));
        }
        assert_eq!(
            OpCode::try_from(10),
            Err(DecodeError::InvalidValue {
                what: "opcode",
                value: 10
            })
        );
        assert_eq!(ErrorCode::try_from(-101), Ok(ErrorCode::NoNode));
        assert!(CreateMode::try_from(7).is_err());
    }
}
