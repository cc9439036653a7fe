//! A linearizability checker for a set of versioned registers (znodes), in the style of Knossos and Porcupine:
//! the Wing–Gong search with Lowe's memoisation on (linearized set, state), one search per group of keys that
//! operations touch together (P-compositionality: a `multi` over several keys joins them).
//!
//! The model: every key holds `(value, version)`, `(0, 0)` at the start (the node as created). A read returns
//! both; a set (`setData`, with or without an expected version) makes `version + 1`; a check (`multi`'s
//! `check`) only compares. A transaction is one or more sets and checks applied atomically, in order; a single
//! write or compare-and-set is a transaction of one set. Its outcome is the new version of each set, a failure (an
//! expected version did not match: nothing applied), or unknown (a timeout or a lost connection: it may have taken
//! effect at any point after its invocation, or never). A read with no answer is dropped: it changed nothing.
//!
//! No crate does this for recorded histories: `stateright` checks its own actor models, `lincheck` runs closures
//! under `loom`. The search is bounded: past `max_states` memoised configurations it answers
//! [`Verdict::Unknown`], which a caller must never count as a pass.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// One step of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `setData(key, value, expected)`: `None` sets whatever the version (`-1` on the wire).
    Set {
        /// Which register.
        key: u32,
        /// The value written.
        value: i64,
        /// The version it must have.
        expected: Option<i32>,
    },
    /// `check(key, version)` inside a `multi`.
    Check {
        /// Which register.
        key: u32,
        /// The version it must have.
        version: i32,
    },
}

impl Step {
    fn key(&self) -> u32 {
        match *self {
            Step::Set { key, .. } | Step::Check { key, .. } => key,
        }
    }
}

/// What an operation asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `sync` then `getData`.
    Read {
        /// Which register.
        key: u32,
    },
    /// Sets and checks applied atomically (one set: a plain write or compare-and-set; several: a `multi`).
    Txn(Vec<Step>),
}

/// What it got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A read's answer.
    Read {
        /// The value read.
        value: i64,
        /// Its version.
        version: i32,
    },
    /// A transaction applied: the new version made by each of its sets, in order.
    Applied(Vec<i32>),
    /// A transaction refused (`BadVersion`): nothing applied. `Some(i)`: step `i` is the one that failed (the
    /// steps before it held).
    Refused(Option<usize>),
    /// No answer (timeout, lost connection, killed process): it may have happened, once, or not at all.
    Unknown,
}

/// One operation of the history. Times are on one clock (`CLOCK_MONOTONIC`); `ret_ns` is ignored when the
/// outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// Which process issued it (for messages).
    pub process: String,
    /// When it was invoked.
    pub call_ns: u64,
    /// When its answer arrived.
    pub ret_ns: u64,
    /// What it asked.
    pub call: Call,
    /// What it got.
    pub outcome: Outcome,
}

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A linearization exists for every group of keys.
    Linearizable,
    /// No linearization exists: why, for the first group found.
    NotLinearizable(String),
    /// The search gave up (its bound was reached) in some group and found no violation elsewhere.
    Unknown(String),
}

/// The checker's report: its verdict and what it looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The verdict.
    pub verdict: Verdict,
    /// Operations judged (reads with no answer are dropped and not counted).
    pub ops: usize,
    /// Keys touched.
    pub keys: usize,
    /// Groups searched separately.
    pub groups: usize,
    /// Memoised configurations, all groups together.
    pub states: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.verdict {
            Verdict::Linearizable => "yes",
            Verdict::NotLinearizable(_) => "no",
            Verdict::Unknown(_) => "unknown",
        };
        write!(
            f,
            "linearizable: {word} ({} ops, {} keys, {} groups, {} states)",
            self.ops, self.keys, self.groups, self.states
        )?;
        match &self.verdict {
            Verdict::Linearizable => Ok(()),
            Verdict::NotLinearizable(why) | Verdict::Unknown(why) => write!(f, ": {why}"),
        }
    }
}

/// The default bound of the search, in memoised configurations per group.
pub const MAX_STATES: usize = 2_000_000;

