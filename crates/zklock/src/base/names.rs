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

    /// Whether a node of this marker and one of `other` may share a queue directory: the one place that decides
    /// who contends with whom on a path, for every recipe (as `Rules::keeps`'s
    /// default) and so for every command. Nodes that share a queue are ordered by sequence number; a node that may
    /// not share it is a conflict (the acquire fails with `Error::InUse`), never ignored.
    ///
    /// kazoo's `__lock__` is the node of kazoo's `Lock`, `WriteLock` and `Election` alike — an exclusive contender
    /// whichever it is — so it queues with our exclusive nodes (mutex, writer, candidate) and with readers. kazoo's
    /// `__rlock__` readers queue with both locks. Curator's read/write nodes do not queue with a mutex's `lock-`
    /// nodes (Curator's read lock never looks at them), nor does an election's `latch-`; a semaphore's leases
    /// live in a directory of their own.
    pub const fn queues_with(self, other: Marker) -> bool {
        use Marker::*;
        match self {
            Lock => matches!(other, Lock | KazooLock | KazooRead),
            Read | Write => matches!(other, Read | Write | KazooLock | KazooRead),
            KazooLock => !matches!(other, Lease),
            KazooRead => !matches!(other, Latch | Lease),
            Latch => matches!(other, Latch | KazooLock),
            Lease => matches!(other, Lease),
        }
    }

    /// Whether this is one of kazoo's markers.
    pub const fn is_kazoo(self) -> bool {
        matches!(self, Marker::KazooLock | Marker::KazooRead)
    }

    /// What a node of this marker is, in words (for `Error::InUse`).
    pub const fn describe(self) -> &'static str {
        match self {
            Marker::Lock => "a mutex (zklock Mutex, Curator InterProcessMutex)",
            Marker::Read => "a read/write lock's reader (zklock RwLock, Curator InterProcessReadWriteLock)",
            Marker::Write => "a read/write lock's writer (zklock RwLock, Curator InterProcessReadWriteLock)",
            Marker::Latch => "a leader election (zklock LeaderElection, Curator LeaderLatch)",
            Marker::Lease => "a semaphore lease (zklock Semaphore, Curator InterProcessSemaphoreV2)",
            Marker::KazooLock => "a kazoo Lock, WriteLock or Election",
            Marker::KazooRead => "a kazoo ReadLock",
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

/// Reads a child name: its marker and sequence number; `None` if it is not a contender node of any known format.
///
/// The sequence is the run of digits (with an optional minus sign: ZooKeeper's int32 counter wraps) after the
/// last known marker, and it must end the name.
///
/// Every look at a queue parses every name in it, so this is where a listing of thousands costs its time: it
/// looks only at the end of the name. No marker ends with a digit, so the last marker of the name can only end
/// where the final run of digits starts (or one byte earlier, before a minus sign); anything else is no contender.
pub(crate) fn parse_parts(name: &str) -> Option<(Marker, i64)> {
    let bytes = name.as_bytes();
    let digits_at = bytes.len() - bytes.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits_at == bytes.len() {
        return None;
    }
    // The marker ending at `at`: no marker ends another, so there is at most one. Compared from the end, byte by
    // byte: most markers differ from the name in the last byte or the one before (a call of `memcmp` per marker
    // was a tenth of a load generator's time, back to back with 5,000 waiters).
    let ending_at = |at: usize| {
        let head = &bytes[..at];
        Marker::ALL.into_iter().find(|m| {
            let marker = m.as_str().as_bytes();
            head.len() >= marker.len() && head.iter().rev().zip(marker.iter().rev()).all(|(a, b)| a == b)
        })
    };
    let (marker, at) = match ending_at(digits_at) {
        Some(marker) => (marker, digits_at),
        None if digits_at > 0 && bytes[digits_at - 1] == b'-' => (ending_at(digits_at - 1)?, digits_at - 1),
        None => return None,
    };
    let digits = &name[at..];
    let unsigned = digits.strip_prefix('-').unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((marker, digits.parse().ok()?))
}

/// A semaphore's child directory of the lease nodes (Curator's `InterProcessSemaphoreV2` layout).
pub const LEASES: &str = "leases";
/// A semaphore's child directory of the mutex that serialises its acquirers (Curator's `lock-` nodes).
pub const LOCKS: &str = "locks";
/// What a semaphore is, in words.
pub const SEMAPHORE: &str =
    "a semaphore (zklock Semaphore, zklock run --leases, Curator InterProcessSemaphoreV2)";

/// Whether a directory whose children are `children` is a semaphore's, given the children of its `leases` and
/// `locks` directories (empty when absent): one of the two is there, they hold nothing but contender nodes, and
/// either some are there or the directory holds nothing else but contender nodes (an idle semaphore stays one).
/// A directory that merely has a child named `locks` — a parent of lock directories, say — is not one.
pub fn is_semaphore(children: &[String], leases: &[String], locks: &[String]) -> bool {
    let is_dir = |c: &String| c == LEASES || c == LOCKS;
    let is_contender = |c: &String| parse_parts(c).is_some();
    let inside = || leases.iter().chain(locks);
    children.iter().any(is_dir)
        && inside().all(is_contender)
        && (inside().next().is_some() || children.iter().all(|c| is_dir(c) || is_contender(c)))
}

/// Children that are no contender of a queue but show that another recipe uses the directory, and which one:
/// a group member (kazoo's `Party` and `ShallowParty`), a kazoo `Semaphore`'s lease (`<32 hex>`), queue items
/// (zklock's and kazoo's `Queue`, Curator's priority queue). (A
/// semaphore's directories are told by their contents: [`is_semaphore`].)
pub fn other_recipe(name: &str) -> Option<&'static str> {
    let hex32 = |s: &str| {
        s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if hex32(name) {
        Some("a kazoo Semaphore (its lease node)")
    } else if name
        .get(..33)
        .is_some_and(|head| hex32(&head[..32]) && head.ends_with('-'))
    {
        Some("a group (zklock Group, kazoo ShallowParty)")
    } else if name.contains("__party__") {
        Some("a group (zklock Group, kazoo Party)")
    } else if name.starts_with("qn-") || name.starts_with("queue-") || name.starts_with("entry-") {
        Some("a queue")
    } else {
        None
    }
}

/// The first child of a queue directory that a contender whose rules keep the markers `keep` accepts cannot share
/// the directory with: a contender node of a marker it does not keep, or another recipe's node
/// ([`other_recipe`]). Returns the child's name and what it is.
pub fn conflict(children: &[String], keep: impl Fn(Marker) -> bool) -> Option<(String, &'static str)> {
    children.iter().find_map(|name| match parse_parts(name) {
        Some((marker, _)) if !keep(marker) => Some((name.clone(), marker.describe())),
        Some(_) => None,
        None => other_recipe(name).map(|what| (name.clone(), what)),
    })
}

/// A child name as a contender (the name moved, not copied), or the name back if it is none.
fn into_contender(name: String) -> Result<Contender, String> {
    match parse_parts(&name) {
        Some((marker, sequence)) => Ok(Contender {
            name,
            sequence,
            marker,
        }),
        None => Err(name),
    }
}

/// [`sorted_contenders`] and [`conflict`] in one pass over a listing (which every look at a queue of thousands
/// makes): the contenders `keep` accepts, sorted, or the first child the queue cannot share its directory with.
pub fn sorted_queue(
    children: Vec<String>,
    keep: impl Fn(Marker) -> bool,
) -> Result<Vec<Contender>, (String, &'static str)> {
    let mut queue = Vec::with_capacity(children.len());
    for name in children {
        match into_contender(name) {
            Ok(contender) if keep(contender.marker) => queue.push(contender),
            Ok(other) => return Err((other.name, other.marker.describe())),
            Err(name) => {
                if let Some(what) = other_recipe(&name) {
                    return Err((name, what));
                }
            }
        }
    }
    sort(&mut queue);
    Ok(queue)
}

/// Parses the children, keeps those `keep` accepts, and sorts them by sequence number.
///
/// ZooKeeper's per-directory counter is an int32 that wraps from 2147483647 to -2147483648 (after 2^31 creates
/// in one directory: weeks at a thousand acquisitions a second). When the live contenders straddle the wrap —
/// some above 2^30, some below -2^30 — the negative ones came later and sort after the positive ones. That is
/// right as long as the live contenders span fewer than 2^31 numbers, which they always do.
pub fn sorted_contenders(children: Vec<String>, keep: impl Fn(Marker) -> bool) -> Vec<Contender> {
    // The names move into the contenders: a listing of thousands is parsed at every look, so no copies.
    let mut queue: Vec<Contender> = children
        .into_iter()
        .filter_map(|name| into_contender(name).ok())
        .filter(|c| keep(c.marker))
        .collect();
    sort(&mut queue);
    queue
}

/// Sorts contenders by sequence number (see [`sorted_contenders`] for the wrap).
fn sort(queue: &mut [Contender]) {
    const QUARTER: i64 = 1 << 30;
    let wrapped = queue.iter().any(|c| c.sequence < -QUARTER) && queue.iter().any(|c| c.sequence > QUARTER);
    let key = |c: &Contender| {
        if wrapped && c.sequence < 0 {
            c.sequence + (1 << 32)
        } else {
            c.sequence
        }
    };
    // Names are unique, so the order is total and an unstable sort gives the same result.
    queue.sort_unstable_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str) -> Option<Contender> {
        into_contender(name.to_owned()).ok()
    }

    /// What `parse` did before it looked only at the end of the name: the last occurrence of any marker.
    fn parse_by_search(name: &str) -> Option<Contender> {
        let (marker, at) = Marker::ALL
            .iter()
            .filter_map(|m| name.rfind(m.as_str()).map(|at| (*m, at + m.as_str().len())))
            .max_by_key(|(m, at)| (*at, m.as_str().len()))?;
        let digits = &name[at..];
        let unsigned = digits.strip_prefix('-').unwrap_or(digits);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Contender {
            name: name.to_owned(),
            sequence: digits.parse().ok()?,
            marker,
        })
    }

    #[test]
    fn parse_agrees_with_a_search_for_the_last_marker() {
        let pieces = [
            "",
            "_c_",
            "0f3a-",
            "lock-",
            "__READ__",
            "__WRIT__",
            "latch-",
            "lease-",
            "__lock__",
            "__rlock__",
            "-",
            "--",
            "7",
            "0000000042",
            "-12",
            "x",
            "é",
            "lock",
            "__",
            "2147483648",
            "-2147483648",
        ];
        let mut names = 0;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let name = format!("{a}{b}{c}");
                    let (fast, slow) = (parse(&name), parse_by_search(&name));
                    assert_eq!(
                        fast.as_ref().map(|c| (c.marker, c.sequence)),
                        slow.as_ref().map(|c| (c.marker, c.sequence)),
                        "{name:?}"
                    );
                    names += 1;
                }
            }
        }
        assert_eq!(names, pieces.len().pow(3));
    }

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
    fn who_queues_with_whom_is_symmetric_and_every_kind_queues_with_itself() {
        for a in Marker::ALL {
            assert!(a.queues_with(a), "{a:?}");
            for b in Marker::ALL {
                assert_eq!(a.queues_with(b), b.queues_with(a), "{a:?} / {b:?}");
            }
        }
        // kazoo's exclusive node queues with every lock and the election; Curator's readers never with a mutex.
        assert!(Marker::Lock.queues_with(Marker::KazooLock));
        assert!(Marker::Latch.queues_with(Marker::KazooLock));
        assert!(!Marker::Lock.queues_with(Marker::Read));
        assert!(!Marker::Latch.queues_with(Marker::Lock));
        assert!(!Marker::Lease.queues_with(Marker::Lock));
    }

    #[test]
    fn a_conflict_is_a_contender_not_kept_or_another_recipes_node() {
        let children = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let mutex = |m: Marker| Marker::Lock.queues_with(m);
        let ours = "_c_0d9a4b8e-6f7a-4f2e-9a4b-2b1c3d4e5f60-lock-0000000001";
        assert_eq!(
            conflict(
                &children(&[ours, "1f0e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000002"]),
                mutex
            ),
            None
        );
        assert_eq!(conflict(&children(&[ours, "unrelated", "locks"]), mutex), None);
        let reader = "_c_x-__READ__0000000000";
        assert_eq!(
            conflict(&children(&[reader, ours]), mutex),
            Some((reader.to_owned(), Marker::Read.describe()))
        );
        for other in [
            "1f0e2d3c4b5a69788796a5b4c3d2e1f0",
            "1f0e2d3c4b5a69788796a5b4c3d2e1f0__party__",
            "qn-0000000001",
        ] {
            assert!(conflict(&children(&[ours, other]), mutex).is_some(), "{other}");
        }
    }

    #[test]
    fn the_one_pass_queue_is_the_conflict_then_the_sorted_contenders() {
        let names = [
            "_c_a-lock-0000000003",
            "_c_b-lock-0000000001",
            "_c_c-__READ__0000000002",
            "_c_d-__WRIT__0000000004",
            "1f0e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000005",
            "1f0e2d3c4b5a69788796a5b4c3d2e1f0__rlock__0000000000",
            "_c_e-latch-0000000006",
            "_c_f-lease-0000000007",
            "unrelated",
            "qn-0000000008",
        ];
        let mut listings = 0;
        // Every listing of up to three of the names, in every order.
        for a in 0..names.len() {
            for b in 0..=names.len() {
                for c in 0..=names.len() {
                    let children: Vec<String> = [
                        Some(a),
                        (b < names.len()).then_some(b),
                        (c < names.len()).then_some(c),
                    ]
                    .into_iter()
                    .flatten()
                    .map(|i| names[i].to_owned())
                    .collect();
                    for ours in Marker::ALL {
                        let keep = |m: Marker| ours.queues_with(m);
                        let expected = match conflict(&children, keep) {
                            Some(found) => Err(found),
                            None => Ok(sorted_contenders(children.clone(), keep)),
                        };
                        assert_eq!(
                            sorted_queue(children.clone(), keep),
                            expected,
                            "{ours:?} {children:?}"
                        );
                        listings += 1;
                    }
                }
            }
        }
        assert_eq!(
            listings,
            names.len() * (names.len() + 1).pow(2) * Marker::ALL.len()
        );
    }

    #[test]
    fn a_semaphore_is_told_by_its_directories_contents() {
        let v = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let lease = v(&["_c_x-lease-0000000001"]);
        let gate = v(&["_c_y-lock-0000000002"]);
        assert!(is_semaphore(&v(&["leases", "locks"]), &lease, &gate));
        assert!(is_semaphore(&v(&["leases"]), &lease, &[]));
        // Idle, with nothing else: still one.
        assert!(is_semaphore(&v(&["leases", "locks"]), &[], &[]));
        // A parent of lock directories, one called `locks`.
        assert!(!is_semaphore(&v(&["locks", "zookeeper"]), &[], &v(&["deploy"])));
        assert!(!is_semaphore(&v(&["locks"]), &[], &v(&["deploy", "backup"])));
        assert!(!is_semaphore(&v(&["zookeeper"]), &[], &[]));
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
