//! `zklock status` of each recipe but the lock: read/write locks, elections, semaphores, queues, barriers, groups
//! and two-phase commit transactions, each with its labels.

use zklock::Mutex;
use zklock_testkit::unique_path;

use super::{campaign, check, entries, lease, status, status_json};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_every_recipe() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);

    // Read/write lock: two readers share, a writer waits.
    let rw = unique_path("cli-status-rw");
    let r1 = zklock::RwLock::new(&a, &rw).unwrap().read().await.unwrap();
    let r2 = zklock::RwLock::new(&b, &rw).unwrap().read().await.unwrap();
    let stdout = status(&hosts, &rw).await;
    assert!(
        stdout.contains("held by 2 of 2") && stdout.contains("[read]"),
        "{stdout}"
    );
    assert_eq!(entries(&stdout, "reader "), 2, "{stdout}");

    // Election: the leader leads.
    let election = unique_path("cli-status-election");
    let leader = zklock::LeaderElection::new(&a, &election)
        .unwrap()
        .campaign()
        .await
        .unwrap();
    let stdout = status(&hosts, &election).await;
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
    let stdout = status(&hosts, &sem).await;
    assert!(stdout.contains("semaphore with 2 of 3 lease(s) held"), "{stdout}");
    assert_eq!(entries(&stdout, "lease holder "), 2, "{stdout}");

    // Queue: three items.
    let queue_path = unique_path("cli-status-queue");
    let queue = zklock::Queue::new(&a, &queue_path).unwrap();
    for item in [b"1", b"2", b"3"] {
        queue.put(item).await.unwrap();
    }
    let stdout = status(&hosts, &queue_path).await;
    assert!(stdout.contains("queue with 3 item(s)"), "{stdout}");

    // Barrier: set, then removed.
    let barrier_path = unique_path("cli-status-barrier");
    let barrier = zklock::Barrier::new(&a, &barrier_path).unwrap();
    barrier.set().await.unwrap();
    let stdout = status(&hosts, &barrier_path).await;
    assert!(stdout.contains("exists with no contenders"), "{stdout}");
    barrier.remove().await.unwrap();
    let stdout = status(&hosts, &barrier_path).await;
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
    let held = lease(&a, &sem, "holder").await.unwrap();
    let b_session = b.session_id().0;
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            lease(&b, &sem, "waits for room")
                .await
                .map(|lease| lease.session_id())
        })
    };
    // The waiter holds the gate and has created its lease node: two lease nodes, one lease held.
    let leases = format!("{sem}/leases");
    await_children(&observer, &leases, 2).await;
    let stdout = status(&hosts, &sem).await;
    assert!(
        stdout.contains("semaphore with 1 of 1 lease(s) held, 1 acquirer(s) queued"),
        "{stdout}"
    );
    let holder_line = stdout.lines().find(|l| l.contains("holder ")).expect(&stdout);
    let waiting_line = stdout.lines().find(|l| l.contains("waiting")).expect(&stdout);
    assert!(holder_line.ends_with("\"holder\""), "{stdout}");
    assert!(waiting_line.ends_with("\"waits for room\""), "{stdout}");
    held.release().await.unwrap();
    let session = waiter.await.unwrap().unwrap();
    assert_eq!(session, b_session);
}

/// An election's nodes are a leader and candidates, not holders and waiters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn election_shows_leader_and_candidates() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);
    let election = unique_path("cli-status-labels");
    let leader = campaign(&a, &election, "leads").await.unwrap();
    let candidate = {
        let election = election.clone();
        tokio::spawn(async move { campaign(&b, &election, "stands by").await.map(|_| ()) })
    };
    await_children(&a, &election, 2).await;

    let stdout = status(&hosts, &election).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("led by 1 of 2"), "{stdout}");
    assert!(
        lines[1].trim_start().starts_with("leader ") && lines[1].ends_with("\"leads\""),
        "{stdout}"
    );
    assert!(
        lines[4].trim_start().starts_with("candidate ") && lines[4].ends_with("\"stands by\""),
        "{stdout}"
    );
    assert!(!stdout.contains("holder"), "{stdout}");

    let found = status_json(&hosts, &election).await;
    assert_eq!(found["recipe"], "election", "{found}");
    assert_eq!(found["holders"][0]["role"], "leader", "{found}");
    assert_eq!(found["waiters"][0]["role"], "candidate", "{found}");
    assert_eq!(
        found["holders"][0]["fencing_token"],
        leader.fencing_token(),
        "{found}"
    );

    leader.release().await.unwrap();
    candidate.await.unwrap().unwrap();
}

