//! Group membership: processes join a group with an ephemeral member node carrying their data, and anybody can
//! see who is in it — once, or as a live view with an event per change.
//!
//! Layout: one ephemeral node per member directly under the group path, in one of kazoo's two layouts, so that
//! Python and Rust processes share a group:
//!
//! * **Party** (the default; kazoo's `Party`): `<path>/<32 hex>__party__`, the member's data in the node. kazoo
//!   counts every child whose name contains `__party__`, and so do we.
//! * **Shallow** (kazoo's `ShallowParty`): `<path>/<32 hex>-<identifier>`, the identifier in the name (and, as
//!   kazoo does it, in the data too), so that one listing shows every identifier.
//!
//! The hex is the member's id: a uuid made once per [`Group`] value (a clone is another member), or given
//! ([`Group::with_member_id`]), the same for every join — so a member that joins again after its session ended is the
//! same member to everybody (its name does not change), and a create whose reply was lost is recognised when it is
//! retried (the name exists, and its owner is our session) and never makes a second member. Before it creates, a join
//! lets this process's background deletes in the group finish (`node/abandoned.rs`: one of a dropped membership of
//! ours could otherwise delete the new node, which has the same name), and deletes the node an earlier session of this
//! `Group` left (a session our client gave up before the server expired it). A node of our name owned by any other
//! session is another process with our id: the join refuses ([`Error::InUse`]), as it refuses a second live
//! membership of one `Group`. Members are ordered by the zxid of their node's creation
//! (`czxid`): the order in which they joined, the same for every observer.
//!
//! The live view ([`Members`]) is a [`Cache`] of the group's children: one persistent watch, every change read in
//! order, re-read whole after a reconnection (and on a reconnecting session, after a new session). Each
//! [`Members::next`] hands out, as a [`MemberEvent`], the first difference between the view handed out so far and
//! the members the cache holds.

use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::{Duration, SystemTime};

use zookeeper_client::{self as zk, CreateMode, Stat};

use crate::base::error::{Error, Result};
use crate::base::path::child_path;
use crate::cache::{Cache, Changes};
use crate::node::held::Held;
use crate::node::own::Created;
use crate::session::{read, Session};

/// What kazoo's `Party` puts in its member names.
const PARTY: &str = "__party__";

/// How a member's node is named (kazoo's two group recipes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GroupLayout {
    /// kazoo's `Party`: `<32 hex>__party__`, the data in the node. The default.
    #[default]
    Party,
    /// kazoo's `ShallowParty`: `<32 hex>-<identifier>`, the identifier (the member's data, as UTF-8) in the name.
    Shallow,
}

/// A group of processes: join it with [`join`](Group::join), look at it with [`members`](Group::members), follow it
/// with [`watch`](Group::watch).
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let group = zklock::Group::new(&client, "/groups/workers")?.with_data("host-a:8080");
/// let membership = group.join().await?;
/// let mut members = group.watch().await?;
/// println!("members now: {:?}", members.members().iter().map(|m| String::from_utf8_lossy(&m.data)).collect::<Vec<_>>());
/// tokio::select! {
///     reason = membership.lost() => eprintln!("no longer a member: {reason}"),
///     event = members.next() => println!("{:?}", event?),
/// }
/// membership.leave().await?;
/// # Ok(()) }
/// ```
///
/// # Interoperability
/// The default layout is kazoo's `Party`, [`GroupLayout::Shallow`] is kazoo's `ShallowParty`; [`members`] and
/// [`watch`] recognise both, so kazoo's and our members see each other (tested both ways). kazoo's
/// `ShallowParty` itself counts *every* child of the path as a member: keep its groups to shallow members only.
///
/// # Session expiry
/// A member's node is ephemeral: when its session expires the node goes, the others see it leave, and its
/// [`Membership::lost`] fires. A `zookeeper-client` session never comes back: join again on a new client.
///
/// # Errors
/// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends; [`Error::InvalidPath`] for a shallow
/// member whose data is not a valid node name; [`Error::ConnectionLoss`] only if the
/// [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Cancellation safety
/// Dropping a `join` future at any await point removes our member node (the delete is sent before the drop
/// returns); dropping a [`Membership`] leaves the group the same way. [`Members::next`] may be dropped at any
/// await point: the view stays as it was, and the next call catches up.
///
/// [`members`]: Group::members
/// [`watch`]: Group::watch
///
/// # Member identity
/// A `Group` value is one member: every join of it has the same [`member_id`](Group::member_id), so a member that
/// joins again (after its session ended, say) keeps its name. A *clone* is another member, with an id of its own
/// (`group.clone().with_data(..)` is how one process joins twice).
#[derive(Debug)]
pub struct Group {
    session: Session,
    path: String,
    data: Vec<u8>,
    layout: GroupLayout,
    /// Our member id (32 hex digits), the same for every join of this value.
    member_id: String,
    /// What the joins of this value share.
    joins: Arc<Joins>,
}

