//! Kerberos (`--sasl gssapi[:PRINCIPAL]`, the `sasl-gssapi` feature): its settings (`--sasl-service`, `--keytab`,
//! [`use_keytab`]) and, when its handshake cannot start, why ([`kerberos_failure`]). A binary built without the
//! feature refuses `--sasl gssapi` when it is parsed: its versions here are never reached.

use anyhow::Result;
use zookeeper_client::SaslOptions;

use super::usage;
use crate::cli::SecurityArgs;
#[cfg(feature = "sasl-gssapi")]
use {crate::values, std::path::Path};

/// The only service name zookeeper-client's DIGEST-MD5 speaks for, and GSSAPI's default (DIGEST-MD5's digest-uri is `zookeeper/zk-sasl-md5`, as
/// ZooKeeper's DIGEST-MD5 server expects): `--sasl-service`'s default.
pub const SASL_SERVICE: &str = "zookeeper";

/// The GSSAPI (Kerberos) settings of `--sasl gssapi`: the service name of `--sasl-service` (the host is the one
/// `--connect` names, each server's own), and `--keytab`, which [`use_keytab`] hands to MIT Kerberos.
#[cfg(feature = "sasl-gssapi")]
pub(super) fn gssapi_options(args: &SecurityArgs) -> Result<SaslOptions> {
    if let Some(path) = &args.sasl_password_file {
        return Err(usage(format!(
            "--sasl-password-file {}: Kerberos takes no password here: kinit first, or give --keytab",
            path.display()
        )));
    }
    if let Some(keytab) = &args.keytab {
        // Readable, or a usage error now rather than "no Kerberos ticket" later.
        std::fs::File::open(keytab).map_err(|err| usage(format!("--keytab {}: {err}", keytab.display())))?;
        use_keytab(keytab);
    }
    let service = args
        .sasl_service
        .clone()
        .unwrap_or_else(|| SASL_SERVICE.to_owned());
    Ok(SaslOptions::gssapi().with_username(service).into())
}

/// `--sasl gssapi` in a binary without Kerberos: never reached, as `--sasl gssapi` is refused when parsed
/// ([`values::sasl_spec`](crate::values::sasl_spec)).
#[cfg(not(feature = "sasl-gssapi"))]
pub(super) fn gssapi_options(_args: &SecurityArgs) -> Result<SaslOptions> {
    Err(usage(
        "this zklock was built without Kerberos (GSSAPI): build it with the cargo feature sasl-gssapi"
            .to_owned(),
    ))
}

/// Makes MIT Kerberos log in with `keytab` (its client keytab, `KRB5_CLIENT_KTNAME`) into a ticket cache in this
/// process's memory (`KRB5CCNAME=MEMORY:`), so that neither a ticket cache of the user's is used nor one written.
/// GSSAPI reads both variables whenever it acquires credentials, so they are set in our environment: once, the
/// first time (in `main`'s `before_connecting`, before any runtime's thread is started).
#[cfg(feature = "sasl-gssapi")]
fn use_keytab(keytab: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let keytab = std::path::absolute(keytab).unwrap_or_else(|_| keytab.to_owned());
        std::env::set_var("KRB5_CLIENT_KTNAME", format!("FILE:{}", keytab.display()));
        std::env::set_var("KRB5CCNAME", "MEMORY:zklock");
    });
}

/// Why Kerberos cannot authenticate us (as a client of `service`) to the first server of `hosts` — no ticket (nor keytab), an expired one, no
/// service principal SERVICE/HOST in the KDC's database, no KDC answering — as MIT Kerberos says it, or `None`
/// when it can (then the reason is elsewhere). zookeeper-client fails a GSSAPI handshake that cannot start before
/// any ZooKeeper session exists, and reports only `NoHosts`: this asks GSSAPI again, as its handshake does (the
/// default credentials, the service `SERVICE@HOST`), to tell why. Blocking calls, on a blocking thread.
#[cfg(feature = "sasl-gssapi")]
pub(super) async fn kerberos_failure(hosts: &str, service: &str) -> Option<String> {
    let (servers, _chroot) = values::split_chroot(hosts);
    let server = values::without_scheme(servers.split(',').next()?);
    let host = super::host(server).to_owned();
    let service = service.to_owned();
    tokio::task::spawn_blocking(move || gssapi_failure(&service, &host))
        .await
        .ok()
        .flatten()
}

/// `--sasl gssapi` in a binary without Kerberos: never reached.
#[cfg(not(feature = "sasl-gssapi"))]
pub(super) async fn kerberos_failure(_hosts: &str, _service: &str) -> Option<String> {
    None
}

/// What [`gssapi_failure`] says of an expired ticket.
#[cfg(feature = "sasl-gssapi")]
const EXPIRED: &str = "no Kerberos ticket: the one in the ticket cache has expired: kinit again, or --keytab";

/// See [`kerberos_failure`].
#[cfg(feature = "sasl-gssapi")]
fn gssapi_failure(service: &str, host: &str) -> Option<String> {
    use libgssapi::context::{ClientCtx, CtxFlags};
    use libgssapi::credential::{Cred, CredUsage};
    use libgssapi::name::Name;
    use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
    let mut mechanisms = OidSet::new().ok()?;
    mechanisms.add(&GSS_MECH_KRB5).ok()?;
    let credentials = match Cred::acquire(None, None, CredUsage::Initiate, Some(&mechanisms)) {
        Ok(credentials) => credentials,
        Err(err) => {
            return Some(format!(
                "no Kerberos ticket: kinit, or --keytab (Kerberos says: {})",
                err.to_string().trim()
            ))
        }
    };
    // MIT Kerberos hands out the credentials of a ticket cache whose ticket has expired, with no time left.
    if credentials.lifetime().map_or(true, |left| left.is_zero()) {
        return Some(EXPIRED.to_owned());
    }
    let target = Name::new(
        format!("{service}@{host}").as_bytes(),
        Some(&GSS_NT_HOSTBASED_SERVICE),
    )
    .ok()?;
    let mut context = ClientCtx::new(
        Some(credentials),
        target,
        CtxFlags::GSS_C_MUTUAL_FLAG,
        Some(&GSS_MECH_KRB5),
    );
    match context.step(None, None) {
        Ok(_) => None,
        Err(err) if err.to_string().contains("Ticket expired") => Some(EXPIRED.to_owned()),
        Err(err) => Some(format!(
            "Kerberos cannot authenticate us to the service {service}/{host} (the host as --connect names it; \
             --sasl-service names the service): {}",
            err.to_string().trim()
        )),
    }
}
