//! Expiring a client's session on demand, the way ZooKeeper's own tests do it: a second connection re-attaches
//! the session (same id and password) and closes it.
//!
//! Doing that with a second `zookeeper_client::Client` does not work reliably: re-attaching moves the session away
//! from the original client, which reconnects at once and moves it back before the second client has finished its
//! handshake (it waits for a ping reply), so the two chase each other and the close is never sent. Instead the
//! testkit speaks the protocol itself and sends the ConnectRequest and the closeSession request in one write, so
//! the server processes the close right after the re-attach. The password is not public in `zookeeper_client`;
//! [`credentials`] obtains it from the client's own ConnectRequest.

mod close;
mod credentials;

use std::time::Duration;

use zookeeper_client::Client;

use self::close::{close_session, Closed};
use self::credentials::capture_credentials;

/// How long each step (capturing the credentials, one close attempt) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// Close attempts before giving up (an attempt fails if the original client steals the session back first).
const MAX_ATTEMPTS: usize = 10;

/// Expires `client`'s session on the server(s) of `connect` (a connect string; a chroot suffix is ignored) and
/// returns once the server has completed the close.
///
/// The server treats the close like an expiry: it deletes the session's ephemeral nodes (firing their watches)
/// before it replies. `client` loses its connection because its session moved away, reconnects by itself, is told
/// the session expired, and its state watcher reports `SessionState::Expired`.
///
/// # Panics
/// No server of `connect` can be reached, a step takes over 60 s, or the session survives 10 attempts: the fault
/// the test wanted to inject did not happen, so the test cannot meaningfully go on.
pub async fn expire_session(connect: &str, client: &Client) {
    let id = client.session_id();
    let credentials = match tokio::time::timeout(STEP_TIMEOUT, capture_credentials(client)).await {
        Ok(Ok(credentials)) => credentials,
        Ok(Err(error)) => panic!("expire_session: cannot learn the password of session {id}: {error}"),
        Err(_) => panic!("expire_session: learning the password of session {id} took over {STEP_TIMEOUT:?}"),
    };
    for attempt in 1..=MAX_ATTEMPTS {
        match tokio::time::timeout(STEP_TIMEOUT, close_session(connect, &credentials)).await {
            Ok(Ok(Closed::Now)) => {
                tracing::debug!(session = %id, attempt, "session closed on demand");
                return;
            }
            Ok(Ok(Closed::Already)) => {
                // An earlier attempt's close was accepted but its reply lost. The server refuses re-attaching as
                // soon as it *starts* closing; wait until the close is applied (ephemerals gone) too.
                settle(connect).await;
                tracing::debug!(session = %id, attempt, "session closed on demand (confirmed)");
                return;
            }
            Ok(Ok(Closed::Interrupted)) => {
                tracing::debug!(session = %id, attempt, "close interrupted; retrying")
            }
            Ok(Err(error)) => panic!("expire_session: cannot close session {id} via {connect}: {error}"),
            Err(_) => panic!("expire_session: closing session {id} via {connect} took over {STEP_TIMEOUT:?}"),
        }
    }
    panic!("expire_session: session {id} still alive after {MAX_ATTEMPTS} close attempts via {connect}");
}

/// Waits until every transaction the server(s) had started, the close among them, is applied: ZooKeeper processes
/// requests in order, and `sync` on a fresh session is ordered after all of them (through the leader in an
/// ensemble).
async fn settle(connect: &str) {
    let settled = async {
        let client = Client::connect(connect).await?;
        client.sync("/").await
    };
    match tokio::time::timeout(STEP_TIMEOUT, settled).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => panic!("expire_session: cannot sync via {connect}: {error}"),
        Err(_) => panic!("expire_session: sync via {connect} took over {STEP_TIMEOUT:?}"),
    }
}

/// Returns once `path` does not exist, as `client` sees it: at once, or when an `exists` watch says it was deleted
/// (no polling). Unbounded: the caller bounds the wait.
pub async fn await_deleted(client: &Client, path: &str) {
    loop {
        let (stat, watcher) = client.check_and_watch_stat(path).await.unwrap();
        if stat.is_none() {
            return;
        }
        watcher.changed().await;
    }
}

/// The p99, in milliseconds, of `n` `exists` round trips of `client`, one at a time, calling `after_each` after
/// each (say, to sample the server's memory).
pub async fn exists_p99_ms(client: &Client, n: usize, mut after_each: impl FnMut()) -> f64 {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = std::time::Instant::now();
        client.check_stat("/").await.expect("exists");
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        after_each();
    }
    times.sort_by(f64::total_cmp);
    times[(n * 99).div_ceil(100) - 1]
}
