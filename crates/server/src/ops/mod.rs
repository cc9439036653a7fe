//! Request handling: one function per request, grouped by concern. [`handle`] decodes the header,
//! dispatches, and queues the reply (and, for writes, the notifications before it) to the connection.
//!
//! Every handler runs inside the state lock (see [`crate::state`]) and returns a [`Reply`].

mod multi;
pub mod prep;
mod read;
mod sasl;
pub mod session;
mod watches;
mod write;

use zklock_codec::{xid, Decode, DecodeError, Encode, ErrorCode, OpCode, Reader, ReplyHeader, RequestHeader};

use crate::state::{frame, State};
use crate::watch::ConnId;

/// What a handler produced.
#[derive(Debug)]
pub struct Reply {
    /// Error code for the header.
    pub err: ErrorCode,
    /// Body, sent only when `err` is `Ok`.
    pub body: Vec<u8>,
    /// Header zxid override (ZooKeeper answers auth with zxid 0).
    pub zxid: Option<i64>,
    /// Close the connection after this reply.
    pub close: bool,
    /// Send `body` even with an error code (ZooKeeper does this for a rejected multiRead).
    pub body_on_error: bool,
    /// For reads: the zxid of the newest change the reply reveals (see [`crate::tree::Node::changed`]).
    /// The reply then waits only for that zxid to be durable instead of for every write before it.
    /// `None`: the reply depends on everything committed so far (writes and the rarer requests).
    pub observed: Option<i64>,
}

impl Reply {
    /// Success with a record body.
    pub fn ok(body: &impl Encode) -> Self {
        Reply {
            err: ErrorCode::Ok,
            body: body.to_bytes(),
            zxid: None,
            close: false,
            body_on_error: false,
            observed: None,
        }
    }

    /// Success without a body.
    pub fn empty() -> Self {
        Reply {
            err: ErrorCode::Ok,
            body: Vec::new(),
            zxid: None,
            close: false,
            body_on_error: false,
            observed: None,
        }
    }

    /// An error reply.
    pub fn err(err: ErrorCode) -> Self {
        Reply {
            err,
            body: Vec::new(),
            zxid: None,
            close: false,
            body_on_error: false,
            observed: None,
        }
    }

    fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    /// Marks a read reply as revealing nothing newer than `zxid`.
    pub fn observing(mut self, zxid: i64) -> Self {
        self.observed = Some(zxid);
        self
    }
}

impl From<Result<Reply, ErrorCode>> for Reply {
    fn from(r: Result<Reply, ErrorCode>) -> Self {
        r.unwrap_or_else(Reply::err)
    }
}

/// Why a request could not even be answered: the connection is closed without a reply (like ZooKeeper,
/// which drops a connection whose request does not deserialize).
#[derive(Debug, thiserror::Error)]
#[error("malformed request: {0}")]
pub struct Malformed(#[from] pub DecodeError);

/// What the connection should do after a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Close after the queued frames.
    Close,
}

/// Handles one request frame of an established connection.
pub fn handle(st: &mut State, conn: ConnId, body: &[u8]) -> Result<Flow, Malformed> {
    let mut r = Reader::new(body);
    let header = RequestHeader::decode(&mut r)?;
    st.counters.received += 1;
    let Some(c) = st.conns.get_mut(&conn) else {
        return Ok(Flow::Close);
    };
    let session = c.session;
    // The hand-off timeline (docs/benchmarks.md): off unless a subscriber enables this target at `trace`.
    tracing::trace!(target: "zklock_server::timeline", session, xid = header.xid, op = header.op, "request");
    c.outbox
        .received
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let op = OpCode::try_from(header.op).ok();
    c.last_op = op.map_or("UNKNOWN", op_name);
    let reply = if st.sessions.get(session).is_none() {
        // Expired (or closed) under this connection's feet.
        Reply::err(ErrorCode::SessionExpired).closing()
    } else {
        st.sessions.touch(session);
        let enforced = match op {
            Some(OpCode::Auth | OpCode::Sasl) => None,
            _ => sasl::refuse_unauthenticated(st, conn),
        };
        match (enforced, op) {
            (Some(refused), _) => refused,
            (None, Some(op)) => dispatch(st, conn, session, op, &mut r)?,
            (None, None) => {
                tracing::debug!(op = header.op, "unknown opcode");
                // ZooKeeper answers an unknown opcode with zxid −1, then closes.
                Reply {
                    zxid: Some(-1),
                    ..Reply::err(ErrorCode::Unimplemented).closing()
                }
            }
        }
    };
    let xid = if op == Some(OpCode::Ping) {
        xid::PING
    } else {
        header.xid
    };
    let after = st.reply_zxid(conn, reply.observed);
    let hdr = ReplyHeader {
        xid,
        zxid: reply.zxid.unwrap_or(after),
        err: reply.err.into(),
    };
    let body: &[u8] = if reply.err == ErrorCode::Ok || reply.body_on_error {
        &reply.body
    } else {
        &[]
    };
    let bytes = frame(&hdr, body);
    st.send_after(conn, bytes, true, after);
    if reply.close {
        st.close_conn(conn);
        return Ok(Flow::Close);
    }
    Ok(Flow::Continue)
}

