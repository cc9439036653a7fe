//! `zklock demo`: the ten-worker FIFO hand-off with its self-checked summary.

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_on_real_zookeeper_passes_its_own_checks() {
    let hosts = zookeeper().await;
    let out = output(&["demo", "--connect", &hosts, "--workers", "10", "--hold", "30"]).await;
    assert_exit(&out, 0, "zklock demo");
    let stdout = text(&out.stdout);
    for needle in [
        "FIFO order:                 ok",
        "no overlapping holders:     ok",
        "one wake-up per hand-off:   ok",
        "result:                     PASS",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert_eq!(stdout.matches(" acquired ").count(), 10);
    assert_eq!(stdout.matches(" released").count(), 10);
    assert_eq!(stdout.matches("connected, session 0x").count(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_without_connect_runs_on_the_embedded_server() {
    let out = output(&["demo", "--workers", "10", "--hold", "20"]).await;
    assert_exit(&out, 0, "zklock demo");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("on embedded server 127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("result:                     PASS"), "{stdout}");
    assert_eq!(stdout.matches(" acquired ").count(), 10);
}
