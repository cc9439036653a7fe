//! Connecting to ZooKeeper (or an embedded server) — with the credentials and the TLS settings given — the ACLs of
//! the nodes a command creates, and closing sessions properly on the way out.
//!
//! Credentials come from `--auth`, or else `ZKLOCK_AUTH`, plus `--auth-file`; they are read here, when a command
//! connects, so that those from the environment and from files never pass through clap (whose errors repeat the
//! value given) nor through any process's command line. Every mistake found here — an unreadable file, a bad line,
//! `--acl creator` without credentials, `--sasl` without its password — is a usage error (exit 2, [`UsageError`]);
//! ZooKeeper refusing the credentials or the SASL handshake, or requiring authentication none was given for, is a
//! failure (exit 3), told on connecting.
//!
//! SASL (`--sasl digest-md5:USER`) takes its password from [`SASL_PASSWORD_ENV`] or `--sasl-password-file`, read
//! here too; zookeeper-client runs the handshake when it connects, before any request.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use zookeeper_client::{Acl, Acls, AuthId, Client, Permission, SaslOptions, TlsOptions};

use crate::cli::{AclArgs, ConnectArgs, OptionalConnectArgs, SecurityArgs};
use crate::exit::UsageError;
use crate::values::{self, Credential, SaslMechanism};

/// The environment variable that holds credentials: one `SCHEME:CREDENTIALS` per line (a password may contain a
/// comma, so commas do not separate). Used when no `--auth` is given, as `ZKLOCK_CONNECT` is when no `--connect`
/// is.
pub const AUTH_ENV: &str = "ZKLOCK_AUTH";

/// The environment variable that holds the password of `--sasl` (unless `--sasl-password-file` gives it).
pub const SASL_PASSWORD_ENV: &str = "ZKLOCK_SASL_PASSWORD";

/// The only service name zookeeper-client's DIGEST-MD5 speaks for (its digest-uri is `zookeeper/zk-sasl-md5`, as
/// ZooKeeper's DIGEST-MD5 server expects): `--sasl-service`'s default.
pub const SASL_SERVICE: &str = "zookeeper";

/// What a command connects with besides the connect string: credentials and TLS, read from [`SecurityArgs`].
#[derive(Debug, Clone, Default)]
pub struct Security {
    credentials: Vec<Credential>,
    sasl: Option<Sasl>,
    tls: Option<TlsOptions>,
    /// The PEM the TLS settings were made of, to tell why a handshake fails ([`tls_handshake_error`]).
    tls_pem: Option<TlsPem>,
}

