//! Revocation: a request (Curator's protocol, `__REVOKE__` in the holder's node) reaches the holder of every queue
//! recipe and nothing else does; a forced revoke (the node deleted) takes the lock away and hands it to the next
//! waiter; and both directions with Apache Curator (`Revoker.attemptRevoke` against a zklock holder, zklock's
//! request against a Curator lock made revocable).

use std::time::Duration;

use zklock::{Error, LeaderElection, LostReason, Mutex, Role, RwLock, Semaphore};
use zklock_testkit::peers::Peer;
use zklock_testkit::unique_path;

use crate::on_standalone_and_embedded;
use crate::support::*;

/// How long a future must stay pending to count as "did not fire". Only for negative checks, where there is no
/// event to wait for; every positive check waits for its event.
const QUIET: Duration = Duration::from_millis(500);

/// The full paths of `dir`'s participants in `role`, as an operator sees them.
async fn participants(client: &zklock::zookeeper_client::Client, dir: &str, role: Role) -> Vec<String> {
    let found = inspect_synced(client, dir).await.expect("the directory exists");
    found
        .participants
        .into_iter()
        .filter(|p| p.role == role)
        .map(|p| p.path)
        .collect()
}

crate::on_every_server! {
    async fn a_revocation_request_reaches_the_holder_and_nothing_else_does(hosts: &str) {
        let (a, b) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("revocation-request");
        let guard = Mutex::new(&a, &dir).unwrap().with_data("job 1").lock().await.unwrap();
        let node = guard.path().to_owned();
        assert_eq!(participants(&b, &dir, Role::Holder).await, vec![node.clone()]);
        let requested = guard.revocation_requested();
        tokio::pin!(requested);

        // Another change of the holder's data is no request. Once the holder's own client reads the new data, it
        // has had the change's notification (ZooKeeper delivers it before the data it announces).
        // (On an ensemble the holder's member may apply the change later than B's: `sync` waits for it.)
        b.set_data(&node, b"job 1, step 2", None).await.unwrap();
        a.sync(&node).await.unwrap();
        assert_eq!(a.get_data(&node).await.unwrap().0, b"job 1, step 2");
        assert!(tokio::time::timeout(QUIET, &mut requested).await.is_err(), "a plain data change is no request");
        assert!(!guard.is_revocation_requested());

        assert!(zklock::request_revocation(&b, &node).await.unwrap());
        eventually("the revocation request", &mut requested).await;
        assert!(guard.is_revocation_requested());
        eventually("the request, asked for again", guard.revocation_requested()).await;
        assert_eq!(guard.lost_reason(), None, "a request takes nothing away: the holder decides");
        assert_eq!(b.get_data(&node).await.unwrap().0, b"__REVOKE__", "Curator's REVOKE_MESSAGE");

        guard.release().await.unwrap();
        assert!(!zklock::request_revocation(&b, &node).await.unwrap(), "no node, nothing to ask");
        // A directory or any other node that is not a participant's (ephemeral) is never written.
        let other = unique_path("revocation-request-not-a-participant");
        Mutex::new(&a, &other).unwrap().lock().await.unwrap().release().await.unwrap();
        b.set_data(&other, b"keep me", None).await.unwrap();
        let refused = zklock::request_revocation(&b, &other).await;
        assert!(matches!(refused, Err(Error::InvalidPath { .. })), "{refused:?}");
        assert_eq!(b.get_data(&other).await.unwrap().0, b"keep me");
    }

    async fn a_request_made_while_waiting_counts_once_held(hosts: &str) {
        let (a, b, c) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let dir = unique_path("revocation-waiting");
        let first = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        let waiting = waiting_lock(&c, &dir).await;
        let waiters = participants(&b, &dir, Role::Waiting).await;
        assert_eq!(waiters.len(), 1);
        assert!(zklock::request_revocation(&b, &waiters[0]).await.unwrap());

        first.release().await.unwrap();
        let guard = eventually("the waiter to take over", waiting).await.unwrap().unwrap();
        assert_eq!(guard.path(), waiters[0]);
        // Asked for only now, and the request came before: it counts.
        eventually("the request made while it waited", guard.revocation_requested()).await;
        guard.release().await.unwrap();
    }

    async fn revoke_takes_the_lock_and_hands_it_to_the_next_waiter(hosts: &str) {
        let (a, b, c) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let dir = unique_path("revocation-forced");
        let holder = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        let lost = holder.lost();
        let waiting = waiting_lock(&c, &dir).await;

        b.sync(holder.path()).await.unwrap();
        assert!(zklock::revoke(&b, holder.path()).await.unwrap());
        assert_eq!(eventually("the holder to learn it lost", lost).await, LostReason::NodeDeleted);
        let taken = eventually("the next waiter to take over", waiting).await.unwrap().unwrap();
        assert!(taken.fencing_token() > holder.fencing_token());
        assert!(!zklock::revoke(&b, holder.path()).await.unwrap(), "gone already");
        // Releasing the revoked guard is harmless, and says it was lost.
        assert_eq!(holder.release().await, Err(Error::Lost(LostReason::NodeDeleted)));

        // Never a node that is not a participant's: the directory stays, its contender too.
        let refused = zklock::revoke(&b, &dir).await;
        assert!(matches!(refused, Err(Error::InvalidPath { .. })), "{refused:?}");
        assert!(!taken.is_lost());
        taken.release().await.unwrap();
    }

    async fn every_queue_recipe_hears_a_request(hosts: &str) {
        let (a, b) = (client(hosts).await, client(hosts).await);
        let rw = unique_path("revocation-rwlock");
        let lock = RwLock::new(&a, &rw).unwrap();
        let readers = [lock.read().await.unwrap(), lock.read().await.unwrap()];
        let sem = unique_path("revocation-semaphore");
        let lease = Semaphore::new(&a, &sem, 2).unwrap().acquire().await.unwrap();
        let el = unique_path("revocation-election");
        let leadership = LeaderElection::new(&a, &el).unwrap().campaign().await.unwrap();

        // What an operator does: every holder of each directory, as `inspect` shows them.
        for dir in [&rw, &sem, &el] {
            for node in participants(&b, dir, Role::Holder).await {
                assert!(zklock::request_revocation(&b, &node).await.unwrap(), "{node}");
            }
        }
        for guard in readers.iter().chain([&lease, &leadership]) {
            eventually(&format!("the request to {}", guard.path()), guard.revocation_requested()).await;
        }
        for guard in readers.into_iter().chain([lease, leadership]) {
            guard.release().await.unwrap();
        }
    }
}

on_standalone_and_embedded! {
    async fn curators_revoker_reaches_a_zklock_holder(hosts: &str) {
        let a = client(hosts).await;
        let dir = unique_path("revocation-curator-revoker");
        let guard = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        let requested = guard.revocation_requested();
        let mut revoker = Peer::curator(&["mutex", "revoke", hosts, guard.path()]).await;
        revoker.expect("REVOKE_SENT").await;
        revoker.finish().await;
        eventually("Revoker.attemptRevoke's request", requested).await;
        guard.release().await.unwrap();
    }

    async fn zklock_request_reaches_a_revocable_curator_holder(hosts: &str) {
        let (a, c) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("revocation-curator-revocable");
        let mut holder = Peer::curator(&["mutex", "revocable", hosts, &dir]).await;
        let node = holder.expect("ACQUIRED").await;
        let waiting = waiting_lock(&c, &dir).await;

        assert!(zklock::request_revocation(&a, &node).await.unwrap());
        holder.expect("REVOCATION_REQUESTED").await;
        holder.expect("RELEASED").await;
        holder.finish().await;
        let guard = eventually("the lock after Curator gave it up", waiting).await.unwrap().unwrap();
        guard.release().await.unwrap();
    }
}
