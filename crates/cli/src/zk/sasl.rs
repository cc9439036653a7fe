//! SASL (`--sasl`): the settings zookeeper-client authenticates with — DIGEST-MD5's password from
//! [`SASL_PASSWORD_ENV`] or `--sasl-password-file`, GSSAPI's from `kerberos.rs` — and, once connected, the check that
//! the server took us for who we said ([`check_sasl_identity`]).

use anyhow::{Context, Result};
use zookeeper_client::{Client, SaslOptions};

use super::files::read_private;
use super::kerberos::{gssapi_options, SASL_SERVICE};
use super::usage;
use crate::cli::SecurityArgs;
use crate::values::SaslMechanism;

/// The environment variable that holds the password of `--sasl` (unless `--sasl-password-file` gives it).
pub const SASL_PASSWORD_ENV: &str = "ZKLOCK_SASL_PASSWORD";

/// SASL: who we are and the options zookeeper-client authenticates with. Its `Debug` hides the options (they hold
/// the password).
#[derive(Clone)]
pub(super) struct Sasl {
    pub(super) mechanism: SaslMechanism,
    /// Who we must be (for GSSAPI: `None`, whoever the ticket names).
    user: Option<String>,
    /// The service name of the server's principal (`--sasl-service`).
    pub(super) service: String,
    pub(super) options: SaslOptions,
}

impl Sasl {
    /// Who we authenticate as, for messages.
    pub(super) fn who(&self) -> String {
        self.user
            .clone()
            .unwrap_or_else(|| "the principal of the Kerberos ticket".to_owned())
    }
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The SASL settings of `--sasl`: for DIGEST-MD5 with the password from `--sasl-password-file` or else
/// [`SASL_PASSWORD_ENV`]; for GSSAPI with `--sasl-service` and `--keytab` ([`gssapi_options`]).
pub(super) fn sasl_options(args: &SecurityArgs) -> Result<Option<Sasl>> {
    let Some(spec) = &args.sasl else {
        return Ok(None);
    };
    if spec.mechanism != SaslMechanism::Gssapi {
        if let Some(keytab) = &args.keytab {
            return Err(usage(format!(
                "--keytab {}: a keytab is for --sasl gssapi (Kerberos) only",
                keytab.display()
            )));
        }
    }
    let options = match spec.mechanism {
        SaslMechanism::DigestMd5 => {
            let user = spec.user.clone().unwrap_or_default();
            let password = digest_password(args, &user)?;
            SaslOptions::digest_md5(user, password).into()
        }
        SaslMechanism::Gssapi => gssapi_options(args)?,
    };
    Ok(Some(Sasl {
        mechanism: spec.mechanism,
        user: spec.user.clone(),
        service: args
            .sasl_service
            .clone()
            .unwrap_or_else(|| SASL_SERVICE.to_owned()),
        options,
    }))
}

/// The password of `--sasl digest-md5:USER`: the first line of `--sasl-password-file`, or else
/// [`SASL_PASSWORD_ENV`]. Checks `--sasl-service` too (DIGEST-MD5 speaks for one service only).
fn digest_password(args: &SecurityArgs, user: &str) -> Result<String> {
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
    match &args.sasl_password_file {
        Some(path) => {
            let text = read_private(path, "--sasl-password-file")?;
            let line = text.lines().next().unwrap_or("").to_owned();
            if line.is_empty() {
                return Err(usage(format!(
                    "--sasl-password-file {}: its first line is empty (it holds the password)",
                    path.display()
                )));
            }
            Ok(line)
        }
        None => match std::env::var(SASL_PASSWORD_ENV) {
            Ok(password) if !password.is_empty() => Ok(password),
            Ok(_) | Err(std::env::VarError::NotPresent) => Err(usage(format!(
                "--sasl digest-md5:{user} needs its password: set {SASL_PASSWORD_ENV} or give --sasl-password-file"
            ))),
            Err(std::env::VarError::NotUnicode(_)) => Err(usage(format!("{SASL_PASSWORD_ENV} is not UTF-8"))),
        },
    }
}

/// Fails unless the server says (`whoami`) that the session is `sasl:USER`. A server without SASL — real ZooKeeper
/// without a JAAS `Server` section, `zklock serve` without `--jaas`, the embedded server a command starts — answers the handshake with an empty token and leaves
/// the session anonymous, which zookeeper-client takes for success. A server too old to answer `whoami`
/// (ZooKeeper before 3.7) cannot be asked: then the handshake's success is all we know.
pub(super) async fn check_sasl_identity(client: &Client, sasl: &Sasl, hosts: &str) -> Result<()> {
    match client.list_auth_users().await {
        Ok(users)
            if users.iter().any(|u| {
                u.scheme() == "sasl" && sasl.user.as_deref().is_none_or(|user| u.user() == user)
            }) =>
        {
            Ok(())
        }
        Ok(users) => {
            let identities: Vec<String> = users
                .iter()
                .map(|u| format!("{}:{}", u.scheme(), u.user()))
                .collect();
            if let Some(other) = users.iter().find(|u| u.scheme() == "sasl") {
                anyhow::bail!(
                    "ZooKeeper at {hosts} did not authenticate us with SASL as {}: it names this session sasl:{} \
                     ({})",
                    sasl.who(),
                    other.user(),
                    match sasl.mechanism {
                        SaslMechanism::Gssapi => "the principal of the Kerberos ticket: kinit as the principal \
                                                  --sasl names, or give its --keytab",
                        SaslMechanism::DigestMd5 => "its JAAS Server section maps the user to another name",
                    }
                )
            }
            anyhow::bail!(
                "ZooKeeper at {hosts} did not authenticate us with SASL as {} (it names this session {}): it has no \
                 SASL — no JAAS Server section (zklock serve: no --jaas), or an embedded server zklock started",
                sasl.who(),
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
