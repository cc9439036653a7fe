//! `zklock status PATH`: who holds a recipe directory, and who waits, in order — as the library's
//! [`zklock::inspect`] reads it (this file knows no node layouts). `--json` prints the same as one JSON object for
//! scripts; `--check` makes the exit status say whether somebody holds it.

use std::time::SystemTime;

use serde::Serialize;
use zklock::{Inspection, NodeKind, Participant, Recipe, Role};

use crate::cli::StatusArgs;
use crate::exit::{self, Failure};
use crate::status_tree::{is_held, look, walk};
use crate::zk as conn;

/// `--check`: nobody holds it (or it does not exist).
const FREE: i32 = 1;

/// How `status` fails: a [`Failure`] (its exit status and message), which `main` takes with `Failure::from`.
#[derive(Debug)]
pub struct StatusFailure(Failure);

impl From<StatusFailure> for Failure {
    fn from(failure: StatusFailure) -> Failure {
        failure.0
    }
}

impl From<Failure> for StatusFailure {
    fn from(failure: Failure) -> StatusFailure {
        StatusFailure(failure)
    }
}

impl From<anyhow::Error> for StatusFailure {
    fn from(err: anyhow::Error) -> StatusFailure {
        StatusFailure(err.into())
    }
}

pub async fn status(args: StatusArgs) -> Result<i32, StatusFailure> {
    let client = conn::connect_args(&args.connect).await?;
    let result = view(&args, &client).await;
    conn::close(client).await;
    result
}

/// One view: the recipe at the path (or with -r every recipe under it), as text or JSON; the exit status.
pub async fn view(args: &StatusArgs, client: &zookeeper_client::Client) -> Result<i32, StatusFailure> {
    if args.recursive {
        let found = walk(client, &args.path).await?;
        show_tree(&args.path, &found, args.json)?;
        let held = found.iter().any(is_held);
        return Ok(if args.check && !held { FREE } else { exit::OK });
    }
    let found = look(client, &args.path).await?;
    let held = found.as_ref().is_some_and(is_held);
    if args.json {
        let report = Report::new(&args.path, found.as_ref(), held);
        let json = serde_json::to_string(&report)
            .map_err(|err| Failure::new(exit::UNAVAILABLE, format!("cannot write JSON: {err}")))?;
        println!("{json}");
    } else {
        show(&args.path, found);
    }
    Ok(if args.check && !held { FREE } else { exit::OK })
}

/// `status -r`: each recipe found under `root` on a line of its own (its warnings on stderr), or one JSON array of
/// what `--json` prints for each.
fn show_tree(root: &str, found: &[Inspection], json: bool) -> exit::Result<()> {
    if json {
        let reports: Vec<Report<'_>> = found
            .iter()
            .map(|inspection| Report::new(&inspection.path, Some(inspection), is_held(inspection)))
            .collect();
        let text = serde_json::to_string(&reports)
            .map_err(|err| Failure::new(exit::UNAVAILABLE, format!("cannot write JSON: {err}")))?;
        println!("{text}");
    } else if found.is_empty() {
        println!("{root}: no recipe under it");
    } else {
        for inspection in found {
            println!("{}", tree_line(inspection, SystemTime::now()));
            for warning in &inspection.warnings {
                eprintln!("zklock: warning: {}: {warning}", inspection.path);
            }
        }
    }
    Ok(())
}

/// One recipe's line of `status -r`: `PATH: a lock's directory, 1 holding (the oldest for 12s), 2 waiting`.
fn tree_line(inspection: &Inspection, now: SystemTime) -> String {
    let holders: Vec<_> = inspection
        .participants
        .iter()
        .filter(|p| matches!(p.role, Role::Holder | Role::Entered | Role::Member | Role::Voted))
        .collect();
    let waiting = inspection.participants.len() - holders.len();
    let since = holders
        .iter()
        .map(|p| p.created)
        .min()
        .and_then(|oldest| now.duration_since(oldest).ok())
        .map(|age| format!(" (the oldest for {}s)", age.as_secs()))
        .unwrap_or_default();
    let mut text = format!("{}: {}", inspection.path, recipe_name(&inspection.recipe));
    match inspection.recipe {
        Recipe::Queue { items, claimed } | Recipe::PriorityQueue { items, claimed } => {
            text.push_str(&format!(", {items} item(s), {claimed} claimed"));
        }
        Recipe::AtomicLong { value, .. } => text.push_str(&format!(", value {value}")),
        Recipe::SharedCount { value, .. } => text.push_str(&format!(", value {value}")),
        _ => text.push_str(&format!(", {} holding{since}, {waiting} waiting", holders.len())),
    }
    text
}

