//! Lock directories as container nodes: the server deletes a recipe's directory (and the parents the recipe made)
//! once the last contender has left, and a directory deleted under a contender is made again.
//!
//! These tests need a container sweep faster than the default minute, so they run on servers of their own: a real
//! ZooKeeper 3.8 standalone started with `-Dznode.container.checkIntervalMs=100` (a Java system property there),
//! and an embedded server with `container_check_interval` 50 ms (`znode.container.checkIntervalMs` in its zoo.cfg).
//! Every wait is for an event (a watch on the directory), bounded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use zklock::zookeeper_client::{self as zk, Acls, Client, CreateMode};
use zklock::{LeaderElection, Mutex, Recipe, RwLock, Semaphore};
use zklock_testkit::{unique_path, ZooKeeper};

use crate::support::*;

/// How often the test servers delete empty containers.
const REAL_CHECK_INTERVAL_MS: &str = "100";
const EMBEDDED_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// A real ZooKeeper standalone that sweeps containers every 100 ms, shared by this binary's container tests.
async fn sweeping_standalone() -> String {
    static SERVER: OnceLock<Result<ZooKeeper, String>> = OnceLock::new();
    tokio::task::spawn_blocking(|| {
        let sweeping =
            ZooKeeper::builder().system_property("znode.container.checkIntervalMs", REAL_CHECK_INTERVAL_MS);
        zklock_testkit::shared_zookeeper(&SERVER, "sweeping standalone", || sweeping.start()).connect_string()
    })
    .await
    .unwrap()
}

/// An embedded server that sweeps containers every 50 ms, shared by this binary's container tests.
async fn sweeping_embedded() -> String {
    static SERVER: OnceLock<String> = OnceLock::new();
    tokio::task::spawn_blocking(|| {
        SERVER
            .get_or_init(|| {
                zklock_testkit::start_embedded(zklock_testkit::ServerConfig {
                    container_check_interval: EMBEDDED_CHECK_INTERVAL,
                    ..Default::default()
                })
            })
            .clone()
    })
    .await
    .unwrap()
}

/// Runs each body on both sweeping servers, as `<test>::standalone` and `<test>::embedded`.
macro_rules! on_sweeping_servers {
    ($($tests:tt)*) => {
        zklock_testkit::on_servers! {
            [standalone => sweeping_standalone, embedded => sweeping_embedded]
            $($tests)*
        }
    };
}

/// Waits (with an `exists` watch, bounded) until the server has deleted `path`.
async fn vanishes(client: &Client, path: &str) {
    let deleted = zklock_testkit::await_deleted(client, path);
    eventually(&format!("the server to delete {path}"), deleted).await
}

async fn exists(client: &Client, path: &str) -> bool {
    client.check_stat(path).await.unwrap().is_some()
}

