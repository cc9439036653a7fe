//! What every recipe shares: the client's ZooKeeper session and the policies that go with it.

pub(crate) mod cas;
pub(crate) mod idioms;
pub(crate) mod listener;
pub(crate) mod lost_policy;
pub(crate) mod read;
pub(crate) mod reconnect;
pub(crate) mod registry;

use std::sync::Arc;

use zookeeper_client::{Acl, Acls, Client};

use crate::base::error::Result;
use crate::base::retry::RetryPolicy;
use crate::session::listener::{Listener, QueueEvent};
use crate::session::lost_policy::LostPolicy;
use crate::session::reconnect::{Generation, Live, SessionEvent};
use crate::session::registry::Registry;

/// The client's ZooKeeper session plus the policies recipes share: how operations are retried across connection
/// loss ([`RetryPolicy`]), when a held guard counts as lost because of a disconnection ([`LostPolicy`]), who hears
/// progress events ([`Listener`]), and the ACLs of the nodes recipes create.
///
/// Every recipe is built on one: `Mutex::new(session, path)`, `LeaderElection::new(session, path)`, …. A
/// `&Client` converts into a `Session` with the default policies, so `Mutex::new(&client, path)` is all most code
/// needs; build a `Session` once to change a policy for every recipe that uses it. Cloning is cheap (one reference
/// count), and a `&Session` converts too.
///
/// The ZooKeeper session itself belongs to the [`Client`]: when it expires every ephemeral node of every recipe on
/// it is gone, and a `zookeeper-client` session never comes back — connect a new client, or use a
/// [reconnecting](Session::reconnecting) session, which does (see "Sessions that outlive expiry" in the crate
/// documentation).
///
/// # ACLs
///
/// Recipes create two sorts of nodes: their **own nodes** (a contender's, a lease's, a queue item, a barrier) and
/// the **directories** they create when missing (the recipe's directory and its missing parents). Each gets an
/// ACL of its own: [`with_acls`](Session::with_acls) for the nodes, [`with_parent_acls`](Session::with_parent_acls)
/// for the directories (the nodes' ACL unless set). A directory that exists already keeps the ACL it has.
///
/// **The default is `world:anyone` with every permission** (ZooKeeper's `OPEN_ACL_UNSAFE`, Curator's and kazoo's
/// default too), whether the session is authenticated or not. A [`Client`] does not tell whether credentials were
/// added when it was connected (asking the server, `whoami`, is a round trip ZooKeeper before 3.7 does not answer),
/// and a default that changed silently with the credentials would also lock out Curator or kazoo peers that share
/// a lock under other credentials. So an authenticated application says what it wants, typically
/// `with_acls(Acls::creator_all())`: only sessions with the same credentials may then read, change or delete the
/// nodes. (An unauthenticated session cannot create nodes with `creator_all`: ZooKeeper answers `InvalidACL`.) The
/// `zklock` command line picks `creator_all` by itself when it is given credentials.
///
/// Under SASL (`Connector::with_sasl`; this crate's `sasl-digest-md5` feature turns it on in the re-exported
/// `zookeeper_client`) `creator_all` gives the nodes to `sasl:<user>`: ZooKeeper replaces the `auth` entry by every
/// identity the session has authenticated as, SASL's included. An explicit entry is `AuthId::new("sasl", user)`.
///
/// Ordering needs names only: listing a directory needs `READ` on it, not on its children. A contender whose node
/// our session may not read is still ordered, waited for and shown: ZooKeeper sends a node's watch events only to
/// sessions allowed to read it, so a recipe waiting behind such a node watches the directory's children instead
/// (it then wakes for every change in the queue, looks again, and waits again); and [`inspect`](crate::inspect),
/// [`LeaderElection::leader`](crate::LeaderElection::leader) and [`Observer`](crate::Observer) show such a
/// participant from its name and stat (`exists` checks no ACL) with its data marked unreadable. To let others see
/// who holds a lock without seeing the data, give the directories `world:anyone` `READ` besides the creator's
/// rights. Keep your own identity in the nodes' ACL with `READ`: the [`Guard`](crate::Guard)'s lost signal
/// watches our own node, and hears of its deletion only if it may read it.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// use std::time::Duration;
///
/// let session = zklock::Session::new(&client)
///     .with_lost_policy(zklock::LostPolicy::DisconnectedFor(Duration::from_secs(2)))
///     .with_retry(zklock::RetryPolicy::default().with_max_elapsed(Some(Duration::from_secs(10))));
/// let mutex = zklock::Mutex::new(&session, "/locks/orders")?;
/// let election = zklock::LeaderElection::new(&session, "/elections/orders")?.with_data("host-a:8080");
/// # let _ = (mutex, election);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<Inner>,
    /// Set on a session pinned to one ZooKeeper session for the length of one operation (see `pinned`).
    pinned: Option<Arc<Generation>>,
}

