//! Restarts on the same data directory: tree, zxid and sessions survive.

use zklock_codec::*;
use zklock_server::{Server, ServerConfig};

use crate::common::Raw;

fn config(dir: &std::path::Path) -> ServerConfig {
    ServerConfig {
        data_dir: Some(dir.to_path_buf()),
        ..Default::default()
    }
}

/// A snapshot per 4 MiB logged, with short ticks.
fn snapshot_every_4_mib(dir: &std::path::Path) -> ServerConfig {
    ServerConfig {
        tick_time: std::time::Duration::from_millis(200),
        snap_size_limit: 4 << 20,
        ..config(dir)
    }
}

fn create(path: &str, data: &[u8], flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Some(data.to_vec()),
        acl: Acl::open_unsafe(),
        flags,
    }
}

/// Runs a first server, then restarts per `between` and checks everything acknowledged is back.
async fn survives_restart(between: impl FnOnce(&std::path::Path)) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(config(dir.path())).await.unwrap();
    let (mut raw, session) = Raw::session(server.local_addr()).await;
    raw.call(OpCode::Create, &create("/keep", b"v1", 0)).await;
    raw.call(OpCode::Create, &create("/keep/seq-", b"", 2)).await;
    raw.call(
        OpCode::SetData,
        &SetDataRequest {
            path: "/keep".into(),
            data: Some(b"v2".to_vec()),
            version: 0,
        },
    )
    .await;
    raw.call(OpCode::Create, &create("/eph", b"", 1)).await;
    let (last, _) = raw
        .call(
            OpCode::Delete,
            &DeleteRequest {
                path: "/keep/seq-0000000000".into(),
                version: -1,
            },
        )
        .await;
    drop(raw);
    server.shutdown().await.unwrap();
    between(dir.path());

    let server = Server::start(config(dir.path())).await.unwrap();
    // The session is still there: reconnecting with its id and password works and the ephemeral stayed.
    let mut raw = Raw::connect(server.local_addr()).await;
    let req = ConnectRequest {
        last_zxid_seen: last.zxid,
        time_out: 30_000,
        session_id: session.session_id,
        passwd: session.passwd.clone(),
        ..Default::default()
    };
    assert_eq!(raw.handshake(&req).await.session_id, session.session_id);
    let (h, body) = raw
        .call(
            OpCode::GetData,
            &GetDataRequest {
                path: "/keep".into(),
                watch: false,
            },
        )
        .await;
    assert_eq!(h.zxid, last.zxid, "the zxid continues");
    let got = GetDataResponse::from_bytes(&body).unwrap();
    assert_eq!(got.data.as_deref(), Some(&b"v2"[..]));
    assert_eq!((got.stat.version, got.stat.num_children), (1, 0));
    // The create counter survived too: the next sequential name is not reused.
    let (_, body) = raw.call(OpCode::Create, &create("/keep/seq-", b"", 2)).await;
    assert_eq!(
        CreateResponse::from_bytes(&body).unwrap().path,
        "/keep/seq-0000000001"
    );
    let (h, body) = raw.exists("/eph", false).await;
    assert_eq!(h.err, 0);
    assert_eq!(
        StatResponse::from_bytes(&body).unwrap().stat.ephemeral_owner,
        session.session_id
    );
    // New sessions get new ids.
    let (_, other) = Raw::session(server.local_addr()).await;
    assert_ne!(other.session_id, session.session_id);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn restart_recovers_from_the_snapshot() {
    survives_restart(|_| {}).await;
}

#[tokio::test]
async fn restart_recovers_from_the_log_alone() {
    survives_restart(|dir| {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("snapshot.")
            {
                std::fs::remove_file(path).unwrap();
            }
        }
    })
    .await;
}

