//! The linearizability checker on long histories (issue 21): the sweep that carries every reachable
//! configuration from one completion to the next, and the deadlines of unknown operations.
//!
//! * Violations that lie past many completions (a stale read after a quiescent point, a lost acknowledged write,
//!   a version that skips) are caught; unknown operations take effect before their deadline or never, not after.
//! * A synthetic history of 200,000 operations by 4 clients with unknown outcomes decides in seconds, and the
//!   same history with one read made stale, one acknowledged write lost or one version skipped is caught.
//! * The deadlines the `register` workload's histories give (`zklock-chaos __check-register`): the answer of a
//!   later request of the same session; else the session given up + 2 session timeouts + 20 s.

#[path = "../src/linearizability.rs"]
#[allow(dead_code)]
mod linearizability;

#[path = "common/histories.rs"]
#[allow(dead_code)]
mod histories;

use std::time::{Duration, Instant};

use histories::{read, write};
use linearizability::{check, check_within, Call, Operation, Outcome, Step, Verdict, MAX_STATES};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MS: u64 = 1_000_000;
const NEVER: u64 = u64::MAX;

fn ok(version: i32) -> Outcome {
    Outcome::Applied(vec![version])
}

/// `n` rounds on key 0, one after the other with a quiescent point between: a write of `i` by "w", a read of it by
/// "r" overlapping that write, and every 10th round an unknown write by "u" that takes effect (a read sees its
/// value) before its deadline. Linearizable. Returns the history, the deadlines, the last value and version, and
/// the time after it.
fn prefix(n: u64) -> (Vec<Operation>, Vec<u64>, i64, i32, u64) {
    let (mut h, mut d) = (Vec::new(), Vec::new());
    let mut version = 0;
    let mut t = 0;
    let mut value = 0;
    for i in 1..=n as i64 {
        version += 1;
        value = i;
        h.push(write("w", t, t + 10, 0, value, ok(version)));
        d.push(NEVER);
        h.push(read("r", t + 5, t + 30, 0, value, version));
        d.push(NEVER);
        t += 20;
        if i % 10 == 0 {
            // Unknown: it happened, after the write above; its deadline is after the read that sees it.
            version += 1;
            value = 1_000_000 + i;
            h.push(write("u", t, t + 1, 0, value, Outcome::Unknown));
            d.push(t + 25);
            h.push(read("r", t + 15, t + 20, 0, value, version));
            d.push(NEVER);
            t += 30;
        }
        t += 20; // a quiescent point: nothing in flight
    }
    (h, d, value, version, t)
}

fn verdict(h: &[Operation], d: &[u64]) -> Verdict {
    let report = check_within(h, d, MAX_STATES);
    eprintln!("{report}");
    report.verdict
}

fn is_no(v: &Verdict) -> bool {
    matches!(v, Verdict::NotLinearizable(_))
}

#[test]
fn a_long_linearizable_prefix_with_unknown_operations_passes() {
    let (h, d, _, _, _) = prefix(2_000);
    assert_eq!(verdict(&h, &d), Verdict::Linearizable);
}

#[test]
fn a_stale_read_after_a_quiescent_point_is_caught() {
    let (mut h, mut d, value, version, t) = prefix(1_000);
    h.push(read("r", t, t + 10, 0, value, version));
    d.push(NEVER);
    assert_eq!(verdict(&h, &d), Verdict::Linearizable);
    // The value written in round 500 (version 500 + 49 unknown writes), overwritten long before.
    h.push(read("s", t + 100, t + 110, 0, 500, 549));
    d.push(NEVER);
    let v = verdict(&h, &d);
    assert!(is_no(&v), "{v:?}");
    assert!(format!("{v:?}").contains("read k0 -> 500 v549"), "{v:?}");
}

#[test]
fn a_lost_acknowledged_write_is_caught() {
    let (mut h, mut d, value, version, t) = prefix(1_000);
    h.push(write("w", t, t + 10, 0, 42, ok(version + 1)));
    d.push(NEVER);
    // After the write returned, a read still sees the value before it.
    h.push(read("r", t + 50, t + 60, 0, value, version));
    d.push(NEVER);
    assert!(is_no(&verdict(&h, &d)));
}

