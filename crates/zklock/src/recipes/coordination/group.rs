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
//! The hex is a fresh uuid per join, so a create whose reply was lost is recognised when it is retried (the name
//! exists: it is ours) and never makes a second member. Members are ordered by the zxid of their node's creation
//! (`czxid`): the order in which they joined, the same for every observer.
//!
//! The live view ([`Members`]) lists the group with a child watch and reads each member with a data watch; a
//! notification only marks what to look at again, and every change is found by a fresh listing or read — so a
//! burst of changes, or a reconnection after which the server re-delivers the watches, never leaves the view
//! behind. Changes are reported as [`MemberEvent`]s computed from the difference between two looks.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, SystemTime};

use zookeeper_client::{CreateMode, OneshotWatcher, Stat};

use crate::base::error::{Error, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::path::child_path;
use crate::node::held::Held;
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
#[derive(Debug, Clone)]
pub struct Group {
    session: Session,
    path: String,
    data: Vec<u8>,
    layout: GroupLayout,
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
        })
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

    /// Our member node's name for one join: a fresh uuid, in our layout.
    fn member_name(&self) -> Result<String> {
        let unique = uuid::Uuid::new_v4().simple().to_string();
        match self.layout {
            GroupLayout::Party => Ok(format!("{unique}{PARTY}")),
            GroupLayout::Shallow => {
                let invalid = |reason| Error::InvalidPath {
                    path: child_path(
                        &self.path,
                        &format!("{unique}-{}", String::from_utf8_lossy(&self.data)),
                    ),
                    reason,
                };
                let identifier = std::str::from_utf8(&self.data)
                    .map_err(|_| invalid("a shallow member's data must be UTF-8"))?;
                if identifier.contains('/') {
                    return Err(invalid("a shallow member's data must not contain /"));
                }
                let name = format!("{unique}-{identifier}");
                crate::base::path::validate(&child_path(&self.path, &name))?;
                Ok(name)
            }
        }
    }

    /// Joins the group: creates our ephemeral member node (and the group directory if missing).
    ///
    /// # Errors
    /// See [`Group`]. A join never waits for anybody: it fails only when ZooKeeper does.
    ///
    /// On a [reconnecting](Session::reconnecting) session it joins on the current ZooKeeper session, waiting for
    /// the next one if it has ended. A membership does not outlive its ZooKeeper session (its
    /// [`lost`](Membership::lost) signal fires): join again to carry on, as a new member.
    ///
    /// # Cancellation safety
    /// Dropped at any await point, it removes our member node.
    pub async fn join(&self) -> Result<Membership> {
        loop {
            match self.join_once().await {
                // On a reconnecting session, a join that failed because its ZooKeeper session ended holds nothing
                // (our node went with it): join on the next one.
                Err(Error::SessionExpired | Error::AuthFailed) if self.session.is_reconnecting() => {
                    tracing::debug!(path = %self.path, "the session ended while joining; joining on the next");
                }
                joined => return joined,
            }
        }
    }

    async fn join_once(&self) -> Result<Membership> {
        // One ZooKeeper session for the whole join: the node and its lost signal are on the session that made it.
        let session = &self.session.pinned_usable().await?;
        let name = self.member_name()?;
        let me = child_path(&self.path, &name);
        // Our name is unique: a node by that name after a lost reply is ours, from an earlier attempt.
        let node = session
            .create_own(&self.path, &name, &self.data, &[], Some(CreateMode::Container))
            .await?
            .made(&me)?;
        let held = Held::watch(node, session);
        held.hold();
        tracing::debug!(path = %me, "joined the group");
        Ok(Membership {
            held,
            layout: self.layout,
            path: me,
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
        let mut members = Members {
            session: self.session.clone(),
            path: self.path.clone(),
            view: Vec::new(),
            known: Vec::new(),
            pending: VecDeque::new(),
            watches: tokio::task::JoinSet::new(),
            relist: true,
            stale: BTreeSet::new(),
        };
        members.refresh().await?;
        // The first look is the starting view, not a change.
        members.pending.clear();
        members.view = members.known.clone();
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
            GroupLayout::Shallow => self.name.get(33..),
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

/// A watch that fired: the group's children (or the group's creation), or one member's node; an error if it
/// reported the end of the session.
#[derive(Debug)]
enum Fired {
    Children(Result<()>),
    Member(String, Result<()>),
}

/// A live, ordered view of a [`Group`] (from [`Group::watch`]): [`members`](Members::members) is the view,
/// [`next`](Members::next) waits for the next change and applies it.
///
/// It costs a child watch on the group and a data watch per member; each change costs a listing, or a read of the
/// member that changed. Dropping it drops the watches.
#[derive(Debug)]
pub struct Members {
    session: Session,
    path: String,
    /// As of the last change handed out; ordered by `joined_zxid`.
    view: Vec<Member>,
    /// As of the last look (the view once every pending change is handed out); ordered by `joined_zxid`.
    known: Vec<Member>,
    /// Changes found by the last look, not yet handed out.
    pending: VecDeque<MemberEvent>,
    watches: tokio::task::JoinSet<Fired>,
    /// The children watch fired (or was never set): list again.
    relist: bool,
    /// Members whose data watch fired: read again.
    stale: BTreeSet<String>,
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

    /// Waits for the next change and returns it; [`members`](Members::members) then includes it. Several changes
    /// found by one look are returned one by one: departures first, then data changes, then arrivals in the order
    /// they joined.
    ///
    /// # Errors
    /// [`Error::SessionExpired`] / [`Error::Closed`] when the session ends (the view is then stale for good);
    /// [`Error::ConnectionLoss`] only if the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
    ///
    /// # Cancellation safety
    /// Cancel safe: dropped at any await point, no change is lost; the next call finds it.
    pub async fn next(&mut self) -> Result<MemberEvent> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                self.apply(&event);
                return Ok(event);
            }
            if self.relist || !self.stale.is_empty() {
                self.refresh().await?;
                continue;
            }
            match self.watches.join_next().await {
                // Nothing is watched (it cannot happen once a look succeeded): look again.
                None => self.relist = true,
                Some(Ok(Fired::Children(changed))) => {
                    changed?;
                    self.relist = true;
                }
                Some(Ok(Fired::Member(name, changed))) => {
                    changed?;
                    if self.known.iter().any(|m| m.name == name) {
                        self.stale.insert(name);
                    }
                }
                // A watch task cannot panic; if it was aborted, look again.
                Some(Err(_)) => self.relist = true,
            }
        }
    }

    /// Applies a change handed out to the view.
    fn apply(&mut self, event: &MemberEvent) {
        match event {
            MemberEvent::Joined(member) => {
                let at = self.view.partition_point(|m| m.joined_zxid < member.joined_zxid);
                self.view.insert(at, member.clone());
            }
            MemberEvent::Left(member) => self
                .view
                .retain(|m| (&m.name, m.joined_zxid) != (&member.name, member.joined_zxid)),
            MemberEvent::Changed { after, .. } => {
                if let Some(m) = self.view.iter_mut().find(|m| m.name == after.name) {
                    *m = after.clone();
                }
            }
        }
    }

    /// One look: the listing if the children watch fired, and a read (with a new data watch) of every new or
    /// changed member. Nothing is changed before every request has been answered, so a look dropped half-way
    /// leaves the state as it was.
    async fn refresh(&mut self) -> Result<()> {
        let (client, retry) = (self.session.client(), self.session.retry());
        let mut children_watch: Option<OneshotWatcher> = None;
        let present: BTreeSet<String> = if self.relist {
            match retry
                .run_at("getChildren", &self.path, || {
                    client.list_and_watch_children(&self.path)
                })
                .await
                .if_exists()?
            {
                Some((children, watcher)) => {
                    children_watch = Some(watcher);
                    children.into_iter().filter(|c| layout_of(c).is_some()).collect()
                }
                None => {
                    // No group yet (or no more): wait for it to be created.
                    let (stat, watcher) = self.session.watch_exists(&self.path).await?;
                    if stat.is_some() {
                        return Ok(()); // created meanwhile: list it (`relist` stays set)
                    }
                    children_watch = Some(watcher);
                    BTreeSet::new()
                }
            }
        } else {
            self.known.iter().map(|m| m.name.clone()).collect()
        };
        let to_read: Vec<String> = present
            .iter()
            .filter(|name| self.stale.contains(*name) || !self.known.iter().any(|m| &m.name == *name))
            .cloned()
            .collect();
        let mut read = Vec::with_capacity(to_read.len());
        for name in &to_read {
            let found = read::read_and_watch_node(client, retry, &self.path, name).await?;
            read.push(found);
        }

        // Every answer is in: apply.
        let mut left = Vec::new();
        let mut changed = Vec::new();
        let mut joined = Vec::new();
        let mut view: Vec<Member> = Vec::with_capacity(present.len());
        // Members still listed stay (those read again are replaced below).
        for member in std::mem::take(&mut self.known) {
            match present.contains(&member.name) {
                true => view.push(member),
                false => left.push(member),
            }
        }
        for (name, found) in to_read.iter().zip(read) {
            let before = view.iter().position(|m| &m.name == name).map(|i| view.remove(i));
            let Some((data, stat, watcher)) = found else {
                // Gone since the listing: the children watch tells the others (or has already).
                left.extend(before);
                continue;
            };
            let watched = name.clone();
            self.watches
                .spawn(async move { Fired::Member(watched, idioms::changed(watcher).await.map(drop)) });
            let after = Member::new(&self.path, name, data, &stat);
            match before {
                None => joined.push(after.clone()),
                // The same name made again (kazoo re-creates its node under a new session): a new member.
                Some(before) if before.joined_zxid != after.joined_zxid => {
                    left.push(before);
                    joined.push(after.clone());
                }
                Some(before) if before.data != after.data || before.data_readable != after.data_readable => {
                    changed.push(MemberEvent::Changed {
                        before,
                        after: after.clone(),
                    });
                }
                Some(_) => {}
            }
            view.push(after);
        }
        view.sort_by_key(|m| m.joined_zxid);
        joined.sort_by_key(|m| m.joined_zxid);
        self.known = view;
        self.pending.extend(left.into_iter().map(MemberEvent::Left));
        self.pending.extend(changed);
        self.pending.extend(joined.into_iter().map(MemberEvent::Joined));
        // Every stale member still present was read; the others are gone.
        self.stale.clear();
        if let Some(watcher) = children_watch {
            self.relist = false;
            self.watches
                .spawn(async move { Fired::Children(idioms::changed(watcher).await.map(drop)) });
        }
        Ok(())
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
        // Our node is about to go on purpose: that is not a loss.
        self.held.into_node().delete().await
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
