//! `zklock status --watch PATH`: the status view again after every change, on a cache of the directory (with
//! `-r`, of the tree) — the library's watched view tells when something changed; `status` itself says what.

use std::time::Duration;

use nix::sys::signal::Signal;
use zklock::{Cache, CacheEvent};

use crate::cli::StatusArgs;
use crate::exit::{self, Failure};
use crate::status::StatusFailure;
use crate::supervise::{self, Interrupts};

/// After a change, how long the directory must stay quiet before the next view (a burst makes one view).
const SETTLE: Duration = Duration::from_millis(100);

/// Connects, prints a view, then another after every settled change, until SIGINT or SIGTERM (0).
pub async fn status_watch(args: StatusArgs) -> Result<i32, StatusFailure> {
    let client = crate::zk::connect_args(&args.connect).await?;
    let result = watch(&args, &client).await;
    crate::zk::close(client).await;
    result
}

async fn watch(args: &StatusArgs, client: &zookeeper_client::Client) -> Result<i32, StatusFailure> {
    let mut interrupts = Interrupts::install().map_err(|err| {
        Failure::new(
            exit::LOCAL_FAILURE,
            format!("cannot install signal handlers: {err}"),
        )
    })?;
    let cache = if args.recursive {
        Cache::tree(client, &args.path)
    } else {
        Cache::children(client, &args.path)
    }
    .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?
    .start();
    let mut events = cache.events();
    // The replay of what is there now: the first view shows it.
    while !matches!(events.next().await, Some(CacheEvent::Initialized) | None) {}
    loop {
        if !args.json {
            println!(
                "== {} ==",
                humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            );
        }
        crate::status::view(args, client).await?;
        // The next change, then quiet for SETTLE.
        let mut changed = false;
        loop {
            let quiet = tokio::time::sleep(SETTLE);
            tokio::select! {
                event = events.next() => match event {
                    None => {
                        let why = cache.ended().map_or_else(|| "the cache stopped".to_owned(), |e| e.to_string());
                        return Err(Failure::new(exit::UNAVAILABLE, format!("watching {}: {why}", args.path)).into());
                    }
                    Some(_) => changed = true,
                },
                () = quiet, if changed => break,
                signal = interrupts.recv() => return match signal {
                    Signal::SIGINT | Signal::SIGTERM => Ok(exit::OK),
                    signal => Err(supervise::interrupted(signal, format!("{signal} while watching {}", args.path)).into()),
                },
            }
        }
    }
}
