//! Why no server of a connect string could be reached, as the operating system says it for each server
//! ([`unreachable`]) — or, for a server that accepts connections yet made no session over TLS, as the TLS handshake
//! says it ([`tls_handshake_error`]). zookeeper-client keeps those reasons to its debug log.

use std::time::Duration;

use super::tls::TlsPem;
use crate::values;

/// How long a server may take to accept a TCP connection when we look for why none could be reached.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a TLS handshake with the server `server` (`host:port` as `--connect` names it) fails, as rustls — the TLS
/// of zookeeper-client too — says it: `None` when the handshake succeeds (or cannot even be tried). Blocking.
///
/// zookeeper-client keeps the reason to its debug log; this tries the handshake again, the way it does (the same
/// CA certificates, client certificate and server name), to tell it.
pub(super) fn tls_handshake_error(server: &str, pem: &TlsPem) -> Option<String> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.ca.as_bytes()).flatten() {
        let _ = roots.add(cert);
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots);
    let config = match &pem.identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).ok()?;
            builder.with_client_auth_cert(chain, key).ok()?
        }
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::try_from(super::host(server).to_owned()).ok()?;
    let mut tls = rustls::ClientConnection::new(std::sync::Arc::new(config), name).ok()?;
    let address = std::net::ToSocketAddrs::to_socket_addrs(server).ok()?.next()?;
    let mut tcp = std::net::TcpStream::connect_timeout(&address, CONNECTION_TIMEOUT).ok()?;
    tcp.set_read_timeout(Some(CONNECTION_TIMEOUT)).ok()?;
    tcp.set_write_timeout(Some(CONNECTION_TIMEOUT)).ok()?;
    while tls.is_handshaking() {
        if let Err(err) = tls.complete_io(&mut tcp) {
            return Some(match err.kind() {
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset => {
                    "the server ended the TLS handshake (is it the server's secure client port? does it want a \
                     client certificate, --tls-cert and --tls-key?)"
                        .to_owned()
                }
                _ => {
                    // The alerts a server sends about our certificate: say what to do (issue 33.9).
                    let text = err.to_string();
                    let about_ours = ["CertificateRequired", "BadCertificate", "UnknownCA", "CertificateUnknown"]
                        .iter()
                        .any(|alert| text.contains(alert));
                    let hint = match (about_ours, &pem.identity) {
                        (true, None) => " (the server wants a client certificate: give --tls-cert and --tls-key)",
                        (true, Some(_)) => {
                            " (the server refused our client certificate: is it signed by a CA of the server's \
                             trust store, an X.509 v3 certificate with extendedKeyUsage clientAuth, and unexpired?)"
                        }
                        (false, _) => "",
                    };
                    format!("TLS handshake failed: {err}{hint}")
                }
            });
        }
    }
    None
}

/// Why no server of `hosts` can be reached, as the operating system (or the TLS handshake) says it, one reason per
/// server (`pem`: we spoke TLS to those not written `tcp://`, with these settings).
pub(super) async fn unreachable(hosts: &str, pem: Option<&TlsPem>) -> String {
    let secure = pem.is_some();
    let (servers, _chroot) = values::split_chroot(hosts);
    let mut reasons = Vec::new();
    for written in servers.split(',') {
        let server = values::without_scheme(written);
        let tls = written.starts_with("tcp+tls://") || (secure && !written.starts_with("tcp://"));
        let address = if server.ends_with(']') || !server.contains(':') {
            format!("{server}:2181")
        } else {
            server.to_owned()
        };
        let reason = match tokio::time::timeout(CONNECTION_TIMEOUT, tokio::net::TcpStream::connect(&address))
            .await
        {
            Err(_) => "no answer".to_owned(),
            Ok(Err(err)) => err.to_string(),
            // It accepts connections now, yet no session could be established a moment ago.
            Ok(Ok(_)) if tls => {
                let handshake = pem.cloned().map(|pem| {
                    let address = address.clone();
                    tokio::task::spawn_blocking(move || tls_handshake_error(&address, &pem))
                });
                let failed = match handshake {
                    Some(handshake) => handshake.await.ok().flatten(),
                    None => None,
                };
                match failed {
                    Some(why) => format!("no ZooKeeper session could be established over TLS: {why}"),
                    None => "no ZooKeeper session could be established over TLS (is it the server's secure \
                                 client port, and does --tls-ca hold the CA that signed its certificate?)"
                        .to_owned(),
                }
            }
            Ok(Ok(_)) => "no ZooKeeper session could be established (if it is a TLS port, \
                              secureClientPort, give --tls-ca)"
                .to_owned(),
        };
        reasons.push((server, reason));
    }
    match &reasons[..] {
        [(_, reason)] => reason.clone(),
        _ => reasons
            .iter()
            .map(|(server, reason)| format!("{server}: {reason}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}
