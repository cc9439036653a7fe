//! The server on a full disk (a real, small tmpfs mounted for the test; needs root, and fails — never skips —
//! without it): it stops serving at once instead of lingering as a healthy-looking zombie, acknowledges nothing
//! that is not durable, and after a restart with room every acknowledged write is there. A disk without room
//! for the log's preallocation is refused at start. The exit status of `zklock serve` is tested in
//! `crates/cli/tests/it/serve_disk_full.rs`.

use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use zklock_server::{Error, Server, ServerConfig, StorageError};
use zklock_testkit::Tmpfs;
use zookeeper_client as zk;

use crate::common::{client, new_session, Raw, WAIT};

/// ZooKeeper's answer to most four-letter words while it is not serving.
const NOT_SERVING: &str = "This ZooKeeper instance is not currently serving requests\n";

fn config(dir: &Path) -> ServerConfig {
    ServerConfig {
        data_dir: Some(dir.to_path_buf()),
        // The monitoring words are off by default; this test asks them.
        four_letter_words: vec!["*".into()],
        ..Default::default()
    }
}

/// Sends a four-letter word and returns the whole answer (the server closes after it).
async fn four_letter(addr: SocketAddr, word: &str) -> String {
    timeout(WAIT, async {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(word.as_bytes()).await.expect("send");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    })
    .await
    .expect("four-letter word answered (or closed) in time")
}

/// The disk fills under acknowledged writes: the server stops serving at once — `ruok` unanswered, the
/// monitoring words say "not serving", every connection closed, new sessions refused — and reports why; after
/// the space is freed, a restart on the same directory has every acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_stops_serving_and_loses_no_acknowledged_write() {
    let fs = Tmpfs::mount("12m");
    let data = fs.path().join("data");
    let mut server = Server::start(config(&data))
        .await
        .expect("starts on the 12 MiB tmpfs");
    let addr = server.local_addr();
    assert_eq!(four_letter(addr, "ruok").await, "imok");
    // The probes of a load balancer or an orchestrator: alive and ready.
    let http = server
        .serve_metrics("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let answer = |path| async move { crate::limits::get(http, path).await.unwrap_or_default() };
    assert!(answer("/health").await.starts_with("HTTP/1.1 200"));
    assert!(answer("/ready").await.starts_with("HTTP/1.1 200"));
    let writer = client(&server).await;
    let idle = client(&server).await;
    let mut idle_state = idle.state_watcher();
    let (mut raw, _) = Raw::session(addr).await;

    let filled = fs.fill_under_writes(&writer, WAIT).await;

    // The failure is reported with the directory and the OS error.
    let failure = timeout(WAIT, server.log_failure())
        .await
        .expect("log failure reported");
    let message = failure.to_string();
    assert!(matches!(failure, Error::LogWrite { .. }), "{failure:?}");
    assert!(
        message.contains(&format!("cannot write the transaction log in {}", data.display()))
            && message.contains("No space left on device (os error 28)")
            && message.contains("stopped serving"),
        "{message}"
    );
    // It no longer claims health: not ready (still alive, to say why in its log and metrics).
    assert_eq!(four_letter(addr, "ruok").await, "", "ruok must get no imok");
    let ready = answer("/ready").await;
    assert!(
        ready.starts_with("HTTP/1.1 503") && ready.contains("not currently serving"),
        "{ready}"
    );
    assert!(answer("/health").await.starts_with("HTTP/1.1 200"));
    for word in ["mntr", "srvr", "stat", "cons"] {
        assert_eq!(four_letter(addr, word).await, NOT_SERVING, "{word}");
    }
    // Every connection is closed, idle ones included.
    assert!(raw.closed().await, "an idle session's connection was closed");
    timeout(WAIT, async {
        while idle_state.peek_state() == zk::SessionState::SyncConnected {
            idle_state.changed().await;
        }
    })
    .await
    .expect("the idle zookeeper-client session was disconnected");
    // New sessions are refused: the connection closes without a ConnectResponse.
    let mut fresh = Raw::connect(addr).await;
    fresh.send_record(&new_session(30_000)).await;
    assert_eq!(fresh.read_frame().await, None, "a new session was refused");
    drop((writer, idle));
    let shutdown = server.shutdown().await;
    assert!(
        matches!(shutdown, Err(Error::Storage(StorageError::Poisoned(_)))),
        "{shutdown:?}"
    );
    let snapshots = std::fs::read_dir(&data)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("snapshot.")
        })
        .count();
    assert_eq!(snapshots, 0, "no snapshot of a tree ahead of its log");

    // Free the space and restart on the same directory: everything acknowledged is there.
    filled.free();
    let server = Server::start(config(&data))
        .await
        .expect("restarts once there is room");
    let reader = client(&server).await;
    filled.assert_all_there(&reader).await;
    drop(reader);
    server.shutdown().await.expect("clean shutdown");
    drop(File::open(&data).expect("data dir still there"));
}

/// A data directory on a disk without room for one preallocation step of the log (4 MiB) is refused at start
/// with the room needed and the room there is, not accepted to fail on the first write.
#[tokio::test]
async fn start_refuses_a_disk_without_room_for_the_log() {
    let fs = Tmpfs::mount("2m");
    let data = fs.path().join("data");
    match Server::start(config(&data)).await {
        Ok(server) => {
            let _ = server.shutdown().await;
            panic!("started on a 2 MiB disk that cannot hold the 4 MiB log preallocation");
        }
        Err(err) => {
            let message = err.to_string();
            match err {
                Error::Storage(StorageError::NoRoom {
                    dir,
                    needed,
                    available,
                }) => {
                    assert_eq!(dir, data);
                    assert_eq!(needed, 4 << 20);
                    assert!(available <= 2 << 20, "{available}");
                }
                other => panic!("expected NoRoom, got {other:?}"),
            }
            assert!(
                message.contains("not enough room for the transaction log")
                    && message.contains("needs 4194304 bytes (4.0 MiB) free"),
                "{message}"
            );
        }
    }
}
