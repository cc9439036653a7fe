//! Crash and recovery of `zklock serve` (a separate process): SIGKILL under concurrent write load,
//! kazoo's writes surviving SIGKILL, a torn log tail, and a corrupted record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

use crate::process::python_ok;
use crate::serve::{log_files, log_records, Serve, Started};
use crate::wire::Session;

const WRITERS: usize = 4;
/// Acknowledged writes to wait for before the kill.
const ACKS_BEFORE_KILL: usize = 300;

/// One writer: creates `/load/w<t>-<i>` until its connection dies, reporting each acknowledged create.
async fn writer(addr: std::net::SocketAddr, t: usize, acks: mpsc::UnboundedSender<(String, i64)>) {
    let mut s = Session::open(addr, 30_000).await;
    for i in 0..1_000_000 {
        let path = format!("/load/w{t}-{i}");
        let mut body = Vec::new();
        zklock_codec::jute::put_str(&mut body, &path);
        zklock_codec::jute::put_buffer(&mut body, Some(path.as_bytes()));
        zklock_codec::jute::put_i32(&mut body, 1);
        zklock_codec::jute::put_i32(&mut body, 31);
        zklock_codec::jute::put_str(&mut body, "world");
        zklock_codec::jute::put_str(&mut body, "anyone");
        zklock_codec::jute::put_i32(&mut body, 0);
        match s.call(1, &body).await {
            Some(reply) if reply.header.err == 0 => {
                let _ = acks.send((path, reply.header.zxid));
            }
            // The server died (or refused): this writer is done.
            _ => return,
        }
    }
}

fn get_data(path: &str) -> Vec<u8> {
    let mut body = Vec::new();
    zklock_codec::jute::put_str(&mut body, path);
    zklock_codec::jute::put_bool(&mut body, false);
    body
}

