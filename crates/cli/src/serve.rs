//! `zklock serve`: the embedded ZooKeeper-compatible server as a standalone process.
//!
//! Exit statuses: [`crate::exit`]. Each failure prints one `zklock serve: ...` line naming the directory and the
//! cause.
//!
//! # A full disk: exit, not read-only
//!
//! When the log cannot be written the server stops serving at once (no more acknowledgements, every connection
//! closed, new sessions refused, `ruok` unanswered; see `zklock_server`'s crate docs) and this process exits 74
//! ([`exit::LOG_UNWRITABLE`], sysexits' `EX_IOERR`) with, e.g., "zklock serve: cannot write the transaction log in
//! /var/lib/zklock: No space left on device (os error 28); stopped serving; free space and restart". We exit
//! rather than linger read-only because a process that is up but cannot write is exactly the zombie clients cannot
//! fail over from: a read-only mode would still accept sessions that can create no ephemeral node and take no
//! lock, and it would need a way back to read-write that is only safe after re-reading the log (after a failed
//! fsync the state of the file is unknown). ZooKeeper itself shuts down when its transaction log fails. A
//! supervisor restarting the process is enough: once there is room, the restart recovers every acknowledged write
//! from the same data directory (and while there is none, it fails at start with exit 74 and a message giving the
//! room needed and available).
//!
//! # Security: digest ACLs, a super user, TLS
//!
//! Everything comes from `--config` (a zoo.cfg), with the keys real ZooKeeper 3.8 reads from its zoo.cfg, so one
//! file configures both: `DigestAuthenticationProvider.superDigest=super:<base64 sha1>` (ZooKeeper turns unknown
//! zoo.cfg keys into `zookeeper.`-prefixed system properties, so it reads this line as its
//! `-Dzookeeper.DigestAuthenticationProvider.superDigest`), and `secureClientPort` with the client `ssl.*` keys for
//! TLS (`zklock_server::TlsConfig`). There is deliberately no `--super-digest` flag: a digest on the command line
//! is in every `ps` listing, and it can be brute-forced offline. Keys the server does not apply are reported at
//! start, one warning line each, naming the key and why (`zklock_server::IgnoredKey`); `--dry-run` reports them
//! too, reads the key and trust stores, and prints both addresses.
//!
//! # SASL DIGEST-MD5
//!
//! `--jaas FILE` (or the zoo.cfg key `java.security.auth.login.config`, which is a JVM property for ZooKeeper)
//! names the JAAS file whose `Server` section lists the users, the same file real ZooKeeper reads; `--require-sasl`
//! (or `sessionRequireClientSASLAuth=true`, or `enforce.auth.enabled=true` with `enforce.auth.schemes=sasl`)
//! refuses clients that have not authenticated. GSSAPI (Kerberos) is not served: run real ZooKeeper for that.
//!
//! # Metrics and logs
//!
//! `--metrics ADDR` serves the figures of `mntr` to Prometheus at `http://ADDR/metrics`
//! (`zklock_server::Server::serve_metrics`; names and units in `crates/server/src/metrics.rs`). The log goes to
//! stderr, as text or, with `--log-format json`, one JSON object per line (set up in `main.rs`), the fatal line
//! included.
//!
//! # Signals
//!
//! SIGINT, SIGTERM and SIGHUP stop the server cleanly: connections are closed after their queued replies, a final
//! snapshot is written, the exit status is 0. There is no reload on SIGHUP (a changed zoo.cfg takes a restart).
//!
//! # The data directory is the server's
//!
//! At start the server takes an exclusive lock (`flock`) on `zklock.lock` in its data directory (and log
//! directory): a second `zklock serve` on the same directory exits at once with status 73 ([`exit::DIR_IN_USE`],
//! sysexits' `EX_CANTCREAT`) and "the data directory ... is in use by another server (process N ...)", and the
//! first one keeps serving. The lock goes with the process, however it ends. A directory that cannot be written, or
//! a path that is not a directory, fails the start (status 71, [`exit::OS_ERROR`]) before the server listens. New
//! directories are created 0700 and files 0600, whatever the umask; an existing directory open to the group or
//! others is used with a warning.

use std::io::ErrorKind;
use std::net::SocketAddr;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use zklock_server::{Error, SaslConfig, Server, ServerConfig, StorageError, JAAS_SERVER_SECTION};

