//! Client certificates as identities beside the plain port, `ssl.clientAuth` (need, want, none), a client that
//! trusts another CA, and the super users (digest and x509) past ACLs.

use zklock_server::{ClientAuth, TlsConfig};
use zklock_testkit::certs::{tls_client, tls_options as options, Ca};
use zookeeper_client as zk;

use super::{open, server_with_tls, Pki, CLIENT_DN, CLIENT_ID};
use crate::shared::{auth_ids, plain_client};

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
