//! [`Security`]: what a command connects with besides the connect string — the credentials of `--auth` (or else
//! `ZKLOCK_AUTH`) and `--auth-file`, read here, and the SASL and TLS settings (`sasl.rs`, `tls.rs`).

use anyhow::Result;
use zookeeper_client::TlsOptions;

use super::files::read_private;
use super::sasl::{sasl_options, Sasl};
use super::tls::{tls_options, TlsPem};
use super::usage;
use crate::cli::SecurityArgs;
use crate::values::{self, Credential, SaslMechanism};

/// The environment variable that holds credentials: one `SCHEME:CREDENTIALS` per line (a password may contain a
/// comma, so commas do not separate). Used when no `--auth` is given, as `ZKLOCK_CONNECT` is when no `--connect`
/// is.
pub const AUTH_ENV: &str = "ZKLOCK_AUTH";

/// What a command connects with besides the connect string: credentials and TLS, read from [`SecurityArgs`].
#[derive(Debug, Clone, Default)]
pub struct Security {
    pub(super) credentials: Vec<Credential>,
    pub(super) sasl: Option<Sasl>,
    pub(super) tls: Option<TlsOptions>,
    /// The PEM the TLS settings were made of, to tell why a handshake fails
    /// ([`tls_handshake_error`](super::unreachable::tls_handshake_error)).
    pub(super) tls_pem: Option<TlsPem>,
}

impl Security {
    /// Reads what `args` names: `--auth` (or else `ZKLOCK_AUTH`) and `--auth-file`, and the TLS files. Fails with
    /// a [`UsageError`](crate::exit::UsageError) that names the flag, the file or the line at fault — never the
    /// credentials.
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

    /// The service name Kerberos authenticates us to, when `--sasl gssapi` is how we authenticate.
    pub(super) fn gssapi_service(&self) -> Option<&str> {
        self.sasl
            .as_ref()
            .filter(|sasl| sasl.mechanism == SaslMechanism::Gssapi)
            .map(|sasl| sasl.service.as_str())
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
pub(super) fn has_credentials(args: &SecurityArgs) -> bool {
    !args.auth.is_empty()
        || args.auth_file.is_some()
        || args.sasl.is_some()
        || env_credentials().is_ok_and(|credentials| !credentials.is_empty())
}
