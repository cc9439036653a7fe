//! The `priority-queue` workload: a third of the turns put two items of random priorities (0–3) on the
//! [`zklock::PriorityQueue`], the others look once for an item with `try_take_safe`; so items of several priorities
//! wait together, and the order in which they are taken is worth judging.

use std::time::Duration;

use rand::Rng;
use zookeeper_client::Client;

use super::shared::{self, record};
use super::{Contender, Turn, Workload};
use crate::history::Action;
use crate::register::Connection;

#[derive(Default)]
pub struct PriorityQueue;

impl Workload for PriorityQueue {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let work = cx.pace();
        let path = &cx.args.path;
        if !cx.rng.gen_bool(1.0 / 3.0) {
            let session = shared::recipe_session(cx, zk);
            return Ok(consume_priority(session, &cx.args.path, cx.register(), work)
                .await?
                .into());
        }
        let queue = zklock::PriorityQueue::new(shared::recipe_session(cx, zk), path)?;
        for _ in 0..2 {
            let (id, priority) = (cx.next_id(), cx.rng.gen_range(0..4));
            queue.put(format!("{id} {priority}").as_bytes(), priority).await?;
            // Once acknowledged, with its priority.
            record(cx.register(), Action::Put, id, i64::from(priority)).await;
        }
        Ok(Turn::Done)
    }
}

/// Looks once for an item with `try_take_safe` (no cancellation: a claim never outlives the look's record), records
/// the look (`seek`) and its end — the item taken (`take`, with its priority) or `miss` — then "processes" it for
/// `work`, completes it and records that (`done`). Nothing free: waits `work` before the next look.
pub async fn consume_priority(
    session: zklock::Session,
    path: &str,
    register: &mut Connection,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::PriorityQueue::new(session, path)?;
    record(register, Action::Seek, 0, 0).await;
    let claimed = match queue.try_take_safe().await {
        Ok(Some(claimed)) => claimed,
        Ok(None) => {
            record(register, Action::Miss, 0, 0).await;
            tokio::time::sleep(work).await;
            return Ok(false);
        }
        Err(err) => {
            record(register, Action::Miss, 0, 1).await;
            return Err(err);
        }
    };
    let (id, priority) = std::str::from_utf8(claimed.data())
        .ok()
        .and_then(|text| text.split_once(' '))
        .and_then(|(id, priority)| Some((id.parse().ok()?, priority.parse().ok()?)))
        .unwrap_or((-1, -1));
    record(register, Action::Take, id, priority).await;
    tokio::time::sleep(work).await;
    claimed.complete().await?;
    record(register, Action::Done, id, priority).await;
    Ok(true)
}
