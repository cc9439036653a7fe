//! What every recipe test needs: servers to run against, clients, and ways to wait for the tree to settle.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use zklock::zookeeper_client::{self as zk, Client};
use zklock_testkit::ZooKeeper;

/// A persistent node anybody may do anything with: what the tests make by hand.
pub const PERSISTENT: zk::CreateOptions<'static> =
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// Generous bound for "this must happen": the machine may be a loaded 2-core CI box.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

/// Runs an async test body once per server kind: the shared real ZooKeeper standalone server, the shared 3-node
/// ensemble and the shared embedded server: `<test>::standalone`, `<test>::ensemble` and `<test>::embedded`.
#[macro_export]
macro_rules! on_every_server {
    ($($tests:tt)*) => {
        zklock_testkit::on_servers! {
            [
                standalone => zklock_testkit::hosts::standalone,
                ensemble => zklock_testkit::hosts::ensemble,
                embedded => zklock_testkit::hosts::embedded,
            ]
            $($tests)*
        }
    };
}

/// Runs an async test body on the shared standalone ZooKeeper and the shared embedded server only (tests that start
/// peer JVMs or processes of their own, where the ensemble adds time and nothing the standalone server does not
/// cover): `<test>::standalone` and `<test>::embedded`.
#[macro_export]
macro_rules! on_standalone_and_embedded {
    ($($tests:tt)*) => {
        zklock_testkit::on_servers! {
            [standalone => zklock_testkit::hosts::standalone, embedded => zklock_testkit::hosts::embedded]
            $($tests)*
        }
    };
}

pub use zklock_testkit::hosts::{embedded, standalone};

/// Listings (`getChildren`, `getChildren2`) a session sent through `proxy`.
pub fn listings(proxy: &zklock_testkit::Proxy) -> u64 {
    proxy.requests(zklock_testkit::opcode::GET_CHILDREN)
        + proxy.requests(zklock_testkit::opcode::GET_CHILDREN2)
}

