//! The `AtomicLong` counter's history.

use std::collections::{BTreeMap, HashMap};

use super::Violation;
use crate::history::{Action, Op};

/// Checks a counter's history (`AtomicLong::increment` by every contender, the value read at the end): the
/// final value lies between the acknowledged increments and the attempted ones (an increment whose outcome is
/// unknown — failed, timed out, or its process killed — may count or not, never twice); no two acknowledged
/// increments made the same value; and an increment that began after another was acknowledged made a larger value
/// (the counter is linearizable).
pub fn check_counter(ops: &[Op]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut attempted: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut made: BTreeMap<i64, i64> = BTreeMap::new(); // value -> the increment that made it
    let mut highest_acknowledged: Option<(i64, i64)> = None; // (value, increment) acknowledged so far
    let mut floor_at_start: HashMap<i64, (i64, i64)> = HashMap::new(); // increment -> highest acknowledged then
    let mut acknowledged = 0i64;
    let mut final_value = None;
    for op in ops {
        match op.action {
            Action::Add => {
                attempted.insert(op.token);
                if let Some(floor) = highest_acknowledged {
                    floor_at_start.insert(op.token, floor);
                }
            }
            Action::Added => {
                acknowledged += 1;
                if !attempted.contains(&op.token) {
                    violations.push(format!(
                        "counter: increment {:#x} acknowledged but never begun",
                        op.token
                    ));
                }
                if let Some(other) = made.insert(op.value, op.token) {
                    violations.push(format!(
                        "counter: increments {other:#x} and {:#x} were both acknowledged as making {}: one of them \
                         was lost",
                        op.token, op.value
                    ));
                }
                if let Some(&(floor, before)) = floor_at_start.get(&op.token) {
                    if op.value <= floor {
                        violations.push(format!(
                            "counter: increment {:#x} began after {before:#x} was acknowledged as making {floor}, \
                             but made {}",
                            op.token, op.value
                        ));
                    }
                }
                if highest_acknowledged.is_none_or(|(value, _)| op.value > value) {
                    highest_acknowledged = Some((op.value, op.token));
                }
            }
            Action::Final => final_value = Some(op.value),
            _ => {}
        }
    }
    let Some(value) = final_value else {
        violations.push("counter: its final value was never read".to_owned());
        return violations;
    };
    let attempts = attempted.len() as i64;
    if value < acknowledged {
        violations.push(format!(
            "counter: final value {value} but {acknowledged} increments were acknowledged: increments were lost"
        ));
    }
    if value > attempts {
        violations.push(format!(
            "counter: final value {value} but only {attempts} increments were attempted: one counted twice"
        ));
    }
    if let Some((&highest, &increment)) = made.iter().next_back() {
        if highest > value {
            violations.push(format!(
                "counter: increment {increment:#x} was acknowledged as making {highest}, above the final {value}"
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

    #[test]
    fn lost_and_doubled_increments_are_caught() {
        let add = |client, id| op(client, id, Shared, Add, 0);
        let added = |client, id, value| op(client, id, Shared, Added, value);
        let last = |value| op(u32::MAX, 0, Shared, Final, value);
        // Increment 3 failed (outcome unknown) and did happen: the final value may count it.
        let ok = numbered(vec![
            add(1, 1),
            add(2, 2),
            added(2, 2, 1),
            added(1, 1, 2),
            add(1, 3),
            op(1, 3, Shared, Unsure, 0),
            add(2, 4),
            added(2, 4, 4),
            last(4),
        ]);
        assert_eq!(check_counter(&ok), Vec::<String>::new());
        // Broken histories, and what the checker must say of each.
        let broken = [
            // Two increments that both made 1 (a lost update), and a final value below the acknowledged count.
            (
                vec![add(1, 1), add(2, 2), added(1, 1, 1), added(2, 2, 1), last(1)],
                &["both acknowledged", "were lost"][..],
            ),
            // One increment, counted twice.
            (vec![add(1, 1), added(1, 1, 1), last(2)], &["counted twice"]),
            // An increment begun after another's acknowledgement made a smaller value.
            (
                vec![
                    add(1, 1),
                    add(2, 2),
                    added(2, 2, 2),
                    add(3, 3),
                    added(3, 3, 1),
                    added(1, 1, 3),
                    last(3),
                ],
                &["began after"],
            ),
            // Its final value never read.
            (vec![add(1, 1)], &["never read"]),
        ];
        for (history, says) in broken {
            let v = check_counter(&numbered(history));
            for what in says {
                assert!(v.iter().any(|v| v.contains(what)), "{what}: {v:?}");
            }
        }
    }
}