/// Another member: the same group, session, data and layout, a member id of its own.
impl Clone for Group {
    fn clone(&self) -> Group {
        Group {
            session: self.session.clone(),
            path: self.path.clone(),
            data: self.data.clone(),
            layout: self.layout,
            member_id: uuid::Uuid::new_v4().simple().to_string(),
            joins: Arc::default(),
        }
    }
}

/// What the joins of one [`Group`] value share.
#[derive(Debug, Default)]
struct Joins {
    /// Locked while a membership of ours is live (from a join until it is left, dropped or lost and dropped).
    live: Arc<tokio::sync::Mutex<()>>,
    /// The ZooKeeper sessions our joins were made on (each once): a node of our name owned by one of them is ours
    /// to remove.
    sessions: StdMutex<Vec<i64>>,
    /// The member id was given ([`Group::with_member_id`]): a node of our name may be there from before this value.
    given_id: bool,
}

impl Group {
    /// The group at `path` (created with its parents, as container nodes, on the first join) on `session` — a
    /// [`Session`] or a `&Client`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] if `path` is not a valid ZooKeeper path.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<Group> {
        Ok(Group {
            session: session.into(),
            path: crate::base::path::validate(path)?,
            data: Vec::new(),
            layout: GroupLayout::default(),
            member_id: uuid::Uuid::new_v4().simple().to_string(),
            joins: Arc::default(),
        })
    }

    /// Our member id, as given (32 hex digits: kazoo's uuid hex), instead of a fresh uuid: the same member across
    /// restarts of this process, too. Two processes must not share one (the second's join refuses while the first is
    /// a member).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `id` is 32 hexadecimal digits.
    pub fn with_member_id(mut self, id: &str) -> Result<Group> {
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::InvalidArgument(format!(
                "a group member id is 32 hexadecimal digits (kazoo's uuid hex), not {id:?}"
            )));
        }
        self.member_id = id.to_ascii_lowercase();
        self.joins = Arc::new(Joins {
            given_id: true,
            ..Joins::default()
        });
        Ok(self)
    }

    /// Our member id: the hex our member node's name starts with, the same for every join.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    /// Data stored in our member node (what the others see of us); for [`GroupLayout::Shallow`], our identifier,
    /// which becomes part of the node's name.
    pub fn with_data(mut self, data: impl Into<Vec<u8>>) -> Group {
        self.data = data.into();
        self
    }

    /// How our member node is named when we join ([`GroupLayout::Party`] unless told otherwise). Either way,
    /// members of both layouts are seen.
    pub fn with_layout(mut self, layout: GroupLayout) -> Group {
        self.layout = layout;
        self
    }

    /// The session and policies this group uses.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The group directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Our member node's name: our member id, in our layout.
    fn member_name(&self) -> Result<String> {
        let unique = &self.member_id;
        if self.layout == GroupLayout::Party {
            return Ok(format!("{unique}{PARTY}"));
        }
        let name = format!("{unique}-{}", String::from_utf8_lossy(&self.data));
        let path = child_path(&self.path, &name);
        let reason = if std::str::from_utf8(&self.data).is_err() {
            "a shallow member's data must be UTF-8"
        } else if name.contains('/') {
            "a shallow member's data must not contain /"
        } else {
            return crate::base::path::validate(&path).map(|_| name);
        };
        Err(Error::InvalidPath { path, reason })
    }

    /// Joins the group: creates our ephemeral member node (and the group directory if missing).
    ///
    /// # Errors
    /// See [`Group`]. A join never waits for anybody: it fails only when ZooKeeper does.
    ///
    /// On a [reconnecting](Session::reconnecting) session it joins on the current ZooKeeper session, waiting for
    /// the next one if it has ended. A membership does not outlive its ZooKeeper session (its
    /// [`lost`](Membership::lost) signal fires): join again to carry on — as the same member, with the same
    /// [`member_id`](Group::member_id) and node name (the others see it leave and come back).
    ///
    /// [`Error::InUse`] while a membership of this `Group` value is live — leave or drop it first — or when
    /// another session, not one of ours, has a member node of our id (another process with the same id).
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it removes our member node.
    pub async fn join(&self) -> Result<Membership> {
        loop {
            match self.join_once().await {
                // On a reconnecting session, a join that failed because its ZooKeeper session ended holds nothing
                // (our node went with it): join on the next one.
                Err(err) if self.session.carries_on(&err) => {
                    tracing::debug!(path = %self.path, "the session ended while joining; joining on the next");
                }
                joined => return joined,
            }
        }
    }

    async fn join_once(&self) -> Result<Membership> {
        let name = self.member_name()?;
        let me = child_path(&self.path, &name);
        let live = Arc::clone(&self.joins.live)
            .try_lock_owned()
            .map_err(|_| Error::InUse {
                path: self.path.clone(),
                node: name.clone(),
                what: "a live membership of this Group (leave or drop it first)",
            })?;
        // One ZooKeeper session for the whole join: the node and its lost signal are on the session that made it.
        let session = &self.session.pinned_usable().await?;
        let ours = session.client().session_id().0;
        // The ZooKeeper sessions of our earlier joins (ours is recorded for the next one). Nobody else changes them
        // meanwhile: a join holds `live` throughout.
        let sessions = {
            let mut sessions = self.joins.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let before = sessions.clone();
            if !sessions.contains(&ours) {
                sessions.push(ours);
            }
            before
        };
        // A node of our name can be there only if this value joined before or its id was given (a fresh uuid is
        // nobody's yet): only then is it looked for, so the first join of a new `Group` costs no extra request.
        let may_exist = !sessions.is_empty() || self.joins.given_id;
        // Our name is the same every join: a background delete of a dropped membership of ours must be over (it could
        // delete the node we are about to create), and so must a node an ended session of ours left.
        crate::node::abandoned::settled(session.client(), session.retry(), &self.path).await?;
        let another = || Error::InUse {
            path: self.path.clone(),
            node: name.clone(),
            what: "another member with our member id (another process with the same id?)",
        };
        // Read after a `sync`: on an ensemble a plain read can miss a node another process made a moment ago.
        let found = if may_exist { session.find(&me).await? } else { None };
        if let Some((_, stat)) = found {
            // Only a node of an *earlier* session of this value is ours to remove; one of our current session is
            // another `Group` value's live member with our id.
            let earlier = stat.ephemeral_owner != ours && sessions.contains(&stat.ephemeral_owner);
            if !earlier {
                return Err(another());
            }
            tracing::debug!(path = %me, owner = stat.ephemeral_owner, "removing our member node of an earlier session");
            session.delete_if_exists(&me, Some(stat.version)).await?;
        }
        // A node by our name after a lost reply is ours if our session owns it, from an earlier attempt of this
        // create; one another session owns was made since our look (another process with our id).
        let node = match session
            .create_own(&self.path, &name, &self.data, &[], Some(CreateMode::Container))
            .await?
        {
            Created::Refused {
                error: zk::Error::NodeExists,
                ..
            } => return Err(another()),
            created => created.made(&me)?,
        };
        let held = Held::watch(node, session);
        held.hold();
        tracing::debug!(path = %me, "joined the group");
        Ok(Membership {
            held,
            layout: self.layout,
            path: me,
            _live: live,
        })
    }

    /// The members now, in the order they joined (oldest first). Empty if the group does not exist.
    ///
    /// It is a snapshot: a member that leaves between the listing and the read of its node is not shown. On an
    /// ensemble our server may lag behind another session's (call `client.sync(path)` first to read what every
    /// acknowledged join and leave did).
    ///
    /// # Errors
    /// See [`Group`].
    pub async fn members(&self) -> Result<Vec<Member>> {
        let children = self.session.list_or_empty(&self.path).await?;
        read_members(&self.session, &self.path, &children).await
    }

    /// A live view of the group: the members now ([`Members::members`]) and, from [`Members::next`], every change
    /// after that — joined, left, data changed.
    ///
    /// # Errors
    /// See [`Group`].
    pub async fn watch(&self) -> Result<Members> {
        let cache = Cache::children(&self.session, &self.path)?.start();
        let changes = cache.changes();
        cache.initialized().await?;
        let mut members = Members {
            path: self.path.clone(),
            cache,
            changes,
            view: Vec::new(),
        };
        members.view = members.now();
        Ok(members)
    }
}

