//! How a queue names its items and the directories beside them: the FIFO queue's `qn-` items, the layouts a
//! [`Queue`](crate::Queue) and a [`PriorityQueue`](crate::PriorityQueue) differ in, and the `claims` and `receipts`
//! directories.

/// The prefix of every item node of a FIFO queue.
pub(crate) const ITEM_PREFIX: &str = "qn-";
/// The child directory holding the claims of `take_safe`.
pub(crate) const CLAIMS: &str = "claims";
/// The child directory holding the receipts of puts whose outcome is not settled yet (see [`Queue::put`]).
pub(crate) const RECEIPTS: &str = "receipts";

/// A delay queue's claims and receipts directories. Curator's delay queue sorts every child of the queue by the
/// due time between the last two `|` of its name (0 without) and waits for the first one's: as `claims` or
/// `receipts` (due at once) they would come first, and a Curator consumer would no longer wake for the next item's
/// due time. Due in the year 10889 they come last.
const DELAY_CLAIMS: &str = "claims|FFFFFFFFFFFF|";
const DELAY_RECEIPTS: &str = "receipts|FFFFFFFFFFFF|";

/// How a queue names, orders and encodes its items: the one thing in which a [`Queue`] and a
/// [`PriorityQueue`](crate::PriorityQueue) differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `qn-<id>-<sequence>`, lowest sequence first; the data as given.
    Fifo,
    /// Curator's `queue-<priority><sequence>`, lowest priority number first and FIFO within a priority; the data
    /// in Curator's envelope (see `recipes/queues/priority.rs`).
    Priority,
    /// Curator's delay queue, `queue-|<due>|<sequence>`: earliest due first, none taken before its due time; the
    /// data in Curator's envelope (see `recipes/queues/delay.rs`).
    Delay,
}

impl Layout {
    /// An item's place in the queue — (priority, sequence), lowest first — or `None` for a child that is no item
    /// of this layout.
    pub(crate) fn key(self, name: &str) -> Option<(i64, i64)> {
        match self {
            Layout::Fifo => item_sequence(name).map(|seq| (0, seq)),
            Layout::Priority => crate::recipes::queues::curator::item_key(name)
                .map(|(priority, seq)| (i64::from(priority), seq)),
            Layout::Delay => {
                let rest = name.strip_prefix(crate::recipes::queues::curator::ITEM_PREFIX)?;
                let digits = rest.get(rest.len().checked_sub(10)?..)?;
                let seq = digits
                    .parse()
                    .ok()
                    .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))?;
                Some((i64::try_from(due_of(name)).unwrap_or(i64::MAX), seq))
            }
        }
    }

    /// The child directory of the claims of `take_safe`.
    pub(crate) fn claims(self) -> &'static str {
        match self {
            Layout::Delay => DELAY_CLAIMS,
            Layout::Fifo | Layout::Priority => CLAIMS,
        }
    }

    /// The child directory of the receipts of puts whose outcome is not settled yet.
    pub(crate) fn receipts(self) -> &'static str {
        match self {
            Layout::Delay => DELAY_RECEIPTS,
            Layout::Fifo | Layout::Priority => RECEIPTS,
        }
    }

    /// The epoch millisecond before which the item `name` may not be taken: 0 (at once) but in a delay queue.
    pub(crate) fn due(self, name: &str) -> u64 {
        match self {
            Layout::Delay => due_of(name),
            Layout::Fifo | Layout::Priority => 0,
        }
    }

    /// The data a consumer gets from an item node's data.
    pub(crate) fn decode(self, data: Vec<u8>) -> Vec<u8> {
        match self {
            Layout::Fifo => data,
            Layout::Priority | Layout::Delay => crate::recipes::queues::curator::open_envelope(data),
        }
    }
}

/// The due time of the delay queue item `name`: the hexadecimal between its last two `|` (Curator's `getEpoch`),
/// 0 without.
pub(crate) fn due_of(name: &str) -> u64 {
    let Some((head, _)) = name.rsplit_once('|') else {
        return 0;
    };
    head.rsplit_once('|')
        .filter(|(before, _)| !before.is_empty())
        .and_then(|(_, hex)| u64::from_str_radix(hex, 16).ok())
        .unwrap_or(0)
}

/// The epoch millisecond now, by this process's clock.
pub(crate) fn millis_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The sequence number of a FIFO queue item; `None` for children that are not items.
pub(crate) fn item_sequence(name: &str) -> Option<i64> {
    let rest = name.strip_prefix(ITEM_PREFIX)?;
    let start = rest.rfind(|c: char| !c.is_ascii_digit()).map_or(0, |at| at + 1);
    let digits = &rest[start..];
    if digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// The items of `layout` among `children`, first out first.
pub(crate) fn sorted_items(children: Vec<String>, layout: Layout) -> Vec<String> {
    let mut items: Vec<((i64, i64), String)> = children
        .into_iter()
        .filter_map(|name| layout.key(&name).map(|key| (key, name)))
        .collect();
    items.sort();
    items.into_iter().map(|(_, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_recognised_and_ordered_by_sequence() {
        assert_eq!(item_sequence("qn-0000000012"), Some(12));
        assert_eq!(
            item_sequence("qn-0f1e2d3c4b5a69788796a5b4c3d2e1f0-0000000003"),
            Some(3)
        );
        assert_eq!(item_sequence("claims"), None);
        assert_eq!(Layout::Delay.key(DELAY_CLAIMS), None);
        assert_eq!(Layout::Delay.key(DELAY_RECEIPTS), None);
        assert_eq!(
            due_of(DELAY_CLAIMS),
            0xFFFF_FFFF_FFFF,
            "after every item, for Curator's consumers"
        );
        assert_eq!(
            Layout::Delay.key("queue-|18BCFE56800|0000000007"),
            Some((1_700_000_000_000, 7))
        );
        assert_eq!(Layout::Delay.key("queue-0000000007"), Some((0, 7)));
        assert_eq!(item_sequence("qn-"), None);
        assert_eq!(item_sequence("qn-abc"), None);
        let sorted = sorted_items(
            vec![
                "qn-ffff-0000000010".into(),
                "claims".into(),
                "qn-0000000002".into(),
                "qn-aaaa-0000000007".into(),
                "queue-1000000000000000001".into(),
            ],
            Layout::Fifo,
        );
        assert_eq!(
            sorted,
            vec!["qn-0000000002", "qn-aaaa-0000000007", "qn-ffff-0000000010"]
        );
    }

    #[test]
    fn priority_items_come_by_priority_then_sequence() {
        let sorted = sorted_items(
            vec![
                "queue-1000000050000000001".into(), // priority 5
                "queue-0FFFFFFFF0000000004".into(), // priority -1
                "queue-1000000010000000003".into(), // priority 1, later
                "qn-0000000000".into(),
                "receipts".into(),
                "queue-1000000010000000002".into(), // priority 1, earlier
                "queue-0800000000000000009".into(), // priority i32::MIN
            ],
            Layout::Priority,
        );
        assert_eq!(
            sorted,
            vec![
                "queue-0800000000000000009",
                "queue-0FFFFFFFF0000000004",
                "queue-1000000010000000002",
                "queue-1000000010000000003",
                "queue-1000000050000000001",
            ]
        );
        // The same order as Curator's: it sorts the names as strings.
        let mut by_name = sorted.clone();
        by_name.sort();
        assert_eq!(by_name, sorted);
    }
}
