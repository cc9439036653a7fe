//! Key and trust stores: PKCS12 stores (and a wrong password), and the TLS settings refused at start.

use std::path::Path;

use zklock_server::{ClientAuth, Error, Server, ServerConfig, Store, StoreKind, TlsConfig, TlsError};
use zklock_testkit::certs::{tls_client, tls_options as options, Identity};

use super::{server_with_tls, Pki, CLIENT_DN, CLIENT_ID};
use crate::shared::auth_ids;

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
