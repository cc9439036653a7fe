//! `zklock serve` on a full disk (a real, small tmpfs mounted for the test; needs root, and fails — never
//! skips — without it): when the transaction log cannot be written the process exits 1 with one clear message
//! naming the data directory and the OS error, its clients are disconnected, and a restart once there is room
//! has every acknowledged write. A disk without room for the log's preallocation is a start-up error. (The
//! server's in-process behaviour — `ruok`, `mntr`, refused sessions — is tested in
//! `crates/server/tests/it/disk_full.rs`.)

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use zklock_testkit::Tmpfs;
use zookeeper_client as zk;

use crate::logs::Serve;
use crate::support::*;

/// `ruok`'s answer, or "" when the connection is refused or closed without one.
async fn ruok(addr: SocketAddr) -> String {
    timeout(EVENTUALLY, async {
        let Ok(mut s) = TcpStream::connect(addr).await else {
            return String::new();
        };
        let _ = s.write_all(b"ruok").await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        text(&out)
    })
    .await
    .expect("ruok answered or refused in time")
}

/// Whether a new session gets a ConnectResponse (a hand-made ConnectRequest: protocol 0, zxid 0, 30 s timeout,
/// session 0, 16-byte zero password).
async fn session_accepted(addr: SocketAddr) -> bool {
    timeout(EVENTUALLY, async {
        let Ok(mut s) = TcpStream::connect(addr).await else {
            return false;
        };
        let mut body = Vec::new();
        body.extend_from_slice(&0i32.to_be_bytes());
        body.extend_from_slice(&0i64.to_be_bytes());
        body.extend_from_slice(&30_000i32.to_be_bytes());
        body.extend_from_slice(&0i64.to_be_bytes());
        body.extend_from_slice(&16i32.to_be_bytes());
        body.extend_from_slice(&[0; 16]);
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        if s.write_all(&frame).await.is_err() {
            return false;
        }
        let mut len = [0u8; 4];
        s.read_exact(&mut len).await.is_ok()
    })
    .await
    .expect("session accepted or refused in time")
}

/// The disk fills under acknowledged writes: `zklock serve` exits 74 with one clear line (data directory, OS
/// error, what to do), its clients are disconnected, nothing claims health any more; after the space is freed a
/// restart on the same directory has every acknowledged write, and exits 0 on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exits_74_on_a_full_disk_and_keeps_every_acknowledged_write() {
    let fs = Tmpfs::mount("12m");
    let data = fs.path().join("data");
    let serve = Serve::on_data_dir(&data).await;
    let addr = serve.addr;
    assert_eq!(ruok(addr).await, "imok");
    let hosts = addr.to_string();
    let writer = client(&hosts).await;
    let idle = client(&hosts).await;
    let mut idle_state = idle.state_watcher();

    let filled = fs.fill_under_writes(&writer, EVENTUALLY).await;

    let (code, stderr) = serve.exited().await;
    assert_eq!(code, Some(exit::LOG_UNWRITABLE), "exit status; stderr:\n{stderr}");
    let expected = format!(
        "zklock serve: cannot write the transaction log in {}: No space left on device (os error 28); stopped \
         serving; free space and restart",
        data.display()
    );
    assert_eq!(
        stderr.lines().last(),
        Some(expected.as_str()),
        "the last line says why; stderr:\n{stderr}"
    );
    assert_eq!(
        stderr.matches("zklock serve:").count(),
        1,
        "one message; stderr:\n{stderr}"
    );
    timeout(EVENTUALLY, async {
        while idle_state.peek_state() == zk::SessionState::SyncConnected {
            idle_state.changed().await;
        }
    })
    .await
    .expect("the idle session was disconnected");
    assert_ne!(ruok(addr).await, "imok");
    assert!(!session_accepted(addr).await, "a new session was accepted");
    drop((writer, idle));

    // Free the space and restart on the same directory: everything acknowledged is there.
    filled.free();
    let serve = Serve::on_data_dir(&data).await;
    let reader = client(&serve.addr.to_string()).await;
    filled.assert_all_there(&reader).await;
    drop(reader);
    let (code, stderr) = serve.stop().await;
    assert_eq!(code, Some(0), "clean shutdown; stderr:\n{stderr}");
}

/// On a disk without room for one preallocation step of the log (4 MiB) `zklock serve` does not start: it exits
/// 74 with the room needed and the room there is.
#[tokio::test]
async fn serve_refuses_to_start_without_room_for_the_log() {
    let fs = Tmpfs::mount("2m");
    let data = fs.path().join("data");
    let out = output(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
    ])
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::LOG_UNWRITABLE), "stderr:\n{stderr}");
    // 2 MiB less the one 4 KiB block of the lock file (`zklock.lock`, taken before the room is checked).
    let expected = format!(
        "zklock serve: not enough room for the transaction log in {}: it needs 4194304 bytes (4.0 MiB) free (one \
         preallocation step), the file system has 2093056 bytes (2.0 MiB) available; free space or use a bigger \
         disk",
        data.display()
    );
    assert_eq!(
        stderr.lines().last(),
        Some(expected.as_str()),
        "stderr:\n{stderr}"
    );
    assert!(!text(&out.stdout).contains("listening"), "it never served");
}
