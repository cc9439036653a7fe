//! The delay queue: items come out in due order, never before their own due time, each exactly once among
//! consumers — and Curator's `DistributedDelayQueue` in both directions.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zklock::{DelayQueue, Delayed, Error};
use zklock_testkit::peers::Peer;
use zklock_testkit::{expire_session, unique_path};

use crate::on_every_server;
use crate::on_standalone_and_embedded;
use crate::support::*;

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Due times `offsets` ms from now, to the millisecond (what a node name holds).
fn dues(offsets: &[u64]) -> Vec<u64> {
    let now = millis(SystemTime::now());
    offsets.iter().map(|offset| now + offset).collect()
}

/// An item's text: `<label>-<due ms>`.
fn text(label: usize, due: u64) -> String {
    format!("i{label}-{due}")
}

fn due_in(text: &str) -> u64 {
    text.rsplit('-').next().unwrap().parse().unwrap()
}

/// Checks what was taken, `(text, due, taken at)` per item and consumer, against the texts put: every item exactly
/// once, with the due time its text names, and none taken before it was due.
fn check_taken(put: &[String], taken: &[Vec<(String, u64, u64)>]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for (text, due, at) in taken.iter().flatten() {
        if !seen.insert(text.clone()) {
            return Err(format!("{text} was taken twice"));
        }
        if *due != due_in(text) {
            return Err(format!("{text} came out due at {due}"));
        }
        if at < due {
            return Err(format!(
                "{text} was taken at {at}, {} ms before it was due",
                due - at
            ));
        }
    }
    let put: BTreeSet<String> = put.iter().cloned().collect();
    if seen != put {
        return Err(format!("taken {seen:?}, put {put:?}"));
    }
    Ok(())
}

/// The items in `dir` (not the `receipts` and `claims` directories beside them).
async fn items(client: &zklock::zookeeper_client::Client, dir: &str) -> Vec<String> {
    children(client, dir)
        .await
        .into_iter()
        .filter(|name| name.starts_with("queue-"))
        .collect()
}

/// What a take returned, and when (by the same clock as the due time).
fn record(item: Delayed) -> (String, u64, u64) {
    let at = millis(SystemTime::now());
    (String::from_utf8(item.data).unwrap(), millis(item.due), at)
}

#[test]
fn the_checker_catches_duplicates_early_takes_and_losses() {
    let put = vec![text(0, 100), text(1, 200)];
    let good = vec![vec![(text(0, 100), 100, 100)], vec![(text(1, 200), 200, 250)]];
    assert_eq!(check_taken(&put, &good), Ok(()));
    let twice = vec![
        vec![(text(0, 100), 100, 100)],
        vec![(text(0, 100), 100, 120), (text(1, 200), 200, 250)],
    ];
    assert!(check_taken(&put, &twice).unwrap_err().contains("twice"));
    let early = vec![vec![(text(0, 100), 100, 99), (text(1, 200), 200, 250)]];
    assert!(check_taken(&put, &early)
        .unwrap_err()
        .contains("before it was due"));
    let lost = vec![vec![(text(0, 100), 100, 100)]];
    assert!(check_taken(&put, &lost).unwrap_err().contains("put"));
}

