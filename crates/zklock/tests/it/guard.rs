//! What every guard has: the session validity it keeps while held, and a lost signal that stays quiet when the
//! owner gives the guard up.

use std::time::{Duration, Instant};

use zklock::{Error, LostReason, Mutex};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

on_every_server! {
    // While held, the instant before which the session cannot expire lies ahead, is renewed at the heartbeat's
    // pace (a tenth of the session timeout) and never further than half a session timeout ahead (a heartbeat sent
    // at t proves the leader's knowledge of us only up to about t - T/2: see lost.rs); a lost guard has none.
    async fn session_validity_advances_while_held(hosts: &str) {
        let dir = unique_path("guard-validity");
        let holder = client_with_timeout(hosts, Duration::from_secs(4)).await;
        let timeout = holder.session_timeout();
        let before = Instant::now();
        let guard = Mutex::new(&holder, &dir).unwrap().lock().await.unwrap();
        let mut validity = guard.session_validity();
        let first = eventually("a first confirmed contact", validity.wait_for(Option::is_some))
            .await
            .unwrap()
            .expect("confirmed");
        assert!(first >= before + timeout / 2, "from a request sent after we started");
        assert!(first > Instant::now() && first <= Instant::now() + timeout / 2, "ahead, but at most half a timeout");
        assert!(guard.session_valid_until().is_some_and(|v| v >= first));
        let mut last = first;
        let renewing = Instant::now();
        for renewal in 1..=3 {
            eventually("a renewal", validity.changed()).await.expect("still held");
            let next = validity.borrow_and_update().expect("still held");
            let now = Instant::now();
            assert!(next > last, "renewal {renewal} moved it on");
            assert!(next > now && next <= now + timeout / 2, "renewal {renewal}: ahead, but at most half a timeout");
            last = next;
        }
        // Three heartbeats, a tenth of the timeout apart (generously bounded on a loaded machine).
        assert!(renewing.elapsed() < timeout * 2, "renewed at the heartbeat's pace: {:?}", renewing.elapsed());

        let admin = client(hosts).await;
        admin.delete(guard.path(), None).await.unwrap();
        assert_eq!(eventually("the loss", guard.lost()).await, LostReason::NodeDeleted);
        assert_eq!(guard.session_valid_until(), None, "a lost guard has no session validity");
    }

    // Issue 33: releasing a guard that had been lost says so. A guard whose node somebody else deleted releases
    // with `Error::Lost(NodeDeleted)`; a guard held all along releases with `Ok`, as before. (An expiry: errors.rs.)
    async fn releasing_a_lost_guard_says_it_was_lost(hosts: &str) {
        let dir = unique_path("guard-release-lost");
        let (holder, admin) = (client(hosts).await, client(hosts).await);
        let mutex = Mutex::new(&holder, &dir).unwrap();
        let guard = mutex.lock().await.unwrap();
        admin.delete(guard.path(), None).await.unwrap();
        assert_eq!(eventually("the loss", guard.lost()).await, LostReason::NodeDeleted);
        assert_eq!(guard.release().await, Err(Error::Lost(LostReason::NodeDeleted)));

        let guard = mutex.lock().await.unwrap();
        assert_eq!(guard.release().await, Ok(()));
        await_children(&admin, &dir, "our node to go", |c| c.is_empty()).await;
    }

    // Heartbeats cost two requests per tenth of the session timeout, so only a guard whose session validity was asked
    // for sends them: a guard nobody asks sends nothing after its watch is armed; asking starts them.
    async fn heartbeats_only_once_the_validity_is_asked_for(hosts: &str) {
        let dir = unique_path("guard-quiet");
        let proxy = zklock_testkit::Proxy::start(first_server(hosts)).await.unwrap();
        let holder = client_with_timeout(&proxy.connect_string(), Duration::from_secs(4)).await;
        let timeout = holder.session_timeout();
        let guard = Mutex::new(&holder, &dir).unwrap().lock().await.unwrap();
        // The watch on our own node is armed with one `exists`, sent right after the create.
        let exists = || proxy.requests(zklock_testkit::opcode::EXISTS);
        let deadline = Instant::now() + EVENTUALLY;
        while exists() == 0 {
            assert!(Instant::now() < deadline, "the watch on our node was never armed");
            tokio::task::yield_now().await;
        }
        // Four heartbeat periods with nobody asking: no event can show that nothing happens, so this waits.
        tokio::time::sleep(timeout * 4 / 10).await;
        let syncs = || proxy.requests(zklock_testkit::opcode::SYNC);
        assert_eq!((exists(), syncs()), (1, 0), "no heartbeat while nobody asks for the session validity");
        // The watch's reply came from whichever server we are on: it proves nothing about the leader, so nothing
        // is valid until a heartbeat went through it.
        let mut validity = guard.session_validity();
        assert_eq!(*validity.borrow_and_update(), None);
        for _ in 0..2 {
            eventually("a renewal", validity.changed()).await.expect("still held");
        }
        assert!(exists() >= 3, "asking started the heartbeats: {} exists", exists());
        assert!(syncs() >= 2, "each heartbeat goes through the leader: {} syncs", syncs());
        guard.release().await.unwrap();
    }

    // The watch on our own node is fired by our own delete, not removed: a watch dropped unfired costs a
    // `removeWatches` request (zookeeper-client sends one), which every release once paid — an aborted monitor task
    // dropped it. Released or dropped, lock after lock: none.
    async fn a_release_costs_no_remove_watches(hosts: &str) {
        let dir = unique_path("guard-no-remove-watches");
        let (proxy, client) = proxied_client(hosts).await;
        let mutex = Mutex::new(&client, &dir).unwrap();
        for round in 0..10 {
            let guard = mutex.lock().await.unwrap();
            let lost = guard.lost();
            if round % 2 == 0 {
                guard.release().await.unwrap();
            } else {
                drop(guard);
            }
            assert_eq!(eventually("the dismissed signal to end", lost).await, LostReason::Released);
        }
        // Looked at on a session of its own: the look's child watch, dropped unfired once the directory is empty,
        // costs a `removeWatches` of its own that must not be counted as zklock's.
        let observer = crate::support::client(hosts).await;
        await_children(&observer, &dir, "every node to go", |c| c.is_empty()).await;
        assert_eq!(proxy.requests(zklock_testkit::opcode::REMOVE_WATCHES), 0);
    }

    // Dropping a guard deletes its node; its lost signal must not take that for a deletion by somebody else
    // (which once showed up as a stray "lock node lost" warning in a fault-free benchmark).
    async fn dropped_guards_report_no_loss(hosts: &str) {
        let dir = unique_path("guard-drop");
        let client = client(hosts).await;
        let mutex = Mutex::new(&client, &dir).unwrap();
        for _ in 0..20 {
            let guard = mutex.lock().await.unwrap();
            let lost = guard.lost();
            drop(guard);
            assert_eq!(eventually("the dismissed signal to end", lost).await, LostReason::Released);
        }
        await_children(&client, &dir, "every dropped guard's node to go", |c| c.is_empty()).await;
    }
}
