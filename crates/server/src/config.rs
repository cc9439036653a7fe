//! Server configuration, including parsing of a ZooKeeper `zoo.cfg`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::sasl::{JaasError, SaslConfig};

mod auth_keys;
mod ignored;
mod reading;
mod tls_keys;
mod zoo_cfg;

#[cfg(test)]
use ignored::REPLICATION;

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
    /// Four-letter words answered (`4lw.commands.whitelist`); a known word not listed gets ZooKeeper's `<word> is
    /// not executed because it is not in the whitelist.` `["*"]` allows all. `srvr` is always answered, as in
    /// ZooKeeper (which adds it to every whitelist). Default: `srvr`, `ruok`, `isro` (see
    /// [`DEFAULT_FOUR_LETTER_WORDS`]).
    pub four_letter_words: Vec<String>,
    /// Unsent bytes (replies and notifications) above which the server stops reading a connection's requests, until
    /// the client reads enough of them (zoo.cfg `maxClientPendingBytes`; default 1 MiB). One reply may take a
    /// connection past it (a `getData` of a large node): the bound is this plus the largest reply.
    pub max_pending_bytes: usize,
    /// Unsent notification bytes above which a connection is closed (its session lives on, as after any
    /// disconnect): a client that does not read its watch events while others write cannot make the server hold
    /// them without end (zoo.cfg `maxClientPendingNotificationBytes`; default 4 MiB; 0 = no limit).
    pub max_pending_notification_bytes: usize,
    /// How long a new connection may take to complete its connect request (or its four-letter word) before it is
    /// closed, as ZooKeeper's NIO server closes connections without a session (`zookeeper.nio.sessionlessCnxnTimeout`,
    /// zoo.cfg `nio.sessionlessCnxnTimeout` in milliseconds; default 10 s). Once a session is established, a
    /// connection from which no complete request arrives within its negotiated session timeout is closed as well
    /// (clients ping every third of it), so a stalled partial frame cannot hold a connection either.
    pub sessionless_cnxn_timeout: Duration,
    /// Most requests one connection may have in flight before the server stops reading from it.
    pub max_outstanding_per_connection: usize,
    /// `user:base64(sha1(user:password))` of a super user who bypasses every ACL once authenticated with that
    /// digest (ZooKeeper's system property `zookeeper.DigestAuthenticationProvider.superDigest`; in zoo.cfg the key
    /// `DigestAuthenticationProvider.superDigest`, which ZooKeeper reads as the same property).
    pub super_digest: Option<String>,
    /// Whether clients are served in plaintext on `listen` (default `true`). `false` makes a TLS-only server and
    /// needs `tls`: what a zoo.cfg with secureClientPort and without clientPort asks for.
    pub plain_client_port: bool,
    /// TLS on a second, secure client port (zoo.cfg's secureClientPort and `ssl.*` keys); `None` = no TLS.
    pub tls: Option<TlsConfig>,
    /// The zoo.cfg keys [`ServerConfig::from_zoo_cfg`] did not apply, and why; [`crate::Server::start`] logs one
    /// warning line for each.
    pub ignored: Vec<IgnoredKey>,
    /// Transactions logged between snapshots (ZooKeeper's `snapCount`, default 100,000). Recovery replays at
    /// most about this many, and log files older than the snapshots kept are deleted after each snapshot.
    pub snap_count: u64,
    /// Bytes logged between snapshots (ZooKeeper's `snapSizeLimitInKb`, default 4 GiB): with large writes this
    /// bound comes before `snap_count`, so the log's disk use stays bounded by bytes, not only by count.
    pub snap_size_limit: u64,
    /// How often empty container nodes are looked for and deleted: those that had children and have none now
    /// (ZooKeeper's `znode.container.checkIntervalMs`, a Java system property there; default 60 s).
    pub container_check_interval: Duration,
    /// TTL nodes (create modes 5 and 6 through `createTTL`, opcode 21): ZooKeeper's `zookeeper.extendedTypesEnabled`
    /// (in zoo.cfg `extendedTypesEnabled`, which ZooKeeper reads as that system property), off by default. Off, a
    /// TTL create is answered `Unimplemented` as ZooKeeper does; on, TTL nodes are created and the container
    /// sweep (every [`ServerConfig::container_check_interval`]) deletes each one that has no children and whose
    /// mtime is more than its TTL ago.
    pub extended_types_enabled: bool,
    /// SASL DIGEST-MD5 for clients: the users of a JAAS file's `Server` section
    /// ([`SaslConfig::from_jaas_file`]), which ZooKeeper names with the JVM property
    /// `java.security.auth.login.config` (in zoo.cfg, our key of the same name; `zklock serve --jaas FILE`). A
    /// client that authenticates gets the id `sasl:<user>`, and ACLs may name `sasl` ids. `None` (the default):
    /// SASL requests are answered as by a ZooKeeper without a JAAS `Server` section (success, no token, no id).
    pub sasl: Option<SaslConfig>,
    /// The schemes a connection must have authenticated with (one of them) before any request other than `auth`
    /// and SASL is served: ZooKeeper 3.8's `enforce.auth.enabled=true` with `enforce.auth.schemes`, or
    /// `sessionRequireClientSASLAuth=true` (= `sasl`). A request of a connection without one of these ids is
    /// answered `SessionClosedRequireSaslAuth` and the connection is closed. Empty (the default): none required.
    pub enforce_auth_schemes: Vec<String>,
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
            four_letter_words: DEFAULT_FOUR_LETTER_WORDS.iter().map(|s| s.to_string()).collect(),
            max_pending_bytes: 1 << 20,
            max_pending_notification_bytes: 4 << 20,
            sessionless_cnxn_timeout: DEFAULT_SESSIONLESS_CNXN_TIMEOUT,
            max_outstanding_per_connection: 1000,
            super_digest: None,
            plain_client_port: true,
            tls: None,
            ignored: Vec::new(),
            snap_count: 100_000,
            snap_size_limit: 4 << 30,
            container_check_interval: Duration::from_secs(60),
            extended_types_enabled: false,
            sasl: None,
            enforce_auth_schemes: Vec::new(),
        }
    }
}

