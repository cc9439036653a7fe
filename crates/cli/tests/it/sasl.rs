//! SASL from the command line (`--sasl digest-md5:USER`, the password from `ZKLOCK_SASL_PASSWORD` or
//! `--sasl-password-file`) against real ZooKeeper 3.8 with a JAAS `Server` section (`DigestLoginModule`) that
//! requires authentication: the command runs; without `--sasl`, or with a wrong password, zklock fails at once
//! with exit 69 and says why; the nodes it creates under `--acl creator` are `sasl:USER`'s alone (another SASL user
//! and a digest user get `NoAuth`, and with `--acl world` — the negative control — both may read them).
//!
//! One JVM for the file: it requires authentication by SASL or digest (`enforce.auth.schemes=sasl,digest`), so
//! that an authenticated session of another identity (digest) can be shown what the ACL keeps from it. An
//! unauthenticated session can do nothing at all there (the first test checks that too).

use std::os::unix::fs::PermissionsExt as _;
use std::sync::OnceLock;
use std::time::Duration;

use zklock_testkit::peers::Peer;
use zklock_testkit::{unique_path, ZooKeeper};
use zookeeper_client::{self as zk, Acl, AuthId, Client, Permission, SaslOptions};

use crate::support::*;

const BOB_PASSWORD: &str = "bob-s3cret";
const ALICE_PASSWORD: &str = "alice-s3cret";

/// The file's ZooKeeper: SASL DIGEST-MD5 users bob and alice; only authenticated sessions (SASL or digest) served.
async fn sasl_zookeeper() -> String {
    static SERVER: OnceLock<Result<ZooKeeper, String>> = OnceLock::new();
    tokio::task::spawn_blocking(|| {
        let started = SERVER.get_or_init(|| {
            ZooKeeper::builder()
                .sasl_digest_users(&[("bob", BOB_PASSWORD), ("alice", ALICE_PASSWORD)])
                .config("enforce.auth.enabled", "true")
                .config("enforce.auth.schemes", "sasl,digest")
                .start()
                .map_err(|err| err.to_string())
        });
        match started {
            Ok(zookeeper) => zookeeper.connect_string(),
            Err(err) => panic!("the SASL ZooKeeper failed to start: {err}"),
        }
    })
    .await
    .unwrap()
}

/// A session authenticated with SASL DIGEST-MD5.
async fn sasl_client(hosts: &str, user: &'static str, password: &'static str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .with_sasl(SaslOptions::digest_md5(user, password))
        .connect(hosts)
        .await
        .unwrap_or_else(|err| panic!("connect as {user} with SASL: {err}"))
}

/// bob's session, and the ACL of `path` as bob reads it, which gives `sasl:bob` every permission.
async fn bobs_directory(hosts: &str, path: &str) -> (Client, Vec<Acl>) {
    let bob = sasl_client(hosts, "bob", BOB_PASSWORD).await;
    let (acl, _) = bob.get_acl(path).await.expect("bob reads the ACL");
    assert!(
        acl.contains(&Acl::new(Permission::ALL, AuthId::new("sasl", "bob"))),
        "{acl:?}"
    );
    (bob, acl)
}

/// A session authenticated with digest (not SASL).
async fn digest_client(hosts: &str) -> Client {
    as_user(hosts, "eve", "eve-password").await
}

/// A JAAS file `name` in `dir` with one section, `section`, that logs in with `DigestLoginModule` and the
/// `options` (name, value).
fn digest_jaas(
    dir: &tempfile::TempDir,
    name: &str,
    section: &str,
    options: &[(&str, &str)],
) -> std::path::PathBuf {
    let jaas = dir.path().join(name);
    let module = "org.apache.zookeeper.server.auth.DigestLoginModule";
    let options: Vec<String> = options
        .iter()
        .map(|(name, value)| format!("{name}=\"{value}\""))
        .collect();
    let options = options.join("\n    ");
    std::fs::write(
        &jaas,
        format!("{section} {{\n    {module} required\n    {options};\n}};\n"),
    )
    .unwrap();
    jaas
}

