//! The FIFO queue: every item exactly once, FIFO per producer, blocking and non-blocking takes, and a safe take
//! that survives a consumer's death.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use zklock::{Error, LostReason, Queue, QueueEvent};
use zklock_testkit::{expire_session, unique_path};

use crate::barrier::{events, until};
use crate::on_every_server;
use crate::support::*;

/// What each consumer received, in order: (producer, index) pairs.
type Received = Arc<StdMutex<Vec<Vec<(usize, usize)>>>>;

/// `"p<producer>-<index>"` → (producer, index).
fn parse(item: &[u8]) -> (usize, usize) {
    let text = std::str::from_utf8(item).unwrap();
    let (p, i) = text.strip_prefix('p').unwrap().split_once('-').unwrap();
    (p.parse().unwrap(), i.parse().unwrap())
}

on_every_server! {
    async fn producers_and_consumers_every_item_exactly_once(hosts: &str) {
        const PRODUCERS: usize = 4;
        const ITEMS: usize = 50;
        const CONSUMERS: usize = 4;
        const TOTAL: usize = PRODUCERS * ITEMS;
        let dir = unique_path("queue");
        // What each consumer received, in the order it received it.
        let received: Received = Arc::new(StdMutex::new(vec![Vec::new(); CONSUMERS]));
        let (done_tx, done_rx) = tokio::sync::watch::channel(false);
        let consumers = spawn_on_sessions(hosts, CONSUMERS, |c, client| {
            let (dir, received, done_tx, mut done_rx) = (dir.clone(), received.clone(), done_tx.clone(), done_rx.clone());
            async move {
                let queue = Queue::new(&client, &dir).unwrap();
                loop {
                    // Stopping only once every item has arrived, so no take is cancelled while an item is in flight.
                    let item = tokio::select! {
                        item = queue.take() => item.unwrap(),
                        _ = done_rx.wait_for(|done| *done) => return,
                    };
                    let mut received = received.lock().unwrap();
                    received[c].push(parse(&item));
                    if received.iter().map(Vec::len).sum::<usize>() == TOTAL {
                        done_tx.send_replace(true);
                    }
                }
            }
        })
        .await;
        let producers = spawn_on_sessions(hosts, PRODUCERS, |p, client| {
            let dir = dir.clone();
            async move {
                let queue = Queue::new(&client, &dir).unwrap();
                for i in 0..ITEMS {
                    queue.put(format!("p{p}-{i}").as_bytes()).await.unwrap();
                }
            }
        })
        .await;
        all_done("the producers to finish", producers).await;
        all_done("the consumers to receive everything", consumers).await;
        let received = received.lock().unwrap().clone();
        let all: Vec<(usize, usize)> = received.iter().flatten().copied().collect();
        assert_eq!(all.len(), TOTAL, "no item delivered twice");
        let distinct: BTreeSet<(usize, usize)> = all.iter().copied().collect();
        let expected: BTreeSet<(usize, usize)> = (0..PRODUCERS).flat_map(|p| (0..ITEMS).map(move |i| (p, i))).collect();
        assert_eq!(distinct, expected, "every item delivered");
        // Each consumer sees each producer's items in the order they were put.
        for (c, items) in received.iter().enumerate() {
            let mut last: BTreeMap<usize, usize> = BTreeMap::new();
            for &(p, i) in items {
                if let Some(&before) = last.get(&p) {
                    assert!(i > before, "consumer {c} got p{p}-{i} after p{p}-{before}");
                }
                last.insert(p, i);
            }
        }
        let observer = client(hosts).await;
        assert_eq!(Queue::new(&observer, &dir).unwrap().len().await.unwrap(), 0);
    }

    async fn try_take_peek_len_and_blocking_take(hosts: &str) {
        let dir = unique_path("queue-basic");
        let client = client(hosts).await;
        let queue = Queue::new(&client, &dir).unwrap();
        assert_eq!(queue.try_take().await.unwrap(), None, "a queue that does not exist yet is empty");
        assert_eq!(queue.peek().await.unwrap(), None);
        assert_eq!(queue.len().await.unwrap(), 0);
        queue.put(b"first").await.unwrap();
        queue.put(b"second").await.unwrap();
        assert_eq!(queue.len().await.unwrap(), 2);
        assert_eq!(queue.peek().await.unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(queue.try_take().await.unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(queue.try_take().await.unwrap().as_deref(), Some(&b"second"[..]));
        assert_eq!(queue.try_take().await.unwrap(), None, "empty again");
        assert_eq!(queue.take_timeout(Duration::from_millis(200)).await, Err(Error::Timeout));

        // A blocking take waits for the next put.
        let (listener, mut rx) = events();
        let waiting = Queue::new(queue.session().clone().with_listener(listener), queue.path()).unwrap();
        let take = tokio::spawn(async move { waiting.take().await });
        until(&mut rx, "the consumer to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        assert!(!take.is_finished());
        let producer = crate::support::client(hosts).await;
        Queue::new(&producer, &dir).unwrap().put(b"third").await.unwrap();
        assert_eq!(eventually("the blocked take", take).await.unwrap().unwrap(), b"third");
        assert!(queue.is_empty().await.unwrap());
    }

    async fn safe_take_survives_consumer_expiry(hosts: &str) {
        let dir = unique_path("queue-safe");
        let (a_client, b_client) = (client(hosts).await, client(hosts).await);
        let (a, b) = (Queue::new(&a_client, &dir).unwrap(), Queue::new(&b_client, &dir).unwrap());
        a.put(b"x").await.unwrap();
        a.put(b"y").await.unwrap();
        // A claims x; B skips the claimed x and gets y, then gives it back.
        let a_item = a.take_safe().await.unwrap();
        assert_eq!(a_item.data(), b"x");
        // On an ensemble B's member may lag behind A's writes (here, and after A's expiry below): catch up first.
        b_client.sync(&dir).await.unwrap();
        let b_item = b.try_take_safe().await.unwrap().expect("y is unclaimed");
        assert_eq!(b_item.data(), b"y");
        assert!(b.try_take_safe().await.unwrap().is_none(), "both items are claimed");
        b_item.abandon().await.unwrap();
        assert_eq!(b.len().await.unwrap(), 2, "claimed items stay in the queue");

        // A dies mid-take: its claim goes with its session (A is told), and x is taken again, still first.
        let a_lost = a_item.lost();
        expire_session(hosts, &a_client).await;
        let reason = eventually("A's lost signal", a_lost).await;
        assert!(matches!(reason, LostReason::SessionExpired | LostReason::NodeDeleted), "{reason:?}");
        b_client.sync(&dir).await.unwrap();
        let again = eventually("x to be available again", b.take_safe()).await.unwrap();
        assert_eq!(again.data(), b"x");
        assert_eq!(again.complete().await.unwrap(), b"x");
        assert_eq!(a_item.complete().await, Err(Error::SessionExpired), "A's claim is gone");
        let y = b.take_safe().await.unwrap();
        assert_eq!(y.complete().await.unwrap(), b"y");
        assert!(b.try_take_safe().await.unwrap().is_none());
        assert!(b.is_empty().await.unwrap());
        assert!(children(&b_client, &format!("{dir}/claims")).await.is_empty(), "no claim left behind");

        // A blocked safe take is woken by a put, and a dropped claim puts the item back.
        let (listener, mut rx) = events();
        let waiting = Queue::new(b.session().clone().with_listener(listener), b.path()).unwrap();
        let take = tokio::spawn(async move { waiting.take_safe().await.map(|item| item.data().to_vec()) });
        until(&mut rx, "the consumer to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        b.put(b"z").await.unwrap();
        assert_eq!(eventually("the blocked safe take", take).await.unwrap().unwrap(), b"z");
        await_children(&b_client, &format!("{dir}/claims"), "the dropped claim to go", |c| c.is_empty()).await;
        let z = b.try_take_safe().await.unwrap().expect("z is back");
        assert_eq!(z.complete().await.unwrap(), b"z");
    }
}

on_every_server! {
    async fn lost_replies_neither_duplicate_nor_lose_items(hosts: &str) {
        let dir = unique_path("queue-faults");
        let (proxy, client) = proxied_client(hosts).await;
        let queue = Queue::new(&client, &dir).unwrap();
        // Make the directory and the claims directory exist, so the faults below hit the item and claim creates.
        queue.put(b"setup").await.unwrap();
        queue.take_safe().await.unwrap().complete().await.unwrap();

        // A put whose reply is lost is found by its receipt, not enqueued twice.
        proxy.drop_reply_and_cut(&[zklock_testkit::opcode::MULTI]);
        eventually("a put despite the lost reply", queue.put(b"once")).await.unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        assert_eq!(queue.len().await.unwrap(), 1, "exactly one item");
        await_children(&client, &format!("{dir}/receipts"), "the receipt to be deleted", |c| c.is_empty()).await;

        // A claim whose reply is lost is recognised as ours.
        proxy.drop_reply_and_cut(zklock_testkit::opcode::ALL_CREATES);
        let claimed = eventually("a claim despite the lost reply", queue.take_safe()).await.unwrap();
        assert_eq!(proxy.lost_replies(), 2, "the fault was injected");
        assert_eq!(claimed.data(), b"once");
        assert_eq!(children(&client, &format!("{dir}/claims")).await.len(), 1);

        // A completion whose reply is lost is recognised as done.
        proxy.drop_reply_and_cut(&[zklock_testkit::opcode::MULTI]);
        assert_eq!(eventually("completion despite the lost reply", claimed.complete()).await.unwrap(), b"once");
        assert_eq!(proxy.lost_replies(), 3, "the fault was injected");
        assert!(queue.is_empty().await.unwrap());
        assert!(children(&client, &format!("{dir}/claims")).await.is_empty());
    }
}

on_every_server! {
    async fn cancelled_safe_take_puts_the_item_back(hosts: &str) {
        let dir = unique_path("queue-cancel");
        let claims = format!("{dir}/claims");
        let client = client(hosts).await;
        let queue = Queue::new(&client, &dir).unwrap();
        queue.put(b"only").await.unwrap();
        cancel_safe_takes(&client, &claims, || queue.take_safe(), || queue.len(), 1).await;
        let item = queue.try_take_safe().await.unwrap().expect("the item is unclaimed");
        assert_eq!(item.complete().await.unwrap(), b"only");
    }
}

on_every_server! {
    async fn lost_put_reply_after_the_item_was_taken_is_not_put_again(hosts: &str) {
        // Finding 7 of docs/reliability.md: the producer's transaction happened, its reply was lost, and a consumer
        // took the item before the producer looked. Without the receipt the producer finds no item and puts it again.
        let dir = unique_path("queue-lost-put-taken");
        let (proxy, slow) = slow_proxied_session(hosts, 3).await;
        // The producer looks again only after about 3 s: the window in which the consumer takes the item.
        let producer = Queue::new(slow, &dir).unwrap();
        let consumer_client = client(hosts).await;
        let consumer = Queue::new(&consumer_client, &dir).unwrap();
        producer.put(b"setup").await.unwrap();
        assert_eq!(consumer.take().await.unwrap(), b"setup");

        proxy.drop_reply_and_cut(&[zklock_testkit::opcode::MULTI, zklock_testkit::opcode::CREATE, zklock_testkit::opcode::CREATE2]);
        let put = tokio::spawn(async move { producer.put(b"once").await });
        assert_eq!(eventually("the consumer to take the item", consumer.take()).await.unwrap(), b"once");
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let name = eventually("the put to settle", put).await.unwrap().unwrap();
        assert!(name.starts_with("qn-"), "{name}");
        // Caught up with the producer's member first: a lagging one could hide a second copy.
        consumer_client.sync(&dir).await.unwrap();
        assert_eq!(consumer.len().await.unwrap(), 0, "the item was enqueued a second time");
        await_children(&consumer_client, &format!("{dir}/receipts"), "the receipt to be deleted", |c| c.is_empty()).await;
    }
}

crate::on_standalone_and_embedded! {
    async fn take_safe_timeout_gives_up_and_leaves_no_claim(hosts: &str) {
        const TIMEOUT: Duration = Duration::from_millis(200);
        let dir = unique_path("queue-take-safe-timeout");
        let claims = format!("{dir}/claims");
        let (a, b) = (client(hosts).await, client(hosts).await);
        let (queue, other) = (Queue::new(&a, &dir).unwrap(), Queue::new(&b, &dir).unwrap());
        // Nothing in the queue: it waits its time, then gives up.
        let started = tokio::time::Instant::now();
        assert_eq!(queue.take_safe_timeout(TIMEOUT).await.unwrap_err(), Error::Timeout);
        assert!(started.elapsed() >= TIMEOUT, "gave up after {:?}", started.elapsed());
        // Every item claimed by another consumer: it gives up, and only the other's claim is there.
        queue.put(b"first").await.unwrap();
        let theirs = other.take_safe().await.unwrap();
        assert_eq!(queue.take_safe_timeout(TIMEOUT).await.unwrap_err(), Error::Timeout);
        let left = await_children(&a, &claims, "the other's claim alone", |c| c.len() == 1).await;
        assert_eq!(left, [theirs.name()], "a claim is named after its item");
        // An unclaimed item: taken within the time.
        queue.put(b"second").await.unwrap();
        let ours = queue.take_safe_timeout(TIMEOUT).await.unwrap();
        assert_eq!(ours.data(), b"second");
        assert_eq!(ours.complete().await.unwrap(), b"second");
        assert_eq!(theirs.complete().await.unwrap(), b"first");
        // Timeouts at arbitrary moments — before the claim is sent, with it in flight, after it is made: no claim
        // is left behind and the item stays in the queue.
        queue.put(b"third").await.unwrap();
        for micros in [0u64, 100, 500, 1_000, 2_000, 5_000] {
            if let Ok(claimed) = queue.take_safe_timeout(Duration::from_micros(micros)).await {
                drop(claimed);
            }
            await_children(&a, &claims, "no claim left", |c| c.is_empty()).await;
            assert_eq!(queue.len().await.unwrap(), 1, "the item stays in the queue");
        }
    }
}