/// Large writes trigger a snapshot by bytes (ZooKeeper's `snapSizeLimitInKb`), log files roll at that size, and
/// pruning keeps the data directory bounded; a restart still recovers everything.
#[tokio::test]
async fn logged_bytes_trigger_snapshots_and_keep_the_disk_use_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let config = snapshot_every_4_mib(dir.path());
    // A file listed may be gone by the time its size is read (a pruned log, a renamed snapshot): it counts 0.
    let dir_bytes = |dir: &std::path::Path| -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    };
    let server = Server::start(config.clone()).await.unwrap();
    let (mut raw, _) = Raw::session(server.local_addr()).await;
    let data = vec![7u8; 256 * 1024];
    // 40 MiB logged in all, in rounds of 4 MiB whose nodes are deleted again: the tree stays small.
    let mut peak = 0;
    for round in 0..10 {
        // The 16th create takes this round past 4 MiB: the snapshot comes at the first tick after it, which may
        // fall before the round's small txns below (then none of them is in it), so that is the zxid waited for.
        let mut crossing = 0;
        for i in 0..16 {
            let (h, _) = raw
                .call(OpCode::Create, &create(&format!("/big-{i}"), &data, 0))
                .await;
            crossing = h.zxid;
        }
        for i in 0..16 {
            raw.call(
                OpCode::Delete,
                &DeleteRequest {
                    path: format!("/big-{i}"),
                    version: -1,
                },
            )
            .await;
        }
        raw.call(OpCode::Create, &create(&format!("/kept-{round}"), b"x", 0))
            .await;
        // The ticker snapshots at its next tick: wait for the snapshot of this round (bounded).
        let deadline = std::time::Instant::now() + crate::common::WAIT;
        while !std::fs::read_dir(dir.path()).unwrap().any(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.starts_with("snapshot.") && !name.ends_with(".tmp") && {
                let zxid = i64::from_str_radix(name.trim_start_matches("snapshot."), 16).unwrap_or(0);
                zxid >= crossing
            }
        }) {
            assert!(
                std::time::Instant::now() < deadline,
                "no snapshot after round {round}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        peak = peak.max(dir_bytes(dir.path()));
    }
    // Without the size trigger all 40 MiB stay in the log; with it, about (3 kept snapshots + 1) log files.
    assert!(peak < 28 << 20, "the data directory grew to {peak} bytes");
    server.shutdown().await.unwrap();
    let server = Server::start(config).await.unwrap();
    let client = crate::common::client(&server).await;
    for round in 0..10 {
        assert!(client
            .check_stat(&format!("/kept-{round}"))
            .await
            .unwrap()
            .is_some());
    }
    assert!(client.check_stat("/big-0").await.unwrap().is_none());
    server.shutdown().await.unwrap();
}

/// Starts a server on `config`'s directory once the previous server, dropped without `shutdown`, has let go of it:
/// in a process that goes on, its tasks end (and its storage closes) moments after the drop, not at once, and
/// until then the directory's lock is held (a real crash releases it with the process).
async fn start_once_free(config: &ServerConfig) -> Server {
    let deadline = std::time::Instant::now() + crate::common::WAIT;
    loop {
        match Server::start(config.clone()).await {
            Ok(server) => return server,
            Err(zklock_server::Error::Storage(zklock_server::StorageError::InUse { .. }))
                if std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => panic!("start: {e}"),
        }
    }
}

/// What a restarted server finds in its log beyond the snapshot counts towards the next one: a server killed
/// again and again before it reaches the trigger still snapshots (and prunes) instead of growing its log forever.
#[tokio::test]
async fn the_log_replayed_at_start_counts_towards_the_next_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let config = snapshot_every_4_mib(dir.path());
    let snapshots = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name().to_string_lossy().into_owned();
                name.starts_with("snapshot.") && !name.ends_with(".tmp")
            })
            .count()
    };
    let data = vec![7u8; 256 * 1024];
    // Three lives of 3 MiB each, none reaching 4 MiB on its own; dropped without `shutdown` (no final snapshot).
    for life in 0..3 {
        let server = start_once_free(&config).await;
        let (mut raw, _) = Raw::session(server.local_addr()).await;
        for i in 0..12 {
            raw.call(OpCode::Create, &create(&format!("/life-{life}-{i}"), &data, 0))
                .await;
        }
        if snapshots(dir.path()) > 0 {
            return; // the second life's log + the first's replayed one passed the trigger: done
        }
        drop(raw);
        drop(server);
    }
    let server = start_once_free(&config).await;
    let deadline = std::time::Instant::now() + crate::common::WAIT;
    while snapshots(dir.path()) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "9 MiB logged over three lives and still no snapshot"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.shutdown().await.unwrap();
}
