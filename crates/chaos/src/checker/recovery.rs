//! Liveness: a new critical section soon after the last fault healed.

use super::Violation;
use crate::history::{Action, Op};

/// Checks liveness: after the last fault healed (at `healed_ns`), a new critical section began within `bound_ns`.
/// Returns the recovery time in ns, or the violation.
pub fn check_recovery(ops: &[Op], healed_ns: u64, bound_ns: u64) -> Result<u64, Violation> {
    let mut seen_before: std::collections::HashSet<(u32, i64)> = std::collections::HashSet::new();
    // Arriving at a barrier, giving up and leaving are not acquisitions; nor is beginning an increment or a look,
    // an unknown outcome, or reading the final count.
    let acquiring = |op: &&Op| {
        !matches!(
            op.action,
            Action::Arrive
                | Action::Abandon
                | Action::Left
                | Action::Add
                | Action::Unsure
                | Action::Final
                | Action::Seek
                | Action::Miss
                | Action::Part
                | Action::Look
                | Action::Seen
                | Action::View
                | Action::Begin
                | Action::Vote
        )
    };
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
    use crate::checker::testing::*;

    #[test]
    fn recovery_needs_a_new_section_within_the_bound() {
        let ops = numbered(vec![
            read(1, 10, 0),
            write(1, 10, 1), // at 2 ms: the old section, not a recovery
            read(2, 12, 1),  // at 3 ms
        ]);
        assert_eq!(check_recovery(&ops, 1_500_000, 5_000_000), Ok(1_500_000));
        assert!(check_recovery(&ops, 1_500_000, 1_000_000).is_err());
        assert!(check_recovery(&ops, 3_500_000, 1_000_000).is_err());
    }
}
