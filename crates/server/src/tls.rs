//! TLS on the secure client port (zoo.cfg's `secureClientPort` and `ssl.*` keys), with rustls.
//!
//! A TLS connection is served by the same connection code as a plain one: after the handshake, its plaintext
//! goes through a Unix socket pair, one end read and written by the connection task and its outbox exactly like
//! a client's TCP socket, the other end copied to and from the TLS stream by a bridge task. So replies still
//! leave by non-blocking `writev` from whichever thread made them durable, and a client that stops reading
//! still pushes back (the TLS stream fills, the bridge stops reading the pair, the pair fills, the outbox
//! blocks); the cost is one copy of each byte through the pair.
//!
//! As in ZooKeeper 3.8 (`NettyServerCnxnFactory` with `X509AuthenticationProvider`):
//! - `ssl.clientAuth=need` (the default) refuses a handshake without a certificate the trust store verifies,
//!   `want` asks for one and serves clients without, `none` does not ask;
//! - a verified client certificate authenticates the connection as `x509:<subject>`, the subject distinguished
//!   name as Java's `X500Principal.getName()` writes it (RFC 2253: most specific first, `CN=app,O=example`);
//!   when it equals `X509AuthenticationProvider.superUser` the connection is a super user as well;
//! - the TLS versions are `ssl.enabledProtocols`, else `ssl.protocol`, else TLSv1.2 only;
//! - four-letter words are answered over TLS too.
//!
//! Key stores are PEM (the private key and the certificate chain in one file) or PKCS#12 (`keytool`'s and
//! `openssl pkcs12`'s format; the first private key entry is used); trust stores are PEM certificates or a
//! PKCS#12 file's trusted certificate entries. Not supported: JKS and BCFKS files, encrypted PEM keys, cipher
//! suite lists, revocation checks (each refused at start, or reported as an ignored zoo.cfg key).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::TlsAcceptor;
use zklock_codec::Id;

use crate::config::{ClientAuth, Store, StoreKind, TlsConfig, TlsProtocol};
use crate::shared::{IpSlot, Shared};
use crate::stream::Stream;

/// How long a client may take to complete the TLS handshake (Netty's default, which ZooKeeper keeps).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the bridge goes on writing the server's last replies after the client stopped sending.
const DRAIN: Duration = Duration::from_secs(2);

