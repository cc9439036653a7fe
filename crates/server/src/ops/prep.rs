//! Validation of writes against the tree (plus the pending effects of earlier ops of the same multi),
//! producing [`Txn`]s. The checks and their order follow ZooKeeper's `PrepRequestProcessor`, because the
//! first failing check decides the error code a client sees.

use std::collections::HashMap;
use zklock_codec::{perms, Acl, CreateMode, ErrorCode, OpCode};

use crate::acl::{self, AuthIds};
use crate::path;
use crate::tree::{is_session_owner, ttl_owner, DataTree, CONTAINER_OWNER};
use crate::txn::Txn;

/// The parts of a node that validation needs.
#[derive(Debug, Clone)]
pub struct Pending {
    version: i32,
    cversion: i32,
    aversion: i32,
    owner: i64,
    num_children: usize,
    acl: crate::tree::SharedAcl,
}

/// The tree as earlier ops of the same multi have left it (ZooKeeper's outstanding `ChangeRecord`s).
pub struct View<'a> {
    tree: &'a DataTree,
    /// The optional ACL schemes ACLs may name (x509 with a secure client port, sasl with SASL configured).
    schemes: acl::Schemes,
    /// TTL nodes may be created (ZooKeeper's `zookeeper.extendedTypesEnabled`).
    extended_types: bool,
    overlay: HashMap<String, Option<Pending>>,
}

/// A create request in any of its wire forms.
pub struct CreateArgs<'r> {
    /// create / create2 / createContainer / createTTL.
    pub op: OpCode,
    /// Requested path.
    pub path: &'r str,
    /// Data.
    pub data: &'r Option<Vec<u8>>,
    /// Requested ACL.
    pub acl: &'r [Acl],
    /// Raw mode flags.
    pub flags: i32,
    /// The TTL in ms: createTTL's field, -1 for the other creates (as ZooKeeper reads them).
    pub ttl: i64,
}

impl<'a> View<'a> {
    /// A view of `tree` with nothing pending.
    pub fn new(tree: &'a DataTree) -> Self {
        View {
            tree,
            schemes: acl::Schemes::default(),
            extended_types: false,
            overlay: HashMap::new(),
        }
    }

    /// The same view, with the optional ACL schemes (x509, sasl) known or not.
    pub fn with_schemes(mut self, schemes: acl::Schemes) -> Self {
        self.schemes = schemes;
        self
    }

    /// The same view, with TTL nodes allowed or not.
    pub fn with_extended_types(mut self, on: bool) -> Self {
        self.extended_types = on;
        self
    }

    fn get(&self, path: &str) -> Option<Pending> {
        match self.overlay.get(path) {
            Some(p) => p.clone(),
            None => self.tree.get(path).map(|n| Pending {
                version: n.version,
                cversion: n.cversion,
                aversion: n.aversion,
                owner: n.ephemeral_owner,
                num_children: n.children.len(),
                acl: n.acl.clone(),
            }),
        }
    }

    /// Records the effect of a validated txn so later ops of the multi see it.
    pub fn record(&mut self, txn: &Txn) {
        match txn {
            Txn::Create {
                path,
                acl,
                owner,
                parent_cversion,
                ..
            } => {
                let parent = path::parent(path).to_string();
                if let Some(mut p) = self.get(&parent) {
                    p.cversion = *parent_cversion;
                    p.num_children += 1;
                    self.overlay.insert(parent, Some(p));
                }
                let node = Pending {
                    version: 0,
                    cversion: 0,
                    aversion: 0,
                    owner: *owner,
                    num_children: 0,
                    acl: acl.as_slice().into(),
                };
                self.overlay.insert(path.clone(), Some(node));
            }
            Txn::Delete { path } => {
                let parent = path::parent(path).to_string();
                if let Some(mut p) = self.get(&parent) {
                    p.num_children = p.num_children.saturating_sub(1);
                    self.overlay.insert(parent, Some(p));
                }
                self.overlay.insert(path.clone(), None);
            }
            Txn::SetData { path, version, .. } => {
                if let Some(mut p) = self.get(path) {
                    p.version = *version;
                    self.overlay.insert(path.clone(), Some(p));
                }
            }
            Txn::SetAcl { path, acl, aversion } => {
                if let Some(mut p) = self.get(path) {
                    p.aversion = *aversion;
                    p.acl = acl.as_slice().into();
                    self.overlay.insert(path.clone(), Some(p));
                }
            }
            _ => {}
        }
    }
}

fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

fn valid(path: &str) -> Result<(), ErrorCode> {
    path::validate(path).map_err(|_| ErrorCode::BadArguments)
}

/// ZooKeeper's `validatePathForCreate` / `getParentPathAndValidate`: only a slash and no NUL are required
/// here; the full syntax check comes after the sequence suffix is added.
fn parent_for_create(p: &str) -> Result<&str, ErrorCode> {
    let slash = p.rfind('/').ok_or(ErrorCode::BadArguments)?;
    if p.contains('\0') {
        return Err(ErrorCode::BadArguments);
    }
    Ok(if slash == 0 { "/" } else { &p[..slash] })
}

