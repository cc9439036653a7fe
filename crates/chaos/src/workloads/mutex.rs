//! The `mutex` workload: take the [`zklock::Mutex`] (queueing behind kazoo's nodes too with `--kazoo-contenders`),
//! read-modify-write the register's counter under it, fenced with its token, release.

use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;

#[derive(Default)]
pub struct Mutex;

impl Workload for Mutex {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let session = shared::recipe_session(cx, zk);
        let mutex =
            zklock::Mutex::new(session, &cx.args.path)?.with_kazoo_contenders(cx.args.kazoo_contenders);
        cx.pace();
        shared::hold(cx, zk, mutex.lock_timeout(cx.timeout * 3), Kind::Exclusive, 1).await
    }
}