/// Why the secure client port could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// secureClientPort without a key store.
    #[error(
        "secureClientPort is set but ssl.keyStore.location is not: the server needs a key and certificate"
    )]
    NoKeyStore,
    /// Client certificates are asked for but there is nothing to verify them against.
    #[error(
        "ssl.clientAuth is {0} (need is ZooKeeper's default) but ssl.trustStore.location is not set, so client \
         certificates cannot be verified: set ssl.trustStore.location, or ssl.clientAuth=none"
    )]
    NoTrustStore(&'static str),
    /// A store file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A store file has no recognisable type.
    #[error(
        "cannot tell the format of {} from its name (.pem or .p12): set ssl.keyStore.type or ssl.trustStore.type \
         to PEM or PKCS12", path.display()
    )]
    UnknownKind {
        /// The file.
        path: PathBuf,
    },
    /// A JKS or BCFKS store.
    #[error("{}: {kind:?} stores are not supported by the embedded server; {hint}", path.display())]
    UnsupportedKind {
        /// The file.
        path: PathBuf,
        /// Its kind.
        kind: StoreKind,
        /// What to do instead.
        hint: &'static str,
    },
    /// The file's contents are not what its kind needs.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the key, the certificates or the versions.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client certificate verifier could not be built (e.g. a trust store without a usable CA).
    #[error("{}: {reason}", path.display())]
    Verifier {
        /// The trust store.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The private key and certificate chain of a key store.
struct KeyStore {
    key: PrivateKeyDer<'static>,
    chain: Vec<CertificateDer<'static>>,
}

/// Builds the rustls configuration `tls` describes, reading its stores.
pub fn server_config(tls: &TlsConfig) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let key_store = tls.key_store.as_ref().ok_or(TlsError::NoKeyStore)?;
    let KeyStore { key, chain } = read_key_store(key_store)?;
    // One crypto provider named explicitly: rustls cannot choose a default when a binary links two.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = tls
        .protocols
        .iter()
        .map(|p| match p {
            TlsProtocol::Tls12 => &rustls::version::TLS12,
            TlsProtocol::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_protocol_versions(&versions)?;
    let builder = match tls.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Need | ClientAuth::Want => {
            let name = if tls.client_auth == ClientAuth::Need {
                "need"
            } else {
                "want"
            };
            let trust_store = tls.trust_store.as_ref().ok_or(TlsError::NoTrustStore(name))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in read_trust_store(trust_store)? {
                roots.add(cert).map_err(|e| TlsError::Invalid {
                    path: trust_store.path.clone(),
                    reason: format!("not a usable CA certificate: {e}"),
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if tls.client_auth == ClientAuth::Want {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| TlsError::Verifier {
                path: trust_store.path.clone(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Invalid {
            path: key_store.path.clone(),
            reason: format!("the key and certificate chain are not usable: {e}"),
        })?;
    Ok(Arc::new(config))
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn kind_of(store: &Store) -> Result<StoreKind, TlsError> {
    let kind = store.resolved_kind().ok_or_else(|| TlsError::UnknownKind {
        path: store.path.clone(),
    })?;
    match kind {
        StoreKind::Pem | StoreKind::Pkcs12 => Ok(kind),
        StoreKind::Jks => Err(TlsError::UnsupportedKind {
            path: store.path.clone(),
            kind,
            hint: "convert it: keytool -importkeystore -srckeystore FILE.jks -destkeystore FILE.p12 \
                   -deststoretype PKCS12",
        }),
        StoreKind::Bcfks => Err(TlsError::UnsupportedKind {
            path: store.path.clone(),
            kind,
            hint: "use a PEM or PKCS12 file",
        }),
    }
}

fn invalid(store: &Store, reason: impl Into<String>) -> TlsError {
    TlsError::Invalid {
        path: store.path.clone(),
        reason: reason.into(),
    }
}

fn pkcs12(store: &Store, data: &[u8]) -> Result<p12_keystore::KeyStore, TlsError> {
    // Java's PKCS12 loader takes a missing password as the empty one.
    let password = store.password.as_deref().unwrap_or("");
    p12_keystore::KeyStore::from_pkcs12(data, password, p12_keystore::Pkcs12ImportPolicy::Strict).map_err(
        |e| {
            invalid(
                store,
                format!("cannot open it as PKCS12 (a wrong password, or not a PKCS12 file?): {e}"),
            )
        },
    )
}

fn read_key_store(store: &Store) -> Result<KeyStore, TlsError> {
    let kind = kind_of(store)?;
    let data = read(&store.path)?;
    match kind {
        StoreKind::Pem => {
            if data
                .windows(b"ENCRYPTED PRIVATE KEY".len())
                .any(|w| w == b"ENCRYPTED PRIVATE KEY")
            {
                return Err(invalid(
                    store,
                    "the private key is encrypted, which the embedded server does not read: decrypt it \
                     (openssl pkcs8 -topk8 -nocrypt) or use a PKCS12 key store",
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(&data)
                .map_err(|e| invalid(store, format!("no private key found in it ({e})")))?;
            let chain = CertificateDer::pem_slice_iter(&data)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| invalid(store, format!("unreadable certificate: {e}")))?;
            if chain.is_empty() {
                return Err(invalid(
                    store,
                    "no certificate found in it (a PEM key store holds the private key and the certificate chain)",
                ));
            }
            Ok(KeyStore { key, chain })
        }
        _ => {
            let p12 = pkcs12(store, &data)?;
            let (_, entry) = p12
                .private_key_chain()
                .ok_or_else(|| invalid(store, "no private key entry in it"))?;
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(entry.key().as_der().to_vec()));
            let chain: Vec<CertificateDer<'static>> = entry
                .certs()
                .iter()
                .map(|c| CertificateDer::from(c.as_der().to_vec()))
                .collect();
            if chain.is_empty() {
                return Err(invalid(store, "its private key entry has no certificate"));
            }
            Ok(KeyStore { key, chain })
        }
    }
}

fn read_trust_store(store: &Store) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let kind = kind_of(store)?;
    let data = read(&store.path)?;
    let certs: Vec<CertificateDer<'static>> = match kind {
        StoreKind::Pem => CertificateDer::pem_slice_iter(&data)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(store, format!("unreadable certificate: {e}")))?,
        // Java's trust manager takes a key store's trusted certificate entries.
        _ => pkcs12(store, &data)?
            .entries()
            .filter_map(|(_, entry)| match entry {
                p12_keystore::KeyStoreEntry::Certificate(cert) => {
                    Some(CertificateDer::from(cert.as_der().to_vec()))
                }
                _ => None,
            })
            .collect(),
    };
    if certs.is_empty() {
        return Err(invalid(store, "no certificate in the trust store"));
    }
    Ok(certs)
}

/// What the server keeps to accept TLS connections.
#[derive(Clone)]
pub struct Acceptor {
    acceptor: TlsAcceptor,
    super_user: Option<Arc<str>>,
}

impl Acceptor {
    /// The acceptor for `tls`.
    pub fn new(tls: &TlsConfig) -> Result<Acceptor, TlsError> {
        Ok(Acceptor {
            acceptor: TlsAcceptor::from(server_config(tls)?),
            super_user: tls.super_user.as_deref().map(Arc::from),
        })
    }
}

/// Serves one connection accepted on the secure client port: the handshake, then the connection over a socket
/// pair bridged to the TLS stream.
pub async fn serve(
    shared: Arc<Shared>,
    socket: TcpStream,
    peer: SocketAddr,
    slot: IpSlot,
    acceptor: Acceptor,
) {
    let _ = socket.set_nodelay(true);
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.acceptor.accept(socket));
    let tls = tokio::select! {
        done = handshake => match done {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::info!(%peer, error = %e, "TLS handshake failed; closing");
                return;
            }
            Err(_) => {
                tracing::info!(%peer, "TLS handshake not completed in {HANDSHAKE_TIMEOUT:?}; closing");
                return;
            }
        },
        _ = shared.shutdown.cancelled() => return,
    };
    let ids = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| x509_ids(leaf, acceptor.super_user.as_deref()))
        .unwrap_or_default();
    if !ids.is_empty() {
        tracing::debug!(%peer, ?ids, "client certificate verified");
    }
    let (ours, theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!(%peer, error = %e, "cannot make a socket pair for a TLS connection; closing");
            return;
        }
    };
    tokio::join!(
        crate::connection::serve(shared, Stream::Unix(ours), peer, slot, ids),
        bridge(tls, theirs),
    );
}

/// Copies between the TLS stream and the socket pair until the server side closes (then sends close_notify), or
/// the client stops sending (then tells the connection, and forwards its last replies for a bounded time).
async fn bridge(tls: tokio_rustls::server::TlsStream<TcpStream>, pair: UnixStream) {
    let (mut tls_read, mut tls_write) = tokio::io::split(tls);
    let (mut pair_read, mut pair_write) = pair.into_split();
    let inbound = async {
        let _ = tokio::io::copy(&mut tls_read, &mut pair_write).await;
        let _ = pair_write.shutdown().await;
    };
    let outbound = async {
        let _ = tokio::io::copy(&mut pair_read, &mut tls_write).await;
        let _ = tls_write.shutdown().await;
    };
    tokio::pin!(inbound, outbound);
    tokio::select! {
        () = &mut outbound => {}
        () = &mut inbound => {
            let _ = tokio::time::timeout(DRAIN, outbound).await;
        }
    }
}

/// The ids a verified client certificate proves: `x509:<subject>`, preceded by `super:<subject>` when the subject
/// is the configured super user.
fn x509_ids(leaf: &CertificateDer<'_>, super_user: Option<&str>) -> Vec<Id> {
    let Some(subject) = subject_rfc2253(leaf) else {
        return Vec::new();
    };
    let mut ids = Vec::new();
    if super_user == Some(subject.as_str()) {
        ids.push(Id {
            scheme: "super".into(),
            id: subject.clone(),
        });
    }
    ids.push(Id {
        scheme: "x509".into(),
        id: subject,
    });
    ids
}

/// A certificate's subject as Java's `X500Principal.getName()` (RFC 2253) writes it: the relative distinguished
/// names most specific first, joined by `,`; multi-valued ones joined by `+`; CN, C, L, ST, O, OU, STREET, DC and
/// UID by keyword and other attributes by OID with the value's DER in hex (`1.2.3=#0c03616263`); string values
/// with `,=+<>#;"\` escaped, and leading and trailing spaces.
pub fn subject_rfc2253(der: &[u8]) -> Option<String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let rdns: Vec<String> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| rdn.iter().map(ava_rfc2253).collect::<Vec<_>>().join("+"))
        .collect();
    Some(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

fn ava_rfc2253(ava: &x509_parser::x509::AttributeTypeAndValue<'_>) -> String {
    use x509_parser::der_parser::asn1_rs::{Tag, ToDer};
    let oid = ava.attr_type().to_id_string();
    let keyword = match oid.as_str() {
        "2.5.4.3" => Some("CN"),
        "2.5.4.6" => Some("C"),
        "2.5.4.7" => Some("L"),
        "2.5.4.8" => Some("ST"),
        "2.5.4.9" => Some("STREET"),
        "2.5.4.10" => Some("O"),
        "2.5.4.11" => Some("OU"),
        "0.9.2342.19200300.100.1.25" => Some("DC"),
        "0.9.2342.19200300.100.1.1" => Some("UID"),
        _ => None,
    };
    let value = ava.attr_value();
    let text = match value.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String => {
            std::str::from_utf8(value.data).ok().map(str::to_string)
        }
        Tag::T61String | Tag::GeneralString => Some(value.data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            let units: Vec<u16> = value
                .data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    };
    match (keyword, text) {
        (Some(keyword), Some(text)) => format!("{keyword}={}", escape_rfc2253(&text)),
        (keyword, _) => {
            let der = value.to_der_vec().unwrap_or_default();
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", keyword.map_or(oid.as_str(), |k| k))
        }
    }
}

/// Java's `AVA.toRFC2253String` escaping of a string value.
fn escape_rfc2253(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        if ",=+<>#;\"\\".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    // Leading and trailing spaces (and carriage returns) are escaped too.
    let chars: Vec<char> = escaped.chars().collect();
    let lead = chars.iter().take_while(|&&c| c == ' ' || c == '\r').count();
    let trail = chars.iter().rev().take_while(|&&c| c == ' ' || c == '\r').count();
    let mut out = String::with_capacity(escaped.len() + lead + trail);
    for (i, c) in chars.iter().enumerate() {
        if i < lead || i >= chars.len() - trail {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

impl TlsConfig {
    /// Reads the key and trust stores and builds the TLS configuration, without listening: what
    /// [`crate::Server::start`] does first, for checking a configuration (`zklock serve --dry-run`).
    ///
    /// # Errors
    /// A missing or unreadable store, a wrong password, a key that does not match its certificate, ...
    pub fn check(&self) -> Result<(), crate::TlsError> {
        server_config(self).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_java_does() {
        assert_eq!(escape_rfc2253("zklock, tests"), "zklock\\, tests");
        assert_eq!(escape_rfc2253(" a=b "), "\\ a\\=b\\ ");
        assert_eq!(escape_rfc2253("#1"), "\\#1");
    }

    #[test]
    fn subject_is_most_specific_first() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CountryName, "NL");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "zklock, tests");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "client one");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_rfc2253(cert.der()).unwrap(),
            "CN=client one,O=zklock\\, tests,C=NL"
        );
    }
}
