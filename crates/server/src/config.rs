//! Server configuration, including parsing of a ZooKeeper `zoo.cfg`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything the server needs to start. `Default` gives a test-friendly server on `127.0.0.1:0` with a
/// temporary data directory and ZooKeeper's default limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port. Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// Snapshot directory; `None` = a fresh temporary directory removed on shutdown.
    pub data_dir: Option<PathBuf>,
    /// Transaction log directory; `None` = same as `data_dir`.
    pub data_log_dir: Option<PathBuf>,
    /// ZooKeeper's tickTime: session timeout bounds and expiry granularity derive from it. Default 2 s.
    pub tick_time: Duration,
    /// Lowest negotiable session timeout; `None` = 2 × tick_time.
    pub min_session_timeout: Option<Duration>,
    /// Highest negotiable session timeout; `None` = 20 × tick_time.
    pub max_session_timeout: Option<Duration>,
    /// Maximum concurrent connections from one IP address (0 = unlimited). Default 60.
    pub max_client_cnxns: usize,
    /// Largest accepted frame body (jute.maxbuffer). Default 1,048,575.
    pub max_frame_len: usize,
    /// Four-letter words answered; others close the connection. `["*"]` allows all.
    pub four_letter_words: Vec<String>,
    /// Most requests one connection may have in flight before the server stops reading from it.
    pub max_outstanding_per_connection: usize,
    /// `user:base64(sha1(user:password))` of a super user who bypasses every ACL
    /// (ZooKeeper's `zookeeper.DigestAuthenticationProvider.superDigest`).
    pub super_digest: Option<String>,
    /// Transactions logged between snapshots (ZooKeeper's `snapCount`, default 100,000). Recovery replays at
    /// most about this many, and log files older than the snapshots kept are deleted after each snapshot.
    pub snap_count: u64,
    /// Bytes logged between snapshots (ZooKeeper's `snapSizeLimitInKb`, default 4 GiB): with large writes this
    /// bound comes before `snap_count`, so the log's disk use stays bounded by bytes, not only by count.
    pub snap_size_limit: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            data_dir: None,
            data_log_dir: None,
            tick_time: Duration::from_millis(2000),
            min_session_timeout: None,
            max_session_timeout: None,
            max_client_cnxns: 60,
            max_frame_len: 1_048_575,
            four_letter_words: ["ruok", "srvr", "stat", "mntr", "cons", "envi", "wchs", "dump"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            max_outstanding_per_connection: 1000,
            super_digest: None,
            snap_count: 100_000,
            snap_size_limit: 4 << 30,
        }
    }
}

/// Why a `zoo.cfg` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A key had a value that does not parse.
    #[error("{path}:{line}: bad value for {key}: {value:?}")]
    BadValue {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
        /// The offending value.
        value: String,
    },
}

impl ServerConfig {
    /// Reads a ZooKeeper `zoo.cfg` (Java properties subset: `key=value`, `#`/`!` comments). Understood keys:
    /// clientPort, clientPortAddress, dataDir, dataLogDir, tickTime, minSessionTimeout, maxSessionTimeout,
    /// maxClientCnxns, jute.maxbuffer, 4lw.commands.whitelist, snapCount, snapSizeLimitInKb. Others (server.N, initLimit, ...) are
    /// ignored because they concern replication, which this single-node server does not do.
    pub fn from_zoo_cfg(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_zoo_cfg_str(&text, path)
    }

