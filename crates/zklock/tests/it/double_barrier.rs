//! The double barrier: nobody enters before N arrived, nobody leaves before all left, no node left behind.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use zklock::zookeeper_client::Client;
use zklock::{DoubleBarrier, Error, LostReason, Participation, QueueEvent, Session};
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

/// A second participant, on `other`, enters the barrier of 2 at `dir` with ours (`mine`, waiting in a task); both
/// leave, and the barrier is left empty.
async fn open_with_another_and_leave(
    other: &Client,
    dir: &str,
    mine: JoinHandle<zklock::Result<Participation>>,
) {
    let theirs = DoubleBarrier::new(other, dir, 2).unwrap();
    let theirs = eventually("the other to enter", theirs.enter()).await.unwrap();
    let mine = eventually("ours to enter", mine).await.unwrap().unwrap();
    eventually("both to leave", async {
        tokio::try_join!(mine.leave(), theirs.leave())
    })
    .await
    .unwrap();
    await_children(other, dir, "an empty barrier", |c| c.is_empty()).await;
}

/// Ours enters the barrier of 2 at `dir` again (`again`, whose listener sends to `rx`) while an older node of ours
/// (`older`, to name it) is still there: it must wait, counted once, until a second participant (on `observer`)
/// comes.
async fn enter_again_counted_once(
    again: DoubleBarrier,
    rx: &mut mpsc::UnboundedReceiver<QueueEvent>,
    observer: &Client,
    dir: &str,
    older: &str,
) {
    let mut second = tokio::spawn(async move { again.enter().await });
    tokio::select! {
        entered = &mut second => {
            panic!("entered with one participant: {older} counted (ok: {})", matches!(entered, Ok(Ok(_))))
        }
        _ = until(rx, "the participant to wait again", |e| matches!(e, QueueEvent::Waiting { .. })) => {}
    }
    assert_eq!(
        participants(&children(observer, dir).await).len(),
        1,
        "only the new node counts"
    );
    open_with_another_and_leave(observer, dir, second).await;
}

