//! Seeded random request streams over a small name space, so requests collide often (NodeExists, NoNode,
//! BadVersion, NotEmpty, watches that fire) and every error path gets exercised.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::ops::{AclChoice, Op, ReadOp, Since, SubOp, WatchLists, P, USERS};

/// Session slots per stream.
pub const SLOTS: usize = 3;

const TOP: [&str; 3] = ["/a", "/b", "/c"];
const LEAF: [&str; 5] = ["x", "y", "s0000000000", "s0000000001", "s0000000002"];

/// `count` ops from `seed`.
pub fn stream(seed: u64, count: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ops = Vec::with_capacity(count);
    let mut filter = super::known::Filter;
    let mut detached = [false; SLOTS];
    // Bounded: a known divergence excludes only a small fraction of generated ops.
    for _ in 0..count * 10 {
        if ops.len() == count {
            break;
        }
        let op = op(&mut rng);
        let Some(op) = keep_detach_short(&mut rng, &mut detached, op) else {
            continue;
        };
        if let Some(op) = filter.admit(op) {
            ops.push(op);
        }
    }
    ops
}

/// Keeps a slot's detached spell short, so the other slots' changes it misses are few and the re-attach's
/// setWatches2 has something to report: an op on a detached slot becomes, one time in three, the slot's
/// re-attach, else it is dropped (`exec` would not send it anyway).
fn keep_detach_short(rng: &mut impl Rng, detached: &mut [bool; SLOTS], op: Op) -> Option<Op> {
    let s = op.slot();
    let op = match op {
        Op::Detach { .. } | Op::Reattach { .. } => op,
        _ if !detached[s] => op,
        _ if rng.gen_range(0..3) == 0 => reattach(rng, s),
        _ => return None,
    };
    detached[s] = matches!(op, Op::Detach { .. });
    Some(op)
}

/// A re-attach of slot `s`: mostly as a client does it (its last zxid, authentications replayed), with
/// 0–2 paths in each watch list.
fn reattach(rng: &mut impl Rng, s: usize) -> Op {
    Op::Reattach {
        s,
        since: if rng.gen_range(0..5) == 0 {
            Since::Origin
        } else {
            Since::LastSeen
        },
        reauth: rng.gen_range(0..4) != 0,
        watches: WatchLists {
            data: paths(rng),
            exist: paths(rng),
            child: paths(rng),
            persistent: paths(rng),
            recursive: paths(rng),
        },
    }
}

/// 0–2 paths, for a watch list.
fn paths(rng: &mut impl Rng) -> Vec<P> {
    (0..rng.gen_range(0..3)).map(|_| path(rng)).collect()
}

/// An addWatch mode: persistent or recursive, now and then an invalid one.
fn watch_mode(rng: &mut impl Rng) -> i32 {
    match rng.gen_range(0..20) {
        0 => 2,
        1 => -1,
        _ => rng.gen_range(0..2),
    }
}

/// A checkWatches/removeWatches watcher type: children, data or any, sometimes 3.9's persistent (4) and
/// persistent-recursive (5), now and then one no version knows.
fn watcher_type(rng: &mut impl Rng) -> i32 {
    match rng.gen_range(0..20) {
        0..=1 => 4,
        2..=3 => 5,
        4 => [0, 6][rng.gen_range(0..2)],
        _ => rng.gen_range(1..4),
    }
}

/// A node path: mostly valid names of depth 1–3; sometimes the root, `/zookeeper` nodes or invalid syntax.
fn path(rng: &mut impl Rng) -> P {
    match rng.gen_range(0..100) {
        0..=2 => P::Rel(String::new()),
        3 => P::Abs(["/zookeeper", "/zookeeper/quota", "/zookeeper/config"][rng.gen_range(0..3)].into()),
        4 => P::Rel(
            [
                "/a/",
                "//a",
                "/a/./x",
                "/a/../b",
                "/a\u{1}",
                "/a/\u{7f}x",
                "/\u{e000}",
                "/a//x",
            ][rng.gen_range(0..8)]
            .into(),
        ),
        5..=9 => P::Rel(format!("{}/k", TOP[rng.gen_range(0..3)])),
        _ => {
            let mut p = TOP[rng.gen_range(0..3)].to_string();
            // Mostly shallow: deep paths only exist once their parents do.
            let depth = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2][rng.gen_range(0..10)];
            for _ in 0..depth {
                p.push('/');
                p.push_str(LEAF[rng.gen_range(0..LEAF.len())]);
            }
            P::Rel(p)
        }
    }
}

/// A parent for a sequential create: `<path>/s` (the server appends the counter).
fn seq_path(rng: &mut impl Rng) -> P {
    match path(rng) {
        P::Rel(p) if !p.ends_with("/k") => P::Rel(format!("{p}/s")),
        other => other,
    }
}

fn data(rng: &mut impl Rng) -> Option<Vec<u8>> {
    match rng.gen_range(0..10) {
        0 => None,
        1 => Some(Vec::new()),
        _ => Some(format!("v{}", rng.gen_range(0..1000)).into_bytes()),
    }
}

fn version(rng: &mut impl Rng) -> i32 {
    if rng.gen_bool(0.5) {
        -1
    } else {
        rng.gen_range(0..3)
    }
}

fn acl(rng: &mut impl Rng) -> AclChoice {
    match rng.gen_range(0..40) {
        0..=2 => AclChoice::ReadOnly,
        3..=4 => AclChoice::NoDelete,
        5..=6 => AclChoice::Creator,
        7..=9 => AclChoice::Digest(
            rng.gen_range(0..USERS.len()),
            [31, 1, 15, 30][rng.gen_range(0..4)],
        ),
        10 => AclChoice::Ip,
        11 => AclChoice::BadScheme,
        12 => AclChoice::Empty,
        _ => AclChoice::Open,
    }
}

