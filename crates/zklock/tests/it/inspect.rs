//! `zklock::inspect`: every recipe's directory read back as participants in order, and the session's ACL on
//! every node a recipe creates.

use zklock::zookeeper_client::{Acl, Acls, AuthId, Client, Permission};
use zklock::{
    Barrier, DoubleBarrier, Inspection, LeaderElection, Mutex, NodeKind, Queue, QueueEvent, Recipe, Role,
    RwLock, Semaphore, Session,
};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

/// Kind, role, data and session of each participant, in order.
fn summary(found: &Inspection) -> Vec<(NodeKind, Role, String, i64)> {
    found
        .participants
        .iter()
        .map(|p| {
            (
                p.kind,
                p.role,
                String::from_utf8_lossy(&p.data).into_owned(),
                p.session_id,
            )
        })
        .collect()
}

/// Asserts that inspecting `dir` finds `recipe` with the participants `rows` (see [`summary`]), in queue order.
async fn assert_shows(observer: &Client, dir: &str, recipe: Recipe, rows: &[(NodeKind, Role, String, i64)]) {
    let found = inspect_synced(observer, dir).await.unwrap();
    assert_eq!(found.recipe, recipe);
    assert_eq!(summary(&found), rows);
}

fn row(kind: NodeKind, role: Role, data: &str, session: &Client) -> (NodeKind, Role, String, i64) {
    (kind, role, data.to_owned(), session.session_id().0)
}

