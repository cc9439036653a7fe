//! The requests of a differential stream, as plain data: printable (for a failing sequence) and encodable.

use std::fmt;

use base64::Engine as _;
use zklock_codec::jute::{put_bool, put_buffer, put_i32, put_i64, put_str, Encode as _};
use zklock_codec::SetWatches2;

/// Digest users a stream may authenticate as (and name in ACLs).
pub const USERS: [&str; 2] = ["alice", "bob"];

/// `user:base64(sha1("user:pw-user"))`, ZooKeeper's digest id of `user` with password `pw-<user>`.
pub fn digest_id(user: &str) -> String {
    let cred = format!("{user}:pw-{user}");
    let hash = sha1_smol::Sha1::from(cred.as_bytes()).digest().bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// The body of a digest auth as `USERS[user]`, password `pw-<user>`.
pub fn auth_body(user: usize) -> Vec<u8> {
    let mut w = Vec::new();
    put_i32(&mut w, 0);
    put_str(&mut w, "digest");
    let cred = format!("{0}:pw-{0}", USERS[user]);
    put_buffer(&mut w, Some(cred.as_bytes()));
    w
}

/// Which ACL a create/setACL carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AclChoice {
    /// world:anyone, all perms.
    Open,
    /// world:anyone, READ only.
    ReadOnly,
    /// world:anyone, everything but DELETE (children cannot be deleted).
    NoDelete,
    /// auth:"" all perms (needs an authenticated session, else InvalidACL).
    Creator,
    /// digest:<user> with these perms, plus world READ.
    Digest(usize, i32),
    /// ip:127.0.0.1 all.
    Ip,
    /// An unknown scheme (InvalidACL).
    BadScheme,
    /// No ACL entries at all (InvalidACL).
    Empty,
}

impl AclChoice {
    fn encode(self, w: &mut Vec<u8>) {
        let entries: Vec<(i32, String, String)> = match self {
            AclChoice::Open => vec![(31, "world".into(), "anyone".into())],
            AclChoice::ReadOnly => vec![(1, "world".into(), "anyone".into())],
            AclChoice::NoDelete => vec![(23, "world".into(), "anyone".into())],
            AclChoice::Creator => vec![(31, "auth".into(), String::new())],
            AclChoice::Digest(u, perms) => vec![
                (perms, "digest".into(), digest_id(USERS[u])),
                (1, "world".into(), "anyone".into()),
            ],
            AclChoice::Ip => vec![(31, "ip".into(), "127.0.0.1".into())],
            AclChoice::BadScheme => vec![(31, "nosuchscheme".into(), "x".into())],
            AclChoice::Empty => vec![],
        };
        put_i32(w, entries.len() as i32);
        for (perms, scheme, id) in entries {
            put_i32(w, perms);
            put_str(w, &scheme);
            put_str(w, &id);
        }
    }
}

/// A path in a stream: relative to the stream's root, or absolute (outside it, e.g. `/zookeeper`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum P {
    /// `root + s` (`s` empty = the root itself).
    Rel(String),
    /// Exactly `s`.
    Abs(String),
}

impl P {
    /// The path on the wire.
    pub fn resolve(&self, root: &str) -> String {
        match self {
            P::Rel(s) => format!("{root}{s}"),
            P::Abs(s) => s.clone(),
        }
    }
}

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            P::Rel(s) if s.is_empty() => write!(f, "R"),
            P::Rel(s) => write!(f, "R{s:?}"),
            P::Abs(s) => write!(f, "{s:?}"),
        }
    }
}

/// One write inside a multi.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubOp {
    /// create (opcode 1, 15 or 19 inside the multi).
    Create {
        /// Opcode used for the op.
        opcode: i32,
        /// Path.
        path: P,
        /// Data.
        data: Option<Vec<u8>>,
        /// Flags (create mode).
        mode: i32,
    },
    /// delete.
    Delete {
        /// Path.
        path: P,
        /// Expected version.
        version: i32,
    },
    /// setData.
    SetData {
        /// Path.
        path: P,
        /// Data.
        data: Option<Vec<u8>>,
        /// Expected version.
        version: i32,
    },
    /// check version.
    Check {
        /// Path.
        path: P,
        /// Expected version.
        version: i32,
    },
}

/// One read inside a multiRead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOp {
    /// getData.
    GetData(P),
    /// getChildren.
    GetChildren(P),
}

/// The zxid a re-attaching session's setWatches2 says it has seen: events of changes after it are "missed".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// The zxid of the slot's last reply, as a client sends it (Java's `lastZxid`).
    LastSeen,
    /// The zxid the stream started at: everything the stream did counts as missed.
    Origin,
}

