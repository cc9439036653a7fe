//! The counters: `AtomicLong` counts every increment exactly once, also when replies or requests are lost, and
//! `SharedCount` compares-and-sets and hears every change; both against Curator's `DistributedAtomicLong` and
//! `SharedCount` in both directions.

use std::collections::BTreeSet;
use std::time::Duration;

use zklock::zookeeper_client::{self as zk, Client};
use zklock::{AtomicLong, AtomicValue, Error, Recipe, Session, SharedCount, SharedValue, Versioned};
use zklock_testkit::peers::Peer;
use zklock_testkit::{expire_session, opcode, unique_path};

use crate::on_every_server;
use crate::on_standalone_and_embedded;
use crate::support::*;

/// Waits (with data watches, no polling) until the 8-byte counter at `path` holds `value`.
async fn await_value(client: &Client, path: &str, value: i64) {
    eventually(&format!("{path} to reach {value}"), async {
        loop {
            let watcher = match client.get_and_watch_data(path).await {
                Ok((data, _, _)) if data == value.to_be_bytes() => return,
                Ok((_, _, watcher)) => watcher,
                Err(zk::Error::NoNode) => client.check_and_watch_stat(path).await.unwrap().1,
                Err(err) => panic!("reading {path}: {err}"),
            };
            watcher.changed().await;
        }
    })
    .await
}

