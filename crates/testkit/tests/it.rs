//! Tests of the testkit itself, against real ZooKeeper 3.8.

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use zklock_testkit::{
    expire_session, four_letter_word, init_tracing, opcode, shared_ensemble, shared_standalone, unique_path,
    Proxy, ZooKeeper,
};
use zookeeper_client::{
    Acls, Client, CreateMode, CreateOptions, Error, EventType, SessionState, StateWatcher,
};

/// Bound for anything that must happen; generous because the machine is small and shared.
const WAIT: Duration = Duration::from_secs(60);

const PERSISTENT: CreateOptions<'static> = CreateMode::Persistent.with_acls(Acls::anyone_all());
const EPHEMERAL: CreateOptions<'static> = CreateMode::Ephemeral.with_acls(Acls::anyone_all());

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?} waiting for {what}"))
}

async fn connect(connect: &str) -> Client {
    within(
        "a session",
        Client::connector()
            .with_session_timeout(Duration::from_secs(20))
            .connect(connect),
    )
    .await
    .unwrap_or_else(|e| panic!("cannot connect to {connect}: {e}"))
}

/// A session through a new proxy in front of the shared standalone server: the server, the proxy, the session and
/// a watcher of its states.
async fn proxied() -> (&'static ZooKeeper, Proxy, Client, StateWatcher) {
    let zk = shared_standalone();
    let proxy = Proxy::start(zk.member_addr(0)).await.unwrap();
    let client = connect(&proxy.connect_string()).await;
    let states = client.state_watcher();
    (zk, proxy, client, states)
}

/// Waits for the next state change and returns it.
async fn next_state(watcher: &mut StateWatcher) -> SessionState {
    within("a session state change", watcher.changed()).await
}

/// Waits until the state is `target`, failing on any terminal state that is not it.
async fn reach_state(watcher: &mut StateWatcher, target: SessionState) {
    within(&format!("session state {target}"), async {
        loop {
            let state = watcher.changed().await;
            if state == target {
                return;
            }
            assert!(
                !state.is_terminated(),
                "session ended in {state} while waiting for {target}"
            );
        }
    })
    .await
}

#[tokio::test]
async fn standalone_starts_serves_restarts_and_is_killed_on_drop() {
    let mut zk = ZooKeeper::standalone().unwrap();
    assert_eq!(zk.members(), 1);
    assert_eq!(zk.four_letter(0, "ruok").unwrap(), "imok");
    assert_eq!(zk.mode(0).as_deref(), Some("standalone"));
    assert_eq!(zk.leader(), Some(0));
    assert_eq!(zk.connect_string(), zk.member_addr(0).to_string());

    let client = connect(&zk.connect_string()).await;
    let path = unique_path("standalone");
    client.create(&path, b"hello", &PERSISTENT).await.unwrap();
    assert_eq!(client.get_data(&path).await.unwrap().0, b"hello");
    drop(client);

    zk.kill(0);
    assert!(!zk.is_running(0));
    assert_eq!(zk.leader(), None);
    zk.restart(0).unwrap();
    let client = connect(&zk.connect_string()).await;
    assert_eq!(
        client.get_data(&path).await.unwrap().0,
        b"hello",
        "data lost across a restart"
    );
    drop(client);

    let addr = zk.member_addr(0);
    drop(zk);
    assert!(
        four_letter_word(addr, "ruok", Duration::from_secs(2)).is_err(),
        "server still answers after drop"
    );
}

#[tokio::test]
async fn shared_ensemble_has_one_leader_and_replicates() {
    let zk = shared_ensemble();
    assert_eq!(zk.members(), 3);
    assert_eq!(zk.connect_string().split(',').count(), 3);
    let modes: Vec<String> = (0..3).map(|i| zk.mode(i).expect("member serves")).collect();
    assert_eq!(
        modes.iter().filter(|m| *m == "leader").count(),
        1,
        "modes: {modes:?}"
    );
    assert_eq!(
        modes.iter().filter(|m| *m == "follower").count(),
        2,
        "modes: {modes:?}"
    );
    assert_eq!(zk.leader().map(|l| modes[l].as_str()), Some("leader"));

    let writer = connect(&zk.member_addr(0).to_string()).await;
    let reader = connect(&zk.member_addr(2).to_string()).await;
    let path = unique_path("replicated");
    writer.create(&path, b"v", &PERSISTENT).await.unwrap();
    // A follower may lag behind the leader; sync makes it catch up with everything committed so far.
    reader.sync(&path).await.unwrap();
    assert_eq!(reader.get_data(&path).await.unwrap().0, b"v");
}

