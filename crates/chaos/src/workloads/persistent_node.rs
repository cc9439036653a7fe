//! The `persistent-node` workload: every contender keeps a [`zklock::PersistentNode`] (ephemeral, on a reconnecting
//! session — a registration) at `<path>/owner-<slot>`, and changes its data every turn, recording each acknowledged
//! `set_data` (`put`, the data's id as token). When its time is up — the faults are over by then — it reads its node
//! (after `sync`) until it holds its latest data, at most three session timeouts, and records what it found (`seen`),
//! then closes it. The checker: each slot's last process found its node with its latest data; the campaign's
//! cleanliness check: no node is left once the owners ended.
//!
//! Its negative control (`--naive`, from `--no-fencing`) creates its node once and never again, as a plain
//! ephemeral node: after its session expired it is gone for good, which the checker must catch.

use std::collections::BTreeMap;

use zookeeper_client::{Client, CreateMode};

use super::{shared, Contender, Turn, Workload};
use crate::checker::Violation;
use crate::history::{Action, Kind, Op};

#[derive(Default)]
pub struct PersistentNode {
    /// The reconnecting session the node is kept on.
    session: Option<zklock::Session>,
    node: Option<zklock::PersistentNode>,
    /// The id of the data last acknowledged.
    latest: Option<i64>,
}

fn path_of(cx: &Contender<'_>) -> String {
    format!("{}/owner-{}", cx.args.path, cx.args.client)
}

impl Workload for PersistentNode {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let work = cx.pace();
        let id = cx.next_id();
        let data = id.to_string();
        if cx.args.naive {
            // Made once, written in place: never made again.
            let path = path_of(cx);
            let written = if self.latest.is_none() {
                let options = CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all());
                zk.mkdir(
                    &cx.args.path,
                    &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
                )
                .await
                .ok();
                zk.create(&path, data.as_bytes(), &options).await.map(drop)
            } else {
                zk.set_data(&path, data.as_bytes(), None).await.map(drop)
            };
            written.map_err(|e| zklock::Error::zk("write", &path, e))?;
        } else {
            if self.session.is_none() {
                let session = shared::reconnecting(cx.args).await.map_err(|err| {
                    eprintln!("worker {}: {err:#}", cx.args.client);
                    zklock::Error::Closed
                })?;
                self.session = Some(session);
            }
            match &self.node {
                Some(node) => node.set_data(data.as_bytes()).await?,
                None => {
                    let session = self.session.clone().expect("made above");
                    let node = zklock::PersistentNode::start(
                        session,
                        &path_of(cx),
                        zklock::NodeMode::Ephemeral,
                        data.as_bytes(),
                    )?;
                    self.node = Some(node);
                }
            }
        }
        self.latest = Some(id);
        shared::record(cx.register(), Action::Put, id, 0).await;
        tokio::time::sleep(work).await;
        Ok(Turn::Done)
    }

    async fn finish(&mut self, cx: &mut Contender<'_>) {
        let Some(latest) = self.latest else { return };
        let path = path_of(cx);
        let reader = match &self.session {
            Some(session) => session.client().clone(),
            None => match shared::reconnecting(cx.args).await {
                Ok(session) => session.client().clone(),
                Err(_) => return,
            },
        };
        let bound = cx.timeout * 3;
        // Read after `sync` until it holds our latest data, woken by the node's watch (made, changed, deleted).
        let found = tokio::time::timeout(bound, async {
            loop {
                let _ = reader.sync(&path).await;
                let Ok((_, watcher)) = reader.check_and_watch_stat(&path).await else {
                    // The connection is being made again: a pause before the next try.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                };
                let data = reader.get_data(&path).await.ok().map(|(data, _)| data);
                let id = data
                    .as_deref()
                    .and_then(|d| std::str::from_utf8(d).ok()?.parse::<i64>().ok());
                if id == Some(latest) {
                    return id;
                }
                watcher.changed().await;
            }
        })
        .await
        .ok()
        .flatten();
        eprintln!(
            "worker {}: {path}: latest data {latest:#x}, found: {found:x?}",
            cx.args.client
        );
        shared::record(cx.register(), Action::Seen, latest, found.unwrap_or(-1)).await;
        if let Some(node) = self.node.take() {
            if let Err(err) = node.close().await {
                eprintln!("worker {}: closing the node: {err}", cx.args.client);
            }
        }
        if let Some(session) = self.session.take() {
            shared::close_reconnecting(session).await;
        }
    }
}

/// Each slot's last process found its node with its latest data (`seen` records a value equal to its token).
pub fn check(ops: &[Op]) -> Vec<Violation> {
    let mut last: BTreeMap<u32, &Op> = BTreeMap::new();
    for op in ops
        .iter()
        .filter(|op| op.action == Action::Seen && op.kind == Kind::Shared)
    {
        last.insert(op.client, op);
    }
    last.values()
        .filter(|seen| seen.value != seen.token)
        .map(|seen| {
            format!(
                "persistent node: owner {}'s node did not hold its latest data (id {:#x}) after the faults healed \
                 (found {})",
                seen.client,
                seen.token,
                if seen.value == -1 { "no node, or other data".to_owned() } else { format!("{:#x}", seen.value) }
            )
        })
        .collect()
}
