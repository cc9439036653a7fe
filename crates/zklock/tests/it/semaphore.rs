//! The semaphore: never more than N holders (blocking, timed and non-blocking acquires), expiry of a holder
//! frees its lease, no node left behind by timeouts or cancellation, failover of the ensemble leader.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock::{Error, LostPolicy, Semaphore, Session};
use zklock_testkit::{expire_session, unique_path};

use crate::on_every_server;
use crate::support::*;

on_every_server! {
    async fn never_more_than_n_holders(hosts: &str) {
        // 8 sessions, 3 leases, 4 rounds each; a third of the clients acquire with a timeout and a third try
        // first without waiting.
        const CLIENTS: usize = 8;
        const LEASES: usize = 3;
        const ROUNDS: usize = 4;
        let dir = unique_path("sem-limit");
        let inside = Arc::new(Occupancy::default());
        let tries_won = Arc::new(AtomicUsize::new(0));
        let tasks = spawn_on_sessions(hosts, CLIENTS, |i, client| {
            let (dir, inside, tries_won) = (dir.clone(), inside.clone(), tries_won.clone());
            async move {
                let semaphore = Semaphore::new(&client, &dir, LEASES).unwrap();
                for _ in 0..ROUNDS {
                    let lease = match i % 3 {
                        0 => semaphore.acquire().await.unwrap(),
                        1 => semaphore.acquire_timeout(EVENTUALLY).await.unwrap(),
                        _ => match semaphore.try_acquire().await.unwrap() {
                            Some(lease) => {
                                tries_won.fetch_add(1, Ordering::SeqCst);
                                lease
                            }
                            None => semaphore.acquire().await.unwrap(),
                        },
                    };
                    let now = inside.enter();
                    assert!(now <= LEASES, "{now} holders of {LEASES} leases");
                    assert!(!lease.is_lost());
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    inside.leave();
                    lease.release().await.unwrap();
                }
            }
        })
        .await;
        all_done("the clients to finish", tasks).await;
        assert!(inside.most() <= LEASES);
        let observer = client(hosts).await;
        assert!(children(&observer, &format!("{dir}/leases")).await.is_empty(), "no lease left behind");
        assert!(children(&observer, &format!("{dir}/locks")).await.is_empty(), "no mutex node left behind");
    }

    async fn leases_are_granted_up_to_the_limit(hosts: &str) {
        let dir = unique_path("sem-grant");
        let (a, b, c) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let first = Semaphore::new(&a, &dir, 2).unwrap().try_acquire().await.unwrap().expect("a free lease");
        let second = Semaphore::new(&b, &dir, 2).unwrap().try_acquire().await.unwrap().expect("a free lease");
        assert!(second.fencing_token() > first.fencing_token());
        let third = Semaphore::new(&c, &dir, 2).unwrap();
        assert!(third.try_acquire().await.unwrap().is_none(), "only two leases");
        assert_eq!(third.acquire_timeout(Duration::from_millis(300)).await.unwrap_err(), Error::Timeout);
        assert_eq!(third.lease_nodes().await.unwrap().len(), 2, "failed acquires left no lease node");
        assert!(children(&c, &format!("{dir}/locks")).await.is_empty(), "nor a mutex node");
        let waiting = {
            let third = third.clone();
            tokio::spawn(async move { third.acquire().await })
        };
        await_children(&c, &format!("{dir}/leases"), "the waiting lease node", |n| n.len() == 3).await;
        first.release().await.unwrap();
        let lease = eventually("the waiter to get the freed lease", waiting).await.unwrap().unwrap();
        assert_eq!(third.lease_nodes().await.unwrap().len(), 2);
        lease.release().await.unwrap();
        second.release().await.unwrap();
        // `second` released through another session's server: let ours catch up before looking.
        c.sync(&format!("{dir}/leases")).await.unwrap();
        assert!(third.lease_nodes().await.unwrap().is_empty());
    }

    async fn holder_expiry_frees_a_lease(hosts: &str) {
        let dir = unique_path("sem-expiry");
        let (a, b, c) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let lease_a = Semaphore::new(&a, &dir, 2).unwrap().acquire().await.unwrap();
        let lease_b = Semaphore::new(&b, &dir, 2).unwrap().acquire().await.unwrap();
        let waiting = {
            let semaphore = Semaphore::new(&c, &dir, 2).unwrap();
            tokio::spawn(async move { semaphore.acquire().await })
        };
        await_children(&c, &format!("{dir}/leases"), "the waiting lease node", |n| n.len() == 3).await;
        expire_session(hosts, &a).await;
        assert_expired(eventually("the lost signal", lease_a.lost()).await);
        let lease_c = eventually("the waiter to get the expired lease", waiting).await.unwrap().unwrap();
        assert!(!lease_b.is_lost() && !lease_c.is_lost());
        let nodes = Semaphore::new(&c, &dir, 2).unwrap().lease_nodes().await.unwrap();
        assert_eq!(nodes, vec![lease_b.path(), lease_c.path()]);
        // An acquire on the expired session fails clearly and leaves nothing.
        await_expired(&a).await;
        let err = Semaphore::new(&a, &dir, 2).unwrap().acquire().await.unwrap_err();
        assert_eq!(err, Error::SessionExpired);
        lease_b.release().await.unwrap();
        lease_c.release().await.unwrap();
    }

    async fn timeout_and_cancellation_leave_no_node(hosts: &str) {
        let dir = unique_path("sem-cancel");
        let (holder_client, waiter) = (client(hosts).await, client(hosts).await);
        let holder = Semaphore::new(&holder_client, &dir, 1).unwrap().acquire().await.unwrap();
        let holder_node = holder.path().rsplit('/').next().unwrap().to_string();
        let leases = format!("{dir}/leases");
        let locks = format!("{dir}/locks");
        let semaphore = Semaphore::new(&waiter, &dir, 1).unwrap();
        for micros in [0u64, 100, 300, 1_000, 2_000, 4_000, 8_000, 20_000] {
            assert!(tokio::time::timeout(Duration::from_micros(micros), semaphore.acquire()).await.is_err());
            await_children(&waiter, &leases, "the cancelled lease to be undone", |c| c == [holder_node.clone()]).await;
            await_children(&waiter, &locks, "the cancelled mutex node to be undone", |c| c.is_empty()).await;
        }
        holder.release().await.unwrap();
        let lease = semaphore.try_acquire().await.unwrap().expect("free again");
        lease.release().await.unwrap();
        assert!(children(&waiter, &leases).await.is_empty());
    }
}

