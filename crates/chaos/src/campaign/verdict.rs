//! What the run left, judged: slots whose processes overran, what the faults themselves found broken, the
//! cleanliness checks (and what a queue or a counter leaves: drained, read), the workload's checks on the history,
//! liveness after the last fault, and the fence's refusals.

use std::time::Duration;

use anyhow::Result;

use crate::args::CampaignArgs;
use crate::checker::{self, Violation};
use crate::history::{Interval, Op};
use crate::linearizability::Verdict;
use crate::servers::ServerKind;
use crate::{aftermath, Recipe};

use super::schedule::Ran;
use super::setup::Setup;

/// The verdict on a run.
pub(super) struct Judged {
    /// The history judged: the register's record (for the `register` workload: its acknowledged operations).
    pub ops: Vec<Op>,
    /// The commands' intervals (the `run` workload).
    pub intervals: Vec<Interval>,
    /// Every broken guarantee found.
    pub violations: Vec<Violation>,
    /// Why the linearizability checker could not decide, when it could not.
    pub unjudged: Option<String>,
}

/// Judges what `ran` left.
pub(super) async fn judge(args: &CampaignArgs, setup: &Setup, ran: &Ran) -> Result<Judged> {
    let mut judged = Judged {
        ops: Vec::new(),
        intervals: Vec::new(),
        violations: overruns(ran),
        unjudged: None,
    };
    judged.violations.extend(aftermath_violations(args, setup).await);
    judged.ops = setup.register.ops();
    judged.check_history(args, setup).await?;
    if args.recipe == Recipe::Run {
        judged.intervals = aftermath::command_intervals(&setup.dir, &judged.ops)?;
        judged
            .violations
            .extend(checker::check_intervals(&judged.intervals));
    }
    judged.violations.extend(liveness(setup, ran, &judged.ops));
    if setup.exact_fence {
        // A fault's victim learns it lost its lock within a session timeout of the heal.
        let grace = (setup.session + Duration::from_secs(2)).as_nanos() as u64;
        let explained: Vec<(u64, u64)> = ran
            .records
            .iter()
            .map(|r| (r.start_ns, r.heal_ns + grace))
            .collect();
        judged
            .violations
            .extend(checker::check_refusals(&judged.ops, &explained));
    }
    Ok(judged)
}

/// Slots with processes still running past the deadline, and what the faults themselves showed broken.
fn overruns(ran: &Ran) -> Vec<Violation> {
    let mut violations: Vec<Violation> = Vec::new();
    for (slot, report) in &ran.reports {
        if report.overdue > 0 {
            violations.push(format!(
                "liveness: contender {slot} had {} process(es) still running {} s after the deadline (killed)",
                report.overdue,
                (ran.times.hard_ns - ran.times.until_ns) / 1_000_000_000
            ));
        }
    }
    violations.extend(ran.records.iter().filter_map(|r| r.violation.clone()));
    violations
}

/// Cleanliness (no contender node, no session left), and what a queue leaves drained and a counter's final value
/// read (both recorded in the register for the checks), and the cache workload's tree read after `sync` (in a file
/// of its own).
async fn aftermath_violations(args: &CampaignArgs, setup: &Setup) -> Vec<Violation> {
    let (direct, path, register) = (&setup.direct, &setup.path, &setup.register);
    let mut violations = Vec::new();
    // Cleanliness: every contender node goes with its session.
    let bound = setup.session + Duration::from_secs(7);
    if let Err(left) = aftermath::wait_clean(direct, path, bound).await {
        violations.push(format!("cleanliness: {left}"));
    }
    if args.recipe == Recipe::Queue {
        if let Err(err) = aftermath::drain(direct, path, register).await {
            violations.push(format!("queue: draining what is left failed: {err}"));
        }
    }
    if args.recipe == Recipe::PriorityQueue {
        if let Err(err) = aftermath::drain_priority(direct, path, register).await {
            violations.push(format!("priority queue: draining what is left failed: {err}"));
        }
    }
    if args.recipe == Recipe::Counter {
        if let Err(err) = aftermath::record_final_count(direct, path, register).await {
            violations.push(format!("counter: reading its final value failed: {err}"));
        }
    }
    if args.recipe == Recipe::Cache {
        if let Err(err) = crate::workloads::cache::record_server_tree(direct, path, &setup.dir).await {
            violations.push(format!("cache: reading the server's tree failed: {err:#}"));
        }
    }
    if let Err(left) = aftermath::wait_no_sessions(&setup.members, bound).await {
        violations.push(format!("cleanliness: {left}"));
    }
    violations
}

