//! Two-phase commit: one outcome for everybody; commit only when every participant voted commit; abort when a
//! participant or the coordinator goes away before deciding — by session expiry, by cancellation, and by `kill -9`
//! of a real process (this test binary, run again as one party: [`party_process`]); lost replies never change the
//! outcome.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::sync::mpsc;
use zklock::zookeeper_client::Client;
use zklock::{
    Ballot, Coordinator, Decision, Error, NodeKind, QueueEvent, Recipe, Role, Session, TwoPhaseCommit,
};
use zklock_testkit::{expire_session, opcode, unique_path};

use crate::on_every_server;
use crate::on_standalone_and_embedded;
use crate::support::*;

/// `join` then `vote`, in a task of its own (a participant waits for the outcome after voting).
fn vote(
    client: &Client,
    dir: &str,
    txid: &str,
    who: &str,
    vote: Decision,
) -> tokio::task::JoinHandle<zklock::Result<Decision>> {
    let (tpc, txid, who) = (
        TwoPhaseCommit::new(client, dir).unwrap(),
        txid.to_owned(),
        who.to_owned(),
    );
    tokio::spawn(async move { tpc.join(&txid, &who).await?.vote(vote).await })
}

/// A participant that has joined, voted, and waits for the outcome: the listener saw it wait on the transaction.
async fn voted_and_waiting(
    client: &Client,
    dir: &str,
    txid: &str,
    who: &str,
    decision: Decision,
) -> tokio::task::JoinHandle<zklock::Result<Decision>> {
    let (listener, mut rx) = events();
    let tpc = TwoPhaseCommit::new(Session::new(client).with_listener(listener), dir).unwrap();
    let (txid, who) = (txid.to_owned(), who.to_owned());
    let task = tokio::spawn(async move { tpc.join(&txid, &who).await?.vote(decision).await });
    // Created (our alive node), then Waiting: after the vote, for the outcome.
    until(&mut rx, "the participant to vote and wait", |e| {
        matches!(e, QueueEvent::Waiting { .. })
    })
    .await;
    task
}

/// A coordinator, on a session of its own, that began the transaction `tx` of `participants` in `dir`.
async fn begun(hosts: &str, dir: &str, participants: &[&str]) -> Coordinator {
    let tpc = TwoPhaseCommit::new(&client(hosts).await, dir).unwrap();
    tpc.begin("tx", participants).await.unwrap()
}

async fn outcome_of(task: tokio::task::JoinHandle<zklock::Result<Decision>>) -> Decision {
    eventually("the outcome", task)
        .await
        .unwrap()
        .expect("an outcome")
}

