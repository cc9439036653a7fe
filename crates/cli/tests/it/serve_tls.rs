//! `zklock serve --config zoo.cfg` secured as the README's "Securing zklock" shows: TLS on `secureClientPort` beside
//! the plain port, a client certificate required (`ssl.clientAuth=need`), the super digest from the zoo.cfg key
//! `DigestAuthenticationProvider.superDigest`, and the zoo.cfg keys it does not apply reported one warning line
//! each. The client is `zookeeper-client` with its `tls` feature; certificates are made in the test.

use std::path::Path;

use zklock_testkit::certs::{self, Ca, Identity};
use zklock_testkit::ports::free_port;
use zookeeper_client as zk;

use crate::logs::Serve;
use crate::support::*;

/// `super:base64(sha1("super:secret"))`, what the README tells how to compute.
fn super_digest() -> String {
    use base64::Engine as _;
    let hash = sha1_smol::Sha1::from("super:secret".as_bytes()).digest().bytes();
    format!("super:{}", base64::engine::general_purpose::STANDARD.encode(hash))
}

/// A zoo.cfg with TLS on `secure` (PEM stores in `dir`) and the plain port `plain` (none when 0).
fn zoo_cfg(dir: &Path, ca: &Ca, plain: u16, secure: u16) -> std::path::PathBuf {
    let key_store = ca.server().write_key_store(dir, "server.pem");
    let trust_store = ca.write_pem(dir, "ca.pem");
    let plain = if plain == 0 {
        String::new()
    } else {
        format!("clientPort={plain}\nclientPortAddress=127.0.0.1\n")
    };
    let text = format!(
        "tickTime=2000\n\
         dataDir={data}\n\
         {plain}\
         secureClientPort={secure}\n\
         secureClientPortAddress=127.0.0.1\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         ssl.keyStore.location={key_store}\n\
         ssl.keyStore.type=PEM\n\
         ssl.trustStore.location={trust_store}\n\
         ssl.trustStore.type=PEM\n\
         ssl.clientAuth=need\n\
         DigestAuthenticationProvider.superDigest={digest}\n\
         initLimit=5\n\
         server.1=zk1:2888:3888\n\
         quorumListenOnAllIPs=true\n\
         authProvider.1=com.example.KerberosProvider\n\
         someTypo=1\n",
        data = dir.join("data").display(),
        key_store = key_store.display(),
        trust_store = trust_store.display(),
        digest = super_digest(),
    );
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, text).unwrap();
    path
}

async fn tls_client(addr: &str, ca: &Ca, identity: Option<&Identity>) -> Result<zk::Client, zk::Error> {
    certs::tls_client(addr, certs::tls_options(&ca.pem(), identity)).await
}

