//! Service discovery in `curator-x-discovery`'s layout, so that Java services find ours and ours find theirs:
//! `<base>/<service name>/<instance id>`, an ephemeral node per instance holding its [`ServiceInstance`] as the JSON
//! of Curator's `JsonInstanceSerializer`.
//!
//! A registration is a [`PersistentNode`] (made again, with the same id and the latest data, after a delete or a
//! session's end); a service's instances are a [`Cache::children`] of its directory. Both are the engines the rest
//! of the library uses: this file only names the nodes and reads the JSON.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::base::path::child_path;
use crate::cache::Cache;
use crate::recipes::discovery::node_mode::NodeMode;
use crate::recipes::discovery::persistent_node::PersistentNode;
use crate::session::Session;

/// One instance of a service, as `curator-x-discovery` stores it (its `ServiceInstance`, the field names and types
/// of `JsonInstanceSerializer`'s JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServiceInstance {
    /// The service's name (the directory under the base path).
    pub name: String,
    /// The instance's id (its node's name): stable across re-registrations.
    pub id: String,
    /// Where it listens (a host name or an address).
    #[serde(default)]
    pub address: Option<String>,
    /// Its port.
    #[serde(default)]
    pub port: Option<u16>,
    /// Its TLS port.
    #[serde(default)]
    pub ssl_port: Option<u16>,
    /// Anything else, as JSON (Curator: the payload class's JSON).
    #[serde(default)]
    pub payload: Option<serde_json::Value>,
    /// When it was registered: milliseconds since the Unix epoch.
    #[serde(rename = "registrationTimeUTC", default)]
    pub registration_time_utc: u64,
    /// Curator's `ServiceType`: `DYNAMIC` for an instance that goes with its session (ours are).
    #[serde(default = "dynamic")]
    pub service_type: String,
    /// Curator's `UriSpec`, kept as it is.
    #[serde(default)]
    pub uri_spec: Option<serde_json::Value>,
    /// Curator 4.x+'s `enabled`: a disabled instance is registered but not handed out by providers.
    #[serde(default = "enabled")]
    pub enabled: bool,
}

fn dynamic() -> String {
    "DYNAMIC".to_owned()
}

fn enabled() -> bool {
    true
}

impl ServiceInstance {
    /// An instance of the service `name` at `address:port`, with a fresh id, registered now.
    pub fn new(name: &str, address: &str, port: u16) -> ServiceInstance {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        ServiceInstance {
            name: name.to_owned(),
            id: uuid::Uuid::new_v4().to_string(),
            address: Some(address.to_owned()),
            port: Some(port),
            ssl_port: None,
            payload: None,
            registration_time_utc: u64::try_from(now.as_millis()).unwrap_or(u64::MAX),
            service_type: dynamic(),
            uri_spec: None,
            enabled: true,
        }
    }

    /// This instance with the id `id` (one that stays the same when the process restarts, say).
    pub fn with_id(mut self, id: &str) -> ServiceInstance {
        id.clone_into(&mut self.id);
        self
    }

    /// This instance with `payload`.
    pub fn with_payload(mut self, payload: serde_json::Value) -> ServiceInstance {
        self.payload = Some(payload);
        self
    }

    fn json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// The services under one base path (`curator-x-discovery`'s `ServiceDiscovery`).
///
/// ```no_run
/// # async fn example(connector: zookeeper_client::Connector) -> zklock::Result<()> {
/// use zklock::{ServiceDiscovery, ServiceInstance, Session, Strategy};
///
/// let session = Session::reconnecting(connector, "127.0.0.1:2181").await?;
/// let discovery = ServiceDiscovery::new(&session, "/services")?;
/// let me = discovery.register(ServiceInstance::new("api", "10.0.0.5", 8080))?; // kept through expiry
/// let apis = discovery.cache("api")?; // a watched view of the service's instances
/// apis.initialized().await?;
/// let next = apis.pick(Strategy::RoundRobin); // or Random, Sticky
/// # let _ = (me, next);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ServiceDiscovery {
    session: Session,
    base: String,
}

/// A registered instance ([`ServiceDiscovery::register`]): kept registered — made again with the same id and the
/// latest data after a delete or a session's end — until [`unregister`](Registration::unregister) (or drop, which
/// leaves the node to its session).
#[derive(Debug)]
pub struct Registration {
    node: PersistentNode,
    instance: ServiceInstance,
}

/// How [`ServiceCache::pick`] chooses among the enabled instances.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Each in turn.
    RoundRobin,
    /// Any, at random.
    Random,
    /// The one picked last while it is there, else the first.
    Sticky,
}

/// A watched view of one service's instances ([`ServiceDiscovery::cache`]).
#[derive(Debug)]
pub struct ServiceCache {
    cache: Cache,
    dir: String,
    turn: AtomicUsize,
    sticky: std::sync::Mutex<Option<String>>,
}

impl ServiceDiscovery {
    /// The services under `base` (e.g. `/services`), on `session` — a reconnecting [`Session`] keeps
    /// registrations through expiry.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would refuse.
    pub fn new(session: impl Into<Session>, base: &str) -> Result<ServiceDiscovery> {
        Ok(ServiceDiscovery {
            session: session.into(),
            base: crate::base::path::validate(base)?,
        })
    }

