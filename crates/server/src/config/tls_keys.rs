//! The client TLS keys of a `zoo.cfg` (`secureClientPort`, `secureClientPortAddress`, the `ssl.*` stores,
//! `ssl.clientAuth`, the protocols, the x509 super user): read line by line, applied once the file is read.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use super::reading::{set, Keys, Line, StoreKeys, TlsKeys};
use super::{
    ClientAuth, ConfigError, IgnoredKey, ServerConfig, Store, StoreKind, TlsConfig, TlsProtocol, PROTOCOLS,
};

/// The TLS keys. Every one but `secureClientPort` means nothing without a secureClientPort, and is reported as
/// ignored then.
pub(super) const KEYS: Keys = &[
    ("secureClientPort", |r, l| {
        let port: u16 = l.parse()?;
        r.tls.port = (port != 0).then_some(port);
        Ok(())
    }),
    ("secureClientPortAddress", |r, l| {
        set(&mut r.tls.addr, Some(l.parse()?))
    }),
    ("X509AuthenticationProvider.superUser", |r, l| {
        set(&mut r.tls.super_user, l.non_empty())
    }),
    ("ssl.keyStore.location", |r, l| r.tls.key_store.read(l)),
    ("ssl.keyStore.password", |r, l| r.tls.key_store.read(l)),
    ("ssl.keyStore.passwordPath", |r, l| r.tls.key_store.read(l)),
    ("ssl.keyStore.type", |r, l| r.tls.key_store.read(l)),
    ("ssl.trustStore.location", |r, l| r.tls.trust_store.read(l)),
    ("ssl.trustStore.password", |r, l| r.tls.trust_store.read(l)),
    ("ssl.trustStore.passwordPath", |r, l| r.tls.trust_store.read(l)),
    ("ssl.trustStore.type", |r, l| r.tls.trust_store.read(l)),
    ("ssl.clientAuth", |r, l| {
        set(
            &mut r.tls.client_auth,
            ClientAuth::parse(l.value).map_err(|()| l.bad())?,
        )
    }),
    ("ssl.protocol", |r, l| {
        set(
            &mut r.tls.protocol,
            Some(TlsProtocol::parse(l.value).map_err(|()| l.unsupported(PROTOCOLS))?),
        )
    }),
    ("ssl.enabledProtocols", |r, l| {
        let protocols = l.list().map(TlsProtocol::parse).collect::<Result<Vec<_>, ()>>();
        set(
            &mut r.tls.enabled,
            Some(protocols.map_err(|()| l.unsupported(PROTOCOLS))?),
        )
    }),
];

/// Notes the line of a TLS key, to report it if there is no secureClientPort.
pub(super) fn note(tls: &mut TlsKeys, line: &Line<'_>) {
    if line.key != "secureClientPort" && KEYS.iter().any(|(key, _)| *key == line.key) {
        tls.lines.push((line.number, line.key.to_string()));
    }
}

impl StoreKeys {
    /// Reads `ssl.<store>.location`, `.password`, `.passwordPath` or `.type`.
    fn read(&mut self, line: &Line<'_>) -> Result<(), ConfigError> {
        match line.key.rsplit('.').next() {
            Some("location") => self.path = Some(line.path_value()),
            Some("password") => self.password = Some(line.value.to_string()),
            Some("passwordPath") => self.password_path = Some(line.path_value()),
            _ => self.kind = StoreKind::parse(line.value).map_err(|()| line.bad())?,
        }
        Ok(())
    }

    fn build(self) -> Result<Option<Store>, ConfigError> {
        let Some(path) = self.path else {
            return Ok(None);
        };
        let password = match self.password_path {
            // ZooKeeper 3.8 (SecretUtils.readSecret): the whole file, less one trailing line separator; it wins over
            // the password key.
            Some(file) => {
                let text = std::fs::read_to_string(&file)
                    .map_err(|source| ConfigError::Read { path: file, source })?;
                Some(text.strip_suffix('\n').unwrap_or(&text).to_string())
            }
            None => self.password,
        };
        Ok(Some(Store {
            path,
            password,
            kind: self.kind,
        }))
    }
}

impl TlsKeys {
    /// Sets `cfg.tls` (and `cfg.plain_client_port`) from the keys read, or reports them ignored without a
    /// secureClientPort. `plain`: a clientPort or clientPortAddress was given.
    pub(super) fn apply(self, cfg: &mut ServerConfig, plain: bool, path: &Path) -> Result<(), ConfigError> {
        let Some(secure_port) = self.port else {
            for (line, key) in self.lines {
                cfg.ignored.push(IgnoredKey {
                    path: path.to_path_buf(),
                    line,
                    key,
                    reason: "no secureClientPort, so no TLS".into(),
                });
            }
            return Ok(());
        };
        // ZooKeeper: no clientPort (nor clientPortAddress) with a secureClientPort is a TLS-only server.
        cfg.plain_client_port = plain;
        cfg.tls = Some(TlsConfig {
            // ZooKeeper's secureClientPortAddress defaults to the wildcard, whatever clientPortAddress says.
            listen: SocketAddr::new(
                self.addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                secure_port,
            ),
            key_store: self.key_store.build()?,
            trust_store: self.trust_store.build()?,
            client_auth: self.client_auth,
            // ZooKeeper 3.8: ssl.enabledProtocols defaults to ssl.protocol, which defaults to TLSv1.2.
            protocols: self
                .enabled
                .unwrap_or_else(|| vec![self.protocol.unwrap_or(TlsProtocol::Tls12)]),
            super_user: self.super_user,
        });
        Ok(())
    }
}
