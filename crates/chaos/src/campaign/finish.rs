//! The end of a campaign: the recovery figures, its files and its summary, the ZooKeeper members' logs kept beside
//! them when a violation was found (and the temporary directory kept), everything stopped.

use std::path::Path;

use anyhow::{bail, Result};

use crate::args::CampaignArgs;
use crate::report;
use crate::servers::{lock, Servers};
use crate::Recipe;

use super::recovery::recovery_times;
use super::schedule::Ran;
use super::setup::Setup;
use super::verdict::Judged;

/// Writes the campaign's files and summary, stops everything; the number of violations.
pub(super) async fn finish(args: &CampaignArgs, setup: Setup, ran: Ran, judged: Judged) -> Result<usize> {
    let Judged {
        ops,
        intervals,
        violations,
        unjudged,
    } = judged;
    let (recoveries, isolated) = recovery_times(&ops, &ran.records);

    report::write_files(&setup.dir, &ops, &ran.records, &intervals, &violations)?;
    std::fs::write(setup.dir.join("nodes-before-the-end.txt"), &ran.nodes_before_end)?;
    let availability = super::availability::count(&setup.dir, args.clients, args.recipe == Recipe::Run);
    report::report(
        args,
        setup.seed,
        &ops,
        &ran.records,
        &ran.reports,
        &recoveries,
        &isolated,
        &violations,
        &intervals,
        &availability.fields(),
    );
    if !violations.is_empty() {
        keep_server_logs(&setup.servers, &setup.dir).await;
    }
    setup.close((!violations.is_empty() || unjudged.is_some()) && args.out.is_none());
    if let Some(why) = unjudged {
        bail!("the linearizability checker could not decide: {why}");
    }
    Ok(violations.len())
}

/// Copies the end of each ZooKeeper member's own log (elections, sessions expired, connections refused) beside the
/// campaign's files, as `zookeeper-<member>.log`: the members' directories go with the servers.
async fn keep_server_logs(servers: &tokio::sync::Mutex<Servers>, dir: &Path) {
    let Servers::ZooKeeper(zk) = &*servers.lock().await else {
        return;
    };
    let zk = lock(zk);
    for member in 0..zk.members() {
        let file = dir.join(format!("zookeeper-{member}.log"));
        if let Err(err) = std::fs::write(&file, zk.log_tail(member, SERVER_LOG_LINES)) {
            eprintln!("zklock-chaos: writing {}: {err}", file.display());
        }
    }
}

/// Lines of each member's log kept with a campaign that found a violation (about a minute of a busy member).
const SERVER_LOG_LINES: usize = 3000;
