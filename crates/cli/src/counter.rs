//! `zklock counter get|set|add PATH [VALUE]`: read or change a counter kept in one ZooKeeper node — the library's
//! [`zklock::AtomicLong`] (Curator's `DistributedAtomicLong`, 8 bytes) or [`zklock::SharedCount`] (Curator's
//! `SharedCount`, 4 bytes), so Java services using Curator's counters share them.
//!
//! `--kind` picks the layout; without it the node's data decides (4 bytes: a shared count, 8 bytes or none: a
//! long) and a node that does not exist yet becomes a long. `get` prints the value, `set` and `add` the value after
//! the change (one line; `--json`: one object with the value before it too). `add` without a VALUE adds 1.
//! Arithmetic wraps like Java's `int` and `long`, as Curator's does.
//!
//! Every change is a compare-and-set with a receipt (see the library's `counter.rs`): a change whose reply was lost
//! is counted once, never twice. If the session ends before the outcome is known, the failure says that the change
//! happened once or not at all.
//!
//! Exit statuses (`exit::TABLE`): 0 done; 2 usage error (also a VALUE out of range for a shared count, or PATH
//! holding something that is no counter of that kind: nothing is changed); 3 ZooKeeper failing.

use serde::Serialize;
use zklock::{AtomicLong, Recipe, Session, SharedCount};
use zookeeper_client::{self as zk, Client};

use crate::cli::{CounterAction, CounterArgs, CounterKind};
use crate::exit::{self, Failure};
use crate::zk as conn;

pub async fn counter(args: CounterArgs) -> exit::Result {
    let value = match (args.action, args.value) {
        (CounterAction::Get, Some(_)) => {
            return Err(Failure::new(exit::USAGE, "counter get takes no VALUE"));
        }
        (CounterAction::Set, None) => return Err(Failure::new(exit::USAGE, "counter set needs a VALUE")),
        (CounterAction::Add, None) => 1,
        (_, value) => value.unwrap_or_default(),
    };
    let client = conn::connect_args(&args.connect).await?;
    let result = match conn::session(&client, &args.connect.security, &args.acl) {
        Ok(session) => counter_with(&args, &session, value).await,
        Err(err) => Err(err.into()),
    };
    conn::close(client).await;
    let done = result?;
    if args.json {
        let json = serde_json::to_string(&done)
            .map_err(|err| Failure::new(exit::FAILURE, format!("cannot write JSON: {err}")))?;
        println!("{json}");
    } else {
        println!("{}", done.value);
    }
    Ok(exit::OK)
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Done<'a> {
    path: &'a str,
    /// `long` or `shared`.
    kind: &'static str,
    /// The value now: after our change, for `set` and `add`.
    value: i64,
    /// `set`, `add`: the value our change replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    previous: Option<i64>,
    /// `get`: the node's version (-1 when it does not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i32>,
}

async fn counter_with<'a>(args: &'a CounterArgs, session: &Session, value: i64) -> exit::Result<Done<'a>> {
    let path = args.path.as_str();
    let failed = |err: zklock::Error| failure(args.action, path, err);
    if !is_counter(args, session).await? && args.action == CounterAction::Get {
        eprintln!("zklock: {path} does not exist: 0 is the value a counter starts from");
    }
    let kind = match args.kind {
        Some(kind) => kind,
        None => detect(session.client(), path).await.map_err(failed)?,
    };
    let mut done = Done {
        path,
        kind: match kind {
            CounterKind::Long => "long",
            CounterKind::Shared => "shared",
        },
        value: 0,
        previous: None,
        version: None,
    };
    match kind {
        CounterKind::Long => {
            let counter = AtomicLong::new(session, path).map_err(failed)?;
            match args.action {
                CounterAction::Get => {
                    let now = counter.get_versioned().await.map_err(failed)?;
                    (done.value, done.version) = (now.value, Some(now.version));
                }
                CounterAction::Set | CounterAction::Add => {
                    let changed = if args.action == CounterAction::Set {
                        counter.set(value).await
                    } else {
                        counter.add(value).await
                    }
                    .map_err(failed)?;
                    (done.value, done.previous) = (changed.post, Some(changed.pre));
                }
            }
        }
        CounterKind::Shared => {
            let counter = SharedCount::new(session, path, 0).map_err(failed)?;
            let value = i32::try_from(value).map_err(|_| {
                Failure::new(
                    exit::USAGE,
                    format!("{value} does not fit a shared count (a 32-bit integer, Curator's SharedCount)"),
                )
            })?;
            let mut now = counter.get().await.map_err(failed)?;
            match args.action {
                CounterAction::Get => done.version = Some(now.version),
                CounterAction::Set => {
                    done.previous = Some(i64::from(now.value));
                    now = counter.set(value).await.map_err(failed)?;
                }
                CounterAction::Add => loop {
                    // Compare-and-set: add to what we read, unless somebody changed it since.
                    let next = now.value.wrapping_add(value);
                    if let Some(set) = counter.try_set(&now, next).await.map_err(failed)? {
                        done.previous = Some(i64::from(now.value));
                        now = set;
                        break;
                    }
                    now = counter.get().await.map_err(failed)?;
                },
            }
            done.value = i64::from(now.value);
        }
    }
    Ok(done)
}

