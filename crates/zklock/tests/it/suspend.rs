//! Suspended, then resumed or lost (`LostPolicy::Suspend`): an outage shorter than the session suspends a holder
//! instead of ending it; the holder comes back with the same node and fencing token, or learns it lost.
//! The same outage under a losing policy ends the guard (`mutex_faults::disconnection_beyond_the_grace_counts_as_lost`,
//! the control).

use std::time::Duration;

use std::ops::ControlFlow;

use zklock::{Error, LeaderElection, LostPolicy, LostReason, Mutex, Session};
use zklock_testkit::{expire_session, unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

/// Suspended this long after the connection went (the outage is as long as the test makes it).
const GRACE: Duration = Duration::from_millis(300);

on_every_server! {
    async fn an_outage_shorter_than_the_session_suspends_then_resumes_the_holder(hosts: &str) {
        let dir = unique_path("suspend-resume");
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let holder = client_with_timeout(&proxy.connect_string(), Duration::from_secs(10)).await;
        let session = Session::new(&holder).with_lost_policy(LostPolicy::SuspendAfter(GRACE));
        let guard = Mutex::new(session, &dir).unwrap().lock().await.unwrap();
        let token = guard.fencing_token();
        assert!(!guard.is_suspended());
        assert_eq!(guard.resumed().await, Ok(()), "a guard never suspended is resumed at once");

        // The server plays dead: our connection goes, and no new one is answered.
        proxy.set_blackhole(true);
        proxy.cut_all();
        assert_eq!(eventually("the suspension", guard.suspended()).await, None, "suspended, not lost");
        assert!(guard.is_suspended());
        assert!(!guard.is_lost());
        // Our node stands meanwhile, so nobody else can take the lock.
        let other = client(hosts).await;
        let rival = Mutex::new(&other, &dir).unwrap();
        assert!(rival.try_lock().await.unwrap().is_none(), "nobody takes a suspended holder's lock");

        // The server is back within the session: a heartbeat through the leader finds our node, and we go on.
        proxy.set_blackhole(false);
        assert_eq!(eventually("the resumption", guard.resumed()).await, Ok(()));
        assert!(!guard.is_suspended());
        assert!(!guard.is_lost());
        assert_eq!(guard.fencing_token(), token, "the same node, the same token");
        assert!(rival.try_lock().await.unwrap().is_none(), "still ours");
        guard.release().await.unwrap();
        let next = eventually("the next holder", rival.lock()).await.unwrap();
        assert!(next.fencing_token() > token);
        next.release().await.unwrap();
    }

    async fn a_session_that_ends_while_suspended_is_a_loss(hosts: &str) {
        let dir = unique_path("suspend-lost");
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let holder = client_with_timeout(&proxy.connect_string(), Duration::from_secs(10)).await;
        let session = Session::new(&holder).with_lost_policy(LostPolicy::SuspendAfter(GRACE));
        let guard = Mutex::new(session, &dir).unwrap().lock().await.unwrap();

        proxy.set_blackhole(true);
        proxy.cut_all();
        assert_eq!(eventually("the suspension", guard.suspended()).await, None);
        // The session ends at the server while we cannot reach it.
        expire_session(hosts, &holder).await;
        proxy.set_blackhole(false);
        let reason = eventually("the loss", guard.resumed()).await.unwrap_err();
        // The deletion of our node can reach us before the news of the expiry; both end the guard.
        assert!(matches!(reason, LostReason::SessionExpired | LostReason::NodeDeleted), "{reason:?}");
        assert!(guard.is_lost());
        assert!(!guard.is_suspended(), "a lost guard is not suspended");
        assert_eq!(guard.suspended().await, Some(reason), "suspended() reports the loss too");
        assert!(matches!(guard.release().await, Err(Error::Lost(_))));
    }

    async fn a_leaders_term_is_suspended_and_resumed_as_the_same_term(hosts: &str) {
        let dir = unique_path("suspend-term");
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let ours = client_with_timeout(&proxy.connect_string(), Duration::from_secs(10)).await;
        let session = Session::new(&ours).with_lost_policy(LostPolicy::SuspendAfter(GRACE));
        let election = LeaderElection::new(session, &dir).unwrap();
        let (leading_tx, mut leading) = tokio::sync::mpsc::unbounded_channel();
        let (suspended_tx, mut suspension) = tokio::sync::mpsc::unbounded_channel();
        let work = election.lead(|term| {
            let (leading_tx, suspended_tx) = (leading_tx.clone(), suspended_tx.clone());
            async move {
                leading_tx.send(term.fencing_token).unwrap();
                let suspended = term.suspended().await;
                assert!(term.is_suspended());
                suspended_tx.send(()).unwrap();
                let resumed = term.resumed().await;
                assert!(!term.is_suspended() && !term.is_lost());
                ControlFlow::Break((suspended, resumed, term.fencing_token))
            }
        });
        let outage = async {
            let token = leading.recv().await.unwrap();
            proxy.set_blackhole(true);
            proxy.cut_all();
            // The server answers again once the term is suspended.
            suspension.recv().await.unwrap();
            proxy.set_blackhole(false);
            token
        };
        let (outcome, token) = eventually("the term", async { tokio::join!(work, outage) }).await;
        assert_eq!(outcome, Ok((None, Ok(()), token)), "suspended, resumed, the same term");
    }
}

/// A standalone ZooKeeper killed and started again on its data 2.5 s later: a holder under `LostPolicy::Suspend`
/// whose validity is kept (as `zklock run` keeps it) is at most suspended for the outage, then resumed — never
/// lost: the same node, the same token, and a rival still cannot take the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_restart_ends_no_suspending_holder() {
    let mut zk = tokio::task::spawn_blocking(|| zklock_testkit::ZooKeeper::standalone().unwrap())
        .await
        .unwrap();
    let hosts = zk.connect_string();
    let dir = unique_path("suspend-restart");
    // 20 s: the session must outlast the JVM's start as well as the 2.5 s, on a loaded 2-core machine.
    let (_holder, guard, mut validity) = suspending_holder(&hosts, &dir, Duration::from_secs(20)).await;
    let token = guard.fencing_token();
    restart_zookeeper(&mut zk).await;
    held_on_after(
        &guard,
        &mut validity,
        std::time::Instant::now(),
        token,
        &hosts,
        &dir,
    )
    .await;
    guard.release().await.unwrap();
    drop(zk);
}