/// The members among `children` of the group `dir`, read in one round trip, in the order they joined; a member gone
/// since the listing is left out.
pub(crate) async fn read_members(session: &Session, dir: &str, children: &[String]) -> Result<Vec<Member>> {
    let names: Vec<&str> = children
        .iter()
        .map(String::as_str)
        .filter(|c| layout_of(c).is_some())
        .collect();
    let read = read::read_nodes(session, dir, &names).await?;
    let mut members: Vec<Member> = names
        .iter()
        .zip(read)
        .filter_map(|(name, read)| {
            let (data, stat) = read?;
            Some(Member::new(dir, name, data, &stat))
        })
        .collect();
    members.sort_by_key(|m| m.joined_zxid);
    Ok(members)
}

/// The identifier in a `ShallowParty` member's name, as kazoo's `ShallowParty` reads it: what follows the first `-`
/// (`<32 hex>-<identifier>`).
pub(crate) fn shallow_identifier(name: &str) -> &str {
    name.split_once('-').map_or(name, |(_, identifier)| identifier)
}

/// Which layout a child of a group directory is a member of, if it is one.
pub(crate) fn layout_of(name: &str) -> Option<GroupLayout> {
    if name.contains(PARTY) {
        return Some(GroupLayout::Party);
    }
    let (unique, rest) = name.split_at_checked(32)?;
    (rest.starts_with('-') && unique.bytes().all(|b| b.is_ascii_hexdigit())).then_some(GroupLayout::Shallow)
}