/// SASL: who we are and the options zookeeper-client authenticates with. Its `Debug` hides the options (they hold
/// the password).
#[derive(Clone)]
struct Sasl {
    mechanism: SaslMechanism,
    user: String,
    options: SaslOptions,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The SASL settings of `--sasl`, with the password from `--sasl-password-file` or else [`SASL_PASSWORD_ENV`].
fn sasl_options(args: &SecurityArgs) -> Result<Option<Sasl>> {
    let Some(spec) = &args.sasl else {
        return Ok(None);
    };
    if let Some(service) = args
        .sasl_service
        .as_deref()
        .filter(|&service| service != SASL_SERVICE)
    {
        return Err(usage(format!(
            "--sasl-service {service}: DIGEST-MD5 speaks for the service {SASL_SERVICE} only (ZooKeeper's \
             DIGEST-MD5 server expects the digest-uri {SASL_SERVICE}/zk-sasl-md5)"
        )));
    }
    let password = match &args.sasl_password_file {
        Some(path) => {
            let text = read_private(path, "--sasl-password-file")?;
            let line = text.lines().next().unwrap_or("").to_owned();
            if line.is_empty() {
                return Err(usage(format!(
                    "--sasl-password-file {}: its first line is empty (it holds the password)",
                    path.display()
                )));
            }
            line
        }
        None => match std::env::var(SASL_PASSWORD_ENV) {
            Ok(password) if !password.is_empty() => password,
            Ok(_) | Err(std::env::VarError::NotPresent) => {
                return Err(usage(format!(
                    "--sasl {}:{} needs its password: set {SASL_PASSWORD_ENV} or give --sasl-password-file",
                    spec.mechanism.name().to_ascii_lowercase(),
                    spec.user
                )))
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(usage(format!("{SASL_PASSWORD_ENV} is not UTF-8")))
            }
        },
    };
    let options = match spec.mechanism {
        SaslMechanism::DigestMd5 => SaslOptions::digest_md5(spec.user.clone(), password).into(),
    };
    Ok(Some(Sasl {
        mechanism: spec.mechanism,
        user: spec.user.clone(),
        options,
    }))
}

/// The PEM texts of `--tls-ca`, `--tls-cert` and `--tls-key`. Its `Debug` hides the key.
#[derive(Clone)]
struct TlsPem {
    ca: String,
    identity: Option<(String, String)>,
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsPem")
            .field("identity", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

impl Security {
    /// Reads what `args` names: `--auth` (or else `ZKLOCK_AUTH`) and `--auth-file`, and the TLS files. Fails with
    /// a [`UsageError`] that names the flag, the file or the line at fault — never the credentials.
    pub fn from_args(args: &SecurityArgs) -> Result<Security> {
        let mut credentials = args.auth.clone();
        if credentials.is_empty() {
            credentials = env_credentials()?;
        }
        if let Some(path) = &args.auth_file {
            let origin = format!("--auth-file {}", path.display());
            let from_file = parse_credentials(&read_private(path, "--auth-file")?, &origin)?;
            if from_file.is_empty() {
                return Err(usage(format!("{origin}: no SCHEME:CREDENTIALS line in it")));
            }
            credentials.extend(from_file);
        }
        let (tls, tls_pem) = match tls_options(args)? {
            Some((tls, pem)) => (Some(tls), Some(pem)),
            None => (None, None),
        };
        Ok(Security {
            credentials,
            sasl: sasl_options(args)?,
            tls,
            tls_pem,
        })
    }
}

/// The credentials of `ZKLOCK_AUTH`, if it is set.
fn env_credentials() -> Result<Vec<Credential>> {
    match std::env::var(AUTH_ENV) {
        Ok(text) => parse_credentials(&text, AUTH_ENV),
        Err(std::env::VarError::NotPresent) => Ok(Vec::new()),
        Err(std::env::VarError::NotUnicode(_)) => Err(usage(format!("{AUTH_ENV} is not UTF-8"))),
    }
}

/// One `SCHEME:CREDENTIALS` per line; surrounding white space, blank lines and `#` comments are skipped. Errors
/// name `origin` and the line's number, not its text.
fn parse_credentials(text: &str, origin: &str) -> Result<Vec<Credential>> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(number, line)| {
            values::credential(line).map_err(|why| usage(format!("{origin}, line {number}: {why}")))
        })
        .collect()
}

/// Whether the command has credentials to present (without reading `--auth-file`: naming one is having them).
fn has_credentials(args: &SecurityArgs) -> bool {
    !args.auth.is_empty()
        || args.auth_file.is_some()
        || args.sasl.is_some()
        || env_credentials().is_ok_and(|credentials| !credentials.is_empty())
}

/// The TLS settings, when `--tls-ca` is given: its CA certificates, and our certificate and key if given.
fn tls_options(args: &SecurityArgs) -> Result<Option<(TlsOptions, TlsPem)>> {
    let Some(ca) = &args.tls_ca else {
        return Ok(None);
    };
    let mut pem = TlsPem {
        ca: read(ca, "--tls-ca")?,
        identity: None,
    };
    let mut options = TlsOptions::new()
        .with_pem_ca(&pem.ca)
        .map_err(|err| usage(format!("--tls-ca {}: {err}", ca.display())))?;
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let identity = (read(cert, "--tls-cert")?, read_private(key, "--tls-key")?);
        options = options
            .with_pem_identity(&identity.0, &identity.1)
            .map_err(|err| {
                usage(format!(
                    "--tls-cert {} / --tls-key {}: {err}",
                    cert.display(),
                    key.display()
                ))
            })?;
        pem.identity = Some(identity);
    }
    Ok(Some((options, pem)))
}

/// Why a TLS handshake with the server `server` (`host:port` as `--connect` names it) fails, as rustls — the TLS
/// of zookeeper-client too — says it: `None` when the handshake succeeds (or cannot even be tried). Blocking.
///
/// zookeeper-client keeps the reason to its debug log; this tries the handshake again, the way it does (the same
/// CA certificates, client certificate and server name), to tell it.
fn tls_handshake_error(server: &str, pem: &TlsPem) -> Option<String> {
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
    let host = match server.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => host,
        _ => server,
    };
    let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned()).ok()?;
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
                _ => format!("TLS handshake failed: {err}"),
            });
        }
    }
    None
}

/// The text of the file `flag` names.
fn read(path: &Path, flag: &str) -> Result<String> {
    std::fs::read_to_string(path).map_err(|err| usage(format!("{flag} {}: {err}", path.display())))
}