/// The four-letter words answered without `4lw.commands.whitelist`: ZooKeeper 3.5+'s default (`srvr`, which it
/// always answers) plus `ruok` and `isro`, the health checks. These two are safe to answer to anyone: `ruok` says
/// `imok` (or nothing) and `isro` says `rw`, neither names a node, a session, a client address nor a setting.
/// `stat`, `cons`, `dump`, `wchc`, `wchp`, `envi`, `conf`, `mntr` and `wchs` do, and are answered only when listed.
pub const DEFAULT_FOUR_LETTER_WORDS: &[&str] = &["srvr", "ruok", "isro"];

/// ZooKeeper's `zookeeper.nio.sessionlessCnxnTimeout` default.
pub const DEFAULT_SESSIONLESS_CNXN_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS on the secure client port, as ZooKeeper 3.8 configures it in zoo.cfg: `secureClientPort`,
/// `secureClientPortAddress` and the client `ssl.*` keys (`ssl.keyStore.*`, `ssl.trustStore.*`, `ssl.clientAuth`,
/// `ssl.protocol`, `ssl.enabledProtocols`), plus `X509AuthenticationProvider.superUser`.
///
/// A client that presents a certificate the trust store verifies is authenticated as `x509:<subject>` (the
/// subject distinguished name in RFC 2253 form, e.g. `CN=app,O=example`), as ZooKeeper's
/// `X509AuthenticationProvider` does; ACLs may then name that id (`x509:CN=app,O=example`) or use the `auth`
/// scheme.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Where TLS clients connect (`secureClientPortAddress:secureClientPort`; the address defaults to the wildcard
    /// 0.0.0.0, as in ZooKeeper, not to clientPortAddress). Port 0 picks a free port.
    pub listen: SocketAddr,
    /// The server's private key and certificate chain (`ssl.keyStore.*`); required.
    pub key_store: Option<Store>,
    /// The CA certificates client certificates are verified against (`ssl.trustStore.*`); required unless
    /// `client_auth` is [`ClientAuth::None`].
    pub trust_store: Option<Store>,
    /// Whether clients must (`need`, ZooKeeper's default), may (`want`) or do not (`none`) present a certificate.
    pub client_auth: ClientAuth,
    /// The TLS versions offered (`ssl.enabledProtocols`, else `ssl.protocol`, else TLSv1.2 only, as ZooKeeper 3.8).
    pub protocols: Vec<TlsProtocol>,
    /// A certificate subject (RFC 2253) whose holder is a super user who bypasses every ACL
    /// (`X509AuthenticationProvider.superUser`).
    pub super_user: Option<String>,
}

impl TlsConfig {
    /// TLS on `listen` with the key store `key_store` and no client certificates: the simplest working setup.
    pub fn new(listen: SocketAddr, key_store: Store) -> TlsConfig {
        TlsConfig {
            listen,
            key_store: Some(key_store),
            trust_store: None,
            client_auth: ClientAuth::None,
            protocols: vec![TlsProtocol::Tls12],
            super_user: None,
        }
    }
}

