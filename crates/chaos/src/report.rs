//! What a campaign leaves behind: its files and its summary.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use crate::args::CampaignArgs;
use crate::checker::Violation;
use crate::contenders::SlotReport;
use crate::history::{Interval, Op};
use crate::nemesis::Record;
use crate::Recipe;

pub fn write_files(
    dir: &Path,
    ops: &[Op],
    records: &[Record],
    intervals: &[Interval],
    violations: &[Violation],
) -> Result<()> {
    use std::fmt::Write as _;
    let mut text = String::from("# seq at_ns client token kind action value verdict\n");
    for op in ops {
        let _ = writeln!(text, "{op}");
    }
    std::fs::write(dir.join("register.history"), text)?;
    let mut text = String::from("# fault start_ns heal_ns target\n");
    for r in records {
        let _ = writeln!(text, "{:?} {} {} {}", r.fault, r.start_ns, r.heal_ns, r.target);
    }
    std::fs::write(dir.join("faults.history"), text)?;
    let mut text = String::new();
    for iv in intervals {
        let _ = writeln!(
            text,
            "{} token {} {}..{} finished {}",
            iv.name, iv.token, iv.begin_ns, iv.last_ns, iv.finished
        );
    }
    std::fs::write(dir.join("intervals.txt"), text)?;
    std::fs::write(dir.join("violations.txt"), violations.join("\n"))?;
    Ok(())
}

/// The command-line spelling of a value.
pub fn name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1e6
}

#[allow(clippy::too_many_arguments)]
pub fn report(
    args: &CampaignArgs,
    seed: u64,
    ops: &[Op],
    records: &[Record],
    reports: &BTreeMap<usize, SlotReport>,
    recoveries: &[u64],
    isolated: &[u64],
    violations: &[Violation],
    intervals: &[Interval],
    availability: &str,
) {
    let mut by_fault: BTreeMap<String, usize> = BTreeMap::new();
    for r in records {
        *by_fault
            .entry(format!("{:?}", r.fault).to_lowercase())
            .or_default() += 1;
        eprintln!(
            "zklock-chaos: fault {:?} on {} for {:.1} s",
            r.fault,
            r.target,
            (r.heal_ns - r.start_ns) as f64 / 1e9
        );
    }
    let mut exits: BTreeMap<i32, u64> = BTreeMap::new();
    for report in reports.values() {
        for (code, n) in &report.exits {
            *exits.entry(*code).or_default() += n;
        }
    }
    let accepted = ops.iter().filter(|o| o.accepted).count();
    let mut sorted = recoveries.to_vec();
    sorted.sort_unstable();
    let mut alone = isolated.to_vec();
    alone.sort_unstable();
    for v in violations.iter().take(50) {
        eprintln!("zklock-chaos: VIOLATION {v}");
    }
    if violations.len() > 50 {
        eprintln!("zklock-chaos: ... and {} more violations", violations.len() - 50);
    }
    let faults: Vec<String> = by_fault.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    let exits: Vec<String> = exits.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    eprintln!(
        "chaos-result recipe={} server={} fencing={} ops={} accepted={} rejected={} commands={} faults={} \
         kinds={} recovery_p50_ms={:.0} recovery_p99_ms={:.0} isolated={} isolated_p50_ms={:.0} \
         isolated_p99_ms={:.0} exits={} violations={} {availability}",
        name(args.recipe),
        name(args.server),
        !args.no_fencing
            && !matches!(
                args.recipe,
                Recipe::Queue
                    | Recipe::DoubleBarrier
                    | Recipe::Counter
                    | Recipe::PriorityQueue
                    | Recipe::Group
                    | Recipe::PersistentNode
                    | Recipe::TwoPhaseCommit
                    | Recipe::Register
                    | Recipe::Cache
            ),
        ops.len(),
        accepted,
        ops.len() - accepted,
        intervals.len(),
        records.len(),
        faults.join(","),
        percentile(&sorted, 0.5),
        percentile(&sorted, 0.99),
        alone.len(),
        percentile(&alone, 0.5),
        percentile(&alone, 0.99),
        exits.join(","),
        violations.len()
    );
    println!(
        "chaos: {} ops, {} faults, {} violations, seed {seed}",
        ops.len(),
        records.len(),
        violations.len()
    );
    if !violations.is_empty() {
        let mix = if args.mix.is_empty() {
            String::new()
        } else {
            let mix: Vec<&str> = args
                .mix
                .iter()
                .map(|p| crate::workloads::foreign::name(*p))
                .collect();
            format!(" --mix {}", mix.join(","))
        };
        let curator = if args.stock_curator {
            " --stock-curator"
        } else {
            ""
        };
        let fencing = if args.no_fencing { " --no-fencing" } else { "" };
        eprintln!(
            "zklock-chaos: replay with: zklock-chaos --server {} --recipe {} --clients {} --duration {} --session-timeout {} --seed {seed}{mix}{curator}{fencing}",
            name(args.server),
            name(args.recipe),
            args.clients,
            args.duration,
            args.session_timeout,
        );
    }
}