use crate::cli::ServeArgs;
use crate::exit::{self, Failure};
use crate::values::SERVE_DEFAULT_LISTEN;

pub async fn serve(args: ServeArgs) -> exit::Result {
    let config = config(&args)?;
    if args.dry_run {
        return dry_run(&config, args.metrics);
    }
    // Before the server starts and says where it listens: a SIGINT or SIGTERM sent as soon as the address is out
    // must find the handlers in place (not end the process by default, skipping the shutdown).
    let handler =
        |err: std::io::Error| Failure::of_serve(anyhow::Error::from(err).context("signal handlers"));
    let mut term = signal(SignalKind::terminate()).map_err(handler)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(handler)?;
    // SIGHUP (the terminal went away, or `systemctl kill -s HUP`) is a clean shutdown too, not a kill: there is no
    // configuration reload (a changed zoo.cfg takes a restart).
    let mut hangup = signal(SignalKind::hangup()).map_err(handler)?;
    // SIGUSR1 writes a backup (--backup-dir); handled always, so that a stray one never ends the server.
    let mut usr1 = signal(SignalKind::user_defined1()).map_err(handler)?;
    let plain = config.plain_client_port;
    let mut server = start(config).await?;
    if let Some(dir) = server.temporary_data_dir() {
        tracing::warn!(
            dir = %dir.display(),
            "no --data-dir (nor dataDir in --config): the data is kept in a temporary directory removed at exit, \
             and nothing survives a restart"
        );
    }
    let metrics = match args.metrics {
        Some(addr) => match server.serve_metrics(addr).await {
            Ok(bound) => Some(bound),
            Err(err) => {
                if let Err(e) = server.shutdown().await {
                    tracing::debug!(error = %e, "shutdown after the metrics address failed");
                }
                return Err(metrics_failure(addr, &err));
            }
        },
        None => None,
    };
    announce(&server, plain, metrics);
    crate::notify::ready(&format!("serving on {}", server.local_addr()));
    loop {
        tokio::select! {
            // Of a backup and a stop seen at one wake-up, the backup is written first. (Two signals sent back to back
            // can also reach this loop one wake-up apart, in either order: a thread of ours may take the second first.)
            biased;
            _ = usr1.recv() => backup(&server, args.backup_dir.as_deref()).await,
            _ = interrupt.recv() => break,
            _ = term.recv() => break,
            _ = hangup.recv() => break,
            failure = server.log_failure() => {
                // Connections are closed and new sessions refused already; stop the rest and say why.
                crate::notify::stopping("stopped serving: the transaction log cannot be written");
                if let Err(e) = server.shutdown().await {
                    tracing::debug!(error = %e, "shutdown after the log failure");
                }
                let message = format!("{failure}; {}", hint(&failure));
                return Err(Failure::new(exit::LOG_UNWRITABLE, message));
            }
        }
    }
    tracing::info!("shutting down");
    crate::notify::stopping("shutting down");
    server
        .shutdown()
        .await
        .context("shutting down")
        .map_err(Failure::of_serve)?;
    Ok(exit::OK)
}

/// The server's configuration: the zoo.cfg of `--config` (or else ZooKeeper's usual client port on loopback), with
/// `--listen`, `--data-dir`, `--jaas` and `--require-sasl` over it. SASL required but not configured is a usage
/// error.
fn config(args: &ServeArgs) -> exit::Result<ServerConfig> {
    let mut config = match &args.config {
        Some(path) => ServerConfig::from_zoo_cfg(path)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(Failure::of_serve)?,
        // ZooKeeper's usual client port, reachable from this machine only.
        None => ServerConfig {
            listen: SERVE_DEFAULT_LISTEN,
            ..ServerConfig::default()
        },
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
        // A TLS-only zoo.cfg (secureClientPort without clientPort) serves plaintext too when told where.
        config.plain_client_port = true;
    }
    if let Some(dir) = &args.data_dir {
        config.data_dir = Some(dir.clone());
    }
    if let Some(jaas) = &args.jaas {
        let super_user = config.sasl.take().and_then(|sasl| sasl.super_user);
        let mut sasl = SaslConfig::from_jaas_file(jaas, JAAS_SERVER_SECTION)
            .map_err(|e| Failure::new(exit::OS_ERROR, e.to_string()))?;
        sasl.super_user = super_user;
        config.sasl = Some(sasl);
    }
    if args.require_sasl {
        config.enforce_auth_schemes = vec!["sasl".to_owned()];
    }
    if args.extended_types {
        config.extended_types_enabled = true;
    }
    if config.sasl.is_none() && config.enforce_auth_schemes.iter().any(|s| s == "sasl") {
        return Err(Failure::new(
            exit::USAGE,
            "SASL is required but not configured: give the users' JAAS file with --jaas \
             (or java.security.auth.login.config in --config)",
        ));
    }
    Ok(config)
}

