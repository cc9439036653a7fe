//! The SASL request (opcode 102) and the "require authentication" check, as ZooKeeper 3.8's
//! `ZooKeeperServer.processSasl` and `AuthenticationHelper.enforceAuthentication` answer them.

use zklock_codec::{Decode, Encode, ErrorCode, GetSaslRequest, Reader, SetSaslResponse};

use super::{Malformed, Reply};
use crate::sasl::digest_md5::{DigestMd5, Step};
use crate::state::State;
use crate::watch::ConnId;

/// One step of a client's SASL exchange. Replies carry zxid 0, as ZooKeeper's. Without SASL configured the
/// answer is success with a null token and no identity (ZooKeeper without a JAAS `Server` section has no SASL
/// server; it catches the NullPointerException and answers so). A failed exchange is answered `AuthFailed`, or
/// `SessionClosedRequireSaslAuth` when `sasl` is enforced, with a null token, and the connection is closed (its
/// session lives on until it expires, as in ZooKeeper).
pub fn sasl(st: &mut State, conn: ConnId, r: &mut Reader<'_>) -> Result<Reply, Malformed> {
    let req = GetSaslRequest::decode(r)?;
    let reply = |token: Option<Vec<u8>>| Reply {
        body: SetSaslResponse { token }.to_bytes(),
        zxid: Some(0),
        ..Reply::empty()
    };
    let Some(config) = st.sasl.clone() else {
        return Ok(reply(None));
    };
    let required = st.enforce_auth_schemes.iter().any(|s| s == "sasl");
    let Some(c) = st.conns.get_mut(&conn) else {
        return Ok(Reply::err(ErrorCode::AuthFailed));
    };
    let exchange = c.sasl.get_or_insert(DigestMd5::Start);
    match exchange.step(&req.token, |user| config.users.get(user).cloned()) {
        Ok(Step::Challenge(token)) => Ok(reply(Some(token))),
        Ok(Step::Authenticated { user, token }) => {
            tracing::info!(
                session = format!("0x{:x}", c.session),
                user,
                "adding SASL authorization"
            );
            // At most two ids per configured user: the bound on a connection's ids is never reached here.
            if config.super_user.as_deref() == Some(user.as_str()) {
                c.auth.add("super", String::new());
            }
            c.auth.add("sasl", user);
            Ok(reply(Some(token)))
        }
        Err(reason) => {
            tracing::warn!(peer = %c.peer, reason, "client failed to SASL authenticate; closing its connection");
            let err = if required {
                ErrorCode::SessionClosedRequireSaslAuth
            } else {
                ErrorCode::AuthFailed
            };
            Ok(Reply {
                err,
                close: true,
                body_on_error: true,
                ..reply(None)
            })
        }
    }
}

/// `Some(reply)` when authentication is enforced and the connection has none of the enforced schemes' ids: the
/// request is refused with `SessionClosedRequireSaslAuth` (zxid 0, no body) and the connection closed.
pub fn refuse_unauthenticated(st: &State, conn: ConnId) -> Option<Reply> {
    if st.enforce_auth_schemes.is_empty() {
        return None;
    }
    let c = st.conns.get(&conn);
    if c.is_some_and(|c| {
        c.auth
            .iter()
            .any(|id| st.enforce_auth_schemes.contains(&id.scheme))
    }) {
        return None;
    }
    // Who: the peer and the session, so that the client refused can be found (issue 33.9).
    tracing::warn!(
        peer = %c.map_or_else(String::new, |c| c.peer.to_string()),
        session = %c.map_or_else(String::new, |c| format!("0x{:x}", c.session)),
        schemes = ?st.enforce_auth_schemes,
        "client has not authenticated with an enforced scheme; closing its connection"
    );
    Some(Reply {
        zxid: Some(0),
        close: true,
        ..Reply::err(ErrorCode::SessionClosedRequireSaslAuth)
    })
}