#[tokio::test]
async fn killed_leader_is_replaced_and_rejoins_after_restart() {
    let mut zk = ZooKeeper::builder().members(3).tick_time_ms(500).start().unwrap();
    let old = zk.leader().expect("a started ensemble has a leader");
    let client = connect(&zk.connect_string()).await;
    let path = unique_path("survives");
    client.create(&path, b"kept", &PERSISTENT).await.unwrap();

    zk.kill(old);
    assert!(!zk.is_running(old));
    assert!(
        zk.four_letter(old, "ruok").is_err(),
        "killed member still answers"
    );
    let new = zk.wait_for_leader(WAIT).unwrap();
    assert_ne!(new, old);

    zk.restart(old).unwrap();
    assert!(zk.is_running(old));
    assert_eq!(zk.mode(old).as_deref(), Some("follower"));
    assert_eq!(zk.leader(), Some(new));

    let rejoined = connect(&zk.member_addr(old).to_string()).await;
    rejoined.sync(&path).await.unwrap();
    assert_eq!(rejoined.get_data(&path).await.unwrap().0, b"kept");
}

/// Expires a session holding an ephemeral node; checks the holder sees Expired and a watcher sees the deletion.
async fn check_expire_session(connect_string: &str) {
    init_tracing();
    let client = connect(connect_string).await;
    let observer = connect(connect_string).await;
    let path = unique_path("ephemeral");
    client.create(&path, b"", &EPHEMERAL).await.unwrap();
    // Another session: on an ensemble its member may not have applied the create yet (CI once saw no node).
    observer.sync(&path).await.unwrap();
    let (stat, deleted) = observer.check_and_watch_stat(&path).await.unwrap();
    assert!(stat.is_some());
    let mut states = client.state_watcher();

    expire_session(connect_string, &client).await;

    reach_state(&mut states, SessionState::Expired).await;
    assert!(matches!(client.get_data(&path).await, Err(Error::SessionExpired)));
    assert_eq!(
        within("the deletion event", deleted.changed()).await.event_type,
        EventType::NodeDeleted
    );
    assert_eq!(
        observer.check_stat(&path).await.unwrap(),
        None,
        "the expired session's ephemeral node remains"
    );
}

#[tokio::test]
async fn expire_session_expires_the_original_client() {
    check_expire_session(&shared_standalone().connect_string()).await;
}

#[tokio::test]
async fn expire_session_works_on_an_ensemble() {
    check_expire_session(&shared_ensemble().connect_string()).await;
}

#[tokio::test]
async fn proxy_forwards_requests_and_four_letter_words() {
    let zk = shared_standalone();
    let proxy = Proxy::start(zk.member_addr(0)).await.unwrap();
    assert_eq!(proxy.upstream(), zk.member_addr(0));
    assert_eq!(proxy.connect_string(), proxy.addr().to_string());

    let client = connect(&proxy.connect_string()).await;
    let path = unique_path("proxied");
    client.create(&path, b"through", &PERSISTENT).await.unwrap();
    assert_eq!(client.get_data(&path).await.unwrap().0, b"through");
    assert_eq!(
        proxy.requests(opcode::CREATE) + proxy.requests(opcode::CREATE2),
        1
    );
    assert_eq!(proxy.requests(opcode::GET_DATA), 1);
    assert_eq!(proxy.requests(opcode::DELETE), 0);

    let answer = tokio::task::spawn_blocking({
        let addr = proxy.addr();
        move || four_letter_word(addr, "ruok", Duration::from_secs(10))
    });
    assert_eq!(answer.await.unwrap().unwrap(), "imok");
    assert_eq!(proxy.connections(), 2);
}

#[tokio::test]
async fn cut_all_disconnects_and_the_client_reconnects() {
    let (_, proxy, client, mut states) = proxied().await;

    proxy.cut_all();

    assert_eq!(next_state(&mut states).await, SessionState::Disconnected);
    reach_state(&mut states, SessionState::SyncConnected).await;
    assert!(
        proxy.connections() >= 2,
        "the client did not reconnect through the proxy"
    );
    let path = unique_path("after-cut");
    client.create(&path, b"", &PERSISTENT).await.unwrap();
}

#[tokio::test]
async fn lost_create_reply_leaves_the_node_created() {
    let (zk, proxy, client, mut states) = proxied().await;
    let path = unique_path("lost-reply");

    proxy.drop_reply_and_cut(opcode::ALL_CREATES);
    assert!(proxy.is_armed());
    let result = client.create(&path, b"written", &PERSISTENT).await;

    assert!(
        matches!(result, Err(Error::ConnectionLoss)),
        "create returned {result:?}"
    );
    assert!(!proxy.is_armed());
    assert_eq!(proxy.lost_replies(), 1);
    let direct = connect(&zk.connect_string()).await;
    assert_eq!(
        direct.get_data(&path).await.unwrap().0,
        b"written",
        "the create did not reach the server"
    );
    // The fault is one-shot: the client reconnects and works normally.
    reach_state(&mut states, SessionState::SyncConnected).await;
    assert!(client.check_stat(&path).await.unwrap().is_some());
    client
        .create(&format!("{path}-again"), b"", &PERSISTENT)
        .await
        .unwrap();
    assert_eq!(proxy.lost_replies(), 1);
}

