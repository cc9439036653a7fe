//! Kerberos from the command line (`--sasl gssapi`, zklock-cli's `sasl-gssapi` feature) against a real MIT KDC and
//! real ZooKeeper 3.8 whose JAAS `Server` section logs in with `Krb5LoginModule` as `zookeeper/localhost`, and that
//! serves only authenticated sessions: `zklock run --sasl gssapi --connect localhost:PORT` takes its lock and runs
//! its command with bob's ticket (from the ticket cache, `KRB5CCNAME`, or from `--keytab`); the nodes it creates
//! under `--acl creator` are `sasl:bob@REALM`'s, refused (`NoAuth`) to a session of another identity, which may
//! use them under `--acl world` (the negative control); without a ticket, or as a principal the ticket is not,
//! zklock fails at once with exit 69 and says why.
//!
//! One KDC and one JVM for the file. The server requires authentication by SASL or digest
//! (`enforce.auth.schemes=sasl,digest`), so that an authenticated session of another identity (digest) can be
//! shown what the ACL keeps from it; an unauthenticated session can do nothing at all (checked too).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use zklock_testkit::kdc::Kdc;
use zklock_testkit::{unique_path, ZooKeeper};
use zookeeper_client::{self as zk, Acl, AuthId, Client, Permission};

use crate::support::*;

const REALM: &str = "ZKLOCK.TEST";

/// The file's realm and server.
struct Kerberized {
    kdc: Kdc,
    zookeeper: ZooKeeper,
    /// bob's keytab.
    bob_keytab: PathBuf,
    /// A ticket cache holding bob's ticket (`kinit -kt`).
    bob_ccache: PathBuf,
}

impl Kerberized {
    /// The connect string, with the host name of the server's principal (zookeeper/localhost).
    fn hosts(&self) -> String {
        format!("localhost:{}", self.zookeeper.member_addr(0).port())
    }
}

fn kerberized() -> &'static Kerberized {
    static SETUP: OnceLock<Result<Kerberized, String>> = OnceLock::new();
    let setup = SETUP.get_or_init(|| {
        let kdc = Kdc::start(REALM).map_err(|err| format!("the KDC: {err}"))?;
        let server_keytab = kdc
            .add_principal("zookeeper/localhost")
            .map_err(|err| err.to_string())?;
        let bob_keytab = kdc.add_principal("bob").map_err(|err| err.to_string())?;
        let bob_ccache = kdc.dir().join("bob.ccache");
        kdc.kinit("bob", &bob_keytab, &bob_ccache)
            .map_err(|err| err.to_string())?;
        let zookeeper = ZooKeeper::builder()
            .sasl_kerberos(
                &format!("zookeeper/localhost@{REALM}"),
                &server_keytab,
                kdc.krb5_conf(),
            )
            .config("enforce.auth.enabled", "true")
            .config("enforce.auth.schemes", "sasl,digest")
            .start()
            .map_err(|err| format!("the kerberized ZooKeeper: {err}"))?;
        Ok(Kerberized {
            kdc,
            zookeeper,
            bob_keytab,
            bob_ccache,
        })
    });
    match setup {
        Ok(setup) => setup,
        Err(err) => panic!("cannot set up Kerberos: {err}"),
    }
}

async fn setup() -> &'static Kerberized {
    tokio::task::spawn_blocking(kerberized).await.unwrap()
}

/// `zklock` with `args` and the realm's `krb5.conf`, the ticket cache `ccache` (a file that need not exist), and
/// no credentials from the test's own environment.
fn command(setup: &Kerberized, ccache: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    let mut command = without_credentials(args);
    command
        .env("KRB5_CONFIG", setup.kdc.krb5_conf())
        .env("KRB5CCNAME", format!("FILE:{}", ccache.display()));
    command
}

/// `zklock run --sasl SASL` under `--acl ACL` whose command prints its lock node, with bob's ticket cache.
async fn run_as_bob(setup: &Kerberized, sasl: &str, path: &str, acl: &str) -> std::process::Output {
    let hosts = setup.hosts();
    let args = run_printing_node(&hosts, sasl, acl, path);
    timed(&mut command(setup, &setup.bob_ccache, &args)).await.0
}

/// A session authenticated with digest (an identity other than bob's).
async fn digest_client(hosts: &str) -> Client {
    as_user(hosts, "eve", "eve-password").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_kerberos_runs_and_creator_acl_is_the_principals() {
    let setup = setup().await;
    let path = unique_path("cli-krb-creator");
    let out = run_as_bob(setup, "gssapi", &path, "creator").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("held "), "{}", text(&out.stdout));

    // `--acl creator` under Kerberos is sasl:bob@REALM, plus world:r that --parent-acl adds by default.
    let eve = digest_client(&setup.hosts()).await;
    let (acl, _) = eve.get_acl(&path).await.expect("read the ACL");
    let bob = AuthId::new("sasl", &format!("bob@{REALM}"));
    assert!(acl.contains(&Acl::new(Permission::ALL, bob.clone())), "{acl:?}");
    assert!(
        !acl.iter()
            .any(|entry| entry.permission().has(Permission::CREATE) && entry.auth_id() != &bob),
        "{acl:?}"
    );
    let created = create_in(&eve, &path, "intruder").await;
    assert!(matches!(created, Err(zk::Error::NoAuth)), "{created:?}");

    // An unauthenticated session is not served at all.
    let anonymous = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&setup.hosts())
        .await;
    let refused = match anonymous {
        Err(err) => Err(err),
        Ok(client) => client.get_children("/").await.map(drop),
    };
    assert!(refused.is_err(), "an unauthenticated session was served");
}

