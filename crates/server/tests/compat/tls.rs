//! TLS, client certificates, digest ACLs and the super user, side by side: real ZooKeeper 3.8 with a secure client
//! port (Netty connection factory, a PKCS12 key store and trust store made with the JDK's `keytool`, the super digest
//! as the JVM property `-Dzookeeper.DigestAuthenticationProvider.superDigest`) and the embedded server configured from
//! a zoo.cfg with the same files (its super digest from the zoo.cfg key). One scenario runs against both through the
//! Rust `zookeeper-client` (and rustls for what it cannot do); the transcripts must be equal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zklock_server::{Server, ServerConfig};
use zklock_testkit::certs::{tls_client, tls_options as options, Ca, Identity};
use zklock_testkit::{keytool, ZooKeeper};
use zookeeper_client as zk;

use crate::shared::plain_client;
use crate::support::{acl_of, create_with_acl, outcome, who, WAIT};

const PASSWORD: &str = "zklock-tls";
/// The client certificate's subject, most general first; ZooKeeper's x509 id of it is [`CLIENT_ID`].
const CLIENT_DN: &[(&str, &str)] = &[
    ("C", "NL"),
    ("O", "zklock, tests"),
    ("OU", "locks"),
    ("CN", "client one"),
];
const CLIENT_ID: &str = "CN=client one,OU=locks,O=zklock\\, tests,C=NL";
const SUPER_USER: &str = "CN=admin,O=zklock";

/// Everything both servers and the clients use, in one temporary directory.
struct Material {
    dir: tempfile::TempDir,
    /// The server's self-signed certificate, exported with keytool: what clients trust.
    server_cert: String,
    /// The CA of the client certificates (imported into the servers' trust store with keytool).
    client_ca: Ca,
    client: Identity,
    admin: Identity,
    /// A certificate from a CA the servers do not trust.
    stranger: Identity,
}