async fn member(hosts: &str, dir: &str, members: usize) -> Member {
    let client = client(hosts).await;
    let (listener, events) = events();
    let barrier = DoubleBarrier::new(Session::new(&client).with_listener(listener), dir, members).unwrap();
    let (entered_tx, entered) = oneshot::channel();
    let (leave, leave_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let participation = barrier.enter().await?;
        entered_tx.send(participation.path().to_owned()).unwrap();
        leave_rx.await.unwrap();
        participation.leave().await
    });
    Member {
        events,
        entered,
        leave: Some(leave),
        task,
    }
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
        await_children(&admin, &dir, "the leavers to settle", |c| {
            let mut now = participants(c);
            now.sort();
            now == expected
        })
        .await;
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
        let watched = DoubleBarrier::new(barrier.session().clone().with_listener(listener), barrier.path(), barrier.members()).unwrap();
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
        let a_name = name_of(a.path());
        {
            let mut leave = Box::pin(a.leave());
            assert!(futures::poll!(&mut leave).is_pending());
        }
        await_children(&client, &dir, "the cancelled leave to remove our node", |c| !c.contains(&a_name)).await;
        eventually("the other to leave alone", b.leave()).await.unwrap();
        await_children(&client, &dir, "an empty barrier", |c| c.is_empty()).await;
    }

    async fn expired_participant_is_not_counted(hosts: &str) {
        const N: usize = 3;
        let dir = unique_path("double-barrier-expiry");
        let observer = client(hosts).await;
        let mut a = member(hosts, &dir, N).await;
        until(&mut a.events, "A to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        // X arrives second and its session expires while it waits: its enter fails and it no longer counts.
        let x_client = client(hosts).await;
        let (listener, mut x_events) = events();
        let x = DoubleBarrier::new(Session::new(&x_client).with_listener(listener), &dir, N).unwrap();
        let x_enter = tokio::spawn(async move { x.enter().await.map(drop) });
        until(&mut x_events, "X to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        expire_session(hosts, &x_client).await;
        let err = eventually("X to fail", x_enter).await.unwrap().unwrap_err();
        assert_eq!(err, Error::SessionExpired);
        await_children(&observer, &dir, "X's node to go", |c| participants(c).len() == 1).await;
        // B arrives third: only two live participants, so nobody enters.
        let mut b = member(hosts, &dir, N).await;
        until(&mut b.events, "B to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        assert!(a.entered.try_recv().is_err() && b.entered.try_recv().is_err(), "entered with only 2 of 3 alive");
        // C makes three.
        let mut c = member(hosts, &dir, N).await;
        for m in [&mut a, &mut b, &mut c] {
            eventually("everybody to enter", &mut m.entered).await.unwrap();
        }
        for m in [&mut a, &mut b, &mut c] {
            m.leave.take().unwrap().send(()).unwrap();
        }
        for m in [a, b, c] {
            eventually("everybody to leave", m.task).await.unwrap().unwrap();
        }
        await_children(&observer, &dir, "an empty barrier", |c| c.is_empty()).await;
    }
}

on_every_server! {
    async fn participant_expiring_after_enter_counts_as_left(hosts: &str) {
        let dir = unique_path("double-barrier-late-expiry");
        let (a_client, b_client) = (client(hosts).await, client(hosts).await);
        let (a, b) = (DoubleBarrier::new(&a_client, &dir, 2).unwrap(), DoubleBarrier::new(&b_client, &dir, 2).unwrap());
        let (a, b) = eventually("both to enter", async { tokio::try_join!(a.enter(), b.enter()) }).await.unwrap();
        let lost = a.lost();
        expire_session(hosts, &a_client).await;
        let reason = eventually("A's lost signal", lost).await;
        // The deletion of A's node may reach A before the news of its session's end.
        assert!(matches!(reason, LostReason::SessionExpired | LostReason::NodeDeleted), "{reason:?}");
        eventually("B to leave without A", b.leave()).await.unwrap();
        assert_eq!(a.leave().await, Err(Error::SessionExpired));
        let observer = client(hosts).await;
        await_children(&observer, &dir, "an empty barrier", |c| c.is_empty()).await;
    }

    async fn lost_create_reply_leaves_one_participant_node(hosts: &str) {
        let dir = unique_path("double-barrier-lost-reply");
        let (proxy, client) = proxied_client(hosts).await;
        client.create(&dir, b"", &PERSISTENT).await.unwrap();
        let other = crate::support::client(hosts).await;
        let barrier = DoubleBarrier::new(&client, &dir, 2).unwrap();
        proxy.drop_reply_and_cut(zklock_testkit::opcode::ALL_CREATES);
        let (listener, mut rx) = events();
        let barrier = DoubleBarrier::new(barrier.session().clone().with_listener(listener), barrier.path(), barrier.members()).unwrap();
        let mine = tokio::spawn(async move { barrier.enter().await });
        until(&mut rx, "the participant to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        assert_eq!(participants(&children(&other, &dir).await).len(), 1, "exactly one node of ours");
        open_with_another_and_leave(&other, &dir, mine).await;
    }
}

on_every_server! {
    async fn abandoned_enter_does_not_count_when_the_participant_enters_again(hosts: &str) {
        // Finding 6 of docs/reliability.md: an `enter` abandoned while its deletes are lost leaves its node behind for a
        // while; the same participant entering again must not be counted twice (here: open a barrier of 2 alone).
        let dir = unique_path("double-barrier-reenter");
        let (proxy, client) = proxied_client(hosts).await;
        // The abandoned node's delete, lost twice, is tried again only after about 3 s: the window in which the
        // participant enters again.
        let slow = slow_retry(3);
        let (listener, mut rx) = events();
        let barrier = DoubleBarrier::new(Session::new(&client).with_retry(slow).with_listener(listener), &dir, 2).unwrap();
        let observer = crate::support::client(hosts).await;

        let mut first = Box::pin(barrier.enter());
        tokio::select! {
            _ = &mut first => panic!("entered alone"),
            _ = until(&mut rx, "the participant to wait", |e| matches!(e, QueueEvent::Waiting { .. })) => {}
        }
        proxy.drop_requests_and_cut(&[zklock_testkit::opcode::DELETE], 2);
        drop(first);
        eventually("the delete and its retry to be lost", async {
            while proxy.lost_requests() < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert_eq!(participants(&children(&observer, &dir).await).len(), 1, "the abandoned node is still there");

        enter_again_counted_once(barrier.clone(), &mut rx, &observer, &dir, "the abandoned node").await;
    }
}

on_every_server! {
    async fn node_of_a_session_our_client_gave_up_does_not_count_twice(hosts: &str) {
        // Finding 8 of docs/reliability.md: our client gives up its session (it cannot reconnect within the
        // session timeout) while the server keeps it — here another connection keeps it alive, as a server restart
        // does by restarting its session timers. The old node still counts; the same process entering again on a
        // new session must not be counted twice.
        let dir = unique_path("double-barrier-orphan");
        let server = first_server(hosts);
        let proxy = zklock_testkit::Proxy::start(server).await.unwrap();
        let old = client_with_timeout(&proxy.connect_string(), Duration::from_secs(4)).await;
        let (listener, mut rx) = events();
        let barrier = DoubleBarrier::new(Session::new(&old).with_listener(listener), &dir, 2).unwrap();
        let first = tokio::spawn(async move { barrier.enter().await.map(drop) });
        until(&mut rx, "the participant to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;

        proxy.set_blackhole(true);
        let keeper = zklock::zookeeper_client::Client::connector()
            .with_session(old.session().clone())
            .with_session_timeout(Duration::from_secs(4))
            .connect(&server.to_string())
            .await
            .expect("keep the session alive on another connection");
        await_expired(&old).await;
        let err = eventually("the first enter to fail", first).await.unwrap().unwrap_err();
        assert!(err.is_terminal(), "{err:?}");
        let observer = crate::support::client(hosts).await;
        assert_eq!(participants(&children(&observer, &dir).await).len(), 1, "the old session's node is still there");

        let new = crate::support::client(hosts).await;
        let (listener, mut rx) = events();
        let again = DoubleBarrier::new(Session::new(&new).with_listener(listener), &dir, 2).unwrap();
        enter_again_counted_once(again, &mut rx, &observer, &dir, "the old session's node").await;
        drop(keeper);
        proxy.set_blackhole(false);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_members_is_an_invalid_argument_not_a_panic() {
    let client = client(&embedded().await).await;
    let zero = DoubleBarrier::new(&client, &unique_path("dbarrier-zero"), 0);
    assert!(matches!(zero, Err(Error::InvalidArgument(_))), "{zero:?}");
    assert!(DoubleBarrier::new(&client, &unique_path("dbarrier-one"), 1).is_ok());
}
