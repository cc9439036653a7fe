//! Securing zklock from the command line, against real ZooKeeper 3.8 and the embedded server: credentials
//! (`--auth`, `ZKLOCK_AUTH`, `--auth-file`), the ACLs of the nodes it creates (`--acl`, `--parent-acl`), what those
//! keep from other sessions while `zklock status` still shows who holds by name, secrets kept out of every
//! process's command line, usage errors (exit 64) and refused credentials (exit 69), and TLS (`--tls-ca`,
//! `--tls-cert`, `--tls-key`).

use std::os::unix::fs::PermissionsExt as _;

use base64::Engine as _;
use zklock_testkit::unique_path;
use zookeeper_client::{self as zk, Acl, AuthId, CreateMode, Permission};

use crate::support::*;

/// ZooKeeper's digest of `user` with `password`: base64(sha1(user:password)), what `--acl digest:USER:HASH` takes.
fn hash(user: &str, password: &str) -> String {
    let digest = sha1_smol::Sha1::from(format!("{user}:{password}"))
        .digest()
        .bytes();
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// The ACL entry ZooKeeper stores for `user` with `password`.
fn digest_acl(user: &str, password: &str, permission: Permission) -> Acl {
    Acl::new(
        permission,
        AuthId::new("digest", &format!("{user}:{}", hash(user, password))),
    )
}

/// A random secret, so that finding it anywhere means it leaked from this test.
fn secret() -> String {
    // `unique_path` is "/x-<16 random hex digits>".
    format!("s3cret-{}", &unique_path("x")[3..])
}

/// The command [`hold`] gives `zklock run`.
const HOLD: [&str; 3] = ["sh", "-c", "echo held; read line"];

/// Starts `command` (a `zklock run … -- HOLD`) and waits until its command runs: the lock is held.
async fn hold(command: &mut tokio::process::Command) -> Running {
    let mut held = Running::start(command);
    assert_eq!(held.line("the command to start").await, "held");
    held
}

/// Lets a [`hold`]ing command end; `zklock`'s exit code.
async fn release(held: Running) -> Option<i32> {
    held.end("done").await.0
}

/// `zklock run --auth-file FILE PATH -- true`.
fn run_with_auth_file(hosts: &str, file: &std::path::Path, path: &str) -> tokio::process::Command {
    let file = file.to_str().unwrap();
    without_credentials(&["run", "--connect", hosts, "--auth-file", file, path, "--", "true"])
}

/// The ACL of the first lock node in `path`, read by alice (digest, password `password`).
async fn alices_node_acl(hosts: &str, password: &str, path: &str) -> Vec<Acl> {
    let alice = as_user(hosts, "alice", password).await;
    let names = alice.list_children(path).await.unwrap();
    alice.get_acl(&format!("{path}/{}", names[0])).await.unwrap().0
}

/// The command lines of every process on the machine that contain `needle`.
fn command_lines_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

on_both_servers! {
    async fn a_creator_acl_keeps_others_out_and_status_shows_the_holder_by_name(hosts: &str) {
        let top = unique_path("cli-secure");
        let path = format!("{top}/backup");
        let alice_pw = secret();
        let alice_auth = format!("digest:alice:{alice_pw}");
        // With credentials and no --acl, the nodes are the creator's (and the directories readable by anybody).
        let held = hold(without_credentials(&[
            "run", "--connect", hosts, "--auth", &alice_auth, "--describe", "nightly secret", &path, "--",
        ]).args(HOLD)).await;

        let anonymous = client(hosts).await;
        sync(&anonymous, &path).await;
        let names = anonymous.list_children(&path).await.unwrap();
        let [name] = &names[..] else { panic!("{names:?}") };
        let node = format!("{path}/{name}");
        assert_eq!(anonymous.get_data(&node).await.unwrap_err(), zk::Error::NoAuth, "read");
        assert_eq!(anonymous.delete(&node, None).await.unwrap_err(), zk::Error::NoAuth, "delete");
        let open = CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let squat = anonymous.create(&format!("{path}/squat-"), b"", &open).await;
        assert_eq!(squat.unwrap_err(), zk::Error::NoAuth, "squat");
        let alice = as_user(hosts, "alice", &alice_pw).await;
        let alice_all = digest_acl("alice", &alice_pw, Permission::ALL);
        assert_eq!(alice.get_acl(&node).await.unwrap().0, std::slice::from_ref(&alice_all));
        let directory = vec![alice_all, Acl::new(Permission::READ, AuthId::anyone())];
        assert_eq!(alice.get_acl(&path).await.unwrap().0, directory);
        assert_eq!(alice.get_acl(&top).await.unwrap().0, directory);

        // `zklock status` without credentials shows the holder by name; the data is marked unreadable.
        let out = completed(&mut without_credentials(&["status", "--connect", hosts, &path])).await;
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(stdout.contains("held by 1 of 1"), "{stdout}");
        assert!(stdout.contains("holder") && stdout.contains(name.as_str()), "{stdout}");
        assert!(stdout.contains("data not readable") && !stdout.contains("nightly secret"), "{stdout}");
        let out = completed(&mut without_credentials(&["status", "--connect", hosts, "--json", &path])).await;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(json["holders"][0]["name"], name.as_str(), "{json}");
        assert_eq!(json["holders"][0]["data"], serde_json::Value::Null, "{json}");
        let owner = alice.check_stat(&node).await.unwrap().unwrap().ephemeral_owner;
        assert_eq!(json["holders"][0]["session_id"], format!("0x{owner:x}"), "{json}");
        // With alice's credentials (from the environment this time) the data shows.
        let mut status = without_credentials(&["status", "--connect", hosts, &path]);
        let out = completed(status.env("ZKLOCK_AUTH", &alice_auth)).await;
        assert!(text(&out.stdout).contains("nightly secret"), "{}", text(&out.stdout));

        // Without credentials zklock cannot queue there: exit 69, and it says why.
        let out = completed(&mut without_credentials(&["run", "--connect", hosts, "--nonblock", &path, "--", "true"])).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
        assert!(stderr.contains("not authorized") && stderr.contains("--auth"), "{stderr}");

        assert_eq!(release(held).await, Some(0));
        assert_eq!(remaining(&alice, &path).await, Vec::<String>::new());
    }

    async fn a_second_user_named_in_the_acl_can_queue(hosts: &str) {
        let path = unique_path("cli-secure-two");
        let (alice_pw, bob_pw) = (secret(), secret());
        let alice_acl = format!("creator,digest:bob:{}", hash("bob", &bob_pw));
        let held = hold(without_credentials(&[
            "run", "--connect", hosts, "--auth", &format!("digest:alice:{alice_pw}"), "--acl", &alice_acl,
            "--describe", "alice's backup", &path, "--",
        ]).args(HOLD)).await;

        // Bob, named in alice's ACL, queues behind her (credentials from the environment).
        let bob_acl = format!("creator,digest:alice:{}", hash("alice", &alice_pw));
        let mut bob = Running::start(
            without_credentials(&["run", "--connect", hosts, "--acl", &bob_acl, &path, "--", "echo", "bob ran"])
                .env("ZKLOCK_AUTH", format!("digest:bob:{bob_pw}")),
        );
        let anonymous = client(hosts).await;
        await_children(&anonymous, &path, 2).await;
        // He may read alice's data.
        let bob_auth = format!("digest:bob:{bob_pw}");
        let out = completed(&mut without_credentials(&["status", "--connect", hosts, "--auth", &bob_auth, &path])).await;
        let stdout = text(&out.stdout);
        assert!(stdout.contains("alice's backup") && stdout.contains("waiting"), "{stdout}");
        // Carol, not named, may not queue.
        let out = completed(&mut without_credentials(&[
            "run", "--connect", hosts, "--auth", "digest:carol:carol-pw", "--nonblock", &path, "--", "true",
        ])).await;
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{}", text(&out.stderr));

        assert_eq!(release(held).await, Some(0));
        assert_eq!(bob.line("bob's run").await, "bob ran");
        let (status, stderr) = bob.finish().await;
        assert_eq!(status, Some(0), "{stderr}");
    }

    async fn an_election_with_private_data_is_observed_by_name(hosts: &str) {
        let path = unique_path("cli-secure-elect");
        let pw = secret();
        let leader = hold(without_credentials(&[
            "elect", "--connect", hosts, "--auth", &format!("digest:alice:{pw}"), "--describe", "private",
            &path, "--",
        ]).args(HOLD)).await;
        let mut observer = Running::start(&mut without_credentials(&["elect", "--connect", hosts, "--observe", "--json", &path]));
        let line = observer.line("an observation").await;
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(json["leader"]["node"].as_str().unwrap().starts_with(&path), "{json}");
        assert_eq!(json["leader"]["data"], serde_json::Value::Null, "{json}");
        // When it was seen, in milliseconds since the epoch.
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        let observed = json["observed_ms"].as_u64().unwrap_or_else(|| panic!("{json}"));
        assert!(observed <= now_ms && observed + 60_000 > now_ms, "{json}");
        // The observer, watching a node it may not read, still sees the leader go.
        assert_eq!(release(leader).await, Some(0), "the leader resigned");
        let line = observer.line("the next observation").await;
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(json["leader"], serde_json::Value::Null, "{json}");
        observer.signal(nix::sys::signal::Signal::SIGTERM);
        assert_eq!(observer.finish().await.0, Some(0), "the observer stopped");
    }

    async fn refused_credentials_exit_69(hosts: &str) {
        let path = unique_path("cli-secure-refused");
        let auth = "nosuchscheme:whatever";
        let out = completed(&mut without_credentials(&["status", "--connect", hosts, "--auth", auth, &path])).await;
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
        assert!(stderr.contains("refused our credentials") && stderr.contains("nosuchscheme"), "{stderr}");
        assert!(!stderr.contains("whatever"), "{stderr}");
    }

    async fn the_demo_takes_credentials_and_acls(hosts: &str) {
        let out = completed(&mut without_credentials(&[
            "demo", "--connect", hosts, "--workers", "2", "--hold", "10", "--path",
            &unique_path("cli-secure-demo"), "--auth", "digest:alice:demo-pw", "--acl", "creator",
        ])).await;
        assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_from_a_file_or_the_environment_stay_out_of_every_command_line() {
    let hosts = zookeeper().await;
    let dir = tempfile::tempdir().unwrap();

    // --auth-file, private: no warning.
    let pw = secret();
    let file = dir.path().join("zklock-auth");
    std::fs::write(
        &file,
        format!("# zklock's credentials\n\n  digest:alice:{pw}  \n"),
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let path = unique_path("cli-secure-file");
    let held = hold(
        without_credentials(&[
            "run",
            "--connect",
            &hosts,
            "--auth-file",
            file.to_str().unwrap(),
            &path,
            "--",
        ])
        .args(HOLD),
    )
    .await;
    assert!(
        command_lines_with(&pw).is_empty(),
        "{:?}",
        command_lines_with(&pw)
    );
    // The scan does see zklock's command line: it names the path.
    let with_path = command_lines_with(&path);
    assert!(
        with_path
            .iter()
            .any(|line| line.starts_with(&format!("{}:", held.pid()))),
        "{with_path:?}"
    );
    assert_eq!(
        alices_node_acl(&hosts, &pw, &path).await,
        [digest_acl("alice", &pw, Permission::ALL)],
        "the file's credentials were used"
    );
    assert_eq!(release(held).await, Some(0));
    let out = completed(&mut run_with_auth_file(&hosts, &file, &path)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("warning"), "{}", text(&out.stderr));

    // ZKLOCK_AUTH.
    let pw = secret();
    let path = unique_path("cli-secure-env");
    let held = hold(
        without_credentials(&["run", "--connect", &hosts, &path, "--"])
            .args(HOLD)
            .env("ZKLOCK_AUTH", format!("digest:alice:{pw}")),
    )
    .await;
    assert!(
        command_lines_with(&pw).is_empty(),
        "{:?}",
        command_lines_with(&pw)
    );
    assert_eq!(
        alices_node_acl(&hosts, &pw, &path).await,
        [digest_acl("alice", &pw, Permission::ALL)],
        "the environment's credentials were used"
    );
    assert_eq!(release(held).await, Some(0));

    // A file other users may read: it works, with a warning.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = unique_path("cli-secure-shared-file");
    let out = completed(&mut run_with_auth_file(&hosts, &file, &path)).await;
    assert_warned_readable_secrets(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_acls_and_tls_files_are_usage_errors() {
    let hosts = zookeeper().await;
    let dir = tempfile::tempdir().unwrap();
    let hidden = secret();
    let write = |name: &str, content: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let comments_only = write("comments", "# nothing here\n\n");
    let bad_line = write("bad-line", &format!("digest:alice:pw\ndigest{hidden}\n"));
    let empty_pem = write("empty.pem", "");
    let path = unique_path("cli-secure-usage");
    let env_auth = format!("digest{hidden}");
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (vec!["run", "--auth", "nocolon"], None, "SCHEME:CREDENTIALS"),
        (vec!["run", "--auth", "digest:nouser"], None, "USER:PASSWORD"),
        (vec!["status"], Some(&env_auth), "ZKLOCK_AUTH, line 1"),
        (
            vec!["status", "--auth-file", "/nonexistent/zklock-auth"],
            None,
            "--auth-file /nonexistent/zklock-auth",
        ),
        (
            vec!["run", "--auth-file", &comments_only],
            None,
            "no SCHEME:CREDENTIALS line",
        ),
        (vec!["status", "--auth-file", &bad_line], None, "line 2"),
        (
            vec!["run", "--acl", "everyone"],
            None,
            "expected world, creator, digest:USER:HASH or sasl:USER",
        ),
        (
            vec!["run", "--acl", "digest:bob:bob-password"],
            None,
            "base64(sha1(USER:PASSWORD))",
        ),
        (vec!["run", "--acl", "creator:xyz"], None, "unknown permission"),
        (vec!["run", "--acl", "creator"], None, "needs credentials"),
        (
            vec!["run", "--parent-acl", "creator,world:r"],
            None,
            "needs credentials",
        ),
        (
            vec!["status", "--tls-ca", "/nonexistent/ca.pem"],
            None,
            "--tls-ca /nonexistent/ca.pem",
        ),
        (vec!["status", "--tls-ca", &empty_pem], None, "--tls-ca"),
        (vec!["status", "--tls-cert", &empty_pem], None, "--tls-key"),
    ];
    for (args, env, expected) in cases {
        let mut all: Vec<&str> = args.clone();
        all.extend(["--connect", &hosts, &path]);
        if all[0] == "run" {
            all.extend(["--", "true"]);
        }
        let mut zklock = without_credentials(&all);
        if let Some(env) = env {
            zklock.env("ZKLOCK_AUTH", env);
        }
        let stderr = fails_with(&mut zklock, exit::USAGE, expected).await;
        assert!(!stderr.contains(&hidden), "{args:?} shows the secret: {stderr}");
    }
    let tls_without_ca = ["status", "--connect", "tcp+tls://127.0.0.1:2281", &path];
    fails_with(&mut without_credentials(&tls_without_ca), exit::USAGE, "--tls-ca").await;
    // Nothing was created.
    let anonymous = client(&hosts).await;
    assert_eq!(anonymous.check_stat(&path).await.unwrap(), None);
}

/// What the TLS tests give both servers and the clients, in one temporary directory: the servers' key store made
/// with the JDK's `keytool` (PKCS12, as an operator makes one) for 127.0.0.1, its certificate exported as the PEM
/// file clients trust (`--tls-ca`), and a client certificate from a CA the servers' trust store holds.
struct TlsMaterial {
    dir: tempfile::TempDir,
}

const STORE_PASSWORD: &str = "zklock-cli-tls";

impl TlsMaterial {
    fn new() -> TlsMaterial {
        use zklock_testkit::keytool;
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        keytool::generate_key_pair(
            &path("server.p12"),
            "server",
            "CN=localhost",
            "ip:127.0.0.1,dns:localhost",
            STORE_PASSWORD,
        )
        .unwrap();
        let server_cert = keytool::export_certificate(&path("server.p12"), "server", STORE_PASSWORD).unwrap();
        std::fs::write(path("server-ca.pem"), server_cert).unwrap();
        let client_ca = zklock_testkit::certs::Ca::new("zklock CLI client CA");
        let client_ca_pem = client_ca.write_pem(dir.path(), "client-ca.pem");
        keytool::import_trusted(&path("trust.p12"), "client-ca", &client_ca_pem, STORE_PASSWORD).unwrap();
        let client = client_ca.client(&[("O", "zklock"), ("CN", "backup-job")]);
        std::fs::write(path("client.pem"), &client.cert).unwrap();
        std::fs::write(path("client.key"), &client.key).unwrap();
        std::fs::set_permissions(path("client.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        // A CA nobody uses: trusting it instead of the server's certificate fails the handshake.
        zklock_testkit::certs::Ca::new("a stranger").write_pem(dir.path(), "stranger-ca.pem");
        TlsMaterial { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    /// The servers' client TLS settings, as zoo.cfg entries: a client certificate is asked for, not required.
    fn ssl_entries(&self) -> Vec<(String, String)> {
        [
            ("ssl.keyStore.location", self.path("server.p12")),
            ("ssl.keyStore.password", STORE_PASSWORD.into()),
            ("ssl.keyStore.type", "PKCS12".into()),
            ("ssl.trustStore.location", self.path("trust.p12")),
            ("ssl.trustStore.password", STORE_PASSWORD.into()),
            ("ssl.trustStore.type", "PKCS12".into()),
            ("ssl.clientAuth", "want".into()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
    }
}

/// `zklock run` over TLS holds and releases; `status` over TLS sees it; a client certificate is an identity
/// (`--acl creator` without `--auth`); the wrong port or CA fails with exit 69 and a hint. `plain` and `secure`:
/// one server's plaintext and TLS client addresses.
async fn tls_scenario(plain: &str, secure: &str, m: &TlsMaterial) {
    let ca = m.path("server-ca.pem");
    let path = unique_path("cli-tls");
    let held =
        hold(without_credentials(&["run", "--connect", secure, "--tls-ca", &ca, &path, "--"]).args(HOLD))
            .await;
    let out =
        completed(without_credentials(&["status", "--connect", secure, &path]).env("ZKLOCK_TLS_CA", &ca))
            .await;
    assert!(
        text(&out.stdout).contains("held by 1 of 1"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Per server: `tcp://` keeps one plaintext although --tls-ca is given.
    let out = completed(&mut without_credentials(&[
        "status",
        "--connect",
        &format!("tcp://{plain}"),
        "--tls-ca",
        &ca,
        &path,
    ]))
    .await;
    assert!(
        text(&out.stdout).contains("held by 1 of 1"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(release(held).await, Some(0));
    let anonymous = client(plain).await;
    assert_eq!(
        remaining(&anonymous, &path).await,
        Vec::<String>::new(),
        "released"
    );

    // A client certificate: the session is `x509:CN=backup-job,O=zklock`, so the creator's ACL needs no --auth.
    let (cert, key) = (m.path("client.pem"), m.path("client.key"));
    let mutual = format!("{path}-mutual");
    let held = hold(
        without_credentials(&[
            "run",
            "--connect",
            secure,
            "--tls-ca",
            &ca,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--acl",
            "creator",
            &mutual,
            "--",
        ])
        .args(HOLD),
    )
    .await;
    sync(&anonymous, &mutual).await;
    let names = anonymous.list_children(&mutual).await.unwrap();
    let node = format!("{mutual}/{}", names[0]);
    assert_eq!(
        anonymous.get_data(&node).await.unwrap_err(),
        zk::Error::NoAuth,
        "the certificate's alone"
    );
    assert_eq!(release(held).await, Some(0));

    // Plaintext to the TLS port, TLS to the plaintext port, a CA that did not sign the server's certificate.
    for (connect, tls_ca, hint) in [
        (
            secure,
            None,
            "if it is a TLS port, secureClientPort, give --tls-ca",
        ),
        (
            plain,
            Some(ca.clone()),
            "the server ended the TLS handshake (is it the server's secure client port?",
        ),
        (
            secure,
            Some(m.path("stranger-ca.pem")),
            "TLS handshake failed: invalid peer certificate: UnknownIssuer",
        ),
    ] {
        let mut status = without_credentials(&["status", "--connect", connect, &path]);
        if let Some(tls_ca) = &tls_ca {
            status.args(["--tls-ca", tls_ca]);
        }
        let out = completed(&mut status).await;
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(exit::UNAVAILABLE),
            "{connect} {tls_ca:?}: {stderr}"
        );
        assert!(stderr.contains(hint), "{connect} {tls_ca:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_a_real_zookeeper() {
    let material = tokio::task::spawn_blocking(TlsMaterial::new).await.unwrap();
    let entries = material.ssl_entries();
    let zookeeper = tokio::task::spawn_blocking(move || {
        let mut builder = zklock_testkit::ZooKeeper::builder().secure_client_port();
        for (key, value) in &entries {
            builder = builder.config(key, value);
        }
        builder.start()
    })
    .await
    .unwrap()
    .expect("ZooKeeper with a secure client port");
    tls_scenario(
        &zookeeper.connect_string(),
        &zookeeper.secure_connect_string(),
        &material,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_zklock_serve() {
    let material = tokio::task::spawn_blocking(TlsMaterial::new).await.unwrap();
    let (plain, secure) = (
        zklock_testkit::ports::free_port().unwrap(),
        zklock_testkit::ports::free_port().unwrap(),
    );
    let mut cfg = format!(
        "dataDir={}\nclientPort={plain}\nclientPortAddress=127.0.0.1\nsecureClientPort={secure}\n\
         secureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n",
        material.path("data")
    );
    for (key, value) in material.ssl_entries() {
        cfg.push_str(&format!("{key}={value}\n"));
    }
    let cfg_path = material.path("zoo.cfg");
    std::fs::write(&cfg_path, cfg).unwrap();
    let serve = crate::logs::Serve::start(&["serve", "--config", &cfg_path]).await;
    tls_scenario(&serve.addr.to_string(), &format!("127.0.0.1:{secure}"), &material).await;
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
}
