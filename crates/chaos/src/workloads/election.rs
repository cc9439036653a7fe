//! The `election` workload: win a [`zklock::LeaderElection`], and write the register's counter in 1–3 critical
//! sections of the term, each fenced with the leader's token; then resign.

use zookeeper_client::Client;

use super::{shared, Contender, Turn, Workload};
use crate::history::Kind;

#[derive(Default)]
pub struct Election;

impl Workload for Election {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let election = zklock::LeaderElection::new(shared::recipe_session(cx, zk), &cx.args.path)?;
        cx.pace();
        shared::hold(
            cx,
            zk,
            election.campaign_timeout(cx.timeout * 3),
            Kind::Exclusive,
            3,
        )
        .await
    }
}
