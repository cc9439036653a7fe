//! Single writes: create (all four forms), delete, setData, setACL. Each validates through [`prep`],
//! then commits either the txn or an error txn: a failed write consumes a zxid too, as in ZooKeeper.

use zklock_codec::{
    Create2Response, CreateRequest, CreateResponse, CreateTtlRequest, Decode, DeleteRequest, Encode,
    ErrorCode, OpCode, Reader, SetAclRequest, SetAclResponse, SetDataRequest, StatResponse,
};

use super::prep::{self, CreateArgs, View};
use super::{auth_of, Malformed, Reply};
use crate::acl::AuthIds;
use crate::state::State;
use crate::txn::Txn;
use crate::watch::ConnId;

/// Prepares a write against the tree with the connection's ids, then commits the txn (or an error txn: a
/// failed write consumes a zxid too) and returns it with its first leaf stat on success.
fn prepare_and_commit(
    st: &mut State,
    conn: ConnId,
    prepare: impl FnOnce(&View<'_>, &AuthIds) -> Result<Txn, ErrorCode>,
) -> Result<(Txn, Option<zklock_codec::Stat>), ErrorCode> {
    let auth = auth_of(st, conn);
    match prepare(
        &View::new(&st.tree)
            .with_schemes(st.schemes)
            .with_extended_types(st.extended_types),
        &auth,
    ) {
        Ok(txn) => {
            let (_, stats) = st.commit(txn.clone());
            Ok((txn, stats.into_iter().next().flatten()))
        }
        Err(err) => {
            st.commit(Txn::Error { err: err.into() });
            Err(err)
        }
    }
}

/// The reply of a write answered with the node's new stat (zeros if it has none).
fn stat_reply<T: Encode>(
    done: Result<(Txn, Option<zklock_codec::Stat>), ErrorCode>,
    reply: impl FnOnce(zklock_codec::Stat) -> T,
) -> Reply {
    done.map(|(_, stat)| Reply::ok(&reply(stat.unwrap_or_default())))
        .into()
}

pub fn create(
    st: &mut State,
    conn: ConnId,
    session: i64,
    op: OpCode,
    r: &mut Reader<'_>,
) -> Result<Reply, Malformed> {
    // ZooKeeper reads a TTL of -1 (none) from every create but createTTL.
    let (req, ttl) = if op == OpCode::CreateTtl {
        let t = CreateTtlRequest::decode(r)?;
        let req = CreateRequest {
            path: t.path,
            data: t.data,
            acl: t.acl,
            flags: t.flags,
        };
        (req, t.ttl)
    } else {
        (CreateRequest::decode(r)?, -1)
    };
    let args = CreateArgs {
        op,
        path: &req.path,
        data: &req.data,
        acl: &req.acl,
        flags: req.flags,
        ttl,
    };
    Ok(
        prepare_and_commit(st, conn, |view, auth| prep::create(view, auth, session, &args))
            .map(|(txn, stat)| {
                // prep::create only ever returns Txn::Create; the fallback keeps this total.
                let path = match txn {
                    Txn::Create { path, .. } => path,
                    _ => req.path.clone(),
                };
                if op == OpCode::Create {
                    Reply::ok(&CreateResponse { path })
                } else {
                    Reply::ok(&Create2Response {
                        path,
                        stat: stat.unwrap_or_default(),
                    })
                }
            })
            .into(),
    )
}

pub fn delete(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = DeleteRequest::decode(r)?;
    Ok(prepare_and_commit(st, conn, |view, auth| {
        prep::delete(view, auth, &req.path, req.version)
    })
    .map(|_| Reply::empty())
    .into())
}

pub fn set_data(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = SetDataRequest::decode(r)?;
    let done = prepare_and_commit(st, conn, |view, auth| {
        prep::set_data(view, auth, &req.path, &req.data, req.version)
    });
    Ok(stat_reply(done, |stat| StatResponse { stat }))
}

pub fn set_acl(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = SetAclRequest::decode(r)?;
    let done = prepare_and_commit(st, conn, |view, auth| {
        prep::set_acl(view, auth, &req.path, &req.acl, req.version)
    });
    Ok(stat_reply(done, |stat| SetAclResponse { stat }))
}