/// create / create2 / createContainer / createTTL.
pub fn create(view: &View, auth: &AuthIds, session: i64, args: &CreateArgs) -> Result<Txn, ErrorCode> {
    let mode = CreateMode::try_from(args.flags).map_err(|_| ErrorCode::BadArguments)?;
    // ZooKeeper's `validateCreateRequest`: TTL modes need `zookeeper.extendedTypesEnabled` (off by default:
    // Unimplemented), then `EphemeralType.validateTTL`: a TTL mode needs 0 < ttl <= the TTL maximum, any other mode
    // a negative ttl; else BadArguments. One divergence: a createTTL with a plain mode and a negative ttl passes
    // ZooKeeper 3.8's validation, and then encoding its TTL throws in ZooKeeper's SyncThread and the JVM exits;
    // here every createTTL with a plain mode is BadArguments.
    if mode.is_ttl() && !view.extended_types {
        return Err(ErrorCode::Unimplemented);
    }
    let ttl_owner = if mode.is_ttl() {
        Some(ttl_owner(args.ttl).ok_or(ErrorCode::BadArguments)?)
    } else if args.ttl >= 0 || args.op == OpCode::CreateTtl {
        return Err(ErrorCode::BadArguments);
    } else {
        None
    };
    let parent_path = parent_for_create(args.path)?;
    let acl = acl::fixup(args.acl, auth, view.schemes)?;
    let parent = view.get(parent_path).ok_or(ErrorCode::NoNode)?;
    acl::check(&parent.acl, perms::CREATE, auth)?;
    let path = if mode.is_sequential() {
        format!("{}{:010}", args.path, parent.cversion)
    } else {
        args.path.to_string()
    };
    valid(&path)?;
    if view.get(&path).is_some() || path == "/" {
        return Err(ErrorCode::NodeExists);
    }
    if is_session_owner(parent.owner) {
        return Err(ErrorCode::NoChildrenForEphemerals);
    }
    // The opcode, not the flags, makes a container (a create2 with container flags is a plain node in
    // ZooKeeper); multi maps flags to opcodes before calling this, as ZooKeeper's `Op.create` does.
    let owner = if args.op == OpCode::CreateContainer {
        CONTAINER_OWNER
    } else if let Some(owner) = ttl_owner {
        owner
    } else if mode.is_ephemeral() {
        session
    } else {
        0
    };
    Ok(Txn::Create {
        path,
        data: args.data.clone(),
        acl,
        owner,
        parent_cversion: parent.cversion.wrapping_add(1),
    })
}

/// delete.
pub fn delete(view: &View, auth: &AuthIds, path: &str, version: i32) -> Result<Txn, ErrorCode> {
    // ZooKeeper's delete only derives the parent (`getParentPathAndValidate`), no full syntax check: a
    // malformed path such as `/a//b` or `/a/` names a parent or node that cannot exist, hence NoNode.
    let parent_path = parent_for_create(path)?;
    if DataTree::is_special(path) {
        return Err(ErrorCode::BadArguments);
    }
    let parent = view.get(parent_path).ok_or(ErrorCode::NoNode)?;
    acl::check(&parent.acl, perms::DELETE, auth)?;
    let node = view.get(path).ok_or(ErrorCode::NoNode)?;
    check_version(node.version, version)?;
    if node.num_children > 0 {
        return Err(ErrorCode::NotEmpty);
    }
    Ok(Txn::Delete {
        path: path.to_string(),
    })
}

/// setData.
pub fn set_data(
    view: &View,
    auth: &AuthIds,
    path: &str,
    data: &Option<Vec<u8>>,
    version: i32,
) -> Result<Txn, ErrorCode> {
    valid(path)?;
    let node = view.get(path).ok_or(ErrorCode::NoNode)?;
    acl::check(&node.acl, perms::WRITE, auth)?;
    let version = check_version(node.version, version)?;
    Ok(Txn::SetData {
        path: path.to_string(),
        data: data.clone(),
        version,
    })
}

/// setACL.
pub fn set_acl(view: &View, auth: &AuthIds, path: &str, acl: &[Acl], version: i32) -> Result<Txn, ErrorCode> {
    valid(path)?;
    let acl = acl::fixup(acl, auth, view.schemes)?;
    let node = view.get(path).ok_or(ErrorCode::NoNode)?;
    acl::check(&node.acl, perms::ADMIN, auth)?;
    let aversion = check_version(node.aversion, version)?;
    Ok(Txn::SetAcl {
        path: path.to_string(),
        acl,
        aversion,
    })
}