/// Whether `path` exists as a counter (`false`: it does not exist yet); a usage failure when it is something else —
/// a lock's or a queue's directory, any node with children other than a counter's receipts, an empty node that has
/// had children — so that `set` and `add` never write a counter's bytes into another recipe's node.
async fn is_counter(args: &CounterArgs, session: &Session) -> exit::Result<bool> {
    let path = args.path.as_str();
    let failed = |err: zklock::Error| failure(args.action, path, err);
    let Some(found) = zklock::inspect(session, path).await.map_err(failed)? else {
        return Ok(false);
    };
    let client = session.client();
    let what = match found.recipe {
        Recipe::AtomicLong { .. } | Recipe::SharedCount { .. } => return Ok(true),
        // An empty node: a counter that was never set (Curator reads it as 0), unless it has had children — an idle
        // lock's directory, say (a counter's receipts come with its first value).
        Recipe::Empty => match session
            .retry()
            .run(|| client.check_stat(path))
            .await
            .map_err(failed)?
        {
            None => return Ok(false),
            Some(stat) if stat.cversion == 0 || stat.data_length > 0 => return Ok(true),
            Some(_) => "an empty recipe directory (it has had children: a lock's, say)".to_owned(),
        },
        recipe => crate::status::recipe_name(&recipe),
    };
    Err(Failure::new(
        exit::USAGE,
        format!("{path} is {what}, not a counter: nothing was changed"),
    ))
}

/// The kind of counter the node at `path` holds: 4 bytes a shared count, anything else (8 bytes, none, no node) a
/// long — the library refuses what is neither.
async fn detect(client: &Client, path: &str) -> zklock::Result<CounterKind> {
    // An invalid path is reported by the recipe with its own words.
    if zklock::AtomicLong::new(client, path).is_err() {
        return Ok(CounterKind::Long);
    }
    match client.get_data(path).await {
        Ok((data, _)) if data.len() == 4 => Ok(CounterKind::Shared),
        Ok(_) | Err(zk::Error::NoNode) => Ok(CounterKind::Long),
        Err(err) => Err(err.into()),
    }
}

/// A recipe's error as a failure of `action` on `path`.
fn failure(action: CounterAction, path: &str, err: zklock::Error) -> Failure {
    let verb = match action {
        CounterAction::Get => "reading",
        CounterAction::Set => "setting",
        CounterAction::Add => "adding to",
    };
    let writes = action != CounterAction::Get;
    match err {
        zklock::Error::InvalidPath { .. } => Failure::new(exit::USAGE, err.to_string()),
        zklock::Error::CorruptData { .. } => Failure::new(
            exit::USAGE,
            format!("{verb} {path}: {err}: not a counter of that kind (nothing was changed)"),
        ),
        zklock::Error::SessionExpired | zklock::Error::Closed | zklock::Error::ConnectionLoss { .. }
            if writes =>
        {
            Failure::new(
                exit::FAILURE,
                format!(
                    "{verb} {path}: {err} before the outcome of our write was known: it happened once or not at \
                     all"
                ),
            )
        }
        err => Failure::new(exit::FAILURE, format!("{verb} {path}: {err}{}", conn::refused(&err))),
    }
}
