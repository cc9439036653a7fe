//! `zklock revoke`: a revoked holder's `zklock run` (or `zklock elect`) stops its command and exits 75, and the
//! next waiter takes over — by deletion, and by a revocation request (`--request`, Curator's protocol) that `run`
//! honours; what it says and its exit statuses. Real `zklock` processes against the shared real ZooKeeper and the
//! embedded server; the test waits for events (lines the commands print, child watches), never for time.

use zklock_testkit::unique_path;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

/// The holder's command: says it started, says `term` on SIGTERM (and ends), otherwise sleeps for long.
const HOLDER: &str = r#"trap 'echo term; exit 0' TERM; echo started; sleep 300 & wait"#;

/// `zklock <kind> --connect HOSTS PATH -- sh -c SCRIPT`, started.
fn start(kind: &str, hosts: &str, path: &str, script: &str) -> Running {
    Running::zklock(&[
        kind,
        "--connect",
        hosts,
        "--kill-after",
        "5",
        path,
        "--",
        "sh",
        "-c",
        script,
    ])
}

/// A holder running its command and a waiter queued behind it, on `path`: (holder, its lines, waiter, its lines,
/// the holder's node name, the waiter's node name).
async fn holder_and_waiter(
    kind: &str,
    hosts: &str,
    path: &str,
    admin: &Client,
) -> (Running, Running, String, String) {
    let mut holder = start(kind, hosts, path, HOLDER);
    assert_eq!(holder.line("the holder's command").await, "started");
    let waiter = start(kind, hosts, path, "echo second");
    // Sorted by sequence (the names end in it after the same-length uuid prefix): holder first.
    let mut names = await_children(admin, path, 2).await;
    names.sort_by_key(|name| name[name.len() - 10..].to_owned());
    let (first, second) = (names[0].clone(), names[1].clone());
    (holder, waiter, first, second)
}

/// `zklock revoke FLAGS PATH`, which must succeed: what it says.
async fn revoke(hosts: &str, flags: &[&str], path: &str) -> String {
    let mut args = vec!["revoke", "--connect", hosts];
    args.extend(flags);
    args.push(path);
    let out = output(&args).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        text(&out.stderr)
    );
    stdout
}

/// The revoked holder's (or leader's) command is stopped — it says `term` — and its `zklock` exits 75: what that
/// `zklock` said.
async fn stopped(mut holder: Running) -> String {
    assert_eq!(holder.line("the revoked command to be stopped").await, "term");
    let (status, stderr) = holder.finish().await;
    assert_eq!(status, Some(exit::LOST), "{stderr}");
    stderr
}

/// The waiter's (or next candidate's) command runs — it says `second` — and its `zklock` exits 0.
async fn runs_next(mut waiter: Running) {
    assert_eq!(waiter.line("the next command").await, "second");
    let (status, stderr) = waiter.finish().await;
    assert_eq!(status, Some(0), "{stderr}");
}

