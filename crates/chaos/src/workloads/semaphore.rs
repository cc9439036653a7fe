//! The `semaphore` workload: hold one of the [`zklock::Semaphore`]'s `--leases` leases while inside the register's
//! shared section, whose checker counts the holders.

use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;

#[derive(Default)]
pub struct Semaphore;

impl Workload for Semaphore {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let semaphore =
            zklock::Semaphore::new(shared::recipe_session(cx, zk), &cx.args.path, cx.args.leases)?;
        cx.pace();
        shared::hold(cx, zk, semaphore.acquire_timeout(cx.timeout * 3), Kind::Shared, 1).await
    }
}