#[derive(Debug, Clone)]
struct Inner {
    /// The first ZooKeeper session; a reconnecting session's later ones follow it (see `session/reconnect.rs`).
    head: Arc<Generation>,
    /// `Some` for a reconnecting session.
    live: Option<Arc<Live>>,
    retry: RetryPolicy,
    lost_policy: LostPolicy,
    listener: Option<Listener>,
    acls: Vec<Acl>,
    /// The directories' ACL; `None`: the nodes' ACL.
    parent_acls: Option<Vec<Acl>>,
    /// The live nodes of the recipes on this session (shared by every `Session` made from this one).
    registry: Arc<Registry>,
}

/// The ACL of the nodes recipes create unless [`Session::with_acls`] says otherwise: see "ACLs" on [`Session`].
fn default_acls() -> Acls<'static> {
    Acls::anyone_all()
}

impl Session {
    /// The session of `client` with the default policies: retry across connection loss until the session ends,
    /// [`LostPolicy::HalfSessionTimeout`], no listener, and nodes and directories created with the ACL
    /// `world:anyone` with every permission (see "ACLs" above for why, and how to change it).
    pub fn new(client: &Client) -> Session {
        Session::of(client.clone())
    }

    fn of(client: Client) -> Session {
        Session::with_source(Generation::first(client), None)
    }

    /// A session that outlives expiry: connects with `connector` to `hosts` now, and each time the ZooKeeper
    /// session ends (expired, or its authentication failed) makes a new one the same way, with backoff (50 ms
    /// doubling to at most 1 s, ±25 % jitter) until it succeeds or the session is [closed](Session::close). See
    /// "Sessions that outlive expiry" in the crate documentation for what carries on and what does not. The
    /// connector carries the session timeout, credentials (`with_auth`) and SASL; do not give it a session to
    /// resume (`with_session`): an ended one cannot be. For TLS (`secure_connect`) or anything else, use
    /// [`reconnecting_with`](Session::reconnecting_with).
    ///
    /// Needs a tokio runtime: a task watches the session while any clone of this `Session` exists.
    ///
    /// # Errors
    /// The first connection's failure ([`Error::ZooKeeper`](crate::Error::ZooKeeper) with operation `connect`); it
    /// is not retried.
    pub async fn reconnecting(connector: zookeeper_client::Connector, hosts: &str) -> Result<Session> {
        let hosts = hosts.to_owned();
        Session::reconnecting_with(move || {
            let (connector, hosts) = (connector.clone(), hosts.clone());
            async move { connector.connect(&hosts).await }
        })
        .await
    }

    /// Like [`reconnecting`](Session::reconnecting), with `connect` making each `Client` (TLS, a chroot, a
    /// connection string looked up anew each time…).
    ///
    /// # Errors
    /// The first connection's failure; it is not retried.
    pub async fn reconnecting_with<F, Fut>(connect: F) -> Result<Session>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::result::Result<Client, zookeeper_client::Error>>
            + Send
            + 'static,
    {
        let (live, head) = Live::start(Box::new(move || Box::pin(connect()))).await?;
        Ok(Session::with_source(head, Some(live)))
    }

    /// Whether this session makes a new ZooKeeper session when one ends ([`reconnecting`](Session::reconnecting)).
    pub fn is_reconnecting(&self) -> bool {
        self.inner.live.is_some()
    }

    /// Whether an operation on this session goes on with the next ZooKeeper session when one ends: a reconnecting
    /// session not [pinned](Session::pinned) to one of them.
    pub(crate) fn follows_new_sessions(&self) -> bool {
        self.is_reconnecting() && self.pinned.is_none()
    }

    /// The state changes of a reconnecting session, from now on: suspended, reconnected, lost, a new session,
    /// closed (see [`SessionEvent`]). A receiver that falls 64 events behind misses the oldest
    /// ([`RecvError::Lagged`](tokio::sync::broadcast::error::RecvError::Lagged)). A session made from a `Client`
    /// reports nothing (`None`): watch its `Client::state_watcher`.
    pub fn events(&self) -> Option<tokio::sync::broadcast::Receiver<SessionEvent>> {
        self.inner.live.as_ref().map(|live| live.events())
    }

