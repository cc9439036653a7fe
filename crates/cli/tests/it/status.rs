//! `zklock status`: holder and queue in order.

use zklock::Mutex;
use zklock_testkit::unique_path;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_holder_and_queue_in_order() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status");
    let out = output(&["status", "--connect", &hosts, &path]).await;
    assert!(
        text(&out.stdout).contains("does not exist"),
        "{}",
        text(&out.stdout)
    );
    let (a, b) = (client(&hosts).await, client(&hosts).await);
    let guard = Mutex::new(&a, &path)
        .unwrap()
        .with_data("first holder")
        .lock()
        .await
        .unwrap();
    let waiter = {
        let path = path.clone();
        tokio::spawn(async move {
            Mutex::new(&b, &path)
                .unwrap()
                .with_data("second in line")
                .lock()
                .await
                .map(|_| ())
        })
    };
    // Wait until the waiter is queued.
    loop {
        let (children, watcher) = a.list_and_watch_children(&path).await.unwrap();
        if children.len() == 2 {
            break;
        }
        tokio::time::timeout(EVENTUALLY, watcher.changed()).await.unwrap();
    }
    let out = output(&["status", "--connect", &hosts, &path]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("held by 1 of 2"), "{stdout}");
    assert!(
        lines[1].contains("holder") && lines[1].contains("first holder"),
        "{stdout}"
    );
    assert!(
        lines[1].contains(&format!("0x{:x}", a.session_id().0)),
        "{stdout}"
    );
    assert!(
        lines[2].contains("waiting") && lines[2].contains("second in line"),
        "{stdout}"
    );
    guard.release().await.unwrap();
    waiter.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_every_recipe() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);

    // Read/write lock: two readers share, a writer waits.
    let rw = unique_path("cli-status-rw");
    let r1 = zklock::RwLock::new(&a, &rw).unwrap().read().await.unwrap();
    let r2 = zklock::RwLock::new(&b, &rw).unwrap().read().await.unwrap();
    let stdout = text(&output(&["status", "--connect", &hosts, &rw]).await.stdout);
    assert!(
        stdout.contains("held by 2 of 2") && stdout.contains("[read]"),
        "{stdout}"
    );

    // Election: the leader leads.
    let election = unique_path("cli-status-election");
    let leader = zklock::LeaderElection::new(&a, &election)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let stdout = text(&output(&["status", "--connect", &hosts, &election]).await.stdout);
    assert!(
        stdout.contains("led by 1 of 1") && stdout.contains("[election]"),
        "{stdout}"
    );

    // Semaphore: two leases held.
    let sem = unique_path("cli-status-semaphore");
    let l1 = zklock::Semaphore::new(&a, &sem, 3)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let l2 = zklock::Semaphore::new(&b, &sem, 3)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let stdout = text(&output(&["status", "--connect", &hosts, &sem]).await.stdout);
    assert!(stdout.contains("semaphore with 2 lease(s) held"), "{stdout}");

    // Queue: three items.
    let queue_path = unique_path("cli-status-queue");
    let queue = zklock::Queue::new(&a, &queue_path).unwrap();
    for item in [b"1", b"2", b"3"] {
        queue.put(item).await.unwrap();
    }
    let stdout = text(&output(&["status", "--connect", &hosts, &queue_path]).await.stdout);
    assert!(stdout.contains("queue with 3 item(s)"), "{stdout}");

    // Barrier: set, then removed.
    let barrier_path = unique_path("cli-status-barrier");
    let barrier = zklock::Barrier::new(&a, &barrier_path).unwrap();
    barrier.set().await.unwrap();
    let stdout = text(
        &output(&["status", "--connect", &hosts, &barrier_path])
            .await
            .stdout,
    );
    assert!(stdout.contains("exists with no contenders"), "{stdout}");
    barrier.remove().await.unwrap();
    let stdout = text(
        &output(&["status", "--connect", &hosts, &barrier_path])
            .await
            .stdout,
    );
    assert!(stdout.contains("does not exist"), "{stdout}");

    for guard in [r1, r2, leader, l1, l2] {
        guard.release().await.unwrap();
    }
}

/// An acquirer waiting for room keeps a lease node while it waits (Curator's layout): it is shown as waiting,
/// not counted as a holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_acquirer_waiting_for_room_is_not_a_holder() {
    let hosts = zookeeper().await;
    let (a, b, observer) = (client(&hosts).await, client(&hosts).await, client(&hosts).await);
    let sem = unique_path("cli-status-semaphore-wait");
    let held = zklock::Semaphore::new(&a, &sem, 1)
        .unwrap()
        .with_data("holder")
        .acquire()
        .await
        .unwrap();
    let b_session = b.session_id().0;
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            zklock::Semaphore::new(&b, &sem, 1)
                .unwrap()
                .with_data("waits for room")
                .acquire()
                .await
                .map(|lease| lease.session_id())
        })
    };
    // The waiter holds the gate and has created its lease node: two lease nodes, one lease held.
    let leases = format!("{sem}/leases");
    loop {
        let (children, watcher) = observer.list_and_watch_children(&leases).await.unwrap();
        if children.len() == 2 {
            break;
        }
        tokio::time::timeout(EVENTUALLY, watcher.changed()).await.unwrap();
    }
    let stdout = text(&output(&["status", "--connect", &hosts, &sem]).await.stdout);
    assert!(
        stdout.contains("semaphore with 1 lease(s) held, 1 acquirer(s) queued"),
        "{stdout}"
    );
    let holder_line = stdout.lines().find(|l| l.contains("holder ")).expect(&stdout);
    let waiting_line = stdout.lines().find(|l| l.contains("waiting")).expect(&stdout);
    assert!(holder_line.ends_with("holder"), "{stdout}");
    assert!(waiting_line.ends_with("waits for room"), "{stdout}");
    held.release().await.unwrap();
    let session = waiter.await.unwrap().unwrap();
    assert_eq!(session, b_session);
}
