//! The `semaphore` workload: hold one of the [`zklock::Semaphore`]'s `--leases` leases while inside the register's
//! shared section, whose checker counts the holders.

use anyhow::Result;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct Semaphore {
    register: Connection,
}

impl Semaphore {
    async fn round(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<bool> {
        let semaphore = zklock::Semaphore::new(zk, &cx.args.path, cx.args.leases)?;
        let acquiring = semaphore.acquire_timeout(cx.timeout * 3);
        shared::hold(cx, &mut self.register, acquiring, Kind::Shared, 1).await
    }
}

impl Workload for Semaphore {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(Semaphore { register })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        Ok(self.round(cx, zk).await.into())
    }
}
