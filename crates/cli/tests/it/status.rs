//! `zklock status`: holder and queue in order.

use zklock::Mutex;
use zklock_testkit::unique_path;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_holder_and_queue_in_order() {
    let hosts = zookeeper().await;
    let path = unique_path("cli-status");
    let out = output(&["status", "--connect", &hosts, &path]).await;
    assert!(text(&out.stdout).contains("free"), "{}", text(&out.stdout));
    let (a, b) = (client(&hosts).await, client(&hosts).await);
    let guard = Mutex::new(&a, &path).unwrap().with_data("first holder").lock().await.unwrap();
    let waiter = {
        let path = path.clone();
        tokio::spawn(async move { Mutex::new(&b, &path).unwrap().with_data("second in line").lock().await.map(|_| ()) })
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
    assert!(lines[1].contains("holder") && lines[1].contains("first holder"), "{stdout}");
    assert!(lines[1].contains(&format!("0x{:x}", a.session_id().0)), "{stdout}");
    assert!(lines[2].contains("waiting") && lines[2].contains("second in line"), "{stdout}");
    guard.release().await.unwrap();
    waiter.await.unwrap().unwrap();
}
