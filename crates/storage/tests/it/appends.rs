//! Appending: round trips, group commit, callback order, refused zxids, a closed or poisoned log, and the
//! throughput measurement.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use tempfile::TempDir;
use zklock_storage::{Recovered, StorageError, StorageOptions};

use crate::support::{append_all_sync, expected, fresh, log_files, open, options, payload, WAIT};

pub(super) fn append_and_reopen_round_trip(root: &Path) {
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

pub(super) fn group_commit_with_many_concurrent_writers(root: &Path) {
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

pub(super) fn callbacks_run_in_append_order(root: &Path) {
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

pub(super) fn non_increasing_zxid_fails_only_that_record(root: &Path) {
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

pub(super) fn append_after_close_reports_closed(root: &Path) {
    let tmp = TempDir::new_in(root).unwrap();
    let (s, _) = open(&options(tmp.path()));
    let other = s.clone();
    s.close().unwrap();
    assert!(matches!(other.append_sync(1, vec![]), Err(StorageError::Closed)));
}

pub(super) fn failed_write_poisons_the_log(root: &Path) {
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

pub(super) fn dropping_the_last_handle_inside_a_callback_does_not_deadlock(root: &Path) {
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
