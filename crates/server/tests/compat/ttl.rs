//! TTL nodes (create modes 5 and 6 through `createTTL`, opcode 21), side by side on the embedded server and real
//! ZooKeeper 3.8: refused with `Unimplemented` unless extended types are on (`zookeeper.extendedTypesEnabled`, our
//! `ServerConfig::extended_types_enabled`); with them on, invalid TTLs are `BadArguments`, the stat a client sees
//! is the same (ZooKeeper reports the TTL owner as 0), and the container sweep deletes a TTL node without children
//! once its TTL has passed since its mtime — not one with a child, not when its creator's session closes.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use zklock_codec::{Acl, CreateTtlRequest, Encode};
use zklock_server::{Server, ServerConfig};
use zklock_testkit::ZooKeeper;
use zookeeper_client::{Acls, Client, CreateMode, MultiWriteResult};

use crate::support::WAIT;
use crate::wire::Session;

/// ZooKeeper's error codes met here.
const OK: i32 = 0;
const UNIMPLEMENTED: i32 = -6;
const BAD_ARGUMENTS: i32 = -8;
const NO_NODE: i32 = -101;

/// The largest TTL (ms) ZooKeeper accepts: `EphemeralType.TTL.maxValue()`, the low 40 bits.
const MAX_TTL: i64 = 0xff_ffff_ffff;

/// How often the sweep runs on both servers in these tests.
const CHECK_INTERVAL_MS: u64 = 100;

/// A raw create of opcode `op` (createTTL = 21 carries `ttl`; create2 = 15 does not) with open ACL; the error code.
async fn raw_create(s: &mut Session, op: i32, path: &str, flags: i32, ttl: i64) -> i32 {
    let req = CreateTtlRequest {
        path: path.into(),
        data: Some(Vec::new()),
        acl: Acl::open_unsafe(),
        flags,
        ttl,
    };
    let mut body = req.to_bytes();
    if op != 21 {
        body.truncate(body.len() - 8);
    }
    s.call(op, &body).await.map_or(i32::MIN, |r| r.header.err)
}

/// Every refusal and acceptance checked over the raw protocol, as error codes, in order.
async fn create_outcomes(addr: SocketAddr) -> Vec<(String, i32)> {
    let base = zklock_testkit::unique_path("ttl-raw");
    let mut s = Session::open(addr, 10_000).await;
    assert_eq!(s.create(&base, b"", 0).await, OK);
    // Not sent: a createTTL with a plain mode and ttl -1. It passes ZooKeeper 3.8's validation (a plain mode only
    // needs a negative ttl) and then its TTL encoding throws in the SyncThread: the JVM exits (code 2, "Severe
    // unrecoverable error"). The embedded server answers BadArguments instead (`plain_mode_createttl_is_refused`).
    let cases: [(&str, i32, i32, i64); 8] = [
        ("createTTL persistent-with-ttl", 21, 5, 1000),
        ("createTTL persistent-sequential-with-ttl", 21, 6, 1000),
        ("createTTL ttl 0", 21, 5, 0),
        ("createTTL ttl -1", 21, 5, -1),
        ("createTTL ttl max+1", 21, 5, MAX_TTL + 1),
        ("createTTL ttl max", 21, 5, MAX_TTL),
        ("create2 with a TTL mode", 15, 5, -1),
        ("createTTL with a plain mode and a ttl", 21, 0, 1000),
    ];
    let mut out = Vec::new();
    for (i, (name, op, flags, ttl)) in cases.into_iter().enumerate() {
        let path = format!("{base}/n{i}");
        out.push((name.to_string(), raw_create(&mut s, op, &path, flags, ttl).await));
    }
    // A TTL create on a missing parent: the mode and the TTL are checked first.
    out.push((
        "createTTL under a missing parent".into(),
        raw_create(&mut s, 21, &format!("{base}/none/x"), 5, 1000).await,
    ));
    s.close().await;
    out
}

fn embedded_config(extended: bool) -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        extended_types_enabled: extended,
        container_check_interval: Duration::from_millis(CHECK_INTERVAL_MS),
        ..Default::default()
    }
}

