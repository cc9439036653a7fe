//! Two-phase commit, the ZooKeeper recipe: a coordinator opens a transaction naming its participants, each
//! participant votes commit or abort, and everybody learns one outcome — commit only if every participant voted
//! commit; abort when one voted abort, or a participant or the coordinator went away before deciding.
//!
//! Layout under `<path>/<txid>` (the transaction node, persistent, holding the participants' names, one a line):
//!
//! | node | mode | written by | meaning |
//! |---|---|---|---|
//! | `coordinator-<uuid>` | ephemeral | the coordinator, in one `multi` with the transaction node | the coordinator is there |
//! | `joined-<p>` | persistent | participant `p`, in one `multi` with its `alive-` node | `p` took part (once) |
//! | `alive-<uuid>-<p>` | ephemeral | participant `p` | `p` is there |
//! | `vote-<p>` | persistent | participant `p` | its vote: `commit` or `abort` |
//! | `outcome` | persistent | whoever decides first (create: only one can) | `commit` or `abort` |
//!
//! **The decision is one create.** Everybody watches the transaction's children and applies the same rules to a
//! listing: the coordinator alone may write `outcome` = `commit`, and only once it has read `vote-<p>` = `commit` for
//! every participant; anybody writes `outcome` = `abort` as soon as a listing shows a reason — a `vote-<p>` =
//! `abort`, a participant that joined and is gone without a vote (`joined-<p>` without `alive-…-<p>` or
//! `vote-<p>`), or no coordinator node — and the coordinator also when its deadline passes. ZooKeeper creates a node
//! once: whichever create comes first is the outcome, the others fail with `NodeExists`, and every party returns
//! what it then *reads* in `outcome`, never what it tried to write. So two parties can never learn different
//! outcomes.
//!
//! Votes are persistent: a participant that voted commit and then died is still counted (its vote stands; it learns
//! the outcome again with [`TwoPhaseCommit::outcome`]). What goes with a session are the `coordinator-` and `alive-`
//! nodes: a participant whose session ends before it voted, and a coordinator whose session ends before the outcome,
//! make the transaction abort — a state the listing shows, not an event somebody had to see. The nodes of one
//! process carry a fresh uuid, so a create retried after a lost reply finds its node, and a cancelled attempt
//! never deletes anybody else's.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::path::child_path;
use crate::node::own::{Created, OwnNode};
use crate::recipes::coordination::transaction::{Decision, Look, Tx, ALIVE, COORDINATOR, JOINED, VOTE};
use crate::session::cas::{Committed, Write};
use crate::session::listener::QueueEvent;
use crate::session::Session;

/// Two-phase commit transactions under one directory: a coordinator [`begin`](TwoPhaseCommit::begin)s a
/// transaction, each participant [`join`](TwoPhaseCommit::join)s it and [`vote`](Ballot::vote)s, everybody learns
/// the same [`Decision`].
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// use std::time::Duration;
/// use zklock::{Decision, TwoPhaseCommit};
///
/// let transactions = TwoPhaseCommit::new(&client, "/transactions")?;
/// // The coordinator (any process):
/// let coordinator = transactions.begin("order-4242", &["billing", "stock"]).await?;
/// // Each participant (its own process, knowing the transaction id):
/// let ballot = transactions.join("order-4242", "billing").await?;
/// let outcome = ballot.vote(Decision::Commit).await?; // returns once the outcome is known
/// // The coordinator decides once every vote is in (abort after 30 s without them):
/// assert_eq!(coordinator.decide_timeout(Duration::from_secs(30)).await?, outcome);
/// # Ok(()) }
/// ```
///
/// # Guarantees
/// * **One outcome**: every party that learns an outcome learns the same one (it is one node, created once).
/// * **Commit only if every participant voted commit** (votes are created once and never change).
/// * **Abort when somebody goes away before deciding**: a participant whose session ends (or whose
///   [`Ballot`] is dropped) before it voted, or a coordinator whose session ends (or whose [`Coordinator`] is
///   dropped) before the outcome; and when a participant does not vote before [`Coordinator::decide_timeout`]'s
///   deadline. Any live party notices and writes the abort.
/// * A participant that voted commit and died is bound by the outcome, which may be commit: on restart it reads it
///   with [`outcome`](TwoPhaseCommit::outcome).
///
/// Transaction ids must never be reused: [`remove`](TwoPhaseCommit::remove) a transaction only when nobody will
/// look at it again.
///
/// # Errors
/// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends; [`Error::InvalidPath`] for an invalid
/// transaction id or participant name; [`Error::TransactionExists`], [`Error::NotAParticipant`],
/// [`Error::AlreadyJoined`] as each method says; [`Error::NodeDeleted`] when the transaction was removed while we
/// used it; [`Error::CorruptData`] for a vote or outcome node that holds neither `commit` nor `abort`;
/// [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Events
/// The [`Session`]'s listener receives `Created` (our `coordinator-` or `alive-` node), `Waiting`/`Woken` (on the
/// transaction node, while waiting for it to exist, for votes or for the outcome).
///
/// # Cancellation safety
/// Every future may be dropped at any await point. A dropped `begin` or [`Coordinator`] removes the coordinator
/// node, and a dropped `join` or [`Ballot`] (before its vote was sent) the participant's `alive-` node: the
/// transaction then aborts, as if that party had died. A vote once sent stands.
#[derive(Debug, Clone)]
pub struct TwoPhaseCommit {
    session: Session,
    path: String,
}

