//! The machinery every queue shares, written once: [`Items`], a queue directory whose items are named by a
//! [`Layout`](super::queue::Layout) — puts with receipts, `take` and `take_safe` with claims, the waiting consumers.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use zookeeper_client::{self as zk, CreateMode};

use crate::base::error::{At as _, Error, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::metrics::QUEUE_DEPTH;
use crate::base::path::child_path;
use crate::base::retry::{is_connection_loss, Attempts};
use crate::cache::{Cache, Changes};
use crate::node::held::Held;
use crate::node::own::OwnNode;
use crate::recipes::queues::claim::{Claimed, PendingClaim};
use crate::recipes::queues::layout::{millis_now, sorted_items, Layout};
use crate::session::cas::{Committed, Write};
use crate::session::listener::QueueEvent;
use crate::session::{read, Session};

/// A queue directory and the layout of its items: everything [`Queue`] and
/// [`PriorityQueue`](crate::PriorityQueue) do, written once.
#[derive(Debug, Clone)]
pub(crate) struct Items {
    session: Session,
    path: String,
    layout: Layout,
    /// What waiting consumers watch, shared by the clones of the queue.
    views: Arc<Views>,
}

/// The views of a queue a consumer waits on ([`Items::watching`]): the names of its children and of its claims, each
/// a names-only [`Cache`] started by the first take that may wait, on the queue's own session (so that it follows a
/// reconnecting session's next ZooKeeper session), and kept while a clone of the queue lives: a wait costs no
/// request of its own, and a change that makes no item takeable costs the waiting consumers none either.
#[derive(Debug, Default)]
struct Views {
    items: OnceLock<Cache>,
    claims: OnceLock<Cache>,
}

/// What one take watches while it waits: the views, and a signal of each change since the take began (so a change
/// during a look at the server is not missed).
struct Watching<'a> {
    items: &'a Cache,
    claims: Option<&'a Cache>,
    changes: (Changes, Option<Changes>),
}