/// The watch lists of a setWatches2 (opcode 105), as a client re-registers its watches after a reconnect.
/// They need not be watches the slot had: the server takes any list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchLists {
    /// getData watches.
    pub data: Vec<P>,
    /// exists watches.
    pub exist: Vec<P>,
    /// getChildren watches.
    pub child: Vec<P>,
    /// Persistent watches (addWatch mode 0).
    pub persistent: Vec<P>,
    /// Persistent-recursive watches (addWatch mode 1).
    pub recursive: Vec<P>,
}

impl WatchLists {
    /// The setWatches2 body: the lists' paths under `root`, with `relative_zxid`.
    pub fn encode(&self, root: &str, relative_zxid: i64) -> Vec<u8> {
        let paths = |ps: &[P]| ps.iter().map(|p| p.resolve(root)).collect();
        SetWatches2 {
            relative_zxid,
            data_watches: paths(&self.data),
            exist_watches: paths(&self.exist),
            child_watches: paths(&self.child),
            persistent_watches: paths(&self.persistent),
            persistent_recursive_watches: paths(&self.recursive),
        }
        .to_bytes()
    }
}

/// One step of a stream on session slot `s`: a request, or a connection event (`Detach`, `Reattach`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// create / create2 / createContainer / createTTL.
    Create {
        /// Session slot.
        s: usize,
        /// 1, 15, 19 or 21.
        opcode: i32,
        /// Path.
        path: P,
        /// Data.
        data: Option<Vec<u8>>,
        /// ACL.
        acl: AclChoice,
        /// Create mode flags.
        mode: i32,
    },
    /// delete.
    Delete {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
        /// Expected version.
        version: i32,
    },
    /// setData.
    SetData {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
        /// Data.
        data: Option<Vec<u8>>,
        /// Expected version.
        version: i32,
    },
    /// exists / getData / getChildren / getChildren2 (opcode 3, 4, 8, 12), optionally watching.
    Read {
        /// Session slot.
        s: usize,
        /// Opcode.
        opcode: i32,
        /// Path.
        path: P,
        /// Leave a watch.
        watch: bool,
    },
    /// getACL.
    GetAcl {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
    },
    /// setACL.
    SetAcl {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
        /// ACL.
        acl: AclChoice,
        /// Expected aversion.
        version: i32,
    },
    /// sync.
    Sync {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
    },
    /// multi.
    Multi {
        /// Session slot.
        s: usize,
        /// The writes.
        ops: Vec<SubOp>,
    },
    /// multiRead.
    MultiRead {
        /// Session slot.
        s: usize,
        /// The reads.
        ops: Vec<ReadOp>,
    },
    /// addWatch (mode 0 persistent, 1 persistent-recursive; any other is invalid).
    AddWatch {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
        /// Mode.
        mode: i32,
    },
    /// checkWatches (17) or removeWatches (18) with watcher type 1 children, 2 data, 3 any (4 persistent and
    /// 5 persistent-recursive exist only from ZooKeeper 3.9 on; 3.8 refuses them, as any other).
    RemoveWatches {
        /// Session slot.
        s: usize,
        /// 17 or 18.
        opcode: i32,
        /// Path.
        path: P,
        /// Watcher type.
        kind: i32,
    },
    /// digest auth as `USERS[user]`.
    Auth {
        /// Session slot.
        s: usize,
        /// Index into [`USERS`].
        user: usize,
    },
    /// whoAmI.
    WhoAmI {
        /// Session slot.
        s: usize,
    },
    /// getEphemerals under a prefix.
    GetEphemerals {
        /// Session slot.
        s: usize,
        /// Prefix path.
        prefix: P,
    },
    /// getAllChildrenNumber.
    AllChildren {
        /// Session slot.
        s: usize,
        /// Path.
        path: P,
    },
    /// closeSession, then the slot gets a fresh session.
    Close {
        /// Session slot.
        s: usize,
    },
    /// The slot's connection is dropped and its session kept (a client losing its connection): the
    /// connection's watches and identities go with it. Requests on a detached slot are not sent.
    Detach {
        /// Session slot.
        s: usize,
    },
    /// The slot's session is re-attached on a new connection (its current one, if any, dropped first), as a
    /// client reconnects: it authenticates again as before if `reauth`, then re-registers `watches` with
    /// setWatches2 relative to `since`.
    Reattach {
        /// Session slot.
        s: usize,
        /// The relative zxid sent.
        since: Since,
        /// Replay the connection's digest authentications first (a client does; a raw one may not).
        reauth: bool,
        /// The watches re-registered.
        watches: WatchLists,
    },
}