/// Checks `history`, giving up after `max_states` memoised configurations in one group.
pub fn check(history: &[Operation], max_states: usize) -> Report {
    let ops: Vec<&Operation> = history
        .iter()
        .filter(|op| !(matches!(op.call, Call::Read { .. }) && op.outcome == Outcome::Unknown))
        .collect();
    // Union-find over keys: a transaction's keys belong together.
    let mut parent: HashMap<u32, u32> = HashMap::new();
    fn find(parent: &mut HashMap<u32, u32>, k: u32) -> u32 {
        let p = *parent.entry(k).or_insert(k);
        if p == k {
            return k;
        }
        let root = find(parent, p);
        parent.insert(k, root);
        root
    }
    for op in &ops {
        let keys = keys_of(&op.call);
        for &k in &keys {
            find(&mut parent, k);
        }
        for pair in keys.windows(2) {
            let (a, b) = (find(&mut parent, pair[0]), find(&mut parent, pair[1]));
            if a != b {
                parent.insert(a, b);
            }
        }
    }
    let all_keys: Vec<u32> = parent.keys().copied().collect();
    let mut groups: HashMap<u32, Vec<&Operation>> = HashMap::new();
    for op in &ops {
        let root = find(&mut parent, keys_of(&op.call)[0]);
        groups.entry(root).or_default().push(op);
    }
    let mut roots: Vec<u32> = groups.keys().copied().collect();
    roots.sort_unstable();
    let mut report = Report {
        verdict: Verdict::Linearizable,
        ops: ops.len(),
        keys: all_keys.len(),
        groups: roots.len(),
        states: 0,
    };
    let mut unknown = None;
    for root in roots {
        let mut keys: Vec<u32> = all_keys
            .iter()
            .copied()
            .filter(|&k| find(&mut parent, k) == root)
            .collect();
        keys.sort_unstable();
        let (result, states) = search(&groups[&root], &keys, max_states);
        report.states += states;
        match result {
            Search::Found => {}
            Search::Impossible(why) => {
                report.verdict = Verdict::NotLinearizable(format!("keys {keys:?}: {why}"));
                return report;
            }
            Search::GaveUp => {
                unknown.get_or_insert(format!(
                    "keys {keys:?}: gave up after {states} states (bound {max_states})"
                ));
            }
        }
    }
    if let Some(why) = unknown {
        report.verdict = Verdict::Unknown(why);
    }
    report
}

fn keys_of(call: &Call) -> Vec<u32> {
    let mut keys: Vec<u32> = match call {
        Call::Read { key } => vec![*key],
        Call::Txn(steps) => steps.iter().map(Step::key).collect(),
    };
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The registers of one group: `(value, version)` per key, indexed as the group's sorted key list.
type State = Vec<(i64, i32)>;

/// Applies `op` to `state`: the next state if the outcome is possible there (for an unknown outcome: the state
/// should it take effect now).
fn apply(state: &State, index: &HashMap<u32, usize>, call: &Call, outcome: &Outcome) -> Option<State> {
    match (call, outcome) {
        (Call::Read { key }, Outcome::Read { value, version }) => {
            (state[index[key]] == (*value, *version)).then(|| state.clone())
        }
        (Call::Read { .. }, _) => None,
        (Call::Txn(steps), outcome) => {
            let mut next = state.clone();
            let mut made = Vec::new();
            let mut failed_at = None;
            for (i, step) in steps.iter().enumerate() {
                match *step {
                    Step::Set { key, value, expected } => {
                        let slot = &mut next[index[&key]];
                        if expected.is_some_and(|e| e != slot.1) {
                            failed_at = Some(i);
                            break;
                        }
                        *slot = (value, slot.1 + 1);
                        made.push(slot.1);
                    }
                    Step::Check { key, version } => {
                        if next[index[&key]].1 != version {
                            failed_at = Some(i);
                            break;
                        }
                    }
                }
            }
            match (outcome, failed_at) {
                (Outcome::Applied(versions), None) => (*versions == made).then_some(next),
                (Outcome::Refused(which), Some(i)) => which.is_none_or(|w| w == i).then(|| state.clone()),
                (Outcome::Unknown, None) => Some(next),
                (Outcome::Unknown, Some(_)) => Some(state.clone()),
                _ => None,
            }
        }
    }
}

enum Search {
    Found,
    Impossible(String),
    GaveUp,
}

/// An entry of the doubly linked list of calls and returns, in time order.
#[derive(Clone, Copy)]
struct Entry {
    op: usize,
    is_call: bool,
    prev: usize,
    next: usize,
}

/// The linearized set, exactly and compactly: every op below `hi` is linearized except those in `missing`, none
/// at or above `hi` is. Ops are numbered in call order, so `missing` holds only ops concurrent with a linearized
/// one, or unknown ones never linearized: few, whatever the history's length.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Done {
    hi: u32,
    missing: Vec<u32>,
}

impl Done {
    fn with(&self, op: u32) -> Done {
        let mut next = self.clone();
        if op < next.hi {
            next.missing.retain(|&m| m != op);
        } else {
            next.missing.extend(next.hi..op);
            next.hi = op + 1;
        }
        next
    }
}

