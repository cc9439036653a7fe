//! TLS on the secure client port, client certificates (the x509 scheme), the super digest and ACL refusals,
//! through the Rust `zookeeper-client` with its `tls` feature; certificates made in the test. (The same behaviour
//! side by side with real ZooKeeper 3.8: `tests/compat/tls.rs`.)
//!
//! By topic: `identities` (client certificates as identities, `ssl.clientAuth`, the super users), `stores` (PKCS12
//! stores, settings refused at start), `ports` (a TLS-only server, TLS versions, four-letter words over TLS) and
//! `zoo_cfg` (the TLS keys of a zoo.cfg); this file holds what they share.

mod identities;
mod ports;
mod stores;
mod zoo_cfg;

use zklock_server::{ClientAuth, Server, ServerConfig, Store, StoreKind, TlsConfig};
use zklock_testkit::certs::{tls_client, tls_options as options, Ca, Identity};
use zookeeper_client as zk;

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