#[test]
fn a_version_that_skips_is_caught_unless_an_unknown_write_in_time_explains_it() {
    let (mut h, mut d, value, version, t) = prefix(1_000);
    // A read at [t + 60, t + 70] still sees the last version; the write at [t + 100, t + 110] makes two more.
    h.push(read("r", t + 60, t + 70, 0, value, version));
    h.push(write("w", t + 100, t + 110, 0, 42, ok(version + 2)));
    d.extend([NEVER, NEVER]);
    assert!(is_no(&verdict(&h, &d)));
    // An unknown write invoked at t whose deadline lies after that read: it took effect between the two.
    let mut explained = h.clone();
    let mut deadlines = d.clone();
    explained.push(write("u", t, t + 1, 0, 7, Outcome::Unknown));
    deadlines.push(t + 80);
    assert_eq!(verdict(&explained, &deadlines), Verdict::Linearizable);
    // The same unknown write with a deadline before that read was invoked: it cannot have made the version.
    *deadlines.last_mut().unwrap() = t + 50;
    assert!(is_no(&verdict(&explained, &deadlines)));
}

#[test]
fn unknown_operations_take_effect_before_their_deadline_or_never() {
    let h = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        write("b", 100, 110, 0, 6, ok(1)),
        read("b", 200, 210, 0, 5, 2), // a's write after b's: at some time in [110, 200]
    ];
    assert_eq!(verdict(&h, &[150, NEVER, NEVER]), Verdict::Linearizable);
    assert_eq!(verdict(&h, &[100, NEVER, NEVER]), Verdict::Linearizable); // at b's invocation, just after it
    assert!(is_no(&verdict(&h, &[99, NEVER, NEVER]))); // before b's write was invoked
                                                       // Never: fine whatever the deadline.
    let never = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        write("b", 100, 110, 0, 6, ok(1)),
        read("b", 200, 210, 0, 6, 1),
    ];
    assert_eq!(verdict(&never, &[50, NEVER, NEVER]), Verdict::Linearizable);
    // Not twice, and not before its invocation.
    let twice = [
        write("a", 0, 0, 0, 5, Outcome::Unknown),
        read("b", 100, 110, 0, 5, 1),
        read("b", 200, 210, 0, 5, 2),
    ];
    assert!(is_no(&verdict(&twice, &[1_000, NEVER, NEVER])));
    let early = [
        read("b", 0, 10, 0, 5, 1),
        write("a", 20, 0, 0, 5, Outcome::Unknown),
    ];
    assert!(is_no(&verdict(&early, &[1_000, NEVER])));
    // `check` gives no deadline: the old semantics.
    assert_eq!(check(&h, MAX_STATES).verdict, Verdict::Linearizable);
}

/// A linearizable history of `n` operations by 4 clients on 4 keys in the `register` workload's mix (40 % reads,
/// 20 % writes, 25 % compare-and-sets, 15 % `multi` on k0 and k1), each taking effect at a random point inside its
/// interval; 1 % unknown (half of them taking effect, some up to 400 ms late, the client carrying on), with
/// deadlines at or after the effect.
fn synthetic(seed: u64, n: usize) -> (Vec<Operation>, Vec<u64>) {
    synthetic_with(seed, n, 10, 0.3, 400 * MS, 600 * MS)
}

/// [`synthetic`] with `per_mille` of the transactions unknown, a fraction `late` of those taking effect up to
/// `lag` after their invocation with a deadline up to `grace` after that.
fn synthetic_with(
    seed: u64,
    n: usize,
    per_mille: u32,
    late: f64,
    lag: u64,
    grace: u64,
) -> (Vec<Operation>, Vec<u64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let unknowns = Unknowns {
        per_mille,
        late,
        lag,
        grace,
    };
    let mut plans = Vec::with_capacity(n);
    let mut clock = [0u64; 4];
    for i in 0..n {
        plans.push(plan(&mut rng, i, &mut clock[i % 4], &unknowns));
    }
    set_deadlines(&mut plans);
    let outcomes = take_effect(&mut plans);
    let mut history = Vec::with_capacity(n);
    let mut deadlines = Vec::with_capacity(n);
    // (An unknown operation that never took effect keeps the versions it was planned with: any will do.)
    for (i, (plan, outcome)) in plans.into_iter().zip(outcomes).enumerate() {
        history.push(Operation {
            process: format!("{}", i % 4),
            call_ns: plan.call_ns,
            ret_ns: plan.ret_ns,
            call: plan.call,
            outcome,
        });
        deadlines.push(plan.deadline);
    }
    (history, deadlines)
}

