//! What errors tell: a distinct authentication failure, and a released guard whose session ended.

use zklock::zookeeper_client::Client;
use zklock::{Error, LostReason, Mutex};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

on_every_server! {
    // Credentials the server refuses (an auth scheme it does not have) end the session with `AUTH_FAILED`: a
    // recipe then says so, not "the client is closed".
    async fn refused_credentials_are_an_authentication_failure(hosts: &str) {
        let zk = Client::connect(hosts).await.unwrap();
        let refused = zk.auth("no-such-scheme", b"whoever").await.unwrap_err();
        assert_eq!(Error::from(refused), Error::AuthFailed);
        let err = Mutex::new(&zk, &unique_path("auth-failed")).unwrap().try_lock().await.unwrap_err();
        assert_eq!(err, Error::AuthFailed);
        assert!(err.is_terminal());
        assert_ne!(err.to_string(), Error::Closed.to_string());
    }

    // A guard whose session expired releases with `Ok`, as its documentation says: the node went with the session.
    async fn releasing_a_guard_whose_session_expired_succeeds(hosts: &str) {
        let zk = client(hosts).await;
        let guard = Mutex::new(&zk, &unique_path("release-expired")).unwrap().lock().await.unwrap();
        zklock_testkit::expire_session(hosts, &zk).await;
        assert_eq!(eventually("the loss", guard.lost()).await, LostReason::SessionExpired);
        assert_eq!(guard.release().await, Ok(()));
    }
}
