//! The `multi-lock` workload: both locks of a [`zklock::MultiLock`] (`<path>/a`, `<path>/b`), named in a random
//! order (the library must acquire them in its global order, or two contenders deadlock and liveness fails), one
//! critical section fenced with the token of the first lock in that order — every holder of the set holds it —
//! then release.

use std::time::Duration;

use rand::Rng;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;

#[derive(Default)]
pub struct MultiLock;

impl Workload for MultiLock {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        cx.pace();
        let path = &cx.args.path;
        let (a, b) = (format!("{path}/a"), format!("{path}/b"));
        let (first, second) = if cx.rng.gen_bool(0.5) { (a, b) } else { (b, a) };
        let multi = zklock::MultiLock::new([
            zklock::Part::Mutex(zklock::Mutex::new(zk, &first)?),
            zklock::Part::Mutex(zklock::Mutex::new(zk, &second)?),
        ])?;
        let Some(held) = shared::in_time(multi.lock_timeout(cx.timeout * 3).await)? else {
            return Ok(Turn::Idle);
        };
        let work = Duration::from_millis(cx.rng.gen_range(20..120));
        if !held.is_lost() {
            let fenced = shared::section(cx.register(), &held.guards()[0], Kind::Exclusive, work);
            if let Err(err) = fenced.await {
                shared::register_failed(&err);
            }
        }
        shared::release(cx, held.release()).await;
        Ok(Turn::Done)
    }
}