#[tokio::test]
async fn proxy_counts_watch_notifications() {
    let zk = shared_standalone();
    let proxy = Proxy::start(zk.member_addr(0)).await.unwrap();
    let watching = connect(&proxy.connect_string()).await;
    let writer = connect(&zk.connect_string()).await;
    let path = unique_path("watched");

    let (stat, watcher) = watching.check_and_watch_stat(&path).await.unwrap();
    assert_eq!(stat, None);
    assert_eq!(proxy.notifications(), 0);
    writer.create(&path, b"", &PERSISTENT).await.unwrap();

    let event = within("the watch event", watcher.changed()).await;
    assert_eq!(event.event_type, EventType::NodeCreated);
    assert_eq!(proxy.notifications(), 1);
    assert_eq!(proxy.requests(opcode::EXISTS), 1);
}

#[tokio::test]
async fn blackhole_looks_like_a_dead_server_until_lifted() {
    let (_, proxy, client, mut states) = proxied().await;

    proxy.set_blackhole(true);
    // Nothing comes back, not even ping replies: the client gives the connection up after its read timeout.
    assert_eq!(next_state(&mut states).await, SessionState::Disconnected);
    proxy.set_blackhole(false);

    reach_state(&mut states, SessionState::SyncConnected).await;
    let path = unique_path("after-blackhole");
    client.create(&path, b"", &PERSISTENT).await.unwrap();
}

#[test]
fn unique_paths_are_fresh_top_level_paths() {
    let a = unique_path("lock");
    let b = unique_path("lock");
    assert_ne!(a, b);
    assert!(a.starts_with("/lock-"), "{a}");
    assert!(a[6..].chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_eq!(a.matches('/').count(), 1);
}

#[test]
fn four_letter_word_rejects_non_words() {
    let addr = "127.0.0.1:9".parse().unwrap();
    assert_eq!(
        four_letter_word(addr, "ruok!", Duration::from_secs(1))
            .unwrap_err()
            .kind(),
        std::io::ErrorKind::InvalidInput
    );
}

const HOLD_ENV: &str = "ZKLOCK_TESTKIT_HOLD_STANDALONE";

/// Run by `zookeeper_dies_with_its_test_process` in a child process: starts the shared standalone server, reports
/// its address on stdout and waits until stdin closes (or the parent kills it).
#[test]
#[ignore = "helper process for zookeeper_dies_with_its_test_process"]
fn hold_a_standalone_for_the_parent_test() {
    if std::env::var_os(HOLD_ENV).is_none() {
        return;
    }
    println!("ADDR={}", shared_standalone().member_addr(0));
    // Bounded, so a parent that never closes stdin cannot leave this process behind forever.
    let (closed, stdin_closed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_line(&mut String::new());
        let _ = closed.send(());
    });
    let _ = stdin_closed.recv_timeout(Duration::from_secs(300));
}

/// This test binary, to run only `hold_a_standalone_for_the_parent_test` as a child process.
fn holder_process() -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "hold_a_standalone_for_the_parent_test",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLD_ENV, "1");
    command
}

#[test]
fn zookeeper_dies_with_its_test_process() {
    let mut holder = holder_process()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(holder.stdout.take().unwrap());
    // Bounded by the helper: it prints the address or exits (start failure, timeout), closing stdout either way.
    // libtest prints the test name on the same line first, hence the search within the line.
    let addr = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.split_once("ADDR=").map(|(_, addr)| addr.trim().to_string()))
        .expect("the helper process did not report a ZooKeeper address");
    let addr = addr.parse().unwrap();
    assert_eq!(
        four_letter_word(addr, "ruok", Duration::from_secs(10)).unwrap(),
        "imok"
    );

    // SIGKILL: no destructor, no atexit handler runs in the helper; only the parent-death signal can clean up.
    holder.kill().unwrap();
    holder.wait().unwrap();

    let deadline = std::time::Instant::now() + WAIT;
    while four_letter_word(addr, "ruok", Duration::from_secs(2)).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "ZooKeeper at {addr} outlived its killed test process"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn missing_zookeeper_fails_loudly() {
    let output = holder_process()
        .env(
            zklock_testkit::install::JAR_DIR_ENV,
            "/nonexistent-zookeeper-jars",
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "a missing ZooKeeper must fail the test, not skip it"
    );
    let text = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("real ZooKeeper 3.8 not found"),
        "unexpected output: {text}"
    );
}
