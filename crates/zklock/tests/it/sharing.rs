//! Who may share a directory, decided in one place for every recipe (`Marker::queues_with`): a contender of a kind
//! we cannot be ordered with fails the acquire with `Error::InUse` and leaves nothing behind; kazoo's lock nodes
//! are queued behind by default; a semaphore's directory is told by its contents.

use zklock::{Error, LeaderElection, Mutex, RwLock, Semaphore};
use zklock_testkit::unique_path;
use zookeeper_client::{Acls, CreateMode};

use crate::on_every_server;
use crate::support::*;

on_every_server! {
    async fn kinds_that_cannot_be_ordered_refuse_each_other(hosts: &str) {
        let (a, b) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("sharing-kinds");
        let reader = RwLock::new(&a, &dir).unwrap().read().await.unwrap();
        // A mutex, an election and a semaphore beside a reader: refused, whichever way they wait.
        let in_use = |result: zklock::Result<()>, what: &str| match result {
            Err(Error::InUse { path, what: other, .. }) => {
                assert_eq!(path, dir);
                assert!(other.contains("reader"), "{what}: {other}");
            }
            other => panic!("{what}: {other:?}"),
        };
        let mutex = Mutex::new(&b, &dir).unwrap();
        in_use(mutex.try_lock().await.map(drop), "try_lock");
        in_use(mutex.lock().await.map(drop), "lock");
        let election = LeaderElection::new(&b, &dir).unwrap();
        in_use(election.campaign().await.map(drop), "campaign");
        let semaphore = Semaphore::new(&b, &dir, 2).unwrap();
        in_use(semaphore.acquire().await.map(drop), "semaphore");
        // Nothing of theirs is left: only the reader's node (the semaphore's gate directory may stay, empty).
        let left: Vec<String> = children(&a, &dir).await.into_iter().filter(|c| c != "locks").collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].contains("__READ__"), "{left:?}");
        reader.release().await.unwrap();
    }

    async fn the_later_of_two_conflicting_acquires_refuses(hosts: &str) {
        // A mutex holds; a semaphore in the same directory is refused, and so is a mutex in a semaphore's directory.
        let (a, b) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("sharing-semaphore");
        let held = Mutex::new(&a, &dir).unwrap().lock().await.unwrap();
        match Semaphore::new(&b, &dir, 3).unwrap().acquire().await {
            Err(Error::InUse { what, .. }) => assert!(what.contains("mutex"), "{what}"),
            other => panic!("{other:?}"),
        }
        held.release().await.unwrap();
        let sem = unique_path("sharing-semaphore-dir");
        let lease = Semaphore::new(&a, &sem, 3).unwrap().acquire().await.unwrap();
        match Mutex::new(&b, &sem).unwrap().try_lock().await {
            Err(Error::InUse { what, .. }) => assert!(what.contains("semaphore"), "{what}"),
            other => panic!("{other:?}"),
        }
        lease.release().await.unwrap();
    }

    async fn a_semaphore_of_another_number_of_leases_is_refused(hosts: &str) {
        let (a, b) = (client(hosts).await, client(hosts).await);
        let sem = unique_path("sharing-leases");
        let held = Semaphore::new(&a, &sem, 3).unwrap().acquire().await.unwrap();
        match Semaphore::new(&b, &sem, 4).unwrap().try_acquire().await {
            Err(Error::Mismatch { what }) => assert!(what.contains("3 lease(s)") && what.contains("not 4"), "{what}"),
            other => panic!("{other:?}"),
        }
        // The same number shares it.
        let second = Semaphore::new(&b, &sem, 3).unwrap().try_acquire().await.unwrap().expect("a free lease");
        second.release().await.unwrap();
        held.release().await.unwrap();
    }

    async fn kazoo_lock_nodes_are_queued_behind_by_default(hosts: &str) {
        // A node in kazoo's format holds the lock (made by hand: its owner is a session of ours, as kazoo's would be).
        let (a, b) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("sharing-kazoo");
        a.create(&dir, b"", &PERSISTENT).await.unwrap();
        let kazoo = format!("{dir}/1f0e2d3c4b5a69788796a5b4c3d2e1f0__lock__");
        let (_, seq) = a
            .create(&kazoo, b"", &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all()))
            .await
            .unwrap();
        let kazoo = format!("{kazoo}{seq}");
        assert!(Mutex::new(&b, &dir).unwrap().try_lock().await.unwrap().is_none(), "busy behind kazoo");
        assert!(RwLock::new(&b, &dir).unwrap().try_read().await.unwrap().is_none(), "a reader waits too");
        match Mutex::new(&b, &dir).unwrap().with_kazoo_contenders(false).try_lock().await {
            Err(Error::InUse { what, .. }) => assert!(what.contains("kazoo"), "{what}"),
            other => panic!("told not to share with kazoo: {other:?}"),
        }
        let waiting = tokio::spawn({
            let (b, dir) = (b.clone(), dir.clone());
            async move { Mutex::new(&b, &dir).unwrap().lock().await.unwrap().release().await }
        });
        await_children(&a, &dir, "the waiter queued behind kazoo's node", |c| c.len() == 2).await;
        assert!(!waiting.is_finished());
        a.delete(&kazoo, None).await.unwrap();
        eventually("the waiter behind kazoo's node holds", waiting).await.unwrap().unwrap();
    }
}
