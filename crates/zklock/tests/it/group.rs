//! Group membership: members in join order with their data, a live view whose events match what happened, leaving
//! (also by expiry, cancellation, dropping) seen by everybody, lost replies never making a second member, and
//! mixed groups with kazoo's `Party` and `ShallowParty`.

use std::time::Duration;

use zklock::zookeeper_client::Client;
use zklock::{Group, GroupLayout, Member, MemberEvent, Members, NodeKind, Recipe, Role, Session};
use zklock_testkit::peers::Peer;
use zklock_testkit::{expire_session, opcode, unique_path, Proxy};

use crate::on_every_server;
use crate::support::*;

/// The members' data, in the view's order.
fn data(members: &[Member]) -> Vec<String> {
    members
        .iter()
        .map(|m| String::from_utf8_lossy(&m.data).into_owned())
        .collect()
}

/// The next change of the view (bounded).
async fn next(members: &mut Members) -> MemberEvent {
    eventually("the next change of the group", members.next())
        .await
        .expect("the view follows the group")
}

/// The members now, as a fresh look sees them after a `sync` (so on an ensemble it includes every acknowledged
/// change).
async fn look(client: &Client, dir: &str) -> Vec<String> {
    client.sync(dir).await.ok();
    data(&Group::new(client, dir).unwrap().members().await.unwrap())
}

fn joined(event: &MemberEvent) -> &Member {
    match event {
        MemberEvent::Joined(m) => m,
        other => panic!("expected a join, got {other:?}"),
    }
}

fn left(event: &MemberEvent) -> &Member {
    match event {
        MemberEvent::Left(m) => m,
        other => panic!("expected a departure, got {other:?}"),
    }
}

