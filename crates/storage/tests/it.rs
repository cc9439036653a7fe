//! Integration tests of `zklock-storage` on the real filesystem (temporary directories).
//!
//! Byte-level tests build or damage log files by hand from the layout documented in the
//! crate docs, so they double as a check that the documentation matches the code.

use std::fs::{self, OpenOptions};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use tempfile::TempDir;
use zklock_storage::{Recovered, Storage, StorageError, StorageOptions};

/// Generous: the machine is small and shared.
const WAIT: Duration = Duration::from_secs(120);
const HEADER: u64 = 16;
const OVERHEAD: u64 = 28;

fn options(dir: &Path) -> StorageOptions {
    let mut o = StorageOptions::new(dir);
    // Small preallocation keeps the byte-level tests cheap; the zero-fill test uses more.
    o.preallocate_bytes = 4096;
    o
}

/// A new directory under `root` and the test options for it.
fn fresh(root: &Path) -> (TempDir, StorageOptions) {
    let tmp = TempDir::new_in(root).unwrap();
    let o = options(tmp.path());
    (tmp, o)
}

fn open(o: &StorageOptions) -> (Storage, Recovered) {
    Storage::open(o.clone()).expect("open")
}

fn payload(zxid: i64) -> Vec<u8> {
    format!("txn-{zxid}-{}", "x".repeat((zxid % 7) as usize)).into_bytes()
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    files_with_prefix(dir, "log.")
}

fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    files_with_prefix(dir, "snapshot.")
}

fn files_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Byte offset of each record in a single log file written with `payload(1..=n)`.
fn record_offsets(zxids: impl IntoIterator<Item = i64>) -> Vec<(u64, u64)> {
    let mut at = HEADER;
    zxids
        .into_iter()
        .map(|z| {
            let len = OVERHEAD + payload(z).len() as u64;
            let r = (at, at + len);
            at += len;
            r
        })
        .collect()
}

fn append_all_sync(storage: &Storage, zxids: impl IntoIterator<Item = i64>) {
    for z in zxids {
        storage.append_sync(z, payload(z)).expect("append");
    }
}

/// The content of the test snapshots: the one at `zxid` holds `tree@<zxid>`.
fn tree_at(zxid: i64) -> Vec<u8> {
    format!("tree@{zxid}").into_bytes()
}

/// Appends `zxids` to `s` (each waiting for its fsync) and snapshots at the last of them.
fn append_then_snapshot(s: &Storage, zxids: RangeInclusive<i64>) {
    append_all_sync(s, zxids.clone());
    s.save_snapshot(*zxids.end(), &tree_at(*zxids.end())).unwrap();
}

/// Opens the storage `o` describes, appends `zxids` (each waiting for its fsync) and closes it.
fn write_and_close(o: &StorageOptions, zxids: impl IntoIterator<Item = i64>) {
    let (s, _) = open(o);
    append_all_sync(&s, zxids);
    s.close().unwrap();
}

/// Appends `zxid` to `s`, closes it and opens it again (with `o`): the transactions found.
fn append_and_reopen(s: Storage, o: &StorageOptions, zxid: i64) -> Vec<(i64, Vec<u8>)> {
    s.append_sync(zxid, payload(zxid)).unwrap();
    s.close().unwrap();
    open(o).1.txns
}

fn expected(zxids: impl IntoIterator<Item = i64>) -> Vec<(i64, Vec<u8>)> {
    zxids.into_iter().map(|z| (z, payload(z))).collect()
}

fn set_len(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn patch(path: &Path, at: u64, bytes: &[u8]) {
    let mut data = fs::read(path).unwrap();
    data[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    fs::write(path, data).unwrap();
}

/// Independent encoder of the documented record layout.
fn encode(zxid: i64, batch_start: u64, payload: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&0x5A4B_5452u32.to_be_bytes());
    r.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    r.extend_from_slice(&zxid.to_be_bytes());
    r.extend_from_slice(&batch_start.to_be_bytes());
    r.extend_from_slice(payload);
    let crc = crc32c::crc32c(&r);
    r.extend_from_slice(&crc.to_be_bytes());
    r
}

fn encoded_header() -> Vec<u8> {
    let mut h = b"ZKLKLOG\0".to_vec();
    h.extend_from_slice(&1u32.to_be_bytes());
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_be_bytes());
    h
}

