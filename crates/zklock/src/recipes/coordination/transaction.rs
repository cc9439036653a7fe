//! One transaction of the two-phase commit: what a listing of its node shows ([`Look`]), the rules that settle its
//! outcome from that, and [`Tx`], the node with the session that reaches it.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::base::error::{Error, Result};
use crate::base::idioms;
use crate::base::path::child_path;
use crate::cache::Cache;
use crate::session::Session;

// The names of a transaction node's children (the layout in `two_phase_commit.rs`).
pub(crate) const COORDINATOR: &str = "coordinator-";
pub(crate) const JOINED: &str = "joined-";
pub(crate) const ALIVE: &str = "alive-";
pub(crate) const VOTE: &str = "vote-";
pub(crate) const OUTCOME: &str = "outcome";

/// A vote, and the outcome of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Commit: as a vote, "I can commit"; as the outcome, every participant voted commit.
    Commit,
    /// Abort: as a vote, "I cannot commit"; as the outcome, the transaction is off.
    Abort,
}

impl Decision {
    /// What the node holds, and how it is shown.
    fn name(self) -> &'static str {
        match self {
            Decision::Commit => "commit",
            Decision::Abort => "abort",
        }
    }

    pub(crate) fn bytes(self) -> &'static [u8] {
        self.name().as_bytes()
    }

    pub(crate) fn parse(path: &str, data: &[u8]) -> Result<Decision> {
        match data {
            b"commit" => Ok(Decision::Commit),
            b"abort" => Ok(Decision::Abort),
            _ => Err(Error::CorruptData {
                path: path.to_owned(),
                len: data.len(),
                expected: "`commit` or `abort`",
            }),
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one listing of a transaction shows.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Look {
    pub(crate) outcome: bool,
    pub(crate) coordinator: bool,
    pub(crate) joined: BTreeSet<String>,
    pub(crate) alive: BTreeSet<String>,
    pub(crate) voted: BTreeSet<String>,
}

impl Look {
    pub(crate) fn of(children: &[String]) -> Look {
        let mut look = Look::default();
        for child in children {
            if child == OUTCOME {
                look.outcome = true;
            } else if child.strip_prefix(COORDINATOR).is_some_and(is_unique) {
                look.coordinator = true;
            } else if let Some(p) = child.strip_prefix(JOINED) {
                look.joined.insert(p.to_owned());
            } else if let Some(p) = alive_participant(child) {
                look.alive.insert(p.to_owned());
            } else if let Some(p) = child.strip_prefix(VOTE) {
                look.voted.insert(p.to_owned());
            }
        }
        look
    }

    /// What to do, by the rules every party applies: abort for the first reason found, commit (only the
    /// coordinator, `may_commit`) once every participant's vote is commit, or wait. `votes`: the votes read so far.
    pub(crate) fn judge(
        &self,
        participants: &[String],
        votes: &BTreeMap<String, Decision>,
        may_commit: bool,
    ) -> Next {
        if !self.coordinator {
            return Next::Abort("the coordinator left before deciding".to_owned());
        }
        for p in participants {
            if self.left(p) {
                return Next::Left(p.clone());
            }
            if votes.get(p) == Some(&Decision::Abort) {
                return Next::Abort(format!("participant {p} voted abort"));
            }
        }
        if may_commit
            && participants
                .iter()
                .all(|p| votes.get(p) == Some(&Decision::Commit))
        {
            return Next::Commit;
        }
        Next::Wait
    }

    /// Whether participant `p` joined and went away without voting.
    pub(crate) fn left(&self, p: &str) -> bool {
        self.joined.contains(p) && !self.alive.contains(p) && !self.voted.contains(p)
    }
}

/// `alive-<32 hex>-<participant>` → the participant.
pub(crate) fn alive_participant(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(ALIVE)?;
    let (unique, participant) = rest.split_at_checked(32)?;
    is_unique(unique).then_some(())?;
    participant.strip_prefix('-')
}

pub(crate) fn is_unique(hex: &str) -> bool {
    hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What a look says to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// The outcome exists.
    Decided(Decision),
    Abort(String),
    /// This participant joined and went away without voting: abort, once a listing confirms it (see `Tx::settle`).
    Left(String),
    Commit,
    Wait,
}

/// One transaction: its node, and the session to reach it.
#[derive(Debug, Clone)]
pub(crate) struct Tx {
    pub(crate) session: Session,
    pub(crate) dir: String,
}

impl Tx {
    /// Waits until the transaction node exists, and returns its participants: one read when it does (a
    /// participant usually joins an open transaction), else a node cache until it does.
    pub(crate) async fn wait_for_participants(&self) -> Result<Vec<String>> {
        let data = match self.session.get(&self.dir).await? {
            Some((data, _)) => data,
            None => {
                let view = Cache::node(&self.session, &self.dir)?.start();
                view.wait_for(|view| view.get(&self.dir)).await?.data.to_vec()
            }
        };
        let lines = String::from_utf8_lossy(&data);
        Ok(lines
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect())
    }

    pub(crate) async fn read_outcome(&self) -> Result<Option<Decision>> {
        let path = child_path(&self.dir, OUTCOME);
        let read = self.session.get(&path).await?;
        read.map(|(data, _)| Decision::parse(&path, &data)).transpose()
    }

    /// Creates the persistent child `name` holding `data`: `true` if this call made it, `false` if it existed (made
    /// by somebody else, or by an attempt of ours whose reply was lost); [`Error::NodeDeleted`] if the transaction
    /// is gone.
    pub(crate) async fn create(&self, name: &str, data: &[u8]) -> Result<bool> {
        let path = child_path(&self.dir, name);
        match self.session.create_persistent(&path, data, None).await {
            Err(Error::ZooKeeper {
                source: zk::Error::NoNode,
                ..
            }) => Err(Error::NodeDeleted {
                path: self.dir.clone(),
            }),
            made => made.map(|made| made.is_some()),
        }
    }

    /// Creates `outcome` = `decision` unless it exists, and returns the outcome as it is — ours, or the one that
    /// was there first.
    pub(crate) async fn write_outcome(&self, decision: Decision, why: &str) -> Result<Decision> {
        loop {
            if self.create(OUTCOME, decision.bytes()).await? {
                tracing::debug!(tx = %self.dir, %decision, why, "decided");
                return Ok(decision);
            }
            // Decided already — by somebody else, or by our attempt whose reply was lost: what is there counts.
            if let Some(decided) = self.read_outcome().await? {
                return Ok(decided);
            }
        }
    }

    /// Follows the transaction with a cache of its node and children, decides by the rules when the view gives a
    /// reason, and waits for the next change until the outcome exists; returns it. `may_commit`: we are the
    /// coordinator. `deadline`: abort when it passes.
    ///
    /// The view is no snapshot: a read answered after a later change may show a node gone before an earlier change
    /// elsewhere is in it. Every rule but one holds on such a view — a vote or the outcome, once there, never
    /// changes, and the coordinator's node goes only after the outcome exists or when it did not decide. The one is
    /// "joined and gone without a vote": the view can show a participant's `alive-` node gone before its vote, or
    /// its `joined-` node before its `alive-` one (one transaction made both). A listing, which is one state,
    /// confirms it before anybody aborts for it.
    pub(crate) async fn settle(
        &self,
        participants: &[String],
        may_commit: bool,
        deadline: Option<Instant>,
    ) -> Result<Decision> {
        let view = Cache::children(&self.session, &self.dir)?.start();
        let mut changes = view.changes();
        view.initialized().await?;
        loop {
            let (decision, why) = match self.judge(&view, participants, may_commit)? {
                Next::Decided(decided) => return Ok(decided),
                Next::Abort(why) => (Decision::Abort, why),
                Next::Commit => (Decision::Commit, "every participant voted commit".to_owned()),
                Next::Left(p) if Look::of(&self.session.list_or_empty(&self.dir).await?).left(&p) => {
                    (Decision::Abort, format!("participant {p} left before voting"))
                }
                Next::Left(_) | Next::Wait => tokio::select! {
                    changed = view.changed(&mut changes) => {
                        changed?;
                        continue;
                    }
                    () = idioms::or_pending(deadline.map(tokio::time::sleep_until)) => {
                        (Decision::Abort, "the deadline passed".to_owned())
                    }
                },
            };
            return self.write_outcome(decision, &why).await;
        }
    }

    /// What the view says to do ([`Look::judge`] with the votes it holds).
    fn judge(&self, view: &Cache, participants: &[String], may_commit: bool) -> Result<Next> {
        if view.get(&self.dir).is_none() {
            return Err(Error::NodeDeleted {
                path: self.dir.clone(),
            });
        }
        let read = |name: &str| -> Result<Option<Decision>> {
            let node = view.get(&child_path(&self.dir, name));
            node.map(|node| Decision::parse(&node.path, &node.data))
                .transpose()
        };
        if let Some(decided) = read(OUTCOME)? {
            return Ok(Next::Decided(decided));
        }
        let look = Look::of(&view.children_of(&self.dir));
        let mut votes = BTreeMap::new();
        for p in &look.voted {
            if let Some(vote) = read(&format!("{VOTE}{p}"))? {
                votes.insert(p.clone(), vote);
            }
        }
        Ok(look.judge(participants, &votes, may_commit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIQUE: &str = "0123456789abcdef0123456789abcdef";

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn look(children: &[String]) -> Look {
        Look::of(children)
    }

    #[test]
    fn reads_the_layout() {
        let children = names(&[
            "outcome",
            &format!("coordinator-{UNIQUE}"),
            "joined-a-b",
            &format!("alive-{UNIQUE}-a-b"),
            "vote-c",
            "alive-short-x",
        ]);
        let l = look(&children);
        assert!(l.outcome && l.coordinator);
        assert_eq!(l.joined, ["a-b".to_owned()].into());
        assert_eq!(
            l.alive,
            ["a-b".to_owned()].into(),
            "a participant name may hold dashes"
        );
        assert_eq!(l.voted, ["c".to_owned()].into());
    }

    #[test]
    fn the_rules() {
        let ps = names(&["a", "b"]);
        let commit = |list: &[&str]| -> BTreeMap<String, Decision> {
            list.iter().map(|p| ((*p).to_owned(), Decision::Commit)).collect()
        };
        let coordinator = format!("coordinator-{UNIQUE}");
        let alive = |p: &str| format!("alive-{UNIQUE}-{p}");
        // Waiting for b's vote while b is there.
        let open = names(&[
            &coordinator,
            "joined-a",
            &alive("a"),
            "vote-a",
            "joined-b",
            &alive("b"),
        ]);
        assert_eq!(look(&open).judge(&ps, &commit(&["a"]), true), Next::Wait);
        // Every vote commit: only the coordinator commits.
        let all = names(&[&coordinator, "joined-a", "vote-a", "joined-b", "vote-b"]);
        assert_eq!(look(&all).judge(&ps, &commit(&["a", "b"]), true), Next::Commit);
        assert_eq!(look(&all).judge(&ps, &commit(&["a", "b"]), false), Next::Wait);
        // b joined and went away without a vote.
        let gone = names(&[&coordinator, "joined-a", "vote-a", "joined-b"]);
        assert_eq!(
            look(&gone).judge(&ps, &commit(&["a"]), true),
            Next::Left("b".to_owned())
        );
        // b never joined: nothing to say yet (the coordinator's deadline decides).
        let absent = names(&[&coordinator, "joined-a", "vote-a"]);
        assert_eq!(look(&absent).judge(&ps, &commit(&["a"]), true), Next::Wait);
        // A vote for abort.
        let mut votes = commit(&["a"]);
        votes.insert("b".into(), Decision::Abort);
        assert!(
            matches!(look(&all).judge(&ps, &votes, true), Next::Abort(why) if why.contains("b voted abort"))
        );
        // No coordinator.
        let orphan = names(&["joined-a", "vote-a", "joined-b", "vote-b"]);
        assert!(
            matches!(look(&orphan).judge(&ps, &commit(&["a", "b"]), false), Next::Abort(why) if why.contains("coordinator"))
        );
    }

    #[test]
    fn decisions_round_trip_and_garbage_is_refused() {
        for d in [Decision::Commit, Decision::Abort] {
            assert_eq!(Decision::parse("/x", d.bytes()), Ok(d));
        }
        assert!(matches!(
            Decision::parse("/x", b"maybe"),
            Err(Error::CorruptData { len: 5, .. })
        ));
    }
}
