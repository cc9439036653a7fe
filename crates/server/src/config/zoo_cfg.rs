//! Reading a `zoo.cfg`: the lines, the table of key handlers, and what is settled once every line is read.
//!
//! Every key the embedded server applies has one row in one table of its concern: [`LISTEN`], [`LIMITS`] and
//! [`STORAGE`] here, [`super::tls_keys::KEYS`] and [`super::auth_keys::KEYS`]. A key in no table goes to
//! [`super::ignored::ignored_because`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use super::auth_keys;
use super::ignored::ignored_because;
use super::reading::{set, Keys, Line, Reading, SaslKeys, TlsKeys};
use super::tls_keys;
use super::{ConfigError, IgnoredKey, ServerConfig};

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
    // ZooKeeper reads a zoo.cfg key it does not know as the system property `zookeeper.<key>`.
    ("extendedTypesEnabled", |r, l| {
        set(&mut r.cfg.extended_types_enabled, l.is_true())
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