/// Create mode and path: containers only at leaves named `k` (they never get children here, so the
/// servers' periodic container sweeps, which run on their own clocks, never delete anything mid-stream).
fn create_target(rng: &mut impl Rng) -> (i32, i32, P) {
    let mode = match rng.gen_range(0..20) {
        0..=6 => 0,
        7..=10 => 1,
        11..=13 => 2,
        14..=16 => 3,
        17 => 5 + rng.gen_range(0..2),
        18 => rng.gen_range(7..9),
        _ => 0,
    };
    match mode {
        2 | 3 | 6 => (
            if mode == 6 {
                21
            } else {
                [1, 15][rng.gen_range(0..2)]
            },
            mode,
            seq_path(rng),
        ),
        5 => (21, 5, path(rng)),
        _ => {
            let p = path(rng);
            let container = matches!(&p, P::Rel(s) if s.ends_with("/k"));
            if container {
                (19, 4, p)
            } else {
                ([1, 15][rng.gen_range(0..2)], mode, p)
            }
        }
    }
}

fn sub_op(rng: &mut impl Rng) -> SubOp {
    match rng.gen_range(0..10) {
        0..=3 => {
            let (opcode, mode, path) = create_target(rng);
            // TTL creates are not allowed in a multi by our generator: their op differs in layout.
            let (opcode, mode) = if opcode == 21 { (1, 0) } else { (opcode, mode) };
            SubOp::Create {
                opcode,
                path,
                data: data(rng),
                mode,
            }
        }
        4..=5 => SubOp::Delete {
            path: path(rng),
            version: version(rng),
        },
        6..=7 => SubOp::SetData {
            path: path(rng),
            data: data(rng),
            version: version(rng),
        },
        _ => SubOp::Check {
            path: path(rng),
            version: version(rng),
        },
    }
}

fn op(rng: &mut impl Rng) -> Op {
    let s = rng.gen_range(0..SLOTS);
    match rng.gen_range(0..1020) {
        0..=259 => {
            let (opcode, mode, path) = create_target(rng);
            Op::Create {
                s,
                opcode,
                path,
                data: data(rng),
                acl: acl(rng),
                mode,
            }
        }
        260..=399 => Op::Delete {
            s,
            path: path(rng),
            version: version(rng),
        },
        400..=509 => Op::SetData {
            s,
            path: path(rng),
            data: data(rng),
            version: version(rng),
        },
        510..=719 => Op::Read {
            s,
            opcode: [3, 4, 8, 12][rng.gen_range(0..4)],
            path: path(rng),
            watch: rng.gen_bool(0.7),
        },
        720..=769 => Op::Multi {
            s,
            ops: (0..rng.gen_range(1..5)).map(|_| sub_op(rng)).collect(),
        },
        770..=799 => Op::Multi {
            s,
            ops: coherent_multi(rng),
        },
        800..=819 => Op::MultiRead {
            s,
            ops: (0..rng.gen_range(1..4))
                .map(|_| {
                    if rng.gen_bool(0.5) {
                        ReadOp::GetData(path(rng))
                    } else {
                        ReadOp::GetChildren(path(rng))
                    }
                })
                .collect(),
        },
        820..=849 => Op::SetAcl {
            s,
            path: path(rng),
            acl: acl(rng),
            version: version(rng),
        },
        850..=869 => Op::GetAcl { s, path: path(rng) },
        870..=889 => Op::AddWatch {
            s,
            path: path(rng),
            mode: watch_mode(rng),
        },
        890..=904 => Op::RemoveWatches {
            s,
            opcode: [17, 18][rng.gen_range(0..2)],
            path: path(rng),
            kind: watcher_type(rng),
        },
        905..=929 => Op::Auth {
            s,
            user: rng.gen_range(0..USERS.len()),
        },
        930..=939 => Op::WhoAmI { s },
        940..=954 => Op::GetEphemerals { s, prefix: path(rng) },
        955..=969 => Op::AllChildren { s, path: path(rng) },
        970..=979 => Op::Sync { s, path: path(rng) },
        980..=999 => Op::Close { s },
        1000..=1009 => Op::Detach { s },
        _ => reattach(rng, s),
    }
}

/// A multi that can succeed: create a node, then more ops on that same node (or its new child).
fn coherent_multi(rng: &mut impl Rng) -> Vec<SubOp> {
    let node = P::Rel(format!("{}/m{}", TOP[rng.gen_range(0..3)], rng.gen_range(0..3)));
    let mut ops = vec![SubOp::Create {
        opcode: [1, 15][rng.gen_range(0..2)],
        path: node.clone(),
        data: data(rng),
        mode: [0, 0, 1][rng.gen_range(0..3)],
    }];
    for _ in 0..rng.gen_range(1..4) {
        ops.push(match rng.gen_range(0..5) {
            0 => SubOp::SetData {
                path: node.clone(),
                data: data(rng),
                version: rng.gen_range(-1..2),
            },
            1 => SubOp::Check {
                path: node.clone(),
                version: rng.gen_range(-1..2),
            },
            2 => SubOp::Delete {
                path: node.clone(),
                version: rng.gen_range(-1..2),
            },
            3 => SubOp::Create {
                opcode: 15,
                path: match &node {
                    P::Rel(p) => P::Rel(format!("{p}/s")),
                    other => other.clone(),
                },
                data: None,
                mode: 2,
            },
            _ => sub_op(rng),
        });
    }
    ops
}