fn append_and_reopen_round_trip(root: &Path) {
    let (tmp, o) = fresh(root);
    let (s, rec) = open(&o);
    assert_eq!(rec, Recovered::default());
    append_all_sync(&s, 1..=20);
    s.close().unwrap();

    let (s, rec) = open(&o);
    assert_eq!(rec.snapshot, None);
    assert_eq!(rec.txns, expected(1..=20));
    assert_eq!(rec.last_zxid, 20);
    // Appending continues in the same file after the recovered data.
    append_all_sync(&s, 21..=25);
    drop(s);
    let (_s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=25));
    assert_eq!(log_files(tmp.path()).len(), 1);
    assert!(log_files(tmp.path())[0].ends_with("log.0000000000000001"));
}

fn group_commit_with_many_concurrent_writers(root: &Path) {
    const THREADS: usize = 32;
    const PER_THREAD: usize = 40;
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    // The server assigns zxids and appends under one lock, so queue order = zxid order.
    let next_zxid = Arc::new(Mutex::new(0i64));
    let fired = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel::<Result<(), StorageError>>();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            let (s, next_zxid, fired, tx) = (s.clone(), next_zxid.clone(), fired.clone(), tx.clone());
            scope.spawn(move || {
                for _ in 0..PER_THREAD {
                    let (done_tx, done_rx) = mpsc::channel();
                    {
                        let mut next = next_zxid.lock().unwrap();
                        *next += 1;
                        let (fired, tx) = (fired.clone(), tx.clone());
                        s.append(
                            *next,
                            payload(*next),
                            Box::new(move |r| {
                                fired.fetch_add(1, Ordering::SeqCst);
                                let _ = tx.send(r.clone());
                                let _ = done_tx.send(r);
                            }),
                        );
                    }
                    // Each client waits for its reply, like a real connection would.
                    done_rx.recv_timeout(WAIT).expect("callback").expect("durable");
                }
            });
        }
    });
    drop(tx);
    let results: Vec<_> = rx.iter().collect();
    assert_eq!(results.len(), THREADS * PER_THREAD);
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(fired.load(Ordering::SeqCst), THREADS * PER_THREAD);
    s.close().unwrap();

    let (_s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=(THREADS * PER_THREAD) as i64));
}

fn callbacks_run_in_append_order(root: &Path) {
    let tmp = TempDir::new_in(root).unwrap();
    let (s, _) = open(&options(tmp.path()));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    for z in 1..=200 {
        let (order, tx) = (order.clone(), tx.clone());
        s.append(
            z,
            payload(z),
            Box::new(move |r| {
                r.unwrap();
                order.lock().unwrap().push(z);
                let _ = tx.send(());
            }),
        );
    }
    for _ in 1..=200 {
        rx.recv_timeout(WAIT).unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (1..=200).collect::<Vec<_>>());
}

fn non_increasing_zxid_fails_only_that_record(root: &Path) {
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    s.append_sync(5, payload(5)).unwrap();
    let err = s.append_sync(5, payload(5)).unwrap_err();
    assert!(
        matches!(err, StorageError::ZxidNotIncreasing { zxid: 5, last: 5 }),
        "{err}"
    );
    assert!(matches!(
        s.append_sync(0, vec![]),
        Err(StorageError::ZxidNotIncreasing { .. })
    ));
    s.append_sync(6, payload(6)).unwrap();
    s.close().unwrap();
    // The recovered last zxid is enforced after a restart too.
    let (s, rec) = open(&o);
    assert_eq!(rec.txns, expected([5, 6]));
    assert!(matches!(
        s.append_sync(6, vec![]),
        Err(StorageError::ZxidNotIncreasing { .. })
    ));
    s.append_sync(7, payload(7)).unwrap();
}

fn append_after_close_reports_closed(root: &Path) {
    let tmp = TempDir::new_in(root).unwrap();
    let (s, _) = open(&options(tmp.path()));
    let other = s.clone();
    s.close().unwrap();
    assert!(matches!(other.append_sync(1, vec![]), Err(StorageError::Closed)));
}

