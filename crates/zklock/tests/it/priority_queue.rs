//! The priority queue: lowest priority number first, FIFO within a priority, every item exactly once, the safe take
//! and the put receipts of the FIFO queue — and Curator's `DistributedPriorityQueue` in both directions.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use zklock::{Error, LostReason, PriorityQueue, QueueEvent, Recipe};
use zklock_testkit::peers::Peer;
use zklock_testkit::{expire_session, opcode, unique_path};

use crate::on_every_server;
use crate::on_standalone_and_embedded;
use crate::support::*;

/// `"p<producer>/<priority>/<index>"` → (producer, priority, index).
fn parse(item: &[u8]) -> (usize, i32, usize) {
    let text = std::str::from_utf8(item).unwrap();
    let mut parts = text.strip_prefix('p').unwrap().split('/');
    let mut next = || parts.next().unwrap();
    let producer = next().parse().unwrap();
    let priority = next().parse().unwrap();
    let index = next().parse().unwrap();
    (producer, priority, index)
}

/// The priority of item `index` of a producer: a spread of negative, zero and positive numbers, repeating.
fn priority_of(index: usize) -> i32 {
    [3, -2, 0, 3, 7, -2, 0][index % 7]
}

on_every_server! {
    async fn lowest_priority_first_and_fifo_within_a_priority(hosts: &str) {
        let dir = unique_path("pqueue-order");
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        assert_eq!(queue.try_take().await.unwrap(), None, "a queue that does not exist yet is empty");
        assert_eq!(queue.peek().await.unwrap(), None);
        for (data, priority) in [("a", 5), ("b", 1), ("c", -3), ("d", 1), ("e", 0), ("f", i32::MIN), ("g", i32::MAX)] {
            let name = queue.put(data.as_bytes(), priority).await.unwrap();
            assert!(name.starts_with("queue-"), "{name}");
        }
        assert_eq!(queue.len().await.unwrap(), 7);
        assert_eq!(queue.peek().await.unwrap().as_deref(), Some(&b"f"[..]));
        let found = zklock::inspect(&client, &dir).await.unwrap().unwrap();
        assert_eq!(found.recipe, Recipe::PriorityQueue { items: 7, claimed: 0 });
        assert_eq!(
            found.items_by_priority,
            vec![(i32::MIN, 1), (-3, 1), (0, 1), (1, 2), (5, 1), (i32::MAX, 1)]
        );
        // Half taken with `take`, half claimed with `take_safe`: one order.
        let mut order = Vec::new();
        for i in 0..7 {
            let data = if i % 2 == 0 {
                queue.take().await.unwrap()
            } else {
                let claimed = queue.take_safe().await.unwrap();
                let data = claimed.data().to_vec();
                assert_eq!(claimed.complete().await.unwrap(), data);
                data
            };
            order.push(String::from_utf8(data).unwrap());
        }
        assert_eq!(order, ["f", "c", "e", "b", "d", "a", "g"]);
        assert!(queue.is_empty().await.unwrap());
        assert_eq!(queue.take_timeout(Duration::from_millis(200)).await, Err(Error::Timeout));

        // A blocking take waits for the next put.
        let (listener, mut rx) = events();
        let waiting = PriorityQueue::new(queue.session().clone().with_listener(listener), queue.path()).unwrap();
        let take = tokio::spawn(async move { waiting.take_safe().await.map(|c| c.data().to_vec()) });
        until(&mut rx, "the consumer to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        let producer = crate::support::client(hosts).await;
        PriorityQueue::new(&producer, &dir).unwrap().put(b"late", 9).await.unwrap();
        assert_eq!(eventually("the blocked take", take).await.unwrap().unwrap(), b"late");
        await_children(&client, &format!("{dir}/claims"), "the dropped claim to go", |c| c.is_empty()).await;
        assert_eq!(queue.try_take().await.unwrap().as_deref(), Some(&b"late"[..]), "a dropped claim gives it back");
    }

    async fn producers_and_consumers_every_item_exactly_once_in_order(hosts: &str) {
        const PRODUCERS: usize = 3;
        const ITEMS: usize = 21;
        const CONSUMERS: usize = 3;
        let dir = unique_path("pqueue-many");
        let mut producers = Vec::new();
        for p in 0..PRODUCERS {
            let client = client(hosts).await;
            let dir = dir.clone();
            producers.push(tokio::spawn(async move {
                let queue = PriorityQueue::new(&client, &dir).unwrap();
                for i in 0..ITEMS {
                    let priority = priority_of(i);
                    queue.put(format!("p{p}/{priority}/{i}").as_bytes(), priority).await.unwrap();
                }
            }));
        }
        for producer in producers {
            eventually("the producers", producer).await.unwrap();
        }
        // One consumer alone first: strictly by priority, and each producer's items of one priority in order.
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        let mut alone = Vec::new();
        for _ in 0..PRODUCERS * ITEMS / 3 {
            alone.push(parse(&queue.try_take().await.unwrap().expect("items left")));
        }
        let mut last: BTreeMap<(usize, i32), usize> = BTreeMap::new();
        for pair in alone.windows(2) {
            assert!(pair[0].1 <= pair[1].1, "priority {} came before {}: {alone:?}", pair[0].1, pair[1].1);
        }
        for &(p, priority, i) in &alone {
            if let Some(&before) = last.get(&(p, priority)) {
                assert!(i > before, "p{p}/{priority}/{i} after p{p}/{priority}/{before}");
            }
            last.insert((p, priority), i);
        }
        // Then several safe consumers at once: the rest, each item exactly once.
        let received: Arc<StdMutex<Vec<(usize, i32, usize)>>> = Arc::new(StdMutex::new(alone.clone()));
        let mut consumers = Vec::new();
        for _ in 0..CONSUMERS {
            let client = crate::support::client(hosts).await;
            let (dir, received) = (dir.clone(), received.clone());
            consumers.push(tokio::spawn(async move {
                let queue = PriorityQueue::new(&client, &dir).unwrap();
                while let Some(claimed) = queue.try_take_safe().await.unwrap() {
                    let item = parse(claimed.data());
                    claimed.complete().await.unwrap();
                    received.lock().unwrap().push(item);
                }
            }));
        }
        for consumer in consumers {
            eventually("the consumers", consumer).await.unwrap();
        }
        let received = received.lock().unwrap().clone();
        let distinct: BTreeSet<(usize, i32, usize)> = received.iter().copied().collect();
        assert_eq!(received.len(), PRODUCERS * ITEMS, "an item was delivered twice");
        let expected: BTreeSet<_> =
            (0..PRODUCERS).flat_map(|p| (0..ITEMS).map(move |i| (p, priority_of(i), i))).collect();
        assert_eq!(distinct, expected, "every item delivered");
        // Reads after other sessions' writes sync first (here and below): on an ensemble our member may lag.
        client.sync(&dir).await.unwrap();
        assert!(queue.is_empty().await.unwrap());
    }

    async fn safe_take_survives_consumer_expiry(hosts: &str) {
        let dir = unique_path("pqueue-safe");
        let (a_client, b_client) = (client(hosts).await, client(hosts).await);
        let (a, b) = (PriorityQueue::new(&a_client, &dir).unwrap(), PriorityQueue::new(&b_client, &dir).unwrap());
        a.put(b"later", 2).await.unwrap();
        a.put(b"first", 1).await.unwrap();
        let a_item = a.take_safe().await.unwrap();
        assert_eq!(a_item.data(), b"first");
        b_client.sync(&dir).await.unwrap();
        let b_item = b.try_take_safe().await.unwrap().expect("the other item is unclaimed");
        assert_eq!(b_item.data(), b"later");
        b_item.abandon().await.unwrap();
        // A dies mid-take: its claim goes with its session and its item is the first again.
        let a_lost = a_item.lost();
        expire_session(hosts, &a_client).await;
        let reason = eventually("A's lost signal", a_lost).await;
        assert!(matches!(reason, LostReason::SessionExpired | LostReason::NodeDeleted), "{reason:?}");
        b_client.sync(&dir).await.unwrap();
        let again = eventually("the item to be available again", b.take_safe()).await.unwrap();
        assert_eq!(again.complete().await.unwrap(), b"first");
        assert_eq!(a_item.complete().await, Err(Error::SessionExpired));
        assert_eq!(b.take().await.unwrap(), b"later");
        assert!(children(&b_client, &format!("{dir}/claims")).await.is_empty(), "no claim left behind");
    }
}

on_every_server! {
    async fn lost_replies_neither_duplicate_nor_lose_items(hosts: &str) {
        let dir = unique_path("pqueue-faults");
        let (proxy, client) = proxied_client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        // Another producer's items of the same priority are there: after the lost reply our put must find its own
        // item among the items of its priority (by its receipt's creation zxid), not just any of them (the
        // server lists children in no particular order).
        let other = crate::support::client(hosts).await;
        let their_queue = PriorityQueue::new(&other, &dir).unwrap();
        let mut theirs = Vec::new();
        for i in 0..7 {
            theirs.push(their_queue.put(format!("theirs-{i}").as_bytes(), 4).await.unwrap());
        }
        queue.take_safe().await.unwrap().abandon().await.unwrap(); // make the claims directory exist

        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let ours = eventually("a put despite the lost reply", queue.put(b"ours", 4)).await.unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        assert!(!theirs.contains(&ours), "{ours} is another producer's item");
        assert!(ours.starts_with("queue-100000004"), "{ours}");
        let data = client.get_data(&format!("{dir}/{ours}")).await.unwrap().0;
        assert!(data.ends_with(b"ours\x02"), "{ours} is not our item: {data:?}");
        assert_eq!(queue.len().await.unwrap(), 8, "exactly one item of ours");
        await_children(&client, &format!("{dir}/receipts"), "the receipt to be deleted", |c| c.is_empty()).await;

        // A claim whose reply is lost is recognised as ours; a completion whose reply is lost as done.
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let claimed = eventually("a claim despite the lost reply", queue.take_safe()).await.unwrap();
        assert_eq!(proxy.lost_replies(), 2, "the fault was injected");
        assert_eq!(claimed.data(), b"theirs-0", "FIFO within the priority");
        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        assert_eq!(eventually("completion despite the lost reply", claimed.complete()).await.unwrap(), b"theirs-0");
        assert_eq!(proxy.lost_replies(), 3, "the fault was injected");
        for i in 1..7 {
            assert_eq!(queue.take().await.unwrap(), format!("theirs-{i}").as_bytes());
        }
        assert_eq!(queue.take().await.unwrap(), b"ours");
        assert!(queue.is_empty().await.unwrap());
        assert!(children(&client, &format!("{dir}/claims")).await.is_empty());
    }

    async fn lost_put_reply_after_the_item_was_taken_is_not_put_again(hosts: &str) {
        let dir = unique_path("pqueue-lost-put-taken");
        let (proxy, slow) = slow_proxied_session(hosts, 3).await;
        // The producer looks again only after about 3 s: the window in which the consumer takes the item.
        let producer = PriorityQueue::new(slow, &dir).unwrap();
        let consumer_client = client(hosts).await;
        let consumer = PriorityQueue::new(&consumer_client, &dir).unwrap();
        producer.put(b"setup", 0).await.unwrap();
        assert_eq!(consumer.take().await.unwrap(), b"setup");

        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let put = tokio::spawn(async move { producer.put(b"once", -7).await });
        assert_eq!(eventually("the consumer to take the item", consumer.take()).await.unwrap(), b"once");
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        let name = eventually("the put to settle", put).await.unwrap().unwrap();
        // The prefix of an item taken before we looked; on a machine so loaded that the consumer took longer than
        // the producer's pause, the producer saw its item first and returns its whole name.
        assert!(name.starts_with("queue-0FFFFFFF9"), "{name}");
        // Caught up with the producer's member first: a lagging one could hide a second copy.
        consumer_client.sync(&dir).await.unwrap();
        assert_eq!(consumer.len().await.unwrap(), 0, "the item was enqueued a second time");
        await_children(&consumer_client, &format!("{dir}/receipts"), "the receipt to be deleted", |c| c.is_empty())
            .await;
    }

    async fn cancelled_safe_take_puts_the_item_back(hosts: &str) {
        let dir = unique_path("pqueue-cancel");
        let claims = format!("{dir}/claims");
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        queue.put(b"second", 2).await.unwrap();
        queue.put(b"first", 1).await.unwrap();
        cancel_safe_takes(&client, &claims, || queue.take_safe(), || queue.len(), 2).await;
        let item = queue.try_take_safe().await.unwrap().expect("unclaimed");
        assert_eq!(item.complete().await.unwrap(), b"first", "still first");
    }
}

/// The items of the interop tests: (text, priority); in priority order they are c, e, b, d, a.
const ITEMS: [(&str, i32); 5] = [("a", 5), ("b", 1), ("c", -3), ("d", 1), ("e", 0)];
const ORDER: [&str; 5] = ["c", "e", "b", "d", "a"];

on_standalone_and_embedded! {
    async fn curator_producer_zklock_consumer(hosts: &str) {
        let dir = unique_path("interop-pqueue-to-zklock");
        let mut curator = Peer::curator(&["recipes", hosts]).await;
        curator.expect("READY").await;
        for (text, priority) in ITEMS {
            curator.send(&format!("pq-put {dir} {priority} {text}")).await;
            curator.expect("PUT").await;
        }
        curator.finish().await;
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        let found = zklock::inspect(&client, &dir).await.unwrap().unwrap();
        assert_eq!(found.recipe, Recipe::PriorityQueue { items: 5, claimed: 0 });
        assert_eq!(found.items_by_priority, vec![(-3, 1), (0, 1), (1, 2), (5, 1)]);
        let mut taken = Vec::new();
        for _ in ITEMS {
            let claimed = queue.take_safe().await.unwrap();
            taken.push(String::from_utf8(claimed.complete().await.unwrap()).unwrap());
        }
        assert_eq!(taken, ORDER);
        assert!(queue.is_empty().await.unwrap());
    }

    async fn zklock_producer_curator_consumer(hosts: &str) {
        let dir = unique_path("interop-pqueue-to-curator");
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        for (text, priority) in ITEMS {
            queue.put(text.as_bytes(), priority).await.unwrap();
        }
        // Curator's consumer, with our claims directory as its lock path, takes everything.
        let mut curator = curator_consuming_all(hosts, &client, &dir, &format!("pq-consume {dir} {dir}/claims")).await;
        curator.send(&format!("pq-stop {dir}")).await;
        assert_eq!(curator.expect("CONSUMED").await, ORDER.join(","));
        curator.finish().await;
        assert!(queue.is_empty().await.unwrap());
    }

    async fn curator_consumers_and_ours_share_the_claims(hosts: &str) {
        // A Curator consumer with `lockPath(<queue>/claims)` and our take_safe consumers on one queue at once:
        // every item exactly once.
        const ITEMS: usize = 60;
        let dir = unique_path("interop-pqueue-shared");
        let client = client(hosts).await;
        let queue = PriorityQueue::new(&client, &dir).unwrap();
        for i in 0..ITEMS {
            queue.put(format!("item-{i}").as_bytes(), (i % 4) as i32).await.unwrap();
        }
        let mut curator = Peer::curator(&["recipes", hosts]).await;
        curator.expect("READY").await;
        curator.send(&format!("pq-consume {dir} {dir}/claims")).await;
        curator.expect("CONSUMING").await;
        let ours: Arc<StdMutex<Vec<String>>> = Arc::default();
        let mut consumers = Vec::new();
        for _ in 0..2 {
            let client = crate::support::client(hosts).await;
            let (dir, ours) = (dir.clone(), ours.clone());
            consumers.push(tokio::spawn(async move {
                let queue = PriorityQueue::new(&client, &dir).unwrap();
                while let Some(claimed) = queue.try_take_safe().await.unwrap() {
                    let text = String::from_utf8(claimed.data().to_vec()).unwrap();
                    claimed.complete().await.unwrap();
                    ours.lock().unwrap().push(text);
                }
            }));
        }
        for consumer in consumers {
            eventually("our consumers", consumer).await.unwrap();
        }
        await_children(&client, &dir, "the queue to be drained", |c| !c.iter().any(|name| name.starts_with("queue-")))
            .await;
        curator.send(&format!("pq-stop {dir}")).await;
        let theirs = curator.expect("CONSUMED").await;
        curator.finish().await;
        let mut all = ours.lock().unwrap().clone();
        all.extend(theirs.split(',').filter(|item| *item != "-").map(str::to_owned));
        let distinct: BTreeSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), ITEMS, "an item was lost: {all:?}");
        assert_eq!(all.len(), ITEMS, "an item was consumed twice: {all:?}");
    }
}
