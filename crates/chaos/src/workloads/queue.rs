//! The `queue` workload: every turn either puts an item (its id unique across the campaign) on the
//! [`zklock::Queue`] or takes one with `take_safe`, "processes" it and completes it, recording each step at the
//! register: every acknowledged item taken, none completed twice.

use std::time::Duration;

use rand::Rng;
use zookeeper_client::Client;

use super::shared::{self, record};
use super::{Contender, Turn, Workload};
use crate::history::Action;
use crate::register::Connection;

#[derive(Default)]
pub struct Queue;

impl Workload for Queue {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let work = cx.pace();
        let id = cx.next_id();
        let (path, timeout) = (&cx.args.path, cx.timeout);
        if cx.rng.gen_bool(0.5) {
            zklock::Queue::new(shared::recipe_session(cx, zk), path)?
                .put(id.to_string().as_bytes())
                .await?;
            record(cx.register(), Action::Put, id, 0).await; // once acknowledged
            Ok(Turn::Done)
        } else {
            let session = shared::recipe_session(cx, zk);
            Ok(consume(session, &cx.args.path, cx.register(), timeout, work)
                .await?
                .into())
        }
    }
}

/// Takes one item with `take_safe`, records it, "processes" it for `work`, completes it and records that.
pub async fn consume(
    session: zklock::Session,
    path: &str,
    register: &mut Connection,
    timeout: Duration,
    work: Duration,
) -> zklock::Result<bool> {
    let queue = zklock::Queue::new(session, path)?;
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