impl TwoPhaseCommit {
    /// Transactions under `path` (created with its parents, as container nodes, on the first `begin`) on
    /// `session` — a [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<TwoPhaseCommit> {
        Ok(TwoPhaseCommit {
            session: session.into(),
            path: crate::base::path::validate(path)?,
        })
    }

    /// The session and policies this uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The directory of the transactions.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The transaction `txid`, checked.
    fn tx(&self, txid: &str) -> Result<Tx> {
        let dir = child_path(&self.path, txid);
        check_name(&dir, txid)?;
        Ok(Tx {
            // One ZooKeeper session for this transaction's nodes (a reconnecting session may change in between).
            session: self.session.pinned(),
            dir,
        })
    }

    /// As the coordinator: opens transaction `txid` for `participants` (each a name that is a valid node name).
    /// Returns at once; [`Coordinator::decide`] waits for the votes.
    ///
    /// # Errors
    /// [`Error::TransactionExists`] if `txid` is in use; [`Error::InvalidPath`] for an invalid `txid` or
    /// participant name, no participant, or one named twice; see [`TwoPhaseCommit`].
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it removes our coordinator node: a transaction it opened aborts.
    pub async fn begin(&self, txid: &str, participants: &[&str]) -> Result<Coordinator> {
        let tx = self.tx(txid)?;
        let refuse = |what: String| Err(Error::InvalidArgument(format!("transaction {}: {what}", tx.dir)));
        if participants.is_empty() {
            return refuse("a transaction needs at least one participant".to_owned());
        }
        let mut names = BTreeSet::new();
        for participant in participants {
            check_name(&child_path(&tx.dir, participant), participant)?;
            if !names.insert(*participant) {
                return refuse(format!("the participant {participant:?} is named twice"));
            }
        }
        let listed = participants.join("\n");
        let name = format!("{COORDINATOR}{}", uuid::Uuid::new_v4().simple());
        let before = [Write::Create(&tx.dir, listed.as_bytes(), CreateMode::Persistent)];
        let own = tx
            .session
            .create_own(&tx.dir, &name, &[], &before, Some(CreateMode::Container));
        let node = match own.await? {
            Created::Refused {
                index: 0,
                error: zk::Error::NodeExists,
            } => return Err(Error::TransactionExists { path: tx.dir.clone() }),
            own => own.made(&tx.dir)?,
        };
        tx.session.emit(QueueEvent::Created { path: node.path() });
        tracing::debug!(tx = %tx.dir, "transaction opened");
        Ok(Coordinator {
            tx,
            node,
            participants: participants.iter().map(|p| (*p).to_owned()).collect(),
        })
    }

    /// As participant `participant`: waits until transaction `txid` exists, checks that it names us, and takes
    /// part. Vote with [`Ballot::vote`].
    ///
    /// # Errors
    /// [`Error::NotAParticipant`] if the transaction does not name `participant`; [`Error::AlreadyJoined`] if
    /// `participant` took part already — another process under that name, or an earlier attempt of ours that went
    /// away before voting (the transaction then aborts; [`await_outcome`](TwoPhaseCommit::await_outcome) tells); see
    /// [`TwoPhaseCommit`].
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it removes our `alive-` node: if it had joined, the transaction aborts.
    pub async fn join(&self, txid: &str, participant: &str) -> Result<Ballot> {
        let tx = self.tx(txid)?;
        check_name(&child_path(&tx.dir, participant), participant)?;
        let participants = tx.wait_for_participants().await?;
        if !participants.iter().any(|p| p == participant) {
            return Err(Error::NotAParticipant {
                path: tx.dir.clone(),
                participant: participant.to_owned(),
            });
        }
        let name = format!("{ALIVE}{}-{participant}", uuid::Uuid::new_v4().simple());
        let joined = child_path(&tx.dir, &format!("{JOINED}{participant}"));
        let before = [Write::Create(&joined, &[], CreateMode::Persistent)];
        let node = match tx.session.create_own(&tx.dir, &name, &[], &before, None).await? {
            Created::Refused {
                index: 0,
                error: zk::Error::NodeExists,
            } => {
                return Err(Error::AlreadyJoined {
                    path: tx.dir.clone(),
                    participant: participant.to_owned(),
                })
            }
            Created::Refused {
                error: zk::Error::NoNode,
                ..
            } => return Err(Error::NodeDeleted { path: tx.dir.clone() }),
            own => own.made(&tx.dir)?,
        };
        tx.session.emit(QueueEvent::Created { path: node.path() });
        Ok(Ballot {
            tx,
            node,
            participant: participant.to_owned(),
            participants,
        })
    }

    /// The outcome of transaction `txid` if it has been decided; `None` if not (or if there is no such
    /// transaction). A look, without waiting and without deciding anything.
    ///
    /// # Errors
    /// See [`TwoPhaseCommit`].
    pub async fn outcome(&self, txid: &str) -> Result<Option<Decision>> {
        self.tx(txid)?.read_outcome().await
    }

    /// Waits for the outcome of transaction `txid` (for it to exist first, if need be), as an observer — a
    /// participant that restarted, say. It applies the abort rules like everybody else: it writes the abort when it
    /// sees a reason (a participant gone before voting, an abort vote, no coordinator).
    ///
    /// # Errors
    /// See [`TwoPhaseCommit`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it creates nothing but, possibly, the outcome.
    pub async fn await_outcome(&self, txid: &str) -> Result<Decision> {
        let tx = self.tx(txid)?;
        let participants = tx.wait_for_participants().await?;
        tx.settle(&participants, false, None).await
    }

    /// Removes the decided transaction `txid` once nobody takes part any more (no coordinator or participant node
    /// left). Returns whether it removed it: `false` if it does not exist, is not decided, or somebody is still
    /// there. One `multi`, so a participant arriving meanwhile keeps it.
    ///
    /// # Errors
    /// See [`TwoPhaseCommit`].
    pub async fn remove(&self, txid: &str) -> Result<bool> {
        let tx = self.tx(txid)?;
        let children = self.session.list_or_empty(&tx.dir).await?;
        let look = Look::of(&children);
        if !look.outcome || look.coordinator || !look.alive.is_empty() {
            return Ok(false);
        }
        let paths: Vec<String> = children.iter().map(|child| child_path(&tx.dir, child)).collect();
        let mut writes: Vec<Write> = paths.iter().map(|path| Write::Delete(path, None)).collect();
        // The transaction node last: after a lost reply, its absence says our `multi` went through.
        writes.push(Write::Delete(&tx.dir, None));
        match self.session.commit_once(&writes, true).await? {
            Committed::Done { .. } => Ok(true),
            Committed::Refused {
                error: zk::Error::NoNode | zk::Error::NotEmpty,
                ..
            } => Ok(false),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
        }
    }
}

