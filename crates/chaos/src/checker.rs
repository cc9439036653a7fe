//! The independent checker: reads only what the protected resource recorded (and what the commands of
//! `zklock run` logged about themselves), never zklock's own opinion, and lists every broken guarantee.

use std::collections::{BTreeMap, HashMap};

use crate::history::{Action, Interval, Kind, Op};

/// What the history must satisfy.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// How many shared holders may be in at once (`usize::MAX`: any number of readers).
    pub shared_limit: usize,
    /// Whether writes must form one counter without lost updates.
    pub counter: bool,
}

/// A broken guarantee, in words.
pub type Violation = String;

/// One critical section as the resource saw it: the accepted operations of one contender with one token.
#[derive(Debug, Clone, Copy)]
struct Span {
    client: u32,
    token: i64,
    kind: Kind,
    first: usize,
    last: usize,
}

/// Checks the register's history: fencing order, no overlapping critical sections, the holder limit, the counter.
pub fn check_register(ops: &[Op], rules: Rules) -> Vec<Violation> {
    let mut violations = Vec::new();
    let accepted: Vec<&Op> = ops.iter().filter(|op| op.accepted).collect();

    // Tokens: a new exclusive holder's token is larger than every earlier exclusive holder's.
    let mut last_exclusive: Option<(u32, i64)> = None;
    for op in accepted.iter().filter(|op| op.kind == Kind::Exclusive) {
        if let Some((client, token)) = last_exclusive {
            if (op.client, op.token) != (client, token) && op.token <= token {
                violations.push(format!(
                    "token order: op {} of client {} with token {} accepted after client {}'s token {}",
                    op.seq, op.client, op.token, client, token
                ));
            }
        }
        last_exclusive = Some((op.client, op.token));
    }

    // Critical sections and their overlaps (in the register's order of accepted operations).
    let mut spans: Vec<Span> = Vec::new();
    let mut open: HashMap<(u32, i64), usize> = HashMap::new();
    for (i, op) in accepted.iter().enumerate() {
        let key = op.section();
        let index = *open.entry(key).or_insert_with(|| {
            spans.push(Span {
                client: op.client,
                token: op.token,
                kind: op.kind,
                first: i,
                last: i,
            });
            spans.len() - 1
        });
        spans[index].last = i;
        if op.action == Action::Leave {
            open.remove(&key);
        }
    }
    // Sweep: starts and ends by position; a span's own ops are all between its first and last.
    let mut events: BTreeMap<usize, Vec<(bool, usize)>> = BTreeMap::new();
    for (index, span) in spans.iter().enumerate() {
        events.entry(span.first).or_default().push((true, index));
        events.entry(span.last).or_default().push((false, index));
    }
    let mut active: Vec<usize> = Vec::new();
    for (position, list) in events {
        for (start, index) in list.iter().copied().filter(|(start, _)| *start) {
            let span = spans[index];
            let exclusive_in = active.iter().find(|&&a| spans[a].kind == Kind::Exclusive);
            let shared_in = active.iter().filter(|&&a| spans[a].kind == Kind::Shared).count();
            if let Some(&other) = exclusive_in.or(if span.kind == Kind::Exclusive {
                active.first()
            } else {
                None
            }) {
                let other = spans[other];
                violations.push(format!(
                    "overlap: client {} (token {}, {:?}) entered at accepted op #{position} while client {} \
                     (token {}, {:?}) was inside",
                    span.client, span.token, span.kind, other.client, other.token, other.kind
                ));
            } else if span.kind == Kind::Shared && shared_in >= rules.shared_limit {
                violations.push(format!(
                    "holder limit: client {} (token {}) entered at accepted op #{position} while {shared_in} \
                     were inside (limit {})",
                    span.client, span.token, rules.shared_limit
                ));
            }
            let _ = start;
            active.push(index);
        }
        for (_, index) in list.iter().copied().filter(|(start, _)| !*start) {
            active.retain(|&a| a != index);
        }
    }

    // The counter: every accepted write is the previous value plus one, and reads see the last write.
    if rules.counter {
        let (mut value, mut writes) = (0i64, 0i64);
        for op in &accepted {
            match op.action {
                Action::Read if op.value != value => violations.push(format!(
                    "stale read: op {} of client {} read {} but the counter was {}",
                    op.seq, op.client, op.value, value
                )),
                Action::Write => {
                    if op.value != value + 1 {
                        violations.push(format!(
                            "lost update: op {} of client {} (token {}) wrote {} over {}",
                            op.seq, op.client, op.token, op.value, value
                        ));
                    }
                    value = op.value;
                    writes += 1;
                }
                _ => {}
            }
        }
        if value != writes {
            violations.push(format!(
                "counter: final value {value} but {writes} accepted increments"
            ));
        }
    }
    violations
}

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

