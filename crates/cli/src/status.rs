//! `zklock status PATH`: who holds a lock directory, and who waits, in order.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use zklock::node::{self, Marker};
use zookeeper_client::{self as zk, Client};

use crate::cli::StatusArgs;
use crate::zk as conn;

/// One contender as shown.
struct Row {
    name: String,
    marker: Marker,
    session: i64,
    czxid: i64,
    age_secs: f64,
    data: String,
}

pub async fn status(args: StatusArgs) -> Result<i32> {
    let client = conn::connect_args(&args.connect).await?;
    let result = show(&client, &args.path).await;
    conn::close(client).await;
    result
}

async fn show(client: &Client, path: &str) -> Result<i32> {
    let children = match client.list_children(path).await {
        Ok(children) => children,
        Err(zk::Error::NoNode) => {
            println!("{path}: does not exist (a free lock, an unset barrier, an empty queue)");
            return Ok(0);
        }
        Err(err) => return Err(err).with_context(|| format!("listing {path}")),
    };
    let has = |name: &str| children.iter().any(|c| c == name);
    if has("leases") && has("locks") {
        return semaphore(client, path).await;
    }
    let items = children.iter().filter(|c| c.starts_with("qn-")).count();
    if items > 0 || has("claims") {
        let claims = if has("claims") {
            client
                .list_children(&format!("{path}/claims"))
                .await
                .unwrap_or_default()
        } else {
            vec![]
        };
        println!(
            "{path}: queue with {items} item(s), {} claimed by a consumer",
            claims.len()
        );
        return Ok(0);
    }
    let queue = node::sorted_contenders(children.clone(), |_| true);
    if queue.is_empty() {
        let participants = children.iter().filter(|c| uuid_like(c)).count();
        if participants > 0 || has("ready") {
            let state = if has("ready") {
                "entered (ready)"
            } else {
                "waiting for participants"
            };
            println!("{path}: double barrier {state}, {participants} participant(s) present");
        } else if children.is_empty() {
            println!("{path}: exists with no contenders (a set barrier, or an idle lock directory)");
        } else {
            println!(
                "{path}: {} child node(s), none of them a contender",
                children.len()
            );
        }
        return Ok(0);
    }
    let rows = read_rows(client, path, &queue).await?;
    if rows.is_empty() {
        println!("{path}: free (no contenders)");
        return Ok(0);
    }
    let holders = holders(&rows);
    let what = if rows.iter().any(|r| r.marker == Marker::Latch) {
        "led"
    } else {
        "held"
    };
    println!("{path}: {what} by {holders} of {} contender(s)", rows.len());
    print_rows(&rows, holders);
    Ok(0)
}

/// A Curator-style semaphore: `<path>/leases` holds the leases, `<path>/locks` queues the acquirers.
///
/// The acquirer at the head of `locks` creates its lease node *before* it knows whether there is room, and
/// keeps it while it waits: that node (owned by the head's session, created after the head's gate node) is
/// shown as waiting, not as a held lease.
async fn semaphore(client: &Client, path: &str) -> Result<i32> {
    let leases_dir = format!("{path}/leases");
    let leases = node::sorted_contenders(
        client.list_children(&leases_dir).await.unwrap_or_default(),
        |_| true,
    );
    let locks_dir = format!("{path}/locks");
    let gate = node::sorted_contenders(client.list_children(&locks_dir).await.unwrap_or_default(), |_| {
        true
    });
    let gate_head = read_rows(client, &locks_dir, &gate[..gate.len().min(1)]).await?;
    let (held, waiting): (Vec<Row>, Vec<Row>) = read_rows(client, &leases_dir, &leases)
        .await?
        .into_iter()
        .partition(|lease| {
            !gate_head
                .first()
                .is_some_and(|head| lease.session == head.session && lease.czxid > head.czxid)
        });
    println!(
        "{path}: semaphore with {} lease(s) held, {} acquirer(s) queued",
        held.len(),
        gate.len()
    );
    let holders = held.len();
    let rows: Vec<Row> = held.into_iter().chain(waiting).collect();
    print_rows(&rows, holders);
    Ok(0)
}

fn uuid_like(name: &str) -> bool {
    name.len() == 36 && name.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Reads every contender's data and stat at once; ZooKeeper answers them in order on the one session.
async fn read_rows(client: &Client, dir: &str, queue: &[node::Contender]) -> Result<Vec<Row>> {
    let reads: Vec<_> = queue
        .iter()
        .map(|c| client.get_data(&format!("{dir}/{}", c.name)))
        .collect();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default();
    let mut rows = Vec::new();
    for (contender, read) in queue.iter().zip(futures::future::join_all(reads).await) {
        match read {
            Ok((data, stat)) => rows.push(Row {
                name: contender.name.clone(),
                marker: contender.marker,
                session: stat.ephemeral_owner,
                czxid: stat.czxid,
                age_secs: (now_ms - stat.ctime).max(0) as f64 / 1000.0,
                data: String::from_utf8_lossy(&data).into_owned(),
            }),
            Err(zk::Error::NoNode) => {} // released while we looked
            Err(err) => return Err(err).context("reading a contender"),
        }
    }
    Ok(rows)
}

fn print_rows(rows: &[Row], holders: usize) {
    for (i, row) in rows.iter().enumerate() {
        let role = if i < holders { "holder " } else { "waiting" };
        println!(
            "  {role} {:>3}. {}  [{}]  session 0x{:x}  queued {:.1}s ago  {}",
            i + 1,
            row.name,
            kind(row.marker),
            row.session,
            row.age_secs,
            row.data
        );
    }
}

/// How many of the sorted contenders hold: readers before the first writer share; otherwise only the first.
fn holders(rows: &[Row]) -> usize {
    let is_reader = |m: Marker| matches!(m, Marker::Read | Marker::KazooRead);
    let leading_readers = rows.iter().take_while(|r| is_reader(r.marker)).count();
    leading_readers.max(1)
}

fn kind(marker: Marker) -> &'static str {
    match marker {
        Marker::Lock | Marker::KazooLock => "lock",
        Marker::Read | Marker::KazooRead => "read",
        Marker::Write => "write",
        Marker::Latch => "election",
        Marker::Lease => "lease",
    }
}