fn torn_tail_at_every_offset_opens_with_the_prefix(root: &Path) {
    let (tmp, o) = fresh(root);
    write_and_close(&o, 1..=3);
    let log = log_files(tmp.path()).remove(0);
    let pristine = fs::read(&log).unwrap();
    let (start, end) = record_offsets(1..=3)[2];

    for cut in start..end {
        fs::write(&log, &pristine[..cut as usize]).unwrap();
        let (s, rec) = open(&o);
        assert_eq!(rec.txns, expected(1..=2), "cut at {cut}");
        assert_eq!(fs::metadata(&log).unwrap().len(), start, "torn bytes removed");
        // New appends follow the good data and survive the next recovery.
        s.append_sync(3, b"again".to_vec()).unwrap();
        s.close().unwrap();
        let (s, rec) = open(&o);
        assert_eq!(rec.txns.len(), 3, "cut at {cut}");
        assert_eq!(rec.txns[2], (3, b"again".to_vec()));
        s.close().unwrap();
    }
}

fn zero_filled_tail_is_a_clean_end(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.preallocate_bytes = 1 << 20;
    write_and_close(&o, 1..=4);
    let log = log_files(tmp.path()).remove(0);
    assert_eq!(fs::metadata(&log).unwrap().len(), 1 << 20, "preallocated");
    // The last record's blocks never made it to disk: zeros where it should be.
    let (start, end) = record_offsets(1..=4)[3];
    patch(&log, start, &vec![0; (end - start) as usize]);
    let (s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=3));
    assert_eq!(rec.last_zxid, 3);
    assert_eq!(append_and_reopen(s, &o, 4), expected(1..=4));
}

fn bit_flip_in_a_middle_record_is_reported_with_file_and_offset(root: &Path) {
    let (tmp, o) = fresh(root);
    write_and_close(&o, 1..=5);
    let log = log_files(tmp.path()).remove(0);
    let (start, end) = record_offsets(1..=5)[2];
    let mut data = fs::read(&log).unwrap();
    data[((start + end) / 2) as usize] ^= 0x04;
    fs::write(&log, &data).unwrap();

    match Storage::open(o.clone()) {
        Err(StorageError::CorruptLog { file, offset, reason }) => {
            assert_eq!(file, log);
            assert_eq!(offset, start);
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    let message = Storage::open(o.clone()).unwrap_err().to_string();
    assert!(
        message.contains(&log.display().to_string()) && message.contains(&start.to_string()),
        "{message}"
    );

    let mut truncating = o.clone();
    truncating.truncate_corrupt_tail = true;
    let (s, rec) = open(&truncating);
    assert_eq!(rec.txns, expected(1..=2));
    // Truncation is permanent: a strict open now succeeds.
    assert_eq!(append_and_reopen(s, &o, 3), expected(1..=3));
}

fn damage_in_an_earlier_log_file_is_corruption_even_at_its_end(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_roll_bytes = 200;
    write_and_close(&o, 1..=30);
    let logs = log_files(tmp.path());
    assert!(logs.len() > 2, "rolled into {} files", logs.len());
    // Cut the first file in the middle of its last record.
    let len = fs::metadata(&logs[0]).unwrap().len();
    set_len(&logs[0], len - 3);
    let err = Storage::open(o.clone()).unwrap_err();
    assert!(
        matches!(&err, StorageError::CorruptLog { file, .. } if *file == logs[0]),
        "{err}"
    );

    o.truncate_corrupt_tail = true;
    let (_s, rec) = open(&o);
    let n = rec.txns.len() as i64;
    assert!(n > 0 && n < 30);
    assert_eq!(rec.txns, expected(1..=n));
    assert_eq!(log_files(tmp.path()), logs[..1].to_vec(), "later files removed");
}

fn rolled_files_are_named_by_their_first_zxid(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_roll_bytes = 300;
    write_and_close(&o, 1..=50);
    let logs = log_files(tmp.path());
    assert!(logs.len() > 3);
    let (_s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=50));
    // Each file's name is the zxid of its first record.
    for log in &logs {
        let data = fs::read(log).unwrap();
        let zxid = i64::from_be_bytes(data[24..32].try_into().unwrap());
        let name = log.file_name().unwrap().to_str().unwrap();
        assert_eq!(name, format!("log.{zxid:016x}"));
    }
}

fn torn_final_batch_with_out_of_order_writeback_is_a_clean_end(root: &Path) {
    // Batch A = [1], batch B = [2, 3, 4]; record 3 never reached the disk but 4 did.
    let (tmp, o) = fresh(root);
    let mut file = encoded_header();
    file.extend(encode(1, HEADER, &payload(1)));
    let b = file.len() as u64;
    file.extend(encode(2, b, &payload(2)));
    let hole = file.len();
    file.extend(encode(3, b, &payload(3)));
    let hole_end = file.len();
    file.extend(encode(4, b, &payload(4)));
    file[hole..hole_end].fill(0);
    let log = tmp.path().join("log.0000000000000001");
    fs::write(&log, &file).unwrap();

    let (s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=2));
    assert_eq!(fs::metadata(&log).unwrap().len(), hole as u64);
    assert_eq!(append_and_reopen(s, &o, 3), expected(1..=3));
}