/// One member of a [`Group`], as a look at the group found it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Member {
    /// The member node's name.
    pub name: String,
    /// The member node's full path.
    pub path: String,
    /// Which layout the node is in (kazoo's `Party` or `ShallowParty`).
    pub layout: GroupLayout,
    /// The member's data: the node's data (for a shallow member that is its identifier too, as kazoo writes it).
    /// Empty when not [`data_readable`](Member::data_readable).
    pub data: Vec<u8>,
    /// Whether our session may read the node's data (its ACL may deny us `READ`).
    pub data_readable: bool,
    /// The id of the member's session.
    pub session_id: i64,
    /// The zxid of the node's creation: members are ordered by it (the order in which they joined).
    pub joined_zxid: i64,
    /// When the member joined (by the server's clock).
    pub joined: SystemTime,
}

impl Member {
    fn new(dir: &str, name: &str, data: Option<Vec<u8>>, stat: &Stat) -> Member {
        Member {
            name: name.to_owned(),
            path: child_path(dir, name),
            layout: layout_of(name).unwrap_or_default(),
            data_readable: data.is_some(),
            data: data.unwrap_or_default(),
            session_id: stat.ephemeral_owner,
            joined_zxid: stat.czxid,
            joined: SystemTime::UNIX_EPOCH + Duration::from_millis(stat.ctime.max(0) as u64),
        }
    }

