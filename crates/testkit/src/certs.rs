//! Certificates made in the test (rcgen), for TLS tests: a CA, server certificates for 127.0.0.1, client
//! certificates with a distinguished name of the test's choosing, all PEM.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    IsCa, KeyPair, KeyUsagePurpose,
};

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The certificate (`-----BEGIN CERTIFICATE-----`).
    pub cert: String,
    /// The private key (PKCS#8, unencrypted).
    pub key: String,
    /// The certificate of the CA that signed it.
    pub ca: String,
}

impl Identity {
    /// What ZooKeeper's `ssl.keyStore.type=PEM` reads: the private key, then the certificate chain (leaf first).
    pub fn key_store_pem(&self) -> String {
        format!("{}{}{}", self.key, self.cert, self.ca)
    }

    /// Writes [`Identity::key_store_pem`] to `dir/name` and returns the path.
    ///
    /// # Panics
    /// The file cannot be written.
    pub fn write_key_store(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.key_store_pem()).expect("write a PEM key store");
        path
    }
}

/// An attribute of a distinguished name: `("CN", "app")`; CN, O, OU, C, L and ST are known.
pub type NamePart<'a> = (&'a str, &'a str);

fn dn(parts: &[NamePart<'_>]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for &(kind, value) in parts {
        let kind = match kind {
            "CN" => DnType::CommonName,
            "O" => DnType::OrganizationName,
            "OU" => DnType::OrganizationalUnitName,
            "C" => DnType::CountryName,
            "L" => DnType::LocalityName,
            "ST" => DnType::StateOrProvinceName,
            other => panic!("unknown distinguished name attribute {other}"),
        };
        dn.push(kind, value);
    }
    dn
}

impl Ca {
    /// A new self-signed CA called `name` (its CN).
    ///
    /// # Panics
    /// rcgen fails (never with these parameters).
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name = dn(&[("CN", name)]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("a CA key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("a CA certificate"),
        }
    }

    /// The CA certificate, PEM (what a client or a trust store trusts).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// Writes the CA certificate to `dir/name` (a PEM trust store) and returns the path.
    ///
    /// # Panics
    /// The file cannot be written.
    pub fn write_pem(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.pem()).expect("write a CA certificate");
        path
    }

    fn sign(
        &self,
        mut params: CertificateParams,
        name: &[NamePart<'_>],
        usage: ExtendedKeyUsagePurpose,
    ) -> Identity {
        params.distinguished_name = dn(name);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("a key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a signed certificate");
        Identity {
            cert: cert.pem(),
            key: key.serialize_pem(),
            ca: self.pem(),
        }
    }

    /// A server certificate for 127.0.0.1 and localhost.
    pub fn server(&self) -> Identity {
        let params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("server parameters");
        self.sign(
            params,
            &[("CN", "localhost")],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A client certificate for the distinguished name `name`, given most general first as in a certificate
    /// (`[("C", "NL"), ("O", "example"), ("CN", "app")]`; ZooKeeper's x509 id of it is `CN=app,O=example,C=NL`).
    pub fn client(&self, name: &[NamePart<'_>]) -> Identity {
        let params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
        self.sign(params, name, ExtendedKeyUsagePurpose::ClientAuth)
    }
}

/// TLS options for a client that trusts the CA in `trusted_ca` (PEM) and presents `identity`, if any.
pub fn tls_options(trusted_ca: &str, identity: Option<&Identity>) -> zookeeper_client::TlsOptions {
    let options = zookeeper_client::TlsOptions::new()
        .with_pem_ca(trusted_ca)
        .expect("a PEM CA");
    match identity {
        Some(id) => options
            .with_pem_identity(&id.cert, &id.key)
            .expect("a PEM identity"),
        None => options,
    }
}

/// Connects over TLS (10 s session); an error when the handshake or the session fails, without retrying. Bounded:
/// panics if it neither connects nor fails within 60 s.
pub async fn tls_client(
    addr: &str,
    options: zookeeper_client::TlsOptions,
) -> Result<zookeeper_client::Client, zookeeper_client::Error> {
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        zookeeper_client::Client::connector()
            .with_tls(options)
            .with_session_timeout(std::time::Duration::from_secs(10))
            .with_fail_eagerly()
            .secure_connect(addr),
    )
    .await
    .expect("connect or fail in time")
}
