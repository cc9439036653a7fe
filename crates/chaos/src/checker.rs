//! The independent checker: reads only what the protected resource recorded (and what the commands of
//! `zklock run` logged about themselves), never zklock's own opinion, and lists every broken guarantee.

use std::collections::{BTreeMap, HashMap};

use crate::history::{Action, Interval, Kind, Op};

/// What the history must satisfy.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// How many shared holders may be in at once (`usize::MAX`: any number of readers).
    pub shared_limit: usize,
    /// Whether writes must form one counter without lost updates.
    pub counter: bool,
}

/// A broken guarantee, in words.
pub type Violation = String;

/// One critical section as the resource saw it: the accepted operations of one contender with one token.
#[derive(Debug, Clone, Copy)]
struct Span {
    client: u32,
    token: i64,
    kind: Kind,
    first: usize,
    last: usize,
}

/// Checks the register's history: fencing order, no overlapping critical sections, the holder limit, the counter.
pub fn check_register(ops: &[Op], rules: Rules) -> Vec<Violation> {
    let mut violations = Vec::new();
    let accepted: Vec<&Op> = ops.iter().filter(|op| op.accepted).collect();

    // Tokens: a new exclusive holder's token is larger than every earlier exclusive holder's.
    let mut last_exclusive: Option<(u32, i64)> = None;
    for op in accepted.iter().filter(|op| op.kind == Kind::Exclusive) {
        if let Some((client, token)) = last_exclusive {
            if (op.client, op.token) != (client, token) && op.token <= token {
                violations.push(format!(
                    "token order: op {} of client {} with token {} accepted after client {}'s token {}",
                    op.seq, op.client, op.token, client, token
                ));
            }
        }
        last_exclusive = Some((op.client, op.token));
    }

    // Critical sections and their overlaps (in the register's order of accepted operations).
    let mut spans: Vec<Span> = Vec::new();
    let mut open: HashMap<(u32, i64), usize> = HashMap::new();
    for (i, op) in accepted.iter().enumerate() {
        let key = op.section();
        let index = *open.entry(key).or_insert_with(|| {
            spans.push(Span {
                client: op.client,
                token: op.token,
                kind: op.kind,
                first: i,
                last: i,
            });
            spans.len() - 1
        });
        spans[index].last = i;
        if op.action == Action::Leave {
            open.remove(&key);
        }
    }
    // Sweep: starts and ends by position; a span's own ops are all between its first and last.
    let mut events: BTreeMap<usize, Vec<(bool, usize)>> = BTreeMap::new();
    for (index, span) in spans.iter().enumerate() {
        events.entry(span.first).or_default().push((true, index));
        events.entry(span.last).or_default().push((false, index));
    }
    let mut active: Vec<usize> = Vec::new();
    for (position, list) in events {
        for (start, index) in list.iter().copied().filter(|(start, _)| *start) {
            let span = spans[index];
            let exclusive_in = active.iter().find(|&&a| spans[a].kind == Kind::Exclusive);
            let shared_in = active.iter().filter(|&&a| spans[a].kind == Kind::Shared).count();
            if let Some(&other) = exclusive_in.or(if span.kind == Kind::Exclusive {
                active.first()
            } else {
                None
            }) {
                let other = spans[other];
                violations.push(format!(
                    "overlap: client {} (token {}, {:?}) entered at accepted op #{position} while client {} \
                     (token {}, {:?}) was inside",
                    span.client, span.token, span.kind, other.client, other.token, other.kind
                ));
            } else if span.kind == Kind::Shared && shared_in >= rules.shared_limit {
                violations.push(format!(
                    "holder limit: client {} (token {}) entered at accepted op #{position} while {shared_in} \
                     were inside (limit {})",
                    span.client, span.token, rules.shared_limit
                ));
            }
            let _ = start;
            active.push(index);
        }
        for (_, index) in list.iter().copied().filter(|(start, _)| !*start) {
            active.retain(|&a| a != index);
        }
    }

    // The counter: every accepted write is the previous value plus one, and reads see the last write.
    if rules.counter {
        let (mut value, mut writes) = (0i64, 0i64);
        for op in &accepted {
            match op.action {
                Action::Read if op.value != value => violations.push(format!(
                    "stale read: op {} of client {} read {} but the counter was {}",
                    op.seq, op.client, op.value, value
                )),
                Action::Write => {
                    if op.value != value + 1 {
                        violations.push(format!(
                            "lost update: op {} of client {} (token {}) wrote {} over {}",
                            op.seq, op.client, op.token, op.value, value
                        ));
                    }
                    value = op.value;
                    writes += 1;
                }
                _ => {}
            }
        }
        if value != writes {
            violations.push(format!(
                "counter: final value {value} but {writes} accepted increments"
            ));
        }
    }
    violations
}

