//! A linearizability checker for a set of versioned registers (znodes), in the style of Knossos and Porcupine,
//! one search per group of keys that operations touch together (P-compositionality: a `multi` over several keys
//! joins them).
//!
//! The model: every key holds `(value, version)`, `(0, 0)` at the start (the node as created). A read returns
//! both; a set (`setData`, with or without an expected version) makes `version + 1`; a check (`multi`'s
//! `check`) only compares. A transaction is one or more sets and checks applied atomically, in order; a single
//! write or compare-and-set is a transaction of one set. Its outcome is the new version of each set, a failure (an
//! expected version did not match: nothing applied), or unknown (a timeout or a lost connection: it may have taken
//! effect at any point after its invocation and before its *deadline*, or never). A read with no answer is
//! dropped: it changed nothing.
//!
//! ## The search: a sweep carrying every reachable configuration
//! The history is swept in time order (Lowe's just-in-time linearization, the "linear" search of Knossos). A
//! *configuration* is the registers' state and the set of operations already linearized among those still in
//! flight. At an invocation nothing changes (the operation joins the ones in flight); at a completion (an answer,
//! or an unknown operation's deadline) every configuration is extended in every way that linearizes operations in
//! flight up to and including the completed one (for an unknown one, "never" is one of the ways), and the set of
//! resulting configurations, deduplicated, is carried on. The operations of the history before a completion are
//! then forgotten: only the states they can have left matter. This is the window scheme "split at quiescent points
//! and carry the set of reachable states" with a window at every completion, so it needs no quiescent point at
//! all; it is exact (a linearization exists iff the set is never empty: every linearization respects real time,
//! so what precedes an operation in it was invoked before that operation's completion, and the closure tries
//! every such prefix). The bound `max_states` caps the configurations explored at one completion: past it the
//! answer is [`Verdict::Unknown`], which a caller must never count as a pass.
//!
//! Two reductions keep many unknown writes in flight cheap (both argued where they are made, in `anonymized_calls`
//! and `unknown_classes`): a value no read returned is replaced by one sentinel, so states that differ only in such
//! values merge; and of unknown operations with equal calls (after that replacement) only the one in flight with
//! the earliest deadline may take effect next, so `k` of them cost `k + 1` ways instead of `2^k`.
//!
//! ## Why unknown operations need a deadline
//! With no deadline an unknown operation stays in flight to the end of the history, and every configuration
//! splits on it (taken effect yet or not) for as long: a one-hour soak with a few hundred of them could not be
//! decided (2,000,000 states in the old depth-first search). ZooKeeper processes a session's requests in order and
//! only while the session lives, so an unknown operation takes effect before the *deadline* its recorder gives it
//! (see [`check_within`] and `workloads/kv.rs`: the answer to a later request of the same session, or the end of
//! the session bounded by the session timeout and a grace for faults), or never. A deadline too short can only
//! *forbid* linearizations (a false alarm, which a human then reads), never admit a wrong one; so the recorder
//! picks them generously. [`check`] gives every unknown operation no deadline at all (the exact old semantics).
//!
//! No crate does this for recorded histories: `stateright` checks its own actor models, `lincheck` runs closures
//! under `loom`.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// One step of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    /// Configurations explored, all groups together.
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

/// The default bound of the search, in configurations explored at one completion.
pub const MAX_STATES: usize = 2_000_000;

/// Checks `history` with no deadline for unknown operations (each may take effect at any time after its
/// invocation, or never), giving up past `max_states` configurations explored at one completion. (The unit tests'
/// entry; the campaign gives deadlines.)
#[allow(dead_code)]
pub fn check(history: &[Operation], max_states: usize) -> Report {
    check_within(history, &vec![u64::MAX; history.len()], max_states)
}

