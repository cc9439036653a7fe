//! Key and trust stores made with the JDK's `keytool`, as an operator of a real ZooKeeper makes them, for TLS tests
//! (see [`crate::Builder::secure_client_port`]). Every store is PKCS#12 (keytool's default format since JDK 9).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::installation;

/// The `keytool` of the JDK whose `java` runs ZooKeeper (beside it once symlinks are resolved), else the one on
/// `PATH`.
///
/// # Panics
/// Java is not installed (see [`crate::install`]).
pub fn keytool() -> PathBuf {
    let java = &installation().java;
    std::fs::canonicalize(java)
        .ok()
        .and_then(|java| java.parent().map(|bin| bin.join("keytool")))
        .filter(|keytool| keytool.is_file())
        .unwrap_or_else(|| PathBuf::from("keytool"))
}

fn run(args: &[&str]) -> io::Result<String> {
    // A quick JVM: keytool is one more JVM start per call.
    let output = Command::new(keytool())
        .args([
            "-J-Xshare:auto",
            "-J-XX:TieredStopAtLevel=1",
            "-J-XX:+UseSerialGC",
        ])
        .args(args)
        .output()?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "keytool {args:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}

/// `keytool <command> -keystore <store> -storepass <password> -alias <alias> <more>`.
fn run_on_store(
    command: &[&str],
    store: &Path,
    password: &str,
    alias: &str,
    more: &[&str],
) -> io::Result<String> {
    let mut args = command.to_vec();
    args.extend(["-keystore", text(store)?, "-storepass", password, "-alias", alias]);
    args.extend_from_slice(more);
    run(&args)
}

fn text(path: &Path) -> io::Result<&str> {
    path.to_str()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a non-UTF-8 path"))
}

/// `keytool -genkeypair`: a PKCS12 key store at `store` (created) holding a new RSA key and its self-signed
/// certificate under `alias`, for the distinguished name `dname` (e.g. `CN=localhost`) and the subject alternative
/// names `san` (e.g. `ip:127.0.0.1,dns:localhost`), protected by `password`.
///
/// # Errors
/// keytool cannot be run or fails (its output is in the error).
pub fn generate_key_pair(
    store: &Path,
    alias: &str,
    dname: &str,
    san: &str,
    password: &str,
) -> io::Result<()> {
    let san = format!("SAN={san}");
    let key = [
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-validity",
        "2",
        "-dname",
        dname,
        "-ext",
        &san,
    ];
    run_on_store(
        &["-genkeypair", "-noprompt", "-storetype", "PKCS12"],
        store,
        password,
        alias,
        &key,
    )
    .map(drop)
}

/// `keytool -exportcert -rfc`: the certificate of `alias` in the key store `store`, as PEM.
///
/// # Errors
/// keytool cannot be run or fails.
pub fn export_certificate(store: &Path, alias: &str, password: &str) -> io::Result<String> {
    run_on_store(&["-exportcert", "-rfc"], store, password, alias, &[])
}

/// `keytool -importcert`: adds the certificate in the PEM file `certificate` to the PKCS12 trust store `store`
/// (created if missing) as the trusted entry `alias`.
///
/// # Errors
/// keytool cannot be run or fails.
pub fn import_trusted(store: &Path, alias: &str, certificate: &Path, password: &str) -> io::Result<()> {
    let file = ["-file", text(certificate)?];
    run_on_store(
        &["-importcert", "-noprompt", "-storetype", "PKCS12"],
        store,
        password,
        alias,
        &file,
    )
    .map(drop)
}