/// Like [`read`], for a file that holds a secret: warns (once, on stderr) when other users may read it.
fn read_private(path: &Path, flag: &str) -> Result<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let text = read(path, flag)?;
    if let Ok(metadata) = std::fs::metadata(path) {
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o044 != 0 {
            eprintln!(
                "zklock: warning: {flag} {} can be read by other users (mode {mode:03o}); chmod 600 it",
                path.display()
            );
        }
    }
    Ok(text)
}

/// A usage error, as an `anyhow::Error` (see [`UsageError`]).
fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

/// The ACLs of the nodes a command creates and of the directories it creates, from `--acl` and `--parent-acl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAcls {
    /// The nodes' ACL.
    pub nodes: Vec<Acl>,
    /// The directories' ACL.
    pub parents: Vec<Acl>,
}

impl NodeAcls {
    /// Decides the ACLs. Without `--acl`: `creator` (all permissions for sessions with our credentials) when the
    /// command has credentials, `world` (all permissions for anybody) otherwise. Without `--parent-acl`: the nodes'
    /// entries with `READ` for anybody added, so that `zklock status` without credentials still shows who holds
    /// and who waits (by name; their data stays private) while nobody else may queue, delete or squat.
    pub fn from_args(security: &SecurityArgs, acl: &AclArgs) -> Result<NodeAcls> {
        let authenticated = has_credentials(security);
        let nodes = match &acl.acl {
            Some(spec) => spec.entries.clone(),
            None if authenticated => Acls::creator_all().to_vec(),
            None => Acls::anyone_all().to_vec(),
        };
        let parents = match &acl.parent_acl {
            Some(spec) => spec.entries.clone(),
            None => readable_by_anybody(nodes.clone()),
        };
        let creator = |acls: &[Acl]| acls.iter().any(|acl| acl.scheme() == "auth");
        // A TLS client certificate may be an identity too (ZooKeeper's x509 provider): then `creator` is its.
        if !authenticated && security.tls_cert.is_none() && (creator(&nodes) || creator(&parents)) {
            return Err(usage(
                "an ACL with creator needs credentials (--auth, ZKLOCK_AUTH or --auth-file, --sasl, or a TLS \
                 client certificate): without them the session has no identity to give the nodes to"
                    .to_owned(),
            ));
        }
        Ok(NodeAcls { nodes, parents })
    }

    /// `session` with these ACLs.
    pub fn apply(&self, session: zklock::Session) -> zklock::Session {
        session
            .with_acls(Acls::new(&self.nodes))
            .with_parent_acls(Acls::new(&self.parents))
    }
}

/// `acls` with `READ` for `world:anyone` (added to its entry, or as one).
fn readable_by_anybody(mut acls: Vec<Acl>) -> Vec<Acl> {
    match acls.iter_mut().find(|acl| acl.auth_id() == &AuthId::anyone()) {
        Some(world) => *world = Acl::new(world.permission() | Permission::READ, AuthId::anyone()),
        None => acls.push(Acl::new(Permission::READ, AuthId::anyone())),
    }
    acls
}

/// What to add to the message of a recipe's error: why ZooKeeper refused, when an ACL did (`NoAuth`).
pub fn refused(err: &zklock::Error) -> &'static str {
    match err {
        zklock::Error::ZooKeeper { source: zookeeper_client::Error::NoAuth, .. } => {
            " (the ACL of the directory does not let this session queue: give credentials it admits with --auth, \
             ZKLOCK_AUTH or --auth-file, or --sasl)"
        }
        zklock::Error::ZooKeeper { source: zookeeper_client::Error::InvalidAcl, .. } => {
            " (ZooKeeper refused the ACL of --acl or --parent-acl)"
        }
        _ => "",
    }
}

/// A session on `client` whose recipes create their nodes with the ACLs of `--acl` and `--parent-acl`
/// ([`NodeAcls::from_args`]).
pub fn session(client: &Client, security: &SecurityArgs, acl: &AclArgs) -> Result<zklock::Session> {
    Ok(NodeAcls::from_args(security, acl)?.apply(zklock::Session::new(client)))
}

/// How long a server may take to accept a TCP connection when we look for why none could be reached.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);

/// The connector of every session: `timeout`, fail eagerly, `security`'s credentials, SASL and TLS; the flag is
/// whether to connect with TLS (`secure_connect`).
pub fn connector(timeout: Duration, security: &Security) -> (zookeeper_client::Connector, bool) {
    let mut connector = Client::connector()
        .with_session_timeout(timeout)
        .with_fail_eagerly();
    for credential in &security.credentials {
        connector = connector.with_auth(&credential.scheme, credential.credentials.as_bytes());
    }
    if let Some(sasl) = &security.sasl {
        connector = connector.with_sasl(sasl.options.clone());
    }
    match security.tls.clone() {
        Some(tls) => (connector.with_tls(tls), true),
        None => (connector, false),
    }
}