/// `zklock HEAD [--sasl digest-md5:bob] TAIL`, with `--sasl` when `sasl`.
fn maybe_sasl(sasl: bool, head: &[&str], tail: &[&str]) -> tokio::process::Command {
    let mut args = head.to_vec();
    if sasl {
        args.extend(["--sasl", "digest-md5:bob"]);
    }
    args.extend(tail);
    without_credentials(&args)
}

/// `zklock run --sasl digest-md5:bob FLAGS PATH -- sh -c SCRIPT`, bob's password in the environment.
fn sh_as_bob(hosts: &str, flags: &[&str], path: &str, script: &str) -> tokio::process::Command {
    let mut tail = flags.to_vec();
    tail.extend([path, "--", "sh", "-c", script]);
    let mut zklock = maybe_sasl(true, &["--connect", hosts, "run"], &tail);
    zklock.env("ZKLOCK_SASL_PASSWORD", BOB_PASSWORD);
    zklock
}

/// Without `--sasl`, and with a wrong password, `command(sasl)` (a [`maybe_sasl`]) fails at once — long before
/// any session timeout of 20 s or more — with exit 69, says why, and does not show the password.
async fn refused_fast(command: impl Fn(bool) -> tokio::process::Command) {
    let cases = [
        (false, None, "requires authentication"),
        (
            true,
            Some("not-bobs-password"),
            "refused the SASL DIGEST-MD5 handshake as bob",
        ),
    ];
    for (sasl, password, expected) in cases {
        let mut zklock = command(sasl);
        if let Some(password) = password {
            zklock.env("ZKLOCK_SASL_PASSWORD", password);
        }
        let (out, took) = timed(&mut zklock).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{zklock:?}: {stderr}");
        assert!(stderr.contains(expected), "{zklock:?}: {stderr}");
        assert!(!stderr.contains("not-bobs-password"), "{stderr}");
        assert!(
            took < Duration::from_secs(20),
            "{zklock:?} took {took:?}: {stderr}"
        );
    }
}

