//! The ACLs of the nodes a command creates and of the directories it creates ([`NodeAcls`], from `--acl` and
//! `--parent-acl`, or the defaults), and what to say when ZooKeeper refuses because of an ACL ([`refused`]).

use anyhow::Result;
use zookeeper_client::{Acl, Acls, AuthId, Client, Permission};

use super::security::has_credentials;
use super::usage;
use crate::cli::{AclArgs, SecurityArgs};

/// The ACLs of the nodes a command creates and of the directories it creates, from `--acl` and `--parent-acl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAcls {
    /// The nodes' ACL.
    pub nodes: Vec<Acl>,
    /// The directories' ACL.
    pub parents: Vec<Acl>,
}

impl NodeAcls {
    /// Decides the ACLs. Without `--acl`: `creator` (all permissions for sessions with our credentials) when the
    /// command has credentials, `world` (all permissions for anybody) otherwise. Without `--parent-acl`: the nodes'
    /// entries with `READ` for anybody added, so that `zklock status` without credentials still shows who holds
    /// and who waits (by name; their data stays private) while nobody else may queue, delete or squat.
    pub fn from_args(security: &SecurityArgs, acl: &AclArgs) -> Result<NodeAcls> {
        let authenticated = has_credentials(security);
        let nodes = match &acl.acl {
            Some(spec) => spec.entries.clone(),
            None if authenticated => Acls::creator_all().to_vec(),
            None => Acls::anyone_all().to_vec(),
        };
        let parents = match &acl.parent_acl {
            Some(spec) => spec.entries.clone(),
            None => readable_by_anybody(nodes.clone()),
        };
        let creator = |acls: &[Acl]| acls.iter().any(|acl| acl.scheme() == "auth");
        // A TLS client certificate may be an identity too (ZooKeeper's x509 provider): then `creator` is its.
        if !authenticated && security.tls_cert.is_none() && (creator(&nodes) || creator(&parents)) {
            return Err(usage(
                "an ACL with creator needs credentials (--auth, ZKLOCK_AUTH or --auth-file, --sasl, or a TLS \
                 client certificate): without them the session has no identity to give the nodes to"
                    .to_owned(),
            ));
        }
        // Queueing in a directory creates a node in it and deleting ours needs the directory's DELETE: a directory
        // made with no entry granting both would take nobody's node, ours included (`--acl world:r`, issue 33.9).
        let queueable = |acl: &Acl| acl.permission().has(Permission::CREATE | Permission::DELETE);
        if !parents.iter().any(queueable) {
            return Err(usage(format!(
                "the directories zklock creates would get the ACL {}: no entry grants both create and delete (c and \
                 d), so nobody — this command included — could queue in them. Give --parent-acl (e.g. \
                 world:rcd, or creator) or an --acl with c and d",
                parents
                    .iter()
                    .map(|acl| format!("{}:{}:{}", acl.scheme(), acl.id(), acl.permission()))
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        Ok(NodeAcls { nodes, parents })
    }

    /// `session` with these ACLs.
    pub fn apply(&self, session: zklock::Session) -> zklock::Session {
        session
            .with_acls(Acls::new(&self.nodes))
            .with_parent_acls(Acls::new(&self.parents))
    }
}

/// `acls` with `READ` for `world:anyone` (added to its entry, or as one).
fn readable_by_anybody(mut acls: Vec<Acl>) -> Vec<Acl> {
    match acls.iter_mut().find(|acl| acl.auth_id() == &AuthId::anyone()) {
        Some(world) => *world = Acl::new(world.permission() | Permission::READ, AuthId::anyone()),
        None => acls.push(Acl::new(Permission::READ, AuthId::anyone())),
    }
    acls
}

/// What to add to the message of a recipe's error: why ZooKeeper refused, when an ACL did (`NoAuth`).
pub fn refused(err: &zklock::Error) -> &'static str {
    match err {
        zklock::Error::ZooKeeper { source: zookeeper_client::Error::NoAuth, .. } => {
            " (the ACL of the directory does not let this session queue: give credentials it admits with --auth, \
             ZKLOCK_AUTH or --auth-file, or --sasl)"
        }
        zklock::Error::ZooKeeper { source: zookeeper_client::Error::InvalidAcl, .. } => {
            " (ZooKeeper refused the ACL of --acl or --parent-acl)"
        }
        _ => "",
    }
}

/// A session on `client` whose recipes create their nodes with the ACLs of `--acl` and `--parent-acl`
/// ([`NodeAcls::from_args`]).
pub fn session(client: &Client, security: &SecurityArgs, acl: &AclArgs) -> Result<zklock::Session> {
    Ok(NodeAcls::from_args(security, acl)?.apply(zklock::Session::new(client)))
}