const IGNORED: &[&str] = &[
    "ignoring initLimit: not supported by the embedded server (a replication setting",
    "ignoring server.1: not supported by the embedded server (a replication setting",
    "ignoring quorumListenOnAllIPs: not supported by the embedded server (a replication setting",
    "ignoring authProvider.1: not supported by the embedded server (only the built-in ip, digest, x509 and sasl schemes; no custom",
    "ignoring someTypo: unknown key",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_tls_a_client_certificate_and_a_super_digest() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("zklock serve test CA");
    let (plain, secure) = (free_port().unwrap(), free_port().unwrap());
    let cfg = zoo_cfg(dir.path(), &ca, plain, secure);
    let cfg = cfg.to_str().unwrap();

    let dry = output(&["serve", "--config", cfg, "--dry-run"]).await;
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).contains(&format!(
            "would listen on 127.0.0.1:{plain} and with TLS on 127.0.0.1:{secure} "
        )),
        "{}",
        text(&dry.stdout)
    );
    for line in IGNORED {
        assert_eq!(
            text(&dry.stderr).matches(line).count(),
            1,
            "one warning line for {line:?} in\n{}",
            text(&dry.stderr)
        );
    }

    let serve = Serve::start(&["serve", "--config", cfg]).await;
    assert_eq!(serve.addr.port(), plain);
    let secure_addr = format!("127.0.0.1:{secure}");

    let alice_cert = ca.client(&[("O", "zklock"), ("CN", "alice")]);
    let alice = tls_client(&secure_addr, &ca, Some(&alice_cert))
        .await
        .expect("a TLS session with a client certificate");
    let users: Vec<String> = alice
        .list_auth_users()
        .await
        .unwrap()
        .iter()
        .map(|u| format!("{}:{}", u.scheme(), u.user()))
        .collect();
    assert!(users.contains(&"x509:CN=alice,O=zklock".to_string()), "{users:?}");
    let path = zklock_testkit::unique_path("serve-tls");
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create(&path, b"alice's", &creator).await.unwrap();
    assert!(
        tls_client(&secure_addr, &ca, None).await.is_err(),
        "ssl.clientAuth=need: no certificate, no session"
    );
    // The command line says what is missing (issue 33.9).
    let ca_file = dir.path().join("ca.pem");
    let out = output(&[
        "status",
        "--connect",
        &secure_addr,
        "--connect-timeout",
        "0",
        "--tls-ca",
        ca_file.to_str().unwrap(),
        "/x",
    ])
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::UNAVAILABLE), "{stderr}");
    assert!(stderr.contains("give --tls-cert and --tls-key"), "{stderr}");
    assert!(
        tls_client(&secure_addr, &Ca::new("another CA"), Some(&alice_cert))
            .await
            .is_err(),
        "a client that does not trust the server's CA gets no session"
    );

    let anonymous = client(&serve.addr.to_string()).await;
    assert_eq!(anonymous.get_data(&path).await.unwrap_err(), zk::Error::NoAuth);
    let open = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    assert_eq!(
        anonymous
            .create(&format!("{path}/squat"), b"", &open)
            .await
            .unwrap_err(),
        zk::Error::NoAuth
    );
    let admin = client(&serve.addr.to_string()).await;
    admin.auth("digest", b"super:secret").await.unwrap();
    assert_eq!(admin.get_data(&path).await.unwrap().0, b"alice's");
    admin.delete(&path, None).await.unwrap();

    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    for line in IGNORED {
        assert_eq!(stderr.matches(line).count(), 1, "{line:?} in\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_tls_only_and_unusable_stores() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("zklock serve test CA");
    let secure = free_port().unwrap();
    let cfg = zoo_cfg(dir.path(), &ca, 0, secure);
    let cfg_text = std::fs::read_to_string(&cfg).unwrap();
    let cfg = cfg.to_str().unwrap();

    let dry = output(&["serve", "--config", cfg, "--dry-run"]).await;
    assert!(dry.status.success(), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).contains(&format!("would listen with TLS on 127.0.0.1:{secure} only ")),
        "no clientPort: TLS only, as in ZooKeeper: {}",
        text(&dry.stdout)
    );

    // A missing key store: refused at once (also by --dry-run), naming the file; exit 71.
    let missing = dir.path().join("missing.pem");
    std::fs::write(
        cfg,
        cfg_text.replace(
            &format!(
                "ssl.keyStore.location={}",
                dir.path().join("server.pem").display()
            ),
            &format!("ssl.keyStore.location={}", missing.display()),
        ),
    )
    .unwrap();
    for args in [
        &["serve", "--config", cfg, "--dry-run"][..],
        &["serve", "--config", cfg],
    ] {
        let out = output(args).await;
        assert_eq!(
            out.status.code(),
            Some(exit::OS_ERROR),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "zklock serve: TLS on 127.0.0.1:{secure}: cannot read {}",
                missing.display()
            )),
            "{stderr}"
        );
    }

    // ssl.clientAuth=need (ZooKeeper's default) without a trust store.
    let no_trust: String = cfg_text
        .lines()
        .filter(|l| !l.starts_with("ssl.trustStore") && !l.starts_with("ssl.clientAuth"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(cfg, no_trust).unwrap();
    let out = output(&["serve", "--config", cfg, "--dry-run"]).await;
    assert_eq!(out.status.code(), Some(exit::OS_ERROR));
    assert!(
        text(&out.stderr).contains(
            "ssl.clientAuth is need (need is ZooKeeper's default) but ssl.trustStore.location is not set"
        ),
        "{}",
        text(&out.stderr)
    );
}
