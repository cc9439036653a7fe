//! kazoo's `SetPartitioner`: the members of a party divide a set of items among themselves, each item owned by one
//! member at a time, divided again when members come and go.
//!
//! Layout (kazoo's, so that kazoo's and our members share a party): `<path>/party/<32 hex>-<identifier>`, one
//! ephemeral node per member (a [`Group`] in kazoo's `ShallowParty` layout), and `<path>/locks/<item>`, a lock per
//! item whose nodes are named as kazoo's `Lock` names them ([`Mutex::with_kazoo_names`]). The division is kazoo's
//! default one — items and identifiers sorted, the member at index `i` of `n` takes items `i, i + n, …` — so every
//! member that sees the same party computes the same division.
//!
//! Ownership comes from the locks, not from the division: a member owns an item once it holds that item's lock
//! (whose guard gives the item's fencing token), so two members never own one item at once, even while their views
//! of the party differ. The division only makes the wait end: once the party has been still for the settle time,
//! every member's share is free.

use std::time::Duration;

use futures::future::select_all;

use crate::base::error::{Error, LostReason, Result};
use crate::base::path::child_path;
use crate::cache::{Cache, CacheEvent, Events};
use crate::node::guard::Guard;
use crate::recipes::coordination::group::{shallow_identifier, Group, GroupLayout, Membership};
use crate::recipes::locks::mutex::Mutex;
use crate::session::Session;

/// A member of a party that divides a set of items (kazoo's `SetPartitioner`): [`join`](SetPartitioner::join),
/// then [`acquire`](SetPartitioner::acquire) a share, work on it until it [`changed`](Partition::changed), give it
/// back ([`release`](Partition::release)) and acquire again.
///
/// ```no_run
/// # async fn example(session: zklock::Session) -> zklock::Result<()> {
/// use std::time::Duration;
/// let mut member = zklock::SetPartitioner::new(&session, "/work/queues", ["q1", "q2", "q3"])?
///     .with_identifier("worker-a")
///     .with_settle(Duration::from_secs(2))
///     .join()
///     .await?;
/// loop {
///     let share = member.acquire().await?;
///     for (item, guard) in share.items() { println!("mine: {item} (token {})", guard.fencing_token()); }
///     share.changed().await; // the party changed, or an item's lock was lost: give the share back
///     share.release().await?;
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct SetPartitioner {
    session: Session,
    path: String,
    items: Vec<String>,
    identifier: String,
    settle: Duration,
    group: Group,
    membership: Option<Membership>,
    party: Cache,
}

/// A member's share of the set: the items it owns, each with the guard of its lock.
#[derive(Debug)]
pub struct Partition<'a> {
    member: &'a SetPartitioner,
    party: Vec<String>,
    items: Vec<(String, Guard)>,
}

impl SetPartitioner {
    /// A member-to-be of the party at `path` dividing `items` (each a node name: kazoo makes `<path>/locks/<item>`).
    /// Its identifier is a fresh uuid unless [given](SetPartitioner::with_identifier); the settle time is 1 s.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path or an item ZooKeeper would refuse.
    pub fn new<I: Into<String>>(
        session: impl Into<Session>,
        path: &str,
        items: impl IntoIterator<Item = I>,
    ) -> Result<SetPartitioner> {
        let session = session.into();
        let path = crate::base::path::validate(path)?;
        let mut items: Vec<String> = items.into_iter().map(Into::into).collect();
        for item in &items {
            if item.is_empty() || item.contains('/') {
                return Err(Error::InvalidPath {
                    path: child_path(&path, &format!("locks/{item}")),
                    reason: "an item must be a node name",
                });
            }
            crate::base::path::validate(&child_path(&path, item))?;
        }
        items.sort();
        items.dedup();
        let party_path = child_path(&path, "party");
        Ok(SetPartitioner {
            group: Group::new(&session, &party_path)?.with_layout(GroupLayout::Shallow),
            party: Cache::children(&session, &party_path)?.start(),
            identifier: uuid::Uuid::new_v4().simple().to_string(),
            settle: Duration::from_secs(1),
            membership: None,
            session,
            path,
            items,
        })
    }

    /// Our identifier in the party (kazoo's default is `<fqdn>-<pid>`): it must be unique in the party, and
    /// contains no `/`.
    pub fn with_identifier(mut self, identifier: &str) -> SetPartitioner {
        identifier.clone_into(&mut self.identifier);
        self
    }

    /// How long the party must stay unchanged before a share is taken (kazoo's `time_boundary`, 30 s there).
    pub fn with_settle(mut self, settle: Duration) -> SetPartitioner {
        self.settle = settle;
        self
    }

    /// Our identifier in the party.
    pub fn identifier(&self) -> &str {
        &self.identifier
    }

    /// Joins the party.
    ///
    /// # Errors
    /// What ZooKeeper answers; [`Error::InvalidPath`] for an identifier that cannot be in a node name.
    pub async fn join(mut self) -> Result<SetPartitioner> {
        self.group = self.group.with_data(self.identifier.as_bytes());
        self.membership = Some(self.group.join().await?);
        self.party.initialized().await?;
        Ok(self)
    }