impl Material {
    fn new() -> Material {
        let dir = tempfile::tempdir().unwrap();
        let key_store = dir.path().join("server.p12");
        keytool::generate_key_pair(
            &key_store,
            "server",
            "CN=localhost,O=zklock tests",
            "ip:127.0.0.1,dns:localhost",
            PASSWORD,
        )
        .unwrap();
        let server_cert = keytool::export_certificate(&key_store, "server", PASSWORD).unwrap();
        let client_ca = Ca::new("zklock client CA");
        let ca_pem = client_ca.write_pem(dir.path(), "client-ca.pem");
        keytool::import_trusted(&dir.path().join("trust.p12"), "client-ca", &ca_pem, PASSWORD).unwrap();
        let client = client_ca.client(CLIENT_DN);
        let admin = client_ca.client(&[("O", "zklock"), ("CN", "admin")]);
        let stranger = Ca::new("stranger CA").client(CLIENT_DN);
        Material {
            dir,
            server_cert,
            client_ca,
            client,
            admin,
            stranger,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The client TLS settings of both servers, as zoo.cfg entries.
    fn ssl_entries(&self) -> Vec<(String, String)> {
        [
            (
                "ssl.keyStore.location",
                self.path("server.p12").display().to_string(),
            ),
            ("ssl.keyStore.password", PASSWORD.into()),
            ("ssl.keyStore.type", "PKCS12".into()),
            (
                "ssl.trustStore.location",
                self.path("trust.p12").display().to_string(),
            ),
            ("ssl.trustStore.password", PASSWORD.into()),
            ("ssl.trustStore.type", "PKCS12".into()),
            ("ssl.clientAuth", "need".into()),
            ("X509AuthenticationProvider.superUser", SUPER_USER.into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

fn super_digest() -> String {
    use base64::Engine as _;
    let hash = sha1_smol::Sha1::from("super:secret".as_bytes()).digest().bytes();
    format!("super:{}", base64::engine::general_purpose::STANDARD.encode(hash))
}

/// "ok", or "refused" (how a client learns that depends on its retry settings, not on the server).
fn connected(result: Result<zk::Client, zk::Error>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(_) => "refused".into(),
    }
}

/// A raw TLS exchange with rustls: `word` sent after the handshake, the answer read to the end; "refused" when the
/// handshake fails. `versions` limits the TLS versions offered.
async fn raw_tls(
    addr: &str,
    trusted: &str,
    identity: Option<&Identity>,
    versions: &[&'static rustls::SupportedProtocolVersion],
    word: &[u8],
) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls_pki_types::CertificateDer::from_pem_slice(trusted.as_bytes()).unwrap())
        .unwrap();
    let builder =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
    let config = match identity {
        Some(id) => builder
            .with_client_auth_cert(
                vec![rustls_pki_types::CertificateDer::from_pem_slice(id.cert.as_bytes()).unwrap()],
                rustls_pki_types::PrivateKeyDer::from_pem_slice(id.key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = connector.connect(name, tcp).await?;
        tls.write_all(word).await?;
        let mut answer = Vec::new();
        // A refused client certificate shows up on the first read under TLS 1.3.
        tls.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    match tokio::time::timeout(WAIT, exchange).await.expect("in time") {
        Ok(answer) => answer,
        Err(_) => "refused".into(),
    }
}

/// The scenario: its transcript, line by line.
async fn scenario(plain: &str, secure: &str, m: &Material, base: &str) -> Vec<String> {
    let mut t = Vec::new();
    refused_handshakes(&mut t, secure, m).await;
    let tls = certificate_identity(&mut t, secure, m, base).await;
    let nobody = anonymous(&mut t, plain, base).await;
    let _alice = digest_users(&mut t, plain, &tls, &nobody, base).await;
    super_users(&mut t, plain, secure, m, base).await;
    t
}

/// A persistent node that only its creator's identities may use (the auth scheme).
fn creator() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all())
}

/// A persistent node anyone may do anything with.
fn open() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

/// The open child the TLS client creates under its node.
fn open_child(base: &str) -> String {
    format!("{base}/open")
}

/// The node alice creates.
fn alices(base: &str) -> String {
    format!("{base}-alice")
}

/// Refused handshakes, and the TLS versions.
async fn refused_handshakes(t: &mut Vec<String>, secure: &str, m: &Material) {
    let trusted = &m.server_cert;
    let handshakes = [
        ("trusting another CA", m.client_ca.pem(), Some(&m.client)),
        ("no client certificate", trusted.clone(), None),
        ("untrusted client certificate", trusted.clone(), Some(&m.stranger)),
    ];
    for (what, ca, identity) in handshakes {
        let result = tls_client(secure, options(&ca, identity)).await;
        t.push(format!("{what}: {}", connected(result)));
    }
    let versions = [
        ("TLSv1.3 only", &rustls::version::TLS13),
        ("ruok over TLSv1.2", &rustls::version::TLS12),
    ];
    for (what, version) in versions {
        let answer = raw_tls(secure, trusted, Some(&m.client), &[version], b"ruok").await;
        t.push(format!("{what}: {answer}"));
    }
}

/// The certificate's identity, and the auth scheme expanded to it: the TLS client's session.
async fn certificate_identity(t: &mut Vec<String>, secure: &str, m: &Material, base: &str) -> zk::Client {
    let tls = tls_client(secure, options(&m.server_cert, Some(&m.client)))
        .await
        .expect("TLS session");
    t.push(format!("whoAmI over TLS: {}", who(&tls).await));
    t.push(format!(
        "create CREATOR_ALL over TLS: {}",
        outcome(tls.create(base, b"secret", &creator()).await)
    ));
    t.push(format!("its ACL: {}", acl_of(&tls, base).await));
    t.push(format!(
        "create an open child: {}",
        outcome(tls.create(&open_child(base), b"", &open()).await)
    ));
    tls
}

/// An unauthenticated client on the plain port: its session.
async fn anonymous(t: &mut Vec<String>, plain: &str, base: &str) -> zk::Client {
    let nobody = plain_client(plain).await;
    t.push(format!("anonymous whoAmI: {}", who(&nobody).await));
    t.push(format!(
        "anonymous exists: {}",
        outcome(nobody.check_stat(base).await)
    ));
    t.push(format!("anonymous get: {}", outcome(nobody.get_data(base).await)));
    t.push(format!(
        "anonymous set: {}",
        outcome(nobody.set_data(base, b"x", None).await)
    ));
    t.push(format!("anonymous getACL: {}", acl_of(&nobody, base).await));
    t.push(format!(
        "anonymous create under it: {}",
        outcome(nobody.create(&format!("{base}/squat"), b"", &open()).await)
    ));
    t.push(format!(
        "anonymous delete under it: {}",
        outcome(nobody.delete(&open_child(base), None).await)
    ));
    t.push(format!(
        "anonymous create with the auth scheme: {}",
        outcome(nobody.create(&format!("{base}-anon"), b"", &creator()).await)
    ));
    nobody
}

/// Digest users: CREATOR_ALL, world:anyone READ only, and both identities on one TLS connection; alice's session.
async fn digest_users(
    t: &mut Vec<String>,
    plain: &str,
    tls: &zk::Client,
    nobody: &zk::Client,
    base: &str,
) -> zk::Client {
    let read_only = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_read());
    let alice = plain_client(plain).await;
    t.push(format!(
        "alice auth: {}",
        outcome(alice.auth("digest", b"alice:pw-alice").await)
    ));
    let alices = alices(base);
    t.push(format!(
        "alice creates: {}",
        outcome(alice.create(&alices, b"a", &creator()).await)
    ));
    t.push(format!("its ACL: {}", acl_of(&alice, &alices).await));
    t.push(format!(
        "the TLS client reads it: {}",
        outcome(tls.get_data(&alices).await)
    ));
    let public = format!("{base}-public");
    t.push(format!(
        "alice creates READ-only: {}",
        outcome(alice.create(&public, b"p", &read_only).await)
    ));
    t.push(format!(
        "anonymous reads it: {}",
        outcome(nobody.get_data(&public).await)
    ));
    t.push(format!(
        "anonymous writes it: {}",
        outcome(nobody.set_data(&public, b"x", None).await)
    ));
    t.push(format!(
        "alice creates under it: {}",
        outcome(alice.create(&format!("{public}/c"), b"", &open()).await)
    ));
    t.push(format!(
        "TLS client auth bob: {}",
        outcome(tls.auth("digest", b"bob:pw-bob").await)
    ));
    t.push(format!("whoAmI: {}", who(tls).await));
    let both = format!("{base}-both");
    t.push(format!(
        "create CREATOR_ALL: {}",
        outcome(tls.create(&both, b"", &creator()).await)
    ));
    // In ZooKeeper's own order (its hash set's), not sorted: the embedded server reproduces it.
    t.push(format!("its ACL: {}", acl_of(tls, &both).await));
    let named = create_with_acl(
        tls,
        &format!("{base}-named"),
        zk::Permission::READ,
        ("x509", SUPER_USER),
    )
    .await;
    t.push(format!("an ACL naming an x509 id: {named}"));
    let bad = create_with_acl(
        tls,
        &format!("{base}-bad"),
        zk::Permission::READ,
        ("x509", "not a name"),
    )
    .await;
    t.push(format!("an x509 id that is no name: {bad}"));
    alice
}

/// The super users: the digest one on the plain port, the x509 one over TLS.
async fn super_users(t: &mut Vec<String>, plain: &str, secure: &str, m: &Material, base: &str) {
    let admin = plain_client(plain).await;
    t.push(format!(
        "super auth: {}",
        outcome(admin.auth("digest", b"super:secret").await)
    ));
    t.push(format!("super whoAmI: {}", who(&admin).await));
    t.push(format!("super get: {}", outcome(admin.get_data(base).await)));
    t.push(format!("super getACL: {}", acl_of(&admin, &alices(base)).await));
    t.push(format!(
        "super creates under it: {}",
        outcome(admin.create(&format!("{base}/by-super"), b"", &open()).await)
    ));
    t.push(format!(
        "super deletes under it: {}",
        outcome(admin.delete(&open_child(base), None).await)
    ));
    let x509_admin = tls_client(secure, options(&m.server_cert, Some(&m.admin)))
        .await
        .expect("admin TLS session");
    t.push(format!("x509 super whoAmI: {}", who(&x509_admin).await));
    t.push(format!(
        "x509 super sets alice's: {}",
        outcome(x509_admin.set_data(&alices(base), b"admin", None).await)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_acls_and_the_super_user_match_zookeeper() {
    let began = Instant::now();
    let material = tokio::task::spawn_blocking(Material::new).await.unwrap();
    let entries = material.ssl_entries();

    let real = {
        let entries = entries.clone();
        tokio::task::spawn_blocking(move || {
            let mut builder = ZooKeeper::builder()
                .secure_client_port()
                .start_timeout(Duration::from_secs(60))
                .system_property(
                    "zookeeper.DigestAuthenticationProvider.superDigest",
                    &super_digest(),
                );
            for (key, value) in &entries {
                builder = builder.config(key, value);
            }
            builder.start()
        })
        .await
        .unwrap()
        .expect("real ZooKeeper with a secure client port starts")
    };

    // The embedded server from a zoo.cfg with the same keys (and the super digest as a zoo.cfg key).
    let cfg = material.path("zoo.cfg");
    let mut text = format!(
        "clientPort=2181\nsecureClientPort=2281\n\
         serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         DigestAuthenticationProvider.superDigest={}\n",
        super_digest()
    );
    for (key, value) in &entries {
        text.push_str(&format!("{key}={value}\n"));
    }
    std::fs::write(&cfg, text).unwrap();
    let mut config = ServerConfig::from_zoo_cfg(&cfg).unwrap();
    assert!(config.ignored.is_empty(), "{:?}", config.ignored);
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.tls.as_mut().unwrap().listen = "127.0.0.1:0".parse().unwrap();
    let ours = Server::start(config).await.expect("embedded server starts");

    let base = zklock_testkit::unique_path("tls");
    let theirs = scenario(
        &real.connect_string(),
        &real.secure_connect_string(),
        &material,
        &base,
    )
    .await;
    let mine = scenario(
        &ours.connect_string(),
        &ours.secure_connect_string().unwrap(),
        &material,
        &base,
    )
    .await;
    // Shown when the test fails.
    eprintln!("transcript (ZooKeeper 3.8):\n{}", theirs.join("\n"));
    for (i, (a, b)) in mine.iter().zip(&theirs).enumerate() {
        assert_eq!(
            a, b,
            "line {i}: embedded (left) differs from ZooKeeper 3.8 (right)"
        );
    }
    assert_eq!(mine.len(), theirs.len());
    // Pin what both answered.
    let line = |prefix: &str| mine.iter().find(|l| l.starts_with(prefix)).unwrap().clone();
    assert_eq!(line("trusting another CA"), "trusting another CA: refused");
    assert_eq!(line("no client certificate"), "no client certificate: refused");
    assert_eq!(line("TLSv1.3 only"), "TLSv1.3 only: refused");
    assert_eq!(line("ruok over TLSv1.2"), "ruok over TLSv1.2: imok");
    assert_eq!(
        line("whoAmI over TLS"),
        format!(
            r#"whoAmI over TLS: ["ip:127.0.0.1", "x509:{}"]"#,
            CLIENT_ID.replace('\\', "\\\\")
        )
    );
    assert_eq!(line("anonymous get"), "anonymous get: NoAuth");
    assert_eq!(
        line("anonymous delete under it"),
        "anonymous delete under it: NoAuth"
    );
    assert_eq!(line("anonymous reads it"), "anonymous reads it: ok");
    assert_eq!(line("super get"), "super get: ok");
    assert_eq!(line("x509 super sets"), "x509 super sets alice's: ok");
    ours.shutdown().await.unwrap();
    drop(real);
    assert!(
        began.elapsed() < Duration::from_secs(60),
        "bounded: took {:?}",
        began.elapsed()
    );
}