/// Checks `history` where the operation `history[i]`, if its outcome is unknown, took effect at or before
/// `deadlines[i]` (`CLOCK_MONOTONIC` ns; `u64::MAX`: any time) or never. Deadlines of answered operations are
/// ignored. A deadline before the invocation counts as the invocation.
pub fn check_within(history: &[Operation], deadlines: &[u64], max_states: usize) -> Report {
    assert_eq!(history.len(), deadlines.len(), "one deadline per operation");
    let ops: Vec<(&Operation, u64)> = history
        .iter()
        .zip(deadlines.iter().copied())
        .filter(|(op, _)| !(matches!(op.call, Call::Read { .. }) && op.outcome == Outcome::Unknown))
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
    for (op, _) in &ops {
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
    let mut groups: HashMap<u32, Vec<(&Operation, u64)>> = HashMap::new();
    for &(op, deadline) in &ops {
        let root = find(&mut parent, keys_of(&op.call)[0]);
        groups.entry(root).or_default().push((op, deadline));
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
            Search::GaveUp(why) => {
                unknown.get_or_insert(format!("keys {keys:?}: {why} (bound {max_states})"));
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
    GaveUp(String),
}

/// A configuration: the registers, and the operations in flight already linearized (sorted).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Config {
    state: State,
    linearized: Vec<u32>,
}

/// The sweep over one group (see the module docs); returns the result and the configurations explored.
fn search(ops: &[(&Operation, u64)], keys: &[u32], max_states: usize) -> (Search, usize) {
    let mut sweep = Sweep::new(ops, keys, max_states);
    for (_, is_end, i) in events(ops) {
        if !is_end {
            sweep.invoke(i);
        } else if let Err(result) = sweep.complete(i) {
            return (result, sweep.explored);
        }
    }
    (Search::Found, sweep.explored)
}

/// When each operation completes: its answer, or for an unknown one its deadline.
fn end_of(op: &Operation, deadline: u64) -> u64 {
    if op.outcome == Outcome::Unknown {
        deadline
    } else {
        op.ret_ns
    }
}

/// Events in time order: (time, is completion, op). At equal times invocations come first (the operations are
/// then concurrent).
fn events(ops: &[(&Operation, u64)]) -> Vec<(u64, bool, u32)> {
    let mut events: Vec<(u64, bool, u32)> = Vec::with_capacity(ops.len() * 2);
    for (i, &(op, deadline)) in ops.iter().enumerate() {
        events.push((op.call_ns, false, i as u32));
        let end = end_of(op, deadline);
        if end != u64::MAX {
            events.push((end.max(op.call_ns), true, i as u32));
        }
    }
    events.sort_unstable();
    events
}

/// The operations' calls with every value no read returned replaced by one sentinel: it can only make reads fail,
/// wherever it stands, so states that differ only in such values behave alike and merge.
fn anonymized_calls(ops: &[(&Operation, u64)]) -> Vec<Call> {
    let observed: HashSet<(u32, i64)> = ops
        .iter()
        .filter_map(|(op, _)| match (&op.call, &op.outcome) {
            (Call::Read { key }, Outcome::Read { value, .. }) => Some((*key, *value)),
            _ => None,
        })
        .collect();
    let sentinel = i64::MIN;
    let anonymous =
        |key: u32, value: i64| !observed.contains(&(key, value)) && !observed.contains(&(key, sentinel));
    ops.iter()
        .map(|(op, _)| match &op.call {
            Call::Txn(steps) => Call::Txn(
                steps
                    .iter()
                    .map(|&step| match step {
                        Step::Set { key, value, expected } if anonymous(key, value) => Step::Set {
                            key,
                            value: sentinel,
                            expected,
                        },
                        step => step,
                    })
                    .collect(),
            ),
            call => call.clone(),
        })
        .collect()
}

/// The class of each unknown operation (`None` for an answered one). Unknown operations with the same call (after
/// [`anonymized_calls`]) have the same effect in every state: a class. Of a class, only the member in flight with
/// the earliest deadline may take effect next (an exchange argument: in any linearization that applies a
/// later-deadline member while an earlier one is in flight, swapping the two, or applying the earlier one instead
/// of the later if the earlier never takes effect, is a linearization too). So k unknown writes in flight cost
/// k + 1 ways, not 2^k.
fn unknown_classes(ops: &[(&Operation, u64)], calls: &[Call]) -> Vec<Option<u32>> {
    let mut classes: HashMap<&Call, u32> = HashMap::new();
    ops.iter()
        .zip(calls)
        .map(|((op, _), call)| {
            (op.outcome == Outcome::Unknown).then(|| {
                let next = classes.len() as u32;
                *classes.entry(call).or_insert(next)
            })
        })
        .collect()
}

/// The sweep's state over one group: what it knows of the operations, and the configurations it carries.
struct Sweep<'a> {
    ops: &'a [(&'a Operation, u64)],
    keys: &'a [u32],
    max_states: usize,
    /// A key's position in the group's sorted key list (and in a [`State`]).
    index: HashMap<u32, usize>,
    /// The operations' calls, see [`anonymized_calls`].
    calls: Vec<Call>,
    /// The operations' classes, see [`unknown_classes`].
    class: Vec<Option<u32>>,
    /// When each operation completes, see [`end_of`].
    end: Vec<u64>,
    /// In flight, by (end, op): a class's earliest-deadline member comes first.
    in_flight: Vec<u32>,
    /// The classes already tried from one configuration.
    classes_seen: Vec<u32>,
    /// The configurations reachable after the last completion.
    configs: HashSet<Config>,
    /// Configurations explored in all.
    explored: usize,
    /// Completions swept so far.
    completed: usize,
    /// The configurations met in the closure of the current completion.
    visited: HashSet<Config>,
    /// Those still to extend.
    stack: Vec<Config>,
}

