//! The `two-phase-commit` workload: every contender coordinates transactions of its own (over a random set of
//! the contenders as participants) and takes part in the others' — as separate tasks with sessions of their own, so
//! that a fault on one process hits a coordinator and a participant at once. And its checker.
//!
//! What is recorded at the register (`token`: the transaction id, unique across the campaign: slot, launch,
//! count; the transaction node is named by it in hex):
//! * `begin` — one per participant (value: its slot), before the coordinator opens the transaction;
//! * `vote` — by the participant (value: 1 commit, 0 abort), before its vote is sent;
//! * `outcome` — by every party that learnt the outcome (value: 1 commit, 0 abort).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::IteratorRandom;
use rand::{Rng, SeedableRng};
use tokio::sync::{mpsc, oneshot};
use zklock::{Decision, Error, TwoPhaseCommit};
use zookeeper_client::Client;

use super::shared::record;
use super::{Contender, Turn, Workload};
use crate::checker::Violation;
use crate::clock::now_ns;
use crate::history::{Action, Op};
use crate::worker_args::WorkerArgs;

/// The probability of a commit vote.
const COMMIT: f64 = 0.85;

fn value(decision: Decision) -> i64 {
    match decision {
        Decision::Commit => 1,
        Decision::Abort => 0,
    }
}

/// The coordinator half of a `two-phase-commit` worker (the participant half runs beside it): a transaction per
/// operation among 1–`args.leases` of the contenders. `args.naive` (the negative control, `--no-fencing`): it
/// reports `commit` as soon as it has opened the transaction, and leaves without deciding.
#[derive(Default)]
pub struct Coordinator;

impl Workload for Coordinator {
    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let (args, timeout) = (cx.args, cx.timeout);
        let slots = args.leases.max(1);
        let tx = cx.next_id();
        let txid = format!("{tx:x}");
        let n = cx.rng.gen_range(1..=slots);
        let mut chosen: Vec<usize> = (0..slots).choose_multiple(&mut cx.rng, n);
        chosen.sort_unstable();
        for p in &chosen {
            record(cx.register(), Action::Begin, tx, *p as i64).await;
        }
        let names: Vec<String> = chosen.iter().map(|p| format!("p{p}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let tpc = TwoPhaseCommit::new(zk, &args.path)?;
        let coordinator = tokio::time::timeout(timeout, tpc.begin(&txid, &names))
            .await
            .map_err(|_| Error::Timeout)??;
        let decided = if args.naive {
            record(cx.register(), Action::Outcome, tx, 1).await;
            // Gone without deciding: the participants abort.
            drop(coordinator);
            Ok(())
        } else {
            match tokio::time::timeout(timeout * 4, coordinator.decide_timeout(timeout * 2)).await {
                Ok(Ok(decision)) => {
                    record(cx.register(), Action::Outcome, tx, value(decision)).await;
                    Ok(())
                }
                Ok(Err(err)) => Err(err),
                Err(_) => Err(Error::Timeout),
            }
        };
        tokio::time::sleep(Duration::from_millis(cx.rng.gen_range(20..150))).await;
        decided.map(|()| Turn::Done)
    }
}

/// A record a participant task asks for; the answer says it is recorded.
type Request = (Action, i64, i64, oneshot::Sender<()>);

/// The participant half of a `two-phase-commit` worker: an operation is one look at the transactions (and the wait
/// for the next change), with a task for each new one that names us. `args.naive`: it reports its own vote as the
/// outcome.
pub struct Participant {
    requests: mpsc::UnboundedSender<Request>,
    inbox: mpsc::UnboundedReceiver<Request>,
    tasks: tokio::task::JoinSet<()>,
    /// The transactions looked at with this session.
    handled: HashSet<String>,
}

impl Default for Participant {
    fn default() -> Participant {
        let (requests, inbox) = mpsc::unbounded_channel::<Request>();
        Participant {
            requests,
            inbox,
            tasks: tokio::task::JoinSet::new(),
            handled: HashSet::new(),
        }
    }
}

impl Workload for Participant {
    /// A new session looks again at every transaction not decided yet.
    fn connected(&mut self) {
        self.handled.clear();
    }

