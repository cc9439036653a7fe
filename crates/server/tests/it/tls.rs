//! TLS on the secure client port, client certificates (the x509 scheme), the super digest and ACL refusals,
//! through the Rust `zookeeper-client` with its `tls` feature; certificates made in the test. (The same behaviour
//! side by side with real ZooKeeper 3.8: `tests/compat/tls.rs`.)

use std::path::Path;
use std::time::Duration;

use zklock_server::{
    ClientAuth, Error, Server, ServerConfig, Store, StoreKind, TlsConfig, TlsError, TlsProtocol,
};
use zklock_testkit::certs::{tls_client, tls_options as options, Ca, Identity};
use zookeeper_client as zk;

use crate::common::WAIT;
use crate::shared::{auth_ids, plain_client};

const CLIENT_DN: &[(&str, &str)] = &[("C", "NL"), ("O", "zklock, tests"), ("CN", "client one")];
/// ZooKeeper's x509 id of [`CLIENT_DN`]: RFC 2253, most specific first, the comma escaped.
const CLIENT_ID: &str = "CN=client one,O=zklock\\, tests,C=NL";

/// A CA, the server's PEM key store and PEM trust store (that CA) in a temporary directory.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    key_store: std::path::PathBuf,
    trust_store: std::path::PathBuf,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca = Ca::new("zklock test CA");
        let key_store = ca.server().write_key_store(dir.path(), "server.pem");
        let trust_store = ca.write_pem(dir.path(), "ca.pem");
        Pki {
            dir,
            ca,
            key_store,
            trust_store,
        }
    }

    fn tls(&self, client_auth: ClientAuth) -> TlsConfig {
        TlsConfig {
            trust_store: Some(Store::new(&self.trust_store, StoreKind::Pem)),
            client_auth,
            ..TlsConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                Store::new(&self.key_store, StoreKind::Pem),
            )
        }
    }

    /// A TLS session at `secure` trusting this CA, with a client certificate when `identity` is given.
    async fn client(&self, secure: &str, identity: Option<&Identity>) -> Result<zk::Client, zk::Error> {
        tls_client(secure, options(&self.ca.pem(), identity)).await
    }

    async fn server(&self, client_auth: ClientAuth) -> Server {
        server_with_tls(self.tls(client_auth)).await
    }
}

async fn server_with_tls(tls: TlsConfig) -> Server {
    Server::start(ServerConfig {
        tls: Some(tls),
        super_digest: Some(zklock_server_digest("super:secret")),
        ..Default::default()
    })
    .await
    .expect("server starts")
}

