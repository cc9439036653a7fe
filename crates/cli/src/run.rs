//! `zklock run PATH -- CMD...`: a cluster-wide `flock`.

use std::time::Duration;

use zklock::{Error, Mutex};

use crate::cli::RunArgs;
use crate::supervise::{self, Interrupts, EXIT_BUSY, EXIT_USAGE, EXIT_ZOOKEEPER};

/// Runs the command under the lock; returns the process exit status.
pub async fn run(args: RunArgs) -> i32 {
    supervise::with_session(&args.connect, async |client, interrupts| {
        run_with(&args, client, interrupts).await
    })
    .await
}

async fn run_with(args: &RunArgs, client: &zookeeper_client::Client, interrupts: &mut Interrupts) -> i32 {
    let mutex = match Mutex::new(client, &args.path) {
        Ok(mutex) => mutex
            .with_data(supervise::describe(&args.command, args.describe.as_deref()))
            .with_lost_policy(supervise::lost_policy(client.session_timeout(), args.kill_after)),
        Err(err) => {
            eprintln!("zklock: {err}");
            return EXIT_USAGE;
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
        signal = interrupts.recv() => {
            eprintln!("zklock: {signal} while waiting for {}", args.path);
            return supervise::interrupted_status(signal);
        }
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
    let what = format!("the lock on {}", args.path);
    supervise::run_while_held(
        guard,
        &args.path,
        &what,
        &args.command,
        args.kill_after,
        client.session_timeout(),
        interrupts,
    )
    .await
}
