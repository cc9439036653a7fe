//! Connecting: the [`connector`] of every session, [`connect`] (which says why it could not), the reconnecting
//! session of `zklock elect` ([`reconnecting`]), and [`Target`] (`--connect`, or an embedded server).

use std::time::Duration;

use anyhow::{Context, Result};
use zookeeper_client::Client;

use super::kerberos::kerberos_failure;
use super::sasl::{check_sasl_identity, SASL_PASSWORD_ENV};
use super::security::Security;
use super::unreachable::unreachable;
use super::{close, usage};
use crate::cli::{ConnectArgs, OptionalConnectArgs};
use crate::values::SaslMechanism;

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
    connect_within(hosts, session_timeout, 0.0, security).await
}

/// [`connect`], trying again for `connect_timeout` seconds (`--connect-timeout`) while no server answers — refused
/// or silent — with pauses from 100 ms doubling to 1 s. Any other failure (credentials, a chroot) is final.
pub async fn connect_within(
    hosts: &str,
    session_timeout: f64,
    connect_timeout: f64,
    security: &Security,
) -> Result<Client> {
    if security.tls.is_none() && hosts.contains("tcp+tls://") {
        return Err(usage(
            "--connect names tcp+tls:// servers: give --tls-ca, the CA certificates that signed theirs"
                .to_owned(),
        ));
    }
    let timeout = Duration::from_secs_f64(session_timeout.max(0.1));
    let attempt = attempt_within(hosts, timeout, connect_timeout, security).await;
    let client = match attempt {
        Err(_) => anyhow::bail!("no ZooKeeper answered at {hosts}"),
        Ok(Err(zookeeper_client::Error::NoHosts)) if security.gssapi_service().is_some() => {
            let service = security.gssapi_service().unwrap_or_default();
            let reason = match kerberos_failure(hosts, service).await {
                Some(why) => why,
                None => unreachable(hosts, security.tls_pem.as_ref()).await,
            };
            anyhow::bail!("cannot connect to ZooKeeper at {hosts}: {reason}")
        }
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
                "ZooKeeper at {hosts} refused the SASL {} handshake as {}: authentication failed ({})",
                sasl.mechanism.name(),
                sasl.who(),
                match sasl.mechanism {
                    SaslMechanism::DigestMd5 => {
                        "a wrong password, or a user its JAAS Server section does not know".to_owned()
                    }
                    SaslMechanism::Gssapi => format!(
                        "the server could not accept our ticket for {}/HOST: its JAAS Server section logs in as \
                         another principal or with an outdated keytab, or it has no Krb5LoginModule",
                        sasl.service
                    ),
                }
            )
        }
        Ok(Err(zookeeper_client::Error::AuthFailed)) if security.credentials.is_empty() => {
            anyhow::bail!(
                "ZooKeeper at {hosts} requires authentication: give --sasl digest-md5:USER (with \
                 {SASL_PASSWORD_ENV}) or --sasl gssapi (Kerberos) if it requires SASL, or else --auth, \
                 ZKLOCK_AUTH or --auth-file"
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
    // ZooKeeper clamps the session timeout to [2, 20] × its tickTime: what the lost policy, the watchdog and the
    // outage a command survives depend on is the negotiated one, so a change is said (issue 33.9).
    let negotiated = client.session_timeout();
    if negotiated.abs_diff(timeout) > Duration::from_millis(1) {
        tracing::warn!(
            "ZooKeeper at {hosts} set the session timeout to {:.1}s (asked {:.1}s: a server clamps it to 2 to 20 \
             times its tickTime)",
            negotiated.as_secs_f64(),
            timeout.as_secs_f64()
        );
    }
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

/// One attempt to make a session, and more for `connect_timeout` seconds while no server answers (refused or
/// silent), with pauses from 100 ms doubling to 1 s; said on stderr when more than one attempt failed. `Err`:
/// the last attempt took past the session timeout and 5 s more.
async fn attempt_within(
    hosts: &str,
    timeout: Duration,
    connect_timeout: f64,
    security: &Security,
) -> std::result::Result<std::result::Result<Client, zookeeper_client::Error>, tokio::time::error::Elapsed> {
    let started = std::time::Instant::now();
    let give_up = started + Duration::from_secs_f64(connect_timeout.max(0.0));
    let mut pause = Duration::from_millis(100);
    let mut attempts = 0;
    let attempt = loop {
        attempts += 1;
        let connect = connect_once(connector(timeout, security), hosts.to_owned());
        let attempt = tokio::time::timeout(timeout + Duration::from_secs(5), connect).await;
        let unanswered = matches!(
            attempt,
            Err(_)
                | Ok(Err(zookeeper_client::Error::NoHosts
                    | zookeeper_client::Error::ConnectionLoss
                    | zookeeper_client::Error::Timeout))
        );
        if !unanswered || std::time::Instant::now() + pause > give_up {
            break attempt;
        }
        tracing::info!(%hosts, ?pause, "no ZooKeeper server answered; trying again (--connect-timeout)");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    };
    if attempts > 1 && !matches!(attempt, Ok(Ok(_))) {
        crate::say::warn(format_args!(
            "tried to connect to {hosts} {attempts} times over {:.1}s (--connect-timeout {connect_timeout}s)",
            started.elapsed().as_secs_f64()
        ));
    }
    attempt
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

/// Ends a [`reconnecting`] session: closes its newest ZooKeeper session if that is a later one than `first` (which
/// `supervise::with_session` closes). The caller drops every other handle of it (a cache, an election…) first: a
/// `zookeeper-client` session closes when its last handle goes.
pub async fn close_later(session: zklock::Session, first: &Client) {
    let newest = session.client().clone();
    drop(session);
    if newest.session_id() != first.session_id() {
        super::close(newest).await;
    }
}

/// Connects using `--connect`/`ZKLOCK_CONNECT` and the credentials and TLS settings given.
pub async fn connect_args(args: &ConnectArgs) -> Result<Client> {
    connect_within(
        &args.hosts,
        args.session_timeout,
        args.connect_timeout,
        &Security::from_args(&args.security)?,
    )
    .await
}

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