/// `zklock serve` on `dir`, and a session on it (30 s timeout).
async fn serve_with_session(dir: &Path) -> (Serve, Session) {
    let serve = Serve::up(dir).await;
    let session = Session::open(serve.addr, 30_000).await;
    (serve, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_under_write_load_keeps_acknowledged_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (serve, mut setup) = serve_with_session(dir.path()).await;
    assert_eq!(setup.create("/load", b"", 0).await, 0);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| tokio::spawn(writer(serve.addr, t, tx.clone())))
        .collect();
    drop(tx);
    let mut acked = HashMap::new();
    while acked.len() < ACKS_BEFORE_KILL {
        let (path, zxid) = tokio::time::timeout(crate::support::WAIT, rx.recv())
            .await
            .expect("writes are acknowledged")
            .expect("writers alive");
        acked.insert(path, zxid);
    }
    // Writers are still writing: the kill lands mid-load.
    serve.kill9().await;
    for w in writers {
        w.await.expect("writer task");
    }
    while let Ok((path, zxid)) = rx.try_recv() {
        acked.insert(path, zxid);
    }
    let max_acked = *acked.values().max().unwrap();

    let (serve, mut check) = serve_with_session(dir.path()).await;
    for path in acked.keys() {
        let reply = check.call(4, &get_data(path)).await.expect("reply");
        assert_eq!(reply.header.err, 0, "acknowledged {path} lost after kill -9");
        assert!(
            reply.header.zxid >= max_acked,
            "zxid went backwards: {} < {max_acked}",
            reply.header.zxid
        );
    }
    assert_eq!(check.create("/after", b"", 0).await, 0);
    let reply = check.exists("/after", false).await.unwrap();
    assert!(
        reply.header.zxid > max_acked,
        "new write's zxid {} not above {max_acked}",
        reply.header.zxid
    );
    eprintln!("kill -9 under load: {} acknowledged writes survived", acked.len());
    serve.kill9().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_writes_survive_kill9() {
    let dir = tempfile::tempdir().unwrap();
    // Writes, SIGKILL; then a fresh server on the same directory, which must have them all.
    for step in ["write", "verify"] {
        let serve = Serve::up(dir.path()).await;
        python_ok("kazoo_bulk.py", &[&serve.addr.to_string(), "/bulk", "500", step]).await;
        serve.kill9().await;
    }
}

/// Writes `/t/n0 .. /t/n<count-1>` one at a time (each acknowledged, so each is its own log batch),
/// then SIGKILLs the server. Returns the newest log file, its bytes and its records' spans.
async fn write_then_kill(dir: &Path, count: usize) -> (PathBuf, Vec<u8>, Vec<(usize, usize)>) {
    let (serve, mut s) = serve_with_session(dir).await;
    assert_eq!(s.create("/t", b"", 0).await, 0);
    for i in 0..count {
        assert_eq!(s.create(&format!("/t/n{i}"), b"data", 0).await, 0);
    }
    serve.kill9().await;
    let newest = log_files(dir).pop().expect("a log file");
    let bytes = std::fs::read(&newest).unwrap();
    let records = log_records(&bytes);
    (newest, bytes, records)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_log_tail_still_starts() {
    let dir = tempfile::tempdir().unwrap();
    let (newest, _, records) = write_then_kill(dir.path(), 30).await;
    let (_, last_end) = *records.last().expect("records");
    // Cut into the last record, as a crash in the middle of its write would.
    let file = std::fs::OpenOptions::new().write(true).open(&newest).unwrap();
    file.set_len((last_end - 5) as u64).unwrap();
    drop(file);

    let (serve, mut s) = serve_with_session(dir.path()).await;
    for i in 0..29 {
        let reply = s.call(4, &get_data(&format!("/t/n{i}"))).await.unwrap();
        assert_eq!(reply.header.err, 0, "/t/n{i} lost");
    }
    let last = s.call(4, &get_data("/t/n29")).await.unwrap();
    assert_eq!(last.header.err, -101, "the torn record was applied");
    // And it keeps logging after the cut.
    assert_eq!(s.create("/t/again", b"", 0).await, 0);
    serve.kill9().await;
    let (serve, mut s) = serve_with_session(dir.path()).await;
    assert_eq!(s.call(4, &get_data("/t/again")).await.unwrap().header.err, 0);
    serve.kill9().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_log_record_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let (newest, mut bytes, records) = write_then_kill(dir.path(), 30).await;
    assert!(records.len() >= 20, "{} records", records.len());
    let (start, end) = records[records.len() / 2];
    bytes[(start + end) / 2] ^= 0x40;
    std::fs::write(&newest, &bytes).unwrap();

    match Serve::start(dir.path()).await {
        Started::Up(serve) => {
            serve.kill9().await;
            panic!("zklock serve started on a log with a corrupted record in the middle");
        }
        Started::Exited(status, output) => {
            assert!(!status.success(), "exit status {status}");
            let lower = output.to_lowercase();
            assert!(
                lower.contains("corrupt")
                    && lower.contains(&newest.file_name().unwrap().to_string_lossy().to_lowercase()),
                "no clear message naming the damaged file:\n{output}"
            );
        }
    }
}

/// Sessions are durable: after SIGKILL and restart one can be re-attached with its id and password and
/// still owns its ephemeral; one that never comes back expires after its timeout (timers restart), and
/// its ephemeral vanishes with a notification.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_survive_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let (serve, mut kept) = serve_with_session(dir.path()).await;
    assert_eq!(kept.create("/kept", b"", 1).await, 0);
    let mut dropped = Session::open(serve.addr, 4_000).await;
    assert_eq!(dropped.timeout_ms, 4_000);
    assert_eq!(dropped.create("/dropped", b"", 1).await, 0);
    serve.kill9().await;

    let serve = Serve::up(dir.path()).await;
    let mut back = Session::attach(serve.addr, 30_000, kept.id, &kept.password)
        .await
        .expect("a session from before the crash re-attaches");
    assert_eq!(back.id, kept.id);
    let reply = back.exists("/kept", false).await.unwrap();
    assert_eq!(reply.header.err, 0, "its ephemeral survived");
    // The other session's timer restarted with the server; wait for its expiry through a watch.
    let reply = back.exists("/dropped", true).await.unwrap();
    assert_eq!(
        reply.header.err, 0,
        "the silent session's ephemeral survived the restart"
    );
    let mut pings = 0;
    while back.events.is_empty() && pings < 200 {
        assert!(back.call(11, &[]).await.is_some(), "connection stays up");
        pings += 1;
        if back.events.is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        }
    }
    assert_eq!(
        back.events,
        [(2, "/dropped".to_string())],
        "the silent session expired"
    );
    assert!(Session::attach(serve.addr, 4_000, dropped.id, &dropped.password)
        .await
        .is_none());
    assert!(back.close().await);
    let mut check = Session::open(serve.addr, 30_000).await;
    assert_eq!(check.exists("/kept", false).await.unwrap().header.err, -101);
    drop(kept.conn);
    serve.kill9().await;
}