    /// Registers `instance` at `<base>/<name>/<id>` (an ephemeral node, its parents made when missing) and keeps
    /// it registered; [`Registration::wait`] tells when it is.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a name or id that cannot be a node name.
    pub fn register(&self, instance: ServiceInstance) -> Result<Registration> {
        let path = self.instance_path(&instance)?;
        let node = PersistentNode::start(&self.session, &path, NodeMode::Ephemeral, &instance.json())?;
        Ok(Registration { node, instance })
    }

    /// The names of the services registered now.
    ///
    /// # Errors
    /// What ZooKeeper answers.
    pub async fn names(&self) -> Result<Vec<String>> {
        self.session.list_or_empty(&self.base).await
    }

    /// The instances of the service `name` registered now (nodes whose data is no instance JSON are left out).
    ///
    /// # Errors
    /// What ZooKeeper answers.
    pub async fn instances(&self, name: &str) -> Result<Vec<ServiceInstance>> {
        let dir = self.service_dir(name)?;
        let ids = self.session.list_or_empty(&dir).await?;
        let names: Vec<&str> = ids.iter().map(String::as_str).collect();
        // All read in one round trip.
        let read = crate::session::read::read_nodes(&self.session, &dir, &names).await?;
        Ok(read
            .into_iter()
            .filter_map(|node| serde_json::from_slice::<ServiceInstance>(&node?.0?).ok())
            .collect())
    }

    /// A watched view of the service `name`'s instances (Curator's `ServiceCache`), started now.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a name that cannot be a node name.
    pub fn cache(&self, name: &str) -> Result<ServiceCache> {
        let dir = self.service_dir(name)?;
        Ok(ServiceCache {
            cache: Cache::children(&self.session, &dir)?.start(),
            dir,
            turn: AtomicUsize::new(0),
            sticky: std::sync::Mutex::new(None),
        })
    }

    fn service_dir(&self, name: &str) -> Result<String> {
        crate::base::path::validate(&child_path(&self.base, name))
    }

    fn instance_path(&self, instance: &ServiceInstance) -> Result<String> {
        let path = child_path(&self.service_dir(&instance.name)?, &instance.id);
        if instance.name.contains('/') || instance.id.contains('/') {
            return Err(Error::InvalidPath {
                path,
                reason: "a service name or an instance id may not contain /",
            });
        }
        crate::base::path::validate(&path)
    }
}

impl Registration {
    /// The instance as registered.
    pub fn instance(&self) -> &ServiceInstance {
        &self.instance
    }

    /// Waits until the instance's node exists: `true`, or `false` after `timeout`.
    ///
    /// # Errors
    /// None today; kept for the end of the session.
    pub async fn wait(&self, timeout: Duration) -> Result<bool> {
        self.node.wait_for_initial_create(timeout).await
    }

    /// Replaces the registered data by `instance` (same name and id).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another name or id; what ZooKeeper answers to the write.
    pub async fn update(&mut self, instance: ServiceInstance) -> Result<()> {
        if (&instance.name, &instance.id) != (&self.instance.name, &self.instance.id) {
            return Err(Error::InvalidArgument(
                "an update keeps the instance's name and id".to_owned(),
            ));
        }
        self.node.set_data(&instance.json()).await?;
        self.instance = instance;
        Ok(())
    }

    /// Removes the instance.
    ///
    /// # Errors
    /// What ZooKeeper answers to the delete.
    pub async fn unregister(self) -> Result<()> {
        self.node.close().await
    }
}

impl ServiceCache {
    /// Waits until the first read is done.
    ///
    /// # Errors
    /// What stopped the cache (see [`Cache::initialized`]).
    pub async fn initialized(&self) -> Result<()> {
        self.cache.initialized().await
    }

    /// The instances held now, by id (nodes whose data is no instance JSON are left out).
    pub fn instances(&self) -> Vec<ServiceInstance> {
        self.cache
            .nodes()
            .iter()
            .filter(|node| node.path != self.dir)
            .filter_map(|node| node.json::<ServiceInstance>().ok())
            .collect()
    }

    /// An enabled instance, chosen by `strategy`; `None` if there is none.
    pub fn pick(&self, strategy: Strategy) -> Option<ServiceInstance> {
        let mut enabled: Vec<ServiceInstance> = self.instances().into_iter().filter(|i| i.enabled).collect();
        if enabled.is_empty() {
            return None;
        }
        let at = match strategy {
            Strategy::RoundRobin => self.turn.fetch_add(1, Ordering::Relaxed) % enabled.len(),
            Strategy::Random => rand::Rng::gen_range(&mut rand::thread_rng(), 0..enabled.len()),
            Strategy::Sticky => {
                let mut sticky = self.sticky.lock().unwrap_or_else(|e| e.into_inner());
                let at = sticky
                    .as_ref()
                    .and_then(|id| enabled.iter().position(|i| &i.id == id))
                    .unwrap_or(0);
                *sticky = Some(enabled[at].id.clone());
                at
            }
        };
        Some(enabled.swap_remove(at))
    }

    /// The underlying cache, for its [`events`](Cache::events).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }
}