/// How [`synthetic_with`] draws unknown operations.
struct Unknowns {
    per_mille: u32,
    late: f64,
    lag: u64,
    grace: u64,
}

/// One operation of [`synthetic_with`] as planned, before its effect is applied.
struct Planned {
    call: Call,
    call_ns: u64,
    ret_ns: u64,
    effect_ns: u64,
    unknown: bool,
    happens: bool,
    deadline: u64,
    /// For a compare-and-set: whether it expects the version current at its effect (else one behind).
    fresh: bool,
}

/// Plans operation `i`, by client `i % 4` whose last answer came at `clock` (moved on to this one's).
fn plan(rng: &mut StdRng, i: usize, clock: &mut u64, unknowns: &Unknowns) -> Planned {
    let client = i % 4;
    let call_ns = *clock + rng.gen_range(MS / 2..5 * MS);
    let effect_ns = call_ns + rng.gen_range(MS / 10..2 * MS);
    let ret_ns = effect_ns + rng.gen_range(MS / 10..2 * MS);
    *clock = ret_ns;
    let key = rng.gen_range(0..4u32);
    let value = ((client as i64 + 1) << 40) | i as i64;
    let call = random_call(rng, key, value);
    let unknown = matches!(call, Call::Txn(_)) && rng.gen_range(0..1000) < unknowns.per_mille;
    let (effect_ns, deadline) = if unknown && rng.gen_bool(unknowns.late) {
        let late = call_ns + rng.gen_range(0..unknowns.lag);
        (late, late + rng.gen_range(0..unknowns.grace))
    } else {
        (effect_ns, NEVER) // filled in below: the client's next answer
    };
    Planned {
        call,
        call_ns,
        ret_ns,
        effect_ns,
        unknown,
        happens: !unknown || rng.gen_bool(0.5),
        deadline,
        fresh: rng.gen_bool(0.7),
    }
}

/// A call in the `register` workload's mix on `key`, writing `value` (expected versions filled in at its effect).
fn random_call(rng: &mut StdRng, key: u32, value: i64) -> Call {
    match rng.gen_range(0..100) {
        0..40 => Call::Read { key },
        40..60 => Call::Txn(vec![Step::Set {
            key,
            value,
            expected: None,
        }]),
        60..85 => Call::Txn(vec![Step::Set {
            key,
            value,
            expected: Some(0), // filled in at its effect
        }]),
        85..93 => Call::Txn(vec![
            Step::Set {
                key: 0,
                value,
                expected: Some(0),
            },
            Step::Set {
                key: 1,
                value,
                expected: None,
            },
        ]),
        _ => Call::Txn(vec![
            Step::Check { key: 0, version: 0 },
            Step::Set {
                key: 1,
                value,
                expected: Some(0),
            },
        ]),
    }
}

/// An unknown operation with no deadline yet: the answer of its client's next answered operation.
fn set_deadlines(plans: &mut [Planned]) {
    let n = plans.len();
    for client in 0..4 {
        let mut next_answer = NEVER;
        for i in (client..n).step_by(4).rev() {
            if !plans[i].unknown {
                next_answer = plans[i].ret_ns;
            } else if plans[i].deadline == NEVER {
                plans[i].deadline = next_answer;
            }
        }
    }
}

/// Applies the effects in time order to the registers: the outcomes.
fn take_effect(plans: &mut [Planned]) -> Vec<Outcome> {
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|&i| plans[i].effect_ns);
    let mut registers = [(0i64, 0i32); 4];
    let mut outcomes = vec![Outcome::Unknown; plans.len()];
    for i in order {
        let plan = &mut plans[i];
        if !plan.happens {
            continue;
        }
        let behind = if plan.fresh { 0 } else { 1 };
        match &mut plan.call {
            Call::Read { key } => {
                let (value, version) = registers[*key as usize];
                outcomes[i] = Outcome::Read { value, version };
            }
            Call::Txn(steps) => {
                let (made, failed) = apply_txn(&mut registers, steps, behind);
                if !plan.unknown {
                    outcomes[i] = match failed {
                        None => Outcome::Applied(made),
                        Some(at) => Outcome::Refused(Some(at)),
                    };
                }
            }
        }
    }
    outcomes
}

