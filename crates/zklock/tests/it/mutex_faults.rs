//! The lock under faults: session expiry, deleted nodes, lost create replies, vanishing predecessors,
//! disconnection, and (on a dedicated ensemble) the leader dying.

use std::time::Duration;

use zklock::{Error, LostPolicy, LostReason, Mutex, Session};
use zklock_testkit::{expire_session, opcode, unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

on_every_server! {
    async fn session_expiry_fires_lost_and_hands_over(hosts: &str) {
        let dir = unique_path("mutex-expiry");
        let (holder_client, waiter_client) = (client(hosts).await, client(hosts).await);
        let holder = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap();
        let lost = holder.lost();
        let waiter = {
            let dir = dir.clone();
            tokio::spawn(async move { Mutex::new(&waiter_client, &dir).unwrap().lock().await.map(|g| g.fencing_token()) })
        };
        let mut states = holder_client.state_watcher();
        expire_session(hosts, &holder_client).await;
        let reason = eventually("the lost signal", lost).await;
        // The deletion of our node can reach us before the news of the expiry; both say the lock is gone.
        assert!(matches!(reason, LostReason::SessionExpired | LostReason::NodeDeleted), "{reason:?}");
        assert!(holder.is_lost());
        let token = eventually("the waiter to take over", waiter).await.unwrap().unwrap();
        assert!(token > holder.fencing_token());
        eventually("the client to learn of the expiry", async {
            while states.changed().await != zklock::zookeeper_client::SessionState::Expired {}
        })
        .await;
        // Acquiring on an expired session fails clearly.
        let err = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap_err();
        assert_eq!(err, Error::SessionExpired);
    }

    async fn node_deleted_by_somebody_else(hosts: &str) {
        let dir = unique_path("mutex-deleted");
        let (a, b, admin) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let holder = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        // A waiter whose node is deleted fails with NodeDeleted instead of waiting forever.
        let waiting = {
            let dir = dir.clone();
            tokio::spawn(async move { Mutex::new(&b, &dir).unwrap().lock().await.map(|_| ()) })
        };
        let queued = await_children(&admin, &dir, "the waiter to queue", |c| c.len() == 2).await;
        let holder_name = holder.path().rsplit('/').next().unwrap().to_string();
        let waiter_node = queued.iter().find(|c| **c != holder_name).unwrap().clone();
        admin.delete(&format!("{dir}/{waiter_node}"), None).await.unwrap();
        let err = eventually("the waiter to fail", waiting).await.unwrap().unwrap_err();
        assert!(matches!(err, Error::NodeDeleted { .. }), "{err:?}");
        // A holder whose node is deleted is told so.
        admin.delete(holder.path(), None).await.unwrap();
        assert_eq!(eventually("the lost signal", holder.lost()).await, LostReason::NodeDeleted);
        assert_eq!(holder.release().await, Err(Error::Lost(LostReason::NodeDeleted)), "released, and told so");
    }

    async fn lost_create_reply_leaves_exactly_one_node(hosts: &str) {
        let dir = unique_path("mutex-lost-reply");
        let (proxy, client) = proxied_client(hosts).await;
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let guard = eventually("the lock despite the lost reply", Mutex::new(&client, &dir).unwrap().lock())
            .await
            .unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let observer = crate::support::client(hosts).await;
        let nodes = children(&observer, &dir).await;
        assert_eq!(nodes.len(), 1, "exactly one node: {nodes:?}");
        assert_eq!(guard.path(), format!("{dir}/{}", nodes[0]));
        guard.release().await.unwrap();
        assert!(children(&observer, &dir).await.is_empty());
    }

    async fn predecessor_vanishing_never_stalls(hosts: &str) {
        // A contender between the holder and us leaves while we list and set our watch. Whatever the interleaving
        // (the deletion lands before our listing, between listing and watch, or after the watch), we must acquire
        // once the holder leaves.
        let dir = unique_path("mutex-vanish");
        let (holder_client, middle_client, ours) = (client(hosts).await, client(hosts).await, client(hosts).await);
        for round in 0..12u64 {
            let holder = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap();
            let middle_mutex = Mutex::new(&middle_client, &dir).unwrap();
            let middle = tokio::spawn(async move { middle_mutex.lock_timeout(Duration::from_secs(60)).await });
            await_children(&ours, &dir, "the middle contender", |c| c.len() == 2).await;
            let mine = {
                let (ours, dir) = (ours.clone(), dir.clone());
                tokio::spawn(async move { Mutex::new(&ours, &dir).unwrap().lock().await })
            };
            // Cancel the middle contender after a varying head start of ours.
            tokio::time::sleep(Duration::from_micros(round * 150)).await;
            middle.abort();
            await_children(&ours, &dir, "the middle contender to leave", |c| c.len() <= 2).await;
            holder.release().await.unwrap();
            let guard = eventually("our acquire after the holder left", mine).await.unwrap().unwrap();
            guard.release().await.unwrap();
            await_children(&ours, &dir, "an empty queue", |c| c.is_empty()).await;
        }
    }

    async fn disconnection_beyond_the_grace_counts_as_lost(hosts: &str) {
        let dir = unique_path("mutex-disconnect");
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let client = client_with_timeout(&proxy.connect_string(), Duration::from_secs(4)).await;
        let session = Session::new(&client).with_lost_policy(LostPolicy::DisconnectedFor(Duration::from_millis(300)));
        let guard = Mutex::new(session, &dir)
            .unwrap()
            .lock()
            .await
            .unwrap();
        assert!(!guard.is_lost());
        proxy.set_blackhole(true);
        proxy.cut_all();
        let reason = eventually("the lost signal", guard.lost()).await;
        assert!(matches!(reason, LostReason::Disconnected | LostReason::SessionExpired), "{reason:?}");
        proxy.set_blackhole(false);
    }
}

/// The ensemble loses its leader while one client holds the lock and another waits: the session survives the
/// election, the holder keeps its node, and the waiter gets the lock when the holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_leader_killed_while_holding_and_waiting() {
    let (mut zk, hosts) = dedicated_ensemble().await;
    let dir = unique_path("mutex-failover");
    let holder_client = client_with_timeout(&hosts, FAILOVER_TIMEOUT).await;
    let waiter_client = client_with_timeout(&hosts, FAILOVER_TIMEOUT).await;
    let holder = Mutex::new(
        Session::new(&holder_client).with_lost_policy(LostPolicy::SessionOnly),
        &dir,
    )
    .unwrap()
    .lock()
    .await
    .unwrap();
    let waiter = waiting_lock(&waiter_client, &dir).await;
    let observer = client_with_timeout(&hosts, FAILOVER_TIMEOUT).await;
    await_children(&observer, &dir, "the waiter to queue", |c| c.len() == 2).await;
    // Beside it, a holder under `LostPolicy::Suspend` whose validity is kept (as `zklock run` keeps it): the
    // election may suspend it, and it is resumed, never lost (issue 32). Its session outlasts the election on a
    // loaded machine, as the others'.
    let suspending_client = client_with_timeout(&hosts, FAILOVER_TIMEOUT).await;
    let suspending = Mutex::new(
        Session::new(&suspending_client).with_lost_policy(LostPolicy::Suspend),
        &format!("{dir}-suspending"),
    )
    .unwrap()
    .lock()
    .await
    .unwrap();
    let mut validity = suspending.session_validity();
    eventually("a first confirmation", validity.wait_for(Option::is_some))
        .await
        .unwrap();
    let leader = kill_leader(&mut zk);
    let elected = std::time::Instant::now();
    eventually(
        "a confirmation after the election",
        validity.wait_for(|v| v.is_some_and(|v| v > elected)),
    )
    .await
    .unwrap();
    assert_eq!(
        eventually("the suspending holder", suspending.resumed()).await,
        Ok(())
    );
    assert!(!suspending.is_lost(), "{:?}", suspending.lost_reason());
    suspending.release().await.unwrap();
    // The holder's node is still there after the election, and the waiter still waits.
    let nodes = await_children(&observer, &dir, "the queue after failover", |c| c.len() == 2).await;
    assert!(
        nodes.iter().any(|n| holder.path().ends_with(n.as_str())),
        "the holder keeps its node: {nodes:?}"
    );
    assert!(!holder.is_lost(), "{:?}", holder.lost_reason());
    assert!(!waiter.is_finished());
    let holder_token = holder.fencing_token();
    let next = release_to_waiter(holder, waiter).await;
    assert!(next.fencing_token() > holder_token);
    restart_member(&mut zk, leader);
}
