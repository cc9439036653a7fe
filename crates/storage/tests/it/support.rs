//! What the tests share: the test options, payloads and file listings, and an independent encoder of the
//! documented log layout.

use std::fs::{self, OpenOptions};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;
use zklock_storage::{Recovered, Storage, StorageOptions};

/// Generous: the machine is small and shared.
pub(crate) const WAIT: Duration = Duration::from_secs(120);

pub(crate) const HEADER: u64 = 16;

pub(crate) const OVERHEAD: u64 = 28;

pub(crate) fn options(dir: &Path) -> StorageOptions {
    let mut o = StorageOptions::new(dir);
    // Small preallocation keeps the byte-level tests cheap; the zero-fill test uses more.
    o.preallocate_bytes = 4096;
    o
}

/// A new directory under `root` and the test options for it.
pub(crate) fn fresh(root: &Path) -> (TempDir, StorageOptions) {
    let tmp = TempDir::new_in(root).unwrap();
    let o = options(tmp.path());
    (tmp, o)
}

pub(crate) fn open(o: &StorageOptions) -> (Storage, Recovered) {
    Storage::open(o.clone()).expect("open")
}

pub(crate) fn payload(zxid: i64) -> Vec<u8> {
    format!("txn-{zxid}-{}", "x".repeat((zxid % 7) as usize)).into_bytes()
}

pub(crate) fn log_files(dir: &Path) -> Vec<PathBuf> {
    files_with_prefix(dir, "log.")
}

pub(crate) fn snapshot_files(dir: &Path) -> Vec<PathBuf> {
    files_with_prefix(dir, "snapshot.")
}

pub(crate) fn files_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Byte offset of each record in a single log file written with `payload(1..=n)`.
pub(crate) fn record_offsets(zxids: impl IntoIterator<Item = i64>) -> Vec<(u64, u64)> {
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

pub(crate) fn append_all_sync(storage: &Storage, zxids: impl IntoIterator<Item = i64>) {
    for z in zxids {
        storage.append_sync(z, payload(z)).expect("append");
    }
}

/// The content of the test snapshots: the one at `zxid` holds `tree@<zxid>`.
pub(crate) fn tree_at(zxid: i64) -> Vec<u8> {
    format!("tree@{zxid}").into_bytes()
}

/// Appends `zxids` to `s` (each waiting for its fsync) and snapshots at the last of them.
pub(crate) fn append_then_snapshot(s: &Storage, zxids: RangeInclusive<i64>) {
    append_all_sync(s, zxids.clone());
    s.save_snapshot(*zxids.end(), &tree_at(*zxids.end())).unwrap();
}

/// Opens the storage `o` describes, appends `zxids` (each waiting for its fsync) and closes it.
pub(crate) fn write_and_close(o: &StorageOptions, zxids: impl IntoIterator<Item = i64>) {
    let (s, _) = open(o);
    append_all_sync(&s, zxids);
    s.close().unwrap();
}

/// Appends `zxid` to `s`, closes it and opens it again (with `o`): the transactions found.
pub(crate) fn append_and_reopen(s: Storage, o: &StorageOptions, zxid: i64) -> Vec<(i64, Vec<u8>)> {
    s.append_sync(zxid, payload(zxid)).unwrap();
    s.close().unwrap();
    open(o).1.txns
}

pub(crate) fn expected(zxids: impl IntoIterator<Item = i64>) -> Vec<(i64, Vec<u8>)> {
    zxids.into_iter().map(|z| (z, payload(z))).collect()
}

pub(crate) fn set_len(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

pub(crate) fn patch(path: &Path, at: u64, bytes: &[u8]) {
    let mut data = fs::read(path).unwrap();
    data[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    fs::write(path, data).unwrap();
}

/// Independent encoder of the documented record layout.
pub(crate) fn encode(zxid: i64, batch_start: u64, payload: &[u8]) -> Vec<u8> {
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

pub(crate) fn encoded_header() -> Vec<u8> {
    let mut h = b"ZKLKLOG\0".to_vec();
    h.extend_from_slice(&1u32.to_be_bytes());
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_be_bytes());
    h
}
