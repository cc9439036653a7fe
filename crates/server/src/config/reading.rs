//! What reading a `zoo.cfg` needs in every table: a line, the handler and table types, and what has been read so
//! far (the per-concern state of the TLS and SASL keys included, whose tables and rules are in `tls_keys.rs` and
//! `auth_keys.rs`). It depends on no other part of the reader, so every table may.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::{ClientAuth, ConfigError, IgnoredKey, ServerConfig, StoreKind, TlsProtocol};

/// What a key does with its line: sets a field of the configuration or of what is read so far.
pub(super) type Handler = fn(&mut Reading, &Line<'_>) -> Result<(), ConfigError>;

/// A concern's keys and their handlers.
pub(super) type Keys = &'static [(&'static str, Handler)];

/// Sets a field; what a handler of one line mostly does.
pub(super) fn set<T>(field: &mut T, value: T) -> Result<(), ConfigError> {
    *field = value;
    Ok(())
}

/// One `key=value` line.
pub(super) struct Line<'a> {
    pub path: &'a Path,
    /// 1-based.
    pub number: usize,
    pub key: &'a str,
    pub value: &'a str,
}

impl Line<'_> {
    /// The value does not parse.
    pub fn bad(&self) -> ConfigError {
        ConfigError::BadValue {
            path: self.path.to_path_buf(),
            line: self.number,
            key: self.key.to_string(),
            value: self.value.to_string(),
        }
    }

    /// The value asks for something the embedded server cannot do.
    pub fn unsupported(&self, reason: &str) -> ConfigError {
        ConfigError::Unsupported {
            path: self.path.to_path_buf(),
            line: self.number,
            key: self.key.to_string(),
            value: self.value.to_string(),
            reason: reason.to_string(),
        }
    }

    /// The line is not applied, for `reason`.
    pub fn ignored(&self, reason: String) -> IgnoredKey {
        IgnoredKey {
            path: self.path.to_path_buf(),
            line: self.number,
            key: self.key.to_string(),
            reason,
        }
    }

    pub fn parse<T: FromStr>(&self) -> Result<T, ConfigError> {
        self.value.parse().map_err(|_| self.bad())
    }

    /// Milliseconds.
    pub fn ms(&self) -> Result<Duration, ConfigError> {
        self.parse::<u64>().map(Duration::from_millis)
    }

    pub fn path_value(&self) -> PathBuf {
        PathBuf::from(self.value)
    }

    /// The value as text, `None` when empty.
    pub fn non_empty(&self) -> Option<String> {
        (!self.value.is_empty()).then(|| self.value.to_string())
    }

    /// A comma-separated list, items trimmed, empty ones left out.
    pub fn list(&self) -> impl Iterator<Item = &str> {
        self.value.split(',').map(str::trim).filter(|s| !s.is_empty())
    }

    pub fn is_true(&self) -> bool {
        self.value.eq_ignore_ascii_case("true")
    }
}

/// What has been read so far.
pub(super) struct Reading {
    pub cfg: ServerConfig,
    pub port: Option<u16>,
    pub addr: Option<IpAddr>,
    pub tls: TlsKeys,
    pub sasl: SaslKeys,
}

/// The zoo.cfg `ssl.*` keys of one store, as read.
#[derive(Default)]
pub(super) struct StoreKeys {
    pub(super) path: Option<PathBuf>,
    pub(super) password: Option<String>,
    pub(super) password_path: Option<PathBuf>,
    pub(super) kind: Option<StoreKind>,
}

/// The TLS keys of a zoo.cfg, as read.
#[derive(Default)]
pub(super) struct TlsKeys {
    pub(super) port: Option<u16>,
    pub(super) addr: Option<IpAddr>,
    pub(super) key_store: StoreKeys,
    pub(super) trust_store: StoreKeys,
    pub(super) client_auth: ClientAuth,
    pub(super) protocol: Option<TlsProtocol>,
    pub(super) enabled: Option<Vec<TlsProtocol>>,
    pub(super) super_user: Option<String>,
    /// Every TLS key's line, to report them when there is no secureClientPort.
    pub(super) lines: Vec<(usize, String)>,
}

/// The SASL keys of a zoo.cfg, as read.
#[derive(Default)]
pub(super) struct SaslKeys {
    /// `java.security.auth.login.config` (ours: a JVM property for ZooKeeper) and its line.
    pub(super) jaas: Option<(usize, PathBuf)>,
    /// `sasl.serverconfig`: the JAAS section (ZooKeeper's `zookeeper.sasl.serverconfig`).
    pub(super) section: Option<String>,
    /// `superUser` (ZooKeeper's `zookeeper.superUser`) and its line.
    pub(super) super_user: Option<(usize, String)>,
    /// `sessionRequireClientSASLAuth`.
    pub(super) require: bool,
    /// `enforce.auth.enabled`.
    pub(super) enforce: bool,
    /// `enforce.auth.schemes`.
    pub(super) schemes: Vec<String>,
    /// The line and key of an `authProvider.N` naming the SASL provider.
    pub(super) provider: Option<(usize, String)>,
}
