//! `zklock counter get|set|add PATH [VALUE]`: read or change a counter kept in one ZooKeeper node — the library's
//! [`zklock::AtomicLong`] (Curator's `DistributedAtomicLong`, 8 bytes) or [`zklock::SharedCount`] (Curator's
//! `SharedCount`, 4 bytes), so Java services using Curator's counters share them.
//!
//! `--kind` picks the layout; without it the node's data decides (4 bytes: a shared count, 8 bytes: a long) and a
//! node that does not exist yet becomes a long. `get` prints the value, `set` and `add` the value after the change
//! (one line; `--json`: one object with the value before it too). `add` without a VALUE adds 1.
//!
//! A node is a counter only when it looks like one (`classify`): no children but a counter's receipts, nothing
//! another recipe made, and data that is a counter's — 4 or 8 bytes that do not read as text (`refuse_text`: "data"
//! is a plain node's, though it is 4 bytes; a counter's value within ±150,000,000 never reads as text). A node
//! without data, or whose bytes read as text, is a counter only when `--kind` says so. Everything else is refused
//! (exit 64) by `get`, `set` and `add` alike, and left as it is.
//!
//! `add` never wraps: a sum the counter cannot hold is refused (exit 64), as `set` refuses a value out of range —
//! unlike Curator's, whose `int` and `long` wrap.
//!
//! Every change is a compare-and-set with a receipt (see the library's `recipes/counters.rs`) of the value read and
//! checked: a change whose reply was lost is counted once, never twice. If the session ends before the outcome is
//! known, the failure says that the change happened once or not at all.
//!
//! Exit statuses (`exit::TABLE`): 0 done; 64 usage error (also a VALUE out of range for a shared count, a sum out
//! of the counter's range, or PATH holding something that is no counter of that kind: nothing is changed); 69
//! ZooKeeper failing.

use serde::Serialize;
use zklock::{AtomicLong, Recipe, Session, SharedCount};

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
            .map_err(|err| Failure::new(exit::UNAVAILABLE, format!("cannot write JSON: {err}")))?;
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
    let found = classify(args, session).await?;
    if found.is_none() && args.action == CounterAction::Get {
        eprintln!("zklock: {path} does not exist: 0 is the value a counter starts from");
    }
    let kind = args.kind.or(found).unwrap_or(CounterKind::Long);
    let mut done = Done {
        path,
        kind: kind_name(kind),
        value: 0,
        previous: None,
        version: None,
    };
    match kind {
        CounterKind::Long => long(args, session, value, &mut done).await?,
        CounterKind::Shared => shared(args, session, value, &mut done).await?,
    }
    Ok(done)
}

/// `args.action` on the long at `args.path`. A change is a compare-and-set of the value read, so the bytes it
/// replaces are the ones checked (not text) and the sum is checked before it is written.
async fn long(args: &CounterArgs, session: &Session, value: i64, done: &mut Done<'_>) -> exit::Result<()> {
    let path = args.path.as_str();
    let failed = |err: zklock::Error| failure(args.action, path, err);
    let counter = AtomicLong::new(session, path).map_err(failed)?;
    let now = counter.get_versioned().await.map_err(failed)?;
    if args.action == CounterAction::Get {
        (done.value, done.version) = (now.value, Some(now.version));
        return Ok(());
    }
    let mut seen = now.value;
    loop {
        refuse_text(args, CounterKind::Long, &seen.to_be_bytes())?;
        let next = match args.action {
            CounterAction::Add => seen
                .checked_add(value)
                .ok_or_else(|| overflow(args, CounterKind::Long, seen, value))?,
            _ => value,
        };
        let changed = counter.compare_and_set(seen, next).await.map_err(failed)?;
        if changed.succeeded {
            (done.value, done.previous) = (changed.post, Some(changed.pre));
            return Ok(());
        }
        // Somebody changed it since we read it: `pre` is what is there now.
        seen = changed.pre;
    }
}

/// `args.action` on the shared count at `args.path`: like [`long`], a compare-and-set at the version read.
async fn shared(args: &CounterArgs, session: &Session, value: i64, done: &mut Done<'_>) -> exit::Result<()> {
    let path = args.path.as_str();
    let failed = |err: zklock::Error| failure(args.action, path, err);
    let counter = SharedCount::new(session, path, 0).map_err(failed)?;
    let value = i32::try_from(value).map_err(|_| {
        Failure::new(
            exit::USAGE,
            format!("{value} does not fit a shared count (a 32-bit integer, Curator's SharedCount)"),
        )
    })?;
    let mut now = counter.get().await.map_err(failed)?;
    if args.action == CounterAction::Get {
        (done.value, done.version) = (i64::from(now.value), Some(now.version));
        return Ok(());
    }
    loop {
        refuse_text(args, CounterKind::Shared, &now.value.to_be_bytes())?;
        let next = match args.action {
            CounterAction::Add => now
                .value
                .checked_add(value)
                .ok_or_else(|| overflow(args, CounterKind::Shared, now.value.into(), value.into()))?,
            _ => value,
        };
        if let Some(set) = counter.try_set(&now, next).await.map_err(failed)? {
            (done.value, done.previous) = (i64::from(set.value), Some(i64::from(now.value)));
            return Ok(());
        }
        now = counter.get().await.map_err(failed)?;
    }
}

