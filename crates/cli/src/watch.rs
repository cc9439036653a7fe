//! `zklock watch PATH [-r] [--json] [-- CMD]`: the configuration half of ZooKeeper on the command line, as
//! `consul watch` and `confd` are for their stores. A [`zklock::Cache`] of the node (or with `-r` the tree) on a
//! reconnecting session, so that it outlives expiry: without a command it prints the content and then every
//! change, a line each; with one, it runs the command once at the start and once after every settled change, never
//! two at once, with the value on its standard input and in its environment.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Serialize;
use zklock::{Cache, CacheEvent, CachedNode};

use crate::child::Child;
use crate::cli::WatchArgs;
use crate::exit::{self, Failure};
use crate::supervise::{self, Interrupts};

/// Watches until a signal, the reader of our output going away, or (with a command) a command that cannot run.
pub async fn watch(args: WatchArgs) -> exit::Result {
    supervise::with_session(&args.connect, async |client, interrupts| {
        let session = crate::zk::reconnecting(client, &args.connect).await?;
        let cache = if args.recursive {
            Cache::tree(&session, &args.path)
        } else {
            Cache::node(&session, &args.path)
        }
        .map_err(|err| Failure::new(exit::USAGE, err.to_string()))?
        .start();
        let result = if args.command.is_empty() {
            print(&args, &cache, interrupts).await
        } else {
            run_on_changes(&args, &cache, interrupts).await
        };
        // `client` is closed by `with_session`; a later ZooKeeper session of ours is closed here.
        drop(cache);
        crate::zk::close_later(session, client).await;
        result
    })
    .await
}

/// Without a command: a line per event (the content first, as `created`, then `initialized`), until SIGINT or
/// SIGTERM or the reader goes away (exit 0); SIGHUP and SIGQUIT end it with 128 + N.
async fn print(args: &WatchArgs, cache: &Cache, interrupts: &mut Interrupts) -> exit::Result {
    let mut events = cache.events();
    let gone = crate::lines::reader_gone();
    tokio::pin!(gone);
    loop {
        let event = tokio::select! {
            event = events.next() => event.ok_or_else(|| ended(args, cache))?,
            () = &mut gone => return Ok(exit::OK),
            signal = interrupts.recv() => return stopped(args, signal),
        };
        let Some(line) = line(args, cache, &event) else {
            continue;
        };
        if !crate::lines::write_line(&line)? {
            return Ok(exit::OK);
        }
    }
}

/// The line `event` makes, `None` for a change of the stat alone (a child came or went: the child has a line of
/// its own).
fn line(args: &WatchArgs, cache: &Cache, event: &CacheEvent) -> Option<String> {
    let (name, node) = match event {
        CacheEvent::Changed { old, new } if old.data == new.data => return None,
        CacheEvent::Created(node) => ("created", Some(node)),
        CacheEvent::Changed { new, .. } => ("changed", Some(new)),
        CacheEvent::Deleted(node) => ("deleted", Some(node)),
        CacheEvent::Initialized => ("initialized", None),
        CacheEvent::Reset => ("reset", None),
        _ => return None,
    };
    if args.json {
        let line = Line {
            event: name,
            path: node.map_or(args.path.as_str(), |node| node.path.as_str()),
            data: node
                .filter(|_| name != "deleted")
                .map(|node| String::from_utf8_lossy(&node.data).into_owned()),
            version: node.map(|node| node.stat.version),
            mzxid: node.map(|node| node.stat.mzxid),
            nodes: (name == "initialized").then(|| cache.len()),
            observed_ms: crate::lines::now_ms(),
        };
        return serde_json::to_string(&line).ok();
    }
    Some(match (name, node) {
        ("deleted", Some(node)) => format!("deleted {}", node.path),
        (_, Some(node)) => format!(
            "{name} {} {}",
            node.path,
            crate::status::shown_data(true, &node.data)
        ),
        ("initialized", None) => format!("initialized {} ({} node(s))", args.path, cache.len()),
        _ => format!("{name} {}", args.path),
    })
}

/// One line of `--json`.
#[derive(Debug, Serialize)]
struct Line<'a> {
    /// `created`, `changed`, `deleted`, `initialized` (the content so far was printed) or `reset` (we fell behind:
    /// the content follows again as `created` lines).
    event: &'a str,
    path: &'a str,
    /// The data as UTF-8 (lossily); absent for `deleted`, `initialized` and `reset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mzxid: Option<i64>,
    /// With `initialized`: how many nodes are held.
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<usize>,
    observed_ms: u64,
}

