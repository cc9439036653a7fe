//! Transactions: the validated, post-state form of every write. They are applied to the tree and (when
//! durable storage is on) appended to the log, so replaying them rebuilds exactly the same state.

use zklock_codec::jute::{put_buffer, put_i32, put_i64, put_str, put_vec};
use zklock_codec::{Acl, Decode, DecodeError, Encode, Reader};

/// One transaction. Every write request, successful or not, becomes exactly one txn and one zxid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Txn {
    /// A new session.
    CreateSession {
        /// Session id.
        id: i64,
        /// Negotiated timeout, ms.
        timeout_ms: i32,
        /// Password.
        passwd: Vec<u8>,
    },
    /// Session closed or expired: its ephemerals are deleted (sorted order) in this one txn.
    CloseSession {
        /// Session id.
        id: i64,
    },
    /// Node created.
    Create {
        /// Full path (with suffix).
        path: String,
        /// Data.
        data: Option<Vec<u8>>,
        /// Fixed-up ACL.
        acl: Vec<Acl>,
        /// ephemeralOwner.
        owner: i64,
        /// Parent cversion after the create.
        parent_cversion: i32,
    },
    /// Node deleted.
    Delete {
        /// Path.
        path: String,
    },
    /// Data set.
    SetData {
        /// Path.
        path: String,
        /// New data.
        data: Option<Vec<u8>>,
        /// New version.
        version: i32,
    },
    /// ACL set.
    SetAcl {
        /// Path.
        path: String,
        /// New ACL.
        acl: Vec<Acl>,
        /// New aversion.
        aversion: i32,
    },
    /// A version check inside a multi (no effect; kept so results line up with ops).
    Check {
        /// Path.
        path: String,
    },
    /// A failed write: consumes a zxid, changes nothing.
    Error {
        /// The error code returned.
        err: i32,
    },
    /// A successful multi: all sub-txns under one zxid.
    Multi(Vec<Txn>),
}

const CREATE_SESSION: i32 = 1;
const CLOSE_SESSION: i32 = 2;
const CREATE: i32 = 3;
const DELETE: i32 = 4;
const SET_DATA: i32 = 5;
const SET_ACL: i32 = 6;
const CHECK: i32 = 7;
const ERROR: i32 = 8;
const MULTI: i32 = 9;

impl Encode for Txn {
    fn encode(&self, w: &mut Vec<u8>) {
        match self {
            Txn::CreateSession {
                id,
                timeout_ms,
                passwd,
            } => {
                put_i32(w, CREATE_SESSION);
                put_i64(w, *id);
                put_i32(w, *timeout_ms);
                put_buffer(w, Some(passwd));
            }
            Txn::CloseSession { id } => {
                put_i32(w, CLOSE_SESSION);
                put_i64(w, *id);
            }
            Txn::Create {
                path,
                data,
                acl,
                owner,
                parent_cversion,
            } => {
                put_i32(w, CREATE);
                put_str(w, path);
                put_buffer(w, data.as_deref());
                put_vec(w, acl);
                put_i64(w, *owner);
                put_i32(w, *parent_cversion);
            }
            Txn::Delete { path } => {
                put_i32(w, DELETE);
                put_str(w, path);
            }
            Txn::SetData { path, data, version } => {
                put_i32(w, SET_DATA);
                put_str(w, path);
                put_buffer(w, data.as_deref());
                put_i32(w, *version);
            }
            Txn::SetAcl { path, acl, aversion } => {
                put_i32(w, SET_ACL);
                put_str(w, path);
                put_vec(w, acl);
                put_i32(w, *aversion);
            }
            Txn::Check { path } => {
                put_i32(w, CHECK);
                put_str(w, path);
            }
            Txn::Error { err } => {
                put_i32(w, ERROR);
                put_i32(w, *err);
            }
            Txn::Multi(txns) => {
                put_i32(w, MULTI);
                put_vec(w, txns);
            }
        }
    }
}

impl Decode for Txn {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match r.read_i32()? {
            CREATE_SESSION => Txn::CreateSession {
                id: r.read_i64()?,
                timeout_ms: r.read_i32()?,
                passwd: r.read_buffer()?.unwrap_or_default(),
            },
            CLOSE_SESSION => Txn::CloseSession { id: r.read_i64()? },
            CREATE => Txn::Create {
                path: r.read_string()?,
                data: r.read_buffer()?,
                acl: r.read_vec_or_empty()?,
                owner: r.read_i64()?,
                parent_cversion: r.read_i32()?,
            },
            DELETE => Txn::Delete {
                path: r.read_string()?,
            },
            SET_DATA => Txn::SetData {
                path: r.read_string()?,
                data: r.read_buffer()?,
                version: r.read_i32()?,
            },
            SET_ACL => Txn::SetAcl {
                path: r.read_string()?,
                acl: r.read_vec_or_empty()?,
                aversion: r.read_i32()?,
            },
            CHECK => Txn::Check {
                path: r.read_string()?,
            },
            ERROR => Txn::Error { err: r.read_i32()? },
            MULTI => Txn::Multi(r.read_vec_or_empty()?),
            value => {
                return Err(DecodeError::InvalidValue {
                    what: "txn type",
                    value,
                })
            }
        })
    }
}

/// A txn with its zxid and time, the unit written to the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedTxn {
    /// Wall-clock time of the txn, ms since the epoch (becomes ctime/mtime).
    pub time: i64,
    /// The txn.
    pub txn: Txn,
}

impl Encode for LoggedTxn {
    fn encode(&self, w: &mut Vec<u8>) {
        put_i64(w, self.time);
        self.txn.encode(w);
    }
}

impl Decode for LoggedTxn {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(LoggedTxn {
            time: r.read_i64()?,
            txn: Txn::decode(r)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txns_round_trip() {
        let txn = LoggedTxn {
            time: 42,
            txn: Txn::Multi(vec![
                Txn::Create {
                    path: "/a".into(),
                    data: None,
                    acl: Acl::open_unsafe(),
                    owner: 7,
                    parent_cversion: 3,
                },
                Txn::SetData {
                    path: "/a".into(),
                    data: Some(vec![]),
                    version: 1,
                },
                Txn::Delete { path: "/a".into() },
                Txn::Check { path: "/".into() },
            ]),
        };
        assert_eq!(LoggedTxn::from_bytes(&txn.to_bytes()).unwrap(), txn);
    }
}
