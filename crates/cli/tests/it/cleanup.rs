//! Leaving nothing behind: `zklock reap` removes the empty recipe directories under a prefix — and only those — and
//! `zklock demo` removes its directories when it is done. Against the shared real ZooKeeper and the embedded
//! server. (That lock directories are container nodes the server deletes by itself is tested in the library's
//! `containers` tests; here directories are made by hand as persistent nodes, as an older zklock, another tool or a
//! server without containers leaves them.)

use zklock_testkit::unique_path;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

async fn mkdir(client: &Client, path: &str, data: &[u8]) {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create(path, data, &persistent).await.unwrap();
}

/// A persistent directory that has had a child (the child made and deleted): what a used lock directory looks
/// like once its contenders are gone.
async fn used_dir(client: &Client, path: &str) {
    mkdir(client, path, b"").await;
    let child = format!("{path}/gone");
    mkdir(client, &child, b"").await;
    client.delete(&child, None).await.unwrap();
}

async fn exists(client: &Client, path: &str) -> bool {
    client.check_stat(path).await.unwrap().is_some()
}

on_both_servers! {
    async fn reap_removes_only_empty_directories(hosts: &str) {
        let (admin, holder) = (client(hosts).await, client(hosts).await);
        let root = unique_path("cli-reap");
        mkdir(&admin, &root, b"").await;
        // To go: an emptied directory, and a chain of them (the parents go once their children have).
        let emptied = format!("{root}/emptied");
        used_dir(&admin, &emptied).await;
        let (a, b, c) = (format!("{root}/a"), format!("{root}/a/b"), format!("{root}/a/b/c"));
        mkdir(&admin, &a, b"").await;
        mkdir(&admin, &b, b"").await;
        used_dir(&admin, &c).await;
        // To stay: a directory never used, one with data, one with a child, a held lock's directory.
        let never_used = format!("{root}/never-used");
        mkdir(&admin, &never_used, b"").await;
        let with_data = format!("{root}/with-data");
        used_dir(&admin, &with_data).await;
        admin.set_data(&with_data, b"config", None).await.unwrap();
        let busy = format!("{root}/busy");
        mkdir(&admin, &busy, b"").await;
        let leaf = format!("{busy}/leaf");
        mkdir(&admin, &leaf, b"").await;
        let held = format!("{root}/held");
        used_dir(&admin, &held).await;
        let guard = zklock::Mutex::new(&holder, &held).unwrap().lock().await.unwrap();

        let removed = vec![
            format!("removed {emptied}"),
            format!("removed {c}"),
            format!("removed {b}"),
            format!("removed {a}"),
        ];
        let listed = |out: &std::process::Output| {
            let mut lines: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let mut expected = removed.clone();
        expected.sort();
        let out = output(&["reap", "--dry-run", "--connect", hosts, &root]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let would: Vec<String> = expected.iter().map(|l| l.replacen("removed", "would remove", 1)).collect();
        assert_eq!(listed(&out), would);
        assert!(exists(&admin, &c).await && exists(&admin, &emptied).await, "--dry-run removes nothing");

        let out = output(&["reap", "--connect", hosts, &root]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(listed(&out), expected);
        // Depth first: a child is listed before its parent.
        let stdout = text(&out.stdout);
        let at = |wanted: &str| stdout.lines().position(|line| line == wanted).unwrap();
        assert!(at(&removed[1]) < at(&removed[2]) && at(&removed[2]) < at(&removed[3]), "{stdout}");
        for gone in [&emptied, &a, &b, &c] {
            assert!(!exists(&admin, gone).await, "{gone} was removed");
        }
        for kept in [&root, &never_used, &with_data, &busy, &leaf, &held, &guard.path().to_owned()] {
            assert!(exists(&admin, kept).await, "{kept} stays");
        }
        assert!(!guard.is_lost());

        // Nothing more to do now; once the lock is released its directory goes too (made by hand, it is a
        // persistent node: no server deletes it by itself).
        let out = output(&["reap", "--connect", hosts, &root]).await;
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stdout).trim(), format!("nothing to remove: no empty directory under {root}"));
        guard.release().await.unwrap();
        let out = output(&["reap", "--connect", hosts, &held]).await;
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stdout).trim(), format!("removed {held}"));
        assert!(!exists(&admin, &held).await);

        // A path that does not exist has nothing to remove; a bad one is a usage error.
        let out = output(&["reap", "--connect", hosts, &format!("{root}/nowhere")]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let out = output(&["reap", "--connect", hosts, "no-slash"]).await;
        assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
    }

    async fn the_demo_leaves_nothing_behind(hosts: &str) {
        let admin = client(hosts).await;
        // A --path that does not exist: the demo makes it, with its parent, and removes all of it.
        let top = unique_path("cli-demo-clean");
        let path = format!("{top}/locks");
        let out = output(&["demo", "--connect", hosts, "--workers", "3", "--hold", "10", "--path", &path]).await;
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "stdout: {stdout}\nstderr: {}", text(&out.stderr));
        assert!(stdout.contains("result:                     PASS"), "{stdout}");
        assert!(stdout.contains(&format!("cleaned up: removed {path}/run-")), "{stdout}");
        assert!(stdout.contains(&format!(", {path}, {top}\n")), "{stdout}");
        assert!(!exists(&admin, &top).await, "the demo left {top} behind");

        // A --path that existed before stays, with whatever else is in it; only the demo's run goes.
        let mine = unique_path("cli-demo-keep");
        mkdir(&admin, &mine, b"mine").await;
        mkdir(&admin, &format!("{mine}/other"), b"").await;
        let out = output(&["demo", "--connect", hosts, "--workers", "2", "--hold", "10", "--path", &mine]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mut children = admin.list_children(&mine).await.unwrap();
        children.sort();
        assert_eq!(children, vec!["other".to_owned()]);
        assert_eq!(admin.get_data(&mine).await.unwrap().0, b"mine");
    }
}
