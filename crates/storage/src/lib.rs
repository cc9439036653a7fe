//! Durable storage for the embedded zklock server: a group-committed transaction log plus
//! snapshots.
//!
//! The storage knows nothing about the data tree. It keeps
//! * **transactions**: opaque payloads tagged with a zxid (`i64`, strictly increasing), and
//! * **snapshots**: opaque blobs tagged with the zxid of the last transaction they cover.
//!
//! # Using it
//!
//! ```no_run
//! use zklock_storage::{Storage, StorageOptions};
//!
//! # fn main() -> Result<(), zklock_storage::StorageError> {
//! let (storage, recovered) = Storage::open(StorageOptions::new("/var/lib/zklock"))?;
//! // Rebuild the tree: start from the snapshot (if any), then apply every txn in order.
//! if let Some((_zxid, blob)) = &recovered.snapshot { /* decode blob */ }
//! for (_zxid, payload) in &recovered.txns { /* apply payload */ }
//! let next = recovered.last_zxid + 1;
//!
//! // Asynchronous append: the callback runs on the writer thread once the record is durable.
//! storage.append(next, b"txn".to_vec(), Box::new(|result| {
//!     // reply to the client only now (or report the error)
//!     let _ = result;
//! }));
//! // Blocking convenience wrapper around `append`.
//! storage.append_sync(next + 1, b"txn2".to_vec())?;
//! // From any thread, without blocking appends; prunes old snapshots and logs.
//! storage.save_snapshot(next + 1, b"serialized tree")?;
//! storage.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! * [`Storage`] is a cheap `Clone` handle (an `Arc` inside); all methods take `&self`
//!   except [`Storage::close`]. Dropping the last handle also flushes and stops the writer.
//! * Appends are applied in the order [`Storage::append`] is called; a caller appending from
//!   several threads must serialize "assign zxid + append" itself so the zxids arrive in
//!   increasing order. A non-increasing zxid fails only that record
//!   ([`StorageError::ZxidNotIncreasing`]).
//! * Group commit: a single writer thread takes everything queued (up to
//!   [`StorageOptions::max_batch`] records), writes it with one `write`, issues one
//!   `fdatasync`, and only then calls the callbacks, in append order. The contract is
//!   *reply after fsync*.
//! * After a failed write or sync the file state is unknown; the storage is then
//!   **poisoned**: the failing batch and every later append get an error
//!   ([`StorageError::Poisoned`]). Restart (re-open) to recover. A full disk shows up this way
//!   (`ENOSPC`, usually while extending the zero fill); [`StorageError::io_error`] gives the OS
//!   error. Nothing of a failed batch was acknowledged, and everything acknowledged before it is
//!   recovered by the next open.
//! * [`Storage::open`] refuses a log directory with less free space than one preallocation step
//!   ([`StorageError::NoRoom`]), so a disk far too small is a start-up error rather than a
//!   failure of the first append.
//! * Callbacks run on the writer thread (keep them short, never block on another append);
//!   the only exception is an append after [`Storage::close`], whose callback gets
//!   [`StorageError::Closed`] immediately on the calling thread. A panicking callback is
//!   caught and logged.
//! * The directories are for one process at a time: `Storage::open` takes an exclusive `flock` on `zklock.lock` in the
//!   data directory (held until the storage is closed), and a second open fails with `StorageError::InUse`.
//!
//! # On-disk format
//!
//! All integers are big-endian. CRCs are CRC-32C (Castagnoli).
//!
//! ## File names
//!
//! | file | meaning |
//! |------|---------|
//! | `<log_dir>/log.<hex zxid>` | transaction log; the hex number (16 lowercase digits) is the zxid of its first record |
//! | `<dir>/snapshot.<hex zxid>` | snapshot covering every transaction up to and including that zxid |
//! | `<dir>/snapshot.<hex zxid>.tmp` | snapshot being written; deleted on open |
//!
//! Other files in the directories are ignored. Names are parsed as 1 to 16 hex digits.
//!
//! [`Storage::open`] creates missing directories and fsyncs the parent of each one it created
//! before it returns, so their entries are durable before anything in them is acknowledged.
//!
//! ## Log file
//!
//! ```text
//! header (16 bytes):  magic "ZKLKLOG\0" (8) | version u32 = 1 | crc32c(bytes 0..12) u32
//! records, back to back:
//!   marker      u32  = 0x5A4B5452 ("ZKTR"); never zero, so zero fill never parses
//!   len         u32  payload length (at most MAX_PAYLOAD_LEN)
//!   zxid        i64
//!   batch_start u64  file offset of the first record of this record's group commit
//!   payload     [len]
//!   crc         u32  crc32c over marker..payload (everything above)
//! zero fill up to the preallocated file length
//! ```
//!
//! A record therefore occupies `28 + len` bytes. Files are created lazily with the first batch
//! after a roll (named by that batch's first zxid); header and zero fill are written and
//! fsynced, and the directory is fsynced, before any record in the file is acknowledged. The
//! zero fill is extended in steps of [`StorageOptions::preallocate_bytes`] by writing real
//! zeros (not a sparse `set_len`), so a record's fdatasync has no block-allocation metadata to
//! commit. A file is rolled between batches once it holds
//! [`StorageOptions::log_roll_bytes`]; the finished file is trimmed to its used length and
//! fsynced before the next file is created, so only the newest file can end in zero fill.
//!
//! ## Snapshot file
//!
//! ```text
//! magic "ZKLKSNP\0" (8) | version u32 = 1 | reserved u32 = 0 | zxid i64 | len u64 |
//! blob [len] | crc32c over everything before it u32
//! ```
//!
//! Written to `snapshot.<hex>.tmp`, fsynced, renamed to `snapshot.<hex>`, then the directory
//! is fsynced. So a file named `snapshot.*` is complete unless the disk damaged it.
//!
//! # Recovery ([`Storage::open`])
//!
//! 1. Delete `*.tmp` files. Pick the newest snapshot whose header, length, zxid (must match
//!    the file name) and CRC are valid; an invalid one is logged and the next older one is
//!    tried. If snapshot files exist but none is valid, fail with
//!    [`StorageError::NoValidSnapshot`] (the logs it would need may have been pruned).
//! 2. Read the log files in zxid order, skipping files whose successor starts at or below
//!    `snapshot zxid + 1` (they hold nothing newer than the snapshot). Every record must have
//!    a zxid greater than the one before it (across files), and a file's first record must
//!    carry the zxid in its name; otherwise the log is corrupt.
//! 3. Return the snapshot, every logged txn with zxid > snapshot zxid in order, and
//!    `last_zxid = max(snapshot zxid, last logged zxid, 0)`. New appends must exceed it.
//!
//! ## Torn tails and corruption
//!
//! A record is *bad* if its marker is wrong (including zero fill), it runs past the end of the
//! file, its length exceeds the maximum, or its CRC does not match. At the first bad record:
//!
//! * **Clean end of log**: the file is the last log file and no CRC-valid record follows
//!   except ones belonging to the same group-commit batch as the bad spot (`batch_start` at
//!   or before the bad offset, all equal). A batch is written in one go and acknowledged
//!   only after its fsync, and the next batch starts only after that fsync, so only the last
//!   batch can be partially on disk after a crash; its records were never acknowledged.
//!   If anything but zeros lies beyond the bad offset, the file is truncated there (later
//!   appends re-extend it with zeros), so new records follow good data. This covers partial records, zero-filled tails and out-of-order page
//!   writeback within the final batch.
//! * **Corruption**: anything else (damage in an earlier file, or a valid record of another
//!   batch after the damage). `open` fails with [`StorageError::CorruptLog`] naming the file
//!   and offset, unless [`StorageOptions::truncate_corrupt_tail`] is set: then the file is
//!   truncated at the bad offset (deleted if that is its first record or header), later log
//!   files are deleted, and a warning is logged.
//!
//! The newest log file is removed if its header is missing or torn, or if it holds no complete
//! record (only a torn first batch or zero fill): it was being created when the process died,
//! nothing in it was acknowledged, and its name may be a zxid that will be handed out again.
//! An earlier file in that state is corruption.
//!
//! Caveat of the batch rule: a bit flip inside the *last* batch (after it was acknowledged)
//! is indistinguishable from a torn write and is truncated with a warning rather than
//! refused. Damage anywhere before the last batch is always detected.
//!
//! # Pruning
//!
//! After a snapshot is saved, the oldest snapshots beyond
//! [`StorageOptions::snapshots_to_keep`] are deleted, then every log file whose successor
//! starts at or below `oldest kept snapshot zxid + 1`. The newest log file is never
//! deleted. Hence every kept snapshot can still be replayed from, which makes the fallback
//! in step 1 safe.
#![forbid(unsafe_code)]

mod active_log;
#[cfg(test)]
mod crash_tests;
mod error;
mod files;
mod lock;
mod options;
mod os;
mod record;
mod recovery;
#[cfg(test)]
mod sim_disk;
mod snapshot;
mod storage;
mod vfs;
mod writer;

pub use error::StorageError;
pub use lock::LOCK_FILE;
pub use options::StorageOptions;
pub use record::MAX_PAYLOAD_LEN;
pub use recovery::Recovered;
pub use storage::Storage;
pub use vfs::FsyncFigures;
pub use writer::Completion;