    /// Completes once the current ZooKeeper session is usable: at once unless it has ended; on a reconnecting
    /// session whose ZooKeeper session has ended, when the next one is made.
    ///
    /// # Errors
    /// [`Error::Closed`](crate::Error::Closed) once the session is [closed](Session::close); for a session made
    /// from a `Client`, the end of its ZooKeeper session ([`Error::SessionExpired`](crate::Error::SessionExpired),
    /// …), which never comes back.
    pub async fn ready(&self) -> Result<()> {
        match &self.inner.live {
            Some(live) => live.usable(&self.inner.head).await.map(drop),
            None => match crate::base::idioms::session_ended(self.client().state()) {
                Some(err) => Err(err),
                None => Ok(()),
            },
        }
    }

    fn with_source(head: Arc<Generation>, live: Option<Arc<Live>>) -> Session {
        Session {
            pinned: None,
            inner: Arc::new(Inner {
                head,
                live,
                retry: RetryPolicy::default(),
                lost_policy: LostPolicy::default(),
                listener: None,
                acls: default_acls().to_vec(),
                parent_acls: None,
                registry: Arc::default(),
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::make_mut(&mut self.inner)
    }

    /// How operations are retried across connection loss.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Session {
        self.inner_mut().retry = retry;
        self
    }

    /// When a held guard (a lock, a lease, leadership, a double-barrier participation, a claimed queue item) counts
    /// as lost because of a disconnection.
    pub fn with_lost_policy(mut self, policy: LostPolicy) -> Session {
        self.inner_mut().lost_policy = policy;
        self
    }

    /// Receives the progress events of every recipe built on this session (each recipe's documentation says which
    /// it emits). It runs inline on the acquiring task, so it must be quick.
    pub fn with_listener(mut self, listener: Listener) -> Session {
        self.inner_mut().listener = Some(listener);
        self
    }

    /// The ACL of the nodes the recipes create: their own nodes, and also the directories they create unless
    /// [`with_parent_acls`](Session::with_parent_acls) gives those another. See "ACLs" on [`Session`].
    ///
    /// # Example
    /// ```no_run
    /// # async fn example() -> zklock::Result<()> {
    /// use zklock::zookeeper_client::{Acl, Acls, AuthId, Client, Permission};
    ///
    /// let client = Client::connector()
    ///     .with_auth("digest", b"alice:secret")
    ///     .connect("127.0.0.1:2181")
    ///     .await?;
    /// // Only sessions authenticated as alice may read, change or delete our nodes; anybody may list the
    /// // directories (so `zklock status` shows who holds the lock), nobody else may create in them.
    /// let directories = [
    ///     Acl::new(Permission::ALL, AuthId::authed()),
    ///     Acl::new(Permission::READ, AuthId::anyone()),
    /// ];
    /// let session = zklock::Session::new(&client)
    ///     .with_acls(Acls::creator_all())
    ///     .with_parent_acls(Acls::new(&directories));
    /// let guard = zklock::Mutex::new(&session, "/locks/payroll")?.lock().await?;
    /// # guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_acls(mut self, acls: Acls<'_>) -> Session {
        self.inner_mut().acls = acls.to_vec();
        self
    }

    /// The ACL of the directories the recipes create when missing: a recipe's directory, its missing parents, and
    /// the sub-directories some recipes keep (a semaphore's `leases` and `locks`, a queue's `claims` and
    /// `receipts`). Without it they get the nodes' ACL ([`with_acls`](Session::with_acls)). Every participant
    /// needs `CREATE` and `READ` on a recipe's directory; `DELETE` on it is what removing a node takes. A directory
    /// that exists already is left as it is.
    pub fn with_parent_acls(mut self, acls: Acls<'_>) -> Session {
        self.inner_mut().parent_acls = Some(acls.to_vec());
        self
    }

    /// The client: for a reconnecting session ([`reconnecting`](Session::reconnecting)), the one of the newest
    /// ZooKeeper session (which may have ended, until the next one is made; see [`ready`](Session::ready)).
    pub fn client(&self) -> &Client {
        if let Some(pinned) = &self.pinned {
            return &pinned.client;
        }
        match &self.inner.live {
            None => &self.inner.head.client,
            Some(_) => &Generation::newest(&self.inner.head).client,
        }
    }

    /// This session pinned to its current ZooKeeper session: what one operation uses from its start to its end,
    /// so that no operation sends part of its requests on an ended session and the rest on the next one (a node
    /// created on one and looked for on the other). For a session that does not reconnect, a clone.
    pub(crate) fn pinned(&self) -> Session {
        match (&self.pinned, &self.inner.live) {
            (None, Some(_)) => Session {
                inner: Arc::clone(&self.inner),
                pinned: Some(Arc::clone(Generation::newest(&self.inner.head))),
            },
            _ => self.clone(),
        }
    }

    /// Like [`pinned`](Session::pinned), but first waits, on a reconnecting session whose ZooKeeper session has
    /// ended, for the next one.
    pub(crate) async fn pinned_usable(&self) -> Result<Session> {
        match (&self.pinned, &self.inner.live) {
            (None, Some(live)) => Ok(Session {
                inner: Arc::clone(&self.inner),
                pinned: Some(live.usable(&self.inner.head).await?),
            }),
            _ => Ok(self.clone()),
        }
    }

    /// How operations are retried across connection loss.
    pub fn retry(&self) -> &RetryPolicy {
        &self.inner.retry
    }

    /// When a held guard counts as lost because of a disconnection.
    pub fn lost_policy(&self) -> LostPolicy {
        self.inner.lost_policy
    }

    /// The listener, if there is one.
    pub fn listener(&self) -> Option<&Listener> {
        self.inner.listener.as_ref()
    }

    /// The ACL of the nodes the recipes create.
    pub fn acls(&self) -> Acls<'_> {
        Acls::new(&self.inner.acls)
    }

