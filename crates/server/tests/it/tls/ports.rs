//! The secure port itself: a TLS-only server limited to TLS 1.3, and four-letter words over TLS.

use std::time::Duration;

use zklock_server::{ClientAuth, Server, ServerConfig, TlsConfig, TlsProtocol};
use zklock_testkit::certs::{tls_client, tls_options as options};
use zookeeper_client as zk;

use super::{open, Pki};
use crate::common::WAIT;

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
