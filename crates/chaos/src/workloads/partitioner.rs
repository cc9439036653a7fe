//! The `partitioner` workload: every contender is a member of one [`zklock::SetPartitioner`] party dividing
//! [`ITEMS`] items. Holding a share, it does a read-modify-write of each of its items' own counter at the register
//! (resource `1 + the item's index`), fenced with that item's lock token, for a few rounds or until the share
//! changed, then gives the share back; one turn in five it also leaves the party, so that the set is divided again
//! and again under the faults. The checker judges each item on its own: no two owners of an item at once, tokens in
//! order, no lost update.
//!
//! Its negative control (`--naive`, from `--no-fencing`) takes the division of the party as ownership: it computes
//! its share from a listing of the party, as the partitioner does, but takes no item lock. Members whose views of
//! the party differ then own an item together, which the checker must catch.

use std::time::Duration;

use rand::Rng;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::{Action, Kind};
use crate::register::Answer;

/// The set the party divides.
pub const ITEMS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// The party must be still this long before a share is taken.
const SETTLE: Duration = Duration::from_millis(300);

#[derive(Default)]
pub struct Partitioner {
    /// Our membership, on the current session (made again on the next one).
    member: Option<zklock::SetPartitioner>,
    /// The naive control's membership.
    naive: Option<zklock::Membership>,
}

impl Workload for Partitioner {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let rounds = cx.rng.gen_range(1..4);
        let leave = cx.rng.gen_bool(0.2);
        if cx.args.naive {
            return self.naive_step(cx, zk, rounds, leave).await;
        }
        if self.member.is_none() {
            let member = zklock::SetPartitioner::new(shared::recipe_session(cx, zk), &cx.args.path, ITEMS)?
                .with_identifier(&format!("c{}-{}", cx.args.client, cx.args.launch))
                .with_settle(SETTLE);
            self.member = Some(member.join().await?);
        }
        let member = self.member.as_mut().expect("joined above");
        let Ok(share) = tokio::time::timeout(cx.timeout * 3, member.acquire()).await else {
            return Ok(Turn::Idle);
        };
        let share = share?;
        'rounds: for _ in 0..rounds {
            for (item, guard) in share.items() {
                let work = cx.pace();
                let fenced = shared::section_on(cx.register(), key(item), guard, Kind::Exclusive, work);
                match fenced.await {
                    Ok(true) => {}
                    Ok(false) => break 'rounds, // lost, or fenced out
                    Err(err) => shared::register_failed(&err),
                }
            }
            // Polled once (a zero timeout polls its future first): has the share changed?
            if tokio::time::timeout(Duration::ZERO, share.changed())
                .await
                .is_ok()
            {
                break;
            }
        }
        shared::release(cx, share.release()).await;
        if leave {
            if let Some(member) = self.member.take() {
                member.leave().await?;
            }
        }
        Ok(Turn::Done)
    }

    fn connected(&mut self) {
        self.member = None;
        self.naive = None;
    }
}

impl Partitioner {
    /// The negative control's turn: the division of a listing of the party, acted on without the items' locks.
    async fn naive_step(
        &mut self,
        cx: &mut Contender<'_>,
        zk: &Client,
        rounds: usize,
        leave: bool,
    ) -> zklock::Result<Turn> {
        let id = format!("c{}-{}", cx.args.client, cx.args.launch);
        let party = format!("{}/party", cx.args.path);
        if self.naive.is_none() {
            let group = zklock::Group::new(zk, &party)?.with_layout(zklock::GroupLayout::Shallow);
            self.naive = Some(group.with_data(id.as_bytes()).join().await?);
        }
        let mut ids: Vec<String> = (zk
            .list_children(&party)
            .await
            .map_err(|e| zklock::Error::zk("list", &party, e))?)
        .iter()
        .map(|name| {
            name.split_once('-')
                .map_or(name.as_str(), |(_, id)| id)
                .to_owned()
        })
        .collect();
        ids.sort();
        let Some(me) = ids.iter().position(|m| *m == id) else {
            return Ok(Turn::Idle);
        };
        // A token that grows with every turn, as a lock's would.
        let token = crate::clock::now_ns() as i64;
        for _ in 0..rounds {
            for item in ITEMS.iter().skip(me).step_by(ids.len()) {
                let work = cx.pace();
                let register = cx.register();
                let Ok(Answer::Ok(value)) = register
                    .op_on(key(item), Kind::Exclusive, token, Action::Read, 0)
                    .await
                else {
                    continue;
                };
                tokio::time::sleep(work).await;
                if let Err(err) = register
                    .op_on(key(item), Kind::Exclusive, token, Action::Write, value + 1)
                    .await
                {
                    shared::register_failed(&err);
                }
            }
        }
        if leave {
            if let Some(membership) = self.naive.take() {
                membership.leave().await?;
            }
        }
        Ok(Turn::Done)
    }
}

/// The register's resource of `item`.
fn key(item: &str) -> u32 {
    1 + ITEMS.iter().position(|i| *i == item).expect("one of ITEMS") as u32
}
