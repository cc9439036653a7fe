//! Leader election: inheritance in queue order, observing the leader, expiry of the leader's session, the
//! re-queue loop, never two leaders across rapid reconnects (Curator LeaderLatch #1137/#1169) or a partition, and
//! (on a dedicated ensemble) the ZooKeeper leader dying.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use zklock::zookeeper_client::{Client, SessionState};
use zklock::{Error, LeaderElection, Leadership, LostPolicy, LostReason, Session};
use zklock_testkit::{expire_session, unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

/// A candidate of `dir` on `client` campaigning in a task, returned once it waits behind the leader.
async fn waiting_candidate(client: &Client, dir: &str) -> JoinHandle<zklock::Result<Leadership>> {
    spawn_waiting(Session::new(client), |session| {
        let election = LeaderElection::new(session, dir).unwrap();
        async move { election.campaign().await }
    })
    .await
}

on_every_server! {
    async fn successors_inherit_in_queue_order(hosts: &str) {
        let dir = unique_path("elect-order");
        let watcher_client = client(hosts).await;
        let election = LeaderElection::new(&watcher_client, &dir).unwrap();
        let mut observer = election.observe();
        assert_eq!(eventually("the first observation", observer.next()).await.unwrap(), None);
        assert_eq!(election.leader().await.unwrap(), None);

        let first_client = client(hosts).await;
        let first = LeaderElection::new(&first_client, &dir).unwrap().with_data("candidate-0");
        let leader = first.try_campaign().await.unwrap().expect("the only candidate leads");
        let seen = eventually("the first leader", observer.next()).await.unwrap().expect("a leader");
        assert_eq!((seen.data.as_slice(), seen.fencing_token), (&b"candidate-0"[..], leader.fencing_token()));
        assert_eq!(seen.session_id, first_client.session_id().0);
        assert_eq!(election.leader().await.unwrap(), Some(seen));

        // Three more candidates queue in order; a try_campaign does not jump the queue.
        let mut terms = Vec::new();
        for i in 1..=3 {
            let client = client(hosts).await;
            assert!(LeaderElection::new(&client, &dir).unwrap().try_campaign().await.unwrap().is_none());
            let (listener, mut rx) = events();
            let (resign_tx, resign_rx) = tokio::sync::oneshot::channel::<()>();
            let candidate = LeaderElection::new(Session::new(&client).with_listener(listener), &dir).unwrap().with_data(format!("candidate-{i}"));
            terms.push((tokio::spawn(async move {
                let leadership = candidate.campaign().await.unwrap();
                let token = leadership.fencing_token();
                resign_rx.await.unwrap();
                leadership.release().await.unwrap();
                token
            }), resign_tx));
            queued(&mut rx).await;
        }
        let mut previous = leader.fencing_token();
        leader.release().await.unwrap();
        for (i, (task, resign)) in terms.into_iter().enumerate() {
            let seen = eventually("the next leader", observer.next()).await.unwrap().expect("a leader");
            assert_eq!(seen.data, format!("candidate-{}", i + 1).into_bytes(), "inherited in queue order");
            assert!(seen.fencing_token > previous);
            previous = seen.fencing_token;
            resign.send(()).unwrap();
            assert_eq!(eventually("the term to end", task).await.unwrap(), seen.fencing_token);
        }
        assert_eq!(eventually("nobody leads", observer.next()).await.unwrap(), None);
    }

    async fn leader_session_expiry_hands_over(hosts: &str) {
        let dir = unique_path("elect-expiry");
        let (a, b) = (client(hosts).await, client(hosts).await);
        let leadership = LeaderElection::new(&a, &dir).unwrap().campaign().await.unwrap();
        let successor = waiting_candidate(&b, &dir).await;
        expire_session(hosts, &a).await;
        assert_expired(eventually("the lost signal", leadership.lost()).await);
        let next = eventually("the successor to lead", successor).await.unwrap().unwrap();
        assert!(next.fencing_token() > leadership.fencing_token());
        await_expired(&a).await;
        assert_eq!(LeaderElection::new(&a, &dir).unwrap().campaign().await.unwrap_err(), Error::SessionExpired);
        next.release().await.unwrap();
    }

    async fn lead_loop_requeues_after_losing_leadership(hosts: &str) {
        let dir = unique_path("elect-loop");
        let (ours, admin) = (client(hosts).await, client(hosts).await);
        let election = LeaderElection::new(&ours, &dir).unwrap();
        let terms = Arc::new(AtomicUsize::new(0));
        let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
        let result = {
            let (terms, tokens, admin) = (terms.clone(), tokens.clone(), admin.clone());
            eventually("the lead loop", election.lead(move |term| {
                let (terms, tokens, admin) = (terms.clone(), tokens.clone(), admin.clone());
                async move {
                    tokens.lock().unwrap().push(term.fencing_token);
                    match terms.fetch_add(1, Ordering::SeqCst) {
                        // First term: somebody deletes our node; the loop must stop this work and queue again.
                        0 => {
                            admin.delete(&term.path, None).await.unwrap();
                            std::future::pending::<()>().await;
                            unreachable!()
                        }
                        // Second term: resign and queue again on our own.
                        1 => ControlFlow::Continue(()),
                        _ => ControlFlow::Break(term.fencing_token),
                    }
                }
            }))
            .await
        };
        let last = result.unwrap();
        assert_eq!(terms.load(Ordering::SeqCst), 3);
        let tokens = tokens.lock().unwrap().clone();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        assert_eq!(*tokens.last().unwrap(), last);
        assert!(children(&admin, &dir).await.is_empty(), "resigned at the end");
    }

    // Issue 33: the work of a term has its leadership's lost signal and fenced writes. A leader whose node somebody
    // else deletes sees `term.lost()` complete inside the work, and the term's fenced writes, which committed while
    // it led, are refused from then on (a paused leader's stale loop is caught by the server).
    async fn a_term_sees_its_loss_and_its_fenced_writes_are_refused(hosts: &str) {
        let dir = unique_path("elect-term-lost");
        let target = format!("{dir}-data");
        let (ours, admin) = (client(hosts).await, client(hosts).await);
        admin.create(&target, b"v0", &PERSISTENT).await.unwrap();
        let election = LeaderElection::new(&ours, &dir).unwrap();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let outcome = eventually("the lead loop", election.lead(|term| {
            let (admin, target, seen_tx) = (admin.clone(), target.clone(), seen_tx.clone());
            async move {
                assert!(!term.is_lost());
                assert_eq!(term.lost_reason(), None);
                let mut writes = term.fenced_writes();
                writes.set_data(&target, b"v1", None).unwrap();
                writes.commit().await.expect("committed while we lead");
                admin.delete(&term.path, None).await.unwrap();
                let reason = term.lost().await;
                seen_tx.send(term).unwrap();
                ControlFlow::Break(reason)
            }
        }))
        .await;
        assert_eq!(outcome, Ok(LostReason::NodeDeleted), "the work saw the loss itself");
        let term = seen.recv().await.unwrap();
        assert!(term.is_lost());
        assert_eq!(term.session_valid_until(), None);
        let mut writes = term.fenced_writes();
        writes.set_data(&target, b"stale", None).unwrap();
        assert_eq!(writes.commit().await.unwrap_err(), Error::LockLost { path: term.path.clone() });
        admin.sync(&target).await.unwrap();
        assert_eq!(admin.get_data(&target).await.unwrap().0, b"v1");
    }

    async fn rapid_reconnects_never_make_two_leaders(hosts: &str) {
        // Curator LeaderLatch #1137/#1169: after rapid reconnects two clients led at once. Cut the leader's
        // connection again and again: it must stay the only leader, its node untouched, the follower waiting.
        let dir = unique_path("elect-reconnect");
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let leader_client = client_with_timeout(&proxy.connect_string(), Duration::from_secs(4)).await;
        let follower_client = client(hosts).await;
        let leadership = LeaderElection::new(&leader_client, &dir).unwrap().campaign().await.unwrap();
        let leader_node = leadership.path().rsplit('/').next().unwrap().to_string();
        let follower = waiting_candidate(&follower_client, &dir).await;
        let mut states = leader_client.state_watcher();
        for cut in 0..10 {
            // Cut until the client notices (a cut can race with the proxy accepting the reconnection), then wait
            // for it to be back.
            let mut noticed = false;
            for _ in 0..5 {
                proxy.cut_all();
                let disconnected = tokio::time::timeout(Duration::from_secs(5), async {
                    loop {
                        match states.changed().await {
                            SessionState::Disconnected => return,
                            state if state.is_terminated() => panic!("cut {cut}: the leader's session ended: {state:?}"),
                            _ => {}
                        }
                    }
                });
                if disconnected.await.is_ok() {
                    noticed = true;
                    break;
                }
            }
            assert!(noticed, "cut {cut}: the leader never noticed its connection was cut");
            eventually("the leader to reconnect", async {
                loop {
                    match states.changed().await {
                        SessionState::SyncConnected => break,
                        state if state.is_terminated() => panic!("cut {cut}: the leader's session ended: {state:?}"),
                        _ => {}
                    }
                }
            })
            .await;
            let nodes = children(&follower_client, &dir).await;
            assert_eq!(nodes.len(), 2, "{nodes:?}");
            assert!(nodes.contains(&leader_node), "the leader's node survives reconnection: {nodes:?}");
            assert!(!leadership.is_lost(), "{:?}", leadership.lost_reason());
            assert!(!follower.is_finished(), "two leaders");
        }
        assert!(proxy.connections() >= 11);

        // A partition: the leader hears nothing; the server expires its session and the follower leads. The old
        // leader must have been told it lost leadership before that.
        proxy.set_blackhole(true);
        proxy.cut_all();
        let next = eventually("the follower to lead", follower).await.unwrap().unwrap();
        assert!(leadership.is_lost(), "the old leader still believed it led when the follower took over");
        assert!(next.fencing_token() > leadership.fencing_token());
        next.release().await.unwrap();
        proxy.set_blackhole(false);
    }
}

/// On a dedicated ensemble: the ZooKeeper leader member dies while a zklock leader leads and a candidate waits.
/// Leadership does not move (the session survives the ensemble's election); then the zklock leader's session
/// expires and the candidate takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_failover_keeps_the_leader_until_its_session_expires() {
    let (mut zk, hosts) = dedicated_ensemble().await;
    let dir = unique_path("elect-failover");
    let (a, b) = (
        client_with_timeout(&hosts, FAILOVER_TIMEOUT).await,
        client_with_timeout(&hosts, FAILOVER_TIMEOUT).await,
    );
    let leadership = LeaderElection::new(Session::new(&a).with_lost_policy(LostPolicy::SessionOnly), &dir)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let successor = waiting_candidate(&b, &dir).await;
    let member = kill_leader(&mut zk);
    let observer = client_with_timeout(&hosts, FAILOVER_TIMEOUT).await;
    let seen = eventually(
        "the leader after failover",
        LeaderElection::new(&observer, &dir).unwrap().leader(),
    )
    .await
    .unwrap()
    .expect("a leader");
    assert_eq!(seen.path, leadership.path(), "leadership did not move");
    assert!(!leadership.is_lost(), "{:?}", leadership.lost_reason());
    assert!(!successor.is_finished(), "two leaders");
    expire_session(&hosts, &a).await;
    assert_expired(eventually("the lost signal", leadership.lost()).await);
    let next = eventually("the successor to lead", successor)
        .await
        .unwrap()
        .unwrap();
    assert!(next.fencing_token() > leadership.fencing_token());
    next.release().await.unwrap();
    restart_member(&mut zk, member);
}