/// Checks a double barrier's history: nobody passes the entry of a round before `members` participants arrived
/// in it. Every arrival counts, also of a participant that later died or gave up: its node counts for the
/// barrier until its session ends, so this is the strongest rule the register can judge without knowing when
/// sessions expired.
pub fn check_barrier(ops: &[Op], members: usize) -> Vec<Violation> {
    let mut arrived: HashMap<i64, std::collections::HashSet<(u32, i64)>> = HashMap::new();
    let mut violations = Vec::new();
    for op in ops {
        match op.action {
            Action::Arrive => {
                arrived.entry(op.token).or_default().insert((op.client, op.value));
            }
            Action::Pass => {
                let n = arrived.get(&op.token).map_or(0, |set| set.len());
                if n < members {
                    violations.push(format!(
                        "barrier: client {} passed the entry of round {} when only {n} of {members} had arrived",
                        op.client, op.token
                    ));
                }
            }
            _ => {}
        }
    }
    violations
}

/// Checks a queue's history (`take_safe` consumers): every acknowledged item was taken, none completed twice.
pub fn check_queue(ops: &[Op]) -> Vec<Violation> {
    let mut puts: BTreeMap<i64, u32> = BTreeMap::new();
    let mut takes: BTreeMap<i64, u32> = BTreeMap::new();
    let mut dones: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for op in ops {
        match op.action {
            Action::Put => *puts.entry(op.token).or_default() += 1,
            Action::Take => *takes.entry(op.token).or_default() += 1,
            Action::Done => dones.entry(op.token).or_default().push(op.client),
            _ => {}
        }
    }
    let mut violations = Vec::new();
    for (item, count) in &puts {
        if *count > 1 {
            violations.push(format!("queue: item {item:#x} acknowledged as put {count} times"));
        }
        if !takes.contains_key(item) {
            violations.push(format!(
                "queue: item {item:#x} was put (acknowledged) but never taken: lost"
            ));
        }
    }
    for (item, clients) in &dones {
        if clients.len() > 1 {
            violations.push(format!(
                "queue: item {item:#x} completed {} times (by clients {clients:?}): delivered twice",
                clients.len()
            ));
        }
    }
    violations
}

/// Checks that no two commands of `zklock run` were running at the same time.
pub fn check_intervals(intervals: &[Interval]) -> Vec<Violation> {
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by_key(|iv| iv.begin_ns);
    let mut violations = Vec::new();
    let mut latest: Option<&Interval> = None; // the interval reaching furthest so far
    for iv in sorted {
        if let Some(prev) = latest {
            if iv.begin_ns < prev.last_ns {
                violations.push(format!(
                    "two commands at once: {} (token {}) began {:.1} ms before {} (token {}{}) was last seen",
                    iv.name,
                    iv.token,
                    (prev.last_ns - iv.begin_ns) as f64 / 1e6,
                    prev.name,
                    prev.token,
                    if prev.finished { "" } else { ", killed" }
                ));
            }
        }
        if latest.is_none_or(|prev| iv.last_ns > prev.last_ns) {
            latest = Some(iv);
        }
    }
    violations
}

