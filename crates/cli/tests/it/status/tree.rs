//! `zklock status -r PATH`: every recipe under a path in one overview (issue 33.15).

use zklock_testkit::unique_path;

use super::{lease, lock};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recipe_under_a_path_in_one_overview() {
    for hosts in [zookeeper().await, zklock_testkit::hosts::embedded().await] {
        let (a, b) = (client(&hosts).await, client(&hosts).await);
        let root = unique_path("cli-status-tree");
        // A held lock with one waiting, a semaphore lease deeper down, a queue with two items; the walk stops at
        // each recipe (the semaphore's `leases` and `locks` are not listed on their own).
        let held = lock(&a, &format!("{root}/locks/db"), "holder").await.unwrap();
        let waiter = {
            let (b, path) = (b.clone(), format!("{root}/locks/db"));
            tokio::spawn(async move { lock(&b, &path, "waits").await })
        };
        await_children(&a, &format!("{root}/locks/db"), 2).await;
        let leased = lease(&a, &format!("{root}/jobs/nightly/slots"), "slot")
            .await
            .unwrap();
        let queue = zklock::Queue::new(&a, &format!("{root}/queues/mail")).unwrap();
        queue.put(b"one").await.unwrap();
        queue.put(b"two").await.unwrap();

        let out = output(&["status", "-c", &hosts, "-r", &root]).await;
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 3, "{stdout}");
        assert!(lines[0].starts_with(&format!(
            "{root}/jobs/nightly/slots: a semaphore's directory, 1 holding"
        )));
        assert!(lines[1].starts_with(&format!(
            "{root}/locks/db: a lock's directory, 1 holding (the oldest for "
        )));
        assert!(lines[1].ends_with(", 1 waiting"), "{stdout}");
        assert_eq!(
            lines[2],
            format!("{root}/queues/mail: a queue, 2 item(s), 0 claimed")
        );

        let out = output(&["status", "-c", &hosts, "-r", "--json", &root]).await;
        let reports: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let recipes: Vec<&str> = reports
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["recipe"].as_str().unwrap())
            .collect();
        assert_eq!(recipes, ["semaphore", "lock", "queue"], "{reports}");
        assert_eq!(reports[1]["waiters"].as_array().unwrap().len(), 1, "{reports}");

        // --check: held while anything under it is held; free once nothing is (the queue is never held).
        let check = ["status", "-c", &hosts, "-r", "--check", &root];
        assert_eq!(output(&check).await.status.code(), Some(0));
        held.release().await.unwrap();
        waiter.await.unwrap().unwrap().release().await.unwrap();
        leased.release().await.unwrap();
        assert_eq!(output(&check).await.status.code(), Some(1));
        let out = output(&["status", "-c", &hosts, "-r", &format!("{root}/nothing")]).await;
        assert_eq!(text(&out.stdout), format!("{root}/nothing: no recipe under it\n"));
    }
}
