//! What the counting proxy saw ([`Counters`]): notifications, bytes to the clients and requests, by kind, as
//! differences over a window.

use zklock_testkit::{opcode, Proxy};

/// Counters of the proxy (differences over a window).
#[derive(Debug, Clone, Default)]
pub(super) struct Counters {
    pub(super) notifications: u64,
    pub(super) bytes: u64,
    pub(super) requests: u64,
    /// Requests by kind (`opcode_name`).
    pub(super) by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Notifications by event type (`event_name`).
    pub(super) by_type: std::collections::BTreeMap<&'static str, u64>,
}

/// The request kinds a lock sends, by name (the rest are counted as `other`).
fn opcode_name(op: i32) -> &'static str {
    match op {
        opcode::CREATE | opcode::CREATE2 => "create",
        opcode::DELETE => "delete",
        opcode::EXISTS => "exists",
        opcode::GET_DATA => "getData",
        opcode::GET_CHILDREN | opcode::GET_CHILDREN2 => "getChildren",
        opcode::SYNC => "sync",
        opcode::MULTI => "multi",
        opcode::CHECK_WATCHES | opcode::REMOVE_WATCHES => "removeWatches",
        _ => "other",
    }
}

/// The watch event types a notification carries (`WatcherEvent.type`), by name.
const EVENT_TYPES: &[(i32, &str)] = &[
    (-1, "session"),
    (1, "NodeCreated"),
    (2, "NodeDeleted"),
    (3, "NodeDataChanged"),
    (4, "NodeChildrenChanged"),
];

/// Every request opcode but ping: creates, deletes, reads, watches, multi, sync, closeSession.
const REQUEST_OPCODES: &[i32] = &[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 101, 102, 103, 104, 105, 106, -11,
];

pub(super) fn counters(proxy: Option<&Proxy>) -> Counters {
    let Some(proxy) = proxy else {
        return Counters::default();
    };
    debug_assert!(!REQUEST_OPCODES.contains(&opcode::PING));
    Counters {
        notifications: proxy.notifications(),
        bytes: proxy.bytes_to_clients(),
        requests: REQUEST_OPCODES.iter().map(|&op| proxy.requests(op)).sum(),
        by_kind: REQUEST_OPCODES.iter().fold(Default::default(), |mut kinds, &op| {
            *kinds.entry(opcode_name(op)).or_default() += proxy.requests(op);
            kinds
        }),
        by_type: EVENT_TYPES
            .iter()
            .map(|&(event, name)| (name, proxy.notifications_of(event)))
            .collect(),
    }
}

/// `after − before` of each kind, the kinds that moved only.
fn difference(
    after: &std::collections::BTreeMap<&'static str, u64>,
    before: &std::collections::BTreeMap<&'static str, u64>,
) -> std::collections::BTreeMap<&'static str, u64> {
    after
        .iter()
        .map(|(&kind, &n)| (kind, n.saturating_sub(before.get(kind).copied().unwrap_or(0))))
        .filter(|&(_, n)| n > 0)
        .collect()
}

impl std::ops::Sub for Counters {
    type Output = Counters;
    fn sub(self, before: Counters) -> Counters {
        Counters {
            notifications: self.notifications.saturating_sub(before.notifications),
            bytes: self.bytes.saturating_sub(before.bytes),
            requests: self.requests.saturating_sub(before.requests),
            by_kind: difference(&self.by_kind, &before.by_kind),
            by_type: difference(&self.by_type, &before.by_type),
        }
    }
}
