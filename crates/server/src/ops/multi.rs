//! multi (atomic writes) and multiRead.
//!
//! multi validates every op against a [`View`] that accumulates the effects of the earlier ops; if all
//! pass, one `Txn::Multi` is committed under one zxid. If one fails, ZooKeeper's encoding applies: header
//! err 0, and per op an error result — 0 before the failing op, its code for it, −2 after it — and the
//! failed multi still consumes a zxid.
//!
//! Like ZooKeeper (whose `MultiOperationRecord` rebuilds each create with `Op.create(flags)`), a create's
//! opcode inside a multi is derived from its flags: container flags make a container (result type 15 with
//! a stat), anything else is a plain create (result type 1, path only), whatever opcode the client sent.

use zklock_codec::{
    Acl, Create2Response, CreateMode, CreateResponse, Decode, Encode, ErrorCode, GetChildrenResponse,
    GetDataResponse, MultiOp, MultiRequest, MultiResponse, MultiResult, OpCode, Reader, StatResponse,
};

use super::prep::{self, CreateArgs, View};
use super::{auth_of, Malformed, Reply};
use crate::acl;
use crate::state::State;
use crate::txn::Txn;
use crate::watch::ConnId;

/// The opcode ZooKeeper uses for a create inside a multi.
fn create_op(flags: i32) -> OpCode {
    match CreateMode::try_from(flags) {
        Ok(CreateMode::Container) => OpCode::CreateContainer,
        Ok(m) if m.is_ttl() => OpCode::CreateTtl,
        _ => OpCode::Create,
    }
}

/// The arguments of a create inside a multi, whose op code its mode decides.
fn create_args<'r>(
    path: &'r str,
    data: &'r Option<Vec<u8>>,
    acl: &'r [Acl],
    flags: i32,
    ttl: i64,
) -> CreateArgs<'r> {
    CreateArgs {
        op: create_op(flags),
        path,
        data,
        acl,
        flags,
        ttl,
    }
}

pub fn multi(st: &mut State, conn: ConnId, session: i64, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = MultiRequest::decode(r)?;
    if req
        .ops
        .iter()
        .any(|op| matches!(op, MultiOp::GetData(_) | MultiOp::GetChildren(_)))
    {
        // ZooKeeper rejects reads in a write multi as a marshalling error, after assigning a zxid.
        st.commit(Txn::Error {
            err: ErrorCode::MarshallingError.into(),
        });
        return Ok(Reply::err(ErrorCode::MarshallingError));
    }
    let auth = auth_of(st, conn);
    let mut view = View::new(&st.tree)
        .with_schemes(st.schemes)
        .with_extended_types(st.extended_types);
    let mut txns = Vec::with_capacity(req.ops.len());
    let mut failure = None;
    for (i, op) in req.ops.iter().enumerate() {
        let prepared = match op {
            MultiOp::Create { req, .. } => {
                let args = create_args(&req.path, &req.data, &req.acl, req.flags, -1);
                prep::create(&view, &auth, session, &args)
            }
            MultiOp::CreateTtl(req) => {
                let args = create_args(&req.path, &req.data, &req.acl, req.flags, req.ttl);
                prep::create(&view, &auth, session, &args)
            }
            MultiOp::Delete(d) => prep::delete(&view, &auth, &d.path, d.version),
            MultiOp::SetData(s) => prep::set_data(&view, &auth, &s.path, &s.data, s.version),
            MultiOp::Check(c) => prep::check(&view, &auth, &c.path, c.version),
            // Rejected before the loop; kept total rather than panicking.
            MultiOp::GetData(_) | MultiOp::GetChildren(_) => Err(ErrorCode::MarshallingError),
        };
        match prepared {
            Ok(txn) => {
                view.record(&txn);
                txns.push(txn);
            }
            Err(err) => {
                failure = Some((i, err));
                break;
            }
        }
    }
    if let Some((failed, err)) = failure {
        st.commit(Txn::Error { err: err.into() });
        let results = (0..req.ops.len())
            .map(|i| {
                MultiResult::Error(match i.cmp(&failed) {
                    std::cmp::Ordering::Less => 0,
                    std::cmp::Ordering::Equal => err.into(),
                    std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.into(),
                })
            })
            .collect();
        return Ok(Reply::ok(&MultiResponse { results }));
    }
    let (_, stats) = st.commit(Txn::Multi(txns.clone()));
    let results = req
        .ops
        .iter()
        .zip(txns)
        .zip(stats)
        .map(|((op, txn), stat)| match (op, txn) {
            (MultiOp::Create { req, .. }, Txn::Create { path, .. })
                if create_op(req.flags) == OpCode::Create =>
            {
                MultiResult::Create(CreateResponse { path })
            }
            (_, Txn::Create { path, .. }) => MultiResult::Create2 {
                op: OpCode::Create2,
                resp: Create2Response {
                    path,
                    stat: stat.unwrap_or_default(),
                },
            },
            (_, Txn::Delete { .. }) => MultiResult::Delete,
            (_, Txn::SetData { .. }) => MultiResult::SetData(StatResponse {
                stat: stat.unwrap_or_default(),
            }),
            _ => MultiResult::Check,
        })
        .collect();
    Ok(Reply::ok(&MultiResponse { results }))
}

pub fn multi_read(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = MultiRequest::decode(r)?;
    if req
        .ops
        .iter()
        .any(|op| !matches!(op, MultiOp::GetData(_) | MultiOp::GetChildren(_)))
    {
        // ZooKeeper answers a write inside multiRead with MarshallingError *and* an empty result list.
        return Ok(Reply {
            body_on_error: true,
            body: MultiResponse::default().to_bytes(),
            ..Reply::err(ErrorCode::MarshallingError)
        });
    }
    let auth = auth_of(st, conn);
    let observed = req
        .ops
        .iter()
        .map(|op| match op {
            MultiOp::GetData(g) => st.tree.changed_at(&g.path),
            MultiOp::GetChildren(g) => st.tree.changed_at(&g.path),
            _ => st.last_zxid,
        })
        .max()
        .unwrap_or(0);
    let results = req
        .ops
        .iter()
        .map(|op| {
            let res = match op {
                // Watch flags are ignored: multiRead sets no watches.
                MultiOp::GetData(g) => st.tree.get(&g.path).ok_or(ErrorCode::NoNode).and_then(|n| {
                    acl::check(&n.acl, zklock_codec::perms::READ, &auth)?;
                    Ok(MultiResult::GetData(GetDataResponse {
                        data: n.data().map(<[u8]>::to_vec),
                        stat: n.stat(),
                    }))
                }),
                MultiOp::GetChildren(g) => st.tree.get(&g.path).ok_or(ErrorCode::NoNode).and_then(|n| {
                    acl::check(&n.acl, zklock_codec::perms::READ, &auth)?;
                    Ok(MultiResult::GetChildren(GetChildrenResponse {
                        children: n.children.iter().map(str::to_string).collect(),
                    }))
                }),
                _ => Err(ErrorCode::MarshallingError), // rejected above
            };
            res.unwrap_or_else(|e| MultiResult::Error(e.into()))
        })
        .collect();
    Ok(Reply::ok(&MultiResponse { results }).observing(observed))
}
