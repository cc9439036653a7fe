//! Shutting down: `Session::close` deletes every node of ours at once, and what a closed session refuses.

use zklock::zookeeper_client::Client;
use zklock::{Error, Group, LeaderElection, LostReason, Mutex, Session};
use zklock_testkit::unique_path;

use crate::on_every_server;
use crate::support::*;

/// Every node under `root` (recursively) whose ephemeral owner is `session`, as `admin` sees it at the server.
async fn nodes_of(admin: &Client, root: &str, session: i64) -> Vec<String> {
    // The other session's writes and its close went through its own member of an ensemble: catch up first.
    admin.sync(root).await.unwrap();
    let mut ours = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for name in children(admin, &dir).await {
            let path = format!("{dir}/{name}");
            if let Some(stat) = admin.check_stat(&path).await.unwrap() {
                if stat.ephemeral_owner == session {
                    ours.push(path.clone());
                }
                dirs.push(path);
            }
        }
    }
    ours.sort();
    ours
}

on_every_server! {
    // After `close` returns, no node of our session is left at the server (looked at with another session at once,
    // no waiting): two held guards, an acquire waiting in a queue and a group membership. The same look finds all
    // four before the close (the checker's negative control). Held guards report `ClientClosed`, the waiting
    // acquire fails instead of waiting on, and the closed session refuses new nodes.
    async fn close_leaves_no_node_of_ours(hosts: &str) {
        let root = unique_path("close");
        let admin = client(hosts).await;
        let other = client(hosts).await;
        let zk = client(hosts).await;
        let session = Session::new(&zk);
        let ours = zk.session_id().0;

        let held = Mutex::new(&session, &format!("{root}/held")).unwrap().lock().await.unwrap();
        let leadership = LeaderElection::new(&session, &format!("{root}/election"))
            .unwrap()
            .campaign()
            .await
            .unwrap();
        let membership = Group::new(&session, &format!("{root}/group")).unwrap().join().await.unwrap();
        let busy = format!("{root}/busy");
        let blocker = Mutex::new(&other, &busy).unwrap().lock().await.unwrap();
        let waiting = {
            let mutex = Mutex::new(&session, &busy).unwrap();
            tokio::spawn(async move { mutex.lock().await.map(drop) })
        };
        await_children(&admin, &busy, "our waiting node", |c| c.len() == 2).await;
        assert_eq!(nodes_of(&admin, &root, ours).await.len(), 4, "the checker sees our nodes");

        session.clone().close().await.unwrap();
        assert_eq!(nodes_of(&admin, &root, ours).await, Vec::<String>::new(), "no node of ours left");
        assert_eq!(children(&admin, &busy).await.len(), 1, "the other session's holder stays");

        assert_eq!(eventually("the loss", held.lost()).await, LostReason::ClientClosed);
        assert_eq!(eventually("the loss", leadership.lost()).await, LostReason::ClientClosed);
        assert_eq!(eventually("the loss", membership.lost()).await, LostReason::ClientClosed);
        assert!(eventually("the waiting acquire", waiting).await.unwrap().is_err(), "it does not wait on");
        assert_eq!(held.release().await, Err(Error::Lost(LostReason::ClientClosed)));

        let refused = Mutex::new(&session, &format!("{root}/later")).unwrap().try_lock().await;
        assert_eq!(refused.unwrap_err(), Error::Closed);
        assert_eq!(children(&admin, &format!("{root}/later")).await, Vec::<String>::new());
        blocker.release().await.unwrap();
    }
}
