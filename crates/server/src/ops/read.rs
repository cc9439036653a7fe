//! Reads: exists, getData, getChildren(2), getACL, getAllChildrenNumber, getEphemerals, sync. Like
//! ZooKeeper's `FinalRequestProcessor`, reads do not validate path syntax: an invalid path simply does not
//! exist (only a NUL is refused, by exists).

use zklock_codec::{
    perms, Decode, ErrorCode, ExistsRequest, GetAclRequest, GetAclResponse, GetAllChildrenNumberRequest,
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenRequest, GetChildrenResponse,
    GetDataRequest, GetDataResponse, GetEphemeralsRequest, GetEphemeralsResponse, Reader, StatResponse,
    SyncRequest, SyncResponse,
};

use super::{auth_of, Malformed, Reply};
use crate::acl::{self, AuthIds};
use crate::state::State;
use crate::watch::ConnId;

pub fn exists(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = ExistsRequest::decode(r)?;
    if req.path.contains('\0') {
        return Ok(Reply::err(ErrorCode::BadArguments));
    }
    // A watch is left even when the node is missing: that is how "wait for creation" works.
    if req.watch {
        st.watches.add_data(&req.path, conn);
    }
    let observed = st.tree.changed_at(&req.path);
    Ok(match st.tree.get(&req.path) {
        Some(n) => Reply::ok(&StatResponse { stat: n.stat() }),
        None => Reply::err(ErrorCode::NoNode),
    }
    .observing(observed))
}

/// Answers a read of the node at `path` with the connection's ids: the reply (or its error) reveals the node's
/// latest change, so it waits only for that change to be durable.
fn read_node(
    st: &mut State,
    conn: ConnId,
    path: &str,
    answer: impl FnOnce(&mut State, &AuthIds) -> Result<Reply, ErrorCode>,
) -> Reply {
    let auth = auth_of(st, conn);
    let observed = st.tree.changed_at(path);
    Reply::from(answer(st, &auth)).observing(observed)
}

pub fn get_data(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = GetDataRequest::decode(r)?;
    Ok(read_node(st, conn, &req.path, |st, auth| {
        let n = st.tree.get(&req.path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, perms::READ, auth)?;
        let (data, stat) = (n.data().map(<[u8]>::to_vec), n.stat());
        #[cfg(feature = "fault-injection")]
        let (data, stat) = match st.stale_reads.as_mut() {
            Some(stale) => stale.read(&req.path, data, stat),
            None => (data, stat),
        };
        let reply = Reply::ok(&GetDataResponse { data, stat });
        if req.watch {
            st.watches.add_data(&req.path, conn);
        }
        Ok(reply)
    }))
}

pub fn get_children(
    st: &mut State,
    conn: ConnId,
    r: &mut Reader<'_>,
    with_stat: bool,
) -> Result<Reply, Malformed> {
    let req = GetChildrenRequest::decode(r)?;
    Ok(read_node(st, conn, &req.path, |st, auth| {
        let n = st.tree.get(&req.path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, perms::READ, auth)?;
        let children: Vec<String> = n.children.iter().map(str::to_string).collect();
        let reply = if with_stat {
            Reply::ok(&GetChildren2Response {
                children,
                stat: n.stat(),
            })
        } else {
            Reply::ok(&GetChildrenResponse { children })
        };
        if req.watch {
            st.watches.add_child(&req.path, conn);
        }
        Ok(reply)
    }))
}

pub fn get_acl(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = GetAclRequest::decode(r)?;
    Ok(read_node(st, conn, &req.path, |st, auth| {
        let n = st.tree.get(&req.path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, perms::READ | perms::ADMIN, auth)?;
        // Without ADMIN the digest hashes are hidden (they are brute-forceable).
        let acl = match acl::check(&n.acl, perms::ADMIN, auth) {
            Ok(()) => n.acl.to_vec(),
            Err(_) => acl::redact(&n.acl),
        };
        Ok(Reply::ok(&GetAclResponse { acl, stat: n.stat() }))
    }))
}

pub fn all_children_number(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = GetAllChildrenNumberRequest::decode(r)?;
    let auth = auth_of(st, conn);
    Ok((|| {
        let n = st.tree.get(&req.path).ok_or(ErrorCode::NoNode)?;
        acl::check(&n.acl, perms::READ, &auth)?;
        let total_number = i32::try_from(st.tree.descendant_count(&req.path)).unwrap_or(i32::MAX);
        Ok(Reply::ok(&GetAllChildrenNumberResponse { total_number }))
    })()
    .into())
}

pub fn ephemerals(st: &mut State, session: i64, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = GetEphemeralsRequest::decode(r)?;
    let ephemerals = st
        .tree
        .ephemerals_of(session)
        .into_iter()
        .filter(|p| req.prefix_path == "/" || p.starts_with(&req.prefix_path))
        .collect();
    Ok(Reply::ok(&GetEphemeralsResponse { ephemerals }))
}

pub fn sync(r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    // A single node is always in sync; the reply still waits behind earlier writes (reply order).
    let req = SyncRequest::decode(r)?;
    Ok(Reply::ok(&SyncResponse { path: req.path }))
}
