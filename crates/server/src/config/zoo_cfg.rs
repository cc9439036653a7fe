//! Reading a `zoo.cfg`: the lines, the table of key handlers, and what is settled once every line is read.
//!
//! Every key the embedded server applies has one row in one table of its concern: [`LISTEN`], [`LIMITS`] and
//! [`STORAGE`] here, [`super::tls_keys::KEYS`] and [`super::auth_keys::KEYS`]. A key in no table goes to
//! [`super::ignored::ignored_because`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use super::auth_keys::{self, SaslKeys};
use super::ignored::ignored_because;
use super::tls_keys::{self, TlsKeys};
use super::{ConfigError, IgnoredKey, ServerConfig};

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

/// Where clients connect.
const LISTEN: Keys = &[
    ("clientPort", |r, l| set(&mut r.port, Some(l.parse()?))),
    ("clientPortAddress", |r, l| set(&mut r.addr, Some(l.parse()?))),
];

/// Time, sessions, connections and buffers.
const LIMITS: Keys = &[
    ("tickTime", |r, l| set(&mut r.cfg.tick_time, l.ms()?)),
    ("minSessionTimeout", |r, l| {
        set(&mut r.cfg.min_session_timeout, Some(l.ms()?))
    }),
    ("maxSessionTimeout", |r, l| {
        set(&mut r.cfg.max_session_timeout, Some(l.ms()?))
    }),
    ("maxClientCnxns", |r, l| {
        set(&mut r.cfg.max_client_cnxns, l.parse()?)
    }),
    ("jute.maxbuffer", |r, l| set(&mut r.cfg.max_frame_len, l.parse()?)),
    ("maxClientPendingBytes", |r, l| {
        set(&mut r.cfg.max_pending_bytes, l.parse()?)
    }),
    ("maxClientPendingNotificationBytes", |r, l| {
        set(&mut r.cfg.max_pending_notification_bytes, l.parse()?)
    }),
    // A Java system property for ZooKeeper (`-Dzookeeper.nio.sessionlessCnxnTimeout`), which a zoo.cfg line
    // `nio.sessionlessCnxnTimeout` sets too (unknown keys become `zookeeper.`-prefixed properties).
    ("nio.sessionlessCnxnTimeout", |r, l| {
        set(
            &mut r.cfg.sessionless_cnxn_timeout,
            l.ms()?.max(Duration::from_millis(1)),
        )
    }),
    ("4lw.commands.whitelist", |r, l| {
        set(
            &mut r.cfg.four_letter_words,
            l.list().map(str::to_string).collect(),
        )
    }),
];

/// Where and when data is written.
const STORAGE: Keys = &[
    ("dataDir", |r, l| set(&mut r.cfg.data_dir, Some(l.path_value()))),
    ("dataLogDir", |r, l| {
        set(&mut r.cfg.data_log_dir, Some(l.path_value()))
    }),
    ("snapCount", |r, l| {
        set(&mut r.cfg.snap_count, l.parse::<u64>()?.max(1))
    }),
    // ZooKeeper: a value <= 0 turns the size trigger off.
    ("snapSizeLimitInKb", |r, l| {
        let kb: i64 = l.parse()?;
        r.cfg.snap_size_limit = if kb <= 0 {
            u64::MAX
        } else {
            (kb as u64).saturating_mul(1024)
        };
        Ok(())
    }),
    // A Java system property for ZooKeeper (`-Dznode.container.checkIntervalMs=…`); zoo.cfg here.
    ("znode.container.checkIntervalMs", |r, l| {
        set(
            &mut r.cfg.container_check_interval,
            l.ms()?.max(Duration::from_millis(1)),
        )
    }),
];

/// Every table, by concern.
const TABLES: &[Keys] = &[LISTEN, LIMITS, STORAGE, tls_keys::KEYS, auth_keys::KEYS];

/// Reads the text of a `zoo.cfg` (see [`ServerConfig::from_zoo_cfg`]).
pub(super) fn read(text: &str, path: &Path) -> Result<ServerConfig, ConfigError> {
    let mut r = Reading {
        cfg: ServerConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 2181),
            ..Default::default()
        },
        port: None,
        addr: None,
        tls: TlsKeys::default(),
        sasl: SaslKeys::default(),
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some((key, value)) = line.split_once(['=', ':']) else {
            r.cfg.ignored.push(IgnoredKey {
                path: path.to_path_buf(),
                line: i + 1,
                key: line.to_string(),
                reason: "no `=` on the line".into(),
            });
            continue;
        };
        let line = Line {
            path,
            number: i + 1,
            key: key.trim(),
            value: value.trim(),
        };
        let handler = TABLES
            .iter()
            .flat_map(|table| table.iter())
            .find(|(key, _)| *key == line.key);
        match handler {
            Some((_, handle)) => handle(&mut r, &line)?,
            None if auth_keys::names_the_sasl_provider(&line) => auth_keys::sasl_provider(&mut r, &line),
            None => {
                if let Some(reason) = ignored_because(line.key, line.value) {
                    r.cfg.ignored.push(line.ignored(reason));
                }
            }
        }
        tls_keys::note(&mut r.tls, &line);
    }
    finish(r, path)
}

/// What depends on more than one line: the listening addresses, TLS, SASL.
fn finish(r: Reading, path: &Path) -> Result<ServerConfig, ConfigError> {
    if r.cfg.tick_time.is_zero() {
        return Err(ConfigError::BadValue {
            path: path.to_path_buf(),
            line: 0,
            key: "tickTime".into(),
            value: "0".into(),
        });
    }
    let mut cfg = r.cfg;
    cfg.listen = SocketAddr::new(
        r.addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        r.port.unwrap_or(2181),
    );
    r.tls
        .apply(&mut cfg, r.port.is_some() || r.addr.is_some(), path)?;
    r.sasl.apply(&mut cfg, path)?;
    cfg.ignored.sort_by_key(|ignored| ignored.line);
    Ok(cfg)
}
