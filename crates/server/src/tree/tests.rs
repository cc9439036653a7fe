//! The tree's own tests: a fresh tree, the stats creates and deletes keep, what a read depends on.

use super::*;

#[test]
fn fresh_tree_matches_zookeeper() {
    let t = DataTree::new();
    let stat = |p: &str| t.get(p).unwrap().stat();
    assert_eq!((stat("/").cversion, stat("/").num_children), (-1, 1));
    assert_eq!(
        (stat("/zookeeper").cversion, stat("/zookeeper").num_children),
        (-2, 2)
    );
    assert_eq!(stat("/zookeeper/config").aversion, -1);
}

#[test]
fn create_delete_maintain_parent_stat() {
    let mut t = DataTree::new();
    let mut ev = vec![];
    t.create(
        "/a",
        Some(b"x".to_vec()),
        Acl::open_unsafe(),
        0,
        1,
        5,
        100,
        &mut ev,
    );
    assert_eq!(
        ev,
        vec![Event::Created("/a".into()), Event::ChildrenChanged("/".into())]
    );
    let root = t.get("/").unwrap().stat();
    assert_eq!(
        (root.cversion, root.pzxid, root.num_children),
        (0, 5, 2),
        "2 * 1 create - 2 children"
    );
    t.create("/a/e", None, Acl::open_unsafe(), 77, 1, 6, 100, &mut ev);
    assert_eq!(t.ephemerals_of(77), vec!["/a/e".to_string()]);
    t.delete("/a/e", 7, &mut ev);
    let a = t.get("/a").unwrap().stat();
    assert_eq!(
        (a.cversion, a.pzxid, a.num_children),
        (2, 7, 0),
        "the delete shows in the reported cversion"
    );
    assert_eq!(t.get("/a").unwrap().cversion, 1, "but not in the create counter");
    assert!(t.ephemerals_of(77).is_empty());
    assert_eq!(t.descendant_count("/"), 4);
}

#[test]
fn changed_at_tracks_what_a_read_can_see() {
    let mut t = DataTree::new();
    let mut ev = vec![];
    t.create("/a", None, Acl::open_unsafe(), 0, 1, 3, 100, &mut ev);
    t.create("/b", None, Acl::open_unsafe(), 0, 2, 4, 100, &mut ev);
    assert_eq!(
        (t.changed_at("/a"), t.changed_at("/b"), t.changed_at("/")),
        (3, 4, 4)
    );
    t.set_data("/a", Some(vec![1]), 1, 6, 100, &mut ev);
    assert_eq!(
        (t.changed_at("/a"), t.changed_at("/b")),
        (6, 4),
        "setData moves only its node"
    );
    t.set_acl("/b", Acl::open_unsafe(), 1, 7);
    assert_eq!(t.changed_at("/b"), 7, "setACL counts (a read reveals the ACL)");
    assert_eq!(
        t.changed_at("/b/x/y"),
        7,
        "a missing node depends on its nearest ancestor"
    );
    t.delete("/b", 8, &mut ev);
    assert_eq!(t.changed_at("/b"), 8, "the parent records the delete");
    assert_eq!(t.changed_at("no-slash"), 8);
    let mut restored = TreeBuilder::with_capacity(t.node_count());
    for n in t.nodes() {
        restored.push(n.clone());
    }
    let restored = restored.finish();
    assert_eq!(restored.changed_at("/a"), 6, "rebuilt from the stat zxids");
}
