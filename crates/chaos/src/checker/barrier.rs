//! The double barrier's history.

use std::collections::HashMap;

use super::Violation;
use crate::history::{Action, Op};

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

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;
    use crate::checker::testing::*;

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
}
