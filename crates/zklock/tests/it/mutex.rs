//! The fair exclusive lock: exclusion, FIFO order, no herd, try/timeout/cancel, fencing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use zklock::zookeeper_client::Client;
use zklock::{Error, Mutex, QueueEvent, Session};
use zklock_testkit::{unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

/// A waiter for `dir` on a session through a proxy of its own (which counts the session's listings and
/// notifications), queued when returned, that holds until told to release.
async fn proxied_waiter(hosts: &str, dir: &str) -> (Proxy, Contender) {
    let (proxy, client) = proxied_client(hosts).await;
    let waiter = hold_when_told(Session::new(&client), |session| {
        let mutex = Mutex::new(session, dir).unwrap();
        async move { mutex.lock().await }
    })
    .await;
    (proxy, waiter)
}

/// Who held the lock, in order: (waiter number from 1, fencing token, sequence).
type Turns = Arc<StdMutex<Vec<(usize, i64, i64)>>>;

/// Queues a waiter for `dir` on each of `clients` in turn, each queued (waiting) before the next starts; when its
/// turn comes, waiter `i` (from 1) writes down `(i, fencing token, sequence)` in `turns` and releases. Their tasks.
async fn queue_waiters(clients: &[Client], dir: &str, turns: &Turns) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for (i, client) in (1..).zip(clients) {
        let turns = turns.clone();
        let task = spawn_waiting(Session::new(client), |session| {
            let mutex = Mutex::new(session, dir).unwrap();
            async move {
                let guard = mutex.lock().await.unwrap();
                turns
                    .lock()
                    .unwrap()
                    .push((i, guard.fencing_token(), guard.sequence()));
                guard.release().await.unwrap();
            }
        })
        .await;
        tasks.push(task);
    }
    tasks
}

