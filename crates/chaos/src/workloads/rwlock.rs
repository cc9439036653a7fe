//! The `rwlock` workload: writers (two in five turns) increment the register's counter under the
//! [`zklock::RwLock`]'s write lock, fenced with its token; readers enter and leave together under the read lock.

use rand::Rng;
use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;

#[derive(Default)]
pub struct RwLock;

impl Workload for RwLock {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let lock = zklock::RwLock::new(shared::recipe_session(cx, zk), &cx.args.path)?;
        let timeout = cx.timeout * 3;
        cx.pace();
        if cx.rng.gen_bool(0.4) {
            shared::hold(cx, zk, lock.write_timeout(timeout), Kind::Exclusive, 1).await
        } else {
            shared::hold(cx, zk, lock.read_timeout(timeout), Kind::Shared, 1).await
        }
    }
}
