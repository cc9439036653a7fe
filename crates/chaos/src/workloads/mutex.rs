//! The `mutex` workload: take the [`zklock::Mutex`] (queueing behind kazoo's nodes too with `--kazoo-contenders`),
//! read-modify-write the register's counter under it, fenced with its token, release.

use anyhow::Result;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct Mutex {
    register: Connection,
}

impl Mutex {
    async fn round(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<bool> {
        let mutex = zklock::Mutex::new(zk, &cx.args.path)?.with_kazoo_contenders(cx.args.kazoo_contenders);
        let acquiring = mutex.lock_timeout(cx.timeout * 3);
        shared::hold(cx, &mut self.register, acquiring, Kind::Exclusive, 1).await
    }
}

impl Workload for Mutex {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(Mutex { register })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        Ok(self.round(cx, zk).await.into())
    }
}