/// The human view.
fn show(path: &str, found: Option<Inspection>) {
    let Some(Inspection {
        recipe,
        participants,
        items_by_priority,
        warnings,
        ..
    }) = found
    else {
        println!("{path}: does not exist (a free lock, an unset barrier, an empty queue)");
        return;
    };
    for warning in &warnings {
        eprintln!("zklock: warning: {path}: {warning}");
    }
    let holders = participants.iter().filter(|p| p.role == Role::Holder).count();
    match recipe {
        Recipe::Semaphore { acquirers, leases } => {
            let of = leases.map(|n| format!(" of {n}")).unwrap_or_default();
            println!("{path}: semaphore with {holders}{of} lease(s) held, {acquirers} acquirer(s) queued");
            print_rows(&participants);
        }
        Recipe::Queue { items, claimed } => {
            println!("{path}: queue with {items} item(s), {claimed} claimed by a consumer");
        }
        Recipe::PriorityQueue { items, claimed } => {
            println!("{path}: priority queue with {items} item(s), {claimed} claimed by a consumer");
            for (priority, items) in items_by_priority {
                println!("  priority {priority:>11}: {items} item(s)");
            }
        }
        Recipe::AtomicLong { value, version } => {
            println!("{path}: counter (DistributedAtomicLong) {value}, version {version}");
        }
        Recipe::SharedCount { value, version } => {
            println!("{path}: shared count {value}, version {version}");
        }
        Recipe::DoubleBarrier { ready } => {
            let state = if ready {
                "entered (ready)"
            } else {
                "waiting for participants"
            };
            println!(
                "{path}: double barrier {state}, {} participant(s) present",
                participants.len()
            );
            print_rows(&participants);
        }
        Recipe::Group => {
            println!(
                "{path}: group with {} member(s), in the order they joined",
                participants.len()
            );
            print_rows(&participants);
        }
        Recipe::Service => {
            println!(
                "{path}: service with {} registered instance(s)",
                participants.len()
            );
            print_rows(&participants);
        }
        Recipe::Transaction {
            participants: named,
            joined,
            votes,
            commit_votes,
            outcome,
        } => {
            let decided = outcome.map_or_else(|| "undecided".to_owned(), |d| format!("decided: {d}"));
            println!(
                "{path}: two-phase commit transaction, {decided}; {votes} of {named} participant(s) voted \
                 ({commit_votes} commit), {joined} joined"
            );
            print_rows(&participants);
        }
        Recipe::Empty => {
            println!("{path}: exists with no contenders (a set barrier, or an idle lock directory)");
        }
        Recipe::Unrecognised { children } => {
            println!("{path}: {children} child node(s), none of them a contender");
        }
        Recipe::Lock | Recipe::Election if participants.is_empty() => {
            println!("{path}: free (no contenders)");
        }
        recipe => {
            let what = if recipe == Recipe::Election { "led" } else { "held" };
            println!(
                "{path}: {what} by {holders} of {} contender(s)",
                participants.len()
            );
            print_rows(&participants);
        }
    }
}

/// Each participant in three lines that fit 100 columns: who (role, place, kind) and its data; since when (the
/// server's creation time of its node, in UTC, and how long ago), its fencing token (holders only: a waiter's would
/// mean nothing yet) and its session; its node's name (what `zklock revoke --node` takes).
fn print_rows(rows: &[Participant]) {
    let now = SystemTime::now();
    let width = rows.iter().map(|row| label(row).len()).max().unwrap_or(0);
    let places = rows.len().to_string().len();
    for (i, row) in rows.iter().enumerate() {
        let head = format!(
            "  {:<width$} {:>places$}. [{}] ",
            label(row),
            i + 1,
            kind(row.kind)
        );
        let indent = " ".repeat(head.chars().count());
        let room = LINE.saturating_sub(head.chars().count()).max(20);
        println!("{head}{}", fit(&shown_data(row.data_readable, &row.data), room));
        let token = if row.role == Role::Holder {
            format!("  token {}", row.fencing_token)
        } else {
            String::new()
        };
        println!(
            "{indent}since {}{token}  session 0x{:x}",
            since(row.created, now),
            row.session_id
        );
        println!("{indent}node {}", row.name);
    }
}

/// The width the human view keeps to.
const LINE: usize = 100;

/// When a node was created, in UTC (the time of day within a day, else the date too), and how long ago:
/// `10:46:33 UTC (3h02m ago)`.
fn since(created: SystemTime, now: SystemTime) -> String {
    let age = now.duration_since(created).unwrap_or_default();
    let stamp = humantime::format_rfc3339_seconds(created).to_string(); // 2026-11-26T10:46:33Z
    let stamp = if age.as_secs() < 86_400 {
        stamp.get(11..19).unwrap_or(&stamp).to_owned()
    } else {
        stamp.replace('T', " ").trim_end_matches('Z').to_owned()
    };
    format!("{stamp} UTC ({} ago)", human_duration(age))
}

