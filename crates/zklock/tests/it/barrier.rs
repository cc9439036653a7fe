//! The barrier: released only by the removal of its node, never by other notifications.

use std::time::Duration;

use tokio::sync::mpsc;
use zklock::{Barrier, Error, Listener, QueueEvent, Session};
use zklock_testkit::{expire_session, unique_path};

use crate::on_every_server;
use crate::support::*;

/// A listener that forwards every event to a channel.
pub fn events() -> (Listener, mpsc::UnboundedReceiver<QueueEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Listener::new(move |event| drop(tx.send(event.clone()))), rx)
}

/// Consumes events until `pick` accepts one; panics after [`EVENTUALLY`].
pub async fn until(
    rx: &mut mpsc::UnboundedReceiver<QueueEvent>,
    what: &str,
    pick: impl Fn(&QueueEvent) -> bool,
) {
    eventually(what, async {
        loop {
            let event = rx.recv().await.expect("listener channel closed");
            if pick(&event) {
                return;
            }
        }
    })
    .await
}

on_every_server! {
    async fn wait_released_only_by_remove(hosts: &str) {
        const WAITERS: usize = 3;
        let path = format!("{}/gate", unique_path("barrier"));
        let admin = client(hosts).await;
        let barrier = Barrier::new(&admin, &path).unwrap();
        // Not set: wait returns at once.
        assert!(!barrier.is_set().await.unwrap());
        eventually("wait on an open barrier", barrier.wait()).await.unwrap();
        barrier.remove().await.expect("removing an open barrier is fine");
        barrier.set().await.unwrap();
        barrier.set().await.expect("setting twice is fine");
        assert!(barrier.is_set().await.unwrap());

        let mut waiters = Vec::new();
        for _ in 0..WAITERS {
            let client = client(hosts).await;
            let (listener, mut rx) = events();
            let waiter = Barrier::new(Session::new(&client).with_listener(listener), &path).unwrap();
            let task = tokio::spawn(async move { waiter.wait().await });
            until(&mut rx, "the waiter to watch", |e| matches!(e, QueueEvent::Waiting { .. })).await;
            waiters.push((task, rx));
        }
        // Data changes of the barrier node wake every waiter; each looks again and keeps waiting.
        for round in 0..3u8 {
            admin.set_data(&path, &[round], None).await.unwrap();
            for (_, rx) in waiters.iter_mut() {
                until(rx, "the waiter to wake", |e| matches!(e, QueueEvent::Woken { .. })).await;
                until(rx, "the waiter to watch again", |e| matches!(e, QueueEvent::Waiting { .. })).await;
            }
            assert!(waiters.iter().all(|(task, _)| !task.is_finished()), "released by a data change");
        }
        barrier.remove().await.unwrap();
        for (task, _) in waiters {
            eventually("the waiters to be released", task).await.unwrap().unwrap();
        }
        assert!(!barrier.is_set().await.unwrap());
    }

    async fn wait_timeout_and_session_expiry(hosts: &str) {
        let path = unique_path("barrier-timeout");
        let (admin, waiter_client) = (client(hosts).await, client(hosts).await);
        let barrier = Barrier::new(&admin, &path).unwrap();
        barrier.set().await.unwrap();
        let waiter = Barrier::new(&waiter_client, &path).unwrap();
        // On an ensemble the waiter's member may not have applied the admin's set yet: it would find no barrier.
        waiter_client.sync(&path).await.unwrap();
        assert_eq!(waiter.wait_timeout(Duration::from_millis(200)).await, Err(Error::Timeout));

        let (listener, mut rx) = events();
        let waiter = Barrier::new(waiter.session().clone().with_listener(listener), waiter.path()).unwrap();
        let task = tokio::spawn(async move { waiter.wait().await });
        until(&mut rx, "the waiter to watch", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        expire_session(hosts, &waiter_client).await;
        let result = eventually("the waiter to notice the expiry", task).await.unwrap();
        assert_eq!(result, Err(Error::SessionExpired));
        assert!(barrier.is_set().await.unwrap(), "the barrier is still set");
        barrier.remove().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_barrier_paths_are_rejected() {
    let client = client(&standalone().await).await;
    assert!(matches!(
        Barrier::new(&client, "/"),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        Barrier::new(&client, "relative"),
        Err(Error::InvalidPath { .. })
    ));
}
