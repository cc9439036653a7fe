//! The double barrier: nobody enters before N arrived, nobody leaves before all left, no node left behind.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zklock::{DoubleBarrier, Error, Participation, QueueEvent};
use zklock_testkit::{expire_session, unique_path};

use crate::barrier::{events, until};
use crate::on_every_server;
use crate::support::*;

/// The participant nodes among the children (everything but `ready`).
fn participants(children: &[String]) -> Vec<String> {
    children.iter().filter(|c| *c != "ready").cloned().collect()
}

fn name_of(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_string()
}

/// One participant running in its own task with its own session: enters, reports its node, leaves on command.
struct Member {
    events: mpsc::UnboundedReceiver<QueueEvent>,
    entered: oneshot::Receiver<String>,
    leave: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<zklock::Result<()>>,
}

async fn member(hosts: &str, dir: &str, members: usize) -> Member {
    let client = client(hosts).await;
    let (listener, events) = events();
    let barrier = DoubleBarrier::new(&client, dir, members).unwrap().with_listener(listener);
    let (entered_tx, entered) = oneshot::channel();
    let (leave, leave_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let participation = barrier.enter().await?;
        entered_tx.send(participation.path()).unwrap();
        leave_rx.await.unwrap();
        participation.leave().await
    });
    Member { events, entered, leave: Some(leave), task }
}

