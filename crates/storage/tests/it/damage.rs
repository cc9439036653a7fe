//! Damaged logs at open: torn tails and headers, zero-filled and out-of-order write-back, flipped bits, records
//! out of order, and how rolled log files are named. Byte-level: files are built or damaged by hand from the
//! documented layout.

use std::fs;
use std::path::Path;

use tempfile::TempDir;
use zklock_storage::{Storage, StorageError};

use crate::support::{
    append_all_sync, append_and_reopen, encode, encoded_header, expected, fresh, log_files, open, options,
    patch, payload, record_offsets, set_len, write_and_close, HEADER,
};

pub(super) fn torn_tail_at_every_offset_opens_with_the_prefix(root: &Path) {
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

pub(super) fn zero_filled_tail_is_a_clean_end(root: &Path) {
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

pub(super) fn bit_flip_in_a_middle_record_is_reported_with_file_and_offset(root: &Path) {
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

pub(super) fn damage_in_an_earlier_log_file_is_corruption_even_at_its_end(root: &Path) {
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

pub(super) fn rolled_files_are_named_by_their_first_zxid(root: &Path) {
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

pub(super) fn torn_final_batch_with_out_of_order_writeback_is_a_clean_end(root: &Path) {
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

pub(super) fn damage_followed_by_a_later_batch_is_corruption(root: &Path) {
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

pub(super) fn out_of_order_zxids_on_disk_are_rejected(root: &Path) {
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

pub(super) fn torn_header_of_the_newest_log_file_is_removed(root: &Path) {
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

/// Regression: a newest log file holding only its header (cut right after it) used to be
/// reopened for appending, so its first record no longer matched its name and the next open
/// failed with "first record has zxid 0x2, but the file name says 0x1".
pub(super) fn header_only_newest_log_file_is_not_reused(root: &Path) {
    let (tmp, o) = fresh(root);
    write_and_close(&o, 1..=1);
    let log = log_files(tmp.path()).remove(0);
    set_len(&log, HEADER);
    let (s, rec) = open(&o);
    assert!(rec.txns.is_empty());
    assert!(!log.exists());
    assert_eq!(append_and_reopen(s, &o, 2), expected([2]));
}