on_every_server! {
    async fn concurrent_increments_are_each_counted_once(hosts: &str) {
        const TASKS: usize = 4;
        const ROUNDS: usize = 25;
        let path = unique_path("counter-concurrent");
        let tasks = spawn_on_sessions(hosts, TASKS, |_, client| {
            let path = path.clone();
            async move {
                let counter = AtomicLong::new(&client, &path).unwrap();
                let mut seen = Vec::new();
                for _ in 0..ROUNDS {
                    let changed = counter.increment().await.unwrap();
                    assert!(changed.succeeded);
                    assert_eq!(changed.post, changed.pre + 1, "{changed:?}");
                    seen.push(changed.post);
                }
                seen
            }
        })
        .await;
        let posts: Vec<i64> = all_done("the incrementers", tasks).await.concat();
        let distinct: BTreeSet<i64> = posts.iter().copied().collect();
        let total = (TASKS * ROUNDS) as i64;
        assert_eq!(distinct.len(), posts.len(), "two increments reported the same value");
        assert_eq!(distinct, (1..=total).collect(), "every value from 1 to {total} once");
        let observer = client(hosts).await;
        assert_eq!(AtomicLong::new(&observer, &path).unwrap().get().await.unwrap(), total);
        await_children(&observer, &path, "the receipts to be deleted", |c| c.is_empty()).await;
    }

    async fn atomic_long_gets_sets_and_compares(hosts: &str) {
        let path = unique_path("counter-long");
        let client = client(hosts).await;
        let counter = AtomicLong::new(&client, &path).unwrap();
        assert_eq!(counter.get().await.unwrap(), 0, "a counter that does not exist is 0");
        let none = counter.get_versioned().await.unwrap();
        assert!(!none.exists() && none.version == -1, "{none:?}");
        assert_eq!(client.check_stat(&path).await.unwrap(), None, "reading creates nothing");
        assert_eq!(counter.set(-5).await.unwrap(), AtomicValue { succeeded: true, pre: 0, post: -5 });
        assert_eq!(client.get_data(&path).await.unwrap().0, (-5i64).to_be_bytes(), "8 bytes, big-endian");
        assert_eq!(counter.add(7).await.unwrap(), AtomicValue { succeeded: true, pre: -5, post: 2 });
        assert_eq!(counter.decrement().await.unwrap().post, 1);
        let refused = counter.compare_and_set(5, 9).await.unwrap();
        assert_eq!(refused, AtomicValue { succeeded: false, pre: 1, post: 1 });
        assert_eq!(counter.compare_and_set(1, 9).await.unwrap(), AtomicValue { succeeded: true, pre: 1, post: 9 });
        assert_eq!(counter.get_versioned().await.unwrap(), Versioned { value: 9, version: 3 });
        let found = zklock::inspect(&client, &path).await.unwrap().unwrap();
        assert_eq!(found.recipe, Recipe::AtomicLong { value: 9, version: 3 });
        // Java's long arithmetic.
        counter.set(i64::MAX).await.unwrap();
        assert_eq!(counter.increment().await.unwrap().post, i64::MIN);
        // A node holding something else is refused, and left alone.
        let other = unique_path("counter-corrupt");
        client.create(&other, b"abc", &PERSISTENT).await.unwrap();
        let corrupt = AtomicLong::new(&client, &other).unwrap();
        assert!(matches!(corrupt.increment().await, Err(Error::CorruptData { len: 3, .. })));
        assert_eq!(client.get_data(&other).await.unwrap().0, b"abc");
        assert!(matches!(AtomicLong::new(&client, "/"), Err(Error::InvalidPath { .. })));
    }

    async fn shared_value_compares_and_sets_any_bytes_and_hears_every_change(hosts: &str) {
        let path = unique_path("shared-value");
        let (a_client, b_client) = (client(hosts).await, client(hosts).await);
        let a = SharedValue::new(&a_client, &path, b"seed".to_vec()).unwrap();
        let b = SharedValue::new(&b_client, &path, b"seed".to_vec()).unwrap();
        let seed = a.get().await.unwrap();
        assert_eq!(seed, Versioned { value: b"seed".to_vec(), version: -1 }, "the seed until the node exists");
        assert_eq!(a_client.check_stat(&path).await.unwrap(), None, "reading creates nothing");
        let waiting = {
            let a = a.clone();
            tokio::spawn({
                let seed = seed.clone();
                async move { a.changed(&seed).await }
            })
        };
        let created = b.try_set(&seed, br#"{"on":true}"#.to_vec()).await.unwrap().expect("nobody created it first");
        assert_eq!(created.version, 0);
        assert_eq!(eventually("A to hear the creation", waiting).await.unwrap().unwrap(), created);
        assert_eq!(b_client.get_data(&path).await.unwrap().0, br#"{"on":true}"#, "the bytes as they are");
        // Compare-and-set by version: a stale read loses, a fresh one wins; any length, also none.
        assert_eq!(a.try_set(&seed, b"stale".to_vec()).await.unwrap(), None, "the node exists since");
        let emptied = a.set(Vec::new()).await.unwrap();
        assert_eq!(emptied, Versioned { value: Vec::new(), version: 1 });
        assert_eq!(b.try_set(&created, b"x".to_vec()).await.unwrap(), None, "A wrote since B's read");
        assert_eq!(b.get().await.unwrap(), emptied);
        let big = vec![7u8; 100_000];
        let written = b.try_set(&emptied, big.clone()).await.unwrap().expect("a fresh read wins");
        assert_eq!(a.changed(&emptied).await.unwrap(), written);
        assert_eq!(written.value, big);
        // Not a SharedCount: a SharedCount on the same node refuses these bytes rather than overwriting them.
        let count = SharedCount::new(&a_client, &path, 0).unwrap();
        assert!(matches!(count.get().await, Err(Error::CorruptData { .. })));
        assert!(matches!(count.set(1).await, Err(Error::CorruptData { .. })));
        assert_eq!(b.get().await.unwrap(), written, "untouched");
    }

    async fn shared_count_compares_and_sets_and_hears_every_change(hosts: &str) {
        let path = unique_path("counter-shared");
        let (a_client, b_client) = (client(hosts).await, client(hosts).await);
        let a = SharedCount::new(&a_client, &path, 3).unwrap();
        let b = SharedCount::new(&b_client, &path, 3).unwrap();
        let seed = a.get().await.unwrap();
        assert_eq!(seed, Versioned { value: 3, version: -1 }, "the seed until the node exists");
        assert_eq!(a_client.check_stat(&path).await.unwrap(), None, "reading creates nothing");

        // A waits for the node to appear; B creates it by a compare-and-set at version -1.
        let waiting = {
            let a = a.clone();
            tokio::spawn(async move { a.changed(&seed).await })
        };
        let created = b.try_set(&seed, 4).await.unwrap().expect("nobody created it first");
        assert_eq!(created, Versioned { value: 4, version: 0 });
        assert_eq!(eventually("A to hear the creation", waiting).await.unwrap().unwrap(), created);
        assert_eq!(b_client.get_data(&path).await.unwrap().0, 4i32.to_be_bytes(), "4 bytes, big-endian");

        // A compare-and-set from a stale read fails; from a fresh one it succeeds.
        assert_eq!(a.try_set(&seed, 10).await.unwrap(), None, "the node exists since");
        let set = a.set(5).await.unwrap();
        assert_eq!(set, Versioned { value: 5, version: 1 });
        assert_eq!(b.try_set(&created, 6).await.unwrap(), None, "A wrote since B's read");
        let fresh = b.get().await.unwrap();
        assert_eq!(fresh, set);
        assert_eq!(b.try_set(&fresh, 6).await.unwrap(), Some(Versioned { value: 6, version: 2 }));
        let found = zklock::inspect(&b_client, &path).await.unwrap().unwrap();
        assert_eq!(found.recipe, Recipe::SharedCount { value: 6, version: 2 });

        // A change made before `changed` looks is reported at once; then the next one is awaited.
        assert_eq!(a.changed(&set).await.unwrap(), Versioned { value: 6, version: 2 });
        let (listener_tx, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let follower = {
            let a = a.clone();
            tokio::spawn(async move {
                let mut now = a.get().await.unwrap();
                listener_tx.send(now).unwrap();
                for _ in 0..3 {
                    now = a.changed(&now).await.unwrap();
                    listener_tx.send(now).unwrap();
                }
            })
        };
        let mut expected = Versioned { value: 6, version: 2 };
        assert_eq!(eventually("the follower's first read", heard.recv()).await, Some(expected));
        for value in [7, 7, -1] {
            // The same value again is a change too: the version moves.
            expected = b.set(value).await.unwrap();
            assert_eq!(eventually("the follower to hear it", heard.recv()).await, Some(expected));
        }
        eventually("the follower", follower).await.unwrap();

        // A node holding something else (a DistributedAtomicLong's 8 bytes) is refused.
        let long = unique_path("counter-shared-long");
        AtomicLong::new(&a_client, &long).unwrap().set(1).await.unwrap();
        let wrong = SharedCount::new(&a_client, &long, 0).unwrap();
        assert!(matches!(wrong.get().await, Err(Error::CorruptData { len: 8, .. })));
        assert!(matches!(wrong.set(2).await, Err(Error::CorruptData { len: 8, .. })), "set overwrote another kind");
        assert_eq!(AtomicLong::new(&a_client, &long).unwrap().get().await.unwrap(), 1);
    }
}

on_every_server! {
    async fn lost_reply_after_a_rival_increment_is_counted_once(hosts: &str) {
        // The write happened, its reply was lost, and another client incremented before we looked again: the
        // version moved and the value is not ours. Without the receipt we would take the write for lost and count
        // it a second time (3); a read-back of "version moved, value equals ours" could as well be the rival's.
        let path = unique_path("counter-lost-reply");
        let (proxy, slow) = slow_proxied_session(hosts, 3).await;
        // A looks again only after about 3 s: the window in which B increments.
        let a = AtomicLong::new(slow, &path).unwrap();
        let b_client = client(hosts).await;
        let b = AtomicLong::new(&b_client, &path).unwrap();
        a.set(0).await.unwrap();

        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let increment = tokio::spawn(async move { a.increment().await });
        await_value(&b_client, &path, 1).await;
        assert_eq!(b.increment().await.unwrap().post, 2);
        let ours = eventually("A's increment to settle", increment).await.unwrap().unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        assert_eq!(ours, AtomicValue { succeeded: true, pre: 0, post: 1 }, "the values of the write that happened");
        assert_eq!(b.get().await.unwrap(), 2, "A's increment was counted twice (or lost)");
        await_children(&b_client, &path, "the receipt to be deleted", |c| c.is_empty()).await;
    }

    async fn lost_request_is_sent_again(hosts: &str) {
        let path = unique_path("counter-lost-request");
        let (proxy, a_client) = proxied_client(hosts).await;
        let a = AtomicLong::new(&a_client, &path).unwrap();
        a.set(10).await.unwrap();
        proxy.drop_requests_and_cut(&[opcode::MULTI], 1);
        let ours = eventually("an increment despite the lost request", a.increment()).await.unwrap();
        assert_eq!(proxy.lost_requests(), 1, "the fault was injected");
        assert_eq!(ours, AtomicValue { succeeded: true, pre: 10, post: 11 });
        let observer = client(hosts).await;
        assert_eq!(AtomicLong::new(&observer, &path).unwrap().get().await.unwrap(), 11);

        // The same for a shared count's compare-and-set: lost request, then lost reply.
        let count_path = unique_path("counter-lost-cas");
        let count = SharedCount::new(&a_client, &count_path, 0).unwrap();
        let seen = count.get().await.unwrap();
        proxy.drop_requests_and_cut(&[opcode::MULTI], 1);
        let set = eventually("a create despite the lost request", count.try_set(&seen, 1)).await.unwrap();
        assert_eq!(set, Some(Versioned { value: 1, version: 0 }));
        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let set = eventually("a set despite the lost reply", count.try_set(&set.unwrap(), 2)).await.unwrap();
        // Without the receipt the version has moved after the lost reply, and the compare-and-set would be
        // reported as failed although it happened.
        assert_eq!(set, Some(Versioned { value: 2, version: 1 }));
        assert_eq!((proxy.lost_requests(), proxy.lost_replies()), (2, 1), "the faults were injected");
        // The observer's session is older than these writes: on an ensemble its member may lag behind A's.
        observer.sync(&count_path).await.unwrap();
        assert_eq!(SharedCount::new(&observer, &count_path, 0).unwrap().get().await.unwrap(), set.unwrap());
    }

    async fn session_expiry_with_the_outcome_unknown_never_counts_twice(hosts: &str) {
        let path = unique_path("counter-expired");
        let (proxy, a_client) = proxied_client(hosts).await;
        let a = AtomicLong::new(Session::new(&a_client).with_retry(slow_retry(3)), &path).unwrap();
        a.set(0).await.unwrap();
        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let increment = tokio::spawn(async move { a.increment().await });
        let observer = client(hosts).await;
        await_value(&observer, &path, 1).await;
        // The session ends before A can look at its receipt: the outcome stays unknown to A.
        expire_session(hosts, &a_client).await;
        let outcome = eventually("A's increment to end", increment).await.unwrap();
        assert_eq!(outcome, Err(Error::SessionExpired));
        assert_eq!(AtomicLong::new(&observer, &path).unwrap().get().await.unwrap(), 1, "once, not twice");
        await_children(&observer, &path, "the receipt to go with the session", |c| c.is_empty()).await;
    }

    async fn cancelled_increments_count_at_most_once(hosts: &str) {
        let path = unique_path("counter-cancel");
        let client = client(hosts).await;
        let counter = AtomicLong::new(&client, &path).unwrap();
        counter.set(0).await.unwrap();
        let (mut done, mut dropped) = (0, 0);
        // Dropped at arbitrary moments: before the write is sent, with it in flight, or after it is settled.
        for micros in [0u64, 50, 200, 500, 1_000, 2_000, 5_000, 20_000, 100_000] {
            match tokio::time::timeout(Duration::from_micros(micros), counter.increment()).await {
                Ok(changed) => {
                    changed.unwrap();
                    done += 1;
                }
                Err(_) => dropped += 1,
            }
        }
        let value = counter.get().await.unwrap();
        assert!((done..=done + dropped).contains(&value), "{value} after {done} done and {dropped} dropped");
        await_children(&client, &path, "the receipts of cancelled increments to go", |c| c.is_empty()).await;
    }
}

/// Sends `command` to a `recipes` peer and returns its answer after `word`.
async fn ask(peer: &mut Peer, command: &str, word: &str) -> String {
    peer.send(command).await;
    peer.expect(word).await
}

on_standalone_and_embedded! {
    async fn curator_and_zklock_share_an_atomic_long(hosts: &str) {
        let path = unique_path("interop-atomic-long");
        let mut curator = Peer::curator(&["recipes", hosts]).await;
        curator.expect("READY").await;
        // Each reads what the other wrote.
        let client = client(hosts).await;
        let ours = AtomicLong::new(&client, &path).unwrap();
        assert_eq!(ask(&mut curator, &format!("long-get {path}"), "VALUE").await, "0");
        ours.set(-5).await.unwrap();
        assert_eq!(ask(&mut curator, &format!("long-get {path}"), "VALUE").await, "-5");
        assert_eq!(ask(&mut curator, &format!("long-add {path} 7"), "ADDED").await, "-5 2");
        assert_eq!(ours.get().await.unwrap(), 2);
        // Curator reports a failed compare-and-set's post value as 0 (it has none); ours as the value found.
        assert_eq!(ask(&mut curator, &format!("long-cas {path} 3 9"), "CAS").await, "false 2 0");
        assert_eq!(ask(&mut curator, &format!("long-cas {path} 2 9"), "CAS").await, "true 2 9");
        assert!(ours.compare_and_set(9, i64::MIN).await.unwrap().succeeded);
        assert_eq!(ask(&mut curator, &format!("long-get {path}"), "VALUE").await, i64::MIN.to_string());
        ask(&mut curator, &format!("long-set {path} 0"), "SET").await;

        // Counting together: Curator increments while two zklock tasks do; nothing is lost or counted twice.
        const ROUNDS: usize = 30;
        curator.send(&format!("long-increments {path} {ROUNDS}")).await;
        let tasks = spawn_on_sessions(hosts, 2, |_, client| {
            let path = path.clone();
            async move {
                let counter = AtomicLong::new(&client, &path).unwrap();
                for _ in 0..ROUNDS {
                    counter.increment().await.unwrap();
                }
            }
        })
        .await;
        all_done("the zklock incrementers", tasks).await;
        curator.expect("DONE").await;
        let total = 3 * ROUNDS as i64;
        assert_eq!(ours.get().await.unwrap(), total);
        assert_eq!(ask(&mut curator, &format!("long-get {path}"), "VALUE").await, total.to_string());
        curator.finish().await;
    }

    async fn curator_and_zklock_share_a_shared_count(hosts: &str) {
        let path = unique_path("interop-shared-count");
        let client = client(hosts).await;
        let ours = SharedCount::new(&client, &path, 0).unwrap();
        let mut curator = Peer::curator(&["recipes", hosts]).await;
        curator.expect("READY").await;
        // Curator's start() creates the node with its seed; we read it.
        assert_eq!(ask(&mut curator, &format!("count-get {path} 7"), "COUNT").await, "7 0");
        assert_eq!(ours.get().await.unwrap(), Versioned { value: 7, version: 0 });
        // We change it: Curator's listener hears it, and its compare-and-set from the old version fails.
        ask(&mut curator, &format!("count-watch {path} 8"), "WATCHING").await;
        let set = ours.set(8).await.unwrap();
        assert_eq!(set, Versioned { value: 8, version: 1 });
        assert_eq!(curator.expect("CHANGED").await, "8");
        assert_eq!(ask(&mut curator, &format!("count-tryset {path} 100"), "TRYSET").await, "false");
        // Curator changes it: we hear it, and our compare-and-set from the old version fails.
        let heard = {
            let ours = ours.clone();
            tokio::spawn(async move { ours.changed(&set).await })
        };
        assert_eq!(ask(&mut curator, &format!("count-set {path} -9"), "COUNT").await, "-9 2");
        assert_eq!(eventually("our change watch", heard).await.unwrap().unwrap(), Versioned { value: -9, version: 2 });
        assert_eq!(ours.try_set(&set, 1).await.unwrap(), None);
        // Our compare-and-set from the current version succeeds, and Curator hears it.
        ask(&mut curator, &format!("count-watch {path} 10"), "WATCHING").await;
        let now = ours.get().await.unwrap();
        assert_eq!(ours.try_set(&now, 10).await.unwrap(), Some(Versioned { value: 10, version: 3 }));
        assert_eq!(curator.expect("CHANGED").await, "10");
        curator.finish().await;
    }
}
