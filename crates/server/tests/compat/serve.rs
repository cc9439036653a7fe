//! `zklock serve` as a separate process (so it can be killed with SIGKILL), and its on-disk log files.
//!
//! The binary comes from the `zklock-cli` crate, which this crate cannot depend on (the CLI depends on
//! the server). It is looked up next to the test binary (`target/<profile>/zklock`, derived from
//! `std::env::current_exe()` = `target/<profile>/deps/compat-<hash>`); if it is missing, it is built
//! once with `cargo build -p zklock-cli` into the same target directory.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::WAIT;

/// Path of the `zklock` binary, built first if needed.
pub fn zklock_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("current exe");
            let profile_dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>/deps/<exe>");
            let binary = profile_dir.join("zklock");
            if !binary.exists() {
                let target_dir = profile_dir.parent().expect("target dir");
                let mut cargo =
                    std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
                cargo
                    .args(["build", "-p", "zklock-cli", "--bin", "zklock"])
                    .env("CARGO_TARGET_DIR", target_dir)
                    .current_dir(env!("CARGO_MANIFEST_DIR"));
                if profile_dir.file_name().is_some_and(|n| n == "release") {
                    cargo.arg("--release");
                }
                let status = cargo.status().expect("run cargo build -p zklock-cli");
                assert!(status.success(), "cargo build -p zklock-cli failed: {status}");
            }
            assert!(binary.exists(), "no zklock binary at {}", binary.display());
            binary
        })
        .clone()
}

/// A running `zklock serve`.
pub struct Serve {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

/// What a start attempt produced.
pub enum Started {
    /// Serving.
    Up(Serve),
    /// Exited before serving: status and everything it printed.
    Exited(ExitStatus, String),
}

impl Serve {
    /// Starts `zklock serve` on `dir` (port chosen by the OS) and waits for its "listening on" line.
    pub async fn start(dir: &Path) -> Started {
        let mut command = Command::new(zklock_binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn zklock serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut printed = String::new();
        let listening = tokio::time::timeout(WAIT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                printed.push_str(&line);
                printed.push('\n');
                if let Some(addr) = line.strip_prefix("zklock server listening on ") {
                    return addr.trim().parse::<SocketAddr>().ok();
                }
            }
            None
        })
        .await
        .expect("zklock serve printed its address or exited in time");
        match listening {
            Some(addr) => {
                // Keep draining stdout so the server never blocks on a full pipe.
                tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                Started::Up(Serve { child, addr })
            }
            None => {
                let status = tokio::time::timeout(WAIT, child.wait())
                    .await
                    .expect("exits in time")
                    .expect("wait");
                let mut err = String::new();
                if let Some(mut stderr) = child.stderr.take() {
                    let _ = stderr.read_to_string(&mut err).await;
                }
                Started::Exited(status, format!("{printed}{err}"))
            }
        }
    }

    /// Starts and expects it to serve.
    pub async fn up(dir: &Path) -> Serve {
        match Self::start(dir).await {
            Started::Up(serve) => serve,
            Started::Exited(status, output) => panic!("zklock serve exited ({status}):\n{output}"),
        }
    }

    /// SIGKILL (by this child's pid) and reap.
    pub async fn kill9(mut self) {
        self.child.start_kill().expect("SIGKILL zklock serve");
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("killed process reaped in time")
            .expect("wait");
    }
}

/// The log files (`log.<hex>`) anywhere under `dir`, oldest first.
pub fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).expect("read data dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Some(hex) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("log."))
            {
                if let Ok(zxid) = u64::from_str_radix(hex, 16) {
                    found.push((zxid, path));
                }
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Byte ranges `(start, end)` of the records in a log file (format in `zklock-storage`'s docs: 16-byte
/// header, then `marker "ZKTR" | len u32 | zxid i64 | batch_start u64 | payload | crc u32`, zero fill).
pub fn log_records(bytes: &[u8]) -> Vec<(usize, usize)> {
    const MARKER: u32 = 0x5A4B_5452;
    let mut records = Vec::new();
    let mut at = 16;
    while at + 28 <= bytes.len() {
        let marker = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        if marker != MARKER {
            break;
        }
        let len = u32::from_be_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let end = at + 28 + len;
        if end > bytes.len() {
            break;
        }
        records.push((at, end));
        at = end;
    }
    records
}
