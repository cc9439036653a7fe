//! The command that `zklock run` runs in the `run` workload: it logs when it begins, ticks while it works, and does
//! its read-modify-write of the counter through the register with `ZKLOCK_FENCING_TOKEN`.
//!
//! Every log line is written with one `write(2)` as it happens, so what a killed command did is on disk.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::clock::now_ns;
use crate::history::{Action, Kind};
use crate::register::{Answer, Connection};

/// What the command is told on its command line.
#[derive(Debug, Clone, clap::Args)]
pub struct CommandArgs {
    /// The register's address.
    #[arg(long)]
    pub register: String,
    /// The contender slot this command runs for.
    #[arg(long)]
    pub client: u32,
    /// Where to log.
    #[arg(long)]
    pub log: PathBuf,
    /// How long to work between the read and the write, milliseconds.
    #[arg(long)]
    pub work_ms: u64,
    /// Every fourth command (by `--launch`) works this long instead: longer than the session timeout, so that a
    /// paused `zklock run` matters.
    #[arg(long)]
    pub long_ms: u64,
    /// Which command of its slot this is.
    #[arg(long)]
    pub launch: u64,
}

/// Runs the critical section; exit 0 when the write was accepted, 5 when it was fenced out.
pub async fn run(args: CommandArgs) -> i32 {
    match section(&args).await {
        Ok(true) => 0,
        Ok(false) => 5,
        Err(err) => {
            eprintln!("chaos command: {err:#}");
            1
        }
    }
}

async fn section(args: &CommandArgs) -> Result<bool> {
    let token: i64 = std::env::var("ZKLOCK_FENCING_TOKEN")
        .context("ZKLOCK_FENCING_TOKEN is not set: run me under zklock run")?
        .parse()
        .context("ZKLOCK_FENCING_TOKEN")?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .with_context(|| format!("opening {}", args.log.display()))?;
    writeln!(log, "begin {token} {}", now_ns())?;
    let mut register = Connection::open(&args.register, args.client).await?;
    let Answer::Ok(value) = register.op(Kind::Exclusive, token, Action::Read, 0).await? else {
        writeln!(log, "end {}", now_ns())?;
        return Ok(false);
    };
    let work_ms = if args.launch & 3 == 0 {
        args.long_ms
    } else {
        args.work_ms
    };
    let until = now_ns() + work_ms * 1_000_000;
    while now_ns() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
        writeln!(log, "tick {}", now_ns())?;
    }
    let accepted = register
        .op(Kind::Exclusive, token, Action::Write, value + 1)
        .await?
        != Answer::Rejected;
    writeln!(log, "end {}", now_ns())?;
    Ok(accepted)
}