on_every_server! {
    async fn mutual_exclusion(hosts: &str) {
        // 8 sessions × 5 rounds increment a counter with a read, a yield and a write: any overlap loses an update.
        const CONTENDERS: usize = 8;
        const ROUNDS: usize = 5;
        let dir = unique_path("mutex-exclusion");
        let counter = Arc::new(AtomicU64::new(0));
        let inside = Arc::new(Occupancy::default());
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let tasks = spawn_on_sessions(hosts, CONTENDERS, |_, client| {
            let (dir, counter, inside, seen) = (dir.clone(), counter.clone(), inside.clone(), seen.clone());
            async move {
                let mutex = Mutex::new(&client, &dir).unwrap();
                for _ in 0..ROUNDS {
                    let guard = mutex.lock().await.unwrap();
                    assert_eq!(inside.enter(), 1, "two holders at once");
                    let value = counter.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    counter.store(value + 1, Ordering::SeqCst);
                    seen.lock().unwrap().push(value);
                    inside.leave();
                    guard.release().await.unwrap();
                }
            }
        })
        .await;
        all_done("contenders to finish", tasks).await;
        let total = (CONTENDERS * ROUNDS) as u64;
        assert_eq!(counter.load(Ordering::SeqCst), total);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, (0..total).collect::<Vec<_>>(), "every step must be exactly +1");
        let observer = client(hosts).await;
        assert_eq!(children(&observer, &dir).await, Vec::<String>::new(), "no node left behind");
    }

    // Not reentrant: a holder that asks again (the same task, the same `Mutex` value) is one more contender,
    // queued behind itself. `try_lock` says taken and `lock_timeout` times out (a plain `lock` would wait for
    // ever); neither leaves a node.
    async fn the_lock_is_not_reentrant(hosts: &str) {
        let zk = client(hosts).await;
        let dir = unique_path("mutex-reentrant");
        let mutex = Mutex::new(&zk, &dir).unwrap();
        let guard = mutex.lock().await.unwrap();
        assert!(mutex.try_lock().await.unwrap().is_none(), "the holder locked again");
        assert_eq!(mutex.lock_timeout(Duration::from_millis(200)).await.unwrap_err(), Error::Timeout);
        assert_eq!(zk.list_children(&dir).await.unwrap(), [guard.path().rsplit('/').next().unwrap()]);
        guard.release().await.unwrap();
        // Released, the same value locks at once.
        mutex.try_lock().await.unwrap().expect("free after the release").release().await.unwrap();
    }

    // Tasks of one process on one client (one ZooKeeper session) are separate contenders: each acquire creates its
    // own node, and they take turns in the order of their nodes' sequence, as separate processes do.
    async fn tasks_of_one_process_queue_in_order(hosts: &str) {
        let dir = unique_path("mutex-tasks");
        let zk = client(hosts).await;
        let head = Mutex::new(&zk, &dir).unwrap().lock().await.unwrap();
        let order = Turns::default();
        let tasks = queue_waiters(&[zk.clone(), zk.clone(), zk.clone()], &dir, &order).await;
        assert_eq!(zk.list_children(&dir).await.unwrap().len(), 4, "a node per acquire");
        head.release().await.unwrap();
        for task in tasks {
            eventually("the tasks to finish", task).await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(), [1, 2, 3], "FIFO order: {order:?}");
        assert!(order.windows(2).all(|w| w[0].2 < w[1].2), "by sequence: {order:?}");
    }

    async fn fifo_order_and_increasing_fencing_tokens(hosts: &str) {
        let dir = unique_path("mutex-fifo");
        let first = client(hosts).await;
        let head = Mutex::new(&first, &dir).unwrap().lock().await.unwrap();
        // Queue five waiters one after the other: each is queued (waiting) before the next one starts.
        let mut clients = Vec::new();
        for _ in 0..5 {
            clients.push(client(hosts).await);
        }
        let order = Turns::default();
        let tasks = queue_waiters(&clients, &dir, &order).await;
        let head_token = head.fencing_token();
        head.release().await.unwrap();
        for task in tasks {
            eventually("waiters to finish", task).await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let who: Vec<usize> = order.iter().map(|(i, _, _)| *i).collect();
        assert_eq!(who, vec![1, 2, 3, 4, 5], "FIFO order");
        let tokens: Vec<i64> = std::iter::once(head_token).chain(order.iter().map(|(_, t, _)| *t)).collect();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens strictly increase: {tokens:?}");
    }

    async fn fencing_token_survives_directory_recreation(hosts: &str) {
        // The sequence suffix restarts when the directory is recreated; the czxid-based token must not.
        let dir = unique_path("mutex-fence");
        let client = client(hosts).await;
        let mutex = Mutex::new(&client, &dir).unwrap();
        let before = mutex.lock().await.unwrap();
        let (token_before, seq_before) = (before.fencing_token(), before.sequence());
        before.release().await.unwrap();
        client.delete(&dir, None).await.unwrap();
        let after = mutex.lock().await.unwrap();
        assert_eq!(after.sequence(), seq_before, "the sequence restarted with the directory");
        assert!(after.fencing_token() > token_before, "the fencing token still increases");
        after.release().await.unwrap();
    }

    async fn no_herd_a_release_notifies_three_waiters_at_most(hosts: &str) {
        // Every waiter talks through its own proxy, so we can count the watch notifications each one receives.
        const WAITERS: usize = 5;
        let dir = unique_path("mutex-herd");
        let holder_client = client(hosts).await;
        let holder = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap();
        let mut proxies = Vec::new();
        let mut waiters = Vec::new();
        for _ in 0..WAITERS {
            let (proxy, waiter) = proxied_waiter(hosts, &dir).await;
            proxies.push(proxy);
            waiters.push(waiter);
        }
        let counts = |proxies: &[Proxy]| proxies.iter().map(|p| p.notifications()).collect::<Vec<_>>();
        assert_eq!(counts(&proxies), vec![0; WAITERS], "nobody is notified before the first release");
        holder.release().await.unwrap();
        let mut tasks = Vec::new();
        for (k, Contender { acquired, release, task }) in waiters.into_iter().enumerate() {
            eventually("the next waiter to acquire", acquired).await.unwrap();
            let now = counts(&proxies);
            for (j, count) in now.iter().enumerate() {
                // A release notifies the next holder and the two waiters behind it (their look-ahead watches are
                // on the releaser: the first learns that the new holder is its only blocker, the second lists the
                // queue), nobody else. Earlier holders: their look-ahead notifications (waiter 0 had none: the
                // holder was its only blocker; waiter 1 one; later waiters two at most), their wake-up, and
                // possibly the watch on their own node firing at their release. The new holder: its wake-up and its
                // look-aheads. The two waiters behind it: their look-aheads so far. Later waiters: nothing — no
                // herd.
                let look_ahead = j.min(2) as u64;
                let expected = if j < k {
                    1..=2 + look_ahead
                } else if j == k {
                    1..=1 + look_ahead
                } else if j <= k + 2 {
                    0..=look_ahead
                } else {
                    0..=0
                };
                assert!(expected.contains(count), "after hand-off {k}: notifications per waiter {now:?}");
            }
            release.send(()).unwrap();
            tasks.push(task);
        }
        for task in tasks {
            eventually("waiters to finish", task).await.unwrap();
        }
        assert!(counts(&proxies).iter().all(|c| (1..=4).contains(c)), "{:?}", counts(&proxies));
    }

    async fn a_waiter_deep_in_the_queue_lists_before_its_turn_not_after(hosts: &str) {
        // holder ← w0 ← w1 ← w2 ← w3. w0's only blocker is the holder. w1's first listing showed both its blockers
        // (the holder and w0), so the holder's deletion tells it that w0 is now its only one: it never lists again.
        // w2 and w3 queued behind three and four nodes: each lists once more when the contender two ahead of its
        // predecessor goes (w2: the holder, while w0 holds; w3: w0, while w1 holds) — two turns before its own — and
        // then takes over from its predecessor with no listing between any later release and its turn. Without the
        // look-ahead a waiter would list after its predecessor's deletion: a listing of the whole queue on every
        // hand-off.
        let dir = unique_path("mutex-lookahead");
        let holder_client = client(hosts).await;
        let holder = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap();
        let (p0, w0) = proxied_waiter(hosts, &dir).await;
        let (p1, w1) = proxied_waiter(hosts, &dir).await;
        let (p2, w2) = proxied_waiter(hosts, &dir).await;
        let (p3, w3) = proxied_waiter(hosts, &dir).await;
        let proxies = [p0, p1, p2, p3];
        let queued: Vec<u64> = proxies.iter().map(listings).collect();
        // Releases a waiter (after its acquire) and waits for it to be done.
        async fn hand_over(release: tokio::sync::oneshot::Sender<()>, task: JoinHandle<()>) {
            release.send(()).unwrap();
            eventually("the holder to release", task).await.unwrap();
        }
        holder.release().await.unwrap();
        eventually("w0 to acquire", w0.acquired).await.unwrap();
        assert_eq!(listings(&proxies[0]), queued[0], "w0 waited for the holder alone: no listing");
        // w2 lists once more, on the holder's release, while w0 holds.
        listed_again(&proxies[2], queued[2], "w2 to look at the queue again").await;
        let w2_listed = listings(&proxies[2]);
        hand_over(w0.release, w0.task).await;
        eventually("w1 to acquire", w1.acquired).await.unwrap();
        assert_eq!(listings(&proxies[1]), queued[1], "w1's first listing showed both its blockers: no listing since");
        // w3 lists once more, on w0's release, while w1 holds.
        listed_again(&proxies[3], queued[3], "w3 to look at the queue again").await;
        let w3_listed = listings(&proxies[3]);
        hand_over(w1.release, w1.task).await;
        eventually("w2 to acquire", w2.acquired).await.unwrap();
        assert_eq!(listings(&proxies[2]), w2_listed, "w2's turn came with w1's deletion: no listing after the holder's");
        hand_over(w2.release, w2.task).await;
        eventually("w3 to acquire", w3.acquired).await.unwrap();
        assert_eq!(listings(&proxies[3]), w3_listed, "w3's turn came with w2's deletion: no listing after w0's");
        hand_over(w3.release, w3.task).await;
    }

    async fn try_lock_never_queues(hosts: &str) {
        let dir = unique_path("mutex-try");
        let (a, b) = (client(hosts).await, client(hosts).await);
        let guard = Mutex::new(&a, &dir).unwrap().try_lock().await.unwrap().expect("a free lock is taken");
        let busy = Mutex::new(&b, &dir).unwrap().try_lock().await.unwrap();
        assert!(busy.is_none(), "a held lock is not taken");
        assert_eq!(children(&b, &dir).await.len(), 1, "the failed try_lock removed its node before returning");
        guard.release().await.unwrap();
        let again = Mutex::new(&b, &dir).unwrap().try_lock().await.unwrap();
        assert!(again.is_some(), "free again after release");
    }

    async fn a_zero_timeout_takes_a_free_lock(hosts: &str) {
        // A zero timeout bounds the wait for the turn, not the create (issue 33.2): a free lock is taken, as `flock
        // -w 0` and Curator's `acquire(0, …)` take it; a held one times out at once and leaves no node. For the
        // mutex, the read/write lock and the semaphore, which share the engine.
        let (a, b) = (client(hosts).await, client(hosts).await);
        let dir = unique_path("mutex-zero");
        let guard = Mutex::new(&a, &dir).unwrap().lock_timeout(Duration::ZERO).await.expect("a free lock is taken");
        let err = Mutex::new(&b, &dir).unwrap().lock_timeout(Duration::ZERO).await.unwrap_err();
        assert_eq!(err, Error::Timeout);
        assert_eq!(children(&b, &dir).await.len(), 1, "the timed-out acquire removed its node");
        guard.release().await.unwrap();

        let dir = unique_path("rwlock-zero");
        let write = zklock::RwLock::new(&a, &dir).unwrap().write_timeout(Duration::ZERO).await.expect("free: taken");
        let err = zklock::RwLock::new(&b, &dir).unwrap().read_timeout(Duration::ZERO).await.unwrap_err();
        assert_eq!(err, Error::Timeout);
        write.release().await.unwrap();
        let read = zklock::RwLock::new(&b, &dir).unwrap().read_timeout(Duration::ZERO).await.expect("free: taken");
        read.release().await.unwrap();

        let dir = unique_path("semaphore-zero");
        let lease = zklock::Semaphore::new(&a, &dir, 1).unwrap().acquire_timeout(Duration::ZERO).await;
        let lease = lease.expect("a free lease is taken");
        let err = zklock::Semaphore::new(&b, &dir, 1).unwrap().acquire_timeout(Duration::ZERO).await.unwrap_err();
        assert_eq!(err, Error::Timeout);
        lease.release().await.unwrap();
    }

    async fn timeout_and_cancellation_leave_no_node(hosts: &str) {
        let dir = unique_path("mutex-cancel");
        let (holder_client, waiter) = (client(hosts).await, client(hosts).await);
        let holder = Mutex::new(&holder_client, &dir).unwrap().lock().await.unwrap();
        let holder_node = holder.path().rsplit('/').next().unwrap().to_string();
        let only_holder = |c: &[String]| c.len() == 1 && c[0] == holder_node;

        // A timed-out acquire has removed its node by the time it returns.
        let err = Mutex::new(&waiter, &dir).unwrap().lock_timeout(Duration::from_millis(200)).await.unwrap_err();
        assert_eq!(err, Error::Timeout);
        assert_eq!(children(&waiter, &dir).await, vec![holder_node.clone()]);

        // Dropped before the first poll: nothing was ever sent.
        drop(Mutex::new(&waiter, &dir).unwrap().lock());
        assert_eq!(children(&waiter, &dir).await, vec![holder_node.clone()]);

        // Dropped after one poll: the create is in flight and its reply unseen; the node is found by its uuid.
        {
            let mutex = Mutex::new(&waiter, &dir).unwrap();
            let mut acquire = Box::pin(mutex.lock());
            assert!(futures::poll!(&mut acquire).is_pending());
        }
        await_children(&waiter, &dir, "the cancelled create to be undone", only_holder).await;

        // Dropped at each later await point the listener can name.
        for stage in ["created", "waiting"] {
            let (listener, mut rx) = events();
            let mutex = Mutex::new(Session::new(&waiter).with_listener(listener), &dir).unwrap();
            // Boxed, so that `drop` below really drops the future (a stack pin would only drop a reference).
            let mut acquire = Box::pin(mutex.lock());
            let reached = async {
                loop {
                    match rx.recv().await.unwrap() {
                        QueueEvent::Created { .. } if stage == "created" => return,
                        QueueEvent::Waiting { .. } if stage == "waiting" => return,
                        _ => {}
                    }
                }
            };
            tokio::select! {
                _ = &mut acquire => panic!("acquired a held lock"),
                _ = eventually(stage, reached) => {}
            }
            drop(acquire);
            await_children(&waiter, &dir, &format!("cancel at {stage} to be undone"), only_holder).await;
        }

        // And at arbitrary moments.
        for micros in [0u64, 50, 200, 500, 1_000, 2_000, 5_000] {
            let mutex = Mutex::new(&waiter, &dir).unwrap();
            let result = tokio::time::timeout(Duration::from_micros(micros), mutex.lock()).await;
            assert!(result.is_err(), "acquired a held lock");
            await_children(&waiter, &dir, "the cancelled acquire to be undone", only_holder).await;
        }
        holder.release().await.unwrap();
        await_children(&waiter, &dir, "an empty directory", |c| c.is_empty()).await;
    }
}
