//! Issue 33, items 1 and 6: what `zklock run` stores in its lock node. A command line too long for ZooKeeper is
//! stored cut short (never a hang, never "timed out" for a free lock); a create the server refuses is reported as
//! such; and the credentials of the common command-line forms are masked.

use zklock_testkit::{unique_path, ServerConfig, ZooKeeper};

use crate::support::*;

/// What zklock stores at most (`supervise::MAX_DESCRIPTION`).
const STORED_AT_MOST: usize = 4096;

/// The lock node's data of `zklock run -c HOSTS FLAGS PATH -- sh -c SCRIPT sh ARGS…`, read while it holds (its
/// command prints its node, then waits for a line), and what `zklock status --json PATH` said then.
async fn held_data(hosts: &str, flags: &[&str], args: &[&str]) -> (String, String) {
    let path = unique_path("cli-run-description");
    let mut argv = vec!["run", "-c", hosts];
    argv.extend_from_slice(flags);
    argv.extend_from_slice(&[&path, "--", "sh", "-c", "echo \"$ZKLOCK_NODE\"; read -r _", "sh"]);
    argv.extend_from_slice(args);
    let mut run = Running::zklock(&argv);
    let Some(node) = run.next_line("the command to print its node").await else {
        let (code, stderr) = run.finish().await;
        panic!("{flags:?}: zklock exited ({code:?}) before its command started: {stderr}");
    };
    let (data, _) = client(hosts).await.get_data(&node).await.expect("read the node");
    let status = output(&["status", "-c", hosts, "--json", &path]).await;
    assert_exit(&status, 0, "zklock status");
    let (code, stderr) = run.end("done").await;
    assert_eq!(code, Some(0), "{flags:?}: {stderr}");
    let data = String::from_utf8(data).expect("the stored description is UTF-8");
    (data, text(&status.stdout))
}

// Item 1: ten arguments of 108,000 bytes (under the kernel's 128 KiB for one argument) of a 3-byte character: more
// than ZooKeeper's default jute.maxbuffer (1 MiB) in all, and cut anywhere but at a character boundary two times
// out of three.
on_both_servers! {
    async fn a_command_line_too_long_for_zookeeper_is_stored_cut_short(hosts: &str) {
        let long = "€".repeat(36_000);
        let args = vec![long.as_str(); 10];
        for flags in [&["-w", "2"][..], &["-n"], &[]] {
            let (data, _) = held_data(hosts, flags, &args).await;
            assert!(data.len() <= STORED_AT_MOST, "{flags:?}: {} bytes stored", data.len());
            assert!(data.starts_with("host=") && data.contains(" cmd=sh -c echo "), "{flags:?}: {data}");
            assert!(data.contains(" sh €€€"), "{flags:?}: the start of the arguments is kept: {data}");
            let marker = data.rfind(" ...[truncated: ").expect("a marker says the line was cut");
            assert!(data.ends_with(" bytes in all]"), "{flags:?}: {}", &data[marker..]);
            assert!(!data.contains('\u{FFFD}'), "{flags:?}: a character was cut: {data}");
        }
    }
}

/// A create `hosts` refuses for its size (its jute.maxbuffer is 1 KiB; the description, within what zklock
/// stores, is 2 KB): `run` says so, with exit 69, whether it waits or not — never a hang, never "timed out".
async fn a_create_refused_for_its_size_is_reported(hosts: &str) {
    let note = "x".repeat(2000);
    for flags in [&["-w", "5"][..], &["-n"], &[]] {
        let path = unique_path("cli-run-refused");
        let mut args = vec!["run", "-c", hosts, "--describe", &note];
        args.extend_from_slice(flags);
        args.extend_from_slice(&[&path, "--", "true"]);
        let stderr = fails_with(&mut zklock(&args), exit::UNAVAILABLE, "jute.maxbuffer").await;
        assert!(
            stderr.contains(&format!("cannot lock {path}: ZooKeeper closed the connection")),
            "{flags:?}: {stderr}"
        );
        assert!(!stderr.contains("timed out"), "{flags:?}: {stderr}");
        // Negative control: the same run with a short description is served.
        let out = output(&["run", "-c", hosts, "--describe", "short", &path, "--", "true"]).await;
        assert_exit(&out, 0, "a run with a short description");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_refused_for_its_size_is_reported_by_zookeeper() {
    let zookeeper = tokio::task::block_in_place(|| {
        ZooKeeper::builder()
            .system_property("jute.maxbuffer", "1024")
            .start()
            .expect("ZooKeeper with a jute.maxbuffer of 1 KiB")
    });
    a_create_refused_for_its_size_is_reported(&zookeeper.connect_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_refused_for_its_size_is_reported_by_the_embedded_server() {
    let config = ServerConfig {
        max_frame_len: 1024,
        ..ServerConfig::default()
    };
    let hosts = tokio::task::block_in_place(|| zklock_testkit::start_embedded(config));
    a_create_refused_for_its_size_is_reported(&hosts).await;
}

// Item 6: each form of credential of the rule table in `redact.rs` that the issue names, masked in the node and in
// `zklock status`; the non-secret `-p`/`-P` of other commands kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_command_line_masks_attached_and_following_secrets() {
    let hosts = zookeeper().await;
    let args = [
        "mysql",
        "-uroot",
        "-pS3cret1",
        "-P",
        "3306",
        "db",
        "--password",
        "--token",
        "S3cret2",
        "--pass",
        "S3cret3",
        "|",
        "sqlcmd",
        "-P",
        "S3cret4",
        "|",
        "mkdir",
        "-p",
        "/srv/x",
    ];
    let (data, status) = held_data(&hosts, &[], &args).await;
    let masked = "sh mysql -uroot -p*** -P 3306 db --password --token *** --pass *** | sqlcmd -P *** | mkdir -p /srv/x";
    assert!(data.ends_with(masked), "{data}");
    assert!(status.contains(masked), "{status}");
    for secret in ["S3cret1", "S3cret2", "S3cret3", "S3cret4"] {
        assert!(
            !data.contains(secret) && !status.contains(secret),
            "{secret}: {data}\n{status}"
        );
    }
}
