//! ZooKeeper wire protocol (jute) codec.
//!
//! Three layers, each usable alone:
//! - [`jute`]: primitives — big-endian `int`/`long`, 1-byte `boolean`, `buffer`/`ustring` with length −1 =
//!   null, counted vectors — read through a checked [`Reader`] that never panics and never preallocates more
//!   than the remaining bytes could hold;
//! - [`frame`]: length-prefixed frames, where "need more bytes" is `Ok(None)` and a negative or oversized
//!   length is an error;
//! - records: plain structs (one module per record group) implementing [`Encode`] and [`Decode`], and the
//!   wire constants as `#[repr(i32)]` enums with checked `TryFrom<i32>`.
//!
//! Field names and layouts follow `zookeeper.jute` of Apache ZooKeeper 3.8. Decoding ignores trailing bytes,
//! as the Java server does. Strings are decoded lossily (invalid UTF-8 → U+FFFD), again like Java; null
//! strings decode as empty, null data buffers stay `None` so null and empty data round-trip distinctly.
//!
//! Not covered: SASL and reconfig bodies (a single-node server answers them without decoding), and the
//! server-internal txn records (those belong to the storage format).
#![forbid(unsafe_code)]

pub mod frame;
pub mod jute;
mod record;

mod acl;
mod auth;
mod children;
mod connect;
mod consts;
mod create;
mod error;
mod header;
mod multi;
mod node;
mod stat;
mod watch;

pub use acl::{Acl, GetAclRequest, GetAclResponse, Id, SetAclRequest, SetAclResponse};
pub use auth::{AuthPacket, ClientInfo, GetSaslRequest, SetSaslResponse, WhoAmIResponse};
pub use children::{
    GetAllChildrenNumberRequest, GetAllChildrenNumberResponse, GetChildren2Request, GetChildren2Response,
    GetChildrenRequest, GetChildrenResponse, GetEphemeralsRequest, GetEphemeralsResponse,
};
pub use connect::{ConnectRequest, ConnectResponse};
pub use consts::{
    perms, xid, AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, WatcherType,
};
pub use create::{Create2Response, CreateRequest, CreateResponse, CreateTtlRequest};
pub use error::{DecodeError, FrameError};
pub use header::{ReplyHeader, RequestHeader};
pub use jute::{Decode, Encode, Reader};
pub use multi::{MultiHeader, MultiOp, MultiRequest, MultiResponse, MultiResult};
pub use node::{
    CheckVersionRequest, DeleteRequest, ErrorResponse, ExistsRequest, ExistsResponse, GetDataRequest,
    GetDataResponse, SetDataRequest, SetDataResponse, StatResponse, SyncRequest, SyncResponse,
};
pub use stat::{Stat, STAT_LEN};
pub use watch::{
    AddWatchRequest, CheckWatchesRequest, RemoveWatchesRequest, SetWatches, SetWatches2, WatcherEvent,
};
