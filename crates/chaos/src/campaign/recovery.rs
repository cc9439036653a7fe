//! The recovery figures: from each fault's heal to the next new critical section (in the summary, and
//! `zklock-chaos __rescore` on a kept campaign's files).

use anyhow::Result;

use crate::checker;
use crate::nemesis::Fault;
use crate::report;

/// From each fault's heal to the next new critical section, for every fault and for the "isolated" ones: those
/// with no other fault in progress or starting in that time (the others measure the storm, not the one fault).
///
/// The same figures as [`checker::check_recovery`] once per fault (and every other fault per fault), in
/// `O((ops + faults) log)`: the first new section after a heal `h` is the first acquisition `p` (in the ops' order)
/// with `h < key(p)`, where `key(p)` is the smaller of its own time and the earliest time of an earlier acquisition
/// of its section (an acquisition at or before `h` makes its section old). The running maximum of `key` is sorted,
/// so a binary search finds `p`. A fault is isolated when no fault healing after it started before its recovery
/// ended: a suffix minimum of start times over the faults sorted by heal.
pub fn recovery_times(
    ops: &[crate::history::Op],
    records: &[crate::nemesis::Record],
) -> (Vec<u64>, Vec<u64>) {
    // The acquisitions as the checker counts them (its own predicate, asked one op at a time, so that the two
    // cannot drift apart): with `h` just before the op, `check_recovery` answers for it alone.
    let acquisitions: Vec<&crate::history::Op> = ops
        .iter()
        .filter(|op| {
            let alone = crate::history::Op { at_ns: 1, ..**op };
            checker::check_recovery(&[alone], 0, u64::MAX).is_ok()
        })
        .collect();
    let mut earliest: std::collections::HashMap<(u32, i64), u64> = std::collections::HashMap::new();
    let mut running_max: Vec<u64> = Vec::with_capacity(acquisitions.len());
    let mut max = 0u64;
    for op in &acquisitions {
        let first = earliest.entry(op.section()).or_insert(u64::MAX);
        let key = op.at_ns.min(*first);
        *first = (*first).min(op.at_ns);
        max = max.max(key);
        running_max.push(max);
    }
    let took = |heal: u64| -> Option<u64> {
        let p = running_max.partition_point(|&m| m <= heal);
        acquisitions.get(p).map(|op| op.at_ns - heal)
    };
    let mut by_heal: Vec<usize> = (0..records.len()).collect();
    by_heal.sort_by_key(|&i| records[i].heal_ns);
    let mut later_start = vec![u64::MAX; records.len() + 1];
    for at in (0..by_heal.len()).rev() {
        later_start[at] = later_start[at + 1].min(records[by_heal[at]].start_ns);
    }
    let mut recoveries: Vec<u64> = Vec::new();
    let mut isolated: Vec<u64> = Vec::new();
    for r in records {
        let Some(took) = took(r.heal_ns) else {
            continue;
        };
        recoveries.push(took);
        let until = r.heal_ns + took;
        let after = by_heal.partition_point(|&j| records[j].heal_ns <= r.heal_ns);
        if later_start[after] >= until {
            isolated.push(took);
        }
    }
    (recoveries, isolated)
}

/// `zklock-chaos __rescore DIR`: the recovery figures of a kept campaign, from its `register.history` and
/// `faults.history` alone.
pub fn rescore(dir: &std::path::Path) -> Result<()> {
    use clap::ValueEnum as _;
    let ops: Vec<crate::history::Op> = std::fs::read_to_string(dir.join("register.history"))?
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.parse().map_err(anyhow::Error::msg))
        .collect::<Result<_>>()?;
    let mut records = Vec::new();
    for line in std::fs::read_to_string(dir.join("faults.history"))?.lines() {
        let f: Vec<&str> = line.splitn(4, ' ').collect();
        if line.starts_with('#') || f.len() < 3 {
            continue;
        }
        let fault = Fault::value_variants()
            .iter()
            .copied()
            .find(|v| format!("{v:?}") == f[0])
            .ok_or_else(|| anyhow::anyhow!("unknown fault {:?}", f[0]))?;
        records.push(crate::nemesis::Record {
            fault,
            target: f.get(3).unwrap_or(&"").to_string(),
            start_ns: f[1].parse()?,
            heal_ns: f[2].parse()?,
            violation: None,
        });
    }
    let (mut all, mut alone) = recovery_times(&ops, &records);
    all.sort_unstable();
    alone.sort_unstable();
    let p = |v: &[u64], q: f64| report::percentile(v, q);
    println!(
        "faults={} recovered={} recovery_p50_ms={:.0} recovery_p99_ms={:.0} isolated={} isolated_p50_ms={:.0} \
         isolated_p99_ms={:.0}",
        records.len(),
        all.len(),
        p(&all, 0.5),
        p(&all, 0.99),
        alone.len(),
        p(&alone, 0.5),
        p(&alone, 0.99)
    );
    Ok(())
}

