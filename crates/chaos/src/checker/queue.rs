//! The queue's history (`take_safe` consumers).

use std::collections::BTreeMap;

use super::Violation;
use crate::history::{Action, Op};

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

#[cfg(test)]
mod tests {
    //! Every rule is shown to catch a violation (negative controls) and to pass a correct history.
    use super::*;
    use crate::checker::testing::*;

    #[test]
    fn lost_and_doubled_queue_items_are_caught() {
        let put = |client, item| op(client, item, Shared, Put, 0);
        let take = |client, item| op(client, item, Shared, Take, 0);
        let done = |client, item| op(client, item, Shared, Done, 0);
        let ok = numbered(vec![
            put(1, 7),
            take(2, 7),
            take(3, 7), // redelivered after consumer 2 died before completing
            done(3, 7),
        ]);
        assert_eq!(check_queue(&ok), Vec::<String>::new());
        let bad = numbered(vec![
            put(1, 7),
            put(1, 8),
            take(2, 7),
            done(2, 7),
            take(3, 7),
            done(3, 7),
        ]);
        let v = check_queue(&bad);
        assert!(v.iter().any(|v| v.contains("never taken")), "{v:?}");
        assert!(v.iter().any(|v| v.contains("delivered twice")), "{v:?}");
    }
}
