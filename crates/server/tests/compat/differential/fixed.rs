//! The hand-written sequences of `differential_fixed_cases`: the divergences found (and fixed) so far, which
//! random streams reach only rarely (see `known`), and what persistent and persistent-recursive watches must
//! do exactly as ZooKeeper 3.8 does (issue 30.6), as data.

use super::ops::{AclChoice, Op, Since, SubOp, WatchLists, P};

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

/// An exists without a watch: the session sees the current zxid (a later re-attach's relative zxid).
fn look(s: usize, p: &str) -> Op {
    Op::Read {
        s,
        opcode: 3,
        path: rel(p),
        watch: false,
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

/// A checkWatches (`remove == false`) or removeWatches of watcher type `kind`.
fn remove(s: usize, remove: bool, p: &str, kind: i32) -> Op {
    Op::RemoveWatches {
        s,
        opcode: if remove { 18 } else { 17 },
        path: rel(p),
        kind,
    }
}

/// A multi of `ops` by session `s`.
fn multi(s: usize, ops: Vec<SubOp>) -> Op {
    Op::Multi { s, ops }
}

/// A create inside a multi (plain create, data "m").
fn sub_create(p: &str, mode: i32) -> SubOp {
    SubOp::Create {
        opcode: 1,
        path: rel(p),
        data: Some(b"m".to_vec()),
        mode,
    }
}

/// A setData inside a multi, any version.
fn sub_set(p: &str) -> SubOp {
    SubOp::SetData {
        path: rel(p),
        data: Some(b"n".to_vec()),
        version: -1,
    }
}

/// A delete inside a multi, any version.
fn sub_delete(p: &str) -> SubOp {
    SubOp::Delete {
        path: rel(p),
        version: -1,
    }
}

/// Paths relative to the stream's root.
fn rels(ps: &[&str]) -> Vec<P> {
    ps.iter().map(|p| rel(p)).collect()
}

/// A re-attach of session `s` as a client does it (its last zxid, authentications replayed).
fn reattach(s: usize, watches: WatchLists) -> Op {
    Op::Reattach {
        s,
        since: Since::LastSeen,
        reauth: true,
        watches,
    }
}

/// The cases: a name and the ops, which must trace the same on both servers.
pub fn cases() -> Vec<(&'static str, Vec<Op>)> {
    let mut cases = earlier_divergences();
    cases.extend(persistent_watches());
    cases
}

/// The divergences found (and fixed) so far.
fn earlier_divergences() -> Vec<(&'static str, Vec<Op>)> {
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

/// Persistent and persistent-recursive watches (issue 30.6): their events' types and paths, their order
/// beside one-shot watches' events, re-registration by setWatches2 after a reconnect, and removeWatches.
fn persistent_watches() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        (
            "persistent and recursive event types and paths",
            event_types_and_paths(),
        ),
        (
            "one-shot and persistent events of one connection, in order",
            one_shot_beside_persistent(),
        ),
        (
            "setWatches2: persistent watches miss what changed meanwhile",
            set_watches2_missed(),
        ),
        (
            "setWatches2: one path in a one-shot list and a persistent list",
            set_watches2_both_lists(),
        ),
        (
            "setWatches2 relative to the stream's origin",
            set_watches2_from_origin(),
        ),
        (
            "re-attach without the authentications: READ is the new connection's",
            reattach_without_auth(),
        ),
        (
            "removeWatches and checkWatches of persistent kinds",
            remove_persistent(),
        ),
    ]
}

/// Every event type a persistent watch (S0 on /a) and recursive watches (S1 on /a, S2 on the server's root
/// "/", so paths well outside the stream's root too) report, with the path of the node that changed —
/// never the watch's own path (ClickHouse Keeper once sent that): a plain and a sequential child, an
/// ephemeral grandchild deleted with its session, a multi, a sibling `/ab` that shares the prefix but is no
/// descendant, and the watched node deleted and created again.
fn event_types_and_paths() -> Vec<Op> {
    vec![
        add(0, "/a", 0),
        add(1, "/a", 1),
        Op::AddWatch {
            s: 2,
            path: P::Abs("/".into()),
            mode: 1,
        },
        create(1, "/a", AclChoice::Open, 0),
        set(1, "/a"),
        create(1, "/a/b", AclChoice::Open, 0),
        create(0, "/a/b/c", AclChoice::Open, 1),
        set(1, "/a/b/c"),
        create(1, "/a/s", AclChoice::Open, 2),
        create(1, "/ab", AclChoice::Open, 0),
        set(1, "/ab"),
        multi(
            1,
            vec![
                sub_create("/a/m", 0),
                sub_set("/a/b"),
                sub_create("/a/m/n", 0),
                sub_delete("/a/m/n"),
            ],
        ),
        Op::Close { s: 0 },
        delete(1, "/a/m"),
        delete(1, "/a/s0000000001"),
        delete(1, "/a/b"),
        delete(1, "/a"),
        create(1, "/a", AclChoice::Open, 0),
        set(2, ""),
    ]
}

/// One connection (S0) with a recursive watch on /o, a one-shot exists watch on /o/x below it, a persistent
/// watch on /o/x/y and a one-shot child watch on the root; another (S2) with a persistent watch on /o and a
/// one-shot one on /o/x. A multi then fires them all: each connection gets one notification per event, in
/// the multi's order, whichever of its watches matched. The one-shot watches are consumed even where a
/// persistent one matched too; the persistent ones keep reporting.
fn one_shot_beside_persistent() -> Vec<Op> {
    vec![
        create(1, "/o", AclChoice::Open, 0),
        add(0, "/o", 1),
        exists(0, "/o/x"),
        add(0, "/o/x/y", 0),
        children(0, ""),
        exists(0, "/p"),
        add(2, "/o", 0),
        exists(2, "/o/x"),
        multi(
            1,
            vec![
                sub_create("/o/x", 0),
                sub_create("/o/x/y", 0),
                sub_set("/o/x"),
                sub_create("/p", 0),
                sub_create("/o/x/y/z", 0),
                sub_delete("/o/x/y/z"),
                sub_set("/o"),
            ],
        ),
        remove(0, false, "/o/x", 2),
        remove(0, false, "", 1),
        set(1, "/o/x"),
        exists(0, "/o/x"),
        multi(1, vec![sub_set("/o/x"), sub_delete("/o/x/y"), sub_delete("/o/x")]),
        set(1, "/o"),
    ]
}

/// S0 detached while S1 changes what its persistent (/w, /w/gone) and recursive (/w/c) watches cover, then
/// re-attached with setWatches2: ZooKeeper 3.8 re-registers persistent watches without reporting what they
/// missed (ZOOKEEPER-4698), unlike the exist watch on /w/new in the same request. Later changes are reported.
fn set_watches2_missed() -> Vec<Op> {
    vec![
        create(1, "/w", AclChoice::Open, 0),
        create(1, "/w/c", AclChoice::Open, 0),
        create(1, "/w/gone", AclChoice::Open, 0),
        add(0, "/w", 0),
        add(0, "/w/c", 1),
        add(0, "/w/gone", 0),
        exists(0, "/w/new"),
        Op::Detach { s: 0 },
        set(1, "/w"),
        create(1, "/w/c/d", AclChoice::Open, 0),
        create(1, "/w/x", AclChoice::Open, 0),
        delete(1, "/w/gone"),
        create(1, "/w/new", AclChoice::Open, 0),
        // Not sent: the slot is detached.
        exists(0, "/w"),
        reattach(
            0,
            WatchLists {
                exist: rels(&["/w/new"]),
                persistent: rels(&["/w", "/w/gone"]),
                recursive: rels(&["/w/c"]),
                ..WatchLists::default()
            },
        ),
        set(1, "/w"),
        create(1, "/w/c/d/e", AclChoice::Open, 0),
        create(1, "/w/gone", AclChoice::Open, 0),
        delete(1, "/w/x"),
    ]
}

/// One path in a one-shot list and in the persistent list of one setWatches2: ZooKeeper handles the one-shot
/// lists first (a missed change is reported, else a one-shot watch is set), then the persistent list, whose
/// mode replaces the one-shot one. /v changed meanwhile, /u did not: both end persistent. /q, in the
/// persistent and the recursive list, ends recursive (the list handled last).
fn set_watches2_both_lists() -> Vec<Op> {
    vec![
        create(1, "/v", AclChoice::Open, 0),
        create(1, "/u", AclChoice::Open, 0),
        look(0, "/u"),
        Op::Detach { s: 0 },
        set(1, "/v"),
        reattach(
            0,
            WatchLists {
                data: rels(&["/v", "/u"]),
                child: rels(&["/u"]),
                persistent: rels(&["/v", "/u", "/q"]),
                recursive: rels(&["/q"]),
                ..WatchLists::default()
            },
        ),
        create(1, "/q", AclChoice::Open, 0),
        create(1, "/q/c", AclChoice::Open, 0),
        set(1, "/v"),
        set(1, "/v"),
        set(1, "/u"),
        set(1, "/u"),
        create(1, "/u/k", AclChoice::Open, 0),
        create(1, "/u/l", AclChoice::Open, 0),
        remove(0, true, "/u", 3),
        set(1, "/u"),
    ]
}

/// A reconnect (no detach first) whose setWatches2 says it saw nothing of the stream: every one-shot watch
/// whose node changed since fires at once, the recursive watch on the same path as a fired child watch is
/// still set, and a missing node's exist watch waits.
fn set_watches2_from_origin() -> Vec<Op> {
    vec![
        create(1, "/t", AclChoice::Open, 0),
        create(1, "/t/a", AclChoice::Open, 0),
        Op::Reattach {
            s: 0,
            since: Since::Origin,
            reauth: true,
            watches: WatchLists {
                data: rels(&["/t/a", "/t/gone"]),
                exist: rels(&["/t/none", "/t"]),
                child: rels(&["/t"]),
                recursive: rels(&["/t"]),
                ..WatchLists::default()
            },
        },
        create(1, "/t/none", AclChoice::Open, 0),
        create(1, "/t/a/b", AclChoice::Open, 0),
        set(1, "/t"),
    ]
}

/// Identities belong to a connection: a re-attach without authenticating again gets no notification about a
/// node only alice may read (a READable child's still comes), until it authenticates again; a re-attach
/// that replays the authentication keeps getting them.
fn reattach_without_auth() -> Vec<Op> {
    vec![
        Op::Auth { s: 0, user: 0 },
        Op::Auth { s: 1, user: 0 },
        create(0, "/s", AclChoice::Creator, 0),
        add(0, "/s", 1),
        set(1, "/s"),
        Op::Reattach {
            s: 0,
            since: Since::LastSeen,
            reauth: false,
            watches: WatchLists {
                recursive: rels(&["/s"]),
                ..WatchLists::default()
            },
        },
        set(1, "/s"),
        create(1, "/s/k", AclChoice::Open, 0),
        Op::Auth { s: 0, user: 0 },
        set(1, "/s"),
        Op::Detach { s: 0 },
        reattach(
            0,
            WatchLists {
                recursive: rels(&["/s"]),
                ..WatchLists::default()
            },
        ),
        set(1, "/s"),
    ]
}

/// removeWatches of a persistent and a recursive watch by table: ZooKeeper 3.8 keeps them in both tables
/// and removes per table (data: 2, children: 1, any: 3), so a half keeps reporting its own events; NoWatcher
/// when there is none (another connection's does not count for a removal); 3.9's types 4 and 5, and invalid
/// addWatch modes, are MarshallingError; a recursive watch is not a watch on its descendants' paths.
fn remove_persistent() -> Vec<Op> {
    vec![
        create(1, "/r", AclChoice::Open, 0),
        add(0, "/r", 0),
        remove(0, true, "/r", 2),
        set(1, "/r"),
        create(1, "/r/x", AclChoice::Open, 0),
        remove(0, false, "/r", 2),
        remove(0, false, "/r", 1),
        remove(1, true, "/r", 1),
        remove(0, true, "/r", 1),
        remove(0, true, "/r", 3),
        remove(0, false, "/r", 3),
        create(1, "/r/x2", AclChoice::Open, 0),
        add(0, "/r", 1),
        remove(0, true, "/r", 4),
        remove(0, true, "/r", 5),
        remove(0, false, "/r", 4),
        remove(0, false, "/r", 5),
        remove(0, true, "/r", 0),
        remove(0, true, "/r/x", 3),
        remove(0, false, "/r/x", 3),
        remove(0, true, "/r", 2),
        create(1, "/r/y", AclChoice::Open, 0),
        set(1, "/r/x"),
        delete(1, "/r/x"),
        remove(0, true, "/r", 3),
        delete(1, "/r/y"),
        add(0, "/r", 2),
        add(0, "/r", -1),
        remove(0, true, "/r", 3),
        add(1, "/r", 1),
        remove(1, true, "/r", 1),
        remove(1, true, "/r", 1),
        remove(1, false, "/r", 3),
        delete(0, "/r/x2"),
    ]
}