/// Checks a counter's history (`AtomicLong::increment` by every contender, the value read at the end): the
/// final value lies between the acknowledged increments and the attempted ones (an increment whose outcome is
/// unknown — failed, timed out, or its process killed — may count or not, never twice); no two acknowledged
/// increments made the same value; and an increment that began after another was acknowledged made a larger value
/// (the counter is linearizable).
pub fn check_counter(ops: &[Op]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut attempted: std::collections::HashSet<i64> = std::collections::HashSet::new();
    let mut made: BTreeMap<i64, i64> = BTreeMap::new(); // value -> the increment that made it
    let mut highest_acknowledged: Option<(i64, i64)> = None; // (value, increment) acknowledged so far
    let mut floor_at_start: HashMap<i64, (i64, i64)> = HashMap::new(); // increment -> highest acknowledged then
    let mut acknowledged = 0i64;
    let mut final_value = None;
    for op in ops {
        match op.action {
            Action::Add => {
                attempted.insert(op.token);
                if let Some(floor) = highest_acknowledged {
                    floor_at_start.insert(op.token, floor);
                }
            }
            Action::Added => {
                acknowledged += 1;
                if !attempted.contains(&op.token) {
                    violations.push(format!(
                        "counter: increment {:#x} acknowledged but never begun",
                        op.token
                    ));
                }
                if let Some(other) = made.insert(op.value, op.token) {
                    violations.push(format!(
                        "counter: increments {other:#x} and {:#x} were both acknowledged as making {}: one of them \
                         was lost",
                        op.token, op.value
                    ));
                }
                if let Some(&(floor, before)) = floor_at_start.get(&op.token) {
                    if op.value <= floor {
                        violations.push(format!(
                            "counter: increment {:#x} began after {before:#x} was acknowledged as making {floor}, \
                             but made {}",
                            op.token, op.value
                        ));
                    }
                }
                if highest_acknowledged.is_none_or(|(value, _)| op.value > value) {
                    highest_acknowledged = Some((op.value, op.token));
                }
            }
            Action::Final => final_value = Some(op.value),
            _ => {}
        }
    }
    let Some(value) = final_value else {
        violations.push("counter: its final value was never read".to_owned());
        return violations;
    };
    let attempts = attempted.len() as i64;
    if value < acknowledged {
        violations.push(format!(
            "counter: final value {value} but {acknowledged} increments were acknowledged: increments were lost"
        ));
    }
    if value > attempts {
        violations.push(format!(
            "counter: final value {value} but only {attempts} increments were attempted: one counted twice"
        ));
    }
    if let Some((&highest, &increment)) = made.iter().next_back() {
        if highest > value {
            violations.push(format!(
                "counter: increment {increment:#x} was acknowledged as making {highest}, above the final {value}"
            ));
        }
    }
    violations
}

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

