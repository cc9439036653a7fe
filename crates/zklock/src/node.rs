//! Queue node names: how we name our nodes and how we recognise everybody else's.
//!
//! Our nodes use Apache Curator's format, `_c_<uuid>-<marker><sequence>`, so that Java services using Curator's
//! recipes share a lock with us. The uuid is what lets a contender find its own node again after a create whose
//! reply was lost. Ordering is by the sequence number only — never by the rest of the name (the old ZooKeeper
//! `WriteLock` recipe also compared prefixes, which mis-orders nodes of different sessions).
//!
//! kazoo names its nodes `<32 hex>__lock__<sequence>` (`__rlock__` for read locks); recipes can be told to treat
//! those as contenders too.

/// The kind of contender a node represents, read from the marker in its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    /// Curator `InterProcessMutex` / zklock `Mutex`: `_c_<uuid>-lock-<seq>`.
    Lock,
    /// Curator read/write lock, read side: `_c_<uuid>-__READ__<seq>`.
    Read,
    /// Curator read/write lock, write side: `_c_<uuid>-__WRIT__<seq>`.
    Write,
    /// Curator `LeaderLatch` / zklock `LeaderElection`: `_c_<uuid>-latch-<seq>`.
    Latch,
    /// Curator semaphore lease: `_c_<uuid>-lease-<seq>`.
    Lease,
    /// kazoo `Lock`: `<hex>__lock__<seq>`.
    KazooLock,
    /// kazoo `ReadLock`: `<hex>__rlock__<seq>`.
    KazooRead,
}

impl Marker {
    /// The text that precedes the sequence number in a node name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Marker::Lock => "lock-",
            Marker::Read => "__READ__",
            Marker::Write => "__WRIT__",
            Marker::Latch => "latch-",
            Marker::Lease => "lease-",
            Marker::KazooLock => "__lock__",
            Marker::KazooRead => "__rlock__",
        }
    }

    const ALL: [Marker; 7] = [
        Marker::Read,
        Marker::Write,
        Marker::KazooLock,
        Marker::KazooRead,
        Marker::Lock,
        Marker::Latch,
        Marker::Lease,
    ];
}

/// A child of a queue directory that we recognise as a contender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contender {
    /// The child's name (not the full path).
    pub name: String,
    /// The sequence number ZooKeeper appended.
    pub sequence: i64,
    /// What kind of contender it is.
    pub marker: Marker,
}

/// The unique prefix of one of our nodes: `_c_<uuid>-`.
pub fn unique_prefix(uuid: &uuid::Uuid) -> String {
    format!("_c_{uuid}-")
}

/// Reads a child name; `None` if it is not a contender node of any known format.
///
/// The sequence is the run of digits (with an optional minus sign: ZooKeeper's int32 counter wraps) after the
/// last known marker, and it must end the name.
pub fn parse(name: &str) -> Option<Contender> {
    let (marker, at) = Marker::ALL
        .iter()
        .filter_map(|m| name.rfind(m.as_str()).map(|at| (*m, at + m.as_str().len())))
        .max_by_key(|(m, at)| (*at, m.as_str().len()))?;
    let digits = &name[at..];
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let sequence = digits.parse().ok()?;
    Some(Contender {
        name: name.to_owned(),
        sequence,
        marker,
    })
}

/// Parses the children, keeps those `keep` accepts, and sorts them by sequence number.
///
/// ZooKeeper's per-directory counter is an int32 that wraps from 2147483647 to -2147483648 (after 2^31 creates
/// in one directory: weeks at a thousand acquisitions a second). When the live contenders straddle the wrap —
/// some above 2^30, some below -2^30 — the negative ones came later and sort after the positive ones. That is
/// right as long as the live contenders span fewer than 2^31 numbers, which they always do.
pub fn sorted_contenders(children: Vec<String>, keep: impl Fn(Marker) -> bool) -> Vec<Contender> {
    let mut queue: Vec<Contender> = children
        .iter()
        .filter_map(|name| parse(name))
        .filter(|c| keep(c.marker))
        .collect();
    const QUARTER: i64 = 1 << 30;
    let wrapped = queue.iter().any(|c| c.sequence < -QUARTER) && queue.iter().any(|c| c.sequence > QUARTER);
    let key = |c: &Contender| {
        if wrapped && c.sequence < 0 {
            c.sequence + (1 << 32)
        } else {
            c.sequence
        }
    };
    queue.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name)));
    queue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_curator_and_kazoo_names() {
        let c = parse("_c_0d9a4b8e-6f7a-4f2e-9a4b-2b1c3d4e5f60-lock-0000000042").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::Lock, 42));
        let c = parse("_c_0d9a4b8e-6f7a-4f2e-9a4b-2b1c3d4e5f60-__READ__0000000007").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::Read, 7));
        let c = parse("_c_0d9a4b8e-6f7a-4f2e-9a4b-2b1c3d4e5f60-__WRIT__0000000008").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::Write, 8));
        let c = parse("1f0e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000003").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::KazooLock, 3));
        let c = parse("1f0e2d3c4b5a69788796a5b4c3d2e1f0__rlock__0000000004").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::KazooRead, 4));
        let c = parse("_c_x-latch--000000001").unwrap();
        assert_eq!((c.marker, c.sequence), (Marker::Latch, -1));
    }

    #[test]
    fn rejects_non_contenders() {
        assert_eq!(parse("leases"), None);
        assert_eq!(parse("_c_x-lock-"), None);
        assert_eq!(parse("_c_x-lock-12ab"), None);
        assert_eq!(parse("qn-0000000001"), None);
    }

    #[test]
    fn orders_across_the_int32_wrap() {
        let names = vec![
            "_c_a-lock--2147483648".to_string(), // created after the wrap
            "_c_b-lock-2147483646".to_string(),
            "_c_c-lock-2147483647".to_string(),
            "_c_d-lock--2147483647".to_string(),
        ];
        let order: Vec<i64> = sorted_contenders(names, |_| true)
            .iter()
            .map(|c| c.sequence)
            .collect();
        assert_eq!(order, vec![2147483646, 2147483647, -2147483648, -2147483647]);
    }

    #[test]
    fn orders_by_sequence_only() {
        let names = vec![
            "_c_ffff-lock-0000000003".to_string(),
            "_c_0000-lock-0000000010".to_string(),
            "zzzz__lock__0000000001".to_string(),
            "not-a-contender".to_string(),
        ];
        let all = sorted_contenders(names.clone(), |_| true);
        let seqs: Vec<i64> = all.iter().map(|c| c.sequence).collect();
        assert_eq!(seqs, vec![1, 3, 10]);
        let curator_only = sorted_contenders(names, |m| m == Marker::Lock);
        assert_eq!(curator_only.len(), 2);
    }
}
