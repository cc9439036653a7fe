//! The `multi-lock` workload: both locks of a [`zklock::MultiLock`] (`<path>/a`, `<path>/b`), named in a random
//! order (the library must acquire them in its global order, or two contenders deadlock and liveness fails), one
//! critical section fenced with the token of the first lock in that order — every holder of the set holds it —
//! then release.

use std::time::Duration;

use anyhow::Result;
use rand::Rng;
use zklock::Error;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct MultiLock {
    register: Connection,
}

impl MultiLock {
    async fn round(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<bool> {
        let path = &cx.args.path;
        let (a, b) = (format!("{path}/a"), format!("{path}/b"));
        let (first, second) = if cx.rng.gen_bool(0.5) { (a, b) } else { (b, a) };
        let multi = zklock::MultiLock::new([
            zklock::Part::Mutex(zklock::Mutex::new(zk, &first)?),
            zklock::Part::Mutex(zklock::Mutex::new(zk, &second)?),
        ])?;
        let held = match multi.lock_timeout(cx.timeout * 3).await {
            Ok(held) => held,
            Err(Error::Timeout) => return Ok(false),
            Err(err) => return Err(err),
        };
        let work = Duration::from_millis(cx.rng.gen_range(20..120));
        if !held.is_lost() {
            let fenced = shared::section(&mut self.register, &held.guards()[0], Kind::Exclusive, work);
            if let Err(err) = fenced.await {
                shared::register_failed(&err);
            }
        }
        shared::release(cx, held.release()).await;
        Ok(true)
    }
}

impl Workload for MultiLock {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(MultiLock { register })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        Ok(self.round(cx, zk).await.into())
    }
}
