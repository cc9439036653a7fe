//! One transaction of the two-phase commit: what a listing of its node shows ([`Look`]), the rules that settle its
//! outcome from that, and [`Tx`], the node with the session that reaches it.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::Instant;
use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{Error, Result};
use crate::base::idioms::IfExists;
use crate::base::path::child_path;
use crate::session::cas::{Committed, Write};
use crate::session::{read, Session};

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
    /// What the node holds.
    pub(crate) fn bytes(self) -> &'static [u8] {
        match self {
            Decision::Commit => b"commit",
            Decision::Abort => b"abort",
        }
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
        f.write_str(match self {
            Decision::Commit => "commit",
            Decision::Abort => "abort",
        })
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
            if self.joined.contains(p) && !self.alive.contains(p) && !self.voted.contains(p) {
                return Next::Abort(format!("participant {p} left before voting"));
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
    Abort(String),
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
    /// Waits (with an `exists` watch) until the transaction node exists, and returns its participants.
    pub(crate) async fn wait_for_participants(&self) -> Result<Vec<String>> {
        loop {
            if let Some((data, _)) = self.session.get(&self.dir).await? {
                let lines = String::from_utf8_lossy(&data);
                return Ok(lines
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect());
            }
            if let (None, watcher) = self.session.watch_exists(&self.dir).await? {
                self.session.await_change(watcher, &self.dir).await?;
            }
        }
    }

    pub(crate) async fn read_outcome(&self) -> Result<Option<Decision>> {
        let path = child_path(&self.dir, OUTCOME);
        let read = self.session.get(&path).await?;
        read.map(|(data, _)| Decision::parse(&path, &data)).transpose()
    }

    /// Creates the persistent child `name` holding `data`: `true` if it was made (perhaps by an attempt of ours
    /// whose reply was lost), `false` if it existed; [`Error::NodeDeleted`] if the transaction is gone.
    pub(crate) async fn create(&self, name: &str, data: &[u8]) -> Result<bool> {
        let path = child_path(&self.dir, name);
        let writes = [Write::Create(&path, data, CreateMode::Persistent)];
        match self.session.create_once(&writes, false, None).await? {
            Committed::Done { .. } => Ok(true),
            Committed::Refused {
                error: zk::Error::NodeExists,
                ..
            } => Ok(false),
            Committed::Refused {
                error: zk::Error::NoNode,
                ..
            } => Err(Error::NodeDeleted {
                path: self.dir.clone(),
            }),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
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

    /// Looks, decides by the rules when a look gives a reason, and waits for the next change until the outcome
    /// exists; returns it. `may_commit`: we are the coordinator. `deadline`: abort when it passes.
    pub(crate) async fn settle(
        &self,
        participants: &[String],
        may_commit: bool,
        deadline: Option<Instant>,
    ) -> Result<Decision> {
        let (client, retry) = (self.session.client(), self.session.retry());
        let mut votes: BTreeMap<String, Decision> = BTreeMap::new();
        loop {
            let Some((children, watcher)) = retry
                .run_at("getChildren", &self.dir, || {
                    client.list_and_watch_children(&self.dir)
                })
                .await
                .if_exists()?
            else {
                return Err(Error::NodeDeleted {
                    path: self.dir.clone(),
                });
            };
            let look = Look::of(&children);
            if look.outcome {
                if let Some(decided) = self.read_outcome().await? {
                    return Ok(decided);
                }
                continue;
            }
            // Votes never change once cast: each is read once.
            for p in participants {
                if look.voted.contains(p) && !votes.contains_key(p) {
                    let path = child_path(&self.dir, &format!("{VOTE}{p}"));
                    if let Some(node) = read::read_node(client, retry, &path).await? {
                        let data = node.0.unwrap_or_default();
                        votes.insert(p.clone(), Decision::parse(&path, &data)?);
                    }
                }
            }
            match look.judge(participants, &votes, may_commit) {
                Next::Abort(why) => return self.write_outcome(Decision::Abort, &why).await,
                Next::Commit => {
                    return self
                        .write_outcome(Decision::Commit, "every participant voted commit")
                        .await
                }
                Next::Wait => {}
            }
            if deadline.is_some_and(|d| d <= Instant::now()) {
                return self.write_outcome(Decision::Abort, "the deadline passed").await;
            }
            tokio::select! {
                changed = self.session.await_change(watcher, &self.dir) => drop(changed?),
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {}
            }
        }
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
        assert!(
            matches!(look(&gone).judge(&ps, &commit(&["a"]), true), Next::Abort(why) if why.contains("b left"))
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