/// `45s`, `12m05s`, `3h02m`, `4d07h`.
fn human_duration(age: std::time::Duration) -> String {
    let s = age.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m{:02}s", s / 60, s % 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3_600, s % 3_600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3_600),
    }
}

/// At most `room` characters of `text`, cut with `…`.
fn fit(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What the human view shows of a node's data: the data, quoted, with every control character, line break and
/// terminal escape written out (`\n`, `\u{1b}`) — another client wrote it, and it must not make lines of its own
/// or drive the terminal — or that our session may not read it (its ACL).
pub fn shown_data(readable: bool, data: &[u8]) -> String {
    if readable {
        format!("{:?}", String::from_utf8_lossy(data))
    } else {
        "(data not readable: the node's ACL keeps it from this session)".into()
    }
}

/// What a recipe's node is, in words: `a lock's directory`, `a queue`… (for messages that name what a path holds).
pub fn recipe_name(recipe: &Recipe) -> String {
    match recipe {
        Recipe::Lock => "a lock's directory",
        Recipe::Election => "an election's directory",
        Recipe::Semaphore { .. } => "a semaphore's directory",
        Recipe::Queue { .. } => "a queue",
        Recipe::PriorityQueue { .. } => "a priority queue",
        Recipe::SharedCount { .. } => "a shared count",
        Recipe::AtomicLong { .. } => "a counter",
        Recipe::DoubleBarrier { .. } => "a double barrier",
        Recipe::Group => "a group",
        Recipe::Service => "a service's registrations",
        Recipe::Transaction { .. } => "a two-phase commit transaction",
        Recipe::Empty => "an empty node",
        Recipe::Unrecognised { .. } => "a node whose children belong to no recipe zklock knows",
        _ => "another recipe's node",
    }
    .to_owned()
}

/// What a participant is called in its recipe: a lock's holder, an election's leader, a semaphore's lease holder,
/// a read/write lock's reader or writer, a double barrier's member that has entered.
pub fn label(row: &Participant) -> &'static str {
    let holds = row.role == Role::Holder;
    match row.kind {
        NodeKind::Candidate if holds => "leader",
        NodeKind::Candidate => "candidate",
        NodeKind::Lease if holds => "lease holder",
        NodeKind::Read | NodeKind::KazooRead if holds => "reader",
        NodeKind::Read | NodeKind::KazooRead => "waiting reader",
        NodeKind::Write if holds => "writer",
        NodeKind::Write => "waiting writer",
        NodeKind::GroupMember | NodeKind::ShallowGroupMember => "member",
        NodeKind::ServiceInstance => "instance",
        NodeKind::Coordinator => "coordinator",
        NodeKind::Vote => "voted",
        NodeKind::TransactionParticipant => "joined",
        _ if holds => "holder",
        _ if row.role == Role::Entered => "entered",
        _ => "waiting",
    }
}

fn kind(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Lock | NodeKind::KazooLock => "lock",
        NodeKind::Read | NodeKind::KazooRead => "read",
        NodeKind::Write => "write",
        NodeKind::Candidate => "election",
        NodeKind::Lease => "lease",
        NodeKind::Member => "member",
        NodeKind::GroupMember => "party",
        NodeKind::ShallowGroupMember => "shallow party",
        NodeKind::Coordinator => "coordinator",
        NodeKind::Vote => "vote",
        NodeKind::TransactionParticipant => "participant",
        NodeKind::ServiceInstance => "instance",
        _ => "other",
    }
}

/// `--json`: one object. `recipe` is `null` when the directory does not exist; the recipe-specific fields of
/// `counts` (and `ready`) appear only for their recipe.
#[derive(Debug, Serialize)]
struct Report<'a> {
    path: &'a str,
    exists: bool,
    recipe: Option<&'static str>,
    /// What `--check` tells.
    held: bool,
    /// Holders (the leader, lease holders, readers sharing a lock, members inside a double barrier).
    holders: Vec<Row>,
    /// Those waiting, in queue order.
    waiters: Vec<Row>,
    counts: Counts,
    /// A double barrier: whether it has opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    ready: Option<bool>,
    /// A counter: its value.
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<i64>,
    /// A counter: its node's version.
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i32>,
    /// A priority queue: its items per priority, first out first.
    #[serde(skip_serializing_if = "Option::is_none")]
    priorities: Option<Vec<Priority>>,
    /// A two-phase commit transaction: `commit`, `abort` or `undecided`.
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'static str>,
    /// What the layout shows to be unsafe (e.g. kazoo's and Curator's lock nodes in one queue); none: absent.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Debug, Default, Serialize)]