/// Public methods of a queue recipe that hand the call to its `self.items` ([`Items`]) as they are. The recipe
/// names each — with its arguments, what it returns (in a `Result`) and its doc comment — where its type is:
///
/// ```ignore
/// forward_to_items! {
///     /// Removes and returns the lowest item, or `None` at once if the queue is empty.
///     pub async fn try_take() -> Option<Vec<u8>>;
/// }
/// ```
macro_rules! forward_to_items {
    ($($(#[$doc:meta])* pub async fn $name:ident($($arg:ident: $type:ty),*) -> $output:ty;)*) => {
        $(
            $(#[$doc])*
            pub async fn $name(&self $(, $arg: $type)*) -> $crate::Result<$output> {
                self.items.$name($($arg),*).await
            }
        )*
    };
}
pub(crate) use forward_to_items;

/// The outcome of one pass over the queue.
enum Pass<T> {
    Took(T),
    /// Nothing to take (for `take_safe`: nothing unclaimed).
    Empty,
    /// Every item we saw was taken by somebody else first: look again.
    Raced,
}

/// Tries `take` on `names`, lowest first, until one takes something.
async fn first_of<T, F>(names: Vec<String>, mut take: impl FnMut(String) -> F) -> Result<Pass<T>>
where
    F: Future<Output = Result<Option<T>>>,
{
    if names.is_empty() {
        return Ok(Pass::Empty);
    }
    for name in names {
        if let Some(taken) = take(name).await? {
            return Ok(Pass::Took(taken));
        }
    }
    Ok(Pass::Raced)
}

/// Runs `pass` until it settles: what it took, or `None` once the queue is empty; a lost race passes again.
async fn first_settled<T, F>(mut pass: impl FnMut() -> F) -> Result<Option<T>>
where
    F: Future<Output = Result<Pass<T>>>,
{
    loop {
        match pass().await? {
            Pass::Took(taken) => return Ok(Some(taken)),
            Pass::Raced => {}
            Pass::Empty => return Ok(None),
        }
    }
}

impl Items {
    /// The queue in the directory `path`, its items named by `layout`.
    pub(crate) fn new(session: Session, path: &str, layout: Layout) -> Result<Items> {
        Ok(Items {
            session,
            path: crate::base::path::validate(path)?,
            layout,
            views: Arc::default(),
        })
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Creates an item `<queue>/<prefix><sequence>` holding `data` (already encoded for the layout), together
    /// with its ephemeral receipt `<queue>/receipts/<id>`, in one transaction; returns the item's name.
    ///
    /// Every attempt creates the same receipt, so at most one attempt can commit. After a lost reply the receipt
    /// tells whether ours did, even when a consumer has taken the item meanwhile, and its creation zxid — the
    /// item's, as one transaction made both — tells which item among those named `<prefix>…` is ours. The receipt
    /// is deleted in the background once the outcome is known. In the one case where the reply was lost and the
    /// item was consumed before we looked, its name is no longer known and `prefix` is returned.
    pub(crate) async fn put(&self, prefix: &str, id: &str, data: &[u8]) -> Result<String> {
        self.pinned().await?.put_pinned(prefix, id, data).await
    }

    /// This queue on the session's current ZooKeeper session, for one operation (see `Session::pinned`); on a
    /// reconnecting session whose ZooKeeper session has ended, waits for the next one.
    async fn pinned(&self) -> Result<Items> {
        Ok(Items {
            session: self.session.pinned_usable().await?,
            ..self.clone()
        })
    }

    async fn put_pinned(&self, prefix: &str, id: &str, data: &[u8]) -> Result<String> {
        let item = child_path(&self.path, prefix);
        let receipts = child_path(&self.path, self.layout.receipts());
        let receipt = child_path(&receipts, id);
        let writes = [
            Write::Create(&item, data, CreateMode::PersistentSequential),
            Write::Create(&receipt, &[], CreateMode::Ephemeral),
        ];
        // The queue directory or its receipts directory may not exist yet: both are made persistent.
        let dirs = Some((receipts.as_str(), CreateMode::Persistent));
        let committed = self.session.create_once_in(&writes, true, dirs).await?;
        if let Committed::Done { .. } = committed {
            self.session.delete_in_background(&receipt, "a put receipt");
        }
        match committed {
            Committed::Done {
                stat: Some(stat),
                found: Some(_),
                ..
            } => self.find_put(prefix, stat.czxid).await,
            Committed::Done { created, .. } => Ok(created
                .iter()
                .filter_map(|path| path.rsplit('/').next())
                .find(|name| name.starts_with(prefix) && self.layout.key(name).is_some())
                .unwrap_or(prefix)
                .to_owned()),
            Committed::Refused { index, error } => Err(Committed::refused(index, error, &writes)),
        }
    }

    /// After a lost reply, our receipt (created at `czxid`) says our transaction happened: the item is the one
    /// named `<prefix>…` created by the same transaction, or `prefix` if a consumer took it already.
    async fn find_put(&self, prefix: &str, czxid: i64) -> Result<String> {
        let mut names = self.list(&self.path).await?;
        names.retain(|name| name.starts_with(prefix) && self.layout.key(name).is_some());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let read = read::read_nodes(&self.session, &self.path, &names).await?;
        let found = names.iter().zip(read).find_map(|(name, read)| {
            read.is_some_and(|(_, stat)| stat.czxid == czxid)
                .then(|| (*name).to_owned())
        });
        match &found {
            Some(name) => tracing::info!(queue = %self.path, %name, "found our item after a lost put reply"),
            None => {
                tracing::info!(queue = %self.path, item = %prefix, "our item was put and taken before we looked")
            }
        }
        Ok(found.unwrap_or_else(|| prefix.to_owned()))
    }

    /// On a reconnecting session, an end of the ZooKeeper session while we wait for an item (holding nothing) is
    /// no error: we wait on the next one. One during a take is (the item may have been taken by us or not).
    pub(crate) async fn take(&self) -> Result<Vec<u8>> {
        Ok(self.take_entry().await?.1)
    }

    /// Like `take`, with the item's name: `(name, data)`.
    pub(crate) async fn take_entry(&self) -> Result<(String, Vec<u8>)> {
        let mut watching = self.watching(false)?;
        let mut this = self.pinned().await?;
        loop {
            match this.take_pass(false).await? {
                Pass::Took(entry) => return Ok(entry),
                Pass::Raced => {}
                Pass::Empty => match this.wait_for_items(&mut watching).await {
                    Err(err) if self.session.carries_on(&err) => this = self.pinned().await?,
                    waited => waited?,
                },
            }
        }
    }

    pub(crate) async fn take_timeout(&self, timeout: Duration) -> Result<Vec<u8>> {
        Ok(self.take_entry_timeout(timeout).await?.1)
    }

    pub(crate) async fn take_entry_timeout(&self, timeout: Duration) -> Result<(String, Vec<u8>)> {
        idioms::timeout(timeout, self.take_entry()).await
    }

    pub(crate) async fn try_take(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.try_take_entry().await?.map(|(_, data)| data))
    }

    pub(crate) async fn try_take_entry(&self) -> Result<Option<(String, Vec<u8>)>> {
        let this = self.pinned().await?;
        first_settled(|| this.take_pass(false)).await
    }

    pub(crate) async fn peek(&self) -> Result<Option<Vec<u8>>> {
        let this = self.pinned().await?;
        Ok(first_settled(|| this.take_pass(true))
            .await?
            .map(|(_, data)| data))
    }

    pub(crate) async fn len(&self) -> Result<usize> {
        let this = self.pinned().await?;
        Ok(this.sorted(this.list(&this.path).await?).len())
    }

    pub(crate) async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }

    /// On a reconnecting session, the end of the ZooKeeper session is no error here: a claim made on it is gone
    /// with it (the item is claimable again, still in its place), so we go on with the next one.
    pub(crate) async fn take_safe(&self) -> Result<Claimed> {
        let mut watching = self.watching(true)?;
        let mut this = self.pinned().await?;
        loop {
            let step = match this.claim_pass().await {
                Ok(Pass::Took(claimed)) => return Ok(claimed),
                Ok(Pass::Raced) => Ok(()),
                Ok(Pass::Empty) => this.wait_for_items(&mut watching).await,
                Err(err) => Err(err),
            };
            match step {
                Err(err) if self.session.carries_on(&err) => {
                    tracing::debug!(queue = %self.path, %err, "the session ended while claiming; going on with the next");
                    this = self.pinned().await?;
                }
                step => step?,
            }
        }
    }

    pub(crate) async fn take_safe_timeout(&self, timeout: Duration) -> Result<Claimed> {
        idioms::timeout(timeout, self.take_safe()).await
    }

    pub(crate) async fn try_take_safe(&self) -> Result<Option<Claimed>> {
        let this = self.pinned().await?;
        first_settled(|| this.claim_pass()).await
    }

    /// The items among `children`, first out first; their number is the queue's depth gauge
    /// (`zklock_queue_depth{path}`: the items seen at the last listing, claimed ones included).
    fn sorted(&self, children: Vec<String>) -> Vec<String> {
        let items = sorted_items(children, self.layout);
        metrics::gauge!(QUEUE_DEPTH, "path" => self.path.clone()).set(items.len() as f64);
        items
    }

    /// The items among `items` (sorted) that may be taken now — all of them but in a delay queue, where those due
    /// by now — and when the next of the others is due (epoch ms).
    fn ready(&self, items: Vec<String>) -> (Vec<String>, Option<u64>) {
        let now = millis_now();
        let (ready, later): (Vec<String>, Vec<String>) =
            items.into_iter().partition(|name| self.layout.due(name) <= now);
        (ready, later.iter().map(|name| self.layout.due(name)).min())
    }

    /// One look at the queue: try the items lowest first until one delete succeeds — or, to `peek`, one read.
    async fn take_pass(&self, peek: bool) -> Result<Pass<(String, Vec<u8>)>> {
        let (items, _) = self.ready(self.sorted(self.list(&self.path).await?));
        first_of(items, |name| async move {
            let data = match peek {
                // Gone since the listing: try the next one.
                true => self
                    .session
                    .get(&child_path(&self.path, &name))
                    .await?
                    .map(|(data, _)| data),
                false => self.take_item(&name).await?,
            };
            Ok(data.map(|data| (name, self.layout.decode(data))))
        })
        .await
    }

    /// Reads and deletes one item; `None` if another consumer deleted it first.
    async fn take_item(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let path = child_path(&self.path, name);
        let mut attempt = Attempts::default();
        loop {
            // Sent back to back: the read is processed before the delete, and if the delete succeeds nobody
            // deleted the node in between, so the data we read is the item we own.
            let read = self.session.client().get_data(&path);
            let delete = self.session.client().delete(&path, None);
            let (read, deleted) = self.both(&attempt, read, delete).await?;
            match deleted {
                Ok(()) => return Ok(Some(read.at("getData", &path)?.0)),
                Err(zk::Error::NoNode) => return Ok(None),
                Err(err) if is_connection_loss(&err) => {
                    self.session.retry().pause(&mut attempt).await?;
                    if self.session.exists(&path).await?.is_none() {
                        // Ours or another consumer's delete: we cannot tell (see "Limits").
                        tracing::warn!(item = %path, "delete reply lost and the item is gone; skipping it");
                        return Ok(None);
                    }
                }
                Err(err) => return Err(Error::zk("delete", &path, err)),
            }
        }
    }

    /// One look at the queue and its claims: try to claim the unclaimed items lowest first.
    async fn claim_pass(&self) -> Result<Pass<Claimed>> {
        let claims_dir = child_path(&self.path, self.layout.claims());
        let (items, claims) = tokio::join!(self.list(&self.path), self.list(&claims_dir));
        let claims = claims?;
        let (ready, _) = self.ready(self.sorted(items?));
        let free = ready.into_iter().filter(|name| !claims.contains(name)).collect();
        first_of(free, |name| async move { self.claim_item(&name).await }).await
    }

    /// Claims one item and reads it; `None` if somebody else claimed or completed it first.
    async fn claim_item(&self, name: &str) -> Result<Option<Claimed>> {
        let claims_dir = &child_path(&self.path, self.layout.claims());
        let item = child_path(&self.path, name);
        let claim = child_path(claims_dir, name);
        let mode = CreateMode::Ephemeral.with_acls(self.session.acls());
        let mut attempt = Attempts::default();
        let mut reply_lost = false;
        // The claim's data is a token of this attempt: consumers sharing one client share a session, so the
        // session alone cannot tell whose claim a node is.
        let token = uuid::Uuid::new_v4().to_string().into_bytes();
        // Until the claim is known to be ours (or not), a cancellation or error removes it if it carries our token.
        let mut pending = PendingClaim {
            session: self.session.clone(),
            claim: claim.clone(),
            token: token.clone(),
            armed: true,
        };
        loop {
            // Claim and read in one round trip; the read only counts if the claim is ours.
            let create = self.session.client().create(&claim, &token, &mode);
            let read = self.session.client().get_data(&item);
            let (created, read) = self.both(&attempt, create, read).await?;
            let ours = match created {
                Ok(_) => true,
                // After a lost reply, the claim is this attempt's if it carries our token.
                Err(zk::Error::NodeExists) if reply_lost => {
                    let found = self.session.get(&claim).await?;
                    found.is_some_and(|(data, _)| data == token)
                }
                Err(zk::Error::NodeExists) => false,
                Err(zk::Error::NoNode) => {
                    self.session.mkdir(claims_dir, CreateMode::Persistent).await?;
                    continue;
                }
                Err(err) if is_connection_loss(&err) => {
                    self.session.retry().pause(&mut attempt).await?;
                    reply_lost = true;
                    continue;
                }
                Err(err) => return Err(Error::zk("create", &claim, err)),
            };
            if !ours {
                pending.armed = false;
                return Ok(None);
            }
            // Ours: from here on `Held` removes the claim if anything fails.
            let held = Held::watch(OwnNode::named(&self.session, claims_dir, name)?, &self.session);
            pending.armed = false;
            let read = match read {
                // The read raced with an unconfirmed claim: read again now that it is ours.
                Err(err) if is_connection_loss(&err) => self.session.get(&item).await,
                other => other.at("getData", &item).if_exists(),
            };
            let Some((data, _)) = read? else {
                // Completed by another consumer between our listing and our claim.
                held.into_node().delete().await?;
                return Ok(None);
            };
            held.hold();
            return Ok(Some(Claimed {
                session: self.session.clone(),
                held,
                item,
                name: name.to_owned(),
                data: self.layout.decode(data),
            }));
        }
    }

    /// The views a take that may wait watches ([`Views`]; `safe`: the claims too), started if need be, with a
    /// signal of each change from now on.
    fn watching(&self, safe: bool) -> Result<Watching<'_>> {
        let view = |cell: &'_ OnceLock<Cache>, dir: &str| -> Result<()> {
            if cell.get().is_none() {
                let cache = Cache::children(&self.session, dir)?.names_only().start();
                // Started by another take meanwhile: ours is dropped.
                cell.get_or_init(|| cache);
            }
            Ok(())
        };
        view(&self.views.items, &self.path)?;
        if safe {
            view(&self.views.claims, &child_path(&self.path, self.layout.claims()))?;
        }
        let items = self.views.items.get().ok_or(Error::Closed)?;
        let claims = safe.then(|| self.views.claims.get()).flatten();
        let changes = (items.changes(), claims.map(Cache::changes));
        Ok(Watching {
            items,
            claims,
            changes,
        })
    }

    /// Waits until a change the views see makes an item takeable, or in a delay queue until the earliest item is
    /// due. Every change since the take began counts, so a change during the caller's look at the server is not
    /// missed; a view that lags behind that look can only send the caller to look again once more.
    async fn wait_for_items(&self, watching: &mut Watching<'_>) -> Result<()> {
        let due = |due: u64| tokio::time::sleep(Duration::from_millis(due.saturating_sub(millis_now())));
        loop {
            let (_, next_due) = self.look(watching);
            self.session.emit(QueueEvent::Waiting {
                on: self.path.clone(),
            });
            let (items, claims) = &mut watching.changes;
            tokio::select! {
                changed = items.next() => changed?,
                changed = idioms::or_pending(claims.as_mut().map(Changes::next)) => changed?,
                // In a delay queue, the earliest item's due time ends the wait too.
                () = idioms::or_pending(next_due.map(due)) => return Ok(()),
            }
            self.session.emit(QueueEvent::Woken {
                by: self.path.clone(),
            });
            if !self.look(watching).0.is_empty() {
                return Ok(());
            }
        }
    }

    /// What the views hold: the unclaimed items that may be taken now, and when the next of the others is due.
    fn look(&self, watching: &Watching<'_>) -> (Vec<String>, Option<u64>) {
        let claims_dir = child_path(&self.path, self.layout.claims());
        let claimed = watching
            .claims
            .map(|c| c.children_of(&claims_dir))
            .unwrap_or_default();
        let mut unclaimed = sorted_items(watching.items.children_of(&self.path), self.layout);
        unclaimed.retain(|name| claimed.binary_search(name).is_err());
        self.ready(unclaimed)
    }

    /// Two requests sent back to back (ZooKeeper processes them in that order), answered within what is left of
    /// the retry policy's time budget for this run of `attempt`s.
    async fn both<A: Future, B: Future>(
        &self,
        attempt: &Attempts,
        a: A,
        b: B,
    ) -> Result<(A::Output, B::Output)> {
        let both = async { tokio::join!(a, b) };
        let answered = self.session.retry().within(attempt, both).await;
        answered.ok_or_else(|| attempt.timed_out())
    }

    /// The children of `dir`; empty if it does not exist.
    async fn list(&self, dir: &str) -> Result<Vec<String>> {
        self.session.list_or_empty(dir).await
    }
}
