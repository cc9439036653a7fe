//! Session-level requests: the handshake, auth, whoAmI and closeSession.

use zklock_codec::{
    AuthPacket, ClientInfo, ConnectRequest, ConnectResponse, Decode, Encode, ErrorCode, Reader,
    WhoAmIResponse,
};

use super::{Malformed, Reply};
use crate::acl;
use crate::session::new_password;
use crate::state::State;
use crate::txn::Txn;
use crate::watch::ConnId;

/// Outcome of the handshake.
#[derive(Debug, PartialEq, Eq)]
pub enum Handshake {
    /// Session established; requests may follow.
    Established,
    /// Refused: the reply (if any) is queued and the connection must close.
    Refused,
}

/// Configuration the handshake needs.
pub struct SessionLimits {
    /// Lowest timeout, ms.
    pub min_ms: i32,
    /// Highest timeout, ms.
    pub max_ms: i32,
}

/// Handles the first frame of a connection (no request header).
pub fn connect(
    st: &mut State,
    conn: ConnId,
    body: &[u8],
    limits: &SessionLimits,
) -> Result<Handshake, Malformed> {
    let req = ConnectRequest::decode(&mut Reader::new(body))?;
    if req.last_zxid_seen > st.last_zxid {
        // The client has seen a newer state than ours: it must try another server (ZooKeeper closes silently).
        tracing::info!(
            client_zxid = format!("0x{:x}", req.last_zxid_seen),
            our_zxid = format!("0x{:x}", st.last_zxid),
            "refusing session: client has seen a newer zxid"
        );
        return Ok(Handshake::Refused);
    }
    let timeout_ms = req.time_out.clamp(limits.min_ms, limits.max_ms);
    let read_only = req.read_only.map(|_| false);
    let invalid = ConnectResponse {
        protocol_version: 0,
        time_out: 0,
        session_id: 0,
        passwd: vec![0; 16],
        read_only,
    };
    if req.session_id == 0 {
        let id = st.sessions.next_id();
        let passwd = new_password();
        st.commit(Txn::CreateSession {
            id,
            timeout_ms,
            passwd: passwd.clone(),
        });
        attach(st, conn, id);
        let resp = ConnectResponse {
            protocol_version: 0,
            time_out: timeout_ms,
            session_id: id,
            passwd,
            read_only,
        };
        send_connect_response(st, conn, &resp);
        return Ok(Handshake::Established);
    }
    let valid = st
        .sessions
        .get(req.session_id)
        .is_some_and(|s| s.passwd == req.passwd);
    if !valid {
        send_connect_response(st, conn, &invalid);
        st.close_conn(conn);
        return Ok(Handshake::Refused);
    }
    // The session moves here: the connection that had it is dropped.
    let old = st.sessions.get(req.session_id).and_then(|s| s.conn);
    if let Some(old) = old.filter(|&old| old != conn) {
        st.close_conn(old);
        if let Some(c) = st.conns.get(&old) {
            c.outbox.cancel.cancel();
        }
        st.remove_conn(old);
    }
    if let Some(s) = st.sessions.get_mut(req.session_id) {
        s.timeout_ms = timeout_ms;
    }
    st.sessions.touch(req.session_id);
    attach(st, conn, req.session_id);
    let passwd = st
        .sessions
        .get(req.session_id)
        .map(|s| s.passwd.clone())
        .unwrap_or_default();
    let resp = ConnectResponse {
        protocol_version: 0,
        time_out: timeout_ms,
        session_id: req.session_id,
        passwd,
        read_only,
    };
    send_connect_response(st, conn, &resp);
    Ok(Handshake::Established)
}

fn attach(st: &mut State, conn: ConnId, session: i64) {
    if let Some(c) = st.conns.get_mut(&conn) {
        c.session = session;
    }
    if let Some(s) = st.sessions.get_mut(session) {
        s.conn = Some(conn);
    }
}

fn send_connect_response(st: &mut State, conn: ConnId, resp: &ConnectResponse) {
    let mut w = Vec::new();
    let start = zklock_codec::frame::begin_frame(&mut w);
    resp.encode(&mut w);
    zklock_codec::frame::end_frame(&mut w, start);
    st.send(conn, w, true);
}

/// auth: `digest` adds `user:base64(sha1(user:password))`; other schemes fail and close the connection.
pub fn auth(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = AuthPacket::decode(r)?;
    let super_digest = st.super_digest.clone();
    let Some(c) = st.conns.get_mut(&conn) else {
        return Ok(Reply::err(ErrorCode::AuthFailed));
    };
    // ZooKeeper answers auth with zxid 0 in the header.
    let reply = |err| Reply {
        zxid: Some(0),
        close: err != ErrorCode::Ok,
        ..Reply::err(err)
    };
    match req.scheme.as_str() {
        "digest" => {}
        // IPAuthenticationProvider: the connection's own address, which every connection has from the start.
        "ip" => return Ok(reply(ErrorCode::Ok)),
        // X509AuthenticationProvider: the verified client certificate's ids, added when the TLS connection was
        // accepted; without one, AuthFailed.
        "x509" if c.auth.iter().any(|id| id.scheme == "x509") => return Ok(reply(ErrorCode::Ok)),
        _ => {
            tracing::info!(
                scheme = req.scheme,
                "auth with an unsupported scheme or no proof; closing"
            );
            return Ok(reply(ErrorCode::AuthFailed));
        }
    }
    let id = acl::digest_id(&String::from_utf8_lossy(&req.auth));
    let is_super = super_digest.as_deref() == Some(id.as_str());
    if (is_super && !c.auth.add("super", String::new())) || !c.auth.add("digest", id) {
        tracing::warn!(
            peer = %c.peer,
            session = format!("0x{:x}", c.session),
            most = acl::MOST_IDS,
            "auth: the connection holds the most identities a connection may; closing it"
        );
        return Ok(reply(ErrorCode::AuthFailed));
    }
    Ok(reply(ErrorCode::Ok))
}

/// whoAmI: the connection's identities as ZooKeeper's `AuthUtil.getClientInfos` lists them: the user name of
/// each (a digest id's user, not its hash; an ip's address; an x509 subject), `super` with an empty one (it has
/// no authentication provider).
pub fn who_am_i(st: &State, conn: ConnId) -> Reply {
    let client_info = st
        .conns
        .get(&conn)
        .map(|c| {
            acl::in_zookeeper_order(&c.auth)
                .into_iter()
                .map(|id| ClientInfo {
                    auth_scheme: id.scheme.clone(),
                    user: match id.scheme.as_str() {
                        "digest" => id
                            .id
                            .split_once(':')
                            .map_or(id.id.clone(), |(u, _)| u.to_string()),
                        "super" => String::new(),
                        _ => id.id.clone(),
                    },
                })
                .collect()
        })
        .unwrap_or_default();
    Reply::ok(&WhoAmIResponse { client_info })
}

/// closeSession: deletes the session's ephemerals (one txn, notifications first), replies, then closes.
pub fn close(st: &mut State, session: i64) -> Reply {
    st.commit(Txn::CloseSession { id: session });
    Reply {
        close: true,
        ..Reply::empty()
    }
}