    async fn step(&mut self, cx: &mut Contender<'_>, zk: &Client) -> zklock::Result<Turn> {
        let args = cx.args;
        let me = format!("p{}", args.client);
        let listed = match zk.list_and_watch_children(&args.path).await {
            Ok((children, watcher)) => Some((children, watcher)),
            Err(zookeeper_client::Error::NoNode) => match zk.check_and_watch_stat(&args.path).await {
                Ok((None, watcher)) => Some((Vec::new(), watcher)),
                Ok(_) => return Ok(Turn::Idle),
                Err(err) => {
                    eprintln!("worker {}: watching {}: {err}", args.client, args.path);
                    None
                }
            },
            Err(err) => {
                eprintln!("worker {}: listing {}: {err}", args.client, args.path);
                None
            }
        };
        let Some((children, watcher)) = listed else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Ok(Turn::Idle);
        };
        for txid in children {
            if self.handled.insert(txid.clone()) {
                let (zk, args, me, requests) = (zk.clone(), args.clone(), me.clone(), self.requests.clone());
                self.tasks
                    .spawn(async move { take_part(&zk, &args, &me, &txid, &requests).await });
            }
        }
        let deadline =
            tokio::time::Instant::now() + Duration::from_nanos(args.until_ns.saturating_sub(now_ns()));
        let changed = watcher.changed();
        tokio::pin!(changed);
        loop {
            tokio::select! {
                _ = &mut changed => break,
                Some((action, token, value, done)) = self.inbox.recv() => {
                    record(cx.register(), action, token, value).await;
                    let _ = done.send(());
                }
                Some(_) = self.tasks.join_next() => {}
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        Ok(Turn::Done)
    }

    async fn finish(&mut self, _cx: &mut Contender<'_>) {
        self.tasks.abort_all();
    }
}

/// Records through the participant loop's register connection; returns once it is recorded.
async fn ask(requests: &mpsc::UnboundedSender<Request>, action: Action, token: i64, value: i64) {
    let (done, recorded) = oneshot::channel();
    if requests.send((action, token, value, done)).is_ok() {
        let _ = recorded.await;
    }
}

/// Takes part in transaction `txid` if it names us and is not decided yet: join, vote, learn the outcome.
async fn take_part(
    zk: &Client,
    args: &WorkerArgs,
    me: &str,
    txid: &str,
    requests: &mpsc::UnboundedSender<Request>,
) {
    let Ok(tx) = i64::from_str_radix(txid, 16) else {
        return;
    };
    let timeout = Duration::from_millis(args.session_timeout_ms);
    let Ok(tpc) = TwoPhaseCommit::new(zk, &args.path) else {
        return;
    };
    if !matches!(tpc.outcome(txid).await, Ok(None)) {
        return; // decided before we looked, or we cannot tell
    }
    let outcome = match tokio::time::timeout(timeout, tpc.join(txid, me)).await {
        Err(_) | Ok(Err(Error::NotAParticipant { .. })) => return,
        // An earlier process of this slot joined: learn how it ended.
        Ok(Err(Error::AlreadyJoined { .. })) => {
            tokio::time::timeout(timeout * 4, tpc.await_outcome(txid)).await
        }
        Ok(Err(err)) => {
            eprintln!("worker {}: joining {txid}: {err}", args.client);
            return;
        }
        Ok(Ok(ballot)) => {
            let mut rng = StdRng::seed_from_u64(args.seed ^ tx as u64);
            let vote = if rng.gen_bool(COMMIT) {
                Decision::Commit
            } else {
                Decision::Abort
            };
            tokio::time::sleep(Duration::from_millis(rng.gen_range(0..50))).await; // preparing
            ask(requests, Action::Vote, tx, value(vote)).await;
            if args.naive {
                ask(requests, Action::Outcome, tx, value(vote)).await;
            }
            tokio::time::timeout(timeout * 8, ballot.vote(vote)).await
        }
    };
    match outcome {
        Ok(Ok(decision)) if !args.naive => ask(requests, Action::Outcome, tx, value(decision)).await,
        Ok(Ok(_)) => {}
        Ok(Err(err)) => eprintln!("worker {}: {txid}: {err}", args.client),
        Err(_) => eprintln!("worker {}: {txid}: no outcome in time", args.client),
    }
}

/// The checker of the `two-phase-commit` workload: no transaction with two outcomes reported, and a commit only
/// when every participant the coordinator named recorded a commit vote (votes are recorded before they are sent).
pub fn check(ops: &[Op]) -> Vec<Violation> {
    let mut begins: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
    let mut votes: BTreeMap<(i64, u32), BTreeSet<i64>> = BTreeMap::new();
    let mut outcomes: BTreeMap<i64, BTreeMap<i64, BTreeSet<u32>>> = BTreeMap::new();
    for op in ops {
        match op.action {
            Action::Begin => {
                begins.entry(op.token).or_default().insert(op.value as u32);
            }
            Action::Vote => {
                votes.entry((op.token, op.client)).or_default().insert(op.value);
            }
            Action::Outcome => {
                outcomes
                    .entry(op.token)
                    .or_default()
                    .entry(op.value)
                    .or_default()
                    .insert(op.client);
            }
            _ => {}
        }
    }
    let mut violations = Vec::new();
    for (tx, reported) in &outcomes {
        if reported.len() > 1 {
            violations.push(format!(
                "two-phase commit: transaction {tx:#x} has two outcomes: commit reported by clients {:?}, abort by {:?}",
                reported.get(&1).cloned().unwrap_or_default(),
                reported.get(&0).cloned().unwrap_or_default()
            ));
        }
        if reported.contains_key(&1) {
            for p in begins.get(tx).into_iter().flatten() {
                let cast = votes.get(&(*tx, *p)).cloned().unwrap_or_default();
                if cast != BTreeSet::from([1]) {
                    violations.push(format!(
                        "two-phase commit: transaction {tx:#x} committed, but participant {p} voted {}",
                        match (cast.contains(&1), cast.contains(&0)) {
                            (false, false) => "nothing",
                            (false, true) => "abort",
                            _ => "both ways",
                        }
                    ));
                }
            }
        }
    }
    if outcomes.is_empty() {
        violations.push("two-phase commit: no transaction was decided".to_owned());
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Kind;
    use Decision::{Abort, Commit};

    fn op(client: u32, action: Action, token: i64, value: i64) -> Op {
        Op {
            seq: 0,
            at_ns: 0,
            client,
            token,
            kind: Kind::Shared,
            action,
            value,
            accepted: true,
            key: 0,
        }
    }

    /// The coordinator (client 0) begins `tx` with `participants`: one record per participant.
    fn begin(tx: i64, participants: &[i64]) -> Vec<Op> {
        participants
            .iter()
            .map(|&p| op(0, Action::Begin, tx, p))
            .collect()
    }

    /// `participant`'s vote in `tx`.
    fn vote(participant: u32, tx: i64, decision: Decision) -> Op {
        op(participant, Action::Vote, tx, value(decision))
    }

    /// The outcome of `tx` as `party` learnt it.
    fn outcome(party: u32, tx: i64, decision: Decision) -> Op {
        op(party, Action::Outcome, tx, value(decision))
    }

    #[test]
    fn split_outcomes_and_unfounded_commits_are_caught() {
        let ok = [
            begin(7, &[1, 2]),
            vec![vote(1, 7, Commit), vote(2, 7, Commit)],
            vec![outcome(0, 7, Commit), outcome(1, 7, Commit)],
            begin(8, &[1]),
            vec![vote(1, 8, Abort), outcome(1, 8, Abort), outcome(0, 8, Abort)],
        ]
        .concat();
        assert_eq!(check(&ok), Vec::<String>::new());
        let bad = [
            begin(7, &[1, 2]),
            vec![vote(1, 7, Commit), vote(2, 7, Abort)],
            vec![outcome(0, 7, Commit), outcome(2, 7, Abort)],
            begin(8, &[1]),
            vec![outcome(0, 8, Commit)], // participant 1 never voted
        ]
        .concat();
        let v = check(&bad);
        assert!(
            v.iter().any(|v| v.contains("7") && v.contains("two outcomes")),
            "{v:?}"
        );
        assert!(v.iter().any(|v| v.contains("participant 2 voted abort")), "{v:?}");
        assert!(
            v.iter().any(|v| v.contains("participant 1 voted nothing")),
            "{v:?}"
        );
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(check(&[]).len(), 1, "nothing decided at all");
    }
}
