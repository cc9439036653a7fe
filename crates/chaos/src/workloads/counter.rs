//! The `counter` workload: contenders increment one [`zklock::AtomicLong`]; each increment is recorded before it is
//! sent (`add`) and when its outcome is known (`added`, with the value it made) or not (`unsure`: it failed or timed
//! out, and may or may not have happened). `--no-fencing` (`args.naive`), the negative control: read the value, then
//! set it plus one, whatever happened in between.

use std::time::Duration;

use anyhow::Result;
use rand::Rng;
use zookeeper_client::Client;

use super::shared::{self, record};
use super::{Contender, Turn, Workload};
use crate::history::Action;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct Counter {
    register: Connection,
    increments: u64,
}

impl Workload for Counter {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(Counter {
            register,
            increments: 0,
        })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        let work = Duration::from_millis(cx.rng.gen_range(10..60));
        self.increments += 1;
        let id = shared::unique_id(cx.args, self.increments);
        let counted = self.increment(cx, zk, id).await;
        tokio::time::sleep(work / 2).await; // a pace, so that contention is not all there is
        Ok(counted.into())
    }
}

impl Counter {
    async fn increment(&mut self, cx: &Contender<'_>, zk: &Client, id: i64) -> zklock::Result<bool> {
        let counter = zklock::AtomicLong::new(zk, &cx.args.path)?;
        record(&mut self.register, Action::Add, id, 0).await;
        let increment = async {
            if cx.args.naive {
                let value = counter.get().await?;
                counter.set(value + 1).await
            } else {
                counter.increment().await
            }
        };
        match tokio::time::timeout(cx.timeout * 3, increment).await {
            Ok(Ok(changed)) => {
                record(&mut self.register, Action::Added, id, changed.post).await;
                Ok(true)
            }
            Ok(Err(err)) => {
                record(&mut self.register, Action::Unsure, id, 0).await;
                Err(err)
            }
            Err(_) => {
                record(&mut self.register, Action::Unsure, id, 0).await;
                Ok(false)
            }
        }
    }
}