on_every_server! {
    async fn shows_locks_and_elections_in_queue_order(hosts: &str) {
        let (a, b, observer) = (client(hosts).await, client(hosts).await, client(hosts).await);
        assert_eq!(inspect_synced(&observer, &unique_path("inspect-none")).await, None);

        // Read/write lock: the readers at the head share it; the writer and the reader behind it wait.
        let rw = unique_path("inspect-rwlock");
        let r1 = RwLock::new(&a, &rw).unwrap().with_data("r1").read().await.unwrap();
        let r2 = RwLock::new(&b, &rw).unwrap().with_data("r2").read().await.unwrap();
        let w = spawn_waiting(Session::new(&a), |session| {
            let lock = RwLock::new(session, &rw).unwrap().with_data("w");
            async move { lock.write().await }
        })
        .await;
        let r3 = spawn_waiting(Session::new(&b), |session| {
            let lock = RwLock::new(session, &rw).unwrap().with_data("r3");
            async move { lock.read().await }
        })
        .await;
        let found = inspect_synced(&observer, &rw).await.unwrap();
        assert_eq!((found.path.as_str(), found.recipe), (rw.as_str(), Recipe::Lock));
        assert_eq!(
            summary(&found),
            vec![
                row(NodeKind::Read, Role::Holder, "r1", &a),
                row(NodeKind::Read, Role::Holder, "r2", &b),
                row(NodeKind::Write, Role::Waiting, "w", &a),
                row(NodeKind::Read, Role::Waiting, "r3", &b),
            ]
        );
        let first = &found.participants[0];
        assert_eq!(
            (first.path.clone(), first.sequence, first.fencing_token),
            (r1.path().to_owned(), Some(r1.sequence()), r1.fencing_token())
        );
        assert!(first.path.ends_with(&format!("/{}", first.name)));
        r1.release().await.unwrap();
        r2.release().await.unwrap();
        eventually("the writer", w).await.unwrap().unwrap().release().await.unwrap();
        eventually("the last reader", r3).await.unwrap().unwrap().release().await.unwrap();

        // Election: the leader holds, the next candidate waits.
        let el = unique_path("inspect-election");
        let leader = LeaderElection::new(&a, &el).unwrap().with_data("leader").campaign().await.unwrap();
        let next = spawn_waiting(Session::new(&b), |session| {
            let election = LeaderElection::new(session, &el).unwrap().with_data("next");
            async move { election.campaign().await }
        })
        .await;
        assert_shows(
            &observer,
            &el,
            Recipe::Election,
            &[
                row(NodeKind::Candidate, Role::Holder, "leader", &a),
                row(NodeKind::Candidate, Role::Waiting, "next", &b),
            ],
        )
        .await;
        leader.release().await.unwrap();
        eventually("the next leader", next).await.unwrap().unwrap().release().await.unwrap();

        // Nobody left: an idle directory — or none at all, once the server has swept the empty container.
        assert!(inspect_synced(&observer, &el).await.is_none_or(|idle| idle.recipe == Recipe::Empty));
        let mutex = unique_path("inspect-mutex");
        let guard = Mutex::new(&a, &mutex).unwrap().with_data("alone").lock().await.unwrap();
        assert_shows(&observer, &mutex, Recipe::Lock, &[row(NodeKind::Lock, Role::Holder, "alone", &a)]).await;
        guard.release().await.unwrap();
    }

    async fn shows_semaphores_queues_and_barriers(hosts: &str) {
        let (a, b, observer) = (client(hosts).await, client(hosts).await, client(hosts).await);

        // Semaphore: the lease node of the acquirer waiting for room waits; it is not a holder.
        let sem = unique_path("inspect-semaphore");
        let held = Semaphore::new(&a, &sem, 1).unwrap().with_data("holder").acquire().await.unwrap();
        let (listener, mut rx) = events();
        let session = Session::new(&b).with_listener(listener);
        let waiter = Semaphore::new(session, &sem, 1).unwrap().with_data("waits");
        let waiting = tokio::spawn(async move { waiter.acquire().await });
        until(&mut rx, "the acquirer to wait for room", |e| {
            matches!(e, QueueEvent::Waiting { on } if on.ends_with("/leases"))
        })
        .await;
        assert_shows(
            &observer,
            &sem,
            Recipe::Semaphore {
                acquirers: 1,
                leases: Some(1),
            },
            &[
                row(NodeKind::Lease, Role::Holder, "holder", &a),
                row(NodeKind::Lease, Role::Waiting, "waits", &b),
            ],
        )
        .await;
        held.release().await.unwrap();
        eventually("the second lease", waiting).await.unwrap().unwrap().release().await.unwrap();

        // Queue: items are counted, claims too; nobody is listed.
        let q = unique_path("inspect-queue");
        let queue = Queue::new(&a, &q).unwrap();
        for item in [b"1", b"2", b"3"] {
            queue.put(item).await.unwrap();
        }
        let claimed = queue.take_safe().await.unwrap();
        let found = inspect_synced(&observer, &q).await.unwrap();
        assert_eq!(found.recipe, Recipe::Queue { items: 3, claimed: 1 });
        assert!(found.participants.is_empty());
        claimed.complete().await.unwrap();

        // Double barrier: a member waits for the other, then both have entered.
        let dir = unique_path("inspect-double-barrier");
        let (listener, mut rx) = events();
        let session = Session::new(&a).with_listener(listener);
        let first = DoubleBarrier::new(session, &dir, 2).unwrap().with_data("m1");
        let first = tokio::spawn(async move { first.enter().await });
        until(&mut rx, "the first member to wait", |e| matches!(e, QueueEvent::Waiting { .. })).await;
        let found = inspect_synced(&observer, &dir).await.unwrap();
        assert_eq!(found.recipe, Recipe::DoubleBarrier { ready: false });
        assert_eq!(summary(&found), vec![row(NodeKind::Member, Role::Waiting, "m1", &a)]);
        assert_eq!(found.participants[0].sequence, None);
        let second = DoubleBarrier::new(&b, &dir, 2).unwrap().with_data("m2").enter().await.unwrap();
        let first = eventually("the first member to enter", first).await.unwrap().unwrap();
        let found = inspect_synced(&observer, &dir).await.unwrap();
        assert_eq!(found.recipe, Recipe::DoubleBarrier { ready: true });
        let mut members = summary(&found);
        members.sort_by(|x, y| x.2.cmp(&y.2));
        assert_eq!(
            members,
            vec![
                row(NodeKind::Member, Role::Entered, "m1", &a),
                row(NodeKind::Member, Role::Entered, "m2", &b),
            ]
        );
        let (left, right) = tokio::join!(first.leave(), second.leave());
        left.unwrap();
        right.unwrap();

        // Barrier: set, it is a node without children; with a stranger's child it is nobody's.
        let path = unique_path("inspect-barrier");
        let barrier = Barrier::new(&a, &path).unwrap();
        barrier.set().await.unwrap();
        assert_eq!(inspect_synced(&observer, &path).await.unwrap().recipe, Recipe::Empty);
        a.create(&format!("{path}/stranger"), b"", &PERSISTENT).await.unwrap();
        assert_eq!(inspect_synced(&observer, &path).await.unwrap().recipe, Recipe::Unrecognised { children: 1 });
        a.delete(&format!("{path}/stranger"), None).await.unwrap();
        barrier.remove().await.unwrap();
        assert_eq!(inspect_synced(&observer, &path).await, None);
    }

    async fn created_nodes_carry_the_sessions_acl(hosts: &str) {
        let client = client(hosts).await;
        // The default: anyone may do anything.
        let dir = unique_path("session-acl-default");
        let guard = Mutex::new(&client, &dir).unwrap().lock().await.unwrap();
        let anyone_all = Acls::anyone_all().to_vec();
        assert_eq!(client.get_acl(&dir).await.unwrap().0, anyone_all);
        assert_eq!(client.get_acl(guard.path()).await.unwrap().0, anyone_all);
        guard.release().await.unwrap();

        // Chosen once on the session: the directory and our node carry it.
        let acl = [Acl::new(
            Permission::READ | Permission::WRITE | Permission::CREATE | Permission::DELETE,
            AuthId::anyone(),
        )];
        let session = Session::new(&client).with_acls(Acls::new(&acl));
        let dir = unique_path("session-acl");
        let guard = Mutex::new(&session, &dir).unwrap().lock().await.unwrap();
        assert_eq!(client.get_acl(&dir).await.unwrap().0, acl);
        assert_eq!(client.get_acl(guard.path()).await.unwrap().0, acl);
        guard.release().await.unwrap();
    }
}
