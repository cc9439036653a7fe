//! MultiLock: several locks as one, in a global order (no deadlock), all or nothing, one lost signal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock::{Error, LostReason, MultiLock, Mutex, Part, RwLock};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

fn ours(children: &[String]) -> usize {
    children.len()
}

on_every_server! {
    async fn opposite_orders_never_deadlock_and_exclude(hosts: &str) {
        let (a, b) = (unique_path("multi-a"), unique_path("multi-b"));
        const ROUNDS: usize = 15;
        let busy = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        // Two contenders name the same two locks in opposite orders; without a global order each would hold one
        // and wait for the other forever.
        for (first, second) in [(a.clone(), b.clone()), (b.clone(), a.clone())] {
            let client = client(hosts).await;
            let busy = busy.clone();
            tasks.push(tokio::spawn(async move {
                let multi = MultiLock::new([
                    Part::Mutex(Mutex::new(&client, &first).unwrap()),
                    Part::Mutex(Mutex::new(&client, &second).unwrap()),
                ])
                .unwrap();
                for _ in 0..ROUNDS {
                    let held = multi.lock().await.unwrap();
                    assert!(!busy.swap(true, Ordering::SeqCst), "two holders of the same locks at once");
                    tokio::task::yield_now().await;
                    busy.store(false, Ordering::SeqCst);
                    held.release().await.unwrap();
                }
            }));
        }
        for task in tasks {
            eventually("both contenders to finish (a deadlock never does)", task).await.unwrap();
        }
    }

    async fn all_or_nothing(hosts: &str) {
        let (free, taken) = (unique_path("multi-free"), unique_path("multi-taken"));
        let other = client(hosts).await;
        let blocker = Mutex::new(&other, &taken).unwrap().lock().await.unwrap();
        let client = client(hosts).await;
        let multi = MultiLock::new([
            Part::Write(RwLock::new(&client, &free).unwrap()),
            Part::Mutex(Mutex::new(&client, &taken).unwrap()),
        ])
        .unwrap();
        assert!(multi.try_lock().await.unwrap().is_none(), "one part is taken");
        assert_eq!(ours(&children(&other, &free).await), 0, "the free part was given back");
        assert_eq!(multi.lock_timeout(Duration::from_millis(300)).await.unwrap_err(), Error::Timeout);
        await_children(&other, &free, "the free part to be given back", |c| c.is_empty()).await;
        await_children(&other, &taken, "our waiter to go", |c| c.len() == 1).await;
        // Cancelled while waiting for the second part: the first is given back too.
        {
            let mut lock = Box::pin(multi.lock());
            tokio::select! {
                _ = &mut lock => panic!("acquired a taken lock"),
                _ = await_children(&other, &taken, "our waiter to queue", |c| c.len() == 2) => {}
            }
        }
        await_children(&other, &free, "the cancelled part to be given back", |c| c.is_empty()).await;
        await_children(&other, &taken, "the cancelled waiter to go", |c| c.len() == 1).await;
        // Once free, every part is taken.
        blocker.release().await.unwrap();
        let held = eventually("the multi-lock", multi.lock()).await.unwrap();
        assert_eq!(held.guards().len(), 2);
        assert_eq!(ours(&children(&other, &free).await), 1);
        held.release().await.unwrap();
        assert!(children(&other, &free).await.is_empty() && children(&other, &taken).await.is_empty());
    }

    async fn losing_any_part_is_losing_the_set(hosts: &str) {
        let (a, b) = (unique_path("multi-lost-a"), unique_path("multi-lost-b"));
        let client = client(hosts).await;
        let multi = MultiLock::new([
            Part::Mutex(Mutex::new(&client, &a).unwrap()),
            Part::Read(RwLock::new(&client, &b).unwrap()),
        ])
        .unwrap();
        let held = multi.lock().await.unwrap();
        let lost = held.lost();
        assert!(!held.is_lost());
        let admin = crate::support::client(hosts).await;
        admin.delete(held.guards()[1].path(), None).await.unwrap();
        assert_eq!(eventually("the set's lost signal", lost).await, LostReason::NodeDeleted);
        assert!(held.is_lost());
        assert_eq!(held.release().await, Err(Error::Lost(LostReason::NodeDeleted)));
        assert!(children(&admin, &a).await.is_empty(), "the other part was released too");
    }
}

on_every_server! {
    async fn session_expiry_loses_the_set_and_frees_every_part(hosts: &str) {
        let (a, b) = (unique_path("multi-expiry-a"), unique_path("multi-expiry-b"));
        let parts = |client: &zklock::zookeeper_client::Client| {
            MultiLock::new([
                Part::Mutex(Mutex::new(client, &a).unwrap()),
                Part::Write(RwLock::new(client, &b).unwrap()),
            ])
            .unwrap()
        };
        let holder = client(hosts).await;
        let held = parts(&holder).lock().await.unwrap();
        let lost = held.lost();
        zklock_testkit::expire_session(hosts, &holder).await;
        assert_expired(eventually("the set's lost signal", lost).await);
        // Every part is free again: another session takes the whole set.
        let other = client(hosts).await;
        let taken = eventually("the set, after the expiry", parts(&other).lock()).await.unwrap();
        taken.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_twice_or_no_part_is_refused() {
    let client = client(&embedded().await).await;
    assert!(matches!(MultiLock::new([]), Err(Error::InvalidArgument(_))));
    let path = unique_path("multi-twice");
    let twice = MultiLock::new([
        Part::Mutex(Mutex::new(&client, &path).unwrap()),
        Part::Read(RwLock::new(&client, &path).unwrap()),
    ]);
    assert!(matches!(twice, Err(Error::InvalidPath { path: p, .. }) if p == path));
    // Given in any order, acquired by path.
    let (a, b) = (format!("{path}/a"), format!("{path}/b"));
    let multi = MultiLock::new([
        Part::Mutex(Mutex::new(&client, &b).unwrap()),
        Part::Mutex(Mutex::new(&client, &a).unwrap()),
    ])
    .unwrap();
    let order: Vec<&str> = multi
        .parts()
        .iter()
        .map(|part| match part {
            Part::Mutex(m) => m.path(),
            Part::Read(l) | Part::Write(l) => l.path(),
        })
        .collect();
    assert_eq!(order, [a.as_str(), b.as_str()]);
}