/// `--dry-run`: what the start would report — the keys not applied, TLS settings that cannot be loaded — and one
/// line saying where the server would listen, keep its data and serve its metrics, and whether it takes SASL.
fn dry_run(config: &ServerConfig, metrics: Option<SocketAddr>) -> exit::Result {
    for ignored in &config.ignored {
        tracing::warn!("{ignored}");
    }
    if let Some(tls) = &config.tls {
        tls.check()
            .map_err(|e| Failure::new(exit::OS_ERROR, format!("TLS on {}: {e}", tls.listen)))?;
    }
    // The addresses too, as the start would bind them (bound and let go at once; issue 33.9): a port in use fails
    // the dry run as it would fail the start.
    let mut binds = Vec::new();
    if config.plain_client_port {
        binds.push((
            config.listen,
            "listen",
            "another server listens there; choose one with --listen",
        ));
    }
    if let Some(tls) = &config.tls {
        binds.push((
            tls.listen,
            "listen with TLS",
            "another server listens there; change secureClientPort",
        ));
    }
    if let Some(addr) = metrics {
        binds.push((
            addr,
            "serve metrics",
            "another server listens there; choose another --metrics",
        ));
    }
    for (addr, doing, in_use) in binds {
        // Port 0 is any free port: nothing to check.
        if addr.port() != 0 {
            std::net::TcpListener::bind(addr)
                .map_err(|err| cannot_bind(&format!("{doing} on {addr}"), &err, in_use))?;
        }
    }
    let data = match &config.data_dir {
        Some(dir) => dir.display().to_string(),
        None => "a temporary directory".to_owned(),
    };
    let metrics = match metrics {
        Some(addr) => format!(", metrics at http://{addr}/metrics"),
        None => String::new(),
    };
    let addresses = match (&config.tls, config.plain_client_port) {
        (None, _) => format!("on {} ", config.listen),
        (Some(tls), true) => format!("on {} and with TLS on {} ", config.listen, tls.listen),
        (Some(tls), false) => format!("with TLS on {} only ", tls.listen),
    };
    let sasl = match (&config.sasl, config.enforce_auth_schemes.is_empty()) {
        (None, _) => String::new(),
        (Some(sasl), true) => format!(
            ", SASL DIGEST-MD5 offered (users in the JAAS file: {})",
            sasl.users.len()
        ),
        (Some(sasl), false) => format!(
            ", SASL DIGEST-MD5 required (users in the JAAS file: {})",
            sasl.users.len()
        ),
    };
    println!("zklock server would listen {addresses}with its data in {data}{metrics}{sasl}");
    Ok(exit::OK)
}

