//! TLS (`--tls-ca`, `--tls-cert`, `--tls-key`): the settings zookeeper-client connects with, and the PEM they were
//! made of ([`TlsPem`], kept to tell why a handshake fails: `unreachable.rs`).

use anyhow::Result;
use zookeeper_client::TlsOptions;

use super::files::{read, read_private};
use super::usage;
use crate::cli::SecurityArgs;

/// The PEM texts of `--tls-ca`, `--tls-cert` and `--tls-key`. Its `Debug` hides the key.
#[derive(Clone)]
pub(super) struct TlsPem {
    pub(super) ca: String,
    pub(super) identity: Option<(String, String)>,
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsPem")
            .field("identity", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

/// The TLS settings, when `--tls-ca` is given: its CA certificates, and our certificate and key if given.
pub(super) fn tls_options(args: &SecurityArgs) -> Result<Option<(TlsOptions, TlsPem)>> {
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