impl<'a> Sweep<'a> {
    fn new(ops: &'a [(&'a Operation, u64)], keys: &'a [u32], max_states: usize) -> Sweep<'a> {
        let calls = anonymized_calls(ops);
        Sweep {
            ops,
            keys,
            max_states,
            index: keys.iter().enumerate().map(|(i, &k)| (k, i)).collect(),
            class: unknown_classes(ops, &calls),
            calls,
            end: ops.iter().map(|&(op, deadline)| end_of(op, deadline)).collect(),
            in_flight: Vec::new(),
            classes_seen: Vec::new(),
            configs: HashSet::from([Config {
                state: vec![(0, 0); keys.len()],
                linearized: Vec::new(),
            }]),
            explored: 0,
            completed: 0,
            visited: HashSet::new(),
            stack: Vec::new(),
        }
    }

    /// Operation `i` is invoked: it joins the ones in flight.
    fn invoke(&mut self, i: u32) {
        let end = &self.end;
        let key = (end[i as usize], i);
        let at = self.in_flight.partition_point(|&j| (end[j as usize], j) < key);
        self.in_flight.insert(at, i);
    }

    /// Operation `i` completes: every configuration is extended in every way that linearizes it (or, for an
    /// unknown one, not at all). `Err`: the search ends there.
    fn complete(&mut self, i: u32) -> Result<(), Search> {
        let (op, _) = self.ops[i as usize];
        let unknown = op.outcome == Outcome::Unknown;
        let mut next: HashSet<Config> = HashSet::with_capacity(self.configs.len());
        self.visited.clear();
        let before: Vec<State> = self.configs.iter().take(3).map(|c| c.state.clone()).collect();
        let before_count = self.configs.len();
        for mut c in self.configs.drain() {
            if let Ok(at) = c.linearized.binary_search(&i) {
                c.linearized.remove(at);
                next.insert(c);
                continue;
            }
            if unknown {
                next.insert(c.clone()); // it never took effect
            }
            if self.visited.insert(c.clone()) {
                self.stack.push(c);
            }
        }
        self.close(i, &mut next)?;
        self.in_flight.retain(|&j| j != i);
        self.completed += 1;
        if next.is_empty() {
            return Err(Search::Impossible(self.impossible(op, &before, before_count)));
        }
        self.configs = next;
        Ok(())
    }

    /// Every way to linearize operations in flight up to and including `i`, from the configurations on the stack:
    /// those that linearize `i` go to `next`. `Err`: the bound was reached.
    fn close(&mut self, i: u32, next: &mut HashSet<Config>) -> Result<(), Search> {
        while let Some(x) = self.stack.pop() {
            self.explored += 1;
            if self.visited.len() > self.max_states || next.len() > self.max_states {
                let why = format!(
                    "gave up at the completion of {} after {} configurations at once ({} explored in all)",
                    describe(self.ops[i as usize].0),
                    self.visited.len().max(next.len()),
                    self.explored
                );
                return Err(Search::GaveUp(why));
            }
            self.extend(&x, i, next);
        }
        Ok(())
    }

    /// Linearizes one more operation in flight after `x`, in every way; `i` (the one completing) into `next`, the
    /// others onto the stack.
    fn extend(&mut self, x: &Config, i: u32, next: &mut HashSet<Config>) {
        self.classes_seen.clear();
        for &j in &self.in_flight {
            if x.linearized.binary_search(&j).is_ok() {
                continue;
            }
            if let Some(c) = self.class[j as usize] {
                if self.classes_seen.contains(&c) {
                    continue; // a member of its class with an earlier deadline is still in flight
                }
                self.classes_seen.push(c);
            }
            let (other, _) = self.ops[j as usize];
            let Some(state) = apply(&x.state, &self.index, &self.calls[j as usize], &other.outcome) else {
                continue;
            };
            if j == i {
                next.insert(Config {
                    state,
                    linearized: x.linearized.clone(),
                });
                continue;
            }
            if other.outcome == Outcome::Unknown && state == x.state {
                continue; // a no-op now: the same as not yet (it stays in flight, or never happens)
            }
            let mut linearized = x.linearized.clone();
            let at = linearized.binary_search(&j).unwrap_err();
            linearized.insert(at, j);
            let y = Config { state, linearized };
            if !self.visited.contains(&y) {
                self.visited.insert(y.clone());
                self.stack.push(y);
            }
        }
    }

    /// Why no linearization lets `op` take effect, with up to three of the `before_count` configurations before it.
    fn impossible(&self, op: &Operation, before: &[State], before_count: usize) -> String {
        let states: Vec<String> = before
            .iter()
            .map(|s| {
                s.iter()
                    .zip(self.keys)
                    .map(|(&(value, version), k)| match value {
                        i64::MIN => format!("k{k}=(a value no read saw) v{version}"),
                        value => format!("k{k}={value} v{version}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        format!(
            "after {} completions of {} ops, no linearization lets {} take effect: the {before_count} possible \
             configurations before it (e.g. {}) with {} ops in flight allow none",
            self.completed,
            self.ops.len(),
            describe(op),
            states.join("; "),
            self.in_flight.len() + 1
        )
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
