//! The `queue` workload: every turn either puts an item (its id unique across the campaign) on the
//! [`zklock::Queue`] or takes one with `take_safe`, "processes" it and completes it, recording each step at the
//! register: every acknowledged item taken, none completed twice.

use std::time::Duration;

use anyhow::Result;
use rand::Rng;
use zookeeper_client::Client;

use super::shared::{self, record};
use super::{Contender, Turn, Workload};
use crate::history::Action;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct Queue {
    register: Connection,
    items: u64,
}

impl Workload for Queue {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(Queue { register, items: 0 })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        let work = Duration::from_millis(cx.rng.gen_range(10..60));
        self.items += 1;
        let id = shared::unique_id(cx.args, self.items);
        let outcome = if cx.rng.gen_bool(0.5) {
            produce(zk, &cx.args.path, &mut self.register, id).await
        } else {
            consume(zk, &cx.args.path, &mut self.register, cx.timeout, work).await
        };
        Ok(outcome.into())
    }
}

/// Puts item `id`; records it at the register once acknowledged.
async fn produce(zk: &Client, path: &str, register: &mut Connection, id: i64) -> zklock::Result<bool> {
    zklock::Queue::new(zk, path)?
        .put(id.to_string().as_bytes())
        .await?;
    record(register, Action::Put, id, 0).await;
    Ok(true)
}

/// Takes one item with `take_safe`, records it, "processes" it for `work`, completes it and records that.
pub async fn consume(
    zk: &Client,
    path: &str,
    register: &mut Connection,
    timeout: Duration,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::Queue::new(zk, path)?;
    let claimed = match tokio::time::timeout(timeout, queue.take_safe()).await {
        Ok(claimed) => claimed?,
        Err(_) => return Ok(false),
    };
    let id: i64 = std::str::from_utf8(claimed.data())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    record(register, Action::Take, id, 0).await;
    tokio::time::sleep(work).await;
    claimed.complete().await?;
    record(register, Action::Done, id, 0).await;
    Ok(true)
}
