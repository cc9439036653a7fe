//! Building histories by hand for the checker's tests (shared by `register.rs` and `linearizability_long.rs`, each
//! of which compiles `src/linearizability.rs` in as `crate::linearizability`).

use crate::linearizability::{Call, Operation, Outcome, Step};

/// An operation by `p` over `[call, ret]`.
pub fn op(p: &str, call: u64, ret: u64, c: Call, outcome: Outcome) -> Operation {
    Operation {
        process: p.to_owned(),
        call_ns: call,
        ret_ns: ret,
        call: c,
        outcome,
    }
}

/// A read of `key` by `p` that returned `(value, version)`.
pub fn read(p: &str, call: u64, ret: u64, key: u32, value: i64, version: i32) -> Operation {
    op(p, call, ret, Call::Read { key }, Outcome::Read { value, version })
}

/// An unconditional write of `value` to `key` by `p`.
pub fn write(p: &str, call: u64, ret: u64, key: u32, value: i64, outcome: Outcome) -> Operation {
    let step = Step::Set {
        key,
        value,
        expected: None,
    };
    op(p, call, ret, Call::Txn(vec![step]), outcome)
}