on_sweeping_servers! {
    async fn a_lock_directory_and_the_parents_it_made_vanish_after_the_last_contender(hosts: &str) {
        let (a, b, observer) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let top = unique_path("containers-mutex");
        let (middle, dir) = (format!("{top}/jobs"), format!("{top}/jobs/nightly"));
        let mutex = Mutex::new(&a, &dir).unwrap();
        let first = mutex.lock().await.unwrap();
        let waiting = waiting_lock(&b, &dir).await;
        first.release().await.unwrap();
        let second = eventually("the hand-over", waiting).await.unwrap().unwrap();
        // Held: everything stays, however many sweeps pass (a container with a child is never deleted).
        assert!(exists(&observer, &dir).await);
        second.release().await.unwrap();
        // Empty: the directory goes, then each parent the recipe made, innermost first.
        vanishes(&observer, &dir).await;
        vanishes(&observer, &middle).await;
        vanishes(&observer, &top).await;
    }

    async fn a_parent_that_existed_before_stays(hosts: &str) {
        let (a, observer) = (client(hosts).await, client(hosts).await);
        let top = unique_path("containers-persistent-parent");
        observer.create(&top, b"", &PERSISTENT).await.unwrap();
        let dir = format!("{top}/made/lock");
        Mutex::new(&a, &dir).unwrap().lock().await.unwrap().release().await.unwrap();
        vanishes(&observer, &dir).await;
        vanishes(&observer, &format!("{top}/made")).await;
        // The parent this did not make is a persistent node, and stays. (The sweeps keep going meanwhile: one more
        // directory made and emptied after ours has gone as well before we look.)
        let marker = format!("{top}/made-later/lock");
        Mutex::new(&a, &marker).unwrap().lock().await.unwrap().release().await.unwrap();
        vanishes(&observer, &format!("{top}/made-later")).await;
        assert!(exists(&observer, &top).await, "a persistent parent is never deleted by the sweep");
        observer.delete(&top, None).await.unwrap();
    }

    async fn a_swept_directory_is_made_again_by_the_next_contender(hosts: &str) {
        // The create in a directory the server has deleted since fails with NoNode: the contender makes the
        // directory again and queues, every time.
        let (a, observer) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("containers-again");
        let mutex = Mutex::new(&a, &dir).unwrap();
        let mut tokens = Vec::new();
        for _ in 0..3 {
            let guard = eventually("the lock on a swept directory", mutex.lock()).await.unwrap();
            tokens.push(guard.fencing_token());
            guard.release().await.unwrap();
            vanishes(&observer, &dir).await;
        }
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens grow across re-created directories: {tokens:?}");
        // The same for the other queue recipes.
        let lock = RwLock::new(&a, &dir).unwrap();
        lock.write().await.unwrap().release().await.unwrap();
        vanishes(&observer, &dir).await;
        lock.read().await.unwrap().release().await.unwrap();
        vanishes(&observer, &dir).await;
        let election = LeaderElection::new(&a, &dir).unwrap();
        election.campaign().await.unwrap().release().await.unwrap();
        vanishes(&observer, &dir).await;
    }

    async fn contenders_racing_into_a_swept_directory_all_get_the_lock_one_at_a_time(hosts: &str) {
        let dir = unique_path("containers-race");
        let observer = client(hosts).await;
        let clients = [client(hosts).await, client(hosts).await, client(hosts).await];
        let held = Arc::new(AtomicBool::new(false));
        for _ in 0..4 {
            // Every round starts with no directory: each contender's create fails with NoNode, they all make the
            // directory at once (all but one find it made) and queue.
            assert!(!exists(&observer, &dir).await);
            let rounds = clients.iter().map(|client| {
                let (mutex, held) = (Mutex::new(client, &dir).unwrap(), held.clone());
                async move {
                    let guard = mutex.lock().await.unwrap();
                    assert!(!held.swap(true, Ordering::SeqCst), "two holders at once");
                    tokio::task::yield_now().await;
                    held.store(false, Ordering::SeqCst);
                    guard.release().await.unwrap();
                }
            });
            eventually("every contender's turn", futures::future::join_all(rounds)).await;
            vanishes(&observer, &dir).await;
        }
    }

    async fn a_semaphore_stays_one_while_its_gate_is_swept(hosts: &str) {
        let (a, b, observer) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let sem = unique_path("containers-semaphore");
        let lease = Semaphore::new(&a, &sem, 2).unwrap().acquire().await.unwrap();
        // Nobody acquires: the acquirers' gate (`locks`) is empty and goes; the lease holds `leases` and the
        // directory, and `inspect` still shows a semaphore with its holder.
        vanishes(&observer, &format!("{sem}/locks")).await;
        let found = zklock::inspect(&observer, &sem).await.unwrap().expect("the semaphore's directory");
        assert!(matches!(found.recipe, Recipe::Semaphore { .. }), "{:?}", found.recipe);
        assert_eq!(found.participants.len(), 1);
        assert_eq!(found.participants[0].path, lease.path());
        // The next acquirer makes the gate again.
        let second = Semaphore::new(&b, &sem, 2).unwrap().acquire().await.unwrap();
        lease.release().await.unwrap();
        second.release().await.unwrap();
        vanishes(&observer, &sem).await;
    }

    async fn an_observer_follows_an_election_across_its_directory_going_and_coming_back(hosts: &str) {
        let (a, b, watcher) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let dir = unique_path("containers-election");
        let leadership = LeaderElection::new(&a, &dir).unwrap().campaign().await.unwrap();
        let mut observer = LeaderElection::new(&watcher, &dir).unwrap().observe();
        let first = eventually("the first leader", observer.next()).await.unwrap().expect("a leader");
        assert_eq!(first.path, leadership.path());
        leadership.release().await.unwrap();
        assert!(eventually("no leader", observer.next()).await.unwrap().is_none());
        vanishes(&watcher, &dir).await;
        let next = LeaderElection::new(&b, &dir).unwrap().campaign().await.unwrap();
        let seen = eventually("the leader in the new directory", observer.next()).await.unwrap().expect("a leader");
        assert_eq!(seen.path, next.path());
        next.release().await.unwrap();
    }
}

/// A directory made by hand as a container that nobody used stays (ZooKeeper's rule: only a container that has had
/// children is deleted), while the recipe's directory beside it goes: the sweep is not just deleting everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_container_stays_on_the_embedded_server() {
    let hosts = sweeping_embedded().await;
    let (a, observer) = (client(&hosts).await, client(&hosts).await);
    let top = unique_path("containers-unused");
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    observer.create(&top, b"", &container).await.unwrap();
    let unused = format!("{top}/unused");
    observer.create(&unused, b"", &container).await.unwrap();
    let dir = format!("{top}/used");
    Mutex::new(&a, &dir)
        .unwrap()
        .lock()
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    vanishes(&observer, &dir).await;
    assert!(exists(&observer, &unused).await, "never used: stays");
    match observer.delete(&unused, None).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(err) => panic!("{err}"),
    }
    // Emptied now (it had children): the top goes too.
    vanishes(&observer, &top).await;
}