/// A real ZooKeeper with extended types on and a fast sweep, of its own (the shared one keeps the defaults).
async fn real_with_ttl() -> ZooKeeper {
    tokio::task::spawn_blocking(|| {
        ZooKeeper::builder()
            .system_property("zookeeper.extendedTypesEnabled", "true")
            .system_property("znode.container.checkIntervalMs", &CHECK_INTERVAL_MS.to_string())
            .start()
    })
    .await
    .expect("join")
    .expect("real ZooKeeper with extended types starts")
}

#[tokio::test]
async fn ttl_creates_are_unimplemented_without_extended_types() {
    let started = Instant::now();
    let server = Server::start(embedded_config(false)).await.unwrap();
    let embedded = create_outcomes(server.local_addr()).await;
    let real = create_outcomes(zklock_testkit::shared_standalone().member_addr(0)).await;
    assert_eq!(embedded, real, "embedded vs ZooKeeper 3.8");
    let code = |name: &str| embedded.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(code("createTTL persistent-with-ttl"), UNIMPLEMENTED);
    assert_eq!(code("createTTL persistent-sequential-with-ttl"), UNIMPLEMENTED);
    assert_eq!(
        code("createTTL ttl 0"),
        UNIMPLEMENTED,
        "the switch is checked before the TTL"
    );
    assert_eq!(code("create2 with a TTL mode"), UNIMPLEMENTED);
    assert_eq!(code("createTTL with a plain mode and a ttl"), BAD_ARGUMENTS);
    assert_eq!(code("createTTL under a missing parent"), UNIMPLEMENTED);
    server.shutdown().await.unwrap();
    eprintln!("took {:?}", started.elapsed());
}

#[tokio::test]
async fn ttl_nodes_with_extended_types_match_zookeeper() {
    let started = Instant::now();
    let server = Server::start(embedded_config(true)).await.unwrap();
    let zk = real_with_ttl().await;
    let embedded = create_outcomes(server.local_addr()).await;
    let real = create_outcomes(zk.member_addr(0)).await;
    assert_eq!(embedded, real, "embedded vs ZooKeeper 3.8");
    let code = |name: &str| embedded.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(code("createTTL persistent-with-ttl"), OK);
    assert_eq!(code("createTTL persistent-sequential-with-ttl"), OK);
    for refused in [
        "createTTL ttl 0",
        "createTTL ttl -1",
        "createTTL ttl max+1",
        "create2 with a TTL mode",
        "createTTL with a plain mode and a ttl",
    ] {
        assert_eq!(code(refused), BAD_ARGUMENTS, "{refused}");
    }
    assert_eq!(code("createTTL ttl max"), OK);
    assert_eq!(code("createTTL under a missing parent"), NO_NODE);

    let on_embedded = expiry_scenario(server.local_addr()).await;
    let on_real = expiry_scenario(zk.member_addr(0)).await;
    assert_eq!(on_embedded, on_real, "embedded vs ZooKeeper 3.8");
    // ZooKeeper keeps `0xff00000000000000 | ttl` as the owner but shows clients 0 (`DataNode.copyStat`: only a
    // session's owner is shown).
    assert_eq!(on_embedded.0, [0, 0, 0]);
    server.shutdown().await.unwrap();
    eprintln!("took {:?}", started.elapsed());
}