on_every_server! {
    async fn items_come_out_in_due_order_never_early(hosts: &str) {
        let dir = unique_path("delay-order");
        let client = client(hosts).await;
        let queue = DelayQueue::new(&client, &dir).unwrap();
        // Put in an order unlike their due order; one is due already.
        let dues = dues(&[1500, 300, 600, 0, 450]);
        let put: Vec<String> = dues.iter().enumerate().map(|(i, due)| text(i, *due)).collect();
        for (item, due) in put.iter().zip(&dues) {
            queue.put(item.as_bytes(), UNIX_EPOCH + Duration::from_millis(*due)).await.unwrap();
        }
        // Negative control: the latest item is in the queue, not due yet, and a consumer that finds only it waits.
        assert_eq!(items(&client, &dir).await.len(), 5);
        let mut taken = Vec::new();
        for _ in 0..4 {
            taken.push(record(queue.take().await.unwrap()));
        }
        let last_due = *dues.iter().max().unwrap();
        assert!(millis(SystemTime::now()) + 200 < last_due, "the test was too slow to see a wait");
        assert!(matches!(queue.take_timeout(Duration::from_millis(100)).await, Err(Error::Timeout)));
        assert_eq!(items(&client, &dir).await.len(), 1, "a timed-out take takes nothing");
        taken.push(record(queue.take().await.unwrap()));
        check_taken(&put, std::slice::from_ref(&taken)).unwrap();
        let mut sorted = dues.clone();
        sorted.sort_unstable();
        assert_eq!(taken.iter().map(|(_, due, _)| *due).collect::<Vec<_>>(), sorted);
        assert!(items(&client, &dir).await.is_empty());
    }

    async fn take_safe_gives_an_item_back_when_its_consumer_dies(hosts: &str) {
        // `take` deletes the item before handing it out: a consumer that dies then loses it (so does Curator's delay
        // queue without a lock path). `take_safe` removes it only at `complete`.
        let dir = unique_path("delay-safe");
        let producer = DelayQueue::new(&client(hosts).await, &dir).unwrap();
        producer.put(b"later", SystemTime::now() + Duration::from_secs(3600)).await.unwrap();
        assert_eq!(producer.peek().await.unwrap(), None, "nothing is due yet");
        assert!(producer.try_take().await.unwrap().is_none());
        assert!(producer.try_take_safe().await.unwrap().is_none());
        producer.put(b"soon", SystemTime::now()).await.unwrap();
        assert_eq!(producer.len().await.unwrap(), 2, "due or not");
        let dying = client(hosts).await;
        let claimed = DelayQueue::new(&dying, &dir).unwrap().take_safe().await.unwrap();
        assert_eq!(claimed.data(), b"soon");
        assert_eq!(producer.peek().await.unwrap().as_deref(), Some(&b"soon"[..]), "claimed, still in the queue");
        assert!(producer.try_take_safe().await.unwrap().is_none(), "claimed by another consumer");
        expire_session(hosts, &dying).await;
        assert_expired(eventually("the claim's loss", claimed.lost()).await);
        let again = eventually("the item back", producer.take_safe()).await.unwrap();
        assert_eq!(again.data(), b"soon");
        again.complete().await.unwrap();
        assert_eq!(producer.len().await.unwrap(), 1);
        assert!(producer.try_take_safe().await.unwrap().is_none(), "the other is not due");
    }

    async fn two_consumers_take_every_item_exactly_once(hosts: &str) {
        const ITEMS: u64 = 20;
        let dir = unique_path("delay-two");
        let producer = DelayQueue::new(&client(hosts).await, &dir).unwrap();
        let dues = dues(&(0..ITEMS).map(|i| (i * 37) % 400).collect::<Vec<_>>());
        let put: Vec<String> = dues.iter().enumerate().map(|(i, due)| text(i, *due)).collect();
        for (item, due) in put.iter().zip(&dues) {
            producer.put(item.as_bytes(), UNIX_EPOCH + Duration::from_millis(*due)).await.unwrap();
        }
        let mut consumers = Vec::new();
        for _ in 0..2 {
            let queue = DelayQueue::new(&client(hosts).await, &dir).unwrap();
            consumers.push(tokio::spawn(async move {
                let mut taken = Vec::new();
                // Until the queue has been empty for a while (bounded: 20 items due within 400 ms).
                while let Ok(item) = queue.take_timeout(Duration::from_millis(1500)).await {
                    taken.push(record(item));
                }
                taken
            }));
        }
        let mut taken = Vec::new();
        for consumer in consumers {
            taken.push(eventually("the consumers to finish", consumer).await.unwrap());
        }
        check_taken(&put, &taken).unwrap();
    }
}

on_standalone_and_embedded! {
    async fn curator_producer_zklock_consumer(hosts: &str) {
        let dir = unique_path("interop-delay-to-zklock");
        let dues = dues(&[900, 300, 600]);
        let put: Vec<String> = dues.iter().enumerate().map(|(i, due)| text(i, *due)).collect();
        let mut curator = Peer::curator(&["recipes", hosts]).await;
        curator.expect("READY").await;
        for (item, due) in put.iter().zip(&dues) {
            curator.send(&format!("dq-put {dir} {due} {item}")).await;
            curator.expect("PUT").await;
        }
        curator.finish().await;
        let client = client(hosts).await;
        for name in items(&client, &dir).await {
            assert!(name.starts_with("queue-|") && name.matches('|').count() == 2, "{name}");
        }
        let queue = DelayQueue::new(&client, &dir).unwrap();
        let mut taken = Vec::new();
        for _ in &put {
            taken.push(record(queue.take().await.unwrap()));
        }
        check_taken(&put, std::slice::from_ref(&taken)).unwrap();
        assert_eq!(taken.iter().map(|(text, ..)| text.as_str()).collect::<Vec<_>>(), [&put[1], &put[2], &put[0]]);
    }

    async fn zklock_producer_curator_consumer(hosts: &str) {
        let dir = unique_path("interop-delay-to-curator");
        let client = client(hosts).await;
        let queue = DelayQueue::new(&client, &dir).unwrap();
        let dues = dues(&[900, 300, 600]);
        let put: Vec<String> = dues.iter().enumerate().map(|(i, due)| text(i, *due)).collect();
        for (item, due) in put.iter().zip(&dues) {
            queue.put(item.as_bytes(), UNIX_EPOCH + Duration::from_millis(*due)).await.unwrap();
        }
        let mut curator = curator_consuming_all(hosts, &client, &dir, &format!("dq-consume {dir}")).await;
        // Curator hands an item over after deleting it: the stop waits for the hand-overs.
        curator.send(&format!("dq-stop {dir} {}", put.len())).await;
        let consumed = curator.expect("CONSUMED").await;
        curator.finish().await;
        let taken: Vec<(String, u64, u64)> = consumed
            .split(',')
            .map(|entry| {
                let (text, at) = entry.split_once('@').unwrap();
                (text.to_owned(), due_in(text), at.parse().unwrap())
            })
            .collect();
        check_taken(&put, std::slice::from_ref(&taken)).unwrap();
        assert_eq!(taken.iter().map(|(text, ..)| text.as_str()).collect::<Vec<_>>(), [&put[1], &put[2], &put[0]]);
    }
}