/// A transaction id or participant name must be one node name: no `/`, not empty (and nothing ZooKeeper refuses).
fn check_name(path: &str, name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "a transaction id or participant name must not be empty"
    } else if name.contains('/') {
        "a transaction id or participant name must not contain /"
    } else {
        return crate::base::path::validate(path).map(drop);
    };
    let path = path.to_owned();
    Err(Error::InvalidPath { path, reason })
}

/// The coordinator of one transaction, from [`TwoPhaseCommit::begin`] until it has decided.
///
/// Dropping it before the outcome exists removes the coordinator node: the transaction aborts.
#[derive(Debug)]
pub struct Coordinator {
    tx: Tx,
    node: OwnNode,
    participants: Vec<String>,
}

impl Coordinator {
    /// The transaction node's full path.
    pub fn path(&self) -> &str {
        &self.tx.dir
    }

    /// The participants, in the order given to `begin`.
    pub fn participants(&self) -> &[String] {
        &self.participants
    }

    /// Waits for the votes and decides: commit once every participant voted commit, abort as soon as one voted
    /// abort or went away before voting (or somebody else decided already). Returns the outcome as written.
    ///
    /// # Errors
    /// See [`TwoPhaseCommit`]. Our session ending is an error: the others then abort (unless the outcome was written
    /// already); read it later with [`TwoPhaseCommit::outcome`].
    ///
    /// # Cancellation safety
    /// Dropped before the outcome exists, the transaction aborts (our coordinator node goes).
    pub async fn decide(self) -> Result<Decision> {
        self.decide_until(None).await
    }