on_every_server! {
    async fn commit_when_every_participant_votes_commit(hosts: &str) {
        let dir = unique_path("2pc-commit");
        let coordinator_client = client(hosts).await;
        let tpc = TwoPhaseCommit::new(&coordinator_client, &dir).unwrap();
        let coordinator = tpc.begin("tx-1", &["a", "b", "c"]).await.unwrap();
        assert_eq!(coordinator.participants(), ["a", "b", "c"]);
        let mut voters = Vec::new();
        for who in ["a", "b"] {
            voters.push(voted_and_waiting(&client(hosts).await, &dir, "tx-1", who, Decision::Commit).await);
        }
        let deciding = tokio::spawn(coordinator.decide());
        // Two of three votes: nothing decided.
        let observer = client(hosts).await;
        let found = zklock::inspect(&observer, &format!("{dir}/tx-1")).await.unwrap().unwrap();
        assert_eq!(found.recipe, Recipe::Transaction { participants: 3, joined: 2, votes: 2, commit_votes: 2, outcome: None });
        let rows: Vec<_> = found.participants.iter().map(|p| (p.kind, p.role)).collect();
        assert_eq!(rows, [(NodeKind::Coordinator, Role::Holder), (NodeKind::Vote, Role::Voted), (NodeKind::Vote, Role::Voted)]);
        assert_eq!(tpc.outcome("tx-1").await.unwrap(), None);
        assert!(!deciding.is_finished());

        voters.push(vote(&client(hosts).await, &dir, "tx-1", "c", Decision::Commit));
        assert_eq!(eventually("the coordinator", deciding).await.unwrap().unwrap(), Decision::Commit);
        for voter in voters {
            assert_eq!(outcome_of(voter).await, Decision::Commit);
        }
        assert_eq!(tpc.outcome("tx-1").await.unwrap(), Some(Decision::Commit));
        assert_eq!(tpc.await_outcome("tx-1").await.unwrap(), Decision::Commit, "an observer reads the same");

        // Everybody gone: the transaction can be removed, once.
        let tx = format!("{dir}/tx-1");
        await_children(&observer, &tx, "the parties' live nodes to go", |c| !c.iter().any(|n| n.starts_with("alive-") || n.starts_with("coordinator-"))).await;
        let found = zklock::inspect(&observer, &tx).await.unwrap().unwrap();
        assert!(matches!(found.recipe, Recipe::Transaction { outcome: Some(Decision::Commit), commit_votes: 3, .. }), "{:?}", found.recipe);
        // The observer saw the parties go; on an ensemble the coordinator's member may not have yet.
        coordinator_client.sync(&tx).await.unwrap();
        assert!(tpc.remove("tx-1").await.unwrap());
        assert!(!tpc.remove("tx-1").await.unwrap());
        assert_eq!(tpc.outcome("tx-1").await.unwrap(), None);
    }

    async fn one_abort_vote_aborts_for_everybody(hosts: &str) {
        let dir = unique_path("2pc-abort-vote");
        let c = client(hosts).await;
        let tpc = TwoPhaseCommit::new(&c, &dir).unwrap();
        let coordinator = tpc.begin("tx", &["a", "b", "c"]).await.unwrap();
        let a = voted_and_waiting(&client(hosts).await, &dir, "tx", "a", Decision::Commit).await;
        let deciding = tokio::spawn(coordinator.decide());
        // b's abort decides at once, without c.
        assert_eq!(outcome_of(vote(&client(hosts).await, &dir, "tx", "b", Decision::Abort)).await, Decision::Abort);
        assert_eq!(outcome_of(a).await, Decision::Abort);
        assert_eq!(eventually("the coordinator", deciding).await.unwrap().unwrap(), Decision::Abort);
        // c, late, votes commit and learns the abort.
        assert_eq!(outcome_of(vote(&client(hosts).await, &dir, "tx", "c", Decision::Commit)).await, Decision::Abort);
    }

    async fn participant_expiring_before_its_vote_aborts(hosts: &str) {
        let dir = unique_path("2pc-participant-expiry");
        let coordinator = begun(hosts, &dir, &["a", "b"]).await;
        let doomed = client(hosts).await;
        let ballot: Ballot = TwoPhaseCommit::new(&doomed, &dir).unwrap().join("tx", "a").await.unwrap();
        let b = voted_and_waiting(&client(hosts).await, &dir, "tx", "b", Decision::Commit).await;
        let deciding = tokio::spawn(coordinator.decide());
        expire_session(hosts, &doomed).await;
        assert_eq!(eventually("the coordinator", deciding).await.unwrap().unwrap(), Decision::Abort);
        assert_eq!(outcome_of(b).await, Decision::Abort);
        assert!(ballot.vote(Decision::Commit).await.unwrap_err().is_terminal(), "too late to vote");
        // a, restarted on a new session, cannot join again; it reads the outcome.
        let again = TwoPhaseCommit::new(&client(hosts).await, &dir).unwrap();
        assert!(matches!(again.join("tx", "a").await, Err(Error::AlreadyJoined { .. })));
        assert_eq!(again.await_outcome("tx").await.unwrap(), Decision::Abort);
    }

    async fn participant_expiring_after_its_commit_vote_still_commits(hosts: &str) {
        let dir = unique_path("2pc-participant-expiry-after-vote");
        let coordinator = begun(hosts, &dir, &["a", "b"]).await;
        let doomed = client(hosts).await;
        let a = voted_and_waiting(&doomed, &dir, "tx", "a", Decision::Commit).await;
        expire_session(hosts, &doomed).await;
        assert!(eventually("a's wait to end", a).await.unwrap().unwrap_err().is_terminal());
        // Its vote stands.
        let b = vote(&client(hosts).await, &dir, "tx", "b", Decision::Commit);
        assert_eq!(eventually("the coordinator", coordinator.decide()).await.unwrap(), Decision::Commit);
        assert_eq!(outcome_of(b).await, Decision::Commit);
        assert_eq!(TwoPhaseCommit::new(&client(hosts).await, &dir).unwrap().outcome("tx").await.unwrap(), Some(Decision::Commit), "what a restarted a reads");
    }

    async fn coordinator_expiring_before_deciding_aborts(hosts: &str) {
        let dir = unique_path("2pc-coordinator-expiry");
        let doomed = client(hosts).await;
        let coordinator = TwoPhaseCommit::new(&doomed, &dir).unwrap().begin("tx", &["a", "b"]).await.unwrap();
        // Every vote is commit, but the coordinator never decides: it is gone.
        let a = voted_and_waiting(&client(hosts).await, &dir, "tx", "a", Decision::Commit).await;
        let b = voted_and_waiting(&client(hosts).await, &dir, "tx", "b", Decision::Commit).await;
        expire_session(hosts, &doomed).await;
        assert_eq!(outcome_of(a).await, Decision::Abort);
        assert_eq!(outcome_of(b).await, Decision::Abort);
        assert!(coordinator.decide().await.unwrap_err().is_terminal());
    }

    async fn cancelled_parties_abort(hosts: &str) {
        let dir = unique_path("2pc-cancel");
        let c = client(hosts).await;
        let tpc = TwoPhaseCommit::new(&c, &dir).unwrap();
        let observer = TwoPhaseCommit::new(&client(hosts).await, &dir).unwrap();

        // A ballot dropped before its vote.
        let coordinator = tpc.begin("dropped-ballot", &["a", "b"]).await.unwrap();
        let b = voted_and_waiting(&client(hosts).await, &dir, "dropped-ballot", "b", Decision::Commit).await;
        drop(tpc.join("dropped-ballot", "a").await.unwrap());
        assert_eq!(eventually("the coordinator", coordinator.decide()).await.unwrap(), Decision::Abort);
        assert_eq!(outcome_of(b).await, Decision::Abort);

        // A coordinator dropped before deciding.
        drop(tpc.begin("dropped-coordinator", &["a"]).await.unwrap());
        assert_eq!(outcome_of(vote(&client(hosts).await, &dir, "dropped-coordinator", "a", Decision::Commit)).await, Decision::Abort);

        // A begin dropped with its request in flight (sent on the first poll): the transaction it made aborts.
        {
            let mut begin = Box::pin(tpc.begin("dropped-begin", &["a"]));
            assert!(futures::poll!(&mut begin).is_pending());
        }
        assert!(c.check_stat(&format!("{dir}/dropped-begin")).await.unwrap().is_some(), "the multi was sent");
        assert_eq!(eventually("the observer", observer.await_outcome("dropped-begin")).await.unwrap(), Decision::Abort);

        // A vote dropped after it was sent stands; the transaction can still commit.
        let coordinator = tpc.begin("dropped-wait", &["a"]).await.unwrap();
        let ballot = tpc.join("dropped-wait", "a").await.unwrap();
        {
            let mut voting = Box::pin(ballot.vote(Decision::Commit));
            assert!(futures::poll!(&mut voting).is_pending());
        }
        assert_eq!(eventually("the coordinator", coordinator.decide()).await.unwrap(), Decision::Commit);
    }

    async fn coordinator_aborts_at_its_deadline(hosts: &str) {
        let dir = unique_path("2pc-deadline");
        let c = client(hosts).await;
        let tpc = TwoPhaseCommit::new(&c, &dir).unwrap();
        let coordinator = tpc.begin("tx", &["a", "never"]).await.unwrap();
        let a = voted_and_waiting(&client(hosts).await, &dir, "tx", "a", Decision::Commit).await;
        let started = tokio::time::Instant::now();
        assert_eq!(coordinator.decide_timeout(Duration::from_millis(500)).await.unwrap(), Decision::Abort);
        assert!(started.elapsed() >= Duration::from_millis(500), "not before the deadline");
        assert_eq!(outcome_of(a).await, Decision::Abort);
        // An explicit abort after the fact reads what was decided.
        let coordinator = tpc.begin("tx-2", &["a"]).await.unwrap();
        assert_eq!(coordinator.abort().await.unwrap(), Decision::Abort);
        assert_eq!(outcome_of(vote(&client(hosts).await, &dir, "tx-2", "a", Decision::Commit)).await, Decision::Abort);
    }

    async fn lost_replies_change_nothing(hosts: &str) {
        let dir = unique_path("2pc-lost-replies");
        let (proxy, through) = proxied_client(hosts).await;
        let tpc = TwoPhaseCommit::new(&through, &dir).unwrap();
        // Made beforehand, so that each fault hits the request it is meant for.
        drop(tpc.begin("warm-up", &["a"]).await.unwrap());
        // begin's multi: executed, reply lost; the retry finds our coordinator node.
        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let coordinator = tpc.begin("tx", &["a", "b"]).await.unwrap();
        assert_eq!(proxy.lost_replies(), 1);
        // join's multi, likewise.
        proxy.drop_reply_and_cut(&[opcode::MULTI]);
        let a = tpc.join("tx", "a").await.unwrap();
        assert_eq!(proxy.lost_replies(), 2);
        // The vote's create: executed, reply lost.
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        let a = tokio::spawn(a.vote(Decision::Commit));
        eventually("the vote's reply to be lost", async {
            while proxy.lost_replies() < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        let b = voted_and_waiting(&client(hosts).await, &dir, "tx", "b", Decision::Commit).await;
        // The outcome's create: executed, reply lost; the coordinator reads what it wrote.
        proxy.drop_reply_and_cut(opcode::ALL_CREATES);
        assert_eq!(eventually("the coordinator", coordinator.decide()).await.unwrap(), Decision::Commit);
        assert_eq!(proxy.lost_replies(), 4);
        assert_eq!(outcome_of(a).await, Decision::Commit);
        assert_eq!(outcome_of(b).await, Decision::Commit);
        let observer = client(hosts).await;
        let tx = format!("{dir}/tx");
        let names = children(&observer, &tx).await;
        assert_eq!(names.iter().filter(|n| n.starts_with("vote-")).count(), 2, "{names:?}");
    }

    async fn misuse_is_refused(hosts: &str) {
        let dir = unique_path("2pc-misuse");
        let c = client(hosts).await;
        let tpc = TwoPhaseCommit::new(&c, &dir).unwrap();
        let coordinator = tpc.begin("tx", &["a"]).await.unwrap();
        assert!(matches!(tpc.begin("tx", &["a"]).await, Err(Error::TransactionExists { .. })));
        assert!(matches!(tpc.join("tx", "z").await, Err(Error::NotAParticipant { .. })));
        let ballot = tpc.join("tx", "a").await.unwrap();
        assert!(matches!(TwoPhaseCommit::new(&client(hosts).await, &dir).unwrap().join("tx", "a").await, Err(Error::AlreadyJoined { .. })));
        for bad in [&["a", "a"][..], &[][..]] {
            assert!(matches!(tpc.begin("other", bad).await, Err(Error::InvalidArgument(_))), "{bad:?}");
        }
        for bad in [&["a/b"][..], &[""][..]] {
            assert!(matches!(tpc.begin("other", bad).await, Err(Error::InvalidPath { .. })), "{bad:?}");
        }
        assert!(matches!(tpc.begin("a/b", &["a"]).await, Err(Error::InvalidPath { .. })));
        // The refusals changed nothing: the transaction still commits.
        let voting = tokio::spawn(ballot.vote(Decision::Commit));
        assert_eq!(coordinator.decide().await.unwrap(), Decision::Commit);
        assert_eq!(outcome_of(voting).await, Decision::Commit);
    }
}

// ---- kill -9: every party in its own process ----

/// What a party process is told: `hosts dir role txid participants-or-name`, separated by U+001F.
const PARTY_ENV: &str = "ZKLOCK_TEST_2PC_PARTY";

/// One party of a transaction in its own process: this test binary, run again for [`party_process`] alone.
struct Party {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Party {
    /// `coordinator TXID P1,P2,…` (begins, says `READY`, decides on a `decide` line, says `OUTCOME …`),
    /// `participant TXID NAME` (joins, says `READY`, votes what the next line says, says `OUTCOME …`) or
    /// `observer TXID` (says `OUTCOME …` of `await_outcome`).
    fn spawn(hosts: &str, dir: &str, args: &[&str]) -> Party {
        let mut spec = vec![hosts, dir];
        spec.extend_from_slice(args);
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "two_phase_commit::party_process",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(PARTY_ENV, spec.join("\u{1f}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = zklock_testkit::spawn_tied_to_process(command).expect("the party process starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                // The test harness says things too (`test … ... ` before the first line of ours, on the same
                // line); the party's lines carry a prefix.
                if let Some((_, said)) = line.split_once("2PC ") {
                    let _ = tx.send(said.to_owned());
                }
            }
        });
        Party { child, stdin, lines }
    }

    /// A party that said `READY` (see [`Party::spawn`]).
    async fn ready(hosts: &str, dir: &str, args: &[&str]) -> Party {
        let mut party = Party::spawn(hosts, dir, args);
        party.expect("READY").await;
        party
    }

    async fn expect(&mut self, word: &str) -> String {
        let line = eventually(&format!("the party to say {word}"), self.lines.recv())
            .await
            .unwrap_or_else(|| panic!("the party exited before it said {word}"));
        line.strip_prefix(word)
            .map(|rest| rest.trim().to_owned())
            .unwrap_or_else(|| panic!("the party said {line:?} where {word} was expected"))
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    async fn outcome(&mut self) -> Decision {
        match self.expect("OUTCOME").await.as_str() {
            "commit" => Decision::Commit,
            "abort" => Decision::Abort,
            other => panic!("the party reported {other:?}"),
        }
    }

    /// kill -9, and reap it.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Party {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One party of the kill -9 tests, in its own process (ignored: the tests run it with `--ignored`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "one party of the kill -9 tests, run by them in a process of its own"]
async fn party_process() {
    let Ok(spec) = std::env::var(PARTY_ENV) else {
        return;
    };
    let args: Vec<&str> = spec.split('\u{1f}').collect();
    let say = |line: String| println!("2PC {line}");
    let next_line = || async {
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            line.trim().to_owned()
        })
        .await
        .unwrap()
    };
    // A short session, so that the others see a killed party's nodes go soon.
    let client = client_with_timeout(args[0], Duration::from_secs(4)).await;
    let tpc = TwoPhaseCommit::new(&client, args[1]).unwrap();
    match args[2..] {
        ["coordinator", txid, participants] => {
            let participants: Vec<&str> = participants.split(',').collect();
            let coordinator = tpc.begin(txid, &participants).await.unwrap();
            say("READY".into());
            assert_eq!(next_line().await, "decide");
            say(format!("OUTCOME {}", coordinator.decide().await.unwrap()));
        }
        ["participant", txid, name] => {
            let ballot = tpc.join(txid, name).await.unwrap();
            say("READY".into());
            let vote = match next_line().await.as_str() {
                "commit" => Decision::Commit,
                "abort" => Decision::Abort,
                other => panic!("no such vote {other:?}"),
            };
            say(format!("OUTCOME {}", ballot.vote(vote).await.unwrap()));
        }
        ["observer", txid] => say(format!("OUTCOME {}", tpc.await_outcome(txid).await.unwrap())),
        _ => panic!("unknown party {args:?}"),
    }
}

on_standalone_and_embedded! {
    async fn participant_killed_before_voting_aborts_for_every_survivor(hosts: &str) {
        let dir = unique_path("2pc-kill-participant");
        let c = client(hosts).await;
        let coordinator = TwoPhaseCommit::new(&c, &dir).unwrap().begin("tx", &["a", "b", "c"]).await.unwrap();
        let a = Party::ready(hosts, &dir, &["participant", "tx", "a"]).await;
        let mut b = Party::ready(hosts, &dir, &["participant", "tx", "b"]).await;
        b.send("commit");
        let c_vote = voted_and_waiting(&client(hosts).await, &dir, "tx", "c", Decision::Commit).await;
        let deciding = tokio::spawn(coordinator.decide());
        let observer = TwoPhaseCommit::new(&client(hosts).await, &dir).unwrap();
        assert_eq!(observer.outcome("tx").await.unwrap(), None, "undecided while a may still vote");
        a.kill();
        // Every survivor — coordinator, b (a process), c, an observer — learns the abort.
        assert_eq!(eventually("the coordinator", deciding).await.unwrap().unwrap(), Decision::Abort);
        assert_eq!(b.outcome().await, Decision::Abort);
        assert_eq!(outcome_of(c_vote).await, Decision::Abort);
        assert_eq!(observer.outcome("tx").await.unwrap(), Some(Decision::Abort));
    }

    async fn coordinator_killed_before_deciding_aborts_for_every_survivor(hosts: &str) {
        let dir = unique_path("2pc-kill-coordinator");
        let coordinator = Party::ready(hosts, &dir, &["coordinator", "tx", "a,b"]).await;
        let mut a = Party::ready(hosts, &dir, &["participant", "tx", "a"]).await;
        a.send("commit");
        // Every vote is commit; the coordinator is killed before it is told to decide.
        let b = voted_and_waiting(&client(hosts).await, &dir, "tx", "b", Decision::Commit).await;
        let mut observer = Party::spawn(hosts, &dir, &["observer", "tx"]);
        coordinator.kill();
        assert_eq!(a.outcome().await, Decision::Abort);
        assert_eq!(outcome_of(b).await, Decision::Abort);
        assert_eq!(observer.outcome().await, Decision::Abort);
    }

    async fn participant_killed_after_voting_commit_is_bound_by_the_commit(hosts: &str) {
        let dir = unique_path("2pc-kill-after-vote");
        let mut coordinator = Party::ready(hosts, &dir, &["coordinator", "tx", "a,b"]).await;
        coordinator.send("decide");
        let mut a = Party::ready(hosts, &dir, &["participant", "tx", "a"]).await;
        a.send("commit");
        let c = client(hosts).await;
        await_children(&c, &format!("{dir}/tx"), "a's vote", |names| names.iter().any(|n| n == "vote-a")).await;
        a.kill();
        let b = vote(&client(hosts).await, &dir, "tx", "b", Decision::Commit);
        assert_eq!(outcome_of(b).await, Decision::Commit);
        assert_eq!(coordinator.outcome().await, Decision::Commit);
        // a, restarted, reads the outcome it is bound by.
        let mut restarted = Party::spawn(hosts, &dir, &["observer", "tx"]);
        assert_eq!(restarted.outcome().await, Decision::Commit);
    }
}
