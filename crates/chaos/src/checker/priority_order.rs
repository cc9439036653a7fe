//! The priority queue's order.

use std::collections::{BTreeMap, HashMap};

use super::Violation;
use crate::history::{Action, Op};

/// One look of a priority-queue consumer for an item (`seek` to its `take` or `miss`), as the register saw it.
#[derive(Debug, Clone, Copy)]
struct Look {
    client: u32,
    /// Position and time of its `seek`.
    seek: usize,
    seek_ns: u64,
    /// Until when a claim made in this look may have lived: its end's time, or — for a look that never ended (its
    /// process was killed) — the contender's next record plus twice the session timeout (by then the dead
    /// session and its claims have expired), or the drain's start.
    until_ns: u64,
    /// What it ended with: the item taken, `None` for a miss.
    took: Option<i64>,
    /// Whether it may have held a claim on another item than the one it took: a failed look, or one that never
    /// ended.
    may_hold_any: bool,
}

/// Checks a priority queue's order: no item is taken while an item with a lower priority number was waiting — put
/// and acknowledged before the taker began looking, never taken before, and not claimable by anybody else during
/// the look. "Anybody else" is every other look that overlapped it and could have held that item: one that took
/// it, or one that failed or never ended (its claims lived until its session did). A look that took another item
/// held no claim on this one: a consumer claims the first free item it finds, and keeps the claim it makes.
///
/// Sound on a single server only: on an ensemble a consumer's server may not have seen an acknowledged put yet.
pub fn check_priority_order(ops: &[Op], session_timeout_ns: u64) -> Vec<Violation> {
    let drain_ns = ops
        .iter()
        .find(|op| op.client == u32::MAX)
        .map_or(u64::MAX, |op| op.at_ns);
    // Every look, in the order they began.
    let mut looks: Vec<Look> = Vec::new();
    let mut open: HashMap<u32, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        // A new record of a contender whose look is still open: that process died in its look (a slot's next
        // process starts only after the last one ended).
        if let Some(&look) = open.get(&op.client) {
            if !matches!(op.action, Action::Take | Action::Miss) {
                let limit = op.at_ns.saturating_add(2 * session_timeout_ns);
                looks[look].until_ns = limit.min(drain_ns);
                open.remove(&op.client);
            }
        }
        match op.action {
            Action::Seek => {
                open.insert(op.client, looks.len());
                looks.push(Look {
                    client: op.client,
                    seek: i,
                    seek_ns: op.at_ns,
                    until_ns: drain_ns,
                    took: None,
                    may_hold_any: true,
                });
            }
            Action::Take | Action::Miss => {
                if let Some(look) = open.remove(&op.client) {
                    looks[look].until_ns = op.at_ns;
                    looks[look].took = (op.action == Action::Take).then_some(op.token);
                    looks[look].may_hold_any = op.action == Action::Miss && op.value != 0;
                }
            }
            _ => {}
        }
    }
    let mut violations = Vec::new();
    let mut waiting: BTreeMap<i64, (i64, usize)> = BTreeMap::new(); // item -> (priority, position of its put)
    let mut taken: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut current: HashMap<u32, usize> = HashMap::new(); // client -> its look in progress
    let mut next_look = 0;
    for (i, op) in ops.iter().enumerate() {
        while next_look < looks.len() && looks[next_look].seek <= i {
            current.insert(looks[next_look].client, next_look);
            next_look += 1;
        }
        match op.action {
            Action::Put if !taken.contains(&op.token) => {
                waiting.insert(op.token, (op.value, i));
            }
            Action::Take => {
                let Some(&me) = current.get(&op.client) else {
                    continue;
                };
                let look = looks[me];
                for (&item, &(priority, put)) in &waiting {
                    if priority >= op.value || put >= look.seek || item == op.token {
                        continue;
                    }
                    let excused = looks.iter().enumerate().any(|(j, other)| {
                        j != me
                            && other.seek_ns < op.at_ns
                            && other.until_ns > look.seek_ns
                            && (other.took == Some(item) || other.may_hold_any)
                    });
                    if !excused {
                        violations.push(format!(
                            "priority order: client {} took item {:#x} (priority {}) while item {item:#x} (priority \
                             {priority}, acknowledged before it began looking) waited unclaimed",
                            op.client, op.token, op.value
                        ));
                    }
                }
                waiting.remove(&op.token);
                taken.insert(op.token);
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
    fn taking_past_a_waiting_item_of_a_lower_priority_number_is_caught() {
        const SESSION: u64 = 1_000_000_000;
        let put = |client, id, priority| op(client, id, Shared, Put, priority);
        let seek = |client| op(client, 0, Shared, Seek, 0);
        let take = |client, id, priority| op(client, id, Shared, Take, priority);
        let miss = |client, failed| op(client, 0, Shared, Miss, failed);
        // Items 1 (priority 0) and 2 (priority 3) wait; client 2 looks twice, and takes `first`, then `second`.
        let in_turn = |first: Op, second: Op| {
            numbered(vec![put(1, 1, 0), put(1, 2, 3), seek(2), first, seek(2), second])
        };
        // Item 1 waits, unclaimed, while client 2 takes item 2.
        let v = check_priority_order(&in_turn(take(2, 2, 3), take(2, 1, 0)), SESSION);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("item 0x2 (priority 3) while item 0x1 (priority 0"),
            "{v:?}"
        );
        // In order: fine. Put after the look began: the taker may not have seen it.
        let ok = in_turn(take(2, 1, 0), take(2, 2, 3));
        assert_eq!(check_priority_order(&ok, SESSION), Vec::<String>::new());
        let late = numbered(vec![put(1, 2, 3), seek(2), put(1, 1, 0), take(2, 2, 3)]);
        assert_eq!(check_priority_order(&late, SESSION), Vec::<String>::new());
        // Client 3 claimed item 1 meanwhile (it took it), or failed, or died in its look: excused.
        for other in [
            vec![seek(3), take(3, 1, 0)],
            vec![seek(3), miss(3, 1)],
            vec![seek(3)],
        ] {
            let mut ops = vec![put(1, 1, 0), put(1, 2, 3), seek(2)];
            ops.insert(2, other[0]);
            ops.push(take(2, 2, 3));
            ops.extend(other[1..].iter().copied());
            let ops = numbered(ops);
            assert_eq!(
                check_priority_order(&ops, SESSION),
                Vec::<String>::new(),
                "{ops:?}"
            );
        }
        // A look that took another item, or found nothing free, held no claim on item 1: not excused.
        for other in [vec![seek(3), take(3, 5, 1)], vec![seek(3), miss(3, 0)]] {
            let mut ops = vec![put(1, 1, 0), put(1, 2, 3), put(1, 5, 1)];
            ops.extend([other[0], seek(2), other[1], take(2, 2, 3)]);
            let v = check_priority_order(&numbered(ops), SESSION);
            assert!(v.iter().any(|v| v.contains("item 0x1")), "{v:?}");
        }
        // A contender that died in its look (its slot's next process speaks while the look is open) is excused
        // only until twice the session timeout after that.
        let at = |op: Op, at_ns: u64| Op {
            at_ns,
            seq: at_ns,
            ..op
        };
        let died = numbered(vec![put(1, 1, 0), put(1, 2, 3), seek(3), put(3, 9, 2)]);
        let spoke = died[3].at_ns;
        let mut within = died.clone();
        within.push(at(seek(2), spoke + 1));
        within.push(at(take(2, 2, 3), spoke + 3 * SESSION));
        assert_eq!(check_priority_order(&within, SESSION), Vec::<String>::new());
        let mut after = died;
        after.push(at(seek(2), spoke + 2 * SESSION + 1));
        after.push(at(take(2, 2, 3), spoke + 3 * SESSION));
        let v = check_priority_order(&after, SESSION);
        assert!(v.iter().any(|v| v.contains("item 0x1")), "{v:?}");
    }
}
