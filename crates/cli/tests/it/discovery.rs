//! `zklock register` and `zklock discover`: an instance registered while its command runs, in curator-x-discovery's
//! layout, and the list of a service's instances, once or on every change.

use nix::sys::signal::Signal;
use zklock_testkit::hosts::embedded;
use zklock_testkit::unique_path;

use crate::support::*;

/// The instance lines of one look of `discover --watch` (after its `N instance(s) of PATH` line).
async fn look(discover: &mut Running) -> Vec<String> {
    let head = discover.line("a look's first line").await;
    let count: usize = head.split_whitespace().next().unwrap().parse().expect(&head);
    let mut lines = Vec::new();
    for _ in 0..count {
        lines.push(discover.line("an instance line").await);
    }
    lines
}

/// The instance is there while the command runs, with Curator's JSON; gone after; the command's status is ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_keeps_the_instance_while_the_command_runs() {
    for hosts in [embedded().await, zookeeper().await] {
        let service = format!("{}/api", unique_path("cli-discovery"));
        let mut discover = Running::zklock(&["discover", "--connect", &hosts, "--watch", &service]);
        assert_eq!(look(&mut discover).await, Vec::<String>::new());
        let mut register = Running::zklock(&[
            "register",
            "--connect",
            &hosts,
            "--address",
            "10.0.0.5:8080",
            "--id",
            "host-a",
            "--payload",
            r#"{"zone":"a"}"#,
            &service,
            "--",
            "sh",
            "-c",
            r#"echo "id=$ZKLOCK_SERVICE_ID"; read x; exit 7"#,
        ]);
        assert_eq!(register.line("the command's output").await, "id=host-a");
        assert_eq!(
            look(&mut discover).await,
            [r#"host-a 10.0.0.5:8080 {"zone":"a"}"#]
        );
        let out = output(&["discover", "--connect", &hosts, "--json", &service]).await;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json[0]["name"], "api");
        assert_eq!(json[0]["id"], "host-a");
        assert_eq!(json[0]["serviceType"], "DYNAMIC");
        assert!(json[0]["registrationTimeUTC"].is_u64());
        // `status` knows a service's registrations, and --check counts them as held.
        let out = output(&["status", "--connect", &hosts, &service]).await;
        assert!(
            text(&out.stdout).contains("service with 1 registered instance(s)"),
            "{}",
            text(&out.stdout)
        );
        assert_exit(
            &output(&["status", "--connect", &hosts, "--check", &service]).await,
            0,
            "registered",
        );
        let (code, stderr) = register.end("go").await;
        assert_eq!(code, Some(7), "{stderr}");
        assert_exit(
            &output(&["status", "--connect", &hosts, "--check", &service]).await,
            1,
            "unregistered",
        );
        assert_eq!(look(&mut discover).await, Vec::<String>::new(), "unregistered");
        discover.signal(Signal::SIGTERM);
        assert_eq!(discover.finish().await.0, Some(0));
    }
}

/// Without a command the instance stays until SIGTERM (exit 0); a wrong --address is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_without_a_command_ends_on_sigterm() {
    let hosts = embedded().await;
    let service = format!("{}/db", unique_path("cli-discovery"));
    let mut discover = Running::zklock(&["discover", "--connect", &hosts, "--watch", &service]);
    assert!(look(&mut discover).await.is_empty());
    let register = Running::zklock(&[
        "register",
        "--connect",
        &hosts,
        "--address",
        "db1:5432",
        "--id",
        "db1",
        &service,
    ]);
    assert_eq!(look(&mut discover).await, ["db1 db1:5432"]);
    register.signal(Signal::SIGTERM);
    let (code, stderr) = register.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(look(&mut discover).await.is_empty());
    discover.signal(Signal::SIGINT);
    assert_eq!(discover.finish().await.0, Some(0));
    let out = output(&["register", "--connect", &hosts, "--address", "nope", &service]).await;
    assert_exit(&out, exit::USAGE, "an --address without a port");
    let out = output(&[
        "register",
        "--connect",
        &hosts,
        "--address",
        "h:1",
        "--payload",
        "{",
        &service,
    ])
    .await;
    assert_exit(&out, exit::USAGE, "a --payload that is no JSON");
}
