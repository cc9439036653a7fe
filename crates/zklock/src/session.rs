//! What every recipe shares: the client's ZooKeeper session and the policies that go with it.

use std::sync::Arc;

use zookeeper_client::{Acl, Acls, Client};

use crate::events::{Listener, QueueEvent};
use crate::lost::LostPolicy;
use crate::retry::RetryPolicy;

/// The client's ZooKeeper session plus the policies recipes share: how operations are retried across connection
/// loss ([`RetryPolicy`]), when a held guard counts as lost because of a disconnection ([`LostPolicy`]), who hears
/// progress events ([`Listener`]), and the ACL of the nodes recipes create.
///
/// Every recipe is built on one: `Mutex::new(session, path)`, `LeaderElection::new(session, path)`, …. A
/// `&Client` converts into a `Session` with the default policies, so `Mutex::new(&client, path)` is all most code
/// needs; build a `Session` once to change a policy for every recipe that uses it. Cloning is cheap (one reference
/// count), and a `&Session` converts too.
///
/// The ZooKeeper session itself belongs to the [`Client`]: when it expires every ephemeral node of every recipe on
/// it is gone, and a `zookeeper-client` session never comes back — connect a new client.
///
/// # Example
/// ```no_run
/// # async fn example(client: zookeeper_client::Client) -> zklock::Result<()> {
/// use std::time::Duration;
///
/// let session = zklock::Session::new(&client)
///     .with_lost_policy(zklock::LostPolicy::DisconnectedFor(Duration::from_secs(2)))
///     .with_retry(zklock::RetryPolicy {
///         max_attempts: Some(20),
///         ..Default::default()
///     });
/// let mutex = zklock::Mutex::new(&session, "/locks/orders")?;
/// let election = zklock::LeaderElection::new(&session, "/elections/orders")?.with_data("host-a:8080");
/// # let _ = (mutex, election);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

#[derive(Debug, Clone)]
struct Inner {
    client: Client,
    retry: RetryPolicy,
    lost_policy: LostPolicy,
    listener: Option<Listener>,
    acls: Vec<Acl>,
}

/// The ACL of the nodes recipes create unless [`Session::with_acls`] says otherwise.
fn default_acls() -> Acls<'static> {
    Acls::anyone_all()
}

impl Session {
    /// The session of `client` with the default policies: retry across connection loss until the session ends,
    /// [`LostPolicy::HalfSessionTimeout`], no listener, and nodes created with the ACL `world:anyone` with every
    /// permission.
    pub fn new(client: &Client) -> Session {
        Session::of(client.clone())
    }

    fn of(client: Client) -> Session {
        Session {
            inner: Arc::new(Inner {
                client,
                retry: RetryPolicy::default(),
                lost_policy: LostPolicy::default(),
                listener: None,
                acls: default_acls().to_vec(),
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

    /// The ACL of every node the recipes create: their own nodes, and the persistent directories created as
    /// parents.
    pub fn with_acls(mut self, acls: Acls<'_>) -> Session {
        self.inner_mut().acls = acls.to_vec();
        self
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.inner.client
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
