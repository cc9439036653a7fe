//! The fenced register's history: fencing order, no overlapping critical sections, the holder limit, the counter.

use std::collections::{BTreeMap, HashMap};

use super::Violation;
use crate::history::{Action, Kind, Op};

/// What the history must satisfy.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// How many shared holders may be in at once (`usize::MAX`: any number of readers).
    pub shared_limit: usize,
    /// Whether writes must form one counter without lost updates.
    pub counter: bool,
}

/// One critical section as the resource saw it: the accepted operations of one contender with one token.
#[derive(Debug, Clone, Copy)]
struct Span {
    client: u32,
    token: i64,
    kind: Kind,
    first: usize,
    last: usize,
}

/// Checks the register's history: fencing order, no overlapping critical sections, the holder limit, the counter —
/// each resource (the `partitioner`'s items) on its own.
pub fn check_register(ops: &[Op], rules: Rules) -> Vec<Violation> {
    let mut resources: BTreeMap<u32, Vec<Op>> = BTreeMap::new();
    for op in ops {
        resources.entry(op.key).or_default().push(*op);
    }
    let several = resources.len() > 1 || resources.keys().any(|&key| key != 0);
    let mut violations = Vec::new();
    for (key, ops) in resources {
        let found = check_resource(&ops, rules);
        violations.extend(
            found
                .into_iter()
                .map(|v| if several { format!("item {key}: {v}") } else { v }),
        );
    }
    violations
}

/// [`check_register`] for one resource's operations.
fn check_resource(ops: &[Op], rules: Rules) -> Vec<Violation> {
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

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;
    use crate::checker::testing::*;

    const READ_WRITE: Rules = Rules {
        shared_limit: usize::MAX,
        counter: true,
    };

    const TWO_LEASES: Rules = Rules {
        shared_limit: 2,
        counter: false,
    };

    /// The shared holder `client` (its token: 9 + `client`) enters.
    fn enter(client: u32) -> Op {
        op(client, 9 + i64::from(client), Shared, Enter, 0)
    }

    /// The shared holder `client` (its token: 9 + `client`) leaves.
    fn leave(client: u32) -> Op {
        op(client, 9 + i64::from(client), Shared, Leave, 0)
    }

    #[test]
    fn a_correct_mutex_history_passes() {
        let ops = numbered(vec![
            read(1, 10, 0),
            write(1, 10, 1),
            read(2, 12, 1),
            refused(write(1, 10, 2)),
            write(2, 12, 2),
        ]);
        assert_eq!(check_register(&ops, MUTEX), Vec::<String>::new());
    }

    #[test]
    fn interleaved_sections_lost_updates_and_stale_reads_are_caught() {
        // Broken histories, and the rules each breaks.
        let broken = [
            // What a paused holder does without fencing: it read before the pause and writes after its successor.
            (
                vec![read(1, 10, 0), read(2, 12, 0), write(2, 12, 1), write(1, 10, 1)],
                &["overlap", "lost update", "token order", "counter"][..],
            ),
            (
                vec![read(1, 10, 0), write(1, 10, 1), read(2, 12, 0)],
                &["stale read"],
            ),
        ];
        for (history, rules) in broken {
            let v = check_register(&numbered(history), MUTEX);
            for rule in rules {
                assert!(v.iter().any(|v| v.starts_with(rule)), "{rule}: {v:?}");
            }
        }
    }

    #[test]
    fn readers_may_share_but_not_with_a_writer() {
        let ok = numbered(vec![
            enter(1),
            enter(2),
            op(1, 10, Shared, Read, 0),
            leave(1),
            leave(2),
            read(3, 12, 0),
            write(3, 12, 1),
        ]);
        assert_eq!(check_register(&ok, READ_WRITE), Vec::<String>::new());
        let bad = numbered(vec![
            enter(1),
            read(3, 12, 0),
            op(1, 10, Shared, Read, 0),
            write(3, 12, 1),
        ]);
        let v = check_register(&bad, READ_WRITE);
        assert!(v.iter().any(|v| v.starts_with("overlap")), "{v:?}");
    }

    #[test]
    fn more_lease_holders_than_leases_are_caught() {
        // A holder is in from its first to its last accepted operation (its leave).
        let ops = numbered(vec![enter(1), enter(2), enter(3), leave(1), leave(2), leave(3)]);
        let v = check_register(&ops, TWO_LEASES);
        assert!(v.iter().any(|v| v.starts_with("holder limit")), "{v:?}");
        let fine = numbered(vec![enter(1), enter(2), leave(1), enter(3), leave(2), leave(3)]);
        assert_eq!(check_register(&fine, TWO_LEASES), Vec::<String>::new());
    }

    #[test]
    fn each_item_is_judged_on_its_own() {
        let on = |key, op: Op| Op { key, ..op };
        // Two holders at once, each on its own item, each with its own counter: fine.
        let fine = numbered(vec![
            on(1, read(1, 10, 0)),
            on(2, read(2, 12, 0)),
            on(1, write(1, 10, 1)),
            on(2, write(2, 12, 1)),
        ]);
        assert_eq!(check_register(&fine, MUTEX), Vec::<String>::new());
        // Two holders of one item at once: caught, and named by the item.
        let bad = numbered(vec![
            on(2, read(1, 10, 0)),
            on(2, read(2, 12, 0)),
            on(2, write(2, 12, 1)),
            on(2, write(1, 10, 1)),
        ]);
        let v = check_register(&bad, MUTEX);
        assert!(v.iter().any(|v| v.starts_with("item 2: overlap")), "{v:?}");
    }
}