/// A key store or trust store file (`ssl.keyStore.*` / `ssl.trustStore.*`).
#[derive(Clone)]
pub struct Store {
    /// The file (`ssl.*.location`).
    pub path: PathBuf,
    /// Its password (`ssl.*.password`, or the contents of the file `ssl.*.passwordPath`, which wins, as in
    /// ZooKeeper). PKCS12 files need it; PEM files must hold an unencrypted key.
    pub password: Option<String>,
    /// Its format (`ssl.*.type`); `None` = from the file name's extension (`.pem`, `.p12`), as ZooKeeper does.
    pub kind: Option<StoreKind>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("kind", &self.kind)
            .finish()
    }
}

impl Store {
    /// A store file of the given kind, without a password.
    pub fn new(path: impl Into<PathBuf>, kind: StoreKind) -> Store {
        Store {
            path: path.into(),
            password: None,
            kind: Some(kind),
        }
    }

    /// The kind: `kind`, or guessed from the extension (`.pem`, `.p12`, `.jks`, `.bcfks`) as ZooKeeper does.
    pub fn resolved_kind(&self) -> Option<StoreKind> {
        self.kind.or_else(|| {
            let name = self.path.file_name()?.to_str()?;
            let extension = &name[name.rfind('.')?..];
            [
                StoreKind::Pem,
                StoreKind::Pkcs12,
                StoreKind::Jks,
                StoreKind::Bcfks,
            ]
            .into_iter()
            .find(|k| k.extension() == extension)
        })
    }
}

/// The format of a key or trust store (`ssl.keyStore.type`: ZooKeeper's names, in any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// PEM: a key store holds the private key (PKCS#8, PKCS#1 or SEC1, unencrypted) and the certificate chain, leaf
    /// first; a trust store holds CA certificates.
    Pem,
    /// PKCS#12 (what `keytool` and `openssl pkcs12` write).
    Pkcs12,
    /// Java's old JKS format: not readable here (convert it to PKCS12 with `keytool -importkeystore`).
    Jks,
    /// Bouncy Castle's BCFKS: not readable here.
    Bcfks,
}

impl StoreKind {
    fn parse(value: &str) -> Result<Option<StoreKind>, ()> {
        Ok(Some(match value.to_ascii_uppercase().as_str() {
            "" => return Ok(None),
            "PEM" => StoreKind::Pem,
            "PKCS12" => StoreKind::Pkcs12,
            "JKS" => StoreKind::Jks,
            "BCFKS" => StoreKind::Bcfks,
            _ => return Err(()),
        }))
    }

    /// The file name extension ZooKeeper recognises the kind by.
    pub fn extension(self) -> &'static str {
        match self {
            StoreKind::Pem => ".pem",
            StoreKind::Pkcs12 => ".p12",
            StoreKind::Jks => ".jks",
            StoreKind::Bcfks => ".bcfks",
        }
    }
}

/// `ssl.clientAuth`: whether a TLS client must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// A certificate the trust store verifies is required (ZooKeeper's default).
    #[default]
    Need,
    /// A certificate is asked for and verified if presented; a client without one is served too.
    Want,
    /// No certificate is asked for.
    None,
}

impl ClientAuth {
    fn parse(value: &str) -> Result<ClientAuth, ()> {
        match value.to_ascii_lowercase().as_str() {
            "" | "need" => Ok(ClientAuth::Need),
            "want" => Ok(ClientAuth::Want),
            "none" => Ok(ClientAuth::None),
            _ => Err(()),
        }
    }
}

/// A TLS version (`ssl.protocol`, `ssl.enabledProtocols`: `TLSv1.2`, `TLSv1.3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsProtocol {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

const PROTOCOLS: &str = "the embedded server speaks TLSv1.2 and TLSv1.3 only";

impl TlsProtocol {
    fn parse(value: &str) -> Result<TlsProtocol, ()> {
        match value {
            "TLSv1.2" => Ok(TlsProtocol::Tls12),
            "TLSv1.3" => Ok(TlsProtocol::Tls13),
            _ => Err(()),
        }
    }
}

/// A zoo.cfg key that was not applied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredKey {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// The key (or the whole line, when it has no `=`).
    pub key: String,
    /// Why it is ignored, e.g. "not supported by the embedded server (a replication setting: ...)".
    pub reason: String,
}

impl std::fmt::Display for IgnoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: ignoring {}: {}",
            self.path.display(),
            self.line,
            self.key,
            self.reason
        )
    }
}

