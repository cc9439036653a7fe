//! Running helper programs (python scripts, zkCli, the zklock binary) with bounded waits.

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use tokio::process::Command;

/// This directory (the python helper scripts live here).
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compat")
        .join(name)
}

/// Runs `command` to completion within `limit` (killed on timeout, which fails the test).
pub async fn run(mut command: Command, limit: Duration) -> Output {
    command.kill_on_drop(true).stdin(std::process::Stdio::null());
    let description = format!("{command:?}");
    let child = command.output();
    match tokio::time::timeout(limit, child).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!("cannot run {description}: {e}"),
        Err(_) => panic!("{description} did not finish within {limit:?}"),
    }
}

/// Runs a python helper script with arguments; asserts it succeeded and printed `OK`.
pub async fn python_ok(name: &str, args: &[&str]) {
    let mut command = Command::new("python3");
    command.arg(script(name)).args(args);
    run_ok(&format!("{name} {args:?}"), command).await;
}

/// Runs `command` (bounded: 3 minutes); asserts it succeeded and printed a line `OK`. `what` names it in the failure.
pub async fn run_ok(what: &str, command: Command) {
    let output = run(command, Duration::from_secs(180)).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.lines().any(|l| l == "OK"),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}