fn dispatch(
    st: &mut State,
    conn: ConnId,
    session: i64,
    op: OpCode,
    r: &mut Reader<'_>,
) -> Result<Reply, Malformed> {
    Ok(match op {
        // A ping reveals nothing but the zxid in its header.
        OpCode::Ping => Reply::empty().observing(0),
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
            write::create(st, conn, session, op, r)?
        }
        OpCode::Delete => write::delete(st, conn, r)?,
        OpCode::SetData => write::set_data(st, conn, r)?,
        OpCode::SetAcl => write::set_acl(st, conn, r)?,
        OpCode::Multi => multi::multi(st, conn, session, r)?,
        OpCode::MultiRead => multi::multi_read(st, conn, r)?,
        OpCode::Exists => read::exists(st, conn, r)?,
        OpCode::GetData => read::get_data(st, conn, r)?,
        OpCode::GetChildren => read::get_children(st, conn, r, false)?,
        OpCode::GetChildren2 => read::get_children(st, conn, r, true)?,
        OpCode::GetAcl => read::get_acl(st, conn, r)?,
        OpCode::GetAllChildrenNumber => read::all_children_number(st, conn, r)?,
        OpCode::GetEphemerals => read::ephemerals(st, session, r)?,
        OpCode::Sync => read::sync(r)?,
        OpCode::SetWatches => watches::set_watches(st, conn, r, false)?,
        OpCode::SetWatches2 => watches::set_watches(st, conn, r, true)?,
        OpCode::AddWatch => watches::add_watch(st, conn, r)?,
        OpCode::CheckWatches => watches::remove_watches(st, conn, r, false)?,
        OpCode::RemoveWatches => watches::remove_watches(st, conn, r, true)?,
        OpCode::Auth => session::auth(st, conn, r)?,
        OpCode::WhoAmI => session::who_am_i(st, conn),
        OpCode::CloseSession => session::close(st, session),
        // Reconfig needs an ensemble. ZooKeeper (reconfig disabled by default) fails it as a write, so it
        // consumes a zxid.
        OpCode::Reconfig => {
            st.commit(crate::txn::Txn::Error {
                err: ErrorCode::ReconfigDisabled.into(),
            });
            Reply::err(ErrorCode::ReconfigDisabled)
        }
        OpCode::Sasl => sasl::sasl(st, conn, r)?,
        OpCode::Check
        | OpCode::Notification
        | OpCode::DeleteContainer
        | OpCode::CreateSession
        | OpCode::Error => Reply::err(ErrorCode::Unimplemented).closing(),
    })
}

/// Operation names as ZooKeeper's `cons` prints them.
fn op_name(op: OpCode) -> &'static str {
    match op {
        OpCode::Notification => "NOTIFICATION",
        OpCode::Create => "CREA",
        OpCode::Delete => "DELE",
        OpCode::Exists => "EXIS",
        OpCode::GetData => "GETD",
        OpCode::SetData => "SETD",
        OpCode::GetAcl => "GETA",
        OpCode::SetAcl => "SETA",
        OpCode::GetChildren => "GETC",
        OpCode::Sync => "SYNC",
        OpCode::Ping => "PING",
        OpCode::GetChildren2 => "GETC",
        OpCode::Check => "CHEC",
        OpCode::Multi => "MULT",
        OpCode::Create2 => "CRE2",
        OpCode::Reconfig => "RECO",
        OpCode::CheckWatches => "CHKW",
        OpCode::RemoveWatches => "REMW",
        OpCode::CreateContainer => "CCON",
        OpCode::DeleteContainer => "DCON",
        OpCode::CreateTtl => "CTTL",
        OpCode::MultiRead => "MLTR",
        OpCode::Auth => "AUTH",
        OpCode::SetWatches => "SETW",
        OpCode::Sasl => "SASL",
        OpCode::GetEphemerals => "GETE",
        OpCode::GetAllChildrenNumber => "GETACN",
        OpCode::SetWatches2 => "SETW",
        OpCode::AddWatch => "ADDW",
        OpCode::WhoAmI => "HOMI",
        OpCode::CreateSession => "SESS",
        OpCode::CloseSession => "CLOS",
        OpCode::Error => "ERROR",
    }
}

/// The auth ids of a connection (cloned: handlers need them while mutating the state).
fn auth_of(st: &State, conn: ConnId) -> crate::acl::Identities {
    st.conns.get(&conn).map(|c| c.auth.clone()).unwrap_or_default()
}
