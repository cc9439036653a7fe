//! ACLs: the nodes' and the directories' own ACLs (`Session::with_acls`, `Session::with_parent_acls`), what a
//! `creator`-only lock keeps from other sessions (deleting, reading, squatting), and that ordering goes on with
//! names only — waiting behind, inspecting and observing contenders whose data we may not read.

use base64::Engine as _;
use zklock::zookeeper_client::{self as zk, Acl, Acls, AuthId, Client, Permission};
use zklock::{Error, LeaderElection, Mutex, Role, Session};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

/// A session authenticated as `user` with `password` (ZooKeeper's `digest` scheme).
async fn as_user(hosts: &str, user: &str, password: &str) -> Client {
    eventually(
        "an authenticated session",
        Client::connector()
            .with_session_timeout(std::time::Duration::from_secs(10))
            .with_auth("digest", format!("{user}:{password}").as_bytes())
            .connect(hosts),
    )
    .await
    .expect("connect")
}

/// The ACL entry ZooKeeper matches against a session authenticated as `user` with `password`:
/// `digest:user:base64(sha1(user:password))`.
fn digest(user: &str, password: &str, permission: Permission) -> Acl {
    let hash = sha1_smol::Sha1::from(format!("{user}:{password}"))
        .digest()
        .bytes();
    let id = format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    );
    Acl::new(permission, AuthId::new("digest", &id))
}

/// Alice's client, and a session of it whose nodes are alice's alone and whose directories (made by the recipe)
/// give all to alice and listing to anybody.
async fn alice_creator_only(hosts: &str) -> (Client, Session) {
    let alice = as_user(hosts, "alice", "alice-pw").await;
    let directories = [
        Acl::new(Permission::ALL, AuthId::authed()),
        Acl::new(Permission::READ, AuthId::anyone()),
    ];
    let session = Session::new(&alice)
        .with_acls(Acls::creator_all())
        .with_parent_acls(Acls::new(&directories));
    (alice, session)
}