/// Checks liveness: after the last fault healed (at `healed_ns`), a new critical section began within `bound_ns`.
/// Returns the recovery time in ns, or the violation.
pub fn check_recovery(ops: &[Op], healed_ns: u64, bound_ns: u64) -> Result<u64, Violation> {
    let mut seen_before: std::collections::HashSet<(u32, i64)> = std::collections::HashSet::new();
    // Arriving at a barrier, giving up and leaving are not acquisitions.
    let acquiring = |op: &&Op| !matches!(op.action, Action::Arrive | Action::Abandon | Action::Left);
    for op in ops.iter().filter(|op| op.accepted).filter(acquiring) {
        if op.at_ns <= healed_ns {
            seen_before.insert(op.section());
        } else if !seen_before.contains(&op.section()) {
            let took = op.at_ns - healed_ns;
            return if took <= bound_ns {
                Ok(took)
            } else {
                Err(format!(
                    "liveness: the first acquisition after the last fault healed took {:.1} s (bound {:.1} s)",
                    took as f64 / 1e9,
                    bound_ns as f64 / 1e9
                ))
            };
        }
    }
    Err("liveness: no acquisition at all after the last fault healed".to_owned())
}

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;
    use Action::*;
    use Kind::*;

    const MUTEX: Rules = Rules {
        shared_limit: 1,
        counter: true,
    };

    fn op(client: u32, token: i64, kind: Kind, action: Action, value: i64) -> Op {
        Op {
            seq: 0,
            at_ns: 0,
            client,
            token,
            kind,
            action,
            value,
            accepted: true,
        }
    }

    fn numbered(mut ops: Vec<Op>) -> Vec<Op> {
        for (i, op) in ops.iter_mut().enumerate() {
            op.seq = i as u64;
            op.at_ns = (i as u64 + 1) * 1_000_000;
        }
        ops
    }

    #[test]
    fn a_correct_mutex_history_passes() {
        let ops = numbered(vec![
            op(1, 10, Exclusive, Read, 0),
            op(1, 10, Exclusive, Write, 1),
            op(2, 12, Exclusive, Read, 1),
            Op {
                accepted: false,
                ..op(1, 10, Exclusive, Write, 2)
            },
            op(2, 12, Exclusive, Write, 2),
        ]);
        assert_eq!(check_register(&ops, MUTEX), Vec::<String>::new());
    }

    #[test]
    fn interleaved_sections_and_lost_updates_are_caught() {
        // What a paused holder does without fencing: it read before the pause and writes after its successor.
        let ops = numbered(vec![
            op(1, 10, Exclusive, Read, 0),
            op(2, 12, Exclusive, Read, 0),
            op(2, 12, Exclusive, Write, 1),
            op(1, 10, Exclusive, Write, 1),
        ]);
        let v = check_register(&ops, MUTEX);
        assert!(v.iter().any(|v| v.starts_with("overlap")), "{v:?}");
        assert!(v.iter().any(|v| v.starts_with("lost update")), "{v:?}");
        assert!(v.iter().any(|v| v.starts_with("token order")), "{v:?}");
        assert!(v.iter().any(|v| v.starts_with("counter")), "{v:?}");
    }

    #[test]
    fn stale_reads_are_caught() {
        let ops = numbered(vec![
            op(1, 10, Exclusive, Read, 0),
            op(1, 10, Exclusive, Write, 1),
            op(2, 12, Exclusive, Read, 0),
        ]);
        let v = check_register(&ops, MUTEX);
        assert!(v.iter().any(|v| v.starts_with("stale read")), "{v:?}");
    }

    #[test]
    fn readers_may_share_but_not_with_a_writer() {
        let rw = Rules {
            shared_limit: usize::MAX,
            counter: true,
        };
        let ok = numbered(vec![
            op(1, 10, Shared, Enter, 0),
            op(2, 11, Shared, Enter, 0),
            op(1, 10, Shared, Read, 0),
            op(1, 10, Shared, Leave, 0),
            op(2, 11, Shared, Leave, 0),
            op(3, 12, Exclusive, Read, 0),
            op(3, 12, Exclusive, Write, 1),
        ]);
        assert_eq!(check_register(&ok, rw), Vec::<String>::new());
        let bad = numbered(vec![
            op(1, 10, Shared, Enter, 0),
            op(3, 12, Exclusive, Read, 0),
            op(1, 10, Shared, Read, 0),
            op(3, 12, Exclusive, Write, 1),
        ]);
        let v = check_register(&bad, rw);
        assert!(v.iter().any(|v| v.starts_with("overlap")), "{v:?}");
    }

    #[test]
    fn more_lease_holders_than_leases_are_caught() {
        let two = Rules {
            shared_limit: 2,
            counter: false,
        };
        // A holder is in from its first to its last accepted operation (its leave).
        let ops = numbered(vec![
            op(1, 10, Shared, Enter, 0),
            op(2, 11, Shared, Enter, 0),
            op(3, 12, Shared, Enter, 0),
            op(1, 10, Shared, Leave, 0),
            op(2, 11, Shared, Leave, 0),
            op(3, 12, Shared, Leave, 0),
        ]);
        let v = check_register(&ops, two);
        assert!(v.iter().any(|v| v.starts_with("holder limit")), "{v:?}");
        let fine = numbered(vec![
            op(1, 10, Shared, Enter, 0),
            op(2, 11, Shared, Enter, 0),
            op(1, 10, Shared, Leave, 0),
            op(3, 12, Shared, Enter, 0),
            op(2, 11, Shared, Leave, 0),
            op(3, 12, Shared, Leave, 0),
        ]);
        assert_eq!(check_register(&fine, two), Vec::<String>::new());
    }

    #[test]
    fn passing_a_barrier_early_is_caught() {
        let arrive = |client, launch| op(client, 5, Shared, Arrive, launch);
        let pass = |client| op(client, 5, Shared, Pass, 0);
        // A participant killed after arriving still counts: its node counts until its session ends.
        let ok = numbered(vec![arrive(1, 1), arrive(2, 1), arrive(1, 2), pass(2), pass(1)]);
        assert_eq!(check_barrier(&ok, 3), Vec::<String>::new());
        let early = numbered(vec![arrive(1, 1), arrive(2, 1), pass(2), arrive(3, 1), pass(1)]);
        let v = check_barrier(&early, 3);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("only 2 of 3"), "{v:?}");
    }

    #[test]
    fn lost_and_doubled_queue_items_are_caught() {
        let ok = numbered(vec![
            op(1, 7, Shared, Put, 0),
            op(2, 7, Shared, Take, 0),
            op(3, 7, Shared, Take, 0), // redelivered after consumer 2 died before completing
            op(3, 7, Shared, Done, 0),
        ]);
        assert_eq!(check_queue(&ok), Vec::<String>::new());
        let bad = numbered(vec![
            op(1, 7, Shared, Put, 0),
            op(1, 8, Shared, Put, 0),
            op(2, 7, Shared, Take, 0),
            op(2, 7, Shared, Done, 0),
            op(3, 7, Shared, Take, 0),
            op(3, 7, Shared, Done, 0),
        ]);
        let v = check_queue(&bad);
        assert!(v.iter().any(|v| v.contains("never taken")), "{v:?}");
        assert!(v.iter().any(|v| v.contains("delivered twice")), "{v:?}");
    }

    #[test]
    fn overlapping_commands_are_caught() {
        let iv = |name: &str, begin: u64, last: u64| Interval {
            name: name.into(),
            token: begin as i64,
            begin_ns: begin,
            last_ns: last,
            finished: true,
        };
        assert!(check_intervals(&[iv("a", 0, 10), iv("b", 11, 20), iv("c", 25, 30)]).is_empty());
        let v = check_intervals(&[iv("a", 0, 10), iv("b", 11, 40), iv("c", 25, 30)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("c (token 25) began"), "{v:?}");
    }

    #[test]
    fn recovery_needs_a_new_section_within_the_bound() {
        let ops = numbered(vec![
            op(1, 10, Exclusive, Read, 0),
            op(1, 10, Exclusive, Write, 1), // at 2 ms: the old section, not a recovery
            op(2, 12, Exclusive, Read, 1),  // at 3 ms
        ]);
        assert_eq!(check_recovery(&ops, 1_500_000, 5_000_000), Ok(1_500_000));
        assert!(check_recovery(&ops, 1_500_000, 1_000_000).is_err());
        assert!(check_recovery(&ops, 3_500_000, 1_000_000).is_err());
    }
}