impl Op {
    /// The session slot the op runs on.
    pub fn slot(&self) -> usize {
        match self {
            Op::Create { s, .. }
            | Op::Delete { s, .. }
            | Op::SetData { s, .. }
            | Op::Read { s, .. }
            | Op::GetAcl { s, .. }
            | Op::SetAcl { s, .. }
            | Op::Sync { s, .. }
            | Op::Multi { s, .. }
            | Op::MultiRead { s, .. }
            | Op::AddWatch { s, .. }
            | Op::RemoveWatches { s, .. }
            | Op::Auth { s, .. }
            | Op::WhoAmI { s }
            | Op::GetEphemerals { s, .. }
            | Op::AllChildren { s, .. }
            | Op::Close { s }
            | Op::Detach { s }
            | Op::Reattach { s, .. } => *s,
        }
    }

    /// `(opcode, body)` of the request, paths resolved under `root`; `None` for the connection events
    /// (`Detach`, `Reattach`), which `exec` carries out itself.
    pub fn encode(&self, root: &str) -> Option<(i32, Vec<u8>)> {
        let mut w = Vec::new();
        let op = match self {
            Op::Create {
                opcode,
                path,
                data,
                acl,
                mode,
                ..
            } => {
                put_str(&mut w, &path.resolve(root));
                put_buffer(&mut w, data.as_deref());
                acl.encode(&mut w);
                put_i32(&mut w, *mode);
                if *opcode == 21 {
                    put_i64(&mut w, 60_000);
                }
                *opcode
            }
            Op::Delete { path, version, .. } => {
                put_str(&mut w, &path.resolve(root));
                put_i32(&mut w, *version);
                2
            }
            Op::SetData {
                path, data, version, ..
            } => {
                put_str(&mut w, &path.resolve(root));
                put_buffer(&mut w, data.as_deref());
                put_i32(&mut w, *version);
                5
            }
            Op::Read {
                opcode, path, watch, ..
            } => {
                put_str(&mut w, &path.resolve(root));
                put_bool(&mut w, *watch);
                *opcode
            }
            Op::GetAcl { path, .. } => {
                put_str(&mut w, &path.resolve(root));
                6
            }
            Op::SetAcl {
                path, acl, version, ..
            } => {
                put_str(&mut w, &path.resolve(root));
                acl.encode(&mut w);
                put_i32(&mut w, *version);
                7
            }
            Op::Sync { path, .. } => {
                put_str(&mut w, &path.resolve(root));
                9
            }
            Op::Multi { ops, .. } => {
                for sub in ops {
                    encode_sub(&mut w, sub, root);
                }
                put_done(&mut w);
                14
            }
            Op::MultiRead { ops, .. } => {
                for read in ops {
                    let (op, path) = match read {
                        ReadOp::GetData(p) => (4, p),
                        ReadOp::GetChildren(p) => (8, p),
                    };
                    put_header(&mut w, op);
                    put_str(&mut w, &path.resolve(root));
                    put_bool(&mut w, false);
                }
                put_done(&mut w);
                22
            }
            Op::AddWatch { path, mode, .. } => {
                put_str(&mut w, &path.resolve(root));
                put_i32(&mut w, *mode);
                106
            }
            Op::RemoveWatches {
                opcode, path, kind, ..
            } => {
                put_str(&mut w, &path.resolve(root));
                put_i32(&mut w, *kind);
                *opcode
            }
            Op::Auth { user, .. } => {
                w = auth_body(*user);
                100
            }
            Op::WhoAmI { .. } => 107,
            Op::GetEphemerals { prefix, .. } => {
                put_str(&mut w, &prefix.resolve(root));
                103
            }
            Op::AllChildren { path, .. } => {
                put_str(&mut w, &path.resolve(root));
                104
            }
            Op::Close { .. } => -11,
            Op::Detach { .. } | Op::Reattach { .. } => return None,
        };
        Some((op, w))
    }
}

fn put_header(w: &mut Vec<u8>, op: i32) {
    put_i32(w, op);
    put_bool(w, false);
    put_i32(w, -1);
}

fn put_done(w: &mut Vec<u8>) {
    put_i32(w, -1);
    put_bool(w, true);
    put_i32(w, -1);
}

fn encode_sub(w: &mut Vec<u8>, sub: &SubOp, root: &str) {
    match sub {
        SubOp::Create {
            opcode,
            path,
            data,
            mode,
        } => {
            put_header(w, *opcode);
            put_str(w, &path.resolve(root));
            put_buffer(w, data.as_deref());
            AclChoice::Open.encode(w);
            put_i32(w, *mode);
        }
        SubOp::Delete { path, version } => {
            put_header(w, 2);
            put_str(w, &path.resolve(root));
            put_i32(w, *version);
        }
        SubOp::SetData { path, data, version } => {
            put_header(w, 5);
            put_str(w, &path.resolve(root));
            put_buffer(w, data.as_deref());
            put_i32(w, *version);
        }
        SubOp::Check { path, version } => {
            put_header(w, 13);
            put_str(w, &path.resolve(root));
            put_i32(w, *version);
        }
    }
}
