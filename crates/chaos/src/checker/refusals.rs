//! The fence's refusals: each one explained by a fault.

use super::Violation;
use crate::history::{Action, Op};

/// Checks that every refusal of the fence has a fault to explain it: `explained` holds the stretches of time
/// (`CLOCK_MONOTONIC` ns, inclusive) from each fault's start to its heal plus the time its victims need to learn
/// they lost their lock. The fence keeps the counter right even when two contenders hold the lock at once — the
/// older one's operations are refused — so the other rules cannot see such an overlap; but a holder refused with
/// no fault in progress was a second holder at once: the lock itself failed.
pub fn check_refusals(ops: &[Op], explained: &[(u64, u64)]) -> Vec<Violation> {
    ops.iter()
        .filter(|op| !op.accepted)
        .filter(|op| {
            matches!(
                op.action,
                Action::Read | Action::Write | Action::Enter | Action::Leave
            )
        })
        .filter(|op| {
            !explained
                .iter()
                .any(|&(from, to)| (from..=to).contains(&op.at_ns))
        })
        .map(|op| {
            format!(
                "fenced out with no fault: op {} ({}) of client {} with token {} refused with no fault in \
                 progress: it held the lock together with a newer holder",
                op.seq, op.action, op.client, op.token
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;
    use crate::checker::check_register;
    use crate::checker::testing::*;

    #[test]
    fn refusals_with_no_fault_are_caught() {
        let ops = numbered(vec![
            read(1, 10, 0),           // at 1 ms
            read(2, 12, 0),           // at 2 ms: a newer holder while 1 is inside
            refused(write(1, 10, 1)), // at 3 ms
            write(2, 12, 1),
        ]);
        assert!(
            check_register(&ops, MUTEX).is_empty(),
            "the fence hid the overlap from the other rules"
        );
        assert!(
            check_refusals(&ops, &[(2_500_000, 3_000_000)]).is_empty(),
            "a fault's victim"
        );
        let v = check_refusals(&ops, &[(0, 2_900_000), (3_100_000, 9_000_000)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("client 1 with token 10"), "{v:?}");
    }
}