/// With a command: runs it once the first read is done and once after every change that is followed by
/// `--debounce` of quiet, never two at once (changes during a run make one more run after it).
async fn run_on_changes(args: &WatchArgs, cache: &Cache, interrupts: &mut Interrupts) -> exit::Result {
    let debounce = Duration::from_secs_f64(args.debounce.max(0.0));
    let mut events = cache.events();
    let mut child: Option<Child> = None;
    let mut pending = false;
    let mut initialized = false;
    let settle = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(settle);
    loop {
        tokio::select! {
            event = events.next() => {
                let event = event.ok_or_else(|| ended(args, cache))?;
                if changes(&event) || matches!(event, CacheEvent::Initialized) {
                    initialized |= matches!(event, CacheEvent::Initialized);
                    pending = initialized;
                    settle.as_mut().reset(tokio::time::Instant::now() + debounce);
                }
            }
            () = &mut settle, if pending && child.is_none() => {
                pending = false;
                child = Some(start(args, cache)?);
            }
            status = wait(&mut child) => {
                child = None;
                let code = crate::child::exit_code(status);
                if code != exit::OK {
                    crate::say::warn(format_args!("the command exited with status {code}; watching {} on", args.path));
                }
            }
            signal = interrupts.next() => match (&mut child, signal) {
                (Some(running), Signal::SIGUSR1 | Signal::SIGUSR2) => running.signal(signal),
                (_, Signal::SIGUSR1 | Signal::SIGUSR2) => {}
                (Some(running), signal) => {
                    running.signal(signal);
                    let _ = running.wait().await;
                    return stopped(args, signal);
                }
                (None, signal) => return stopped(args, signal),
            },
        }
    }
}

/// Whether `event` changes what the command is given (data, or a node coming or going; not the stat alone).
fn changes(event: &CacheEvent) -> bool {
    match event {
        CacheEvent::Changed { old, new } => old.data != new.data,
        CacheEvent::Created(_) | CacheEvent::Deleted(_) | CacheEvent::Reset => true,
        _ => false,
    }
}

/// The running command's exit; never, while none runs.
async fn wait(child: &mut Option<Child>) -> std::process::ExitStatus {
    match child {
        Some(running) => match running.wait().await {
            Ok(status) => status,
            Err(err) => {
                tracing::warn!(%err, "waiting for the command");
                std::os::unix::process::ExitStatusExt::from_raw(1 << 8)
            }
        },
        None => std::future::pending().await,
    }
}

/// Starts the command with the content now: a node's data (or for a tree, a JSON object of every path's data) on
/// its standard input, and in `ZKLOCK_WATCH_*` variables.
fn start(args: &WatchArgs, cache: &Cache) -> exit::Result<Child> {
    let nodes = cache.nodes();
    let mut env = vec![("ZKLOCK_WATCH_PATH", args.path.clone())];
    let input = if args.recursive {
        env.push(("ZKLOCK_WATCH_NODES", nodes.len().to_string()));
        let tree: std::collections::BTreeMap<&str, String> = nodes
            .iter()
            .map(|node| {
                (
                    node.path.as_str(),
                    String::from_utf8_lossy(&node.data).into_owned(),
                )
            })
            .collect();
        serde_json::to_vec(&tree).unwrap_or_default()
    } else {
        let node: Option<&CachedNode> = nodes.first();
        env.push(("ZKLOCK_WATCH_EXISTS", u8::from(node.is_some()).to_string()));
        if let Some(node) = node {
            env.push((
                "ZKLOCK_WATCH_VALUE",
                String::from_utf8_lossy(&node.data).into_owned(),
            ));
            env.push(("ZKLOCK_WATCH_VERSION", node.stat.version.to_string()));
        }
        node.map(|node| node.data.to_vec()).unwrap_or_default()
    };
    Child::spawn(
        &args.command,
        &env,
        None,
        &format!("the watch of {}", args.path),
        Some(input),
    )
    .map_err(|err| {
        let status = if err.kind() == std::io::ErrorKind::NotFound {
            exit::NOT_FOUND
        } else {
            exit::CANNOT_RUN
        };
        Failure::new(status, format!("cannot run {}: {err}", args.command[0]))
    })
}

/// SIGINT and SIGTERM end a watch as its normal end (0); SIGHUP and SIGQUIT as they end any wait (128 + N).
fn stopped(args: &WatchArgs, signal: Signal) -> exit::Result {
    match signal {
        Signal::SIGINT | Signal::SIGTERM => Ok(exit::OK),
        signal => Err(supervise::interrupted(
            signal,
            format!("{signal} while watching {}", args.path),
        )),
    }
}

/// The cache stopped: its session ended for good or ZooKeeper refused the watch.
fn ended(args: &WatchArgs, cache: &Cache) -> Failure {
    let why = cache
        .ended()
        .map_or_else(|| "the cache stopped".to_owned(), |err| err.to_string());
    Failure::new(exit::UNAVAILABLE, format!("watching {}: {why}", args.path))
}