/// `user:base64(sha1(user:password))`.
fn zklock_server_digest(user_password: &str) -> String {
    use base64::Engine as _;
    let user = user_password.split_once(':').unwrap().0;
    let hash = sha1_smol::Sha1::from(user_password.as_bytes()).digest().bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

fn open() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_authenticates_over_tls_beside_the_plain_port() {
    let pki = Pki::new();
    let server = pki.server(ClientAuth::Need).await;
    let secure = server.secure_connect_string().expect("a secure port");
    assert_ne!(secure, server.connect_string(), "two ports");
    let identity = pki.ca.client(CLIENT_DN);
    let tls = pki.client(&secure, Some(&identity)).await.expect("TLS session");
    assert_eq!(
        auth_ids(&tls).await,
        vec!["ip:127.0.0.1".to_string(), format!("x509:{CLIENT_ID}")]
    );
    // The auth scheme expands to the certificate's id; the plain port shares the tree but not the identity.
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    tls.create("/by-cert", b"secret", &creator).await.unwrap();
    tls.create("/by-cert/open", b"", &open()).await.unwrap();
    let (acl, _) = tls.get_acl("/by-cert").await.unwrap();
    assert_eq!(
        acl.iter()
            .map(|a| format!("{}:{}", a.scheme(), a.id()))
            .collect::<Vec<_>>(),
        vec![format!("x509:{CLIENT_ID}")]
    );
    let plain = plain_client(&server.connect_string()).await;
    assert_eq!(auth_ids(&plain).await, ["ip:127.0.0.1"]);
    assert_eq!(plain.get_data("/by-cert").await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(
        plain.create("/by-cert/child", b"", &open()).await.unwrap_err(),
        zk::Error::NoAuth
    );
    // Deleting needs DELETE on the parent: the node under the CREATOR_ALL one is safe, whatever its own ACL.
    assert_eq!(
        plain.delete("/by-cert/open", None).await.unwrap_err(),
        zk::Error::NoAuth
    );
    // Another certificate is another identity.
    let other = pki.ca.client(&[("CN", "client two")]);
    let two = pki
        .client(&secure, Some(&other))
        .await
        .expect("second TLS session");
    assert_eq!(two.get_data("/by-cert").await.unwrap_err(), zk::Error::NoAuth);
    // An ACL may name the x509 id directly.
    let named = [zk::Acl::new(
        zk::Permission::ALL,
        zk::AuthId::new("x509", "CN=client two"),
    )];
    let for_two = zk::CreateMode::Persistent.with_acls(zk::Acls::new(&named));
    tls.create("/for-two", b"", &for_two).await.unwrap();
    assert_eq!(tls.get_data("/for-two").await.unwrap_err(), zk::Error::NoAuth);
    two.get_data("/for-two").await.unwrap();
    // Same data through either port.
    plain.create("/plain", b"p", &open()).await.unwrap();
    assert_eq!(tls.get_data("/plain").await.unwrap().0, b"p");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trusting_another_ca_is_refused() {
    let pki = Pki::new();
    let server = pki.server(ClientAuth::None).await;
    let secure = server.secure_connect_string().unwrap();
    let stranger = Ca::new("another CA");
    assert!(
        tls_client(&secure, options(&stranger.pem(), None)).await.is_err(),
        "the server's certificate is not signed by the CA the client trusts"
    );
    // The right CA works, without a client certificate under ssl.clientAuth=none.
    let ok = pki.client(&secure, None).await.expect("TLS session");
    assert_eq!(auth_ids(&ok).await, ["ip:127.0.0.1"]);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_auth_need_want_none() {
    let pki = Pki::new();
    let stranger = Ca::new("another CA").client(CLIENT_DN);
    let mine = pki.ca.client(CLIENT_DN);

    let need = pki.server(ClientAuth::Need).await;
    let secure = need.secure_connect_string().unwrap();
    assert!(
        pki.client(&secure, None).await.is_err(),
        "need: no certificate, no session"
    );
    assert!(
        pki.client(&secure, Some(&stranger)).await.is_err(),
        "need: a certificate from a CA the trust store does not hold is refused"
    );
    pki.client(&secure, Some(&mine))
        .await
        .expect("need: a trusted certificate");
    need.shutdown().await.unwrap();

    let want = pki.server(ClientAuth::Want).await;
    let secure = want.secure_connect_string().unwrap();
    let anonymous = pki
        .client(&secure, None)
        .await
        .expect("want: no certificate is fine");
    assert_eq!(auth_ids(&anonymous).await, ["ip:127.0.0.1"]);
    assert!(
        pki.client(&secure, Some(&stranger)).await.is_err(),
        "want: a certificate that is presented must verify"
    );
    let known = pki.client(&secure, Some(&mine)).await.unwrap();
    assert!(auth_ids(&known).await.contains(&format!("x509:{CLIENT_ID}")));
    want.shutdown().await.unwrap();

    let none = pki.server(ClientAuth::None).await;
    let secure = none.secure_connect_string().unwrap();
    let with_cert = pki
        .client(&secure, Some(&mine))
        .await
        .expect("none: a client certificate is not asked for");
    assert_eq!(auth_ids(&with_cert).await, ["ip:127.0.0.1"]);
    none.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_super_digest_and_the_x509_super_user_bypass_acls() {
    let pki = Pki::new();
    let server = server_with_tls(TlsConfig {
        super_user: Some("CN=admin".into()),
        ..pki.tls(ClientAuth::Need)
    })
    .await;
    let alice = plain_client(&server.connect_string()).await;
    alice.auth("digest", b"alice:pw").await.unwrap();
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create("/alice", b"mine", &creator).await.unwrap();
    alice.create("/alice/child", b"", &creator).await.unwrap();

    let nobody = plain_client(&server.connect_string()).await;
    assert_eq!(nobody.get_data("/alice").await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(
        nobody.set_data("/alice", b"x", None).await.unwrap_err(),
        zk::Error::NoAuth
    );
    assert_eq!(
        nobody.delete("/alice/child", None).await.unwrap_err(),
        zk::Error::NoAuth
    );
    assert_eq!(
        nobody.create("/alice/squat", b"", &open()).await.unwrap_err(),
        zk::Error::NoAuth
    );
    // A wrong password is just another identity.
    nobody.auth("digest", b"super:wrong").await.unwrap();
    assert_eq!(nobody.get_data("/alice").await.unwrap_err(), zk::Error::NoAuth);

    let admin = plain_client(&server.connect_string()).await;
    admin.auth("digest", b"super:secret").await.unwrap();
    assert_eq!(
        auth_ids(&admin).await,
        vec!["digest:super", "ip:127.0.0.1", "super:"],
        "whoAmI lists the super id with an empty user, as ZooKeeper does"
    );
    assert_eq!(admin.get_data("/alice").await.unwrap().0, b"mine");
    admin.create("/alice/by-admin", b"", &open()).await.unwrap();
    admin.delete("/alice/child", None).await.unwrap();

    let cert_admin = pki.ca.client(&[("CN", "admin")]);
    let secure = server.secure_connect_string().unwrap();
    let x509_admin = pki.client(&secure, Some(&cert_admin)).await.unwrap();
    assert_eq!(
        auth_ids(&x509_admin).await,
        vec!["ip:127.0.0.1", "super:", "x509:CN=admin"]
    );
    x509_admin
        .set_data("/alice", b"admin was here", None)
        .await
        .unwrap();
    x509_admin.delete("/alice/by-admin", None).await.unwrap();
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pkcs12_key_store_and_trust_store() {
    let pki = Pki::new();
    let server_identity = pki.ca.server();
    let dir = pki.dir.path();
    let key_store = write_pkcs12_key_store(dir, &server_identity, "changeit");
    let trust_store = write_pkcs12_trust_store(dir, &pki.ca.pem(), "changeit");
    let tls = TlsConfig {
        key_store: Some(Store {
            password: Some("changeit".into()),
            ..Store::new(&key_store, StoreKind::Pkcs12)
        }),
        trust_store: Some(Store {
            path: trust_store.clone(),
            password: Some("changeit".into()),
            kind: None, // from the name: .p12
        }),
        ..pki.tls(ClientAuth::Need)
    };
    let server = server_with_tls(tls.clone()).await;
    let client = tls_client(
        &server.secure_connect_string().unwrap(),
        options(&pki.ca.pem(), Some(&pki.ca.client(CLIENT_DN))),
    )
    .await
    .expect("TLS session with PKCS12 stores");
    assert!(auth_ids(&client).await.contains(&format!("x509:{CLIENT_ID}")));
    server.shutdown().await.unwrap();

    let wrong = TlsConfig {
        key_store: Some(Store {
            password: Some("wrong".into()),
            ..Store::new(&key_store, StoreKind::Pkcs12)
        }),
        ..tls
    };
    let err = Server::start(ServerConfig {
        tls: Some(wrong),
        ..Default::default()
    })
    .await
    .err()
    .expect("a wrong password is refused");
    assert!(
        err.to_string().contains("wrong password") && err.to_string().contains("server.p12"),
        "{err}"
    );
}

fn write_pkcs12_key_store(dir: &Path, identity: &Identity, password: &str) -> std::path::PathBuf {
    use rustls_pki_types::pem::PemObject;
    let key = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(identity.key.as_bytes()).unwrap();
    let certs = [identity.cert.as_str(), identity.ca.as_str()].map(|pem| {
        let der = rustls_pki_types::CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        p12_keystore::Certificate::from_der(&der).unwrap()
    });
    let chain = p12_keystore::PrivateKeyChain::new(
        b"server".to_vec(),
        p12_keystore::PrivateKey::from_der(key.secret_pkcs8_der()).unwrap(),
        certs,
    );
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry("server", p12_keystore::KeyStoreEntry::PrivateKeyChain(chain));
    let path = dir.join("server.p12");
    std::fs::write(&path, store.writer(password).write().unwrap()).unwrap();
    path
}

fn write_pkcs12_trust_store(dir: &Path, ca_pem: &str, password: &str) -> std::path::PathBuf {
    use rustls_pki_types::pem::PemObject;
    let der = rustls_pki_types::CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap();
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry(
        "ca",
        p12_keystore::KeyStoreEntry::Certificate(p12_keystore::Certificate::from_der(&der).unwrap()),
    );
    let path = dir.join("trust.p12");
    std::fs::write(&path, store.writer(password).write().unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_only_server_and_tls_versions() {
    let pki = Pki::new();
    let server = Server::start(ServerConfig {
        plain_client_port: false,
        tls: Some(TlsConfig {
            protocols: vec![TlsProtocol::Tls13],
            ..pki.tls(ClientAuth::None)
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(
        Some(server.local_addr()),
        server.secure_addr(),
        "one port: the secure one"
    );
    let client = tls_client(
        &server.secure_connect_string().unwrap(),
        options(&pki.ca.pem(), None),
    )
    .await
    .expect("TLS 1.3 session");
    client.create("/x", b"", &open()).await.unwrap();
    // A plaintext client on the only port gets no session.
    let plain = tokio::time::timeout(
        WAIT,
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_fail_eagerly()
            .connect(&server.connect_string()),
    )
    .await
    .expect("fails in time");
    assert!(plain.is_err());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn four_letter_words_over_tls() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pki = Pki::new();
    let server = pki.server(ClientAuth::None).await;
    let mut roots = rustls::RootCertStore::empty();
    use rustls_pki_types::pem::PemObject;
    roots
        .add(rustls_pki_types::CertificateDer::from_pem_slice(pki.ca.pem().as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.secure_addr().unwrap())
        .await
        .unwrap();
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(b"ruok").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(WAIT, tls.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, "imok");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn unusable_tls_settings_are_refused_at_start() {
    let pki = Pki::new();
    let start = |tls: TlsConfig| async move {
        match Server::start(ServerConfig {
            tls: Some(tls),
            ..Default::default()
        })
        .await
        {
            Ok(_) => panic!("started"),
            Err(Error::Tls(e)) => e,
            Err(other) => panic!("not a TLS error: {other}"),
        }
    };
    let no_key_store = TlsConfig {
        key_store: None,
        ..pki.tls(ClientAuth::None)
    };
    assert!(matches!(start(no_key_store).await, TlsError::NoKeyStore));
    let no_trust = TlsConfig {
        trust_store: None,
        ..pki.tls(ClientAuth::Need)
    };
    assert!(matches!(start(no_trust).await, TlsError::NoTrustStore("need")));
    let jks = TlsConfig {
        key_store: Some(Store::new(pki.dir.path().join("server.jks"), StoreKind::Jks)),
        ..pki.tls(ClientAuth::None)
    };
    let err = start(jks).await;
    assert!(err.to_string().contains("keytool -importkeystore"), "{err}");
    let unknown = TlsConfig {
        key_store: Some(Store {
            path: pki.key_store.with_extension("key"),
            password: None,
            kind: None,
        }),
        ..pki.tls(ClientAuth::None)
    };
    assert!(matches!(start(unknown).await, TlsError::UnknownKind { .. }));
    let missing = TlsConfig {
        key_store: Some(Store::new(pki.dir.path().join("missing.pem"), StoreKind::Pem)),
        ..pki.tls(ClientAuth::None)
    };
    assert!(matches!(start(missing).await, TlsError::Read { .. }));
    let cert_only = TlsConfig {
        key_store: Some(Store::new(&pki.trust_store, StoreKind::Pem)),
        ..pki.tls(ClientAuth::None)
    };
    let err = start(cert_only).await;
    assert!(err.to_string().contains("no private key"), "{err}");
    let encrypted = pki.dir.path().join("encrypted.pem");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMA==\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    let err = start(TlsConfig {
        key_store: Some(Store::new(&encrypted, StoreKind::Pem)),
        ..pki.tls(ClientAuth::None)
    })
    .await;
    assert!(err.to_string().contains("encrypted"), "{err}");
}

#[test]
fn zoo_cfg_tls_keys_and_ignored_keys() {
    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("pw");
    std::fs::write(&password_file, "from-file\n").unwrap();
    let cfg = dir.path().join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime=2000\n\
             clientPort=2181\n\
             secureClientPort=2281\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location=/etc/zk/server.p12\n\
             ssl.keyStore.password=ignored-for-the-file\n\
             ssl.keyStore.passwordPath={}\n\
             ssl.trustStore.location=/etc/zk/ca.pem\n\
             ssl.trustStore.type=pem\n\
             ssl.clientAuth=want\n\
             ssl.enabledProtocols=TLSv1.3,TLSv1.2\n\
             ssl.hostnameVerification=false\n\
             DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n\
             X509AuthenticationProvider.superUser=CN=admin\n\
             authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n\
             initLimit=10\n\
             server.1=zk1:2888:3888\n\
             authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
             quorumListenOnAllIPs=true\n\
             autopurge.purgeInterval=1\n\
             ssl.ciphersuites=TLS_AES_128_GCM_SHA256\n\
             noSuchKey=1\n",
            password_file.display()
        ),
    )
    .unwrap();
    let config = ServerConfig::from_zoo_cfg(&cfg).unwrap();
    let tls = config.tls.as_ref().expect("TLS");
    assert_eq!(
        tls.listen,
        "0.0.0.0:2281".parse().unwrap(),
        "ZooKeeper's default address"
    );
    let key_store = tls.key_store.as_ref().unwrap();
    assert_eq!(key_store.resolved_kind(), Some(StoreKind::Pkcs12));
    assert_eq!(
        key_store.password.as_deref(),
        Some("from-file"),
        "passwordPath wins"
    );
    assert!(
        !format!("{key_store:?}").contains("from-file"),
        "passwords stay out of Debug"
    );
    assert_eq!(tls.trust_store.as_ref().unwrap().kind, Some(StoreKind::Pem));
    assert_eq!(tls.client_auth, ClientAuth::Want);
    assert_eq!(tls.protocols, vec![TlsProtocol::Tls13, TlsProtocol::Tls12]);
    assert_eq!(tls.super_user.as_deref(), Some("CN=admin"));
    assert!(config.plain_client_port);
    assert_eq!(
        config.super_digest.as_deref(),
        Some("super:D/InIHSb7yEEbrWz8b9l71RjZJU=")
    );
    let ignored: Vec<(usize, &str)> = config.ignored.iter().map(|i| (i.line, i.key.as_str())).collect();
    assert_eq!(
        ignored,
        vec![
            (16, "initLimit"),
            (17, "server.1"),
            (18, "authProvider.sasl"),
            (19, "quorumListenOnAllIPs"),
            (20, "autopurge.purgeInterval"),
            (21, "ssl.ciphersuites"),
            (22, "noSuchKey"),
        ]
    );
    let lines: Vec<String> = config.ignored.iter().map(ToString::to_string).collect();
    assert!(lines[0].ends_with(
        "zoo.cfg:16: ignoring initLimit: not supported by the embedded server (a replication setting: it is a \
         single node, never part of an ensemble)"
    ));
    // The SASL provider without a JAAS file: no SASL to provide (with one, the line is accepted silently).
    assert!(lines[2].ends_with(
        "ignoring authProvider.sasl: no java.security.auth.login.config (the JAAS file), so no SASL"
    ));
    assert!(lines[6].ends_with("ignoring noSuchKey: unknown key"));

    // No clientPort: TLS only, as in ZooKeeper. TLS keys without a secure port are reported.
    std::fs::write(&cfg, "secureClientPort=2281\nssl.keyStore.location=/k.pem\n").unwrap();
    let only = ServerConfig::from_zoo_cfg(&cfg).unwrap();
    assert!(!only.plain_client_port);
    assert_eq!(
        only.tls.unwrap().client_auth,
        ClientAuth::Need,
        "ZooKeeper's default"
    );
    std::fs::write(&cfg, "clientPort=2181\nssl.keyStore.location=/k.pem\n").unwrap();
    let none = ServerConfig::from_zoo_cfg(&cfg).unwrap();
    assert!(none.tls.is_none());
    assert_eq!(none.ignored.len(), 1);
    assert!(none.ignored[0].to_string().contains("no secureClientPort"));
    std::fs::write(&cfg, "secureClientPort=2281\nssl.protocol=TLSv1.1\n").unwrap();
    let err = ServerConfig::from_zoo_cfg(&cfg).unwrap_err();
    assert!(err.to_string().contains("TLSv1.2 and TLSv1.3 only"), "{err}");
}
