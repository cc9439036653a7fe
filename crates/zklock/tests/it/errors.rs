//! What errors tell: a distinct authentication failure, a released guard whose session ended, and a retry time
//! budget that ends an operation during an outage.

use std::time::{Duration, Instant};

use zklock::zookeeper_client::Client;
use zklock::{Error, LostReason, Mutex, Queue, RetryPolicy, Session};
use zklock_testkit::{unique_path, Proxy};

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

    // A guard whose session expired releases with `Error::Lost`, as its documentation says: the node went with the
    // session, and the work done under it since was not protected.
    async fn releasing_a_guard_whose_session_expired_says_it_was_lost(hosts: &str) {
        let zk = client(hosts).await;
        let guard = Mutex::new(&zk, &unique_path("release-expired")).unwrap().lock().await.unwrap();
        zklock_testkit::expire_session(hosts, &zk).await;
        assert_eq!(eventually("the loss", guard.lost()).await, LostReason::SessionExpired);
        assert_eq!(guard.release().await, Err(Error::Lost(LostReason::SessionExpired)));
    }

    // `RetryPolicy::max_elapsed` ends an operation whose server went silent, long before the session would
    // expire; the same operation without a budget is still retrying then (the negative control).
    async fn a_time_budget_ends_retries_during_an_outage(hosts: &str) {
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let zk = client_with_timeout(&proxy.connect_string(), Duration::from_secs(30)).await;
        let dir = unique_path("retry-budget");
        let budget = Duration::from_millis(500);
        let budgeted = Session::new(&zk).with_retry(RetryPolicy::default().with_max_elapsed(Some(budget)));
        let bounded = Mutex::new(&budgeted, &dir).unwrap();
        let unbounded = Mutex::new(&zk, &dir).unwrap();

        proxy.set_blackhole(true);
        proxy.cut_all();
        let started = Instant::now();
        let bounded = async {
            let err = bounded.try_lock().await.unwrap_err();
            (err, started.elapsed())
        };
        let control = tokio::time::timeout(Duration::from_secs(4), unbounded.try_lock());
        let ((err, took), control) = tokio::join!(bounded, control);
        assert!(err.is_connection_loss(), "{err:?}");
        // Generous: the budget plus the last request's wait, far below the session timeout of 30 s.
        assert!(took < Duration::from_secs(4), "the budgeted try_lock took {took:?}");
        assert!(control.is_err(), "without a budget the try_lock ended during the outage: {control:?}");
        // The same for a queue's put (a transaction): it gives up, within the same generous bound.
        let queue = Queue::new(&budgeted, &unique_path("retry-budget-queue")).unwrap();
        let started = Instant::now();
        let err = queue.put(b"item").await.unwrap_err();
        assert!(err.is_connection_loss(), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(4), "the budgeted put took {:?}", started.elapsed());
        proxy.set_blackhole(false);
    }
}

on_every_server! {
    // The server goes away mid-way (its port then refuses connections) under a session whose `RetryPolicy` has a
    // time budget: the error says how often and how long it retried, not "tried once, not retried".
    async fn a_spent_time_budget_says_how_long_it_retried(hosts: &str) {
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let zk = client_with_timeout(&proxy.connect_string(), Duration::from_secs(30)).await;
        let budget = Duration::from_secs(2);
        let session = Session::new(&zk).with_retry(RetryPolicy::default().with_max_elapsed(Some(budget)));
        let mutex = Mutex::new(&session, &unique_path("retry-budget-message")).unwrap();
        drop(proxy);
        let started = Instant::now();
        let err = mutex.try_lock().await.unwrap_err();
        let took = started.elapsed();
        let message = err.to_string();
        assert!(err.is_connection_loss() && !err.is_terminal(), "{err:?}");
        assert!(!message.contains("not retried"), "{message}");
        assert!(message.contains(" over 2.0 s, the last: "), "{message}");
        assert!(message.contains("tried once over") || message.contains("retried "), "{message}");
        assert!(took >= budget && took < Duration::from_secs(6), "took {took:?}");
    }
}
