//! The read/write lock: shared readers, exclusive writers, the peers' bugs (kazoo #649, Curator's first-writer
//! watch), try/timeout/cancel.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use zklock::zookeeper_client::Client;
use zklock::{Error, ReadGuard, RwLock, Session};
use zklock_testkit::{unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

/// A writer of `dir` on `client`, queued when returned, that holds until told to release.
async fn writer_held_when_told(client: &Client, dir: &str) -> Contender {
    hold_when_told(Session::new(client), |session| {
        let lock = RwLock::new(session, dir).unwrap();
        async move { lock.write().await }
    })
    .await
}

/// A reader of `dir` on a session through a new proxy (which counts what it sends), in a task, returned once it
/// waits in the queue.
async fn reader_behind_a_proxy(hosts: &str, dir: &str) -> (Proxy, JoinHandle<zklock::Result<ReadGuard>>) {
    let (proxy, reader_client) = proxied_client(hosts).await;
    // On an ensemble the writers' sessions may be on other members: the reader's catches up with their creates
    // first, so that its first listing shows every writer queued before it.
    reader_client.sync(dir).await.unwrap();
    let reader = spawn_waiting(Session::new(&reader_client), |session| {
        let lock = RwLock::new(session, dir).unwrap();
        async move { lock.read().await }
    })
    .await;
    (proxy, reader)
}

on_every_server! {
    async fn readers_share_writers_exclude(hosts: &str) {
        // 6 sessions × 6 rounds of a fixed mix of reads and writes; the counters catch any overlap a writer has.
        const CONTENDERS: usize = 6;
        const ROUNDS: usize = 6;
        let dir = unique_path("rw-exclusion");
        let (readers, writers) = (Arc::new(Occupancy::default()), Arc::new(Occupancy::default()));
        let tasks = spawn_on_sessions(hosts, CONTENDERS, |i, client| {
            let (dir, readers, writers) = (dir.clone(), readers.clone(), writers.clone());
            async move {
                let lock = RwLock::new(&client, &dir).unwrap();
                for round in 0..ROUNDS {
                    if (i + round) % 3 == 0 {
                        let guard = lock.write().await.unwrap();
                        assert_eq!(writers.enter(), 1, "two writers at once");
                        assert_eq!(readers.now(), 0, "a writer next to readers");
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        writers.leave();
                        guard.release().await.unwrap();
                    } else {
                        let guard = lock.read().await.unwrap();
                        readers.enter();
                        assert_eq!(writers.now(), 0, "a reader next to a writer");
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        readers.leave();
                        guard.release().await.unwrap();
                    }
                }
            }
        })
        .await;
        all_done("contenders to finish", tasks).await;
        let observer = client(hosts).await;
        assert!(children(&observer, &dir).await.is_empty(), "no node left behind");
    }

    async fn many_readers_hold_at_once(hosts: &str) {
        let dir = unique_path("rw-shared");
        let mut guards = Vec::new();
        for _ in 0..3 {
            let client = client(hosts).await;
            let guard = eventually("a read lock next to readers", RwLock::new(&client, &dir).unwrap().read())
                .await
                .unwrap();
            guards.push((client, guard));
        }
        let tokens: Vec<i64> = guards.iter().map(|(_, g)| g.fencing_token()).collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
        let writer_client = client(hosts).await;
        let writer = RwLock::new(&writer_client, &dir).unwrap();
        assert!(writer.try_write().await.unwrap().is_none(), "no writer next to readers");
        assert_eq!(writer.write_timeout(Duration::from_millis(200)).await.unwrap_err(), Error::Timeout);
        assert_eq!(children(&writer_client, &dir).await.len(), 3, "failed writers left no node");
        for (_, guard) in guards {
            guard.release().await.unwrap();
        }
        let write = writer.try_write().await.unwrap().expect("free after the readers left");
        assert!(write.fencing_token() > *tokens.last().unwrap());
        let reader_client = client(hosts).await;
        assert!(RwLock::new(&reader_client, &dir).unwrap().try_read().await.unwrap().is_none(), "no reader next to a writer");
        write.release().await.unwrap();
    }

    async fn readers_ignore_later_writers(hosts: &str) {
        // kazoo #649: a reader counted writers queued *after* it as blockers. Queue W0 (holding), R1, W2: when W0
        // leaves, R1 must read although W2 waits behind it (with the bug, R1 and W2 wait for each other forever).
        let dir = unique_path("rw-kazoo-649");
        let (c0, c1, c2) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let w0 = RwLock::new(&c0, &dir).unwrap().write().await.unwrap();
        let r1 = spawn_waiting(Session::new(&c1), |session| {
            let lock = RwLock::new(session, &dir).unwrap();
            async move { lock.read().await }
        })
        .await;
        let w2 = spawn_waiting(Session::new(&c2), |session| {
            let lock = RwLock::new(session, &dir).unwrap();
            async move { lock.write().await }
        })
        .await;
        w0.release().await.unwrap();
        let r1 = eventually("the reader ahead of the waiting writer", r1).await.unwrap().unwrap();
        assert!(!w2.is_finished(), "the writer waits for the reader");
        // Fair to writers: a reader arriving after the waiting writer does not overtake it.
        let c3 = client(hosts).await;
        assert!(RwLock::new(&c3, &dir).unwrap().try_read().await.unwrap().is_none());
        r1.release().await.unwrap();
        let w2 = eventually("the writer after the reader", w2).await.unwrap().unwrap();
        w2.release().await.unwrap();
    }

    async fn reader_waits_for_the_nearest_writer_and_lists_before_its_turn(hosts: &str) {
        // A reader behind W0, W1, W2 waits for W2 (the nearest writer). W2 is not its only blocker, so it also
        // watches W0 (two writers before W2): when W0 leaves, the reader lists the queue again while W1 holds — two
        // turns before its own —, learns that W1 and W2 are its only blockers, and watches W1 too. W1's deletion
        // then tells it that W2 is its only blocker, with no request, and W2's deletion is its turn: no listing after
        // W0's release. A reader whose first listing shows two writers (here, behind W1 and W2 alone) never lists
        // again. Notifications: W0's (the listing), W1's and W2's (the turn): three at most.
        let dir = unique_path("rw-nearest-writer");
        let (c0, c1, c2) = (client(hosts).await, client(hosts).await, client(hosts).await);
        let w0 = RwLock::new(&c0, &dir).unwrap().write().await.unwrap();
        let w1 = writer_held_when_told(&c1, &dir).await;
        let w2 = writer_held_when_told(&c2, &dir).await;
        let (proxy, reader) = reader_behind_a_proxy(hosts, &dir).await;
        let queued_listings = listings(&proxy);
        assert_eq!(proxy.notifications(), 0);
        w0.release().await.unwrap();
        eventually("the first writer to take over", w1.acquired).await.unwrap();
        listed_again(&proxy, queued_listings, "the reader to look at the queue again").await;
        assert!(!reader.is_finished());
        let before_turn = listings(&proxy);
        w1.release.send(()).unwrap();
        eventually("the first writer to finish", w1.task).await.unwrap();
        eventually("the second writer to take over", w2.acquired).await.unwrap();
        assert!(!reader.is_finished());
        w2.release.send(()).unwrap();
        let guard = eventually("the reader after the writers", reader).await.unwrap().unwrap();
        // W0's, W1's and W2's deletions, unless one was gone before its watch was set (then the reader looked
        // again at once).
        assert!((1..=3).contains(&proxy.notifications()), "{} notifications", proxy.notifications());
        assert_eq!(listings(&proxy), before_turn, "no listing between W0's release and the reader's turn");
        eventually("the writer to finish", w2.task).await.unwrap();

        guard.release().await.unwrap();

        // Behind two writers only: the first listing shows both, and is the only one.
        let w1 = RwLock::new(&c0, &dir).unwrap().write().await.unwrap();
        let c2 = client(hosts).await;
        let w2 = writer_held_when_told(&c2, &dir).await;
        let (proxy, reader) = reader_behind_a_proxy(hosts, &dir).await;
        let queued_listings = listings(&proxy);
        w1.release().await.unwrap();
        eventually("the second writer to take over", w2.acquired).await.unwrap();
        w2.release.send(()).unwrap();
        let guard = eventually("the reader after the writers", reader).await.unwrap().unwrap();
        assert_eq!(listings(&proxy), queued_listings, "its first listing showed both writers: no listing since");
        eventually("the writer to finish", w2.task).await.unwrap();
        guard.release().await.unwrap();
    }

    async fn timeout_and_cancellation_leave_no_node(hosts: &str) {
        let dir = unique_path("rw-cancel");
        let (holder_client, waiter) = (client(hosts).await, client(hosts).await);
        let holder = RwLock::new(&holder_client, &dir).unwrap().write().await.unwrap();
        let holder_node = holder.path().rsplit('/').next().unwrap().to_string();
        let only_holder = |c: &[String]| c.len() == 1 && c[0] == holder_node;
        let lock = RwLock::new(&waiter, &dir).unwrap();
        assert_eq!(lock.read_timeout(Duration::from_millis(200)).await.unwrap_err(), Error::Timeout);
        assert!(lock.try_read().await.unwrap().is_none());
        assert_eq!(children(&waiter, &dir).await, vec![holder_node.clone()]);
        for micros in [0u64, 100, 500, 2_000, 5_000] {
            assert!(tokio::time::timeout(Duration::from_micros(micros), lock.read()).await.is_err());
            await_children(&waiter, &dir, "the cancelled read to be undone", only_holder).await;
            assert!(tokio::time::timeout(Duration::from_micros(micros), lock.write()).await.is_err());
            await_children(&waiter, &dir, "the cancelled write to be undone", only_holder).await;
        }
        holder.release().await.unwrap();
        await_children(&waiter, &dir, "an empty directory", |c| c.is_empty()).await;
    }

    async fn writer_session_expiry_lets_readers_in(hosts: &str) {
        let dir = unique_path("rw-expiry");
        let (writer_client, reader_client) = (client(hosts).await, client(hosts).await);
        let writer = RwLock::new(&writer_client, &dir).unwrap().write().await.unwrap();
        let reader = {
            let lock = RwLock::new(&reader_client, &dir).unwrap();
            tokio::spawn(async move { lock.read().await })
        };
        expire_session_of(hosts, &writer_client).await;
        assert_expired(eventually("the lost signal", writer.lost()).await);
        let read = eventually("the reader to take over", reader).await.unwrap().unwrap();
        assert!(read.fencing_token() > writer.fencing_token());
        read.release().await.unwrap();
    }
}

async fn expire_session_of(hosts: &str, client: &zklock::zookeeper_client::Client) {
    zklock_testkit::expire_session(hosts, client).await
}