/// Why a `zoo.cfg` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The JAAS file named by `java.security.auth.login.config` is unusable.
    #[error("{0}")]
    Jaas(#[from] JaasError),
    /// `enforce.auth.enabled=true` without `enforce.auth.schemes` (ZooKeeper refuses to start too).
    #[error("{path}: enforce.auth.enabled is true, so enforce.auth.schemes must be configured")]
    EnforceWithoutSchemes {
        /// The file.
        path: PathBuf,
    },
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
    /// A key asks for something the embedded server cannot do.
    #[error("{path}:{line}: {key}={value} is not supported: {reason}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
        /// The offending value.
        value: String,
        /// Why not.
        reason: String,
    },
}

impl ServerConfig {
    /// The ACL schemes this configuration knows, as ZooKeeper's `ProviderRegistry` would: `ip`, `digest`, `x509`
    /// with a secure client port, `sasl` with SASL configured.
    pub fn known_auth_scheme(&self, scheme: &str) -> bool {
        match scheme {
            "ip" | "digest" => true,
            "x509" => self.tls.is_some(),
            "sasl" => self.sasl.is_some(),
            _ => false,
        }
    }

    /// Reads a ZooKeeper `zoo.cfg` (Java properties subset: `key=value`, `#`/`!` comments).
    ///
    /// Applied: clientPort, clientPortAddress, secureClientPort, secureClientPortAddress, dataDir, dataLogDir,
    /// tickTime, minSessionTimeout, maxSessionTimeout, maxClientCnxns, jute.maxbuffer, 4lw.commands.whitelist,
    /// maxClientPendingBytes, maxClientPendingNotificationBytes (ours), nio.sessionlessCnxnTimeout,
    /// snapCount, snapSizeLimitInKb, znode.container.checkIntervalMs (a Java system property for ZooKeeper, see
    /// [`ServerConfig::container_check_interval`]), extendedTypesEnabled (TTL nodes, see
    /// [`ServerConfig::extended_types_enabled`]), `DigestAuthenticationProvider.superDigest`,
    /// `X509AuthenticationProvider.superUser`, the client `ssl.*` keys (see [`TlsConfig`]), and for SASL
    /// `java.security.auth.login.config` (the JAAS file: a JVM property for ZooKeeper, a zoo.cfg key here),
    /// `sasl.serverconfig`, `superUser`, `sessionRequireClientSASLAuth`, `enforce.auth.enabled` and
    /// `enforce.auth.schemes` (see [`ServerConfig::sasl`], [`ServerConfig::enforce_auth_schemes`]). Every other key is
    /// listed in [`ServerConfig::ignored`] with the reason (a replication setting, an unknown key, ...), which
    /// [`crate::Server::start`] logs as one warning each; keys whose value asks for what the embedded server does
    /// anyway (`serverCnxnFactory`, `admin.enableServer=false`, `forceSync=yes`, the built-in `authProvider.N`
    /// classes, ...) are accepted silently.
    ///
    /// Without clientPort (and clientPortAddress) but with secureClientPort, the server serves TLS only, as
    /// ZooKeeper does; with neither, it listens on 0.0.0.0:2181.
    pub fn from_zoo_cfg(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_zoo_cfg_str(&text, path)
    }