/// A group's members in the order they joined, with their data; a two-phase commit transaction's outcome, votes
/// and coordinator; `--json` and `--check` for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_groups_and_transactions() {
    let hosts = zookeeper().await;
    let (a, b) = (client(&hosts).await, client(&hosts).await);

    let group = unique_path("cli-status-group");
    let mut members = Vec::new();
    for (client, data) in [(&a, "first member"), (&b, "second member")] {
        let group = zklock::Group::new(client, &group).unwrap().with_data(data);
        members.push(group.join().await.unwrap());
    }
    let stdout = status(&hosts, &group).await;
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].contains("group with 2 member(s)"), "{stdout}");
    assert!(
        lines[1].trim_start().starts_with("member ") && lines[1].contains("[party]"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("first member") && lines[4].contains("second member"),
        "{stdout}"
    );
    let report = status_json(&hosts, &group).await;
    assert_eq!(
        (report["recipe"].as_str(), report["held"].as_bool()),
        (Some("group"), Some(true)),
        "{report}"
    );
    assert_eq!(report["holders"][1]["data"], "second member", "{report}");
    assert_eq!(check(&hosts, &group).await, Some(0), "a group with members");
    for member in members {
        member.leave().await.unwrap();
    }
    assert_eq!(check(&hosts, &group).await, Some(1), "nobody left");

    let transactions = unique_path("cli-status-2pc");
    let tx = format!("{transactions}/tx");
    let coordinator = zklock::TwoPhaseCommit::new(&a, &transactions)
        .unwrap()
        .begin("tx", &["x", "y"])
        .await
        .unwrap();
    let x = {
        let tpc = zklock::TwoPhaseCommit::new(&b, &transactions).unwrap();
        tokio::spawn(async move { tpc.join("tx", "x").await?.vote(zklock::Decision::Commit).await })
    };
    await_children(&a, &tx, 4).await; // coordinator-, joined-x, alive-…-x, vote-x
    let stdout = status(&hosts, &tx).await;
    assert!(
        stdout.contains(
            "two-phase commit transaction, undecided; 1 of 2 participant(s) voted (1 commit), 1 joined"
        ),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.trim_start().starts_with("coordinator ")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("voted ") && l.ends_with("\"commit\"")),
        "{stdout}"
    );
    let report = status_json(&hosts, &tx).await;
    assert_eq!(
        (report["recipe"].as_str(), report["outcome"].as_str()),
        (Some("transaction"), Some("undecided")),
        "{report}"
    );
    assert_eq!(
        (
            report["counts"]["participants"].as_u64(),
            report["counts"]["votes"].as_u64()
        ),
        (Some(2), Some(1)),
        "{report}"
    );
    assert_eq!(check(&hosts, &tx).await, Some(0), "the coordinator holds it open");
    let y = zklock::TwoPhaseCommit::new(&a, &transactions)
        .unwrap()
        .join("tx", "y")
        .await
        .unwrap();
    assert_eq!(
        y.vote(zklock::Decision::Abort).await.unwrap(),
        zklock::Decision::Abort
    );
    assert_eq!(coordinator.decide().await.unwrap(), zklock::Decision::Abort);
    assert_eq!(x.await.unwrap().unwrap(), zklock::Decision::Abort);
    let report = status_json(&hosts, &tx).await;
    assert_eq!(report["outcome"], "abort", "{report}");
}

