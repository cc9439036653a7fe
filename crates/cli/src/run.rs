//! `zklock run PATH -- CMD...`: a cluster-wide `flock`.

use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{signal, SignalKind};
use zklock::{Error, Mutex};

use crate::child::{exit_code, Child};
use crate::cli::RunArgs;
use crate::zk;

/// Exit status when the lock is busy or the timeout passed.
pub const EXIT_BUSY: i32 = 1;
/// Exit status when ZooKeeper cannot be reached or fails.
pub const EXIT_ZOOKEEPER: i32 = 3;
/// Exit status when the lock was lost while the command ran.
pub const EXIT_LOST: i32 = 4;

/// Runs the command under the lock; returns the process exit status.
pub async fn run(args: RunArgs) -> i32 {
    let client = match zk::connect_args(&args.connect).await {
        Ok(client) => client,
        Err(err) => {
            eprintln!("zklock: {err:#}");
            return EXIT_ZOOKEEPER;
        }
    };
    let code = run_with(&args, &client).await;
    zk::close(client).await;
    code
}

fn holder_description(args: &RunArgs) -> String {
    let host = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut text = format!(
        "host={host} pid={} cmd={}",
        std::process::id(),
        args.command.join(" ")
    );
    if let Some(describe) = &args.describe {
        text.push_str(" note=");
        text.push_str(describe);
    }
    text
}

async fn run_with(args: &RunArgs, client: &zookeeper_client::Client) -> i32 {
    let mutex = match Mutex::new(client, &args.path) {
        Ok(mutex) => mutex.with_data(holder_description(args)),
        Err(err) => {
            eprintln!("zklock: {err}");
            return 2;
        }
    };
    let mut interrupts = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(int), Ok(term)) => (int, term),
        _ => {
            eprintln!("zklock: cannot install signal handlers");
            return 1;
        }
    };
    let acquire = async {
        if args.nonblock {
            mutex.try_lock().await
        } else if let Some(secs) = args.timeout {
            mutex
                .lock_timeout(Duration::from_secs_f64(secs.max(0.0)))
                .await
                .map(Some)
        } else {
            mutex.lock().await.map(Some)
        }
    };
    let acquired = tokio::select! {
        acquired = acquire => acquired,
        _ = interrupts.0.recv() => { eprintln!("zklock: interrupted while waiting for {}", args.path); return 130; }
        _ = interrupts.1.recv() => { eprintln!("zklock: terminated while waiting for {}", args.path); return 143; }
    };
    let guard = match acquired {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            eprintln!("zklock: {} is locked by another holder (--nonblock)", args.path);
            return EXIT_BUSY;
        }
        Err(Error::Timeout) => {
            eprintln!(
                "zklock: timed out after {}s waiting for {}",
                args.timeout.unwrap_or_default(),
                args.path
            );
            return EXIT_BUSY;
        }
        Err(err) => {
            eprintln!("zklock: cannot lock {}: {err}", args.path);
            return EXIT_ZOOKEEPER;
        }
    };
    let env = [
        ("ZKLOCK_PATH", args.path.clone()),
        ("ZKLOCK_NODE", guard.path()),
        ("ZKLOCK_FENCING_TOKEN", guard.fencing_token().to_string()),
    ];
    let mut child = match Child::spawn(&args.command, &env) {
        Ok(child) => child,
        Err(err) => {
            eprintln!("zklock: cannot run {}: {err}", args.command[0]);
            let _ = guard.release().await;
            return if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    tracing::info!(pid = child.pid(), node = %guard.path(), "command started under the lock");
    let lost = guard.lost();
    tokio::pin!(lost);
    let code = loop {
        tokio::select! {
            status = child.wait() => break match status {
                Ok(status) => exit_code(status),
                Err(err) => { eprintln!("zklock: waiting for the command: {err}"); 1 }
            },
            _ = interrupts.0.recv() => child.signal(Signal::SIGINT),
            _ = interrupts.1.recv() => child.signal(Signal::SIGTERM),
            reason = &mut lost => {
                eprintln!("zklock: lost the lock on {} ({reason}); stopping the command (pid {})", args.path, child.pid());
                child.stop(Duration::from_secs_f64(args.kill_after.max(0.0))).await;
                drop(guard);
                return EXIT_LOST;
            }
        }
    };
    if let Err(err) = guard.release().await {
        eprintln!("zklock: releasing {}: {err}", args.path);
    }
    code
}