on_every_server! {
    async fn members_in_join_order_with_every_change_seen(hosts: &str) {
        let dir = unique_path("group");
        let observer = client(hosts).await;
        let mut view = Group::new(&observer, &dir).unwrap().watch().await.unwrap();
        assert!(view.members().is_empty(), "no group yet");

        let clients = [client(hosts).await, client(hosts).await, client(hosts).await];
        let mut memberships = Vec::new();
        for (i, c) in clients.iter().enumerate() {
            let m = Group::new(c, &dir).unwrap().with_data(format!("m{i}")).join().await.unwrap();
            let event = next(&mut view).await;
            assert_eq!(joined(&event).path, m.path(), "member {i} joined");
            assert_eq!(joined(&event).session_id, c.session_id().0, "its session");
            memberships.push(m);
        }
        assert_eq!(data(view.members()), ["m0", "m1", "m2"], "in the order they joined");
        assert_eq!(look(&observer, &dir).await, ["m0", "m1", "m2"], "a fresh look agrees");

        // A data change.
        memberships[1].set_data(b"m1 busy").await.unwrap();
        match next(&mut view).await {
            MemberEvent::Changed { before, after } => {
                assert_eq!((before.data.as_slice(), after.data.as_slice()), (&b"m1"[..], &b"m1 busy"[..]));
                assert_eq!(before.joined_zxid, after.joined_zxid);
            }
            other => panic!("expected a change, got {other:?}"),
        }
        assert_eq!(data(view.members()), ["m0", "m1 busy", "m2"], "the same place");

        // What `zklock status` sees.
        let found = inspect_synced(&observer, &dir).await.unwrap();
        assert_eq!(found.recipe, Recipe::Group);
        let shown: Vec<_> = found.participants.iter().map(|p| (String::from_utf8_lossy(&p.data).into_owned(), p.kind, p.role)).collect();
        assert_eq!(shown, [
            ("m0".to_owned(), NodeKind::GroupMember, Role::Member),
            ("m1 busy".to_owned(), NodeKind::GroupMember, Role::Member),
            ("m2".to_owned(), NodeKind::GroupMember, Role::Member),
        ]);

        // Leaving: by `leave` (done once it returns: a fresh look no longer shows it) and by dropping.
        let m0 = memberships.remove(0);
        let m0_path = m0.path().to_owned();
        m0.leave().await.unwrap();
        assert_eq!(look(&observer, &dir).await, ["m1 busy", "m2"], "left when leave returned");
        assert_eq!(left(&next(&mut view).await).path, m0_path);
        let m2 = memberships.pop().unwrap();
        let m2_path = m2.path().to_owned();
        drop(m2);
        assert_eq!(left(&next(&mut view).await).path, m2_path);
        assert_eq!(data(view.members()), ["m1 busy"]);

        // A member joining again is a new member, after the ones there.
        let again = Group::new(&clients[0], &dir).unwrap().with_data("m0 again").join().await.unwrap();
        joined(&next(&mut view).await);
        assert_eq!(data(view.members()), ["m1 busy", "m0 again"]);
        drop((again, memberships));
        let mut gone = 0;
        while gone < 2 {
            left(&next(&mut view).await);
            gone += 1;
        }
        assert!(view.members().is_empty());
        await_children(&observer, &dir, "no member left", |c| c.is_empty()).await;
    }

    async fn a_member_joining_again_keeps_its_id_and_a_second_live_join_is_refused(hosts: &str) {
        // Issue 31: a member that joins again — here on a reconnecting session, after its session expired — is the same
        // member to everybody: the same id, the same node name. A clone of a `Group` is another member.
        let dir = unique_path("group-rejoin");
        let observer = client(hosts).await;
        let connector = Client::connector().with_session_timeout(Duration::from_secs(10));
        let session = eventually("connecting", Session::reconnecting(connector, hosts)).await.unwrap();
        let group = Group::new(&session, &dir).unwrap().with_data("a");
        let first = group.join().await.unwrap();
        assert!(first.name().starts_with(group.member_id()), "{} has our id", first.name());
        // A second live membership of the same member is refused; a clone is another member.
        let refused = group.join().await.unwrap_err();
        assert!(matches!(refused, zklock::Error::InUse { .. }), "{refused:?}");
        let other = group.clone().join().await.unwrap();
        assert_ne!(other.name(), first.name());
        other.leave().await.unwrap();
        // The session expires: the membership is lost; joining again gives the same name on the next session.
        let name = first.name().to_owned();
        let lost = first.lost();
        expire_session(hosts, session.client()).await;
        assert_expired(eventually("the membership's loss", lost).await);
        drop(first);
        let again = eventually("the join on the next session", group.join()).await.unwrap();
        assert_eq!(again.name(), name, "the same member");
        observer.sync(&dir).await.unwrap();
        assert_eq!(observer.list_children(&dir).await.unwrap(), [name], "one node of ours");
        again.leave().await.unwrap();
        // Leaving ends the membership: the member may join again at once.
        group.join().await.unwrap().leave().await.unwrap();
    }

    async fn another_process_with_our_member_id_is_refused(hosts: &str) {
        let dir = unique_path("group-same-id");
        let (a, b) = (client(hosts).await, client(hosts).await);
        let id = "0123456789abcdef0123456789abcdef";
        let ours = Group::new(&a, &dir).unwrap().with_member_id(id).unwrap().join().await.unwrap();
        let err = Group::new(&b, &dir).unwrap().with_member_id(id).unwrap().join().await.unwrap_err();
        assert!(matches!(err, zklock::Error::InUse { .. }), "{err:?}");
        assert_eq!(a.list_children(&dir).await.unwrap(), [ours.name().to_owned()], "the first member untouched");
        assert!(Group::new(&a, &dir).unwrap().with_member_id("not-hex").is_err());
        ours.leave().await.unwrap();
    }

    async fn expired_member_is_lost_and_seen_leaving(hosts: &str) {
        let dir = unique_path("group-expiry");
        let observer = client(hosts).await;
        let doomed = client(hosts).await;
        let stays = client(hosts).await;
        let membership = Group::new(&doomed, &dir).unwrap().with_data("doomed").join().await.unwrap();
        let _stays = Group::new(&stays, &dir).unwrap().with_data("stays").join().await.unwrap();
        observer.sync(&dir).await.unwrap();
        let mut view = Group::new(&observer, &dir).unwrap().watch().await.unwrap();
        assert_eq!(data(view.members()), ["doomed", "stays"]);
        let lost = membership.lost();
        expire_session(hosts, &doomed).await;
        assert_expired(eventually("the member's lost signal", lost).await);
        assert!(membership.is_lost());
        assert_eq!(left(&next(&mut view).await).path, membership.path());
        assert_eq!(data(view.members()), ["stays"]);
        assert!(membership.leave().await.unwrap_err().is_terminal(), "leaving an expired session");
        // The observer's own session expiring ends its view with an error.
        let mut watch = tokio::spawn(async move { view.next().await });
        expire_session(hosts, &observer).await;
        let ended = eventually("the view to end", &mut watch).await.unwrap();
        assert!(ended.unwrap_err().is_terminal());
    }

    async fn cancelled_join_and_leave_leave_no_member(hosts: &str) {
        let dir = unique_path("group-cancel");
        let c = client(hosts).await;
        // The directory exists, so that the first create makes our node.
        c.create(&dir, b"", &PERSISTENT).await.unwrap();
        let group = Group::new(&c, &dir).unwrap().with_data("x");
        let none = |children: &[String]| children.is_empty();
        // Dropped before the first poll: nothing was sent.
        drop(group.join());
        assert!(children(&c, &dir).await.is_empty());
        // Dropped after one poll: the create is in flight; the delete follows it.
        {
            let mut join = Box::pin(group.join());
            assert!(futures::poll!(&mut join).is_pending());
        }
        await_children(&c, &dir, "the cancelled join to be undone", none).await;
        // A dropped leave still removes the node.
        let m = group.join().await.unwrap();
        assert_eq!(children(&c, &dir).await.len(), 1);
        {
            let mut leave = Box::pin(m.leave());
            let _ = futures::poll!(&mut leave);
        }
        await_children(&c, &dir, "the cancelled leave to remove our node", none).await;
        // A dropped membership too.
        drop(group.join().await.unwrap());
        await_children(&c, &dir, "the dropped membership to remove our node", none).await;
    }

    async fn lost_join_reply_makes_one_member(hosts: &str) {
        let dir = unique_path("group-lost-reply");
        let (proxy, c) = proxied_client(hosts).await;
        let observer = client(hosts).await;
        // The group directory exists, so the only create is the member's.
        observer.create(&dir, b"", &PERSISTENT).await.unwrap();
        let group = Group::new(&c, &dir).unwrap().with_data("once");
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let m = eventually("the join", group.join()).await.unwrap();
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        assert_eq!(look(&observer, &dir).await, ["once"], "exactly one member node");
        m.leave().await.unwrap();
        assert!(look(&observer, &dir).await.is_empty());
    }

    async fn view_catches_up_after_a_lost_read_and_a_cancelled_next(hosts: &str) {
        let dir = unique_path("group-lost-listing");
        let (proxy, watching) = proxied_client(hosts).await;
        let other = client(hosts).await;
        let group = Group::new(&other, &dir).unwrap();
        let first = group.clone().with_data("first").join().await.unwrap();
        // On an ensemble the two sessions may be on different members: catch ours up with the join first.
        watching.sync(&dir).await.unwrap();
        let mut view = Group::new(&watching, &dir).unwrap().watch().await.unwrap();
        assert_eq!(data(view.members()), ["first"]);
        // A `next` dropped while it waits loses nothing.
        {
            let mut waiting = Box::pin(view.next());
            assert!(futures::poll!(&mut waiting).is_pending());
        }
        // The read that follows the next change loses its reply, and the connection with it: the view reads the
        // group again once the connection is back.
        proxy.drop_reply_and_cut(&[opcode::GET_DATA]);
        let second = group.clone().with_data("second").join().await.unwrap();
        assert_eq!(data(&[joined(&next(&mut view).await).clone()]), ["second"]);
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        // Changes while the connection is down are found after it comes back.
        proxy.set_blackhole(true);
        first.leave().await.unwrap();
        let third = group.clone().with_data("third").join().await.unwrap();
        proxy.set_blackhole(false);
        let mut seen = Vec::new();
        while data(view.members()) != ["second", "third"] {
            seen.push(next(&mut view).await);
        }
        assert!(seen.iter().any(|e| matches!(e, MemberEvent::Left(m) if m.data == b"first")), "{seen:?}");
        assert!(seen.iter().any(|e| matches!(e, MemberEvent::Joined(m) if m.data == b"third")), "{seen:?}");
        drop((second, third));
    }
}

