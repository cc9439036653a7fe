//! The hand-written sequences of `differential_fixed_cases`: the divergences found (and fixed) so far, which
//! random streams reach only rarely (see `known`), as data.

use super::ops::{AclChoice, Op, P};

/// A path relative to the stream's root.
fn rel(s: &str) -> P {
    P::Rel(s.to_string())
}

/// A create (opcode 15, create2) by session `s`, with data "d".
fn create(s: usize, p: &str, acl: AclChoice, mode: i32) -> Op {
    Op::Create {
        s,
        opcode: 15,
        path: rel(p),
        data: Some(b"d".to_vec()),
        acl,
        mode,
    }
}

/// A setData to "e", any version.
fn set(s: usize, p: &str) -> Op {
    Op::SetData {
        s,
        path: rel(p),
        data: Some(b"e".to_vec()),
        version: -1,
    }
}

/// A delete, any version.
fn delete(s: usize, p: &str) -> Op {
    Op::Delete {
        s,
        path: rel(p),
        version: -1,
    }
}

/// A read with `opcode` that sets a watch.
fn watching(s: usize, opcode: i32, p: &str) -> Op {
    Op::Read {
        s,
        opcode,
        path: rel(p),
        watch: true,
    }
}

/// An exists that sets a watch.
fn exists(s: usize, p: &str) -> Op {
    watching(s, 3, p)
}

/// A getChildren that sets a watch.
fn children(s: usize, p: &str) -> Op {
    watching(s, 8, p)
}

/// An addWatch in `mode`.
fn add(s: usize, p: &str, mode: i32) -> Op {
    Op::AddWatch {
        s,
        path: rel(p),
        mode,
    }
}

/// The cases: a name and the ops, which must trace the same on both servers.
pub fn cases() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        (
            "creator ACL of a session with two users, in ZooKeeper's set order",
            vec![
                Op::Auth { s: 0, user: 0 },
                Op::Auth { s: 0, user: 1 },
                create(1, "/c", AclChoice::Open, 0),
                create(0, "/c/s", AclChoice::Creator, 3),
                Op::Auth { s: 1, user: 0 },
                Op::WhoAmI { s: 0 },
                Op::GetAcl {
                    s: 1,
                    path: rel("/c/s0000000000"),
                },
            ],
        ),
        (
            "notifications need READ",
            vec![
                Op::Auth { s: 0, user: 0 },
                create(0, "/a", AclChoice::Creator, 0),
                exists(1, "/a"),
                add(2, "", 1),
                set(0, "/a"),
                create(0, "/a/x", AclChoice::Open, 0),
                delete(0, "/a/x"),
                delete(0, "/a"),
            ],
        ),
        (
            "malformed delete paths",
            vec![
                create(0, "/a", AclChoice::Open, 0),
                delete(0, "//a"),
                delete(0, "/a/"),
                delete(0, "/a/./x"),
                delete(0, "/a/\u{1}"),
                delete(0, "/"),
            ],
        ),
        (
            "checkWatches any",
            vec![
                exists(0, "/m"),
                Op::RemoveWatches {
                    s: 1,
                    opcode: 17,
                    path: rel("/m"),
                    kind: 3,
                },
                Op::RemoveWatches {
                    s: 0,
                    opcode: 18,
                    path: rel("/m"),
                    kind: 3,
                },
            ],
        ),
        (
            "one watch mode per connection and path",
            vec![
                add(0, "/p", 0),
                exists(0, "/p"),
                create(1, "/p", AclChoice::Open, 0),
                set(1, "/p"),
                add(0, "/q", 1),
                add(0, "/q", 0),
                create(1, "/q", AclChoice::Open, 0),
                create(1, "/q/x", AclChoice::Open, 0),
                children(0, "/p"),
                add(0, "/p", 1),
                create(1, "/p/x", AclChoice::Open, 0),
                add(0, "", 1),
                exists(0, ""),
                set(1, "/p"),
            ],
        ),
        (
            "close with persistent watches",
            vec![
                add(0, "/c", 0),
                children(0, "/d"),
                create(0, "/c", AclChoice::Open, 0),
                create(0, "/c/x", AclChoice::Open, 1),
                Op::Close { s: 0 },
            ],
        ),
    ]
}