    fn from_zoo_cfg_str(text: &str, path: &Path) -> Result<Self, ConfigError> {
        zoo_cfg::read(text, path)
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
    fn reads_extended_types_enabled() {
        let read = |text: &str| ServerConfig::from_zoo_cfg_str(text, Path::new("z")).unwrap();
        assert!(
            !ServerConfig::default().extended_types_enabled,
            "off by default, as in ZooKeeper"
        );
        let on = read("extendedTypesEnabled=true\n");
        assert!(on.extended_types_enabled);
        assert!(on.ignored.is_empty(), "applied, not ignored");
        // Java's `Boolean.getBoolean`: only "true", in any case, is true.
        assert!(read("extendedTypesEnabled=TRUE\n").extended_types_enabled);
        let off = read("extendedTypesEnabled=false\n");
        assert!(!off.extended_types_enabled && off.ignored.is_empty());
        assert!(!read("extendedTypesEnabled=yes\n").extended_types_enabled);
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
    fn each_ignored_key_is_reported_once() {
        let text = "clientPort=2181\nssl.quorum.keyStore.location=/q.p12\nssl.keyStore.location=/k.pem\n\
                    secureClientPortAddress=127.0.0.1\nmetricsProvider.className=x\nskipACL=no\n";
        let cfg = ServerConfig::from_zoo_cfg_str(text, Path::new("zoo.cfg")).unwrap();
        let ignored: Vec<String> = cfg.ignored.iter().map(ToString::to_string).collect();
        assert_eq!(
            ignored,
            [
                format!("zoo.cfg:2: ignoring ssl.quorum.keyStore.location: {REPLICATION}"),
                "zoo.cfg:3: ignoring ssl.keyStore.location: no secureClientPort, so no TLS".to_string(),
                "zoo.cfg:4: ignoring secureClientPortAddress: no secureClientPort, so no TLS".to_string(),
                "zoo.cfg:5: ignoring metricsProvider.className: not supported by the embedded server \
                 (`zklock serve --metrics ADDR` serves the mntr figures to Prometheus)"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn parses_the_connection_limits_and_documents_their_defaults() {
        let default = ServerConfig::default();
        assert_eq!(default.max_pending_bytes, 1 << 20);
        assert_eq!(default.max_pending_notification_bytes, 4 << 20);
        assert_eq!(default.sessionless_cnxn_timeout, Duration::from_secs(10));
        assert_eq!(default.four_letter_words, ["srvr", "ruok", "isro"]);
        let text = "maxClientPendingBytes=65536\nmaxClientPendingNotificationBytes=0\n\
                    nio.sessionlessCnxnTimeout=2500\n";
        let cfg = ServerConfig::from_zoo_cfg_str(text, Path::new("z")).unwrap();
        assert_eq!(cfg.max_pending_bytes, 65536);
        assert_eq!(cfg.max_pending_notification_bytes, 0);
        assert_eq!(cfg.sessionless_cnxn_timeout, Duration::from_millis(2500));
        assert!(cfg.ignored.is_empty(), "{:?}", cfg.ignored);
        let bad = ServerConfig::from_zoo_cfg_str("maxClientPendingBytes=lots\n", Path::new("z")).unwrap_err();
        assert!(matches!(bad, ConfigError::BadValue { line: 1, .. }));
    }

    #[test]
    fn reads_the_sasl_keys() {
        let dir = tempfile::tempdir().unwrap();
        let jaas = dir.path().join("jaas.conf");
        std::fs::write(
            &jaas,
            "Zk { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob=\"b\"; };",
        )
        .unwrap();
        let text = format!(
            "java.security.auth.login.config={}\nsasl.serverconfig=Zk\nsuperUser=bob\n\
             authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
             enforce.auth.enabled=true\nenforce.auth.schemes=sasl, digest\n",
            jaas.display()
        );
        let cfg = ServerConfig::from_zoo_cfg_str(&text, Path::new("z")).unwrap();
        let sasl = cfg.sasl.as_ref().expect("SASL configured");
        assert_eq!(sasl.users.get("bob").map(String::as_str), Some("b"));
        assert_eq!(sasl.super_user.as_deref(), Some("bob"));
        assert_eq!(cfg.enforce_auth_schemes, vec!["sasl", "digest"]);
        assert!(cfg.ignored.is_empty(), "{:?}", cfg.ignored);
        assert!(cfg.known_auth_scheme("sasl") && !cfg.known_auth_scheme("x509"));

        // sessionRequireClientSASLAuth wins over enforce.auth.*, as in ZooKeeper.
        let required = format!("{text}sessionRequireClientSASLAuth=true\n");
        let cfg = ServerConfig::from_zoo_cfg_str(&required, Path::new("z")).unwrap();
        assert_eq!(cfg.enforce_auth_schemes, vec!["sasl"]);

        // Enforcing without schemes is refused; the SASL provider and superUser without a JAAS file are reported.
        assert!(matches!(
            ServerConfig::from_zoo_cfg_str("enforce.auth.enabled=true\n", Path::new("z")),
            Err(ConfigError::EnforceWithoutSchemes { .. })
        ));
        let cfg = ServerConfig::from_zoo_cfg_str(
            "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\nsuperUser=bob\n",
            Path::new("z"),
        )
        .unwrap();
        assert!(cfg.sasl.is_none());
        assert_eq!(cfg.ignored.len(), 2, "{:?}", cfg.ignored);
        // A section that is not there.
        let missing = format!("java.security.auth.login.config={}\n", jaas.display());
        assert!(matches!(
            ServerConfig::from_zoo_cfg_str(&missing, Path::new("z")),
            Err(ConfigError::Jaas(_))
        ));
    }

    #[test]
    fn rejects_bad_number() {
        let err = ServerConfig::from_zoo_cfg_str("tickTime=abc\n", Path::new("z")).unwrap_err();
        assert!(matches!(err, ConfigError::BadValue { line: 1, .. }));
    }
}
