//! The `election` workload: win a [`zklock::LeaderElection`], and write the register's counter in 1–3 critical
//! sections of the term, each fenced with the leader's token; then resign.

use anyhow::Result;
use rand::Rng;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct Election {
    register: Connection,
}

impl Election {
    async fn round(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<bool> {
        let election = zklock::LeaderElection::new(zk, &cx.args.path)?;
        let acquiring = election.campaign_timeout(cx.timeout * 3);
        let sections = cx.rng.gen_range(1..=3);
        shared::hold(cx, &mut self.register, acquiring, Kind::Exclusive, sections).await
    }
}

impl Workload for Election {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(Election { register })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        Ok(self.round(cx, zk).await.into())
    }
}