    /// A shallow member's identifier (its name after the uuid, kazoo's `ShallowParty` view); `None` for a party
    /// member.
    pub fn identifier(&self) -> Option<&str> {
        match self.layout {
            GroupLayout::Shallow => Some(shallow_identifier(&self.name)),
            GroupLayout::Party => None,
        }
    }
}

/// What changed in a group, as [`Members::next`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemberEvent {
    /// A member joined.
    Joined(Member),
    /// A member left (it left, or its session ended).
    Left(Member),
    /// A member's data changed.
    Changed {
        /// The member before the change.
        before: Member,
        /// The member after it.
        after: Member,
    },
}

/// A live, ordered view of a [`Group`] (from [`Group::watch`]): [`members`](Members::members) is the view,
/// [`next`](Members::next) waits for the next change and applies it.
///
/// A [`Cache`] of the group's children underneath: one persistent watch; each change costs a read of the member
/// (and of the group's node). Each call of [`next`](Members::next) compares the view with what the cache holds
/// (time in proportion to the members) and hands out the first difference, so after a reconnection what changed
/// meanwhile is reported like any change; on a [reconnecting](Session::reconnecting) session the view follows each
/// new ZooKeeper session. Members whose node our session may not read are not in the view. Dropping it drops the
/// watch.
#[derive(Debug)]
pub struct Members {
    path: String,
    cache: Cache,
    changes: Changes,
    /// As of the last change handed out; ordered by `joined_zxid`.
    view: Vec<Member>,
}

impl Members {
    /// The members, in the order they joined (oldest first), as of the last change [`next`](Members::next)
    /// returned (or the start).
    pub fn members(&self) -> &[Member] {
        &self.view
    }

    /// The group directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Waits for the next change and returns it; [`members`](Members::members) then includes it.
    ///
    /// Changes come in the order they joined, left or changed as far as one look at the cache tells them apart:
    /// of the changes one look finds, the member that joined earliest comes first (a member that left and joined
    /// again under its name: `Left`, then `Joined`).
    ///
    /// # Errors
    /// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends (the view is then stale for good; a
    /// reconnecting session goes on with its next ZooKeeper session instead); an [`Error::ZooKeeper`](crate::Error::ZooKeeper)
    /// (`NoAuth`) when the group may not be watched.
    ///
    /// # Cancellation safety
    /// Cancel safe: dropped at any await point, no change is lost; the next call finds it.
    pub async fn next(&mut self) -> Result<MemberEvent> {
        loop {
            if let Some(event) = self.step() {
                return Ok(event);
            }
            self.changes.next().await?;
        }
    }

    /// The first difference between the view and the cache, applied to the view. Both are ordered by
    /// `joined_zxid`, which no two member nodes share: they are walked side by side.
    fn step(&mut self) -> Option<MemberEvent> {
        let now = self.now();
        let at = self.view.iter().zip(&now).take_while(|(a, b)| a == b).count();
        let event = match (self.view.get(at), now.get(at)) {
            (None, None) => return None,
            (Some(old), Some(new)) if old.joined_zxid == new.joined_zxid => {
                let after = new.clone();
                MemberEvent::Changed {
                    before: std::mem::replace(&mut self.view[at], after.clone()),
                    after,
                }
            }
            (Some(old), new) if new.is_none_or(|new| old.joined_zxid < new.joined_zxid) => {
                MemberEvent::Left(self.view.remove(at))
            }
            (_, new) => {
                let new = new?.clone();
                self.view.insert(at, new.clone());
                MemberEvent::Joined(new)
            }
        };
        Some(event)
    }

    /// The members the cache holds now, in the order they joined.
    fn now(&self) -> Vec<Member> {
        let mut members: Vec<Member> = self
            .cache
            .children_of(&self.path)
            .iter()
            .filter(|name| layout_of(name).is_some())
            .filter_map(|name| {
                let node = self.cache.get(&child_path(&self.path, name))?;
                Some(Member::new(
                    &self.path,
                    name,
                    Some(node.data.to_vec()),
                    &node.stat,
                ))
            })
            .collect();
        members.sort_by_key(|m| m.joined_zxid);
        members
    }
}

