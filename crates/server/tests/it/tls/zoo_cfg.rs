//! The TLS keys of a zoo.cfg, and the keys it reports as ignored.

use zklock_server::{ClientAuth, ServerConfig, StoreKind, TlsProtocol};

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