struct Counts {
    holders: usize,
    waiters: usize,
    /// A semaphore: acquirers queued for their turn to take a lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    acquirers: Option<usize>,
    /// A semaphore: its number of leases, when recorded (zklock's and kazoo's; not Curator's).
    #[serde(skip_serializing_if = "Option::is_none")]
    leases: Option<usize>,
    /// A queue: its items (claimed ones included).
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<usize>,
    /// A queue: items claimed by a consumer.
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed: Option<usize>,
    /// Children of a directory no recipe uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<usize>,
    /// A two-phase commit transaction: the participants its coordinator named, how many joined, voted, voted commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    participants: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    joined: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    votes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit_votes: Option<usize>,
}

/// A priority queue's items of one priority.
#[derive(Debug, Serialize)]
struct Priority {
    priority: i32,
    items: usize,
}

#[derive(Debug, Serialize)]
struct Row {
    name: String,
    path: String,
    sequence: Option<i64>,
    kind: &'static str,
    role: &'static str,
    fencing_token: i64,
    /// As `0x…`, the way ZooKeeper's tools show it.
    session_id: String,
    /// Milliseconds since the Unix epoch, by the server's clock.
    created_ms: u128,
    /// UTF-8, lossily; `null` when the node's ACL keeps it from this session.
    data: Option<String>,
}

impl<'a> Report<'a> {
    fn new(path: &'a str, found: Option<&'a Inspection>, held: bool) -> Report<'a> {
        let Some(found) = found else {
            return Report {
                path,
                exists: false,
                recipe: None,
                held,
                holders: Vec::new(),
                waiters: Vec::new(),
                counts: Counts::default(),
                ready: None,
                value: None,
                version: None,
                priorities: None,
                outcome: None,
                warnings: &[],
            };
        };
        let (holders, waiters): (Vec<&Participant>, Vec<&Participant>) = found
            .participants
            .iter()
            .partition(|p| matches!(p.role, Role::Holder | Role::Entered | Role::Member | Role::Voted));
        let mut counts = Counts {
            holders: holders.len(),
            waiters: waiters.len(),
            ..Counts::default()
        };
        let mut ready = None;
        let (mut value, mut version, mut priorities) = (None, None, None);
        let mut outcome = None;
        let recipe = match found.recipe {
            Recipe::Lock => "lock",
            Recipe::Election => "election",
            Recipe::Semaphore { acquirers, leases } => {
                counts.acquirers = Some(acquirers);
                counts.leases = leases;
                "semaphore"
            }
            Recipe::Queue { items, claimed } => {
                counts.items = Some(items);
                counts.claimed = Some(claimed);
                "queue"
            }
            Recipe::PriorityQueue { items, claimed } => {
                counts.items = Some(items);
                counts.claimed = Some(claimed);
                priorities = Some(
                    found
                        .items_by_priority
                        .iter()
                        .map(|&(priority, items)| Priority { priority, items })
                        .collect(),
                );
                "priority_queue"
            }
            Recipe::AtomicLong {
                value: now,
                version: at,
            } => {
                (value, version) = (Some(now), Some(at));
                "atomic_long"
            }
            Recipe::SharedCount {
                value: now,
                version: at,
            } => {
                (value, version) = (Some(i64::from(now)), Some(at));
                "shared_count"
            }
            Recipe::DoubleBarrier { ready: open } => {
                ready = Some(open);
                "double_barrier"
            }
            Recipe::Group => "group",
            Recipe::Service => "service",
            Recipe::Transaction {
                participants,
                joined,
                votes,
                commit_votes,
                outcome: decided,
            } => {
                counts.participants = Some(participants);
                counts.joined = Some(joined);
                counts.votes = Some(votes);
                counts.commit_votes = Some(commit_votes);
                outcome = Some(match decided {
                    Some(zklock::Decision::Commit) => "commit",
                    Some(zklock::Decision::Abort) => "abort",
                    None => "undecided",
                });
                "transaction"
            }
            Recipe::Empty => "empty",
            Recipe::Unrecognised { children } => {
                counts.children = Some(children);
                "unrecognised"
            }
            _ => "other",
        };
        Report {
            path,
            exists: true,
            recipe: Some(recipe),
            held,
            holders: holders.into_iter().map(Row::new).collect(),
            waiters: waiters.into_iter().map(Row::new).collect(),
            counts,
            ready,
            value,
            version,
            priorities,
            outcome,
            warnings: &found.warnings,
        }
    }
}

impl Row {
    fn new(p: &Participant) -> Row {
        Row {
            name: p.name.clone(),
            path: p.path.clone(),
            sequence: p.sequence,
            kind: kind(p.kind),
            role: label(p),
            fencing_token: p.fencing_token,
            session_id: format!("0x{:x}", p.session_id),
            created_ms: p
                .created
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis(),
            data: p
                .data_readable
                .then(|| String::from_utf8_lossy(&p.data).into_owned()),
        }
    }
}