/// Checks that no two commands of `zklock run` were running at the same time.
pub fn check_intervals(intervals: &[Interval]) -> Vec<Violation> {
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by_key(|iv| iv.begin_ns);
    let mut violations = Vec::new();
    let mut latest: Option<&Interval> = None; // the interval reaching furthest so far
    for iv in sorted {
        if let Some(prev) = latest {
            if iv.begin_ns < prev.last_ns {
                violations.push(format!(
                    "two commands at once: {} (token {}) began {:.1} ms before {} (token {}{}) was last seen",
                    iv.name,
                    iv.token,
                    (prev.last_ns - iv.begin_ns) as f64 / 1e6,
                    prev.name,
                    prev.token,
                    if prev.finished { "" } else { ", killed" }
                ));
            }
        }
        if latest.is_none_or(|prev| iv.last_ns > prev.last_ns) {
            latest = Some(iv);
        }
    }
    violations
}

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
    use Action::*;
    use Kind::*;

    const MUTEX: Rules = Rules {
        shared_limit: 1,
        counter: true,
    };

    fn op(client: u32, token: i64, kind: Kind, action: Action, value: i64) -> Op {
        Op {
            seq: 0,
            at_ns: 0,
            client,
            token,
            kind,
            action,
            value,
            accepted: true,
        }
    }

    const READ_WRITE: Rules = Rules {
        shared_limit: usize::MAX,
        counter: true,
    };

    const TWO_LEASES: Rules = Rules {
        shared_limit: 2,
        counter: false,
    };

    /// The exclusive holder `client` with `token` read `value` from the counter.
    fn read(client: u32, token: i64, value: i64) -> Op {
        op(client, token, Exclusive, Read, value)
    }

    /// The exclusive holder `client` with `token` wrote `value` to the counter.
    fn write(client: u32, token: i64, value: i64) -> Op {
        op(client, token, Exclusive, Write, value)
    }

    /// `op`, refused by the fence.
    fn refused(op: Op) -> Op {
        Op {
            accepted: false,
            ..op
        }
    }

    /// The shared holder `client` (its token: 9 + `client`) enters.
    fn enter(client: u32) -> Op {
        op(client, 9 + i64::from(client), Shared, Enter, 0)
    }

    /// The shared holder `client` (its token: 9 + `client`) leaves.
    fn leave(client: u32) -> Op {
        op(client, 9 + i64::from(client), Shared, Leave, 0)
    }

    fn numbered(mut ops: Vec<Op>) -> Vec<Op> {
        for (i, op) in ops.iter_mut().enumerate() {
            op.seq = i as u64;
            op.at_ns = (i as u64 + 1) * 1_000_000;
        }
        ops
    }

    #[test]
    fn a_correct_mutex_history_passes() {
        let ops = numbered(vec![
            read(1, 10, 0),
            write(1, 10, 1),
            read(2, 12, 1),
            refused(write(1, 10, 2)),
            write(2, 12, 2),
        ]);
        assert_eq!(check_register(&ops, MUTEX), Vec::<String>::new());
    }

    #[test]
    fn interleaved_sections_lost_updates_and_stale_reads_are_caught() {
        // Broken histories, and the rules each breaks.
        let broken = [
            // What a paused holder does without fencing: it read before the pause and writes after its successor.
            (
                vec![read(1, 10, 0), read(2, 12, 0), write(2, 12, 1), write(1, 10, 1)],
                &["overlap", "lost update", "token order", "counter"][..],
            ),
            (
                vec![read(1, 10, 0), write(1, 10, 1), read(2, 12, 0)],
                &["stale read"],
            ),
        ];
        for (history, rules) in broken {
            let v = check_register(&numbered(history), MUTEX);
            for rule in rules {
                assert!(v.iter().any(|v| v.starts_with(rule)), "{rule}: {v:?}");
            }
        }
    }

    #[test]
    fn readers_may_share_but_not_with_a_writer() {
        let ok = numbered(vec![
            enter(1),
            enter(2),
            op(1, 10, Shared, Read, 0),
            leave(1),
            leave(2),
            read(3, 12, 0),
            write(3, 12, 1),
        ]);
        assert_eq!(check_register(&ok, READ_WRITE), Vec::<String>::new());
        let bad = numbered(vec![
            enter(1),
            read(3, 12, 0),
            op(1, 10, Shared, Read, 0),
            write(3, 12, 1),
        ]);
        let v = check_register(&bad, READ_WRITE);
        assert!(v.iter().any(|v| v.starts_with("overlap")), "{v:?}");
    }

    #[test]
    fn more_lease_holders_than_leases_are_caught() {
        // A holder is in from its first to its last accepted operation (its leave).
        let ops = numbered(vec![enter(1), enter(2), enter(3), leave(1), leave(2), leave(3)]);
        let v = check_register(&ops, TWO_LEASES);
        assert!(v.iter().any(|v| v.starts_with("holder limit")), "{v:?}");
        let fine = numbered(vec![enter(1), enter(2), leave(1), enter(3), leave(2), leave(3)]);
        assert_eq!(check_register(&fine, TWO_LEASES), Vec::<String>::new());
    }

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

    #[test]
    fn lost_and_doubled_increments_are_caught() {
        let add = |client, id| op(client, id, Shared, Add, 0);
        let added = |client, id, value| op(client, id, Shared, Added, value);
        let last = |value| op(u32::MAX, 0, Shared, Final, value);
        // Increment 3 failed (outcome unknown) and did happen: the final value may count it.
        let ok = numbered(vec![
            add(1, 1),
            add(2, 2),
            added(2, 2, 1),
            added(1, 1, 2),
            add(1, 3),
            op(1, 3, Shared, Unsure, 0),
            add(2, 4),
            added(2, 4, 4),
            last(4),
        ]);
        assert_eq!(check_counter(&ok), Vec::<String>::new());
        // Broken histories, and what the checker must say of each.
        let broken = [
            // Two increments that both made 1 (a lost update), and a final value below the acknowledged count.
            (
                vec![add(1, 1), add(2, 2), added(1, 1, 1), added(2, 2, 1), last(1)],
                &["both acknowledged", "were lost"][..],
            ),
            // One increment, counted twice.
            (vec![add(1, 1), added(1, 1, 1), last(2)], &["counted twice"]),
            // An increment begun after another's acknowledgement made a smaller value.
            (
                vec![
                    add(1, 1),
                    add(2, 2),
                    added(2, 2, 2),
                    add(3, 3),
                    added(3, 3, 1),
                    added(1, 1, 3),
                    last(3),
                ],
                &["began after"],
            ),
            // Its final value never read.
            (vec![add(1, 1)], &["never read"]),
        ];
        for (history, says) in broken {
            let v = check_counter(&numbered(history));
            for what in says {
                assert!(v.iter().any(|v| v.contains(what)), "{what}: {v:?}");
            }
        }
    }

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

    #[test]
    fn overlapping_commands_are_caught() {
        let iv = |name: &str, begin: u64, last: u64| Interval {
            name: name.into(),
            token: begin as i64,
            begin_ns: begin,
            last_ns: last,
            finished: true,
        };
        assert!(check_intervals(&[iv("a", 0, 10), iv("b", 11, 20), iv("c", 25, 30)]).is_empty());
        let v = check_intervals(&[iv("a", 0, 10), iv("b", 11, 40), iv("c", 25, 30)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("c (token 25) began"), "{v:?}");
    }

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
