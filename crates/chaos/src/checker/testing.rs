//! Histories built by hand for the checks' unit tests.

pub use crate::history::Action::*;
pub use crate::history::Kind::*;

use super::Rules;
use crate::history::{Action, Kind, Op};

pub const MUTEX: Rules = Rules {
    shared_limit: 1,
    counter: true,
};

pub fn op(client: u32, token: i64, kind: Kind, action: Action, value: i64) -> Op {
    Op {
        seq: 0,
        at_ns: 0,
        client,
        token,
        kind,
        action,
        value,
        accepted: true,
        key: 0,
    }
}

/// The exclusive holder `client` with `token` read `value` from the counter.
pub fn read(client: u32, token: i64, value: i64) -> Op {
    op(client, token, Exclusive, Read, value)
}

/// The exclusive holder `client` with `token` wrote `value` to the counter.
pub fn write(client: u32, token: i64, value: i64) -> Op {
    op(client, token, Exclusive, Write, value)
}

/// `op`, refused by the fence.
pub fn refused(op: Op) -> Op {
    Op {
        accepted: false,
        ..op
    }
}

pub fn numbered(mut ops: Vec<Op>) -> Vec<Op> {
    for (i, op) in ops.iter_mut().enumerate() {
        op.seq = i as u64;
        op.at_ns = (i as u64 + 1) * 1_000_000;
    }
    ops
}
