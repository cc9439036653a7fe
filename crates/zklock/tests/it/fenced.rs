//! Fenced ZooKeeper writes: a transaction from a held guard commits only while its node exists at the server.

use zklock::zookeeper_client as zk;
use zklock::{Error, Mutex};
use zklock_testkit::{expire_session, unique_path};

use crate::on_every_server;
use crate::support::*;

async fn data(client: &zk::Client, path: &str) -> Vec<u8> {
    client.sync(path).await.unwrap();
    client.get_data(path).await.unwrap().0
}

on_every_server! {
    async fn writes_commit_while_held_and_never_after_the_node_is_gone(hosts: &str) {
        let dir = unique_path("fenced");
        let target = format!("{dir}-config");
        let client = client(hosts).await;
        client.create(&target, b"v0", &PERSISTENT).await.unwrap();
        let mutex = Mutex::new(&client, &dir).unwrap();
        let guard = mutex.lock().await.unwrap();

        // Held: every operation commits, in one transaction.
        let mut writes = guard.fenced_writes();
        writes.set_data(&target, b"v1", None).unwrap();
        writes.create(&format!("{target}/child"), b"", &PERSISTENT).unwrap();
        let results = writes.commit().await.unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(data(&client, &target).await, b"v1");

        // A failing operation writes nothing, the others included.
        let mut writes = guard.fenced_writes();
        writes.set_data(&target, b"v2", None).unwrap();
        writes.delete(&format!("{target}/missing"), None).unwrap();
        // The error names the operation that failed and its path.
        let failed = writes.commit().await.unwrap_err();
        let missing = format!("{target}/missing");
        assert!(
            matches!(&failed, Error::ZooKeeper { op: "delete", path, source: zk::Error::NoNode } if *path == missing),
            "{failed:?}"
        );
        assert_eq!(data(&client, &target).await, b"v1");

        // Our node deleted by somebody else (an operator revoking us): the server refuses, whatever we believe.
        let admin = crate::support::client(hosts).await;
        admin.delete(guard.path(), None).await.unwrap();
        let mut writes = guard.fenced_writes();
        writes.set_data(&target, b"stale", None).unwrap();
        assert_eq!(writes.commit().await.unwrap_err(), Error::LockLost { path: guard.path().to_owned() });
        assert_eq!(data(&client, &target).await, b"v1", "a lost holder wrote");
    }

    async fn a_holder_whose_session_expired_cannot_commit(hosts: &str) {
        let dir = unique_path("fenced-expiry");
        let target = format!("{dir}-config");
        let admin = client(hosts).await;
        admin.create(&target, b"v0", &PERSISTENT).await.unwrap();
        // The first holder's session expires while it holds (as after a pause longer than the session timeout).
        let stale_client = client(hosts).await;
        let stale = Mutex::new(&stale_client, &dir).unwrap().lock().await.unwrap();
        let mut writes = stale.fenced_writes();
        writes.set_data(&target, b"stale", None).unwrap();
        expire_session(hosts, &stale_client).await;
        // Somebody else holds the lock now and writes under it.
        let fresh_client = client(hosts).await;
        let fresh = eventually("the next holder", Mutex::new(&fresh_client, &dir).unwrap().lock()).await.unwrap();
        let mut fresh_writes = fresh.fenced_writes();
        fresh_writes.set_data(&target, b"fresh", None).unwrap();
        fresh_writes.commit().await.unwrap();
        // The stale holder's transaction, prepared while it held, is refused.
        let err = writes.commit().await.unwrap_err();
        assert!(matches!(err, Error::SessionExpired | Error::LockLost { .. }), "{err:?}");
        assert_eq!(data(&admin, &target).await, b"fresh", "the expired holder overwrote the new holder's write");
    }
}

on_every_server! {
    async fn a_commit_whose_reply_is_lost_is_reported_and_not_retried(hosts: &str) {
        let dir = unique_path("fenced-lost-reply");
        let target = format!("{dir}-config");
        let (proxy, client) = proxied_client(hosts).await;
        client.create(&target, b"v0", &PERSISTENT).await.unwrap();
        let guard = Mutex::new(&client, &dir).unwrap().lock().await.unwrap();
        let mut writes = guard.fenced_writes();
        writes.set_data(&target, b"v1", None).unwrap();
        proxy.drop_reply_and_cut(&[zklock_testkit::opcode::MULTI]);
        assert_eq!(writes.commit().await.unwrap_err(), Error::ConnectionLoss { attempts: 1 });
        assert_eq!(proxy.lost_replies(), 1, "the fault was injected");
        // The transaction was applied once: the outcome was unknown to us, and it was not sent again.
        let observer = crate::support::client(hosts).await;
        observer.sync(&target).await.unwrap();
        let (value, stat) = observer.get_data(&target).await.unwrap();
        assert_eq!((value.as_slice(), stat.version), (&b"v1"[..], 1));
    }
}