on_every_server! {
    async fn a_creator_only_lock_keeps_other_sessions_out(hosts: &str) {
        let (alice, session) = alice_creator_only(hosts).await;
        let top = unique_path("acl-creator");
        let dir = format!("{top}/lock");
        let guard = Mutex::new(&session, &dir).unwrap().with_data("./payroll --secret").lock().await.unwrap();

        // The nodes carry the nodes' ACL, the directories (both made by the recipe) the directories' ACL, as
        // ZooKeeper stores them: `auth` becomes the creator's digest identity.
        let alice_all = digest("alice", "alice-pw", Permission::ALL);
        assert_eq!(alice.get_acl(guard.path()).await.unwrap().0, std::slice::from_ref(&alice_all));
        let directory_acl = vec![alice_all.clone(), Acl::new(Permission::READ, AuthId::anyone())];
        assert_eq!(alice.get_acl(&dir).await.unwrap().0, directory_acl);
        assert_eq!(alice.get_acl(&top).await.unwrap().0, directory_acl);

        for (who, other) in [
            ("an unauthenticated session", client(hosts).await),
            ("another user", as_user(hosts, "mallory", "guess").await),
        ] {
            catch_up(&other, &dir).await;
            assert_eq!(other.get_data(guard.path()).await.unwrap_err(), zk::Error::NoAuth, "{who}: read");
            let delete = other.delete(guard.path(), None).await;
            assert_eq!(delete.unwrap_err(), zk::Error::NoAuth, "{who}: delete");
            let delete = other.delete(&dir, None).await;
            assert_eq!(delete.unwrap_err(), zk::Error::NoAuth, "{who}: delete the directory");
            // Squatting: queueing in the directory at all.
            let squat = Mutex::new(&other, &dir).unwrap().try_lock().await;
            let squat = squat.unwrap_err();
            assert_eq!(squat.zookeeper(), Some(&zk::Error::NoAuth), "{who}: squat");
            // The error names what was refused, where: the create of our node in the directory.
            let refused = format!("ZooKeeper: not authorized to create {dir}/");
            assert!(squat.to_string().starts_with(&refused), "{who}: {squat}");

            // Yet it sees who holds the lock, by name, session and fencing token; not the data.
            let found = zklock::inspect(&other, &dir).await.unwrap().expect("the directory is listed");
            let [holder] = &found.participants[..] else { panic!("{who}: {:?}", found.participants) };
            assert_eq!((holder.role, holder.data_readable), (Role::Holder, false), "{who}");
            assert!(holder.data.is_empty(), "{who}");
            assert_eq!(holder.path, guard.path());
            assert_eq!(holder.session_id, alice.session_id().0);
            assert_eq!(holder.fencing_token, guard.fencing_token());
        }
        // The creator reads it all.
        let found = zklock::inspect(&session, &dir).await.unwrap().unwrap();
        assert!(found.participants[0].data_readable);
        assert_eq!(found.participants[0].data, b"./payroll --secret");
        assert!(!guard.is_lost(), "nobody could touch the holder's node");
        guard.release().await.unwrap();
    }

    async fn waiting_behind_a_contender_whose_data_we_may_not_read(hosts: &str) {
        let alice = as_user(hosts, "alice", "alice-pw").await;
        // Anybody may queue in the directory; alice's node is hers alone.
        let session = Session::new(&alice)
            .with_acls(Acls::creator_all())
            .with_parent_acls(Acls::anyone_all());
        let dir = unique_path("acl-wait-behind");
        let held = Mutex::new(&session, &dir).unwrap().lock().await.unwrap();

        let other = client(hosts).await;
        // It queues behind alice's node and watches it (with `exists`: `getData` is refused).
        let waiter = waiting_lock(&other, &dir).await;
        assert!(!waiter.is_finished(), "it waits while alice holds");
        held.release().await.unwrap();
        let guard = eventually("the waiter to be woken by the release", waiter).await.unwrap().unwrap();
        guard.release().await.unwrap();
    }

    async fn a_leader_whose_data_we_may_not_read_is_still_seen(hosts: &str) {
        let (alice, session) = alice_creator_only(hosts).await;
        let dir = unique_path("acl-leader");
        let leadership = LeaderElection::new(&session, &dir)
            .unwrap()
            .with_data("host-a:8080")
            .try_campaign()
            .await
            .unwrap()
            .expect("the only candidate leads");

        let other = client(hosts).await;
        catch_up(&other, &dir).await;
        let election = LeaderElection::new(&other, &dir).unwrap();
        let leader = election.leader().await.unwrap().expect("a leader");
        assert_eq!(leader.path, leadership.path());
        assert_eq!(leader.fencing_token, leadership.fencing_token());
        assert_eq!((leader.session_id, leader.data_readable), (alice.session_id().0, false));
        assert!(leader.data.is_empty());
        let mut observer = election.observe();
        assert_eq!(eventually("the first observation", observer.next()).await.unwrap(), Some(leader));
        // The observer's watch on a node it may not read still tells it the leader has gone.
        leadership.release().await.unwrap();
        assert_eq!(eventually("the leader's resignation", observer.next()).await.unwrap(), None);

        // The creator sees the data.
        let mine = LeaderElection::new(&session, &dir).unwrap().with_data("host-a:8080");
        let again = mine.try_campaign().await.unwrap().expect("leads again");
        let leader = mine.leader().await.unwrap().expect("a leader");
        assert_eq!((leader.data.as_slice(), leader.data_readable), (&b"host-a:8080"[..], true));
        again.release().await.unwrap();
    }

    async fn a_second_user_named_in_the_acl_can_queue(hosts: &str) {
        let (alice, bob, carol) = (
            as_user(hosts, "alice", "alice-pw").await,
            as_user(hosts, "bob", "bob-pw").await,
            as_user(hosts, "carol", "carol-pw").await,
        );
        let dir = unique_path("acl-two-users");
        // Each names itself (`auth`) and the other; the directories let anybody list them.
        let creator = Acl::new(Permission::ALL, AuthId::authed());
        let alice_acl = [creator.clone(), digest("bob", "bob-pw", Permission::ALL)];
        let bob_acl = [creator, digest("alice", "alice-pw", Permission::ALL)];
        let anybody_lists = Acl::new(Permission::READ, AuthId::anyone());
        let alice_dirs = [alice_acl[0].clone(), alice_acl[1].clone(), anybody_lists];
        let alice_session = Session::new(&alice)
            .with_acls(Acls::new(&alice_acl))
            .with_parent_acls(Acls::new(&alice_dirs));
        let held = Mutex::new(&alice_session, &dir).unwrap().with_data("alice's job").lock().await.unwrap();

        let (listener, mut rx) = events();
        let bob_session = Session::new(&bob).with_acls(Acls::new(&bob_acl)).with_listener(listener);
        let mutex = Mutex::new(&bob_session, &dir).unwrap().with_data("bob's job");
        let waiter = tokio::spawn(async move { mutex.lock().await });
        queued(&mut rx).await;
        // Bob reads alice's data; alice reads bob's.
        for (reader, whose) in [(&bob, "alice's job"), (&alice, "bob's job")] {
            catch_up(reader, &dir).await;
            let found = zklock::inspect(reader, &dir).await.unwrap().unwrap();
            let theirs = found.participants.iter().find(|p| p.data == whose.as_bytes());
            assert!(theirs.is_some_and(|p| p.data_readable), "{:?}", found.participants);
        }
        // Carol, not named, may not queue.
        catch_up(&carol, &dir).await;
        let squat = Mutex::new(&carol, &dir).unwrap().try_lock().await;
        let squat = squat.unwrap_err();
        assert!(
            matches!(&squat, Error::ZooKeeper { op: "create", path, source: zk::Error::NoAuth }
                if path.starts_with(&format!("{dir}/"))),
            "{squat:?}"
        );

        held.release().await.unwrap();
        let guard = eventually("bob to take the lock", waiter).await.unwrap().unwrap();
        guard.release().await.unwrap();
    }

    async fn directories_take_the_nodes_acl_unless_given_their_own(hosts: &str) {
        let alice = as_user(hosts, "alice", "alice-pw").await;
        let alice_all = [digest("alice", "alice-pw", Permission::ALL)];
        // Only the nodes' ACL: the directories get it too (as before `with_parent_acls` existed).
        let session = Session::new(&alice).with_acls(Acls::creator_all());
        assert_eq!(session.parent_acls(), session.acls());
        let dir = unique_path("acl-parents-default");
        let guard = Mutex::new(&session, &dir).unwrap().lock().await.unwrap();
        assert_eq!(alice.get_acl(&dir).await.unwrap().0, alice_all);
        guard.release().await.unwrap();

        // Their own: the nodes keep theirs. The barrier node is a node; its missing parent a directory.
        let session = session.with_parent_acls(Acls::anyone_all());
        let top = unique_path("acl-parents-own");
        let barrier = zklock::Barrier::new(&session, &format!("{top}/barrier")).unwrap();
        barrier.set().await.unwrap();
        barrier.set().await.unwrap();
        assert_eq!(alice.get_acl(&top).await.unwrap().0, Acls::anyone_all().to_vec());
        assert_eq!(alice.get_acl(&format!("{top}/barrier")).await.unwrap().0, alice_all);
        barrier.remove().await.unwrap();
    }
}
