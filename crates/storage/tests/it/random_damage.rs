//! Random records, cuts and bit flips (proptest): what survives is exactly what the layout says.

use std::fs;
use std::sync::mpsc;

use proptest::prelude::*;
use tempfile::TempDir;
use zklock_storage::{Storage, StorageError};

use crate::support::{log_files, open, options, set_len, HEADER, OVERHEAD, WAIT};

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
