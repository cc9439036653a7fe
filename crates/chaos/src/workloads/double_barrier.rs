//! The `double-barrier` workload: every contender is a participant of a [`zklock::DoubleBarrier`] of `--leases`
//! participants, one barrier path per round (`<path>/r-<round>`): arrive, enter, work, leave. A round that times
//! out is given up, and the participant moves to the newest round anybody has started.
//!
//! Recorded at the register (token: the round, value: the launch): `arrive`, then `pass` or `abandon`, then `left`.

use std::time::Duration;

use zklock::Error;
use zookeeper_client::Client;

use super::shared::record;
use super::{Contender, Turn, Workload};
use crate::history::Action;

#[derive(Default)]
pub struct DoubleBarrier {
    /// The round to join next; `None`: look for the newest.
    round: Option<i64>,
}

impl Workload for DoubleBarrier {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let work = cx.pace();
        let timeout = cx.timeout * 2;
        Ok(self.round(cx, zk, timeout, work).await?.into())
    }
}

impl DoubleBarrier {
    async fn round(
        &mut self,
        cx: &mut Contender<'_>,
        zk: &Client,
        timeout: Duration,
        work: Duration,
    ) -> zklock::Result<bool> {
        let current = match self.round {
            Some(r) => r,
            None => newest_round(zk, &cx.args.path).await?,
        };
        let args = cx.args;
        let launch = args.launch as i64;
        let register = cx.register();
        let barrier = zklock::DoubleBarrier::new(zk, &format!("{}/r-{current:08}", args.path), args.leases)?;
        record(register, Action::Arrive, current, launch).await;
        let participation = match barrier.enter_timeout(timeout).await {
            Ok(p) => p,
            Err(err) => {
                record(register, Action::Abandon, current, launch).await;
                self.round = None; // find the others again
                return if matches!(err, Error::Timeout) {
                    Ok(false)
                } else {
                    Err(err)
                };
            }
        };
        record(register, Action::Pass, current, launch).await;
        tokio::time::sleep(work).await;
        let left = participation.leave_timeout(timeout).await;
        record(register, Action::Left, current, launch).await;
        self.round = Some(current + 1);
        match left {
            Ok(()) | Err(Error::Timeout) => Ok(true),
            Err(err) => Err(err),
        }
    }
}

/// The newest round anybody has started (round directories `r-<n>` under the workload's path), so that a
/// participant that gave up or was restarted joins the others.
async fn newest_round(zk: &Client, path: &str) -> zklock::Result<i64> {
    match zk.list_children(path).await {
        Ok(children) => Ok(children
            .iter()
            .filter_map(|c| c.strip_prefix("r-").and_then(|n| n.parse().ok()))
            .max()
            .unwrap_or(0)),
        Err(zookeeper_client::Error::NoNode) => Ok(0),
        Err(err) => Err(err.into()),
    }
}
