//! Snapshots: recovery from a snapshot and the later log, clean-up of files no longer needed, falling back
//! past a damaged snapshot, snapshots beside appends, and failed snapshots.

use std::fs;
use std::path::Path;

use zklock_storage::{Storage, StorageError};

use crate::support::{
    append_all_sync, append_then_snapshot, expected, fresh, log_files, open, payload, set_len,
    snapshot_files, tree_at,
};

pub(super) fn snapshot_plus_later_txns_are_recovered(root: &Path) {
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

pub(super) fn snapshot_ahead_of_the_log_sets_last_zxid(root: &Path) {
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

pub(super) fn snapshot_removes_files_no_longer_needed(root: &Path) {
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

pub(super) fn bad_newest_snapshot_falls_back_to_an_older_one(root: &Path) {
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

pub(super) fn snapshots_do_not_block_appends(root: &Path) {
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

/// A snapshot that cannot be completed does not leave its temporary file behind (on a full disk that
/// file would hold the space the log needs until the next start).
pub(super) fn failed_snapshot_leaves_no_temporary_file(root: &Path) {
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