/// Our membership of a [`Group`], from a successful [`join`](Group::join) until we leave.
///
/// Dropping it leaves the group (our node is deleted in the background).
#[derive(Debug)]
pub struct Membership {
    held: Held,
    layout: GroupLayout,
    /// The full path of our member node.
    path: String,
    /// Marks the membership live for its `Group` until it goes (`Joins::live`, locked by the join; declared last:
    /// unlocked once the node is handed to its delete).
    _live: tokio::sync::OwnedMutexGuard<()>,
}

impl Membership {
    /// The full path of our member node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Our member node's name.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The layout our node is in.
    pub fn layout(&self) -> GroupLayout {
        self.layout
    }

    crate::node::held::lost_methods! {
        held:
        /// Completes when we stop being a member: session expiry, deletion of our node by somebody else, or (per the
        /// [`LostPolicy`](crate::LostPolicy)) a long disconnection.
        pub fn lost;
        /// Whether the membership has been lost already.
        pub fn is_lost;
        /// Why the membership was lost, if it was.
        pub fn lost_reason;
    }

    crate::node::held::suspension_methods!(held);

    /// Replaces the data of our member node; every [`Members`] view reports [`MemberEvent::Changed`]. (A shallow
    /// member keeps its identifier in its name: kazoo's `ShallowParty` still shows that one.)
    ///
    /// # Errors
    /// [`Error::SessionExpired`] / [`Error::Closed`] when the session has ended; [`Error::NodeDeleted`] when our
    /// node is gone; [`Error::ConnectionLoss`] only if the retry policy caps attempts.
    ///
    /// # Cancellation safety
    /// Dropping the future may or may not change the data; our membership is unaffected.
    pub async fn set_data(&self, data: &[u8]) -> Result<()> {
        self.held.set_data(data).await
    }

    /// Leaves the group: deletes our member node and waits until ZooKeeper has done it, so that a look at the group
    /// made after this returns does not show us.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] / [`Error::Closed`] when the session has ended (our node is gone with it);
    /// [`Error::ConnectionLoss`] only if the retry policy caps attempts.
    ///
    /// # Cancellation safety
    /// Dropping the future still removes our node, in the background.
    pub async fn leave(self) -> Result<()> {
        let Membership { held, _live, .. } = self;
        // Our node is about to go on purpose: that is not a loss. The next join of this Group may start once the
        // delete is confirmed (`_live` is dropped after it), or — if this future is dropped — once the background
        // delete has ended (`abandoned::settled`).
        held.into_node().delete().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_both_kazoo_layouts_and_nothing_else() {
        let hex = "0123456789abcdef0123456789ABCDEF";
        assert_eq!(layout_of(&format!("{hex}__party__")), Some(GroupLayout::Party));
        assert_eq!(
            layout_of("anything__party__x"),
            Some(GroupLayout::Party),
            "kazoo's own test: contains"
        );
        assert_eq!(layout_of(&format!("{hex}-worker-1")), Some(GroupLayout::Shallow));
        assert_eq!(
            layout_of(&format!("{hex}-")),
            Some(GroupLayout::Shallow),
            "kazoo: no identifier"
        );
        for other in [
            "_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-0000000001",
            "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "ready",
            "qn-0000000001",
            &format!("{hex}x-worker"),
            "0123456789abcdef0123456789abcdeg-x",
            "é123456789abcdef0123456789abcde-x",
        ] {
            assert_eq!(layout_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_shallow_identifier_is_the_name_after_the_uuid() {
        let stat = Stat {
            czxid: 7,
            mzxid: 7,
            pzxid: 7,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 1,
            data_length: 0,
            num_children: 0,
        };
        let hex = "0123456789abcdef0123456789abcdef";
        let shallow = Member::new(
            "/g",
            &format!("{hex}-worker-1"),
            Some(b"worker-1".to_vec()),
            &stat,
        );
        assert_eq!(shallow.identifier(), Some("worker-1"));
        let party = Member::new("/g", &format!("{hex}__party__"), Some(b"x".to_vec()), &stat);
        assert_eq!(party.identifier(), None);
    }
}