/// check (version), inside multi.
pub fn check(view: &View, auth: &AuthIds, path: &str, version: i32) -> Result<Txn, ErrorCode> {
    valid(path)?;
    let node = view.get(path).ok_or(ErrorCode::NoNode)?;
    acl::check(&node.acl, perms::READ, auth)?;
    check_version(node.version, version)?;
    Ok(Txn::Check {
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::ttl_of;
    use zklock_codec::Id;

    /// ZooKeeper's largest TTL (`EphemeralType.TTL.maxValue()`).
    const MAX_TTL: i64 = 0xff_ffff_ffff;

    fn auth() -> Vec<Id> {
        vec![Id {
            scheme: "ip".into(),
            id: "127.0.0.1".into(),
        }]
    }

    fn create_args<'a>(
        path: &'a str,
        flags: i32,
        data: &'a Option<Vec<u8>>,
        acl: &'a [Acl],
    ) -> CreateArgs<'a> {
        CreateArgs {
            op: OpCode::Create,
            path,
            data,
            acl,
            flags,
            ttl: -1,
        }
    }

    #[test]
    fn ttl_creates() {
        let tree = DataTree::new();
        let (open, none) = (Acl::open_unsafe(), None);
        let ttl_create = |view: &View, flags: i32, ttl: i64| {
            let args = CreateArgs {
                op: OpCode::CreateTtl,
                ttl,
                ..create_args("/t", flags, &none, &open)
            };
            create(view, &auth(), 7, &args)
        };
        let off = View::new(&tree);
        assert_eq!(ttl_create(&off, 5, 1000).unwrap_err(), ErrorCode::Unimplemented);
        assert_eq!(ttl_create(&off, 6, 0).unwrap_err(), ErrorCode::Unimplemented);
        let on = View::new(&tree).with_extended_types(true);
        for (flags, ttl) in [(5, 0), (5, -1), (6, MAX_TTL + 1), (0, 1000), (0, -1), (1, -1)] {
            assert_eq!(
                ttl_create(&on, flags, ttl).unwrap_err(),
                ErrorCode::BadArguments,
                "flags {flags} ttl {ttl}"
            );
        }
        // A TTL mode through create2 carries no TTL (-1): BadArguments.
        let args = CreateArgs {
            op: OpCode::Create2,
            ..create_args("/t", 5, &none, &open)
        };
        assert_eq!(
            create(&on, &auth(), 7, &args).unwrap_err(),
            ErrorCode::BadArguments
        );
        for (flags, ttl, path) in [(5, 1000, "/t"), (6, MAX_TTL, "/t0000000000")] {
            match ttl_create(&on, flags, ttl).unwrap() {
                Txn::Create { path: p, owner, .. } => {
                    assert_eq!(p, path);
                    assert_eq!(
                        owner,
                        0xff00_0000_0000_0000_u64 as i64 | ttl,
                        "ZooKeeper's TTL encoding"
                    );
                    assert_eq!(ttl_of(owner), Some(ttl));
                    assert!(!is_session_owner(owner), "no session's");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(ttl_of(0), None);
        assert_eq!(ttl_of(CONTAINER_OWNER), None);
        assert_eq!(ttl_of(0x1234), None);
    }

    #[test]
    fn create_error_order() {
        let tree = DataTree::new();
        let view = View::new(&tree);
        let open = Acl::open_unsafe();
        let none = None;
        // (path, flags, acl, the error), in the order ZooKeeper checks them.
        let cases: [(&str, i32, &[Acl], ErrorCode); 7] = [
            ("/a", 9, &open, ErrorCode::BadArguments),
            ("a", 0, &open, ErrorCode::BadArguments),
            ("/a", 0, &[], ErrorCode::InvalidAcl),
            ("/x/y", 0, &open, ErrorCode::NoNode),
            ("/a/", 0, &open, ErrorCode::NoNode),
            ("/zookeeper/", 0, &open, ErrorCode::BadArguments),
            ("/zookeeper", 0, &open, ErrorCode::NodeExists),
        ];
        for (path, flags, acl, expected) in cases {
            assert_eq!(
                create(&view, &auth(), 1, &create_args(path, flags, &none, acl)).unwrap_err(),
                expected,
                "create {path} with flags {flags}"
            );
        }
        // The trailing-slash trick: a sequential create under "/zookeeper/" is a valid child name.
        let txn = create(&view, &auth(), 1, &create_args("/zookeeper/", 2, &none, &open)).unwrap();
        assert!(matches!(txn, Txn::Create { ref path, .. } if path == "/zookeeper/0000000000"));
    }

    #[test]
    fn multi_view_sees_earlier_ops() {
        let tree = DataTree::new();
        let mut view = View::new(&tree);
        let open = Acl::open_unsafe();
        let none = None;
        let t = create(&view, &auth(), 1, &create_args("/a", 0, &none, &open)).unwrap();
        view.record(&t);
        let t = create(&view, &auth(), 1, &create_args("/a/b", 2, &none, &open)).unwrap();
        assert!(matches!(t, Txn::Create { ref path, parent_cversion: 1, .. } if path == "/a/b0000000000"));
        view.record(&t);
        assert_eq!(delete(&view, &auth(), "/a", -1).unwrap_err(), ErrorCode::NotEmpty);
        assert_eq!(
            set_data(&view, &auth(), "/a", &none, 1).unwrap_err(),
            ErrorCode::BadVersion
        );
    }
}
