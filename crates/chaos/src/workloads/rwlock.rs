//! The `rwlock` workload: writers (two in five turns) increment the register's counter under the
//! [`zklock::RwLock`]'s write lock, fenced with its token; readers enter and leave together under the read lock.

use anyhow::Result;
use rand::Rng;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;
use crate::register::Connection;
use crate::worker_args::WorkerArgs;

pub struct RwLock {
    register: Connection,
}

impl RwLock {
    async fn round(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<bool> {
        let lock = zklock::RwLock::new(zk, &cx.args.path)?;
        let timeout = cx.timeout * 3;
        if cx.rng.gen_bool(0.4) {
            shared::hold(
                cx,
                &mut self.register,
                lock.write_timeout(timeout),
                Kind::Exclusive,
                1,
            )
            .await
        } else {
            shared::hold(
                cx,
                &mut self.register,
                lock.read_timeout(timeout),
                Kind::Shared,
                1,
            )
            .await
        }
    }
}

impl Workload for RwLock {
    async fn open(args: &WorkerArgs) -> Result<Self> {
        let register = Connection::open(&args.register, args.client).await?;
        Ok(RwLock { register })
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> Result<Turn> {
        Ok(self.round(cx, zk).await.into())
    }
}