/// `zklock run` as bob (password in the environment) under `--acl ACL`, whose command prints its lock node. The
/// node goes when the command ends; the directory zklock created (with the same ACL, plus world:r) stays.
/// It must run the command (exit 0, the command's line printed).
async fn run_as_bob(hosts: &str, path: &str, acl: &str) {
    let args = run_printing_node(hosts, "digest-md5:bob", acl, path);
    let out = completed(without_credentials(&args).env("ZKLOCK_SASL_PASSWORD", BOB_PASSWORD)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("held "), "{}", text(&out.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_sasl_runs_and_creator_acl_is_sasl_user_only() {
    let hosts = sasl_zookeeper().await;
    let path = unique_path("cli-sasl-creator");
    run_as_bob(&hosts, &path, "creator").await;

    // The directory zklock created: `--acl creator` under SASL is sasl:bob (ZooKeeper turns `auth` into the
    // session's identity), plus world:r that --parent-acl adds by default.
    let (bob, acl) = bobs_directory(&hosts, &path).await;
    assert!(
        !acl.iter().any(|entry| entry.permission().has(Permission::CREATE)
            && entry.auth_id() != &AuthId::new("sasl", "bob")),
        "{acl:?}"
    );
    // Nobody else may queue in it: alice (SASL) and eve (digest) are refused.
    let alice = sasl_client(&hosts, "alice", ALICE_PASSWORD).await;
    let eve = digest_client(&hosts).await;
    for (who, client) in [("alice", &alice), ("eve", &eve)] {
        let created = create_in(client, &path, "intruder").await;
        assert!(matches!(created, Err(zk::Error::NoAuth)), "{who}: {created:?}");
    }
    // Bob's own data node under --acl creator: only bob may read it.
    let node = format!("{path}/data");
    bob.create(
        &node,
        b"secret",
        &zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all()),
    )
    .await
    .expect("bob creates a creator-only node");
    assert_eq!(bob.get_data(&node).await.expect("bob reads").0, b"secret");
    for (who, client) in [("alice", &alice), ("eve", &eve)] {
        let read = client.get_data(&node).await;
        assert!(matches!(read, Err(zk::Error::NoAuth)), "{who}: {read:?}");
    }
}

/// The negative control of the test above: under `--acl world` the same users may queue, so the `NoAuth` seen
/// there comes from the ACL, not from how those sessions connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_sasl_and_world_acl_lets_others_in() {
    let hosts = sasl_zookeeper().await;
    let path = unique_path("cli-sasl-world");
    run_as_bob(&hosts, &path, "world").await;
    let alice = sasl_client(&hosts, "alice", ALICE_PASSWORD).await;
    let eve = digest_client(&hosts).await;
    for (who, client) in [("alice", &alice), ("eve", &eve)] {
        create_in(client, &path, who)
            .await
            .unwrap_or_else(|err| panic!("{who} creates in a world directory: {err}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sasl_or_with_a_wrong_password_zklock_fails_fast() {
    let hosts = sasl_zookeeper().await;
    let path = unique_path("cli-sasl-refused");
    let marker = tempfile::NamedTempFile::new().unwrap();
    let touch = format!("echo ran > {}", marker.path().display());
    // The session timeout asked for is long: an answer well within it is not a connect that waited it out.
    let command = |sasl: bool| {
        let head = ["--connect", &hosts, "run", "--session-timeout", "30s"];
        let mut zklock = maybe_sasl(sasl, &head, &[&path, "--", "sh", "-c", &touch]);
        zklock.env("ZKLOCK_LOG", "trace");
        zklock
    };
    refused_fast(command).await;
    assert_eq!(
        std::fs::read_to_string(marker.path()).unwrap(),
        "",
        "the command ran"
    );
    // The right password, through the same arguments: the command runs (the control of the checks above).
    let (out, _) = timed(command(true).env("ZKLOCK_SASL_PASSWORD", BOB_PASSWORD)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(marker.path()).unwrap(), "ran\n");
    // Not even the most verbose log (zookeeper-client's requests and replies) shows the password.
    assert!(stderr.contains("DEBUG"), "{stderr}");
    assert!(!stderr.contains(BOB_PASSWORD), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connecting_command_takes_sasl_and_the_password_file() {
    let hosts = sasl_zookeeper().await;
    let path = unique_path("cli-sasl-commands");
    let (_dir, file) = temp_file("sasl-password", format!("{BOB_PASSWORD}\n"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file = file.display().to_string();
    let sasl = ["--sasl", "digest-md5:bob", "--sasl-password-file", file.as_str()];
    let [lock, election, counter] = ["lock", "election", "counter"].map(|name| format!("{path}/{name}"));
    let commands: Vec<Vec<&str>> = vec![
        vec!["run", lock.as_str(), "--", "true"],
        vec!["elect", election.as_str(), "--", "true"],
        vec!["status", lock.as_str()],
        vec!["counter", "add", counter.as_str(), "2"],
        vec!["revoke", "--dry-run", election.as_str()],
        vec!["reap", path.as_str()],
    ];
    for args in commands {
        let mut all = vec!["--connect", hosts.as_str()];
        all.extend(&args[..1]);
        all.extend(sasl);
        all.extend(&args[1..]);
        let (out, _) = timed(&mut without_credentials(&all)).await;
        let stderr = text(&out.stderr);
        // revoke --dry-run: 1, nothing to revoke; the others succeed.
        let expected = if args[0] == "revoke" { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "{all:?}: {stderr}");
        assert!(!stderr.contains("warning"), "{all:?}: {stderr}");
        assert!(!stderr.contains("requires authentication"), "{all:?}: {stderr}");
    }
    // The demo, against the same ZooKeeper: its workers connect with --sasl too, under --acl creator.
    let demo_path = format!("{path}/demo");
    let mut demo = vec![
        "demo",
        "--connect",
        hosts.as_str(),
        "--workers",
        "2",
        "--hold",
        "10",
    ];
    demo.extend(["--path", demo_path.as_str(), "--acl", "creator"]);
    demo.extend(sasl);
    let (out, _) = timed(&mut without_credentials(&demo)).await;
    assert_exit(&out, 0, "the demo");
    // The same file readable by others: it works, with a warning.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut all = vec!["--connect", hosts.as_str(), "status"];
    all.extend(sasl);
    all.push(path.as_str());
    let (out, _) = timed(&mut without_credentials(&all)).await;
    assert_warned_readable_secrets(&out);
}

/// Usage errors (exit 64) before connecting: no password, a password on the command line, an unsupported
/// mechanism, a service name DIGEST-MD5 cannot speak for, a keytab for DIGEST-MD5; GSSAPI in a binary built
/// without the `sasl-gssapi` feature (with it: an unreadable keytab).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_usage_errors_exit_64() {
    let path = unique_path("cli-sasl-usage");
    let gssapi: (&[&str], &str) = if cfg!(feature = "sasl-gssapi") {
        (
            &["--sasl", "gssapi", "--keytab", "/nonexistent/bob.keytab"],
            "--keytab /nonexistent/bob.keytab: No such file",
        )
    } else {
        (&["--sasl", "gssapi"], "built without Kerberos")
    };
    let cases: [(&[&str], &str); 6] = [
        (&["--sasl", "digest-md5:bob"], "needs its password"),
        (&["--sasl", "digest-md5:bob:hunter2"], "never on the command line"),
        gssapi,
        (
            &["--sasl", "digest-md5:bob", "--keytab", "/nonexistent/bob.keytab"],
            "a keytab is for --sasl gssapi",
        ),
        (&["--sasl", "plain:bob"], "expected digest-md5:USER"),
        (
            &["--sasl", "digest-md5:bob", "--sasl-service", "zk"],
            "speaks for the service zookeeper only",
        ),
    ];
    for (flags, expected) in cases {
        let mut all = vec!["--connect", "127.0.0.1:1", "status"];
        all.extend(flags);
        all.push(path.as_str());
        let mut zklock = without_credentials(&all);
        if flags.contains(&"--sasl-service") {
            zklock.env("ZKLOCK_SASL_PASSWORD", "x");
        }
        fails_with(&mut zklock, exit::USAGE, expected).await;
    }
}

/// Curator (its ZooKeeper client authenticating as bob through a JAAS `Client` section, as Java applications do)
/// and `zklock run --sasl digest-md5:bob` share one lock, in the directory zklock made `sasl:bob`'s: while Curator
/// holds it `zklock run --nonblock` is refused as busy (exit 1) and its command does not run; once Curator releases,
/// it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_with_the_same_sasl_user_shares_the_lock() {
    let hosts = sasl_zookeeper().await;
    let path = unique_path("cli-sasl-curator");
    run_as_bob(&hosts, &path, "creator").await;
    let dir = tempfile::tempdir().unwrap();
    let bob = [("username", "bob"), ("password", BOB_PASSWORD)];
    let jaas = digest_jaas(&dir, "jaas-client.conf", "Client", &bob);
    let flag = format!("-Djava.security.auth.login.config={}", jaas.display());
    let mut curator = Peer::curator_with_jvm_flags(&[&flag], &["mutex", "hold", &hosts, &path]).await;
    let node = curator.expect("ACQUIRED").await;
    assert!(node.starts_with(&format!("{path}/")), "{node}");
    // Still the directory zklock made (not one Curator made again with its default world ACL).
    bobs_directory(&hosts, &path).await;

    let marker = dir.path().join("ran");
    let script = format!("echo ran > {}", marker.display());
    let nonblock = || sh_as_bob(&hosts, &["--nonblock"], &path, &script);
    let (out, _) = timed(&mut nonblock()).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!marker.exists(), "the command ran while Curator held the lock");

    curator.send("release").await;
    curator.expect("RELEASED").await;
    curator.finish().await;
    let (out, _) = timed(&mut nonblock()).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

/// `--sasl` against servers that have no SASL — real ZooKeeper without a JAAS `Server` section, the embedded
/// server — which answer the handshake without checking it and leave the session without a SASL identity: zklock
/// asks the server who we are (`whoami`) and fails at once with exit 69 rather than run without the identity asked
/// for. (The SASL tests above are the control: there `whoami` names `sasl:bob` and the commands run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_against_a_server_without_sasl_is_refused() {
    let real = zookeeper().await;
    let embedded = zklock_testkit::hosts::embedded().await;
    for hosts in [real, embedded] {
        let path = unique_path("cli-sasl-plain");
        let marker = tempfile::NamedTempFile::new().unwrap();
        let touch = format!("echo ran > {}", marker.path().display());
        let (out, _) = timed(&mut sh_as_bob(&hosts, &[], &path, &touch)).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{hosts}: {stderr}");
        assert!(
            stderr.contains("did not authenticate us with SASL as bob (it names this session ")
                && !stderr.contains("sasl:bob"),
            "{hosts}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(marker.path()).unwrap(),
            "",
            "the command ran"
        );
    }
}

/// `zklock serve` with SASL required (`--jaas` with bob and alice, `--require-sasl`): `zklock run --sasl
/// digest-md5:bob` runs its command and its directory is `sasl:bob`'s under `--acl creator` (alice, authenticated,
/// is refused `NoAuth`); without `--sasl`, or with a wrong password, zklock fails at once with exit 69, as against
/// real ZooKeeper above; `zklock bench --sasl` runs its workloads. A JAAS file without users, and `--require-sasl`
/// without one, are refused at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_sasl_against_zklock_serve_requiring_sasl() {
    let dir = tempfile::tempdir().unwrap();
    let users = [("user_bob", BOB_PASSWORD), ("user_alice", ALICE_PASSWORD)];
    let jaas = digest_jaas(&dir, "jaas.conf", "Server", &users);
    let jaas_arg = jaas.display().to_string();
    let serve = crate::logs::Serve::start(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--jaas",
        &jaas_arg,
        "--require-sasl",
    ])
    .await;
    let hosts = serve.addr.to_string();
    let path = unique_path("cli-sasl-serve");
    run_as_bob(&hosts, &path, "creator").await;
    bobs_directory(&hosts, &path).await;
    let alice = sasl_client(&hosts, "alice", ALICE_PASSWORD).await;
    let intruder = create_in(&alice, &path, "intruder").await;
    assert!(matches!(intruder, Err(zk::Error::NoAuth)), "{intruder:?}");

    refused_fast(|sasl| maybe_sasl(sasl, &["--connect", &hosts, "run"], &[&path, "--", "true"])).await;
    // zklock bench: its workloads' sessions authenticate too (the server would refuse them otherwise, as it
    // refuses the same bench without --sasl: the control).
    let bench = |sasl: bool| {
        let workload = ["--duration", "0.2", "--rounds", "1", "--clients", "2"];
        let mut zklock = maybe_sasl(sasl, &["--connect", &hosts, "bench"], &workload);
        zklock.env("ZKLOCK_SASL_PASSWORD", BOB_PASSWORD);
        zklock
    };
    let (out, _) = timed(&mut bench(true)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("contended hand-offs /s (2 clients)"),
        "{}",
        text(&out.stdout)
    );
    fails_with(&mut bench(false), exit::UNAVAILABLE, "requires authentication").await;

    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("adding SASL authorization"), "{stderr}");
    // Each refusal names who was refused: the peer and its session (issue 33.9).
    let refusal = stderr
        .lines()
        .find(|l| l.contains("has not authenticated with an enforced scheme"))
        .unwrap_or_else(|| panic!("a refusal is logged: {stderr}"));
    assert!(
        refusal.contains("peer=127.0.0.1:") && refusal.contains("session=0x"),
        "{refusal}"
    );

    // Refused at start: a JAAS file with no user (Kerberos only), and SASL required without a JAAS file.
    let kerberos = dir.path().join("kerberos.conf");
    std::fs::write(
        &kerberos,
        "Server {\n    com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true \
         keyTab=\"/etc/zk.keytab\" principal=\"zookeeper/host@EXAMPLE.COM\";\n};\n",
    )
    .unwrap();
    let kerberos_arg = kerberos.display().to_string();
    let out = output(&["serve", "--dry-run", "--jaas", &kerberos_arg]).await;
    assert_eq!(out.status.code(), Some(exit::OS_ERROR), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not GSSAPI"), "{}", text(&out.stderr));
    let out = output(&["serve", "--dry-run", "--require-sasl"]).await;
    assert_eq!(out.status.code(), Some(exit::USAGE), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--jaas"), "{}", text(&out.stderr));
    // The control: the good file passes the same dry run.
    let listen = ["--listen", "127.0.0.1:0"];
    let out = output(
        &[
            &["serve", "--dry-run", "--jaas", &jaas_arg, "--require-sasl"][..],
            &listen,
        ]
        .concat(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("SASL DIGEST-MD5 required (users in the JAAS file: 2)"),
        "{}",
        text(&out.stdout)
    );
}
