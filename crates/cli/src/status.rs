//! `zklock status PATH`: who holds a recipe directory, and who waits, in order — as the library's
//! [`zklock::inspect`] reads it (this file knows no node layouts).

use std::time::SystemTime;

use anyhow::{Context, Result};
use zklock::{Inspection, NodeKind, Participant, Recipe, RetryPolicy, Role, Session};
use zookeeper_client::Client;

use crate::cli::StatusArgs;
use crate::zk as conn;

pub async fn status(args: StatusArgs) -> Result<i32> {
    let client = conn::connect_args(&args.connect).await?;
    let result = show(&client, &args.path).await;
    conn::close(client).await;
    result
}

async fn show(client: &Client, path: &str) -> Result<i32> {
    // One look: a connection loss is reported, not retried.
    let session = Session::new(client).with_retry(RetryPolicy {
        max_attempts: Some(1),
        ..RetryPolicy::default()
    });
    let Some(Inspection {
        recipe, participants, ..
    }) = zklock::inspect(&session, path)
        .await
        .with_context(|| format!("looking at {path}"))?
    else {
        println!("{path}: does not exist (a free lock, an unset barrier, an empty queue)");
        return Ok(0);
    };
    let holders = participants.iter().filter(|p| p.role == Role::Holder).count();
    match recipe {
        Recipe::Semaphore { acquirers } => {
            println!("{path}: semaphore with {holders} lease(s) held, {acquirers} acquirer(s) queued");
            print_rows(&participants);
        }
        Recipe::Queue { items, claimed } => {
            println!("{path}: queue with {items} item(s), {claimed} claimed by a consumer");
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
    Ok(0)
}

fn print_rows(rows: &[Participant]) {
    let now = SystemTime::now();
    for (i, row) in rows.iter().enumerate() {
        let role = if row.role == Role::Holder {
            "holder "
        } else {
            "waiting"
        };
        let age = now.duration_since(row.created).unwrap_or_default();
        println!(
            "  {role} {:>3}. {}  [{}]  session 0x{:x}  queued {:.1}s ago  {}",
            i + 1,
            row.name,
            kind(row.kind),
            row.session_id,
            age.as_secs_f64(),
            String::from_utf8_lossy(&row.data)
        );
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
        _ => "other",
    }
}
