//! An acquire dropped while its create is on its way through one ensemble member, after which the client goes on on
//! another member: the background removal of the abandoned node must find a create that commits only later.
//! Real 5-member ZooKeeper 3.8 whose members talk through peer links (held to keep the create uncommitted).

use std::time::{Duration, Instant};

use zklock::zookeeper_client::{self as zk, Client, SessionState};
use zklock::{Mutex, Session};
use zklock_testkit::{init_tracing, opcode, unique_path, Condition, Proxy, ZooKeeper};

use crate::support::*;

/// Bound for the ensemble to start and elect.
const START: Duration = Duration::from_secs(90);

/// The session timeout of the client that loses its create: it must outlive the whole scenario by far, so that an
/// orphan cannot go by expiry.
const SESSION_TIMEOUT: Duration = Duration::from_secs(20);

/// How often the scenario is set up before the test gives up on it arising (the leader can refuse the forwarded
/// create with `SessionMoved` if the client's revalidation reaches it first).
const ATTEMPTS: usize = 3;

/// What one attempt found.
enum Outcome {
    /// The create never committed: the scenario did not arise.
    NoCreate,
    /// The create committed and no node of the live session is left.
    Cleaned { cversion_delta: i32 },
}

/// Pins the removal of an abandoned node whose create reply was never seen: it looks after a `sync`. The create
/// goes through follower F, the leader orders it but cannot commit it (peer links held), the client's session moves
/// to follower G and the acquire is dropped. G has the proposal but not the commit, so a plain listing there misses
/// the create, which then commits: an orphan of a live session at the head of the queue, stalling every contender
/// until the session ends. G's `sync` passes the leader after that create, so the synced listing finds the node.
/// (Not the leader as G: it holds a session's every request, a listing too, behind that session's pending write.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_dropped_during_a_create_that_lands_after_a_reconnect_leaves_no_node() {
    init_tracing();
    // tickTime 1 s: a follower or leader gives up after syncLimit (5) ticks without hearing the others, longer than
    // the holds below.
    let zk = tokio::task::block_in_place(|| {
        ZooKeeper::builder()
            .members(5)
            .tick_time_ms(1000)
            .peer_links()
            .start()
            .expect("an ensemble with peer links")
    });
    let leader = tokio::task::block_in_place(|| zk.wait_for_leader(START)).expect("a leader");
    let observer = client_with_timeout(&zk.member_addr(leader).to_string(), SESSION_TIMEOUT).await;
    let mut started = Instant::now();
    for attempt in 1..=ATTEMPTS {
        started = Instant::now();
        match one_attempt(&zk, leader, &observer, attempt).await {
            Outcome::Cleaned { cversion_delta } => {
                eprintln!(
                    "attempt {attempt}: the create committed and its node was removed (directory cversion +{cversion_delta}) \
                     in {:?}",
                    started.elapsed()
                );
                return;
            }
            Outcome::NoCreate => eprintln!(
                "attempt {attempt}: the leader never committed the create (refused after the session moved?); again"
            ),
        }
    }
    panic!(
        "the scenario never arose in {ATTEMPTS} attempts (the create never committed); last attempt took {:?}",
        started.elapsed()
    );
}