on_every_server! {
    async fn five_enter_together_and_leave_together(hosts: &str) {
        const N: usize = 5;
        let dir = unique_path("double-barrier");
        let admin = client(hosts).await;
        let mut members = Vec::new();
        for _ in 0..N - 1 {
            let mut m = member(hosts, &dir, N).await;
            until(&mut m.events, "the participant to wait for the others", |e| matches!(e, QueueEvent::Waiting { .. })).await;
            members.push(m);
        }
        assert_eq!(participants(&children(&admin, &dir).await).len(), N - 1);
        for m in members.iter_mut() {
            assert!(m.entered.try_recv().is_err(), "entered before the 5th arrived");
        }
        members.push(member(hosts, &dir, N).await);
        let mut paths = Vec::new();
        for m in members.iter_mut() {
            paths.push(eventually("every participant to enter", &mut m.entered).await.unwrap());
        }
        let names: Vec<String> = paths.iter().map(|p| name_of(p)).collect();
        let lowest = names.iter().min().unwrap().clone();

        // All but one leave; the holdout is the participant that entered third (lowest or not, at random).
        let holdout = 2;
        for (i, m) in members.iter_mut().enumerate() {
            if i != holdout {
                m.leave.take().unwrap().send(()).unwrap();
            }
        }
        // Settled: the leavers' nodes are gone except the lowest's (the lowest stays until it is alone).
        let mut expected: Vec<String> = vec![names[holdout].clone()];
        if lowest != names[holdout] {
            expected.push(lowest.clone());
        }
        expected.sort();
        await_children(&admin, &dir, "the leavers to settle", |c| participants(c) == expected).await;
        // The lowest waits for the highest remaining (the holdout); everybody else waits for the lowest.
        let target_of = |name: &String| {
            if *name == lowest { paths[holdout].clone() } else { format!("{dir}/{lowest}") }
        };
        for (i, m) in members.iter_mut().enumerate() {
            if i == holdout {
                continue;
            }
            let target = target_of(&names[i]);
            until(&mut m.events, "the leaver to wait", |e| matches!(e, QueueEvent::Waiting { on } if *on == target)).await;
        }
        // Spurious wake-ups: data changes of the watched nodes wake the leavers, who look again and keep waiting.
        for node in &expected {
            admin.set_data(&format!("{dir}/{node}"), b"poke", None).await.unwrap();
        }
        for (i, m) in members.iter_mut().enumerate() {
            if i == holdout {
                continue;
            }
            let target = target_of(&names[i]);
            until(&mut m.events, "the leaver to wake", |e| matches!(e, QueueEvent::Woken { by } if *by == target)).await;
            until(&mut m.events, "the leaver to wait again", |e| matches!(e, QueueEvent::Waiting { on } if *on == target)).await;
        }
        assert!(members.iter().all(|m| !m.task.is_finished()), "somebody left before everybody did");

        members[holdout].leave.take().unwrap().send(()).unwrap();
        for m in members {
            eventually("everybody to leave", m.task).await.unwrap().unwrap();
        }
        assert_eq!(children(&admin, &dir).await, Vec::<String>::new(), "no participant and no ready node left");
    }

    async fn cancelled_enter_and_leave_leave_no_nodes(hosts: &str) {
        let dir = unique_path("double-barrier-cancel");
        let client = client(hosts).await;
        let none_left = |c: &[String]| participants(c).is_empty();
        let barrier = DoubleBarrier::new(&client, &dir, 3).unwrap();

        // Dropped before the first poll: nothing was sent.
        drop(barrier.enter());
        assert!(none_left(&children(&client, &dir).await));

        // Dropped after one poll: the create is in flight.
        {
            let mut enter = Box::pin(barrier.enter());
            assert!(futures::poll!(&mut enter).is_pending());
        }
        await_children(&client, &dir, "the cancelled create to be undone", none_left).await;

        // Dropped while waiting for the others.
        let (listener, mut rx) = events();
        let watched = barrier.clone().with_listener(listener);
        let mut enter = Box::pin(watched.enter());
        tokio::select! {
            _ = &mut enter => panic!("entered alone"),
            _ = until(&mut rx, "the participant to wait", |e| matches!(e, QueueEvent::Waiting { .. })) => {}
        }
        assert_eq!(participants(&children(&client, &dir).await).len(), 1);
        drop(enter);
        await_children(&client, &dir, "the cancelled enter to be undone", none_left).await;

        // Timed out.
        let err = barrier.enter_timeout(Duration::from_millis(200)).await.unwrap_err();
        assert_eq!(err, Error::Timeout);
        await_children(&client, &dir, "the timed-out enter to be undone", none_left).await;

        // A dropped leave removes our node without waiting, and counts as having left.
        let other = crate::support::client(hosts).await;
        let pair = DoubleBarrier::new(&client, &dir, 2).unwrap();
        let pair_other = DoubleBarrier::new(&other, &dir, 2).unwrap();
        let (a, b): (Participation, Participation) =
            eventually("two participants to enter", async { tokio::try_join!(pair.enter(), pair_other.enter()) })
                .await
                .unwrap();
        let a_name = name_of(&a.path());
        {
            let mut leave = Box::pin(a.leave());
            assert!(futures::poll!(&mut leave).is_pending());
        }
        await_children(&client, &dir, "the cancelled leave to remove our node", |c| !c.contains(&a_name)).await;
        eventually("the other to leave alone", b.leave()).await.unwrap();
        await_children(&client, &dir, "an empty barrier", |c| c.is_empty()).await;
    }

    async fn expired_participant_is_not_counted(hosts: &str) {
        let dir = unique_path("double-barrier-expiry");
        let observer = client(hosts).await;
        // A arrives and waits; its session expires: its enter fails and it no longer counts.
        let mut a = member(hosts, &dir, 2).await;
        until(&mut a.events, "A to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        let a_client = client(hosts).await;
        // The member's own client is inside its task; expire a session that *is* a participant instead: enter
        // with a client we keep.
        let a_barrier = DoubleBarrier::new(&a_client, &dir, 3).unwrap();
        let (listener, mut rx) = events();
        let a_barrier = a_barrier.with_listener(listener);
        let a_enter = tokio::spawn(async move { a_barrier.enter().await.map(drop) });
        until(&mut rx, "the expiring participant to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        assert_eq!(participants(&children(&observer, &dir).await).len(), 2);
        expire_session(hosts, &a_client).await;
        let err = eventually("the expired participant to fail", a_enter).await.unwrap().unwrap_err();
        assert_eq!(err, Error::SessionExpired);
        await_children(&observer, &dir, "the expired node to go", |c| participants(c).len() == 1).await;
        assert!(a.entered.try_recv().is_err(), "entered with a participant that is gone");
        // B arrives: 2 live participants, the first member (which expects 2) and B → both enter.
        let mut b = member(hosts, &dir, 2).await;
        eventually("A to enter", &mut a.entered).await.unwrap();
        eventually("B to enter", &mut b.entered).await.unwrap();
        for m in [&mut a, &mut b] {
            m.leave.take().unwrap().send(()).unwrap();
        }
        eventually("A to leave", a.task).await.unwrap().unwrap();
        eventually("B to leave", b.task).await.unwrap().unwrap();
        await_children(&observer, &dir, "an empty barrier", |c| c.is_empty()).await;
    }
}