/// What a client sees of TTL nodes on one server: the ephemeralOwner of a TTL node's stat (from the create, a
/// read and a multi's create) and the sequential name's suffix. Asserts the expiry rules on the way.
async fn expiry_scenario(addr: SocketAddr) -> ([i64; 3], String) {
    let connect = &addr.to_string();
    const TTL: Duration = Duration::from_millis(800);
    let client = Client::connect(connect).await.expect("connect");
    let base = zklock_testkit::unique_path("ttl");
    let open = || CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create(&base, b"", &open()).await.unwrap();
    let ttl = |mode: CreateMode| mode.with_acls(Acls::anyone_all()).with_ttl(TTL);
    // A TTL node that keeps a child, made first so that its TTL has passed when the others go.
    let parent = format!("{base}/parent");
    client
        .create(&parent, b"", &ttl(CreateMode::Persistent))
        .await
        .unwrap();
    client
        .create(&format!("{parent}/child"), b"", &open())
        .await
        .unwrap();
    // A TTL node whose creator's session closes: it is no ephemeral.
    let orphan = format!("{base}/orphan");
    let mut other = Session::open(addr, 10_000).await;
    assert_eq!(raw_create(&mut other, 21, &orphan, 5, 3_600_000).await, OK);
    assert!(other.close().await, "{connect}: closeSession answered");
    // The nodes that expire: a plain and a sequential TTL node.
    let created = Instant::now();
    let (stat, _) = client
        .create(&format!("{base}/t"), b"x", &ttl(CreateMode::Persistent))
        .await
        .unwrap();
    let (_, seq) = client
        .create(&format!("{base}/s-"), b"", &ttl(CreateMode::PersistentSequential))
        .await
        .unwrap();
    let sequential = format!("{base}/s-{seq}");
    // And one made in a multi (createTTL inside it), beside a plain node that stays.
    let mut multi = client.new_multi_writer();
    multi
        .add_create(&format!("{base}/m"), b"", &ttl(CreateMode::Persistent))
        .unwrap();
    multi.add_create(&format!("{base}/plain"), b"", &open()).unwrap();
    let results = multi.commit().await.expect("multi with a TTL create");
    let in_multi = match &results[0] {
        MultiWriteResult::Create { path, stat } => {
            assert_eq!(path, &format!("{base}/m"), "{connect}");
            stat.ephemeral_owner
        }
        other => panic!("{connect}: {other:?}"),
    };
    let (_, read) = client.get_data(&format!("{base}/t")).await.unwrap();
    for path in [format!("{base}/t"), sequential.clone(), format!("{base}/m")] {
        tokio::time::timeout(WAIT, zklock_testkit::await_deleted(&client, &path))
            .await
            .unwrap_or_else(|_| panic!("{connect}: {path} was never deleted"));
    }
    assert!(
        created.elapsed() >= TTL,
        "{connect}: deleted after {:?}, before its TTL",
        created.elapsed()
    );
    assert!(
        client.check_stat(&parent).await.unwrap().is_some(),
        "{connect}: a TTL node with a child stays"
    );
    // The orphan outlived its creator's session (closed, and ZooKeeper answers a close after deleting its
    // ephemerals).
    assert!(
        client.check_stat(&orphan).await.unwrap().is_some(),
        "{connect}: a TTL node is no ephemeral of its creator's session"
    );
    client.delete(&format!("{parent}/child"), None).await.unwrap();
    tokio::time::timeout(WAIT, zklock_testkit::await_deleted(&client, &parent))
        .await
        .unwrap_or_else(|_| panic!("{connect}: emptied {parent} was never deleted"));
    assert!(
        client
            .check_stat(&format!("{base}/plain"))
            .await
            .unwrap()
            .is_some(),
        "{connect}: a plain node stays"
    );
    client.delete(&orphan, None).await.unwrap();
    (
        [stat.ephemeral_owner, read.ephemeral_owner, in_multi],
        seq.to_string(),
    )
}

/// The one createTTL the embedded server refuses where ZooKeeper 3.8 accepts it — and then exits (see
/// `create_outcomes`): a plain mode with ttl -1. With or without extended types: BadArguments, nothing created, the
/// connection kept.
#[tokio::test]
async fn plain_mode_createttl_is_refused() {
    for extended in [false, true] {
        let server = Server::start(embedded_config(extended)).await.unwrap();
        let mut s = Session::open(server.local_addr(), 10_000).await;
        for flags in [0, 1, 2, 3] {
            assert_eq!(
                raw_create(&mut s, 21, "/plain", flags, -1).await,
                BAD_ARGUMENTS,
                "flags {flags}, extended types {extended}"
            );
        }
        assert_eq!(
            s.exists("/plain", false).await.map(|r| r.header.err),
            Some(NO_NODE)
        );
        server.shutdown().await.unwrap();
    }
}