/// Waits until the session behind `proxy` has sent more than `seen` listings.
pub async fn listed_again(proxy: &zklock_testkit::Proxy, seen: u64, what: &str) {
    eventually(what, async {
        while listings(proxy) <= seen {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// The first server of a connect string (proxies sit in front of one server).
pub fn first_server(hosts: &str) -> SocketAddr {
    hosts
        .split(',')
        .next()
        .unwrap()
        .parse()
        .expect("connect string of 127.0.0.1:port servers")
}

/// A new session (as [`client`]) through a new proxy in front of the first server of `hosts`, and the proxy.
pub async fn proxied_client(hosts: &str) -> (zklock_testkit::Proxy, Client) {
    let proxy = zklock_testkit::Proxy::start(first_server(hosts)).await.unwrap();
    let client = client(&proxy.connect_string()).await;
    (proxy, client)
}

/// A session (see [`proxied_client`]) through a new proxy that waits `secs` before every retry (see
/// [`slow_retry`]): after a fault of the proxy, a window in which a test can act before the library looks again.
pub async fn slow_proxied_session(hosts: &str, secs: u64) -> (zklock_testkit::Proxy, zklock::Session) {
    let (proxy, client) = proxied_client(hosts).await;
    (proxy, zklock::Session::new(&client).with_retry(slow_retry(secs)))
}

/// A new session with a 10 s timeout.
pub async fn client(hosts: &str) -> Client {
    client_with_timeout(hosts, Duration::from_secs(10)).await
}

/// A new session with the given timeout.
pub async fn client_with_timeout(hosts: &str, timeout: Duration) -> Client {
    tokio::time::timeout(
        EVENTUALLY,
        Client::connector().with_session_timeout(timeout).connect(hosts),
    )
    .await
    .expect("connecting took too long")
    .expect("connect")
}

/// Starts `work(i, client)` in a task for each `i` in `0..n`, each on a session of its own; the tasks, in order.
pub async fn spawn_on_sessions<F>(
    hosts: &str,
    n: usize,
    mut work: impl FnMut(usize, Client) -> F,
) -> Vec<tokio::task::JoinHandle<F::Output>>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mut tasks = Vec::new();
    for i in 0..n {
        tasks.push(tokio::spawn(work(i, client(hosts).await)));
    }
    tasks
}

/// Awaits every one of `tasks` (each for at most [`EVENTUALLY`], naming `what`); their results, in order.
pub async fn all_done<T>(what: &str, tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::new();
    for task in tasks {
        results.push(eventually(what, task).await.unwrap());
    }
    results
}

/// How many contenders are inside a critical section now, and the most there were at once: what the exclusion
/// tests count.
#[derive(Debug, Default)]
pub struct Occupancy {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Occupancy {
    /// One more is inside: how many are inside now, itself included.
    pub fn enter(&self) -> usize {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        now
    }

    /// One is out again.
    pub fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }

    /// How many are inside now.
    pub fn now(&self) -> usize {
        self.now.load(Ordering::SeqCst)
    }

    /// The most that were inside at once.
    pub fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

/// The children of `dir`, sorted; empty if it does not exist. Syncs first: on an ensemble, this session's server
/// may not have applied yet what another session's server has acknowledged (ZooKeeper is sequentially consistent
/// per session, not linearizable across sessions).
pub async fn children(client: &Client, dir: &str) -> Vec<String> {
    match client.sync(dir).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(err) => panic!("sync {dir}: {err}"),
    }
    match client.list_children(dir).await {
        Ok(mut children) => {
            children.sort();
            children
        }
        Err(zk::Error::NoNode) => Vec::new(),
        Err(err) => panic!("listing {dir}: {err}"),
    }
}

/// Waits (with a child watch, no polling) until `dir`'s children (sorted by name) satisfy `done`; panics after
/// [`EVENTUALLY`].
pub async fn await_children(
    client: &Client,
    dir: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        let (children, watcher) = match client.list_and_watch_children(dir).await {
            Ok(listed) => listed,
            Err(zk::Error::NoNode) => {
                if done(&[]) {
                    return Vec::new();
                }
                // Wait for the directory to appear.
                let (_, watcher) = client.check_and_watch_stat(dir).await.expect("exists watch");
                tokio::time::timeout_at(deadline, watcher.changed())
                    .await
                    .unwrap_or_else(|_| panic!("{dir}: timed out waiting for {what} (no directory)"));
                continue;
            }
            Err(err) => panic!("listing {dir}: {err}"),
        };
        let mut children = children;
        children.sort();
        if done(&children) {
            return children;
        }
        if tokio::time::timeout_at(deadline, watcher.changed())
            .await
            .is_err()
        {
            panic!("{dir}: timed out waiting for {what}; children now {children:?}");
        }
    }
}

/// Drops a safe take (`take`) at arbitrary moments: before the claim is sent, with the claim in flight, or after it
/// is ours. Each time the claim must be undone (the claims directory `claims` empties) and the queue must keep its
/// `items` items (`len`).
pub async fn cancel_safe_takes<T, F, L>(
    client: &Client,
    claims: &str,
    take: impl Fn() -> F,
    len: impl Fn() -> L,
    items: usize,
) where
    F: std::future::Future<Output = zklock::Result<T>>,
    L: std::future::Future<Output = zklock::Result<usize>>,
{
    for micros in [0u64, 50, 200, 500, 1_000, 2_000, 5_000, 20_000] {
        if let Ok(claimed) = tokio::time::timeout(Duration::from_micros(micros), take()).await {
            drop(claimed.unwrap());
        }
        await_children(client, claims, "the cancelled claim to be undone", |c| {
            c.is_empty()
        })
        .await;
        assert_eq!(len().await.unwrap(), items, "the items stay in the queue");
    }
}

/// A Curator peer (`recipes`) told to `consume` the queue at `dir` (it answers `CONSUMING`), returned once no item
/// (`queue-` node) is left there, as `client` sees.
pub async fn curator_consuming_all(
    hosts: &str,
    client: &Client,
    dir: &str,
    consume: &str,
) -> zklock_testkit::peers::Peer {
    let mut curator = zklock_testkit::peers::Peer::curator(&["recipes", hosts]).await;
    curator.expect("READY").await;
    curator.send(consume).await;
    curator.expect("CONSUMING").await;
    await_children(client, dir, "Curator to consume every item", |c| {
        !c.iter().any(|name| name.starts_with("queue-"))
    })
    .await;
    curator
}

/// Awaits `future` for at most [`EVENTUALLY`], naming what did not happen.
pub async fn eventually<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(EVENTUALLY, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A listener that forwards every event to a channel.
pub fn events() -> (
    zklock::Listener,
    tokio::sync::mpsc::UnboundedReceiver<zklock::QueueEvent>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (
        zklock::Listener::new(move |event| drop(tx.send(event.clone()))),
        rx,
    )
}

/// Waits for the first event `pick` accepts.
pub async fn until(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<zklock::QueueEvent>,
    what: &str,
    pick: impl Fn(&zklock::QueueEvent) -> bool,
) {
    eventually(what, async {
        while !pick(&rx.recv().await.expect("listener channel closed")) {}
    })
    .await
}

/// Waits until the contender reports that it waits (it is queued and watching).
pub async fn queued(rx: &mut tokio::sync::mpsc::UnboundedReceiver<zklock::QueueEvent>) {
    until(rx, "the contender to queue", |e| {
        matches!(e, zklock::QueueEvent::Waiting { .. })
    })
    .await
}

/// Starts `wait` (a recipe's blocking call, made by `start` of `session` with a listener) in a task and returns
/// the task once the contender waits (it is queued and watching).
pub async fn spawn_waiting<F>(
    session: zklock::Session,
    start: impl FnOnce(zklock::Session) -> F,
) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (listener, mut rx) = events();
    let task = tokio::spawn(start(session.with_listener(listener)));
    queued(&mut rx).await;
    task
}

/// A contender started by [`hold_when_told`].
pub struct Contender {
    /// Says that the contender holds.
    pub acquired: tokio::sync::oneshot::Receiver<()>,
    /// Tells the holding contender to release.
    pub release: tokio::sync::oneshot::Sender<()>,
    /// Ends after the release.
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts an acquire (made by `acquire` of `session` with a listener) in a task and returns once it waits in the
/// queue; once it holds, it says so on [`Contender::acquired`] and holds until told to release.
pub async fn hold_when_told<F>(
    session: zklock::Session,
    acquire: impl FnOnce(zklock::Session) -> F,
) -> Contender
where
    F: std::future::Future<Output = zklock::Result<zklock::Guard>> + Send + 'static,
{
    let (acquired_tx, acquired) = tokio::sync::oneshot::channel();
    let (release, release_rx) = tokio::sync::oneshot::channel::<()>();
    let task = spawn_waiting(session, |session| {
        let acquire = acquire(session);
        async move {
            let guard = acquire.await.unwrap();
            acquired_tx.send(()).unwrap();
            release_rx.await.unwrap();
            guard.release().await.unwrap();
        }
    })
    .await;
    Contender {
        acquired,
        release,
        task,
    }
}

/// A [`zklock::Mutex::lock`] of `dir` by `client`, in a task, returned once it waits in the queue.
pub async fn waiting_lock(
    client: &Client,
    dir: &str,
) -> tokio::task::JoinHandle<zklock::Result<zklock::Guard>> {
    spawn_waiting(zklock::Session::new(client), |session| {
        let mutex = zklock::Mutex::new(session, dir).unwrap();
        async move { mutex.lock().await }
    })
    .await
}

/// The lost reason after the session was expired by `expire_session`: the expiry itself, or the deletion of our
/// ephemeral node by it, whichever the client hears first (an ensemble member may deliver the deletion first).
pub fn assert_expired(reason: zklock::LostReason) {
    assert!(
        matches!(
            reason,
            zklock::LostReason::SessionExpired | zklock::LostReason::NodeDeleted
        ),
        "{reason:?}"
    );
}

/// Waits until `client` itself knows its session expired (it learns it when it reconnects).
pub async fn await_expired(client: &Client) {
    let mut states = client.state_watcher();
    eventually("the client to learn of the expiry", async {
        while states.state() != zk::SessionState::Expired {
            states.changed().await;
        }
    })
    .await
}

/// A retry policy that waits `secs` before every retry: a window in which a test can act after a fault, before the
/// library looks again.
pub fn slow_retry(secs: u64) -> zklock::RetryPolicy {
    zklock::RetryPolicy::default()
        .with_initial_backoff(Duration::from_secs(secs))
        .with_max_backoff(Duration::from_secs(secs))
}

/// The session timeout of clients on a [`dedicated_ensemble`] whose leader is killed: it outlasts the election.
pub const FAILOVER_TIMEOUT: Duration = Duration::from_secs(30);

/// A 3-member ensemble of the test's own (the shared one's members cannot be killed), and its connect string.
pub async fn dedicated_ensemble() -> (ZooKeeper, String) {
    let zk = tokio::task::spawn_blocking(|| ZooKeeper::ensemble(3).unwrap())
        .await
        .unwrap();
    let hosts = zk.connect_string();
    (zk, hosts)
}

/// After a failover: `holder` releases, and then `waiter` (a task waiting behind it) holds; what it holds.
pub async fn release_to_waiter(
    holder: zklock::Guard,
    waiter: tokio::task::JoinHandle<zklock::Result<zklock::Guard>>,
) -> zklock::Guard {
    eventually("release after failover", holder.release())
        .await
        .unwrap();
    eventually("the waiter to take over after failover", waiter)
        .await
        .unwrap()
        .unwrap()
}

/// Kills the ensemble's leader member and waits until the others have elected a new one; the killed member. Needs
/// the multi-threaded runtime.
pub fn kill_leader(zk: &mut ZooKeeper) -> usize {
    tokio::task::block_in_place(|| {
        let leader = zk.leader().expect("a leader");
        zk.kill(leader);
        zk.wait_for_leader(Duration::from_secs(60)).expect("a new leader");
        leader
    })
}

/// Starts the killed `member` again. Needs the multi-threaded runtime.
pub fn restart_member(zk: &mut ZooKeeper, member: usize) {
    tokio::task::block_in_place(|| zk.restart(member).unwrap())
}

/// Catches `client` up with everything committed so far: on an ensemble its server may lag behind the other
/// sessions' servers until a `sync` has gone through the leader. (A `path` that does not exist is fine.)
pub async fn catch_up(client: &Client, path: &str) {
    match client.sync(path).await {
        Ok(()) | Err(zk::Error::NoNode) => {}
        Err(err) => panic!("sync {path}: {err}"),
    }
}

/// What `observer` finds at `dir`, once caught up ([`catch_up`]).
pub async fn inspect_synced(observer: &Client, dir: &str) -> Option<zklock::Inspection> {
    catch_up(observer, dir).await;
    zklock::inspect(observer, dir).await.unwrap()
}

/// How long the restart tests keep a server down: a short outage, well inside every session they use.
pub const OUTAGE: Duration = Duration::from_millis(2500);

/// An embedded server of one test's own, on a fixed port and a data directory, that can be stopped and started
/// again on both (sessions and nodes survive the restart).
pub struct RestartableServer {
    config: zklock_testkit::ServerConfig,
    server: Option<zklock_server::Server>,
}

impl RestartableServer {
    pub async fn start() -> RestartableServer {
        let data =
            std::env::temp_dir().join(zklock_testkit::unique_path("zklock-restart").trim_start_matches('/'));
        let config = zklock_testkit::ServerConfig {
            listen: format!("127.0.0.1:{}", zklock_testkit::ports::free_port().unwrap())
                .parse()
                .unwrap(),
            data_dir: Some(data),
            ..Default::default()
        };
        let server = zklock_server::Server::start(config.clone()).await.unwrap();
        RestartableServer {
            config,
            server: Some(server),
        }
    }

    pub fn hosts(&self) -> String {
        self.server.as_ref().expect("serving").connect_string()
    }

    /// Shuts the server down, waits `OUTAGE`, and starts it again on the same data and port.
    pub async fn restart(&mut self) {
        self.server.take().expect("serving").shutdown().await.unwrap();
        tokio::time::sleep(OUTAGE).await;
        self.server = Some(zklock_server::Server::start(self.config.clone()).await.unwrap());
    }

    pub async fn stop(mut self) {
        self.server.take().expect("serving").shutdown().await.unwrap();
        let _ = std::fs::remove_dir_all(self.config.data_dir.as_ref().unwrap());
    }
}

/// Kills standalone ZooKeeper `zk`, waits `OUTAGE`, and starts it again on its data (on a multi-thread runtime).
pub async fn restart_zookeeper(zk: &mut ZooKeeper) {
    tokio::task::block_in_place(|| {
        zk.kill(0);
        std::thread::sleep(OUTAGE);
        zk.restart(0).expect("ZooKeeper serves again");
    });
}
