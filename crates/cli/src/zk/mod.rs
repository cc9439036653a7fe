//! Connecting to ZooKeeper (or an embedded server) — with the credentials and the TLS settings given — the ACLs of
//! the nodes a command creates, and closing sessions properly on the way out.
//!
//! Credentials come from `--auth`, or else `ZKLOCK_AUTH`, plus `--auth-file`; they are read here, when a command
//! connects, so that those from the environment and from files never pass through clap (whose errors repeat the
//! value given) nor through any process's command line. Every mistake found here — an unreadable file, a bad line,
//! `--acl creator` without credentials, `--sasl` without its password — is a usage error (exit 64, [`UsageError`]);
//! ZooKeeper refusing the credentials or the SASL handshake, or requiring authentication none was given for, is a
//! failure (exit 69), told on connecting.
//!
//! SASL (`--sasl digest-md5:USER`) takes its password from [`SASL_PASSWORD_ENV`](sasl::SASL_PASSWORD_ENV) or
//! `--sasl-password-file`, read here too; zookeeper-client runs the handshake when it connects, before any request.
//! Kerberos (`--sasl gssapi[:PRINCIPAL]`, the `sasl-gssapi` feature) takes its ticket from the ticket cache or
//! `--keytab` ([`use_keytab`](kerberos::use_keytab)); when its handshake cannot start (no ticket), zookeeper-client
//! says only `NoHosts`, and [`kerberos_failure`](kerberos::kerberos_failure) asks GSSAPI why.
//!
//! One job per file:
//! - `security.rs`: [`Security`], what a command connects with besides the connect string; the credentials of
//!   `--auth`, `ZKLOCK_AUTH` and `--auth-file`;
//! - `sasl.rs`: the SASL settings of `--sasl` (DIGEST-MD5's password), and the check of the identity the server
//!   gave us;
//! - `kerberos.rs`: `--sasl gssapi` — `--keytab`, and why Kerberos cannot authenticate us;
//! - `tls.rs`: the TLS settings of `--tls-ca`, `--tls-cert` and `--tls-key`;
//! - `unreachable.rs`: why no server could be reached, each server's reason (the TLS handshake's too);
//! - `acl.rs`: [`NodeAcls`], the ACLs of the nodes a command creates (`--acl`, `--parent-acl`);
//! - `connect.rs`: [`connect`](connect::connect), [`connector`], [`reconnecting`], [`Target`];
//! - `files.rs`: reading the files the flags name (warning when a secret's file is not private).

mod acl;
mod connect;
mod files;
mod kerberos;
mod sasl;
mod security;
mod tls;
mod unreachable;

pub use acl::{refused, session, NodeAcls};
pub use connect::{close_later, connect_args, connector, reconnecting, Target};
pub use security::Security;

use crate::exit::UsageError;

/// Closes the session and waits (briefly) for ZooKeeper to confirm, so that our ephemeral nodes disappear now
/// rather than a session timeout later. One helper for the binary and the benchmark workloads it runs: it lives in
/// `zklock-bench`, which the binary depends on anyway (for `zklock bench`).
pub use zklock_bench::close;

/// A usage error, as an `anyhow::Error` (see [`UsageError`]).
fn usage(message: String) -> anyhow::Error {
    UsageError(message).into()
}

/// The host of a server as `--connect` names it (`host:port`, `[ipv6]:port` or a bare host), without the brackets
/// of an IPv6 address: the name TLS checks the server's certificate against, and the HOST of Kerberos's
/// SERVICE/HOST.
fn host(server: &str) -> &str {
    let host = match server.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => host,
        _ => server,
    };
    host.trim_start_matches('[').trim_end_matches(']')
}
