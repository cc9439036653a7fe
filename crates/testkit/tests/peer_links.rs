//! An ensemble whose members reach each other only through links: stopping a member's links takes it out of the
//! quorum while its JVM runs and its clients stay connected; healing brings it back. Real ZooKeeper 3.8.

use std::time::{Duration, Instant};

use zklock_testkit::{init_tracing, unique_path, Condition, ZooKeeper};
use zookeeper_client::{Acls, Client, CreateMode};

/// Bound for anything that must happen; generous because the machine is small and shared.
const WAIT: Duration = Duration::from_secs(60);

/// A 3-member ensemble whose members talk through peer links, its leader and one of its followers.
fn ensemble() -> (ZooKeeper, usize, usize) {
    init_tracing();
    // tickTime 200 ms: a follower that hears nothing from its leader gives up after syncLimit (5) ticks.
    let zk = ZooKeeper::builder()
        .members(3)
        .tick_time_ms(200)
        .peer_links()
        .start()
        .expect("an ensemble with peer links");
    let leader = zk.wait_for_leader(WAIT).expect("a leader");
    let follower = (0..3).find(|&i| i != leader).expect("a follower");
    (zk, leader, follower)
}

/// Polls (a JVM offers no event to wait for) until member `i`'s mode satisfies `ok`.
fn wait_mode(zk: &ZooKeeper, i: usize, what: &str, ok: impl Fn(Option<&str>) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let mode = zk.mode(i);
        if ok(mode.as_deref()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "member {i} never became {what} (mode {mode:?})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serving(mode: Option<&str>) -> bool {
    matches!(mode, Some("leader" | "follower"))
}

async fn connect(addr: &str) -> Client {
    tokio::time::timeout(
        WAIT,
        Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(addr),
    )
    .await
    .expect("connects in time")
    .expect("connects")
}

/// Stops every byte between `member` and the others, both ways.
fn isolate(zk: &ZooKeeper, member: usize, condition: Condition) {
    let links = zk.peer_links().expect("peer links");
    for other in (0..zk.members()).filter(|&o| o != member) {
        links.direction(member, other).set(condition);
        links.direction(other, member).set(condition);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_follower_leaves_the_quorum_while_it_runs_and_comes_back_when_healed() {
    let (zk, leader, follower) = tokio::task::block_in_place(ensemble);
    let links = zk.peer_links().expect("peer links");
    // The quorum talks through the links, and nothing else does: the leader's pings reach the follower that way.
    assert!(links.direction(leader, follower).delivered() > 0);
    let path = unique_path("links");
    let on_leader = connect(&zk.member_addr(leader).to_string()).await;
    let on_follower = connect(&zk.member_addr(follower).to_string()).await;
    let mode = CreateMode::Persistent.with_acls(Acls::anyone_all());

    isolate(&zk, follower, Condition::Stop);
    tokio::task::block_in_place(|| wait_mode(&zk, follower, "out of the quorum", |m| !serving(m)));
    assert!(
        zk.pid(follower).is_some() && zk.is_running(follower),
        "the isolated member runs"
    );
    // The majority carries on.
    on_leader
        .create(&path, b"majority", &mode)
        .await
        .expect("the majority writes");

    isolate(&zk, follower, Condition::Pass);
    tokio::task::block_in_place(|| wait_mode(&zk, follower, "back in the quorum", serving));
    let again = connect(&zk.member_addr(follower).to_string()).await;
    again.sync(&path).await.expect("sync");
    let (data, _) = again
        .get_data(&path)
        .await
        .expect("the healed member has the majority's write");
    assert_eq!(data, b"majority");
    drop(on_follower);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_a_follower_that_no_longer_hears_its_leader_gives_up() {
    let (zk, leader, follower) = tokio::task::block_in_place(ensemble);
    let links = zk.peer_links().expect("peer links");
    let heard = links.direction(follower, leader);
    // Leader → follower stops; follower → leader still flows.
    links.direction(leader, follower).set(Condition::Stop);
    let before = heard.delivered();
    tokio::task::block_in_place(|| wait_mode(&zk, follower, "out of the quorum", |m| m != Some("follower")));
    // The other way still flows: the follower, looking for a leader now, keeps telling the old one its vote (its
    // last ping answers may all have gone before the mode changed, so wait for bytes rather than assume them).
    tokio::task::block_in_place(|| {
        let deadline = Instant::now() + WAIT;
        while heard.delivered() == before {
            assert!(Instant::now() < deadline, "the other way kept flowing");
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    links.heal();
    tokio::task::block_in_place(|| wait_mode(&zk, follower, "back in the quorum", serving));
}
