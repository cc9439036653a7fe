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
            println!("{path}: free (the directory does not exist)");
            return Ok(0);
        }
        Err(err) => return Err(err).with_context(|| format!("listing {path}")),
    };
    let queue = node::sorted_contenders(children, |_| true);
    // Send every read at once; ZooKeeper answers them in order on the one session.
    let reads: Vec<_> = queue
        .iter()
        .map(|c| client.get_data(&format!("{path}/{}", c.name)))
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
                age_secs: (now_ms - stat.ctime).max(0) as f64 / 1000.0,
                data: String::from_utf8_lossy(&data).into_owned(),
            }),
            Err(zk::Error::NoNode) => {} // released while we looked
            Err(err) => return Err(err).context("reading a contender"),
        }
    }
    if rows.is_empty() {
        println!("{path}: free (no contenders)");
        return Ok(0);
    }
    let holders = holders(&rows);
    println!("{path}: held by {holders} of {} contender(s)", rows.len());
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
    Ok(0)
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