/// Applies `steps` to `registers` (all or nothing), filling in the version each set expects (`behind` the current
/// one) and each check compares: the versions made, and the step that failed.
fn apply_txn(registers: &mut [(i64, i32); 4], steps: &mut [Step], behind: i32) -> (Vec<i32>, Option<usize>) {
    let mut next = *registers;
    let mut made = Vec::new();
    let mut failed = None;
    for (at, step) in steps.iter_mut().enumerate() {
        match step {
            Step::Set { key, value, expected } => {
                let slot = &mut next[*key as usize];
                if let Some(e) = expected {
                    *e = slot.1 - behind;
                    if *e != slot.1 {
                        failed = Some(at);
                        break;
                    }
                }
                *slot = (*value, slot.1 + 1);
                made.push(slot.1);
            }
            Step::Check { key, version } => {
                *version = next[*key as usize].1;
            }
        }
    }
    if failed.is_none() {
        *registers = next;
    }
    (made, failed)
}

fn timed(h: &[Operation], d: &[u64]) -> (Verdict, Duration) {
    let started = Instant::now();
    let report = check_within(h, d, MAX_STATES);
    let took = started.elapsed();
    eprintln!("{report} in {:.2} s", took.as_secs_f64());
    (report.verdict, took)
}

#[test]
fn two_hundred_thousand_operations_with_unknowns_decide_in_seconds() {
    let (h, d) = synthetic(21, 200_000);
    let unknown = h.iter().filter(|op| op.outcome == Outcome::Unknown).count();
    eprintln!("{} ops, {unknown} unknown", h.len());
    assert!(unknown > 500, "{unknown}");
    let (v, took) = timed(&h, &d);
    assert_eq!(v, Verdict::Linearizable);
    assert!(took < Duration::from_secs(60), "{took:?}");

    // Late in the history (after ~190,000 completions), on key 2: a read made stale, an acknowledged write lost,
    // a version skipped.
    let late = |pick: &dyn Fn(&Operation) -> bool| (190_000..h.len()).find(|&i| pick(&h[i])).unwrap();
    let reads_k2 =
        |op: &Operation| matches!(op.call, Call::Read { key: 2 }) && op.outcome != Outcome::Unknown;
    // Stale: the answer of a read of k2 ~1,000 operations before, if the version moved since.
    let at = late(&|op: &Operation| reads_k2(op));
    let old = (0..at - 1_000)
        .rev()
        .find(|&i| reads_k2(&h[i]))
        .map(|i| h[i].outcome.clone())
        .unwrap();
    assert_ne!(old, h[at].outcome);
    let mut stale = h.clone();
    stale[at].outcome = old;
    let (v, _) = timed(&stale, &d);
    assert!(is_no(&v), "{v:?}");

    // Lost: the first read of k2 after an acknowledged write of k2 returned sees the version before it.
    let w = late(&|op: &Operation| {
        matches!(&op.call, Call::Txn(s) if s.len() == 1 && matches!(s[0], Step::Set { key: 2, .. }))
            && matches!(op.outcome, Outcome::Applied(_))
    });
    let Outcome::Applied(made) = &h[w].outcome else {
        unreachable!()
    };
    let r = (w + 1..h.len())
        .find(|&i| reads_k2(&h[i]) && h[i].call_ns > h[w].ret_ns)
        .unwrap();
    let mut lost = h.clone();
    lost[r].outcome = Outcome::Read {
        value: -5,
        version: made[0] - 1,
    };
    let (v, _) = timed(&lost, &d);
    assert!(is_no(&v), "{v:?}");

    // Skipped: that write's version answered one higher.
    let mut skipped = h.clone();
    skipped[w].outcome = Outcome::Applied(vec![made[0] + 1]);
    let (v, _) = timed(&skipped, &d);
    assert!(is_no(&v), "{v:?}");
}

// ---- the deadlines the register workload's histories give ----