    fn from_zoo_cfg_str(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut cfg = ServerConfig {
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 2181),
            ..Default::default()
        };
        let mut port: u16 = 2181;
        let mut addr: Option<IpAddr> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((key, value)) = line.split_once(['=', ':']) else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let bad = || ConfigError::BadValue {
                path: path.to_path_buf(),
                line: i + 1,
                key: key.to_string(),
                value: value.to_string(),
            };
            let ms = |v: &str| v.parse::<u64>().map(Duration::from_millis).map_err(|_| bad());
            match key {
                "clientPort" => port = value.parse().map_err(|_| bad())?,
                "clientPortAddress" => addr = Some(value.parse().map_err(|_| bad())?),
                "dataDir" => cfg.data_dir = Some(PathBuf::from(value)),
                "dataLogDir" => cfg.data_log_dir = Some(PathBuf::from(value)),
                "tickTime" => cfg.tick_time = ms(value)?,
                "minSessionTimeout" => cfg.min_session_timeout = Some(ms(value)?),
                "maxSessionTimeout" => cfg.max_session_timeout = Some(ms(value)?),
                "maxClientCnxns" => cfg.max_client_cnxns = value.parse().map_err(|_| bad())?,
                "jute.maxbuffer" => cfg.max_frame_len = value.parse().map_err(|_| bad())?,
                "snapCount" => cfg.snap_count = value.parse::<u64>().map_err(|_| bad())?.max(1),
                // ZooKeeper: a value <= 0 turns the size trigger off.
                "snapSizeLimitInKb" => {
                    let kb: i64 = value.parse().map_err(|_| bad())?;
                    cfg.snap_size_limit = if kb <= 0 {
                        u64::MAX
                    } else {
                        (kb as u64).saturating_mul(1024)
                    };
                }
                "4lw.commands.whitelist" => {
                    cfg.four_letter_words = value
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                }
                _ => {}
            }
        }
        if cfg.tick_time.is_zero() {
            return Err(ConfigError::BadValue {
                path: path.to_path_buf(),
                line: 0,
                key: "tickTime".into(),
                value: "0".into(),
            });
        }
        cfg.listen = SocketAddr::new(addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), port);
        Ok(cfg)
    }

    /// The negotiable session timeout range `[min, max]`.
    pub fn session_timeout_bounds(&self) -> (Duration, Duration) {
        let min = self.min_session_timeout.unwrap_or(self.tick_time * 2);
        let max = self.max_session_timeout.unwrap_or(self.tick_time * 20).max(min);
        (min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_snapshot_triggers() {
        let cfg = ServerConfig::from_zoo_cfg_str("snapCount=500\nsnapSizeLimitInKb=2048\n", Path::new("z"))
            .unwrap();
        assert_eq!((cfg.snap_count, cfg.snap_size_limit), (500, 2 << 20));
        let off = ServerConfig::from_zoo_cfg_str("snapSizeLimitInKb=-1\n", Path::new("z")).unwrap();
        assert_eq!(
            off.snap_size_limit,
            u64::MAX,
            "<= 0 turns the size trigger off, as in ZooKeeper"
        );
        let default = ServerConfig::default();
        assert_eq!((default.snap_count, default.snap_size_limit), (100_000, 4 << 30));
    }

    #[test]
    fn parses_zoo_cfg() {
        let text = "# c\ntickTime=1000\nclientPort=2182\nclientPortAddress=127.0.0.1\ndataDir=/tmp/x\n\
                    maxClientCnxns=5\njute.maxbuffer=4096\n4lw.commands.whitelist=ruok, srvr\ninitLimit=5\n";
        let cfg = ServerConfig::from_zoo_cfg_str(text, Path::new("zoo.cfg")).unwrap();
        assert_eq!(cfg.listen, "127.0.0.1:2182".parse().unwrap());
        assert_eq!(cfg.tick_time, Duration::from_millis(1000));
        assert_eq!(cfg.data_dir.as_deref(), Some(Path::new("/tmp/x")));
        assert_eq!(cfg.max_client_cnxns, 5);
        assert_eq!(cfg.max_frame_len, 4096);
        assert_eq!(cfg.four_letter_words, vec!["ruok", "srvr"]);
        assert_eq!(
            cfg.session_timeout_bounds(),
            (Duration::from_secs(2), Duration::from_secs(20))
        );
    }

    #[test]
    fn rejects_bad_number() {
        let err = ServerConfig::from_zoo_cfg_str("tickTime=abc\n", Path::new("z")).unwrap_err();
        assert!(matches!(err, ConfigError::BadValue { line: 1, .. }));
    }
}