    /// Waits until the party has been still for the settle time, takes the locks of our share of the items, and
    /// hands the share over. Should the party change meanwhile, what was taken is given back and it starts over.
    /// On a [reconnecting](Session::reconnecting) session, joins again after our membership was lost.
    ///
    /// # Errors
    /// [`Error::InUse`] when another member has our identifier; the end of the session; what ZooKeeper answers.
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it gives back the locks taken so far.
    pub async fn acquire(&mut self) -> Result<Partition<'_>> {
        loop {
            if self.membership.as_ref().is_none_or(Membership::is_lost) {
                self.membership = None;
                self.membership = Some(self.group.join().await?);
            }
            let mut events = self.party.events();
            let party = self.settled(&mut events).await?;
            let share = self.share(&party)?;
            let mut items = Vec::with_capacity(share.len());
            let mut changed = false;
            for item in share {
                let lock = Mutex::new(&self.session, &child_path(&self.path, &format!("locks/{item}")))?
                    .with_kazoo_names(true)
                    .with_data(self.identifier.as_bytes());
                tokio::select! {
                    guard = lock.lock() => items.push((item, guard?)),
                    _ = next_change(&mut events) => { changed = true; break; }
                }
            }
            if !changed {
                let member = &*self;
                return Ok(Partition { member, party, items });
            }
            release_all(items).await?;
        }
    }

    /// Leaves the party.
    ///
    /// # Errors
    /// What ZooKeeper answers to the delete of our member node.
    pub async fn leave(mut self) -> Result<()> {
        match self.membership.take() {
            Some(membership) => membership.leave().await,
            None => Ok(()),
        }
    }

    /// The party's identifiers, sorted, once no change came for the settle time and we are in it.
    async fn settled(&self, events: &mut Events) -> Result<Vec<String>> {
        loop {
            if tokio::time::timeout(self.settle, next_change(events))
                .await
                .is_ok()
            {
                continue;
            }
            if let Some(err) = self.party.ended() {
                return Err(err);
            }
            let party = self.party_now();
            if party.contains(&self.identifier) {
                return Ok(party);
            }
            next_change(events).await;
        }
    }

    fn party_now(&self) -> Vec<String> {
        let mut party: Vec<String> = (self.party.children_of(self.group.path()).iter())
            .map(|name| shallow_identifier(name).to_owned())
            .collect();
        party.sort();
        party
    }

    /// kazoo's default division: of the sorted items, the member at index `i` of the sorted party takes `i`,
    /// `i + n`, …
    fn share(&self, party: &[String]) -> Result<Vec<String>> {
        let mut mine = (party.iter().enumerate()).filter(|(_, id)| **id == self.identifier);
        let (Some((me, _)), None) = (mine.next(), mine.next()) else {
            return Err(Error::InUse {
                path: self.group.path().to_owned(),
                node: self.identifier.clone(),
                what: "another member of the party with our identifier",
            });
        };
        Ok(self.items.iter().skip(me).step_by(party.len()).cloned().collect())
    }
}

impl Partition<'_> {
    /// The items we own, each with the guard of its lock (its fencing token, its lost signal).
    pub fn items(&self) -> &[(String, Guard)] {
        &self.items
    }

    /// The party this share was divided for (identifiers, sorted).
    pub fn party(&self) -> &[String] {
        &self.party
    }

    /// Completes when the share should be given back: the party is no longer the one it was divided for, or the lock
    /// of an item was lost (with the reason, then).
    pub async fn changed(&self) -> Option<LostReason> {
        let lost = async {
            if self.items.is_empty() {
                std::future::pending().await
            } else {
                select_all(self.items.iter().map(|(_, guard)| Box::pin(guard.lost())))
                    .await
                    .0
            }
        };
        let mut events = self.member.party.events();
        let moved = async {
            while self.member.party_now() == self.party {
                if self.member.party.ended().is_some() {
                    return;
                }
                next_change(&mut events).await;
            }
        };
        tokio::select! {
            reason = lost => Some(reason),
            () = moved => None,
        }
    }

    /// Gives every item back (releases its lock).
    ///
    /// # Errors
    /// What ZooKeeper answers to a delete; every lock is released either way.
    pub async fn release(self) -> Result<()> {
        release_all(self.items).await
    }
}

/// The next change of the party (a member came or went); pends forever once the cache stopped.
async fn next_change(events: &mut Events) {
    loop {
        match events.next().await {
            Some(CacheEvent::Initialized) => {}
            Some(_) => return,
            None => std::future::pending().await,
        }
    }
}

async fn release_all(items: Vec<(String, Guard)>) -> Result<()> {
    let mut first = Ok(());
    for (_, guard) in items {
        // Every lock is released; the first error is the answer.
        first = first.and(guard.release().await);
    }
    first
}