on_every_server! {
    async fn shallow_members_carry_their_identifier_in_the_name(hosts: &str) {
        let dir = unique_path("group-shallow");
        let c = client(hosts).await;
        let shallow = Group::new(&c, &dir).unwrap().with_layout(GroupLayout::Shallow);
        let a = shallow.clone().with_data("worker-a").join().await.unwrap();
        assert!(a.name().ends_with("-worker-a"), "{}", a.name());
        let b = Group::new(&c, &dir).unwrap().with_data("party b").join().await.unwrap();
        let members = Group::new(&c, &dir).unwrap().members().await.unwrap();
        let seen: Vec<_> = members.iter().map(|m| (m.layout, m.identifier(), String::from_utf8_lossy(&m.data).into_owned())).collect();
        assert_eq!(seen, [
            (GroupLayout::Shallow, Some("worker-a"), "worker-a".to_owned()),
            (GroupLayout::Party, None, "party b".to_owned()),
        ]);
        let found = zklock::inspect(&c, &dir).await.unwrap().unwrap();
        let kinds: Vec<NodeKind> = found.participants.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [NodeKind::ShallowGroupMember, NodeKind::GroupMember]);
        // An identifier that cannot be a node name is refused before anything is sent.
        let err = shallow.clone().with_data("a/b").join().await.unwrap_err();
        assert!(matches!(err, zklock::Error::InvalidPath { .. }), "{err:?}");
        drop((a, b));
        await_children(&c, &dir, "an empty group", |c| c.is_empty()).await;
    }

    async fn kazoo_party_and_zklock_group_see_each_other(hosts: &str) {
        let dir = unique_path("group-kazoo");
        let c = client(hosts).await;
        let mut view = Group::new(&c, &dir).unwrap().watch().await.unwrap();
        let mut kazoo = Peer::kazoo(&["party", hosts, &dir, "py-1"]).await;
        let kazoo_node = kazoo.expect("JOINED").await;
        let seen = next(&mut view).await;
        assert_eq!((joined(&seen).path.as_str(), joined(&seen).data.as_slice()), (kazoo_node.as_str(), &b"py-1"[..]));
        assert_eq!(joined(&seen).layout, GroupLayout::Party);

        let ours = Group::new(&c, &dir).unwrap().with_data("rs-1").join().await.unwrap();
        kazoo.send("await 2").await;
        assert_eq!(kazoo.expect("MEMBERS").await, r#"["py-1", "rs-1"]"#, "kazoo sees our member with its data");
        joined(&next(&mut view).await);
        assert_eq!(data(view.members()), ["py-1", "rs-1"]);

        ours.leave().await.unwrap();
        kazoo.send("await 1").await;
        assert_eq!(kazoo.expect("MEMBERS").await, r#"["py-1"]"#, "kazoo sees us leave");
        left(&next(&mut view).await);
        kazoo.send("leave").await;
        kazoo.expect("LEFT").await;
        assert_eq!(left(&next(&mut view).await).path, kazoo_node, "we see kazoo leave");
        kazoo.finish().await;
    }

    async fn kazoo_shallow_party_and_zklock_shallow_group_see_each_other(hosts: &str) {
        let dir = unique_path("group-kazoo-shallow");
        let c = client(hosts).await;
        let mut kazoo = Peer::kazoo(&["shallow-party", hosts, &dir, "py-1"]).await;
        let kazoo_node = kazoo.expect("JOINED").await;
        let ours = Group::new(Session::new(&c), &dir).unwrap().with_layout(GroupLayout::Shallow).with_data("rs-1").join().await.unwrap();
        kazoo.send("await 2").await;
        assert_eq!(kazoo.expect("MEMBERS").await, r#"["py-1", "rs-1"]"#, "kazoo reads our identifier from the name");
        let members = Group::new(&c, &dir).unwrap().members().await.unwrap();
        let seen: Vec<_> = members.iter().map(|m| (m.path.clone(), m.layout, m.identifier().map(str::to_owned))).collect();
        assert_eq!(seen, [
            (kazoo_node, GroupLayout::Shallow, Some("py-1".to_owned())),
            (ours.path().to_owned(), GroupLayout::Shallow, Some("rs-1".to_owned())),
        ]);
        ours.leave().await.unwrap();
        kazoo.send("await 1").await;
        assert_eq!(kazoo.expect("MEMBERS").await, r#"["py-1"]"#);
        kazoo.finish().await;
        await_children(&c, &dir, "an empty group", |c| c.is_empty()).await;
    }
}

/// A member whose client sits behind a dead proxy for longer than the session timeout: its node goes when the
/// server expires the session, and by the `LostPolicy` it hears of its loss while cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn member_cut_off_is_lost_before_its_session_ends() {
    let hosts = embedded().await;
    let dir = unique_path("group-cut-off");
    let proxy = Proxy::start(first_server(&hosts)).await.unwrap();
    let cut = client_with_timeout(&proxy.connect_string(), Duration::from_secs(4)).await;
    let observer = client(&hosts).await;
    let membership = Group::new(&cut, &dir).unwrap().join().await.unwrap();
    let mut view = Group::new(&observer, &dir).unwrap().watch().await.unwrap();
    assert_eq!(view.members().len(), 1);
    proxy.set_blackhole(true);
    let reason = eventually("the cut-off member's lost signal", membership.lost()).await;
    assert_eq!(reason, zklock::LostReason::Disconnected);
    assert_eq!(
        left(&next(&mut view).await).path,
        membership.path(),
        "then the server expires it"
    );
    proxy.set_blackhole(false);
}