/// The negative control of the test above: under `--acl world` the same digest session may queue, so the `NoAuth`
/// there comes from the ACL, not from how that session connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_kerberos_and_world_acl_lets_others_in() {
    let setup = setup().await;
    let path = unique_path("cli-krb-world");
    let out = run_as_bob(setup, &format!("gssapi:bob@{REALM}"), &path, "world").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let eve = digest_client(&setup.hosts()).await;
    create_in(&eve, &path, "eve")
        .await
        .expect("eve creates in a world directory");
}

/// `--keytab`: no ticket cache at all, bob's keys instead; and the ticket cache is left alone (none is written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_keytab_needs_no_ticket_cache() {
    let setup = setup().await;
    let path = unique_path("cli-krb-keytab");
    let empty = tempfile::tempdir().unwrap();
    let ccache = empty.path().join("none");
    let hosts = setup.hosts();
    let keytab = setup.bob_keytab.display().to_string();
    let (out, _) = timed(&mut command(
        setup,
        &ccache,
        &[
            "--connect",
            &hosts,
            "run",
            "--sasl",
            "gssapi",
            "--keytab",
            &keytab,
            "--acl",
            "creator",
            &path,
            "--",
            "true",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!ccache.exists(), "zklock wrote the ticket cache");
    let (acl, _) = digest_client(&hosts).await.get_acl(&path).await.unwrap();
    assert!(
        acl.contains(&Acl::new(
            Permission::ALL,
            AuthId::new("sasl", &format!("bob@{REALM}"))
        )),
        "{acl:?}"
    );
}

/// Without a ticket (an empty ticket cache, or one whose ticket has expired, no keytab) zklock fails at once with
/// exit 69 and says so, and the command does not run; likewise as a principal the ticket is not
/// (`gssapi:alice@REALM` with bob's ticket), and when connecting to 127.0.0.1, for which the KDC has no service
/// principal (zookeeper/127.0.0.1). (The testkit's KDC allows a clock skew of 1 s, not the default 5 minutes,
/// within which a KDC still honours an expired ticket.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_ticket_or_as_another_principal_zklock_fails_fast() {
    let setup = setup().await;
    let localhost = setup.hosts();
    let address = setup.zookeeper.member_addr(0).to_string();
    let marker = tempfile::NamedTempFile::new().unwrap();
    let touch = format!("echo ran > {}", marker.path().display());
    let empty = tempfile::tempdir().unwrap();
    let no_ticket = empty.path().join("none");
    let path = unique_path("cli-krb-refused");
    let alice = format!("gssapi:alice@{REALM}");
    let unknown_service = format!("Server zookeeper/127.0.0.1@{REALM} not found in Kerberos database");
    let expired = empty.path().join("expired");
    let kdc = &setup.kdc;
    let keytab = setup.bob_keytab.clone();
    let ccache = expired.clone();
    tokio::task::spawn_blocking(move || kdc.kinit_expired("bob", &keytab, &ccache, Duration::from_secs(1)))
        .await
        .unwrap()
        .expect("an expired ticket");
    for (hosts, sasl, ccache, why) in [
        (
            &localhost,
            "gssapi",
            &no_ticket,
            "no Kerberos ticket: kinit, or --keytab",
        ),
        (
            &localhost,
            "gssapi",
            &expired,
            "the one in the ticket cache has expired",
        ),
        (
            &localhost,
            alice.as_str(),
            &setup.bob_ccache,
            "did not authenticate us with SASL as alice@",
        ),
        (&address, "gssapi", &setup.bob_ccache, unknown_service.as_str()),
    ] {
        let (out, took) = timed(&mut command(
            setup,
            ccache,
            &[
                "--connect",
                hosts,
                "run",
                "--session-timeout",
                "30s",
                "--sasl",
                sasl,
                &path,
                "--",
                "sh",
                "-c",
                &touch,
            ],
        ))
        .await;
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(exit::UNAVAILABLE),
            "{hosts} {sasl}: {stderr}"
        );
        assert!(stderr.contains(why), "{hosts} {sasl}: {stderr}");
        assert!(took < Duration::from_secs(30), "{hosts} {sasl}: took {took:?}");
        assert_eq!(
            std::fs::read_to_string(marker.path()).unwrap(),
            "",
            "{sasl}: the command ran"
        );
    }
}