/// Connects with the requested session timeout (`hosts` is a connect string checked by
/// [`crate::values::connect_string`]; `session_timeout` a duration checked by [`crate::values::seconds`]), presenting the
/// credentials of `security` and, when it has TLS settings, over TLS to every server not written `tcp://`.
///
/// Fails fast and says why: every server is tried once ("fail eagerly"), and when none can be reached the error
/// gives each one's reason as the operating system tells it (connection refused, name not known); a chroot that
/// does not exist is named as such rather than failing every later request; credentials ZooKeeper refuses are
/// named by their scheme.
pub async fn connect(hosts: &str, session_timeout: f64, security: &Security) -> Result<Client> {
    if security.tls.is_none() && hosts.contains("tcp+tls://") {
        return Err(usage(
            "--connect names tcp+tls:// servers: give --tls-ca, the CA certificates that signed theirs"
                .to_owned(),
        ));
    }
    let timeout = Duration::from_secs_f64(session_timeout.max(0.1));
    let connect = connect_once(connector(timeout, security), hosts.to_owned());
    let client = match tokio::time::timeout(timeout + Duration::from_secs(5), connect).await {
        Err(_) => anyhow::bail!("no ZooKeeper answered at {hosts}"),
        Ok(Err(zookeeper_client::Error::NoHosts)) => {
            anyhow::bail!(
                "cannot connect to ZooKeeper at {hosts}: {}",
                unreachable(hosts, security.tls_pem.as_ref()).await
            )
        }
        // ZooKeeper answers a failed SASL handshake, and any request of a session that has not authenticated
        // with SASL when it requires SASL, with AuthFailed or SessionClosedRequireSaslAuth, and then closes the
        // connection: zookeeper-client reports either as AuthFailed.
        Ok(Err(zookeeper_client::Error::AuthFailed)) if security.sasl.is_some() => {
            let sasl = security.sasl.as_ref().expect("just checked");
            anyhow::bail!(
                "ZooKeeper at {hosts} refused the SASL {} handshake as {}: authentication failed (a wrong \
                 password, or a user its JAAS Server section does not know)",
                sasl.mechanism.name(),
                sasl.user
            )
        }
        Ok(Err(zookeeper_client::Error::AuthFailed)) if security.credentials.is_empty() => {
            anyhow::bail!(
                "ZooKeeper at {hosts} requires authentication: give --sasl digest-md5:USER (with \
                 {SASL_PASSWORD_ENV}) if it requires SASL, or else --auth, ZKLOCK_AUTH or --auth-file"
            )
        }
        Ok(Err(zookeeper_client::Error::AuthFailed)) => {
            let mut schemes: Vec<&str> = security.credentials.iter().map(|c| c.scheme.as_str()).collect();
            schemes.dedup();
            anyhow::bail!(
                "ZooKeeper at {hosts} refused our credentials (scheme {}): authentication failed (if it \
                 requires SASL, give --sasl)",
                schemes.join(", ")
            )
        }
        Ok(result) => result.with_context(|| format!("cannot connect to ZooKeeper at {hosts}"))?,
    };
    if let Some(sasl) = &security.sasl {
        if let Err(err) = check_sasl_identity(&client, sasl, hosts).await {
            close(client).await;
            return Err(err);
        }
    }
    if client.path() != "/" {
        let found = client
            .check_stat("/")
            .await
            .with_context(|| format!("cannot connect to ZooKeeper at {hosts}"))?;
        if found.is_none() {
            let chroot = client.path().to_owned();
            close(client).await;
            anyhow::bail!("the chroot {chroot} does not exist on ZooKeeper at {hosts} (create it first)");
        }
    }
    Ok(client)
}

/// One attempt to make a session with a [`connector`], over TLS when it says so.
async fn connect_once(
    (connector, secure): (zookeeper_client::Connector, bool),
    hosts: String,
) -> std::result::Result<Client, zookeeper_client::Error> {
    if secure {
        connector.secure_connect(&hosts).await
    } else {
        connector.connect(&hosts).await
    }
}