/// `zklock-chaos __check-register` on history files `(name, text)`: its exit code and verdict line.
fn check_files(files: &[(&str, String)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zklock-chaos"))
        .arg("__check-register")
        .arg(dir.path())
        .output()
        .unwrap();
    let verdict = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    eprintln!("{verdict}");
    (out.status.code(), verdict)
}

const S: u64 = 1_000_000_000;

#[test]
fn a_killed_contenders_write_may_land_until_its_session_is_surely_gone() {
    // Slot 0's first process writes k0 = 500 and is killed before the answer; its next process starts at 2 s.
    // Session timeout 4 s: the write may take effect until 2 + 2 × 4 + 20 = 30 s.
    let killed = (
        "kv-0-1.history",
        format!(
            "session 11 {} 4000\ncall 1 {} txn set 0 500 -1\n",
            S / 1000,
            S / 1000
        ),
    );
    let next = ("kv-0-2.history", format!("session 12 {} 4000\n", 2 * S));
    let other = |at: u64| {
        (
            "kv-1-1.history",
            format!(
                "session 13 {} 4000\ncall 1 {at} txn set 0 600 -1\nok 1 {} txn 1\ncall 2 {} read 0\nok 2 {} read 500 2\n",
                S / 1000,
                at + 1_000,
                at + 2_000,
                at + 3_000
            ),
        )
    };
    // Slot 1 writes 600 at `at`, then reads 500 at version 2: the killed write landed after `at`.
    let (code, v) = check_files(&[killed.clone(), next.clone(), other(25 * S)]);
    assert_eq!(code, Some(0), "{v}");
    let (code, v) = check_files(&[killed, next, other(31 * S)]);
    assert_eq!(code, Some(1), "{v}");
    assert!(v.contains("no linearization lets"), "{v}");
}

#[test]
fn an_unknown_write_lands_before_the_next_answer_on_its_session() {
    // Slot 0: a write of k0 = 500 times out (unknown at 5 ms), then a read of k1 on the same session is answered
    // at 11 ms. Slot 1: writes 600 (answered at 21 ms), then reads 500 at version 2 (at 30 ms): the unknown write
    // would have landed after the next answer on its session, which ZooKeeper's order forbids.
    let slot0 = |new_session: bool| {
        let moved = if new_session {
            format!("session 12 {} 4000\n", 9 * MS)
        } else {
            String::new()
        };
        (
            "kv-0-1.history",
            format!(
                "session 11 0 4000\ncall 1 {} txn set 0 500 -1\nunknown 1 {} timed out\n{moved}call 2 {} read 1\nok 2 {} read 0 0\n",
                MS,
                5 * MS,
                10 * MS,
                11 * MS
            ),
        )
    };
    let slot1 = (
        "kv-1-1.history",
        format!(
            "session 13 0 4000\ncall 1 {} txn set 0 600 -1\nok 1 {} txn 1\ncall 2 {} read 0\nok 2 {} read 500 2\n",
            20 * MS,
            21 * MS,
            30 * MS,
            31 * MS
        ),
    );
    let (code, v) = check_files(&[slot0(false), slot1.clone()]);
    assert_eq!(code, Some(1), "{v}");
    // Had the read gone on a new session, the old one's write could land until that session surely ended.
    let (code, v) = check_files(&[slot0(true), slot1]);
    assert_eq!(code, Some(0), "{v}");
}

#[test]
fn unknown_writes_in_flight_for_half_a_minute_decide_in_seconds() {
    // As in an hour's soak where sessions are given up, and more: ~0.5 unknown writes a second (the one-hour soak
    // had 0.29), each taking effect up to 10 s after its invocation (or never), with a deadline up to 30 s after
    // that (the soak's are ~28 s after the session was given up).
    let (h, d) = synthetic_with(22, 100_000, 1, 1.0, 10_000 * MS, 30_000 * MS);
    let unknown = h.iter().filter(|op| op.outcome == Outcome::Unknown).count();
    let span = (h.last().unwrap().call_ns - h[0].call_ns) as f64 / 1e9;
    eprintln!("{} ops over {span:.0} s, {unknown} unknown", h.len());
    let (v, took) = timed(&h, &d);
    assert_eq!(v, Verdict::Linearizable);
    assert!(took < Duration::from_secs(60), "{took:?}");
}
