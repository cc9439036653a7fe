//! Session behaviour, each scenario run against real ZooKeeper and the embedded server: expiry by
//! timeout, moving a session to a new connection, and ephemerals gone before the close reply.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use zklock_server::{Server, ServerConfig};
use zklock_testkit::ZooKeeper;
use zookeeper_client as zk;

use crate::support::WAIT;
use crate::wire::Session;

const NO_NODE: i32 = -101;
const EPHEMERAL: i32 = 1;
/// Notification types.
const DELETED: i32 = 2;
const CHILDREN_CHANGED: i32 = 4;

async fn embedded(tick: Duration) -> Server {
    let config = ServerConfig {
        tick_time: tick,
        ..ServerConfig::default()
    };
    Server::start(config).await.expect("embedded server starts")
}

/// Runs `scenario` against the embedded server (2 s ticks), then against the shared real ZooKeeper.
async fn on_embedded_and_shared_zookeeper<F: std::future::Future<Output = ()>>(
    scenario: impl Fn(SocketAddr, &'static str) -> F,
) {
    let server = embedded(Duration::from_millis(2000)).await;
    scenario(server.local_addr(), "embedded").await;
    scenario(zklock_testkit::shared_standalone().member_addr(0), "zookeeper").await;
    server.shutdown().await.unwrap();
}

async fn real_with_tick(tick_ms: u32) -> ZooKeeper {
    tokio::task::spawn_blocking(move || ZooKeeper::builder().tick_time_ms(tick_ms).start())
        .await
        .expect("join")
        .expect("real ZooKeeper starts")
}

/// A session that stops talking expires after its timeout (not before, not much after), its ephemerals
/// vanish with a notification to others, its connection is closed and it cannot be re-attached.
async fn expiry_scenario(addr: SocketAddr, who: &str) {
    let base = zklock_testkit::unique_path("expiry");
    let mut a = Session::open(addr, 1000).await;
    assert_eq!(a.timeout_ms, 1000, "{who}: negotiated timeout");
    assert_eq!(a.create(&base, b"", 0).await, 0);
    assert_eq!(a.create(&format!("{base}/e"), b"", EPHEMERAL).await, 0);
    // B asks for the maximum (20 x 200 ms) so it outlives A while it only waits.
    let mut b = Session::open(addr, 4000).await;
    assert_eq!(
        b.exists(&format!("{base}/e"), true).await.map(|r| r.header.err),
        Some(0)
    );
    let silent_since = Instant::now();
    // B pings now and then (as any client does) so that it outlives A however slow the machine is; each
    // ping reply comes after every notification queued for B before it.
    let mut pings = 0;
    while b.events.is_empty() && pings < 200 {
        assert!(b.call(11, &[]).await.is_some(), "{who}: B's connection stays up");
        pings += 1;
        if b.events.is_empty() {
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }
    let waited = silent_since.elapsed();
    assert_eq!(
        b.events,
        [(DELETED, format!("{base}/e"))],
        "{who}: A's ephemeral deleted by expiry"
    );
    // Expiry is bucketed by tick, so it may come up to a tick late, but never well before the timeout.
    assert!(
        waited >= Duration::from_millis(800),
        "{who}: expired after only {waited:?}"
    );
    assert!(
        a.conn.closed_by_server().await,
        "{who}: the expired session's connection is closed"
    );
    assert!(
        Session::attach(addr, 1000, a.id, &a.password).await.is_none(),
        "{who}: an expired session cannot be re-attached"
    );
    assert!(b.close().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_expires_by_timeout() {
    let server = embedded(Duration::from_millis(200)).await;
    expiry_scenario(server.local_addr(), "embedded").await;
    let real = real_with_tick(200).await;
    expiry_scenario(real.member_addr(0), "zookeeper").await;
    server.shutdown().await.unwrap();
}

/// Re-attaching with id and password moves the session: the old connection is dropped, ephemerals stay
/// owned by the session; a wrong password is refused.
async fn move_scenario(addr: SocketAddr, who: &str) {
    let base = zklock_testkit::unique_path("move");
    let mut a = Session::open(addr, 30_000).await;
    assert_eq!(a.create(&base, b"", 0).await, 0);
    assert_eq!(a.create(&format!("{base}/e"), b"", EPHEMERAL).await, 0);
    assert!(
        Session::attach(addr, 30_000, a.id, &[7; 16]).await.is_none(),
        "{who}: wrong password refused"
    );
    let mut moved = Session::attach(addr, 30_000, a.id, &a.password)
        .await
        .unwrap_or_else(|| panic!("{who}: re-attach refused"));
    assert_eq!(moved.id, a.id);
    assert!(
        a.conn.closed_by_server().await,
        "{who}: the old connection is dropped"
    );
    let reply = moved.exists(&format!("{base}/e"), false).await.expect("reply");
    assert_eq!(reply.header.err, 0, "{who}: ephemeral survives the move");
    let owner = i64::from_be_bytes(reply.body[44..52].try_into().unwrap());
    assert_eq!(owner, a.id, "{who}: still owned by the session");
    assert!(moved.close().await);
    let mut c = Session::open(addr, 30_000).await;
    assert_eq!(
        c.exists(&format!("{base}/e"), false).await.unwrap().header.err,
        NO_NODE
    );
    assert!(c.close().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_moves_session() {
    on_embedded_and_shared_zookeeper(move_scenario).await;
}

/// When the close reply arrives, the ephemerals are already gone for everyone, and the watchers of other
/// sessions were notified before it.
async fn close_scenario(addr: SocketAddr, who: &str) {
    let base = zklock_testkit::unique_path("close");
    let mut a = Session::open(addr, 30_000).await;
    assert_eq!(a.create(&base, b"", 0).await, 0);
    for e in ["e1", "e2", "e3"] {
        assert_eq!(a.create(&format!("{base}/{e}"), b"", EPHEMERAL).await, 0);
    }
    let mut b = Session::open(addr, 30_000).await;
    assert_eq!(b.exists(&format!("{base}/e1"), true).await.unwrap().header.err, 0);
    let mut list = Vec::new();
    zklock_codec::jute::put_str(&mut list, &base);
    zklock_codec::jute::put_bool(&mut list, true);
    assert_eq!(b.call(8, &list).await.unwrap().header.err, 0);
    assert!(a.close().await, "{who}: close replied");
    // B's next reply comes after everything the server queued for it before A's close reply.
    let reply = b.exists(&format!("{base}/e2"), false).await.unwrap();
    assert_eq!(
        reply.header.err, NO_NODE,
        "{who}: ephemeral still there after the close reply"
    );
    let mut events = b.events.clone();
    events.sort();
    assert_eq!(
        events,
        [(DELETED, format!("{base}/e1")), (CHILDREN_CHANGED, base.clone())],
        "{who}: notifications"
    );
    assert!(b.close().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemerals_gone_before_close_reply() {
    on_embedded_and_shared_zookeeper(close_scenario).await;
}

/// The testkit's on-demand expiry (re-attach + close from another connection) works on the embedded
/// server: the Rust client sees `Expired` and the session's ephemerals are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn testkit_expire_session_on_embedded() {
    let server = embedded(Duration::from_millis(2000)).await;
    let connect = server.connect_string();
    let client = tokio::time::timeout(WAIT, zk::Client::connect(&connect))
        .await
        .unwrap()
        .unwrap();
    let mut state = client.state_watcher();
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    client.create("/mine", b"", &eph).await.unwrap();
    zklock_testkit::expire_session(&connect, &client).await;
    let expired = tokio::time::timeout(WAIT, async {
        loop {
            if state.changed().await == zk::SessionState::Expired {
                return;
            }
        }
    })
    .await;
    assert!(expired.is_ok(), "the client never saw its session expire");
    let other = zk::Client::connect(&connect).await.unwrap();
    assert_eq!(other.check_stat("/mine").await.unwrap(), None);
    drop(other);
    server.shutdown().await.unwrap();
}
