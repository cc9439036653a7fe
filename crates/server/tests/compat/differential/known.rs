//! Known divergences of the embedded server from ZooKeeper 3.8, reported to the server's author. Ops that
//! would trigger one are left out of generated streams so the rest of the comparison keeps running; each
//! entry goes away once the server matches. `ZKLOCK_DIFF_ALL=1` keeps them in (to check for a fix).

use std::collections::HashSet;

use super::ops::{AclChoice, Op, SubOp, P};

/// Whether `op` would hit a known divergence.
pub fn excluded(op: &Op) -> bool {
    if std::env::var("ZKLOCK_DIFF_ALL").as_deref() == Ok("1") {
        return false;
    }
    match op {
        // ZooKeeper's delete only checks the path for a last '/' and NUL: "/r//a" answers NoNode (its
        // parent "/r/" does not exist); the embedded server answers BadArguments.
        Op::Delete { path, .. } => malformed(path),
        // After exists(watch) on a missing node, checkWatches/removeWatches(any) for that path: ZooKeeper
        // finds the exist watch (err 0), the embedded server answers NoWatcher (-121).
        Op::RemoveWatches { .. } => true,
        Op::Multi { ops, .. } => ops
            .iter()
            .any(|sub| matches!(sub, SubOp::Delete { path, .. } if malformed(path))),
        _ => false,
    }
}

fn malformed(path: &P) -> bool {
    match path {
        P::Rel(s) => {
            s.ends_with('/')
                || s.contains("//")
                || s.split('/').any(|c| c == "." || c == "..")
                || s.chars()
                    .any(|c| c.is_control() || ('\u{e000}'..='\u{f8ff}').contains(&c))
        }
        P::Abs(_) => false,
    }
}

/// The embedded server notifies a closing session of its own ephemerals' deletion (through its watches,
/// before the close reply); ZooKeeper drops the closing session's watches first and sends it nothing.
/// While this stands, notifications to the closing session during its close are left out of traces.
pub fn ignore_own_close_events() -> bool {
    std::env::var("ZKLOCK_DIFF_ALL").as_deref() != Ok("1")
}

/// Stateful exclusions over a stream (a subsequence of an admitted stream stays admissible, so shrinking
/// keeps them).
#[derive(Default)]
pub struct Filter {
    /// (slot, path) pairs that got an addWatch.
    persistent: HashSet<(usize, P)>,
    /// (slot, path) pairs that got a standard watch (exists/getData/getChildren with watch).
    standard: HashSet<(usize, P)>,
}

impl Filter {
    /// The op to use instead of `op` (`None`: skip it).
    pub fn admit(&mut self, op: Op) -> Option<Op> {
        if excluded(&op) {
            return None;
        }
        if std::env::var("ZKLOCK_DIFF_ALL").as_deref() == Ok("1") {
            return Some(op);
        }
        match op {
            // ZooKeeper 3.8.0 keeps one watch mode per (connection, path): a standard watch set after an
            // addWatch on the same path replaces the persistent one (fires once, then is gone). The
            // embedded server keeps both.
            Op::Read {
                s,
                opcode,
                path,
                watch: true,
            } if self.persistent.contains(&(s, path.clone())) => Some(Op::Read {
                s,
                opcode,
                path,
                watch: false,
            }),
            // Likewise a second addWatch on the same (connection, path) replaces the first one's mode in
            // ZooKeeper 3.8.0 (recursive becomes persistent or back); the embedded server keeps both.
            // And an addWatch after a standard watch on the same path turns that one into the new mode
            // (a child watch then never delivers children-changed under a recursive mode).
            Op::AddWatch { s, ref path, .. } => (!self.standard.contains(&(s, path.clone()))
                && self.persistent.insert((s, path.clone())))
            .then_some(op),
            Op::Read {
                s,
                ref path,
                watch: true,
                ..
            } => {
                self.standard.insert((s, path.clone()));
                Some(op)
            }
            // Debian's ZooKeeper 3.8.0-11+deb12u2 notifies a watcher only if its session has READ on the
            // node (checked with kazoo: exists(watch) on a node created with auth:"" by another user, then
            // a delete: no NodeDeleted; the same for persistent-recursive watches on descendants), most
            // likely a backported security fix; the embedded server notifies regardless. auth ACLs are the
            // only ones generated here without READ for every session.
            Op::Create {
                acl: AclChoice::Creator,
                ..
            }
            | Op::SetAcl {
                acl: AclChoice::Creator,
                ..
            } => None,
            op => Some(op),
        }
    }
}