/// Starts the server; a failure to start says why and what to do about it, with its exit status.
async fn start(config: ServerConfig) -> exit::Result<Server> {
    let listen = config.listen;
    let secure_listen = config.tls.as_ref().map(|tls| tls.listen);
    match Server::start(config).await {
        Ok(server) => Ok(server),
        Err(Error::Bind(err)) => {
            let in_use = "another server listens there; choose one with --listen";
            Err(cannot_bind(&format!("listen on {listen}"), &err, in_use))
        }
        Err(Error::SecureBind(addr, err)) => {
            let in_use = "another server listens there; change secureClientPort";
            Err(cannot_bind(&format!("listen with TLS on {addr}"), &err, in_use))
        }
        Err(Error::Tls(err)) => {
            let on = secure_listen.map_or_else(String::new, |addr| format!(" on {addr}"));
            Err(Failure::new(exit::OS_ERROR, format!("TLS{on}: {err}")))
        }
        Err(Error::Storage(err @ StorageError::NoRoom { .. })) => {
            let message = format!("{err}; free space or use a bigger disk");
            Err(Failure::new(exit::LOG_UNWRITABLE, message))
        }
        Err(Error::Storage(err @ StorageError::InUse { .. })) => {
            Err(Failure::new(exit::DIR_IN_USE, format!("{err}; not starting")))
        }
        Err(Error::Storage(err @ StorageError::NotADirectory { .. })) => {
            Err(Failure::new(exit::OS_ERROR, err.to_string()))
        }
        Err(Error::Storage(StorageError::Io { path, source }))
            if path
                .file_name()
                .is_some_and(|name| name == zklock_server::LOCK_FILE) =>
        {
            // The lock file is the first thing written: the directory cannot be written at all.
            let dir = path.parent().unwrap_or(&path).display();
            Err(Failure::new(
                exit::OS_ERROR,
                format!("cannot write in the data directory {dir}: {source}"),
            ))
        }
        Err(err) => Err(Failure::of_serve(
            anyhow::Error::from(err).context("starting the server"),
        )),
    }
}

/// The failure of `--metrics ADDR` when the metrics cannot be served there.
fn metrics_failure(addr: SocketAddr, err: &Error) -> Failure {
    let doing = format!("serve metrics on {addr}");
    match err {
        Error::MetricsBind(err) => cannot_bind(&doing, err, "choose another with --metrics"),
        other => Failure::new(exit::OS_ERROR, format!("cannot {doing}: {other}")),
    }
}

/// SIGUSR1: a backup of the state now into a new directory `backup-<UTC time>` of `--backup-dir` (said on stdout,
/// for scripts, and in the log); without `--backup-dir`, a warning. A failed backup is logged; the server serves on.
async fn backup(server: &Server, dir: Option<&std::path::Path>) {
    let Some(dir) = dir else {
        tracing::warn!("SIGUSR1 asks for a backup, but no --backup-dir says where: nothing written");
        return;
    };
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let target = dir.join(format!("backup-{now}"));
    match server.backup(&target).await {
        Ok(zxid) => {
            tracing::info!(dir = %target.display(), zxid = format!("0x{zxid:x}"), "backup written");
            // Not println!: a closed stdout must not end a server.
            use std::io::Write as _;
            let line = format!(
                "zklock server backup written to {} (zxid 0x{zxid:x})",
                target.display()
            );
            let _ = writeln!(std::io::stdout(), "{line}").and_then(|()| std::io::stdout().flush());
        }
        Err(err) => tracing::error!(dir = %target.display(), %err, "backup failed"),
    }
}

/// Says that the server serves, and where: the log line, then the lines scripts read on stdout (the plain client
/// port's address first, then the secure one's, then the metrics').
fn announce(server: &Server, plain: bool, metrics: Option<SocketAddr>) {
    let tls = server
        .secure_addr()
        .map_or_else(|| "off".to_owned(), |addr| addr.to_string());
    tracing::info!(addr = %server.local_addr(), %tls, "zklock server serving");
    // Scripts read the first line: the plain client port's address, then the secure one's.
    if plain {
        println!("zklock server listening on {}", server.local_addr());
    }
    if let Some(secure) = server.secure_addr() {
        println!("zklock server listening with TLS on {secure}");
    }
    if let Some(bound) = metrics {
        // The second line, after the address clients use (scripts read the first).
        println!("zklock server metrics at http://{bound}/metrics");
    }
}

/// The failure of a socket that could not be bound, `cannot <doing>: <reason>`; an address in use says what to do
/// about it (`in_use`).
fn cannot_bind(doing: &str, err: &std::io::Error, in_use: &str) -> Failure {
    let reason = match err.kind() {
        ErrorKind::AddrInUse => format!("address in use ({in_use})"),
        _ => err.to_string(),
    };
    Failure::new(exit::OS_ERROR, format!("cannot {doing}: {reason}"))
}

/// What the operator should do about a failed log write.
fn hint(failure: &Error) -> &'static str {
    let kind = match failure {
        Error::LogWrite { error, .. } => error.io_error().map(std::io::Error::kind),
        _ => None,
    };
    match kind {
        Some(ErrorKind::StorageFull | ErrorKind::QuotaExceeded) => "free space and restart",
        _ => "check the disk and restart",
    }
}
