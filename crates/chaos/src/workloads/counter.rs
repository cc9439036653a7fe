//! The `counter` workload: contenders increment one [`zklock::AtomicLong`]; each increment is recorded before it is
//! sent (`add`) and when its outcome is known (`added`, with the value it made) or not (`unsure`: it failed or timed
//! out, and may or may not have happened). `--no-fencing` (`args.naive`), the negative control: read the value, then
//! set it plus one, whatever happened in between.

use zookeeper_client::Client;

use super::shared::record;
use super::{Contender, Turn, Workload};
use crate::history::Action;

#[derive(Default)]
pub struct Counter;

impl Workload for Counter {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let work = cx.pace();
        let id = cx.next_id();
        let counted = increment(cx, zk, id).await;
        tokio::time::sleep(work / 2).await; // a pace, so that contention is not all there is
        Ok(counted?.into())
    }
}

async fn increment(cx: &mut Contender<'_>, zk: &Client, id: i64) -> zklock::Result<bool> {
    let counter = zklock::AtomicLong::new(zk, &cx.args.path)?;
    let (naive, timeout) = (cx.args.naive, cx.timeout);
    let register = cx.register();
    record(register, Action::Add, id, 0).await;
    let increment = async {
        if naive {
            let value = counter.get().await?;
            counter.set(value + 1).await
        } else {
            counter.increment().await
        }
    };
    match tokio::time::timeout(timeout * 3, increment).await {
        Ok(Ok(changed)) => {
            record(register, Action::Added, id, changed.post).await;
            Ok(true)
        }
        Ok(Err(err)) => {
            record(register, Action::Unsure, id, 0).await;
            Err(err)
        }
        Err(_) => {
            record(register, Action::Unsure, id, 0).await;
            Ok(false)
        }
    }
}