on_both_servers! {
    async fn revoke_stops_the_holders_run_with_exit_75_and_the_waiter_takes_over(hosts: &str) {
        let admin = client(hosts).await;
        let path = unique_path("cli-revoke");
        let (holder, waiter, holder_node, _) = holder_and_waiter("run", hosts, &path, &admin).await;

        let stdout = revoke(hosts, &[], &path).await;
        // Which node, and whose: the holder's role, session, fencing token and data (zklock run's description).
        assert!(stdout.starts_with(&format!("revoked {path}/{holder_node}: holder, session 0x")), "{stdout}");
        assert!(stdout.contains(&format!("pid={}", holder.pid())), "{stdout}");
        assert!(stdout.contains("fencing token "), "{stdout}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");

        let stderr = stopped(holder).await;
        assert!(stderr.contains("lost the lock"), "{stderr}");
        runs_next(waiter).await;
    }

    async fn a_revocation_request_is_honoured_by_run(hosts: &str) {
        let admin = client(hosts).await;
        let path = unique_path("cli-revoke-request");
        let (holder, waiter, holder_node, _) = holder_and_waiter("run", hosts, &path, &admin).await;

        let stdout = revoke(hosts, &["--request"], &path).await;
        assert!(stdout.starts_with(&format!("asked to give up {path}/{holder_node}: holder")), "{stdout}");

        let stderr = stopped(holder).await;
        assert!(stderr.contains(&format!("revocation of the lock on {path} requested")), "{stderr}");
        runs_next(waiter).await;
    }

    async fn revoking_the_leader_stops_elect_and_the_next_candidate_leads(hosts: &str) {
        let admin = client(hosts).await;
        let path = unique_path("cli-revoke-elect");
        let (leader, next, leader_node, _) = holder_and_waiter("elect", hosts, &path, &admin).await;
        let stdout = revoke(hosts, &[], &path).await;
        assert!(stdout.starts_with(&format!("revoked {path}/{leader_node}: leader")), "{stdout}");
        stopped(leader).await;
        runs_next(next).await;
    }

    async fn node_names_one_waiter_and_dry_run_changes_nothing(hosts: &str) {
        let admin = client(hosts).await;
        let path = unique_path("cli-revoke-node");
        let (holder, waiter, holder_node, waiter_node) =
            holder_and_waiter("run", hosts, &path, &admin).await;

        let out = output(&["revoke", "--dry-run", "--connect", hosts, &path]).await;
        assert_eq!(out.status.code(), Some(0));
        assert!(text(&out.stdout).starts_with(&format!("would revoke {path}/{holder_node}: holder")));
        let out = output(&["revoke", "--dry-run", "--request", "--connect", hosts, &path]).await;
        assert!(text(&out.stdout).starts_with(&format!("would ask to give up {path}/{holder_node}")));
        assert_eq!(admin.list_children(&path).await.unwrap().len(), 2, "--dry-run deletes nothing");
        let (data, _) = admin.get_data(&format!("{path}/{holder_node}")).await.unwrap();
        assert_ne!(data, b"__REVOKE__", "--dry-run asks nothing");

        let out = output(&["revoke", "--connect", hosts, "--node", "_c_nobody-lock-0000000007", &path]).await;
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("is not a participant"), "{}", text(&out.stderr));

        // The waiter, by name: its run fails (its node was deleted), the holder goes on.
        let out = output(&["revoke", "--connect", hosts, "--node", &waiter_node, &path]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("revoked {path}/{waiter_node}: waiting")));
        let (status, stderr) = waiter.finish().await;
        assert_eq!(status, Some(exit::UNAVAILABLE), "{stderr}");
        assert!(stderr.contains("was deleted"), "{stderr}");
        assert_eq!(await_children(&admin, &path, 1).await, vec![holder_node.clone()]);
        // By full path too.
        let out = output(&["revoke", "--connect", hosts, "--node", &format!("{path}/{holder_node}"), &path]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        stopped(holder).await;
    }

    async fn nothing_to_revoke_is_1_and_other_recipes_are_usage_errors(hosts: &str) {
        let admin = client(hosts).await;
        let path = unique_path("cli-revoke-nothing");
        let revoke = |path: String| {
            let hosts = hosts.to_owned();
            async move { output(&["revoke", "--connect", &hosts, &path]).await }
        };
        let out = revoke(path.clone()).await;
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains("does not exist"), "{}", text(&out.stderr));
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        admin.create(&path, b"", &persistent).await.unwrap();
        let out = revoke(path.clone()).await;
        assert_eq!(out.status.code(), Some(1));
        assert!(text(&out.stderr).contains("no contenders"), "{}", text(&out.stderr));
        // A queue is not revocable.
        let queue = zklock::Queue::new(&admin, &format!("{path}/queue")).unwrap();
        queue.put(b"item").await.unwrap();
        let out = revoke(format!("{path}/queue")).await;
        assert_eq!(out.status.code(), Some(exit::USAGE));
        assert!(text(&out.stderr).contains("is a queue"), "{}", text(&out.stderr));
        let out = revoke("relative/path".to_owned()).await;
        assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("invalid path"), "{}", text(&out.stderr));
        // Exit statuses in --help.
        let help = text(&output(&["revoke", "--help"]).await.stdout);
        assert!(help.contains("Exit status:\n  0   revoked"), "{help}");
        assert!(help.contains("\n  64  usage error"), "{help}");
        assert!(help.contains("\n  69  ZooKeeper cannot be reached"), "{help}");
    }
}