/// What `args.path` is, as far as counters go: `None` when it does not exist (a counter that starts from 0), else
/// the kind of counter its data is. A usage failure when it is no counter — so that `set` and `add` never write a
/// counter's bytes into another node, nor `get` read one as a number:
/// - a lock's or a queue's directory, or any node with children other than a counter's receipts, whatever its data;
/// - an empty node that has had children (an idle lock's directory, say: a counter's receipts come with its first
///   value);
/// - without `--kind`: a node without data (a set barrier, or any plain node; Curator reads it as a long's 0), and
///   a node whose 4 or 8 bytes read as text ([`refuse_text`]).
///
/// Other data (3 bytes, say) is left to the recipe, which refuses it with its own words.
async fn classify(args: &CounterArgs, session: &Session) -> exit::Result<Option<CounterKind>> {
    let path = args.path.as_str();
    let failed = |err: zklock::Error| failure(args.action, path, err);
    let Some(found) = zklock::inspect(session, path).await.map_err(failed)? else {
        return Ok(None);
    };
    let client = session.client();
    let what = match found.recipe {
        Recipe::SharedCount { value, .. } => {
            refuse_text(args, CounterKind::Shared, &value.to_be_bytes())?;
            return Ok(Some(CounterKind::Shared));
        }
        Recipe::AtomicLong { value, .. } => {
            refuse_text(args, CounterKind::Long, &value.to_be_bytes())?;
            return Ok(Some(CounterKind::Long));
        }
        Recipe::Empty => match session
            .retry()
            .run(|| client.check_stat(path))
            .await
            .map_err(failed)?
        {
            None => return Ok(None),
            Some(stat) if stat.data_length > 0 => return Ok(Some(CounterKind::Long)),
            Some(stat) if stat.cversion > 0 => {
                "an empty recipe directory (it has had children: a lock's, say)".to_owned()
            }
            Some(_) if args.kind.is_some() => return Ok(args.kind),
            Some(_) => {
                "a node without data (a set barrier, or a plain node; if it is a counter, --kind long counts \
                        from 0 in it, as Curator reads it)"
                    .to_owned()
            }
        },
        recipe => crate::status::recipe_name(&recipe),
    };
    Err(Failure::new(
        exit::USAGE,
        format!("{path} is {what}, not a counter: nothing was changed"),
    ))
}

/// A usage failure when `bytes` — the value of `args.path` as a counter of `kind` — read as text and `--kind` does
/// not say that the node is a counter: "data" is a plain node's, not the shared count 1684108385. A counter's
/// value between -150,000,000 and 150,000,000 never reads as text (its first byte is a control character or no
/// UTF-8), so only counters beyond that need `--kind`.
fn refuse_text(args: &CounterArgs, kind: CounterKind, bytes: &[u8]) -> exit::Result<()> {
    if args.kind.is_some() || !is_text(bytes) {
        return Ok(());
    }
    let (path, text) = (args.path.as_str(), String::from_utf8_lossy(bytes));
    Err(Failure::new(
        exit::USAGE,
        format!(
            "{path} holds the text {text:?}, not a counter: nothing was changed (a counter's bytes read as text only \
             beyond ±150,000,000; if it is one, say so with --kind {})",
            kind_name(kind)
        ),
    ))
}

/// Whether `bytes` read as text: UTF-8 without control characters but tabs and line ends.
fn is_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| {
        text.chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
    })
}

/// The failure of an `add` of `delta` to `now` whose sum a counter of `kind` cannot hold: refused, as `set` refuses a
/// value out of range, instead of wrapping as Curator's `int` and `long` would.
fn overflow(args: &CounterArgs, kind: CounterKind, now: i64, delta: i64) -> Failure {
    let holds = match kind {
        CounterKind::Long => "a long (a 64-bit integer, Curator's DistributedAtomicLong)",
        CounterKind::Shared => "a shared count (a 32-bit integer, Curator's SharedCount)",
    };
    Failure::new(
        exit::USAGE,
        format!(
            "adding {delta} to {} ({now}) makes {}, which does not fit {holds}: nothing was changed (a counter never \
             wraps)",
            args.path,
            i128::from(now) + i128::from(delta)
        ),
    )
}

/// `long` or `shared`, as `--kind` and `--json` spell it.
fn kind_name(kind: CounterKind) -> &'static str {
    match kind {
        CounterKind::Long => "long",
        CounterKind::Shared => "shared",
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
                exit::UNAVAILABLE,
                format!(
                    "{verb} {path}: {err} before the outcome of our write was known: it happened once or not at \
                     all"
                ),
            )
        }
        err => Failure::new(exit::UNAVAILABLE, format!("{verb} {path}: {err}{}", conn::refused(&err))),
    }
}

#[cfg(test)]
mod tests {
    use super::is_text;

    #[test]
    fn text_is_told_from_a_counters_bytes() {
        for text in ["data", "1234", "123\n", "\u{1f512}", "1234567\n", "password"] {
            assert!(is_text(text.as_bytes()), "{text:?}");
        }
        // Within ±150,000,000 a counter's first byte is a control character (0x00-0x08) or never UTF-8
        // (0xf5-0xff), whatever follows.
        for value in [
            0,
            1,
            -1,
            150_000_000,
            -150_000_000,
            i32::from_be_bytes([8, 0x7e, 0x7e, 0x7e]),
        ] {
            assert!(!is_text(&i32::to_be_bytes(value)), "{value}");
            assert!(!is_text(&i64::from(value).to_be_bytes()), "{value}");
        }
        for first in (0..=8).chain(0xf5..=0xff) {
            assert!(!is_text(&[first, b'a', b'b', b'c']), "{first:#x}");
        }
        assert!(
            150_000_000 < i32::from_be_bytes([9, 0, 0, 0])
                && -150_000_000 > i32::from_be_bytes([0xf5, 0, 0, 0])
        );
        assert!(
            is_text(&i32::to_be_bytes(0x0909_0909)),
            "the smallest positive count that reads as text"
        );
    }
}