/// One run of the scenario on a fresh directory, with a fresh client through fresh proxies.
async fn one_attempt(zk: &ZooKeeper, leader: usize, observer: &Client, attempt: usize) -> Outcome {
    let links = zk.peer_links().expect("peer links");
    let followers: Vec<usize> = (0..zk.members()).filter(|&m| m != leader).collect();
    // F takes the create, G is where the client goes on, H and I only withhold their ACKs.
    let (follower, elsewhere, silent) = (followers[0], followers[1], &followers[2..]);
    let dir = unique_path("lost-create-elsewhere");
    // The directory exists before the holds (a persistent one: a container could be swept away meanwhile).
    observer
        .create(&dir, b"", &PERSISTENT)
        .await
        .expect("the lock directory");

    // The client's first connection lands on F: G's proxy plays dead until then.
    let via_follower = Proxy::start(zk.member_addr(follower)).await.expect("F's proxy");
    let via_elsewhere = Proxy::start(zk.member_addr(elsewhere)).await.expect("G's proxy");
    via_elsewhere.set_blackhole(true);
    let hosts = format!(
        "{},{}",
        via_follower.connect_string(),
        via_elsewhere.connect_string()
    );
    let client = eventually(
        "the client to connect through F",
        Client::connector()
            .with_session_timeout(SESSION_TIMEOUT)
            .with_connection_timeout(Duration::from_secs(2))
            .connect(&hosts),
    )
    .await
    .expect("connects");
    assert!(via_follower.connections() >= 1, "the client is on F");
    via_elsewhere.set_blackhole(false);
    let session = client.session_id().0;
    let before = observer
        .check_stat(&dir)
        .await
        .expect("stat")
        .expect("the directory")
        .cversion;

    // Hold: F never gets the proposal (so never acknowledges it), H's and I's ACKs never reach the leader; G's
    // alone (with the leader's own) is no majority of 5. The create cannot commit, and G, which has the proposal
    // but no commit, still talks to the leader (the client's session can move there).
    let mut held_directions = vec![links.direction(leader, follower)];
    held_directions.extend(silent.iter().map(|&m| links.direction(m, leader)));
    let forwarded = links.direction(follower, leader);
    for direction in &held_directions {
        direction.set(Condition::Stop);
    }
    let held = Instant::now();
    let forwarded_before = forwarded.delivered();
    let creates_before = via_follower.requests(opcode::CREATE2) + via_follower.requests(opcode::CREATE);
    let mutex = Mutex::new(Session::new(&client), &dir).expect("a mutex");
    let acquire = tokio::spawn(async move { mutex.lock().await.map(drop) });
    // The create went to F, and F forwarded it to the leader (with the leader's link to F stopped, F has nothing
    // else to say to the leader).
    wait_for("the create to reach F", || {
        via_follower.requests(opcode::CREATE2) + via_follower.requests(opcode::CREATE) > creates_before
    })
    .await;
    wait_for("F to forward the create to the leader", || {
        forwarded.delivered() > forwarded_before
    })
    .await;

    // The client goes on on G; the acquire is dropped before any create reply.
    let looked_before = requests_of_cleanup(&via_elsewhere);
    drop(via_follower);
    acquire.abort();
    // The background removal looks on G (a `sync` with the fix, a plain listing without) while the create is
    // pending: the session has moved to G by then.
    wait_for("the abandoned node's removal to look on G", || {
        requests_of_cleanup(&via_elsewhere) > looked_before
    })
    .await;
    let held_for = held.elapsed();

    // Heal: the create commits.
    for direction in &held_directions {
        direction.set(Condition::Pass);
    }
    eprintln!("attempt {attempt}: links held for {held_for:?}; session {session:#x}");
    assert!(
        held_for < Duration::from_secs(4),
        "the holds lasted {held_for:?}: the quorum may have broken up (syncLimit is 5 s)"
    );

    // Did the create commit? Every child created or deleted counts in the directory's cversion; nobody but the
    // abandoned acquire writes there. Wait for it with a watch (the leader needs the held ACKs first).
    catch_up(observer, &dir).await;
    let delta = await_create(observer, &dir, before).await;
    let outcome = if delta == 0 {
        Outcome::NoCreate
    } else {
        no_orphan(observer, &dir, session).await;
        let after = observer
            .check_stat(&dir)
            .await
            .expect("stat")
            .expect("the directory")
            .cversion;
        Outcome::Cleaned {
            cversion_delta: after - before,
        }
    };
    if let Outcome::Cleaned { .. } = outcome {
        // The session lives on: the node did not go by expiry.
        let mut states = client.state_watcher();
        eventually("the client's session to be connected", async {
            while states.state() != SessionState::SyncConnected {
                states.changed().await;
            }
        })
        .await;
        client
            .check_stat(&dir)
            .await
            .expect("the client's session still answers");
        let owners = owners(observer, &dir).await;
        assert!(owners.iter().all(|(_, owner)| *owner != session), "{owners:?}");
    }
    drop(client);
    drop(via_elsewhere);
    let _ = observer.delete(&dir, None).await;
    outcome
}

/// Requests with which the abandoned node's removal looks for it: `sync`, and the listings.
fn requests_of_cleanup(proxy: &Proxy) -> u64 {
    proxy.requests(opcode::SYNC) + listings(proxy)
}

/// How far the directory's cversion moved from `before` once it moved, within a few seconds after the heal; 0 if
/// it did not (the create was refused).
async fn await_create(observer: &Client, dir: &str, before: i32) -> i32 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, stat, watcher) = observer
            .get_and_watch_children(dir)
            .await
            .expect("listing the directory");
        if stat.cversion != before {
            return stat.cversion - before;
        }
        if tokio::time::timeout_at(deadline, watcher.changed())
            .await
            .is_err()
        {
            return 0;
        }
    }
}

/// Waits (with a child watch) until no child of `dir` is owned by `session` (which is alive); an orphan of a live
/// session otherwise.
async fn no_orphan(observer: &Client, dir: &str, session: i64) {
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        let (children, watcher) = observer
            .list_and_watch_children(dir)
            .await
            .expect("listing the directory");
        let mut orphans = Vec::new();
        for child in children {
            let path = format!("{dir}/{child}");
            match observer.check_stat(&path).await {
                Ok(Some(stat)) if stat.ephemeral_owner == session => orphans.push(child),
                Ok(_) | Err(zk::Error::NoNode) => {}
                Err(err) => panic!("stat {path}: {err}"),
            }
        }
        if orphans.is_empty() {
            return;
        }
        if tokio::time::timeout_at(deadline, watcher.changed())
            .await
            .is_err()
        {
            panic!(
                "an orphan of a live session: {orphans:?} in {dir}, owned by session {session:#x}, still there after \
                 {EVENTUALLY:?}: the abandoned acquire's node was never removed"
            );
        }
    }
}

/// The children of `dir` and their ephemeral owners.
async fn owners(observer: &Client, dir: &str) -> Vec<(String, i64)> {
    let mut owners = Vec::new();
    for child in children(observer, dir).await {
        let path = format!("{dir}/{child}");
        if let Some(stat) = observer.check_stat(&path).await.expect("stat") {
            owners.push((child, stat.ephemeral_owner));
        }
    }
    owners
}

/// Polls (a proxy's and a link's counters offer no event) until `done`, for at most [`EVENTUALLY`].
async fn wait_for(what: &str, done: impl Fn() -> bool) {
    eventually(what, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
}
