//! The campaign's run: the contenders in their slots and the nemesis drawing faults on its seeded schedule until
//! the deadline (a progress line every 10 s); then what each slot did, the faults that happened, and when the
//! servers served again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::task::{JoinHandle, JoinSet};

use crate::args::CampaignArgs;
use crate::clock::now_ns;
use crate::contenders::{Contenders, SlotReport};
use crate::nemesis::{self, Record, Targets};
use crate::servers::ServerKind;
use crate::{aftermath, Recipe};

use super::launch::{connect_string, launch};
use super::setup::Setup;

/// The campaign's times (`CLOCK_MONOTONIC` ns).
#[derive(Debug, Clone, Copy)]
pub(super) struct Times {
    /// When the contenders started.
    pub start_ns: u64,
    /// When the contenders stop (the end of `--duration`).
    pub until_ns: u64,
    /// When a contender's process still running is killed, and counted overdue.
    pub hard_ns: u64,
    /// When the nemesis stops starting faults: the quiet end is kept free of them, to see recovery.
    faults_until_ns: u64,
}

impl Times {
    /// From now, for `--duration`.
    fn from_now(args: &CampaignArgs, setup: &Setup) -> Times {
        let start_ns = now_ns();
        let until_ns = start_ns + args.duration * 1_000_000_000;
        Times {
            start_ns,
            until_ns,
            hard_ns: until_ns + (setup.session * 3 + Duration::from_secs(20)).as_nanos() as u64,
            faults_until_ns: until_ns - setup.quiet.as_nanos() as u64,
        }
    }
}

/// What the run left.
pub(super) struct Ran {
    pub times: Times,
    /// The faults that happened, every one healed.
    pub records: Vec<Record>,
    /// What each slot did.
    pub reports: BTreeMap<usize, SlotReport>,
    /// From when the servers served again after the faults (`None`: not before the end).
    pub serving_ns: Option<u64>,
    /// The contenders' nodes a second before they stopped (see [`aftermath::nodes_now`]), or why they could not be
    /// read.
    pub nodes_before_end: String,
}

/// Runs the contenders and the nemesis until both are done.
pub(super) async fn run(args: &CampaignArgs, setup: &Setup) -> Result<Ran> {
    let times = Times::from_now(args, setup);
    let contenders = Arc::new(Contenders::new(args.clients));
    let mut slots = start_slots(args, setup, &contenders, times);
    let targets = Arc::new(Targets {
        servers: setup.servers.clone(),
        proxies: setup.proxies.clone(),
        contenders: contenders.clone(),
        register: setup.register.clone(),
        session_timeout: setup.session,
        net: setup.net.clone(),
        busy: std::sync::Mutex::new(Vec::new()),
    });
    let nemesis = tokio::spawn(nemesis::run(
        setup.faults.clone(),
        setup.seed,
        times.faults_until_ns,
        targets,
    ));
    let progress = progress(args, setup, times.start_ns);
    let snapshot = tokio::spawn(nodes_before_end(
        setup.direct.clone(),
        setup.path.clone(),
        times.until_ns,
    ));
    let records = nemesis.await.context("the nemesis task failed")?;
    // On real ZooKeeper, liveness is judged from when the servers serve again, not from the last heal: zklock
    // cannot acquire while ZooKeeper has no quorum (measured here, and said when it took long; see
    // `aftermath::serving_again`). The embedded server's own recovery is ours to judge: from the heal.
    let serving_ns = if records.is_empty() || args.server == ServerKind::Embedded {
        Some(times.start_ns)
    } else {
        aftermath::serving_again(&setup.members, times.until_ns).await
    };
    let mut reports: BTreeMap<usize, SlotReport> = BTreeMap::new();
    while let Some(done) = slots.join_next().await {
        let (slot, report) = done.context("a contender slot failed")?;
        reports.insert(slot, report);
    }
    progress.abort();
    let nodes_before_end = snapshot
        .await
        .unwrap_or_else(|e| format!("the snapshot failed: {e}"));
    Ok(Ran {
        times,
        records,
        reports,
        serving_ns,
        nodes_before_end,
    })
}

/// The contenders' nodes a second before they stop: what a stalled queue waits behind, and whose session owns it.
async fn nodes_before_end(direct: String, path: String, until_ns: u64) -> String {
    let at = until_ns.saturating_sub(1_000_000_000).saturating_sub(now_ns());
    tokio::time::sleep(Duration::from_nanos(at)).await;
    match tokio::time::timeout(Duration::from_secs(3), aftermath::nodes_now(&direct, &path)).await {
        Ok(Ok(lines)) if lines.is_empty() => "(none)\n".to_owned(),
        Ok(Ok(lines)) => lines,
        Ok(Err(err)) => format!("(not read: {err})\n"),
        Err(_) => "(not read within 3 s)\n".to_owned(),
    }
}

/// Starts every slot: each runs its contender's processes one after the other until the deadline.
fn start_slots(
    args: &CampaignArgs,
    setup: &Setup,
    contenders: &Arc<Contenders>,
    times: Times,
) -> JoinSet<(usize, SlotReport)> {
    let mut slots = JoinSet::new();
    for (slot, &side) in setup.sides.iter().enumerate() {
        let connect = connect_string(setup, slot);
        let launch = launch(args, setup, slot, side, &connect, times.until_ns);
        let contenders = contenders.clone();
        let Times {
            until_ns, hard_ns, ..
        } = times;
        slots.spawn(async move { (slot, contenders.run_slot(slot, launch, until_ns, hard_ns).await) });
    }
    slots
}

/// Says every 10 s how long the campaign has run and how many operations it has seen so far.
fn progress(args: &CampaignArgs, setup: &Setup, start_ns: u64) -> JoinHandle<()> {
    let (register, recipe, dir) = (setup.register.clone(), args.recipe, setup.dir.clone());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(10)).await;
            eprintln!(
                "zklock-chaos: {:.0} s, {} ops so far",
                (now_ns() - start_ns) as f64 / 1e9,
                match recipe {
                    Recipe::Register => crate::workloads::kv::answered(&dir),
                    Recipe::Cache => crate::workloads::cache::answered(&dir),
                    _ => register.len(),
                }
            );
        }
    })
}
