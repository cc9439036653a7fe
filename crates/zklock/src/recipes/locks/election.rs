//! Leader election: the fair queue, where the head of the queue leads.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::{Arc, PoisonError};

use zookeeper_client as zk;

use crate::base::error::{Error, LostReason, Result};
use crate::base::idioms::{self, IfExists};
use crate::base::names::{self, Marker};
use crate::base::path::child_path;
use crate::engine::{self, Exclusive, Place, Rules as _, Wait};
use crate::node::fenced::FencedWrites;
use crate::node::guard::Guard;
use crate::session::{read, Session};

/// Proof of leadership (a [`Guard`]): fencing token, lost signal; [`release`](Guard::release) resigns.
pub type Leadership = Guard;

/// Leader election in the manner of Apache Curator's `LeaderLatch`: the candidates queue up in one directory and
/// the lowest node leads.
///
/// Candidates create `<path>/_c_<uuid>-latch-<seq>` (Curator's node names) and each watches only the candidate
/// just before it, so when the leader leaves exactly one candidate — the next in line — is woken and leads without
/// a new contest. Leadership is a [`Guard`]: its [`fencing_token`](Guard::fencing_token) increases strictly from
/// one leader to the next, its [`lost`](Guard::lost) signal fires when the leadership ends without a
/// resignation, and [`release`](Guard::release) resigns.
///
/// **Never two leaders.** A reconnection does not touch our node (Curator's `LeaderLatch` re-created it on
/// reconnect and could briefly have two leaders, #1137/#1169): the session and its node survive a reconnection, and
/// nobody else leads while the node exists. A leader cut off from ZooKeeper is told it lost leadership (by the
/// default [`LostPolicy`](crate::LostPolicy), after half the session timeout) before the server can expire its
/// session and let the next candidate lead.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// let election = zklock::LeaderElection::new(&client, "/elections/scheduler")?.with_data("host-a:8080");
/// let leadership = election.campaign().await?;
/// tokio::select! {
///     reason = leadership.lost() => eprintln!("no longer the leader: {reason}"),
///     _ = async { /* lead, passing leadership.fencing_token() to what we command */ } => {}
/// }
/// leadership.release().await?; // resign
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`](crate::Error::SessionExpired) or [`Error::Closed`](crate::Error::Closed) when the
/// session ends while campaigning; [`Error::Timeout`](crate::Error::Timeout) from
/// [`campaign_timeout`](LeaderElection::campaign_timeout); [`Error::NodeDeleted`](crate::Error::NodeDeleted) if
/// somebody deletes our candidate node while we wait; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only
/// if the [`RetryPolicy`](crate::RetryPolicy) caps attempts.
///
/// # Events
/// For each campaign, the [`Session`]'s listener receives `Created` (our node), `Waiting` and `Woken` (the
/// candidate just before ours) and `Acquired` (we lead). The gauge `zklock_leader{path}` is 1 while this process
/// leads the election, else 0 (see "Logging and metrics" in the crate documentation).
///
/// # Cancellation safety
/// [`campaign`](LeaderElection::campaign) and its variants are cancellation safe: dropping the future at any
/// await point withdraws our candidacy (our node is removed in the background). [`Observer::next`] and
/// [`leader`](LeaderElection::leader) only read. Dropping the future of [`lead`](LeaderElection::lead) drops the
/// current term's work and resigns.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    place: Place,
    /// Whether `lead` goes back into the election after the session ended (see `with_auto_requeue`).
    auto_requeue: bool,
}

/// The current leader, as any participant or observer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// The full path of the leader's node.
    pub path: String,
    /// The data the leader stored in its node ([`LeaderElection::with_data`]), e.g. its address; empty when it is
    /// not [`data_readable`](Leader::data_readable).
    pub data: Vec<u8>,
    /// Whether our session may read the leader's data: `false` when the node's ACL denies us `READ` (the rest is
    /// known all the same: see [`Participant::data_readable`](crate::Participant::data_readable)).
    pub data_readable: bool,
    /// The leader's fencing token (its node's czxid).
    pub fencing_token: i64,
    /// The id of the leader's session.
    pub session_id: i64,
}

/// What [`LeaderElection::lead`] gives the work of one term: its fencing token and node, and — through the term's
/// [`Leadership`], which `lead` keeps in order to resign — its [`lost`](Term::lost) signal, its
/// [`session_valid_until`](Term::session_valid_until) and [`fenced_writes`](Term::fenced_writes), the
/// [`Guard`]'s own.
///
/// Cheap to clone. A clone kept after the term (in a task the work spawned, say) sees the term lost —
/// [`LostReason::Released`] once `lead` resigned — and its fenced writes refused; it holds a handle on the ZooKeeper
/// client, so let it go with the term.
#[derive(Debug, Clone)]
pub struct Term {
    /// The fencing token of this term's leadership.
    pub fencing_token: i64,
    /// The full path of our node.
    pub path: String,
    /// The term's leadership, until `lead` takes it back.
    leadership: Lent,
    /// The client our node was created with: what the fenced writes go through.
    client: zk::Client,
}

/// Two terms are the same term when they have the same node and fencing token.
impl PartialEq for Term {
    fn eq(&self, other: &Term) -> bool {
        (self.fencing_token, &self.path) == (other.fencing_token, &other.path)
    }
}

impl Eq for Term {}

impl Term {
    /// Completes when this term's leadership is lost, with the reason ([`Guard::lost`]): our node deleted by
    /// somebody else, the session ended, or the [`LostPolicy`](crate::LostPolicy) gave it up; and with
    /// [`LostReason::Released`] once the term is over. Cheap to call many times; the future owns what it needs.
    ///
    /// `lead` drops the term's work as soon as the leadership is lost, after polling it once more: what the work
    /// does about the loss must be done before its next await (or in a task of its own, holding a clone of this
    /// term). Work that writes to ZooKeeper should do so with [`fenced_writes`](Term::fenced_writes) all the same:
    /// a paused leader learns of the loss late.
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        let lost = self.leadership.ask(Guard::lost);
        async move {
            match lost {
                Some(lost) => lost.await,
                None => LostReason::Released,
            }
        }
    }

    /// Whether this term's leadership has been lost already (also once the term is over).
    pub fn is_lost(&self) -> bool {
        self.leadership.ask(Guard::is_lost).unwrap_or(true)
    }

    /// Why this term's leadership was lost, if it was ([`LostReason::Released`] once the term is over).
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.leadership
            .ask(Guard::lost_reason)
            .unwrap_or(Some(LostReason::Released))
    }

    /// Completes when this term's leadership is suspended (`None`; under [`LostPolicy::Suspend`](crate::LostPolicy),
    /// see [`Guard::suspended`]) or lost (with the reason; [`LostReason::Released`] once the term is over). `lead`
    /// does not stop the work for a suspension: work under a suspending policy selects on this and waits for
    /// [`resumed`](Term::resumed) before it acts again.
    pub fn suspended(&self) -> impl Future<Output = Option<LostReason>> + Send + 'static {
        let suspended = self.leadership.ask(Guard::suspended);
        async move {
            match suspended {
                Some(suspended) => suspended.await,
                None => Some(LostReason::Released),
            }
        }
    }

    /// Completes when this term's leadership is held and not suspended (`Ok`, at once unless suspended now; the same
    /// term, the same fencing token), or with the reason it was lost instead ([`Guard::resumed`]).
    pub fn resumed(&self) -> impl Future<Output = std::result::Result<(), LostReason>> + Send + 'static {
        let resumed = self.leadership.ask(Guard::resumed);
        async move {
            match resumed {
                Some(resumed) => resumed.await,
                None => Err(LostReason::Released),
            }
        }
    }

    /// Whether this term's leadership is suspended now.
    pub fn is_suspended(&self) -> bool {
        self.leadership.ask(Guard::is_suspended).unwrap_or(false)
    }

    /// The instant before which ZooKeeper cannot have expired our session: a deadline for the term's work that
    /// does not depend on this process being scheduled. See [`Guard::session_valid_until`]; `None` before the first
    /// confirmed contact, once the leadership is lost and once the term is over.
    pub fn session_valid_until(&self) -> Option<std::time::Instant> {
        self.leadership.ask(Guard::session_valid_until).flatten()
    }

    /// A transaction of ZooKeeper writes that commits only while our node exists at the server — that is, while
    /// this term lasts ([`Guard::fenced_writes`]): the server itself refuses, with
    /// [`Error::LockLost`](crate::Error::LockLost), the writes of a leader that lost its leadership without knowing
    /// it yet.
    pub fn fenced_writes(&self) -> FencedWrites<'_> {
        FencedWrites::new(&self.client, &self.path)
    }
}

/// A term's leadership, lent to its work: [`Term`]'s methods ask it, `lead` takes it back to resign (from then on
/// nothing is left to ask).
#[derive(Debug, Clone)]
struct Lent(Arc<std::sync::Mutex<Option<Leadership>>>);

impl Lent {
    fn new(leadership: Leadership) -> Lent {
        Lent(Arc::new(std::sync::Mutex::new(Some(leadership))))
    }

    /// What `ask` says of the leadership; `None` once `lead` took it back.
    fn ask<R>(&self, ask: impl FnOnce(&Leadership) -> R) -> Option<R> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(ask)
    }

    fn take_back(&self) -> Option<Leadership> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The candidates' queue: the exclusive rule over `latch-` nodes.
const RULES: Exclusive = Exclusive(Marker::Latch);

impl LeaderElection {
    /// An election in the directory `path` (created, with its parents, on first use), on `session` — a
    /// [`Session`] or a `&Client`.
    pub fn new(session: impl Into<Session>, path: &str) -> Result<LeaderElection> {
        Ok(LeaderElection {
            place: Place::new(session, path)?,
            auto_requeue: false,
        })
    }

    /// Whether [`lead`](LeaderElection::lead) goes back into the election by itself when the ZooKeeper session
    /// ends (Curator's `autoRequeue`), on a [reconnecting](Session::reconnecting) session: the term in progress
    /// is stopped (its leadership reports [`LostReason::SessionExpired`]), and once the next ZooKeeper session is
    /// made `lead` campaigns again on it — a new node at the back of the queue, so a new term has a new, larger
    /// fencing token, and is never a continuation of the lost one. Off by default, and without effect on a session
    /// made from a `Client` (its session never comes back): `lead` then ends with the session's error.
    pub fn with_auto_requeue(mut self, auto_requeue: bool) -> LeaderElection {
        self.auto_requeue = auto_requeue;
        self
    }

    /// Whether `err`, the end of the ZooKeeper session, is one `lead` carries on after.
    fn requeues_after(&self, err: &Error) -> bool {
        self.auto_requeue && self.place.session.carries_on(err)
    }

    engine::place_methods! {
        /// Data stored in our node, e.g. our address: what [`leader`](LeaderElection::leader) shows the others.
        pub fn with_data;
        /// The election directory.
        pub fn path;
        /// The session and policies this election uses.
        pub fn session;
    }

    async fn acquire(&self, wait: Wait) -> Result<Option<Leadership>> {
        let leadership = engine::acquire(&self.place, &RULES, wait).await?;
        if let Some(leadership) = &leadership {
            self.count_while_leading(leadership);
        }
        Ok(leadership)
    }

    /// `zklock_leader{path}` goes up by one now and down by one when `leadership` ends (lost, released or
    /// dropped): 1 while this process leads the election, else 0.
    fn count_while_leading(&self, leadership: &Leadership) {
        let gauge = metrics::gauge!(crate::base::metrics::LEADER, "path" => self.place.path.clone());
        gauge.increment(1.0);
        let ended = leadership.lost();
        tokio::spawn(async move {
            ended.await;
            gauge.decrement(1.0);
        });
    }

    engine::acquire_methods! {
        acquire() => Leadership:
        /// Joins the queue of candidates and completes when we lead.
        pub async fn campaign;
        /// Leads only if there is no other candidate; otherwise withdraws and returns `None`.
        pub async fn try_campaign;
        /// Campaigns for at most `timeout`; [`Error::Timeout`](crate::Error::Timeout) (and withdrawn) afterwards.
        /// The timeout bounds the wait for our turn, not the create of our node: a zero timeout takes
        /// a free one.
        pub async fn campaign_timeout;
    }

    /// The current leader, if there is one. A leader whose node's ACL keeps its data from our session is shown
    /// all the same, with [`data_readable`](Leader::data_readable) `false`.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        loop {
            let Some(head) = self.head().await? else {
                return Ok(None);
            };
            let path = child_path(&self.place.path, &head);
            match read::read_node(self.place.session.client(), self.place.session.retry(), &path).await? {
                Some((data, stat)) => return Ok(Some(leader(path, data, &stat))),
                // The leader left between the listing and the read: the next one leads now.
                None => continue,
            }
        }
    }

    /// Follows leadership changes; see [`Observer`].
    pub fn observe(&self) -> Observer {
        Observer {
            election: self.clone(),
            last: None,
        }
    }

    /// Leads again and again: campaigns, runs `term` while we lead, and when the work of a term returns
    /// [`ControlFlow::Continue`] resigns and joins the queue again; [`ControlFlow::Break`] resigns and returns its
    /// value. The work is given a [`Term`]: the fencing token, and the leadership's lost signal, session validity
    /// and fenced writes. When leadership is lost during a term (our node deleted, or disconnected for too long)
    /// the term's work is dropped (cancelled) at once — after one more poll, so that a work that watches
    /// [`Term::lost`] has its say — and we rejoin the queue: the automatic re-queue. A lost session ends the loop
    /// with its error, unless the session reconnects and [`with_auto_requeue`](Self::with_auto_requeue) is on: then
    /// we campaign again once the next ZooKeeper session is made.
    ///
    /// # Errors
    /// Those of [`campaign`](LeaderElection::campaign) and of resigning ([`Guard::release`]; a leadership lost
    /// during the term is no error of the loop's).
    pub async fn lead<F, Fut, T>(&self, mut term: F) -> Result<T>
    where
        F: FnMut(Term) -> Fut,
        Fut: Future<Output = ControlFlow<T>>,
    {
        loop {
            let leadership = match self.campaign().await {
                Ok(leadership) => leadership,
                Err(err) if self.requeues_after(&err) => {
                    tracing::info!(path = %self.place.path, %err, "the session ended while campaigning; campaigning again on the next");
                    self.place.session.ready().await?;
                    continue;
                }
                Err(err) => return Err(err),
            };
            let (lost, fencing_token, path, client) = (
                leadership.lost(),
                leadership.fencing_token(),
                leadership.path().to_owned(),
                leadership.client().clone(),
            );
            let lent = Lent::new(leadership);
            let work = term(Term {
                fencing_token,
                path: path.clone(),
                leadership: lent.clone(),
                client,
            });
            let flow = tokio::select! {
                // The work first: when it and the loss are ready together, its own answer to the loss counts.
                biased;
                flow = work => Some(flow),
                reason = lost => {
                    tracing::warn!(%path, %reason, "leadership lost; the term's work was stopped");
                    None
                }
            };
            let leadership = lent.take_back().expect("only lead takes the leadership back");
            if let Some(value) = self.resign(leadership, flow).await? {
                return Ok(value);
            }
        }
    }

    /// Ends a term: resigns `leadership` and returns the value of a work that broke the loop (`None`: campaign
    /// again; `flow` is `None` when the work was stopped by the loss of the leadership).
    async fn resign<T>(&self, leadership: Leadership, flow: Option<ControlFlow<T>>) -> Result<Option<T>> {
        let value = match flow {
            Some(ControlFlow::Break(value)) => Some(value),
            Some(ControlFlow::Continue(())) | None => None,
        };
        match leadership.release().await {
            Ok(()) => {}
            // The work broke the loop: its value stands, whatever became of the leadership meanwhile.
            Err(Error::Lost(_)) if value.is_some() => {}
            // Our node went with the session: campaign again on the next one.
            Err(Error::Lost(LostReason::SessionExpired)) if self.requeues_after(&Error::SessionExpired) => {
                self.place.session.ready().await?;
            }
            Err(Error::Lost(LostReason::SessionExpired)) => return Err(Error::SessionExpired),
            Err(Error::Lost(LostReason::ClientClosed)) => return Err(Error::Closed),
            // Our node deleted by somebody else, or the connection down for too long: campaign again.
            Err(Error::Lost(_)) => {}
            Err(err) => return Err(err),
        }
        Ok(value)
    }

    /// The name of the head of the queue, if any.
    async fn head(&self) -> Result<Option<String>> {
        let children = idioms::list_or_empty(
            self.place.session.client(),
            self.place.session.retry(),
            &self.place.path,
        )
        .await?;
        Ok(self.queue(children)?.into_iter().next().map(|c| c.name))
    }

    /// The candidates in `children`, sorted; [`Error::InUse`] when the directory is another recipe's (a mutex's,
    /// say): an observer there would report "no leader" for ever while somebody holds it.
    fn queue(&self, children: Vec<String>) -> Result<Vec<names::Contender>> {
        names::sorted_queue(children, |m| RULES.keeps(m)).map_err(|(node, what)| Error::InUse {
            path: self.place.path.clone(),
            node,
            what,
        })
    }
}

fn leader(path: String, data: Option<Vec<u8>>, stat: &zk::Stat) -> Leader {
    Leader {
        path,
        data_readable: data.is_some(),
        data: data.unwrap_or_default(),
        fencing_token: stat.czxid,
        session_id: stat.ephemeral_owner,
    }
}

/// Follows the leadership of one election: each [`next`](Observer::next) completes when the leader is different
/// from the one it last reported (the first call reports the current state at once).
///
/// While there is a leader the observer watches only the leader's node, so candidates joining or leaving the queue
/// behind it do not wake observers; while there is none it watches the directory for the first candidate.
/// Changes in quick succession may be reported as one (it reports states, not every step).
#[derive(Debug)]
pub struct Observer {
    election: LeaderElection,
    /// The path of the leader last reported (`Some(None)`: reported that there was none).
    last: Option<Option<String>>,
}

impl Observer {
    /// Waits until the leader differs from the last one reported and returns it (`None`: nobody leads now).
    ///
    /// # Errors
    /// [`Error::SessionExpired`](crate::Error::SessionExpired) or [`Error::Closed`](crate::Error::Closed) when the
    /// observer's session ends; [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) only if the
    /// [`RetryPolicy`](crate::RetryPolicy) caps attempts; [`Error::InUse`](crate::Error::InUse) when the directory
    /// holds another recipe's nodes (a mutex's, a queue's), as a campaign there is refused.
    ///
    /// # Cancellation safety
    /// Cancellation safe: it only reads, and a change it had not reported yet is reported by the next call.
    pub async fn next(&mut self) -> Result<Option<Leader>> {
        let election = &self.election;
        let (client, dir, retry) = (
            election.place.session.client(),
            &election.place.path,
            election.place.session.retry(),
        );
        loop {
            let watcher = match election.head().await? {
                Some(head) => {
                    let path = child_path(dir, &head);
                    let Some((data, stat, watcher)) =
                        read::read_and_watch_node(client, retry, dir, &head).await?
                    else {
                        continue;
                    };
                    if self.last.as_ref() != Some(&Some(path.clone())) {
                        self.last = Some(Some(path.clone()));
                        return Ok(Some(leader(path, data, &stat)));
                    }
                    watcher
                }
                None => {
                    if self.last != Some(None) {
                        self.last = Some(None);
                        return Ok(None);
                    }
                    // Wait for a first candidate (or for the directory, if it does not exist yet).
                    match retry
                        .run_at("getChildren", dir, || client.list_and_watch_children(dir))
                        .await
                        .if_exists()?
                    {
                        Some((children, watcher)) => {
                            if election.queue(children)?.is_empty() {
                                watcher
                            } else {
                                continue;
                            }
                        }
                        None => match retry
                            .run_at("exists", dir, || client.check_and_watch_stat(dir))
                            .await?
                        {
                            (Some(_), _) => continue,
                            (None, watcher) => watcher,
                        },
                    }
                }
            };
            let event = crate::base::idioms::fired(watcher).await;
            if let Some(err) = idioms::session_error(&event) {
                return Err(err);
            }
        }
    }
}