impl Judged {
    /// The workload's own checks on the history (for `register`: the linearizability verdict, printed, on its
    /// histories, whose acknowledged operations become the history judged).
    async fn check_history(&mut self, args: &CampaignArgs, setup: &Setup) -> Result<()> {
        let session_ns = setup.session.as_nanos() as u64;
        let ops = &self.ops;
        let found = match args.recipe {
            Recipe::Register => {
                let (report, acknowledged) = crate::workloads::kv::judge(&setup.dir).await?;
                println!("{report}");
                match report.verdict {
                    Verdict::Linearizable => {}
                    Verdict::NotLinearizable(why) => self.violations.push(format!("linearizability: {why}")),
                    Verdict::Unknown(why) => self.unjudged = Some(why),
                }
                self.ops = acknowledged;
                Vec::new()
            }
            Recipe::Cache => {
                let (figures, found, applied) = crate::workloads::cache::judge(&setup.dir)?;
                println!("{figures}");
                self.ops = applied;
                found
            }
            Recipe::Group => crate::workloads::group::check(ops, session_ns),
            Recipe::PersistentNode => crate::workloads::persistent_node::check(ops),
            Recipe::TwoPhaseCommit => crate::workloads::two_phase_commit::check(ops),
            Recipe::Queue => checker::check_queue(ops),
            Recipe::PriorityQueue => {
                let mut found = checker::check_queue(ops);
                // Judged on single servers only: an ensemble member may not have seen an acknowledged put yet.
                if args.server != ServerKind::Ensemble {
                    found.extend(checker::check_priority_order(ops, session_ns));
                }
                found
            }
            Recipe::Counter => checker::check_counter(ops),
            Recipe::DoubleBarrier => checker::check_barrier(ops, args.clients),
            _ => checker::check_register(ops, setup.rules),
        };
        self.violations.extend(found);
        Ok(())
    }
}

/// Liveness: a new critical section soon after the last fault healed and the servers served again (said, not
/// judged, when too little of the campaign was left for it).
fn liveness(setup: &Setup, ran: &Ran, ops: &[Op]) -> Option<Violation> {
    let (start_ns, until_ns) = (ran.times.start_ns, ran.times.until_ns);
    let serving_ns = ran.serving_ns;
    let last_heal_ns = ran.records.iter().map(|r| r.heal_ns).max().unwrap_or(start_ns);
    let healed_ns = serving_ns.unwrap_or(u64::MAX).max(last_heal_ns);
    if healed_ns > last_heal_ns + 1_000_000_000 {
        match serving_ns {
            Some(_) => eprintln!(
                "zklock-chaos: the servers served again {:.1} s after the last fault healed",
                (healed_ns - last_heal_ns) as f64 / 1e9
            ),
            None => eprintln!("zklock-chaos: the servers did not serve again before the end"),
        }
    }
    let recovery_bound = (setup.session + Duration::from_secs(5)).as_nanos() as u64;
    if healed_ns.saturating_add(recovery_bound) <= until_ns {
        // A stall shows what it waited behind: the contenders' nodes a second before the end, with their sessions.
        checker::check_recovery(ops, healed_ns, recovery_bound)
            .err()
            .map(|v| {
                format!(
                    "{v}; the contenders' nodes a second before the end:\n{}",
                    ran.nodes_before_end
                )
            })
    } else {
        // A fault that took long to heal (a JVM restarting on a loaded machine) left the contenders, who stop at
        // the end, less time than a recovery may take: liveness cannot be judged, which is said, not assumed.
        eprintln!(
            "zklock-chaos: liveness not judged: the last fault healed and the servers served {:.1} s before the end, \
             less than the {:.1} s a recovery may take",
            until_ns.saturating_sub(healed_ns) as f64 / 1e9,
            recovery_bound as f64 / 1e9
        );
        None
    }
}
