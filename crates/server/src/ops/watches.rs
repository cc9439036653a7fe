//! Watch management requests: setWatches(2) after a reconnect, addWatch, checkWatches, removeWatches.

use zklock_codec::{
    AddWatchMode, AddWatchRequest, Decode, ErrorCode, ErrorResponse, EventType, Reader, RemoveWatchesRequest,
    SetWatches, SetWatches2,
};

use super::{Malformed, Reply};
use crate::state::{notification, State};
use crate::tree::{DataTree, Node};
use crate::watch::{ConnId, Target};

/// Re-arms watches, first firing the events the client missed since `relative_zxid` (ZooKeeper's
/// `DataTree.setWatches`). The notifications go out before the reply.
pub fn set_watches(st: &mut State, conn: ConnId, r: &mut Reader<'_>, v2: bool) -> Result<Reply, Malformed> {
    let w = if v2 {
        SetWatches2::decode(r)?
    } else {
        let w = SetWatches::decode(r)?;
        SetWatches2 {
            relative_zxid: w.relative_zxid,
            data_watches: w.data_watches,
            exist_watches: w.exist_watches,
            child_watches: w.child_watches,
            ..Default::default()
        }
    };
    let rel = w.relative_zxid;
    let mut fire = Vec::new();
    for path in w.data_watches {
        match missed(&st.tree, &path, |n| n.mzxid > rel, EventType::NodeDataChanged) {
            Some(ty) => fire.push((ty, path)),
            None => st.watches.add_data(&path, conn),
        }
    }
    for path in w.exist_watches {
        match st.tree.get(&path) {
            Some(_) => fire.push((EventType::NodeCreated, path)),
            None => st.watches.add_data(&path, conn),
        }
    }
    for path in w.child_watches {
        match missed(&st.tree, &path, |n| n.pzxid > rel, EventType::NodeChildrenChanged) {
            Some(ty) => fire.push((ty, path)),
            None => st.watches.add_child(&path, conn),
        }
    }
    for path in w.persistent_watches {
        st.watches.add_persistent(&path, conn, false);
    }
    for path in w.persistent_recursive_watches {
        st.watches.add_persistent(&path, conn, true);
    }
    for (ty, path) in fire {
        let bytes = notification(ty, &path);
        st.send(conn, bytes, false);
    }
    Ok(Reply::empty())
}

/// The event a data or child watch set again missed: `NodeDeleted` when its node is gone, `on_change` when
/// the node `changed` after the client's zxid; `None` when it missed nothing and is re-armed.
fn missed(
    tree: &DataTree,
    path: &str,
    changed: impl Fn(&Node) -> bool,
    on_change: EventType,
) -> Option<EventType> {
    match tree.get(path) {
        None => Some(EventType::NodeDeleted),
        Some(n) if changed(n) => Some(on_change),
        Some(_) => None,
    }
}

pub fn add_watch(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = AddWatchRequest::decode(r)?;
    let Ok(mode) = AddWatchMode::try_from(req.mode) else {
        return Ok(Reply::err(ErrorCode::MarshallingError));
    };
    st.watches
        .add_persistent(&req.path, conn, mode == AddWatchMode::PersistentRecursive);
    // The Java client expects a 4-byte body here.
    Ok(Reply::ok(&ErrorResponse { err: 0 }))
}

pub fn remove_watches(
    st: &mut State,
    conn: ConnId,
    r: &mut Reader<'_>,
    remove: bool,
) -> Result<Reply, Malformed> {
    let req = RemoveWatchesRequest::decode(r)?;
    // ZooKeeper 3.8 knows only these three types (others fail to unmarshal), and it matches a watcher in
    // the addressed table whatever its mode, persistent ones included.
    let target = match req.watcher_type {
        1 => Target::Children,
        2 => Target::Data,
        3 => Target::Any,
        _ => return Ok(Reply::err(ErrorCode::MarshallingError)),
    };
    Ok(if st.watches.remove(&req.path, conn, target, remove) {
        Reply::empty()
    } else {
        Reply::err(ErrorCode::NoWatcher)
    })
}
