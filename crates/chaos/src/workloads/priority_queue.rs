//! The `priority-queue` workload: a third of the turns put two items of random priorities (0–3) on the
//! [`zklock::PriorityQueue`], the others look once for an item with `try_take_safe`; so items of several priorities
//! wait together, and the order in which they are taken is worth judging.

use std::time::Duration;

use anyhow::Result;
use rand::Rng;
use zookeeper_client::Client;

use super::shared::{self, record};
use super::{Contender, Turn, Workload};
use crate::history::Action;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct PriorityQueue {
    register: Connection,
    items: u64,
}

impl Workload for PriorityQueue {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(PriorityQueue { register, items: 0 })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        let work = Duration::from_millis(cx.rng.gen_range(10..60));
        if !cx.rng.gen_bool(1.0 / 3.0) {
            return Ok(consume_priority(zk, &cx.args.path, &mut self.register, work)
                .await
                .into());
        }
        for _ in 0..2 {
            self.items += 1;
            let (id, priority) = (shared::unique_id(cx.args, self.items), cx.rng.gen_range(0..4));
            if let Err(err) = produce(zk, &cx.args.path, &mut self.register, id, priority).await {
                return Ok(Turn::Failed(err));
            }
        }
        Ok(Turn::Done)
    }
}

/// Puts item `id` with `priority`; records it (with its priority) once acknowledged.
async fn produce(
    zk: &Client,
    path: &str,
    register: &mut Connection,
    id: i64,
    priority: i32,
) -> zklock::Result<()> {
    zklock::PriorityQueue::new(zk, path)?
        .put(format!("{id} {priority}").as_bytes(), priority)
        .await?;
    record(register, Action::Put, id, i64::from(priority)).await;
    Ok(())
}

/// Looks once for an item with `try_take_safe` (no cancellation: a claim never outlives the look's record), records
/// the look (`seek`) and its end — the item taken (`take`, with its priority) or `miss` — then "processes" it for
/// `work`, completes it and records that (`done`). Nothing free: waits `work` before the next look.
pub async fn consume_priority(
    zk: &Client,
    path: &str,
    register: &mut Connection,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::PriorityQueue::new(zk, path)?;
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