/// A holder of `dir` on `hosts` under `LostPolicy::Suspend` whose validity is kept from now on (as `zklock run`
/// keeps it: a heartbeat every tenth of the session timeout), once a first heartbeat confirmed it: its client, the
/// guard and the validity.
async fn suspending_holder(
    hosts: &str,
    dir: &str,
    session_timeout: Duration,
) -> (
    zklock::zookeeper_client::Client,
    zklock::Guard,
    tokio::sync::watch::Receiver<Option<std::time::Instant>>,
) {
    let holder = client_with_timeout(hosts, session_timeout).await;
    let session = Session::new(&holder).with_lost_policy(LostPolicy::Suspend);
    let guard = Mutex::new(session, dir).unwrap().lock().await.unwrap();
    let mut validity = guard.session_validity();
    eventually("a first confirmation", validity.wait_for(Option::is_some))
        .await
        .unwrap();
    (holder, guard, validity)
}

/// After an outage that ended at `since`: a heartbeat confirmed the session after it, and the holder goes on —
/// resumed (at once if it was never suspended), not lost, the same token — while a rival still cannot take the lock.
async fn held_on_after(
    guard: &zklock::Guard,
    validity: &mut tokio::sync::watch::Receiver<Option<std::time::Instant>>,
    since: std::time::Instant,
    token: i64,
    hosts: &str,
    dir: &str,
) {
    eventually(
        "a confirmation after the outage",
        validity.wait_for(|until| until.is_some_and(|until| until > since)),
    )
    .await
    .unwrap();
    assert_eq!(eventually("the holder", guard.resumed()).await, Ok(()));
    assert!(!guard.is_lost(), "{:?}", guard.lost_reason());
    assert_eq!(guard.fencing_token(), token);
    let rival = client(hosts).await;
    let rivalry = Mutex::new(&rival, dir).unwrap().try_lock().await.unwrap();
    assert!(rivalry.is_none(), "still ours");
}

on_every_server! {
    // A claimed queue item (and any other thing held through a node of ours) is suspended and resumed as a guard is.
    async fn a_claim_is_suspended_and_resumed(hosts: &str) {
        let dir = unique_path("suspend-claim");
        let producer = client(hosts).await;
        zklock::Queue::new(&producer, &dir).unwrap().put(b"job").await.unwrap();
        let proxy = Proxy::start(first_server(hosts)).await.unwrap();
        let consumer = client_with_timeout(&proxy.connect_string(), Duration::from_secs(10)).await;
        let session = Session::new(&consumer).with_lost_policy(LostPolicy::SuspendAfter(GRACE));
        let claimed = zklock::Queue::new(session, &dir).unwrap().take_safe().await.unwrap();
        proxy.set_blackhole(true);
        proxy.cut_all();
        assert_eq!(eventually("the claim's suspension", claimed.suspended()).await, None);
        assert!(claimed.is_suspended());
        proxy.set_blackhole(false);
        assert_eq!(eventually("the claim's resumption", claimed.resumed()).await, Ok(()));
        assert!(!claimed.is_suspended() && !claimed.is_lost());
        assert_eq!(claimed.complete().await.unwrap(), b"job");
    }
}

/// The embedded server (in this process) shut down and started again on its data and port 2.5 s later — sessions
/// survive a restart — ends no holder under `LostPolicy::Suspend` whose validity is kept: at most suspended, then
/// resumed with the same node and token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_server_restart_ends_no_suspending_holder() {
    let mut server = RestartableServer::start().await;
    let hosts = server.hosts();
    let dir = unique_path("suspend-embedded-restart");
    let (holder, guard, mut validity) = suspending_holder(&hosts, &dir, Duration::from_secs(10)).await;
    let token = guard.fencing_token();
    server.restart().await;
    held_on_after(
        &guard,
        &mut validity,
        std::time::Instant::now(),
        token,
        &hosts,
        &dir,
    )
    .await;
    guard.release().await.unwrap();
    drop(holder);
    server.stop().await;
}