/// A reconnecting [`zklock::Session`] (`zklock elect`'s) whose first ZooKeeper session is `client`'s — made by
/// [`connect_args`], with its checks and its messages — and whose later ones, each made when the one before has
/// ended, connect as `args` says: the same servers, session timeout, credentials, SASL and TLS. Those later
/// connections are not checked again as the first was (the chroot's existence, the SASL identity by `whoami`): the
/// same settings against the same servers. A connection that fails is tried again by the session, with backoff.
pub async fn reconnecting(client: &Client, args: &ConnectArgs) -> Result<zklock::Session> {
    let security = Security::from_args(&args.security)?;
    let timeout = Duration::from_secs_f64(args.session_timeout.max(0.1));
    let connector = connector(timeout, &security);
    let hosts = args.hosts.clone();
    let first = std::sync::Mutex::new(Some(client.clone()));
    let session = zklock::Session::reconnecting_with(move || {
        let first = first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let next = connect_once(connector.clone(), hosts.clone());
        async move {
            match first {
                Some(client) => Ok(client),
                None => next.await,
            }
        }
    })
    .await?;
    Ok(session)
}

/// Fails unless the server says (`whoami`) that the session is `sasl:USER`. A server without SASL — real ZooKeeper
/// without a JAAS `Server` section, `zklock serve` without `--jaas`, the embedded server a command starts — answers the handshake with an empty token and leaves
/// the session anonymous, which zookeeper-client takes for success. A server too old to answer `whoami`
/// (ZooKeeper before 3.7) cannot be asked: then the handshake's success is all we know.
async fn check_sasl_identity(client: &Client, sasl: &Sasl, hosts: &str) -> Result<()> {
    match client.list_auth_users().await {
        Ok(users)
            if users
                .iter()
                .any(|u| u.scheme() == "sasl" && u.user() == sasl.user) =>
        {
            Ok(())
        }
        Ok(users) => {
            let identities: Vec<String> = users
                .iter()
                .map(|u| format!("{}:{}", u.scheme(), u.user()))
                .collect();
            anyhow::bail!(
                "ZooKeeper at {hosts} did not authenticate us with SASL as {} (it names this session {}): it has no \
                 SASL — no JAAS Server section (zklock serve: no --jaas), or an embedded server zklock started",
                sasl.user,
                if identities.is_empty() {
                    "anonymous".to_owned()
                } else {
                    identities.join(", ")
                }
            )
        }
        Err(zookeeper_client::Error::Unimplemented) => {
            tracing::debug!(%hosts, "the server does not answer whoami: the SASL identity is not checked");
            Ok(())
        }
        Err(err) => Err(err).with_context(|| format!("cannot connect to ZooKeeper at {hosts}")),
    }
}

/// Why no server of `hosts` can be reached, as the operating system (or the TLS handshake) says it, one reason per
/// server (`pem`: we spoke TLS to those not written `tcp://`, with these settings).
async fn unreachable(hosts: &str, pem: Option<&TlsPem>) -> String {
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

/// Connects using `--connect`/`ZKLOCK_CONNECT` and the credentials and TLS settings given.
pub async fn connect_args(args: &ConnectArgs) -> Result<Client> {
    connect(
        &args.hosts,
        args.session_timeout,
        &Security::from_args(&args.security)?,
    )
    .await
}

/// Closes the session and waits (briefly) for ZooKeeper to confirm, so that our ephemeral nodes disappear now
/// rather than a session timeout later. One helper for the binary and the benchmark workloads it runs: it lives in
/// `zklock-bench`, which the binary depends on anyway (for `zklock bench`).
pub use zklock_bench::close;

/// Either the server named by `--connect`, or an embedded one started for this command.
pub struct Target {
    pub hosts: String,
    pub session_timeout: f64,
    pub embedded: Option<zklock_server::Server>,
    /// Credentials and TLS: none unless [`with_security`](Target::with_security) gives them.
    pub security: Security,
}

impl Target {
    pub async fn resolve(args: &OptionalConnectArgs) -> Result<Target> {
        match &args.hosts {
            Some(hosts) => Ok(Target {
                hosts: hosts.clone(),
                session_timeout: args.session_timeout,
                embedded: None,
                security: Security::default(),
            }),
            None => {
                let server = zklock_server::Server::start(zklock_server::ServerConfig::default())
                    .await
                    .context("cannot start the embedded server")?;
                Ok(Target {
                    hosts: server.connect_string(),
                    session_timeout: args.session_timeout,
                    embedded: Some(server),
                    security: Security::default(),
                })
            }
        }
    }

    /// Every session connects with `security`'s credentials and TLS settings.
    pub fn with_security(self, security: Security) -> Target {
        Target { security, ..self }
    }

    pub async fn connect(&self) -> Result<Client> {
        connect(&self.hosts, self.session_timeout, &self.security).await
    }

    pub async fn shutdown(self) -> Result<()> {
        if let Some(server) = self.embedded {
            server.shutdown().await.context("embedded server shutdown")?;
        }
        Ok(())
    }
}