    /// The ACL of the directories the recipes create ([`with_parent_acls`](Session::with_parent_acls), or else the
    /// nodes' ACL).
    pub fn parent_acls(&self) -> Acls<'_> {
        Acls::new(self.inner.parent_acls.as_deref().unwrap_or(&self.inner.acls))
    }

    /// The live nodes of the recipes on this session.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// Closes this session for the recipes: deletes every node of ours that a recipe built on it (or on a
    /// `Session` made from it with a `with_*` builder) still has — held guards, waiting acquires, group
    /// memberships, double-barrier and two-phase-commit nodes —, waits until ZooKeeper has confirmed each delete,
    /// and from then on refuses every new node with [`Error::Closed`](crate::Error::Closed). Guards still held
    /// report [`LostReason::ClientClosed`](crate::LostReason::ClientClosed) on [`lost`](crate::Guard::lost);
    /// dropping or releasing them afterwards is harmless. A [reconnecting](Session::reconnecting) session first
    /// stops making new ZooKeeper sessions ([`SessionEvent::Closed`]).
    ///
    /// It deletes the nodes itself, one listing per directory and then every delete at once, rather than ending
    /// the ZooKeeper session: a `zookeeper-client` session ends (a `closeSession` request) only when the last
    /// handle of its [`Client`] is dropped, and the application holds handles of its own. So after `close`, drop
    /// your `Client` (and every guard) to end the session itself: see "Shutting down" in the crate documentation.
    /// Not deleted here: a [`Queue`](crate::Queue)'s claim of an item being taken and a counter's receipt of a
    /// change in flight (both ephemeral: they go when the session ends).
    ///
    /// # Errors
    /// [`Error::SessionExpired`](crate::Error::SessionExpired) / [`Error::Closed`](crate::Error::Closed) when the
    /// session has ended already (its ephemeral nodes are gone with it, or go when the server expires it);
    /// [`Error::ConnectionLoss`](crate::Error::ConnectionLoss) when the [`RetryPolicy`] gives up; any other error
    /// of a listing or a delete (the rest are then not deleted).
    pub async fn close(self) -> Result<()> {
        if let Some(live) = &self.inner.live {
            live.close();
        }
        let deleted = self.inner.registry.close(self.client(), self.retry()).await?;
        tracing::debug!(deleted, session = %self.client().session_id(), "session closed: our nodes are deleted");
        Ok(())
    }

    /// Hands `event` to the listener, if there is one.
    pub(crate) fn emit(&self, event: QueueEvent) {
        if let Some(listener) = &self.inner.listener {
            listener.call(&event);
        }
    }
}

impl From<&Client> for Session {
    fn from(client: &Client) -> Session {
        Session::new(client)
    }
}

impl From<Client> for Session {
    fn from(client: Client) -> Session {
        Session::of(client)
    }
}

impl From<&Session> for Session {
    fn from(session: &Session) -> Session {
        session.clone()
    }
}