fn damage_followed_by_a_later_batch_is_corruption(root: &Path) {
    // Batches [1], [2], [3]: each was acknowledged before the next was written.
    let (tmp, o) = fresh(root);
    let mut file = encoded_header();
    let mut starts = Vec::new();
    for z in 1..=3 {
        let at = file.len() as u64;
        starts.push(at);
        file.extend(encode(z, at, &payload(z)));
    }
    file[starts[1] as usize + 30] ^= 1;
    let log = tmp.path().join("log.0000000000000001");
    fs::write(&log, &file).unwrap();
    match Storage::open(o) {
        Err(StorageError::CorruptLog { offset, reason, .. }) => {
            assert_eq!(offset, starts[1]);
            assert!(reason.contains(&format!("offset {}", starts[2])), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

fn out_of_order_zxids_on_disk_are_rejected(root: &Path) {
    let tmp = TempDir::new_in(root).unwrap();
    let mut file = encoded_header();
    for z in [1, 3, 2] {
        let at = file.len() as u64;
        file.extend(encode(z, at, &payload(z)));
    }
    let log = tmp.path().join("log.0000000000000001");
    fs::write(&log, &file).unwrap();
    let err = Storage::open(options(tmp.path())).unwrap_err();
    assert!(err.to_string().contains("does not follow"), "{err}");
}

fn torn_header_of_the_newest_log_file_is_removed(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_roll_bytes = 1; // every batch starts a new file
    write_and_close(&o, 1..=3);
    assert_eq!(log_files(tmp.path()).len(), 3);
    // A crash while creating the next file: only half of its header exists.
    let newer = tmp.path().join("log.0000000000000004");
    fs::write(&newer, &encoded_header()[..7]).unwrap();
    let (s, rec) = open(&o);
    assert_eq!(rec.txns, expected(1..=3));
    assert!(!newer.exists());
    append_all_sync(&s, 4..=5);
    s.close().unwrap();
    assert_eq!(open(&o).1.txns, expected(1..=5));
    assert_eq!(log_files(tmp.path()).len(), 5);
}

fn snapshot_plus_later_txns_are_recovered(root: &Path) {
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    append_then_snapshot(&s, 1..=10);
    append_all_sync(&s, 11..=15);
    s.close().unwrap();
    let (_s, rec) = open(&o);
    assert_eq!(rec.snapshot, Some((10, tree_at(10))));
    assert_eq!(rec.txns, expected(11..=15));
    assert_eq!(rec.last_zxid, 15);
}

fn snapshot_ahead_of_the_log_sets_last_zxid(root: &Path) {
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    append_all_sync(&s, 1..=3);
    s.save_snapshot(7, &tree_at(7)).unwrap();
    assert!(matches!(
        s.save_snapshot(6, b"old"),
        Err(StorageError::SnapshotTooOld { .. })
    ));
    s.close().unwrap();
    let (s, rec) = open(&o);
    assert_eq!(rec.snapshot, Some((7, tree_at(7))));
    assert!(rec.txns.is_empty());
    assert_eq!(rec.last_zxid, 7);
    assert!(s.append_sync(7, vec![]).is_err());
    s.append_sync(8, payload(8)).unwrap();
}

fn snapshot_removes_files_no_longer_needed(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_roll_bytes = 300;
    o.snapshots_to_keep = 2;
    let (s, _) = open(&o);
    for round in 1..=4i64 {
        append_then_snapshot(&s, (round - 1) * 25 + 1..=round * 25);
    }
    append_all_sync(&s, 101..=105);
    let snaps = snapshot_files(tmp.path());
    assert_eq!(snaps.len(), 2, "{snaps:?}");
    assert!(snaps[0].ends_with(format!("snapshot.{:016x}", 75)));
    // Every remaining log file except the first holds only txns newer than 75, and the
    // first one starts at or before 76.
    let logs = log_files(tmp.path());
    let first: i64 = i64::from_str_radix(&logs[0].file_name().unwrap().to_str().unwrap()[4..], 16).unwrap();
    assert!(first <= 76 && first > 25, "first log {first:#x}");
    s.close().unwrap();

    let (_s, rec) = open(&o);
    assert_eq!(rec.snapshot, Some((100, tree_at(100))));
    assert_eq!(rec.txns, expected(101..=105));
}

fn bad_newest_snapshot_falls_back_to_an_older_one(root: &Path) {
    let (tmp, o) = fresh(root);
    let (s, _) = open(&o);
    append_then_snapshot(&s, 1..=5);
    append_then_snapshot(&s, 6..=9);
    append_all_sync(&s, 10..=12);
    s.close().unwrap();
    let newest = snapshot_files(tmp.path()).pop().unwrap();
    let mut data = fs::read(&newest).unwrap();
    data[35] ^= 0xff;
    fs::write(&newest, data).unwrap();
    // A leftover temp file from an interrupted snapshot is ignored and removed.
    let tmp_file = tmp.path().join("snapshot.000000000000000c.tmp");
    fs::write(&tmp_file, b"partial").unwrap();

    let (s, rec) = open(&o);
    assert_eq!(rec.snapshot, Some((5, tree_at(5))));
    assert_eq!(rec.txns, expected(6..=12));
    assert!(!tmp_file.exists());
    s.close().unwrap();

    // With every snapshot damaged, recovery refuses rather than guessing.
    let oldest = snapshot_files(tmp.path()).remove(0);
    set_len(&oldest, 10);
    let err = Storage::open(o).unwrap_err();
    assert!(
        matches!(err, StorageError::NoValidSnapshot { count: 2, .. }),
        "{err}"
    );
}

fn separate_log_dir_is_used(root: &Path) {
    let tmp = TempDir::new_in(root).unwrap();
    let mut o = options(&tmp.path().join("snap"));
    o.log_dir = Some(tmp.path().join("logs"));
    let (s, _) = open(&o);
    append_all_sync(&s, 1..=3);
    s.save_snapshot(2, &tree_at(2)).unwrap();
    s.close().unwrap();
    assert_eq!(log_files(&tmp.path().join("logs")).len(), 1);
    assert_eq!(snapshot_files(&tmp.path().join("snap")).len(), 1);
    let (_s, rec) = open(&o);
    assert_eq!(rec.snapshot, Some((2, tree_at(2))));
    assert_eq!(rec.txns, expected([3]));
}

fn snapshots_do_not_block_appends(root: &Path) {
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    let blob = vec![7u8; 8 << 20];
    std::thread::scope(|scope| {
        let s2 = s.clone();
        let blob = &blob;
        let snap = scope.spawn(move || s2.save_snapshot(0, blob));
        append_all_sync(&s, 1..=50);
        snap.join().unwrap().unwrap();
    });
    s.close().unwrap();
    let (_s, rec) = open(&o);
    assert_eq!(rec.snapshot.map(|(z, b)| (z, b.len())), Some((0, 8 << 20)));
    assert_eq!(rec.txns, expected(1..=50));
}

fn invalid_options_are_rejected(root: &Path) {
    let (_tmp, mut o) = fresh(root);
    o.max_batch = 0;
    assert!(matches!(Storage::open(o), Err(StorageError::InvalidOptions(_))));
}

fn failed_write_poisons_the_log(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_roll_bytes = 1; // every batch starts a new file
    let (s, _) = open(&o);
    s.append_sync(1, payload(1)).unwrap();
    // Make creating the next log file fail: something else already has its name.
    let blocker = tmp.path().join("log.0000000000000002");
    fs::create_dir(&blocker).unwrap();
    let err = s.append_sync(2, payload(2)).unwrap_err();
    assert!(
        matches!(err, StorageError::Io { ref path, .. } if *path == blocker),
        "{err}"
    );
    // Everything after a failed write is refused, even if it could succeed now.
    fs::remove_dir(&blocker).unwrap();
    let err = s.append_sync(3, payload(3)).unwrap_err();
    assert!(matches!(err, StorageError::Poisoned(_)), "{err}");
    assert!(matches!(s.close(), Err(StorageError::Poisoned(_))));
    // A restart recovers the acknowledged data and the log works again.
    let (s, rec) = open(&o);
    assert_eq!(rec.txns, expected([1]));
    s.append_sync(2, payload(2)).unwrap();
}

fn dropping_the_last_handle_inside_a_callback_does_not_deadlock(root: &Path) {
    let (_tmp, o) = fresh(root);
    let (s, _) = open(&o);
    let last = s.clone();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    s.append(
        1,
        payload(1),
        Box::new(move |r| {
            // Wait until the test has dropped its handle so this one is the last.
            go_rx.recv_timeout(WAIT).unwrap();
            drop(last);
            let _ = done_tx.send(r);
        }),
    );
    drop(s);
    go_tx.send(()).unwrap();
    done_rx.recv_timeout(WAIT).unwrap().unwrap();
    assert_eq!(open(&o).1.txns, expected([1]));
}

/// Regression: a newest log file holding only its header (cut right after it) used to be
/// reopened for appending, so its first record no longer matched its name and the next open
/// failed with "first record has zxid 0x2, but the file name says 0x1".
fn header_only_newest_log_file_is_not_reused(root: &Path) {
    let (tmp, o) = fresh(root);
    write_and_close(&o, 1..=1);
    let log = log_files(tmp.path()).remove(0);
    set_len(&log, HEADER);
    let (s, rec) = open(&o);
    assert!(rec.txns.is_empty());
    assert!(!log.exists());
    assert_eq!(append_and_reopen(s, &o, 2), expected([2]));
}

/// A log directory without room for one preallocation step is refused at open, with the numbers,
/// instead of failing the first append.
fn open_refuses_a_log_dir_without_room_for_one_preallocation_step(root: &Path) {
    let (tmp, mut o) = fresh(root);
    o.log_dir = Some(tmp.path().join("log"));
    o.preallocate_bytes = 1 << 60; // no file system here has an exbibyte free
    o.log_roll_bytes = 1 << 60;
    match Storage::open(o.clone()) {
        Err(StorageError::NoRoom {
            ref dir,
            needed,
            available,
        }) => {
            assert_eq!(dir, &tmp.path().join("log"));
            assert!(needed >= 1 << 60 && available < needed, "{needed} {available}");
        }
        other => panic!("expected NoRoom, got {other:?}"),
    }
    let err = Storage::open(o.clone()).unwrap_err().to_string();
    assert!(
        err.contains("not enough room") && err.contains("needs 1152921504606846976 bytes"),
        "{err}"
    );
    // The step is capped at the roll size: a small one fits.
    o.log_roll_bytes = 4096;
    write_and_close(&o, 1..=3);
}

/// A snapshot that cannot be completed does not leave its temporary file behind (on a full disk that
/// file would hold the space the log needs until the next start).
fn failed_snapshot_leaves_no_temporary_file(root: &Path) {
    let (tmp, o) = fresh(root);
    let (s, _) = open(&o);
    append_all_sync(&s, 1..=3);
    // The rename onto the final name fails: a non-empty directory holds it.
    let blocker = tmp.path().join("snapshot.0000000000000003");
    fs::create_dir(&blocker).unwrap();
    fs::write(blocker.join("x"), b"x").unwrap();
    assert!(s.save_snapshot(3, b"tree").is_err());
    let left: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    fs::remove_dir_all(&blocker).unwrap();
    s.close().unwrap();
}

/// Runs each named test body once on the disk-backed temp directory and once on tmpfs
/// (`/dev/shm`), whose fsync and rename behave differently from a journaling filesystem.
macro_rules! on_both_filesystems {
    ($($name:ident),* $(,)?) => {
        mod disk {
            $( #[test] fn $name() { super::$name(&std::env::temp_dir()) } )*
        }
        mod tmpfs {
            $( #[test] fn $name() { super::$name(&super::tmpfs_root()) } )*
        }
    };
}

/// `/dev/shm` where it exists (Linux); elsewhere the normal temp directory.
fn tmpfs_root() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

on_both_filesystems!(
    open_refuses_a_log_dir_without_room_for_one_preallocation_step,
    failed_snapshot_leaves_no_temporary_file,
    header_only_newest_log_file_is_not_reused,
    failed_write_poisons_the_log,
    dropping_the_last_handle_inside_a_callback_does_not_deadlock,
    append_and_reopen_round_trip,
    group_commit_with_many_concurrent_writers,
    callbacks_run_in_append_order,
    non_increasing_zxid_fails_only_that_record,
    append_after_close_reports_closed,
    torn_tail_at_every_offset_opens_with_the_prefix,
    zero_filled_tail_is_a_clean_end,
    bit_flip_in_a_middle_record_is_reported_with_file_and_offset,
    damage_in_an_earlier_log_file_is_corruption_even_at_its_end,
    rolled_files_are_named_by_their_first_zxid,
    torn_final_batch_with_out_of_order_writeback_is_a_clean_end,
    damage_followed_by_a_later_batch_is_corruption,
    out_of_order_zxids_on_disk_are_rejected,
    torn_header_of_the_newest_log_file_is_removed,
    snapshot_plus_later_txns_are_recovered,
    snapshot_ahead_of_the_log_sets_last_zxid,
    snapshot_removes_files_no_longer_needed,
    bad_newest_snapshot_falls_back_to_an_older_one,
    separate_log_dir_is_used,
    snapshots_do_not_block_appends,
    invalid_options_are_rejected,
);

#[test]
#[ignore = "throughput measurement; run with --release -- --ignored --nocapture"]
fn append_throughput() {
    for writers in [1usize, 32] {
        let tmp = TempDir::new().unwrap();
        let (s, _) = open(&StorageOptions::new(tmp.path()));
        let total = if writers == 1 { 2_000 } else { 20_000 };
        let per = total / writers;
        let next = Arc::new(Mutex::new(0i64));
        let started = std::time::Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..writers {
                let (s, next) = (s.clone(), next.clone());
                scope.spawn(move || {
                    for _ in 0..per {
                        let (tx, rx) = mpsc::channel();
                        {
                            let mut n = next.lock().unwrap();
                            *n += 1;
                            s.append(
                                *n,
                                vec![0x5a; 100],
                                Box::new(move |r| {
                                    let _ = tx.send(r);
                                }),
                            );
                        }
                        rx.recv_timeout(WAIT).unwrap().unwrap();
                    }
                });
            }
        });
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{writers:>2} writer(s): {} appends in {secs:.2}s = {:.0} appends/s (fsync on)",
            per * writers,
            (per * writers) as f64 / secs
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any truncation point leaves exactly the records that end before it.
    #[test]
    fn random_records_and_truncation(
        sizes in proptest::collection::vec(0usize..300, 1..40),
        gaps in proptest::collection::vec(1i64..5, 40),
        cut_fraction in 0.0f64..=1.0,
    ) {
        let tmp = TempDir::new().unwrap();
        let mut o = options(tmp.path());
        o.fsync = false; // same code paths, far fewer disk flushes across many cases
        let (s, _) = open(&o);
        let mut zxid = 0;
        let mut records = Vec::new();
        let (tx, rx) = mpsc::channel();
        for (i, size) in sizes.iter().enumerate() {
            zxid += gaps[i];
            let data: Vec<u8> = (0..*size).map(|b| (b as i64 * 31 + zxid) as u8).collect();
            records.push((zxid, data.clone()));
            let tx = tx.clone();
            // Asynchronous appends so that batches of several records occur.
            s.append(zxid, data, Box::new(move |r| { let _ = tx.send(r); }));
        }
        for _ in &records {
            rx.recv_timeout(WAIT).unwrap().unwrap();
        }
        s.close().unwrap();
        let log = log_files(tmp.path()).remove(0);
        let mut ends = Vec::new();
        let mut at = HEADER;
        for (_, data) in &records {
            at += OVERHEAD + data.len() as u64;
            ends.push(at);
        }
        let cut = (cut_fraction * at as f64) as u64;
        set_len(&log, cut);

        let (s, rec) = open(&o);
        let survivors = ends.iter().filter(|end| **end <= cut).count();
        prop_assert_eq!(&rec.txns, &records[..survivors].to_vec());
        // The log accepts the next record and keeps everything across another restart.
        s.append_sync(zxid + 1, b"next".to_vec()).unwrap();
        s.close().unwrap();
        let (_s, rec) = open(&o);
        prop_assert_eq!(rec.txns.len(), survivors + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// One flipped bit in record `k` (each record its own batch): the last record reads as a
    /// torn tail; any earlier one is corruption reported at that record's offset, or a
    /// truncation to the records before it when `truncate_corrupt_tail` is set.
    #[test]
    fn random_bit_flip(
        sizes in proptest::collection::vec(0usize..200, 1..20),
        pick in any::<proptest::sample::Index>(),
        bit_pick in any::<proptest::sample::Index>(),
    ) {
        let tmp = TempDir::new().unwrap();
        let mut o = options(tmp.path());
        o.fsync = false;
        let (s, _) = open(&o);
        let records: Vec<(i64, Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, size)| (i as i64 + 1, vec![i as u8; *size]))
            .collect();
        for (zxid, data) in &records {
            s.append_sync(*zxid, data.clone()).unwrap();
        }
        s.close().unwrap();
        let mut starts = Vec::new();
        let mut at = HEADER;
        for (_, data) in &records {
            starts.push(at);
            at += OVERHEAD + data.len() as u64;
        }
        let k = pick.index(records.len());
        let len = OVERHEAD + records[k].1.len() as u64;
        let bit = bit_pick.index(len as usize * 8) as u64;
        let log = log_files(tmp.path()).remove(0);
        let mut data = fs::read(&log).unwrap();
        data[(starts[k] + bit / 8) as usize] ^= 1 << (bit % 8);
        fs::write(&log, &data).unwrap();

        let result = Storage::open(o.clone());
        if k + 1 == records.len() {
            let (_s, rec) = result.unwrap();
            prop_assert_eq!(&rec.txns, &records[..k].to_vec());
        } else {
            match result {
                Err(StorageError::CorruptLog { file, offset, .. }) => {
                    prop_assert_eq!(file, log);
                    prop_assert_eq!(offset, starts[k]);
                }
                other => prop_assert!(false, "expected corruption, got {:?}", other.map(|(_, r)| r)),
            }
            o.truncate_corrupt_tail = true;
            let (_s, rec) = open(&o);
            prop_assert_eq!(&rec.txns, &records[..k].to_vec());
        }
    }
}

/// One storage per directory: a second `open` of a directory in use fails with `InUse` (naming the holder's
/// process) and touches nothing; once the first is closed, or dropped, the directory opens again.
#[test]
fn a_directory_in_use_is_refused() {
    let tmp = TempDir::new().unwrap();
    let o = options(tmp.path());
    let (s, _) = open(&o);
    append_all_sync(&s, 1..=3);
    match Storage::open(o.clone()) {
        Err(StorageError::InUse { dir, holder, .. }) => {
            assert_eq!(dir, tmp.path());
            assert_eq!(holder, Some(std::process::id()));
        }
        other => panic!("expected InUse, got {:?}", other.map(|(_, r)| r)),
    }
    // A separate log directory is locked too.
    let mut other = options(&tmp.path().join("other"));
    other.log_dir = Some(tmp.path().to_path_buf());
    assert!(matches!(Storage::open(other), Err(StorageError::InUse { .. })));
    s.close().unwrap();
    let (s, rec) = open(&o);
    assert_eq!(rec.last_zxid, 3, "the refused open changed nothing");
    drop(s);
    let (_s, _) = open(&o);
}

/// Directories the storage creates are 0700 and its files 0600, whatever the umask let through.
#[test]
fn directories_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path().join("new/data");
    let (s, _) = open(&options(&dir));
    append_all_sync(&s, 1..=3);
    s.save_snapshot(3, b"state").unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&tmp.path().join("new")), 0o700, "parents it created too");
    for file in fs::read_dir(&dir).unwrap() {
        let path = file.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    assert_eq!(log_files(&dir).len() + snapshot_files(&dir).len(), 2);
    assert!(dir.join(zklock_storage::LOCK_FILE).exists());
}

/// A data directory that is a file is "not a directory", before anything is written.
#[test]
fn a_file_is_not_a_directory() {
    let tmp = TempDir::new().unwrap();
    let file = tmp.path().join("data");
    fs::write(&file, b"not a directory").unwrap();
    match Storage::open(options(&file)) {
        Err(e @ StorageError::NotADirectory { .. }) => {
            assert_eq!(e.to_string(), format!("{} is not a directory", file.display()));
        }
        other => panic!("expected NotADirectory, got {:?}", other.map(|(_, r)| r)),
    }
    let below = file.join("sub");
    assert!(matches!(
        Storage::open(options(&below)),
        Err(StorageError::NotADirectory { .. })
    ));
    assert_eq!(fs::read(&file).unwrap(), b"not a directory");
}