/// The ensemble loses its leader while two clients hold the only two leases and a third waits: the sessions
/// survive the election, nobody loses a lease, no third holder appears, and the waiter is served after a release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_leader_killed_while_leases_are_held() {
    let (mut zk, hosts) = dedicated_ensemble().await;
    let dir = unique_path("sem-failover");
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(client_with_timeout(&hosts, FAILOVER_TIMEOUT).await);
    }
    let semaphore = |i: usize| {
        Semaphore::new(
            Session::new(&clients[i]).with_lost_policy(LostPolicy::SessionOnly),
            &dir,
            2,
        )
        .unwrap()
    };
    let first = semaphore(0).acquire().await.unwrap();
    let second = semaphore(1).acquire().await.unwrap();
    let waiting = {
        let third = semaphore(2);
        tokio::spawn(async move { third.acquire().await })
    };
    let leases = format!("{dir}/leases");
    await_children(&clients[2], &leases, "the waiting lease node", |n| n.len() == 3).await;
    let leader = kill_leader(&mut zk);
    await_children(&clients[2], &leases, "the leases after failover", |n| {
        n.len() == 3
    })
    .await;
    assert!(!first.is_lost() && !second.is_lost());
    assert!(!waiting.is_finished(), "a third holder of two leases");
    let third = release_to_waiter(first, waiting).await;
    assert!(third.fencing_token() > second.fencing_token());
    restart_member(&mut zk, leader);
}