/// A semaphore's acquirers are all listed in their order, not only counted; a directory that merely has a child
/// named `locks` (a parent of lock directories) is no semaphore, and `run` is not refused there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_waiters_are_listed_and_a_child_named_locks_is_no_semaphore() {
    let hosts = zookeeper().await;
    let (a, b, c, observer) = (
        client(&hosts).await,
        client(&hosts).await,
        client(&hosts).await,
        client(&hosts).await,
    );
    let sem = unique_path("cli-status-semaphore-queue");
    let held = lease(&a, &sem, "holds").await.unwrap();
    let mut waiters = Vec::new();
    for (client, data) in [(b, "first to wait"), (c, "second to wait")] {
        let path = sem.clone();
        waiters.push(tokio::spawn(async move {
            let lease = lease(&client, &path, data).await.unwrap();
            lease.release().await.unwrap();
        }));
        await_children(&observer, &format!("{sem}/locks"), waiters.len()).await;
    }
    let stdout = status(&hosts, &sem).await;
    assert!(
        stdout.contains("semaphore with 1 of 1 lease(s) held, 2 acquirer(s) queued"),
        "{stdout}"
    );
    let firsts: Vec<&str> = stdout.lines().filter(|l| l.contains(". [")).collect();
    assert_eq!(firsts.len(), 3, "{stdout}");
    assert!(
        firsts[0].contains("lease holder") && firsts[0].ends_with("\"holds\""),
        "{stdout}"
    );
    assert!(
        firsts[1].contains("waiting") && firsts[1].ends_with("\"first to wait\""),
        "{stdout}"
    );
    assert!(
        firsts[2].contains("waiting") && firsts[2].ends_with("\"second to wait\""),
        "{stdout}"
    );
    held.release().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }

    // A parent of lock directories, one of them called `locks`.
    let parent = unique_path("cli-status-parent");
    let lock = Mutex::new(&a, &format!("{parent}/locks/deploy"))
        .unwrap()
        .lock()
        .await
        .unwrap();
    let stdout = status(&hosts, &parent).await;
    assert!(!stdout.contains("semaphore"), "{stdout}");
    let out = output(&["run", "--connect", &hosts, "--nonblock", &parent, "--", "true"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    lock.release().await.unwrap();
}

/// kazoo's own layouts, made by kazoo (issue 33.4): a `Semaphore` with a lease held is a semaphore whose lease is
/// held (it was "a double barrier, waiting", and `--check` said free); a `Queue` is a priority queue with its items
/// (it was unrecognised); a stock kazoo `Lock` that queued beside a zklock holder — and, not seeing the zklock node,
/// acquired — is warned about, on stderr and in the JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_layouts_as_kazoo_makes_them() {
    let hosts = zookeeper().await;
    let (semaphore, queue, lock) = (
        unique_path("cli-status-kazoo-semaphore"),
        unique_path("cli-status-kazoo-queue"),
        unique_path("cli-status-kazoo-lock"),
    );
    let (_holder, guard) = lock_held(&hosts, &lock).await;
    let script = format!(
        "import sys\n\
         from kazoo.client import KazooClient\n\
         zk = KazooClient(hosts={hosts:?}); zk.start()\n\
         assert zk.Semaphore({semaphore:?}, max_leases=3).acquire(timeout=30)\n\
         q = zk.Queue({queue:?}); q.put(b'a'); q.put(b'b', priority=5); q.put(b'c', priority=5)\n\
         print('STOCK LOCK ACQUIRED', zk.Lock({lock:?}).acquire(blocking=False), flush=True)\n\
         sys.stdin.readline()\n\
         zk.stop(); zk.close()\n"
    );
    let python = tokio::task::spawn_blocking(zklock_testkit::peers::kazoo_python)
        .await
        .unwrap()
        .expect("python3 with kazoo");
    let mut kazoo = Running::start(tokio::process::Command::new(python).args(["-c", &script]));
    assert_eq!(kazoo.line("kazoo's layouts").await, "STOCK LOCK ACQUIRED True");

    let stdout = status(&hosts, &semaphore).await;
    assert!(stdout.contains("semaphore with 1 of 3 lease(s) held"), "{stdout}");
    assert_eq!(
        check(&hosts, &semaphore).await,
        Some(0),
        "a held kazoo Semaphore is not free"
    );
    let report = status_json(&hosts, &semaphore).await;
    assert_eq!(report["recipe"], "semaphore", "{report}");
    assert_eq!(report["held"], true, "{report}");

    let stdout = status(&hosts, &queue).await;
    assert!(stdout.contains("priority queue with 3 item(s)"), "{stdout}");
    assert!(stdout.contains("priority           5: 2 item(s)"), "{stdout}");

    let out = output(&["status", "--connect", &hosts, &lock]).await;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("mixes 1 kazoo-format node(s)") && stderr.contains("extra_lock_patterns"),
        "{stderr}"
    );
    let report = status_json(&hosts, &lock).await;
    assert!(
        report["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("two holders")),
        "{report}"
    );
    // The control: zklock's lock alone draws no warning.
    let (code, _) = kazoo.end("").await;
    assert_eq!(code, Some(0));
    let report = status_json(&hosts, &lock).await;
    assert!(report.get("warnings").is_none(), "{report}");
    guard.release().await.unwrap();
}
