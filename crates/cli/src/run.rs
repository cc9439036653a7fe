//! `zklock run PATH -- CMD...`: a cluster-wide `flock`.

use std::time::Duration;

use zklock::{Error, Mutex};

use crate::cli::RunArgs;
use crate::exit::{self, Failure};
use crate::supervise::{self, Interrupts};

/// Runs the command under the lock; returns the process exit status.
pub async fn run(args: RunArgs) -> exit::Result {
    supervise::with_session(&args.connect, async |client, interrupts| {
        run_with(&args, client, interrupts).await
    })
    .await
}

async fn run_with(
    args: &RunArgs,
    client: &zookeeper_client::Client,
    interrupts: &mut Interrupts,
) -> exit::Result {
    let session = zklock::Session::new(client)
        .with_lost_policy(supervise::lost_policy(client.session_timeout(), args.kill_after));
    let mutex = Mutex::new(session, &args.path)
        .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?
        .with_data(supervise::describe(&args.command, args.describe.as_deref()));
    let acquire = async {
        if args.nonblock {
            mutex.try_lock().await
        } else if let Some(secs) = args.timeout {
            // Finite and at most a year: checked by `cli::seconds`.
            mutex.lock_timeout(Duration::from_secs_f64(secs)).await.map(Some)
        } else {
            mutex.lock().await.map(Some)
        }
    };
    let acquired = tokio::select! {
        acquired = acquire => acquired,
        signal = interrupts.recv() => {
            return Err(supervise::interrupted(signal, format!("{signal} while waiting for {}", args.path)));
        }
    };
    let guard = match acquired {
        Ok(Some(guard)) => guard,
        Ok(None) => {
            let message = format!("{} is locked by another holder (--nonblock)", args.path);
            return Err(Failure::new(exit::BUSY, message));
        }
        Err(Error::Timeout) => {
            let message = format!(
                "timed out after {}s waiting for {}",
                args.timeout.unwrap_or_default(),
                args.path
            );
            return Err(Failure::new(exit::BUSY, message));
        }
        Err(err) => {
            let message = format!("cannot lock {}: {err}", args.path);
            return Err(Failure::new(exit::FAILURE, message));
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
