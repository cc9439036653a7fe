//! What a queue directory shows: its items, claimed ones among them, and a priority queue's items per priority.

use crate::base::error::Result;
use crate::base::path::child_path;
use crate::inspect::view::Recipe;
use crate::recipes::queues::layout::{item_sequence, CLAIMS, RECEIPTS};
use crate::session::Session;

/// What [`inspect`](crate::inspect()) shows of a queue directory (items, `claims` or `receipts` among its
/// `children`): a priority queue if any child is a priority item, else a FIFO queue; how many items, how many of
/// them are claimed, and a priority queue's items per priority (first out first).
pub(crate) async fn queue(
    session: &Session,
    path: &str,
    children: &[String],
) -> Result<Option<(Recipe, Vec<(i32, usize)>)>> {
    let priorities: Vec<i32> = children
        .iter()
        .filter_map(|name| {
            let curator = crate::recipes::queues::curator::item_key(name).map(|(priority, _)| priority);
            curator.or_else(|| kazoo_priority(name))
        })
        .collect();
    let fifo_items = children
        .iter()
        .filter(|name| item_sequence(name).is_some())
        .count();
    let has_claims = children.iter().any(|name| name == CLAIMS);
    let has_receipts = children.iter().any(|name| name == RECEIPTS);
    if priorities.is_empty() && fifo_items == 0 && !has_claims && !has_receipts {
        return Ok(None);
    }
    let claimed = if has_claims {
        let claims_dir = child_path(path, CLAIMS);
        session.list_or_empty(&claims_dir).await?.len()
    } else {
        0
    };
    if priorities.is_empty() {
        return Ok(Some((
            Recipe::Queue {
                items: fifo_items,
                claimed,
            },
            Vec::new(),
        )));
    }
    let mut per_priority = std::collections::BTreeMap::<i32, usize>::new();
    for priority in &priorities {
        *per_priority.entry(*priority).or_default() += 1;
    }
    Ok(Some((
        Recipe::PriorityQueue {
            items: priorities.len(),
            claimed,
        },
        per_priority.into_iter().collect(),
    )))
}

/// The priority of an item of kazoo's `Queue`: `entry-<priority, 3 digits>-<sequence>`, lowest first out.
fn kazoo_priority(name: &str) -> Option<i32> {
    let (priority, sequence) = name.strip_prefix("entry-")?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(priority) && digits(sequence))
        .then(|| priority.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    #[test]
    fn kazoo_queue_entries() {
        assert_eq!(super::kazoo_priority("entry-100-0000000007"), Some(100));
        assert_eq!(super::kazoo_priority("entry-000-0000000000"), Some(0));
        assert_eq!(super::kazoo_priority("entry-1a0-0000000007"), None);
        assert_eq!(super::kazoo_priority("entry-100"), None);
        assert_eq!(super::kazoo_priority("item-0000000001"), None);
    }
}