    /// Like [`decide`](Coordinator::decide), but writes the abort itself when not every participant has voted
    /// within `timeout` (a participant that never came, or is slow).
    pub async fn decide_timeout(self, timeout: Duration) -> Result<Decision> {
        self.decide_until(Some(Instant::now() + timeout)).await
    }

    /// Aborts the transaction now (unless it has been decided already) and returns the outcome.
    pub async fn abort(self) -> Result<Decision> {
        let outcome = self
            .tx
            .write_outcome(Decision::Abort, "the coordinator aborted")
            .await?;
        drop(self.node);
        Ok(outcome)
    }

    async fn decide_until(self, deadline: Option<Instant>) -> Result<Decision> {
        let outcome = self.tx.settle(&self.participants, true, deadline).await?;
        // Decided: our node has done its work (deleted in the background).
        drop(self.node);
        Ok(outcome)
    }
}

/// A participant's place in one transaction, from [`TwoPhaseCommit::join`] until it has voted and learnt the
/// outcome.
///
/// Dropping it before voting removes our `alive-` node: the transaction aborts.
#[derive(Debug)]
pub struct Ballot {
    tx: Tx,
    node: OwnNode,
    participant: String,
    participants: Vec<String>,
}

impl Ballot {
    /// The transaction node's full path.
    pub fn path(&self) -> &str {
        &self.tx.dir
    }

    /// Our participant name.
    pub fn participant(&self) -> &str {
        &self.participant
    }

    /// Every participant of the transaction, as the coordinator listed them.
    pub fn participants(&self) -> &[String] {
        &self.participants
    }

    /// Votes, then waits for the outcome and returns it. A vote once cast stands, also if we die before the outcome.
    ///
    /// # Errors
    /// See [`TwoPhaseCommit`]. Our session ending while we wait is an error; the outcome can be read later with
    /// [`TwoPhaseCommit::outcome`].
    ///
    /// # Cancellation safety
    /// Dropped before the vote was sent, the transaction aborts (our `alive-` node goes first); dropped after, the
    /// vote stands and only the wait for the outcome ends.
    pub async fn vote(self, vote: Decision) -> Result<Decision> {
        let (tx, participant) = (&self.tx, &self.participant);
        // Or cast by our attempt whose reply was lost: only we vote as this participant (`joined-` is created once).
        tx.create(&format!("{VOTE}{participant}"), vote.bytes()).await?;
        tracing::debug!(tx = %tx.dir, %participant, %vote, "voted");
        let outcome = tx.settle(&self.participants, false, None).await;
        // Our part is done (the node is deleted in the background).
        drop(self.node);
        outcome
    }
}