/// Wing–Gong with memoisation over one group; returns the result and the configurations memoised.
fn search(ops: &[&Operation], keys: &[u32], max_states: usize) -> (Search, usize) {
    let mut ops: Vec<&Operation> = ops.to_vec();
    ops.sort_by_key(|op| op.call_ns);
    let index: HashMap<u32, usize> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    // Events in time order; at equal times a call before a return (the two ops are then concurrent).
    let mut events: Vec<(u64, bool, usize)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        events.push((op.call_ns, true, i));
        if op.outcome != Outcome::Unknown {
            events.push((op.ret_ns.max(op.call_ns), false, i));
        }
    }
    events.sort_by_key(|&(t, is_call, i)| (t, !is_call, i));
    // Entry 0 is the head sentinel; entry e + 1 is events[e].
    let n = events.len();
    let mut list: Vec<Entry> = Vec::with_capacity(n + 1);
    list.push(Entry {
        op: usize::MAX,
        is_call: false,
        prev: usize::MAX,
        next: if n > 0 { 1 } else { usize::MAX },
    });
    let mut call_entry = vec![0usize; ops.len()];
    let mut ret_entry = vec![None; ops.len()];
    for (e, &(_, is_call, op)) in events.iter().enumerate() {
        let at = e + 1;
        list.push(Entry {
            op,
            is_call,
            prev: e,
            next: if at < n { at + 1 } else { usize::MAX },
        });
        if is_call {
            call_entry[op] = at;
        } else {
            ret_entry[op] = Some(at);
        }
    }
    let unlink = |list: &mut Vec<Entry>, at: usize| {
        let Entry { prev, next, .. } = list[at];
        list[prev].next = next;
        if next != usize::MAX {
            list[next].prev = prev;
        }
    };
    let relink = |list: &mut Vec<Entry>, at: usize| {
        let Entry { prev, next, .. } = list[at];
        list[prev].next = at;
        if next != usize::MAX {
            list[next].prev = at;
        }
    };
    let mut definite = ops.iter().filter(|op| op.outcome != Outcome::Unknown).count();
    let mut state: State = vec![(0, 0); keys.len()];
    let mut done = Done {
        hi: 0,
        missing: Vec::new(),
    };
    let mut seen: HashSet<(Done, State)> = HashSet::new();
    let mut stack: Vec<(usize, State, Done)> = Vec::new();
    // The deepest point reached, for the message: how many ops were linearized, and the op that could not be.
    let mut deepest = (0usize, usize::MAX);
    let mut entry = list[0].next;
    loop {
        if definite == 0 {
            return (Search::Found, seen.len());
        }
        if seen.len() > max_states {
            return (Search::GaveUp, seen.len());
        }
        if entry != usize::MAX && list[entry].is_call {
            let op = list[entry].op;
            if let Some(next) = apply(&state, &index, &ops[op].call, &ops[op].outcome) {
                let next_done = done.with(op as u32);
                if seen.insert((next_done.clone(), next.clone())) {
                    stack.push((
                        op,
                        std::mem::replace(&mut state, next),
                        std::mem::replace(&mut done, next_done),
                    ));
                    unlink(&mut list, call_entry[op]);
                    if let Some(ret) = ret_entry[op] {
                        unlink(&mut list, ret);
                        definite -= 1;
                    }
                    entry = list[0].next;
                    continue;
                }
            }
            entry = list[entry].next;
        } else {
            // A return whose call could not be linearized before it: undo the last choice.
            if stack.len() >= deepest.0 && entry != usize::MAX {
                deepest = (stack.len(), list[entry].op);
            }
            let Some((op, old_state, old_done)) = stack.pop() else {
                let (linearized, stuck) = deepest;
                let why = match ops.get(stuck) {
                    Some(op) => format!(
                        "at most {linearized} of {} ops linearize; then none fits {}",
                        ops.len(),
                        describe(op)
                    ),
                    None => format!("no linearization of {} ops", ops.len()),
                };
                return (Search::Impossible(why), seen.len());
            };
            state = old_state;
            done = old_done;
            if let Some(ret) = ret_entry[op] {
                relink(&mut list, ret);
                definite += 1;
            }
            relink(&mut list, call_entry[op]);
            entry = list[call_entry[op]].next;
        }
    }
}

/// One operation for a message.
pub fn describe(op: &Operation) -> String {
    let call = match &op.call {
        Call::Read { key } => format!("read k{key}"),
        Call::Txn(steps) => steps
            .iter()
            .map(|s| match *s {
                Step::Set {
                    key,
                    value,
                    expected: Some(e),
                } => format!("cas k{key} v{e}->{value}"),
                Step::Set { key, value, .. } => format!("write k{key}={value}"),
                Step::Check { key, version } => format!("check k{key} v{version}"),
            })
            .collect::<Vec<_>>()
            .join(" + "),
    };
    let outcome = match &op.outcome {
        Outcome::Read { value, version } => format!("{value} v{version}"),
        Outcome::Applied(versions) => format!("ok {versions:?}"),
        Outcome::Refused(_) => "BadVersion".to_owned(),
        Outcome::Unknown => "unknown".to_owned(),
    };
    format!(
        "{call} -> {outcome} by {} in [{} .. {}] ns",
        op.process, op.call_ns, op.ret_ns
    )
}