#[cfg(test)]
mod recovery_times_tests {
    use super::*;
    use crate::history::{Action, Kind, Op};
    use crate::nemesis::Record;
    use rand::{Rng, SeedableRng};

    /// The definition, as it was computed before (`check_recovery` once per fault): quadratic.
    fn by_definition(ops: &[Op], records: &[Record]) -> (Vec<u64>, Vec<u64>) {
        let mut recoveries: Vec<u64> = Vec::new();
        let mut isolated: Vec<u64> = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let Ok(took) = checker::check_recovery(ops, r.heal_ns, u64::MAX) else {
                continue;
            };
            recoveries.push(took);
            let until = r.heal_ns + took;
            let alone = records
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .all(|(_, o)| o.heal_ns <= r.heal_ns || o.start_ns >= until);
            if alone {
                isolated.push(took);
            }
        }
        (recoveries, isolated)
    }

    /// `n` ops over `n × 10` ms by 4 clients in sections of 1–5 ops (some rejected, some not acquisitions, times
    /// a little out of order), and `faults` faults.
    fn synthetic(rng: &mut rand::rngs::StdRng, n: usize, faults: usize) -> (Vec<Op>, Vec<Record>) {
        let mut ops = Vec::with_capacity(n);
        let mut tokens = [0i64; 4];
        let mut left = [0u32; 4];
        for i in 0..n {
            let client = rng.gen_range(0..4u32);
            if left[client as usize] == 0 {
                tokens[client as usize] += 1;
                left[client as usize] = rng.gen_range(1..=5);
            }
            left[client as usize] -= 1;
            ops.push(Op {
                seq: i as u64,
                at_ns: (i as u64 * 10 + rng.gen_range(0..15)) * 1_000_000,
                client,
                token: tokens[client as usize],
                kind: Kind::Exclusive,
                action: match rng.gen_range(0..10) {
                    0 => Action::Arrive,
                    1..4 => Action::Read,
                    _ => Action::Write,
                },
                value: 0,
                accepted: rng.gen_range(0..20) != 0,
                key: 0,
            });
        }
        let end = n as u64 * 10_000_000;
        let records = (0..faults)
            .map(|_| {
                let start_ns = rng.gen_range(0..end);
                Record {
                    fault: Fault::Pause,
                    target: String::new(),
                    start_ns,
                    heal_ns: start_ns + rng.gen_range(0..3_000_000_000),
                    violation: None,
                }
            })
            .collect();
        (ops, records)
    }

    #[test]
    fn the_sweep_gives_the_definitions_figures() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        for round in 0..40 {
            let (ops, records) = synthetic(&mut rng, 50 + round * 40, 1 + round % 25);
            assert_eq!(
                recovery_times(&ops, &records),
                by_definition(&ops, &records),
                "round {round}"
            );
        }
        // Ties: faults healing at the same instant, ops at the heal.
        let (mut ops, mut records) = synthetic(&mut rng, 500, 30);
        for (i, r) in records.iter_mut().enumerate() {
            r.heal_ns = ops[(i * 7) % ops.len()].at_ns;
            r.start_ns = r.start_ns.min(r.heal_ns);
        }
        records[1].heal_ns = records[0].heal_ns;
        ops.iter_mut().for_each(|op| op.at_ns -= op.at_ns % 20_000_000);
        assert_eq!(recovery_times(&ops, &records), by_definition(&ops, &records));
    }

    #[test]
    fn six_hundred_thousand_ops_and_two_thousand_faults_in_seconds() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7003);
        let (ops, records) = synthetic(&mut rng, 600_000, 2_400);
        let started = std::time::Instant::now();
        let (all, alone) = recovery_times(&ops, &records);
        let took = started.elapsed();
        eprintln!(
            "recovery_times: {} ops, {} faults: {} recoveries, {} isolated in {:.2} s",
            ops.len(),
            records.len(),
            all.len(),
            alone.len(),
            took.as_secs_f64()
        );
        assert!(all.len() > 2_000, "{}", all.len());
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }
}
