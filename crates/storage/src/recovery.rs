//! Open-time recovery: newest valid snapshot, replay of the logs after it, torn-tail and
//! corruption handling (policy in the crate docs).

use std::path::Path;

use crate::active_log::ActiveLog;
use crate::error::{Result, StorageError};
use crate::files::{self, LOG_PREFIX};
use crate::options::StorageOptions;
use crate::record::{self, RecordView, LOG_HEADER_LEN};
use crate::snapshot;
use crate::vfs::{Disk, SyncPoint};

/// What [`Storage::open`](crate::Storage::open) found on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The newest valid snapshot: `(zxid it covers, blob)`.
    pub snapshot: Option<(i64, Vec<u8>)>,
    /// Every logged transaction with a zxid greater than the snapshot's, in zxid order.
    pub txns: Vec<(i64, Vec<u8>)>,
    /// `max(snapshot zxid, last logged zxid, 0)`; the next append must be greater.
    pub last_zxid: i64,
}

/// What `Storage::open` needs to continue: the data for the caller and the writer's state.
pub(crate) struct Outcome {
    pub recovered: Recovered,
    pub active: Option<ActiveLog>,
}

/// Runs recovery over the directories named in `options`, repairing torn tails on disk.
pub(crate) fn recover(disk: &Disk, options: &StorageOptions) -> Result<Outcome> {
    // The directories exist: `Storage::open` created (or checked) and locked them.
    files::remove_tmp_files(disk, &options.dir)?;
    let snapshot = snapshot::load_newest(disk, &options.dir)?;
    let snap_zxid = snapshot.as_ref().map(|(z, _)| *z);

    let logs = files::list(disk, options.log_dir(), LOG_PREFIX)?;
    // Files whose successor starts at or below snapshot+1 hold nothing newer than it.
    let first_needed = match snap_zxid {
        None => 0,
        Some(s) => (0..logs.len())
            .find(|&i| {
                logs.get(i + 1)
                    .is_none_or(|(next, _)| *next > s.saturating_add(1))
            })
            .unwrap_or(0),
    };

    let mut scan = Scan {
        options,
        disk,
        snap_zxid,
        last_zxid: None,
        txns: Vec::new(),
    };
    let mut active = None;
    let needed = &logs[first_needed..];
    for (i, (name_zxid, path)) in needed.iter().enumerate() {
        let is_last = i + 1 == needed.len();
        match scan.file(path, *name_zxid, is_last)? {
            FileEnd::Complete { end } => {
                if is_last {
                    active = Some(ActiveLog::reopen(disk, path, end)?);
                }
            }
            FileEnd::Removed => {}
            FileEnd::Truncated { end } => {
                // Everything after the damage is gone, including later files.
                for (_, later) in &needed[i + 1..] {
                    tracing::warn!(file = %later.display(), "removing log file after truncated corruption");
                    files::remove(disk, later)?;
                }
                files::sync_dir(disk, options.log_dir(), SyncPoint::Other)?;
                active = end.map(|end| ActiveLog::reopen(disk, path, end)).transpose()?;
                break;
            }
        }
    }

    let last_zxid = snap_zxid.unwrap_or(0).max(scan.last_zxid.unwrap_or(0)).max(0);
    tracing::info!(
        snapshot = ?snap_zxid,
        txns = scan.txns.len(),
        last_zxid,
        "storage recovered"
    );
    Ok(Outcome {
        recovered: Recovered {
            snapshot,
            txns: scan.txns,
            last_zxid,
        },
        active,
    })
}

/// How a log file ended up after scanning.
enum FileEnd {
    /// Good data up to `end`; the rest (if any) was zero fill or a torn final batch.
    Complete { end: u64 },
    /// A last file without a valid header or records: deleted.
    Removed,
    /// Corruption was cut off at `end` (`None`: the whole file was removed) because
    /// `truncate_corrupt_tail` is set; later files must go too.
    Truncated { end: Option<u64> },
}

/// Scanning state carried across log files.
struct Scan<'a> {
    options: &'a StorageOptions,
    disk: &'a Disk,
    snap_zxid: Option<i64>,
    last_zxid: Option<i64>,
    txns: Vec<(i64, Vec<u8>)>,
}

impl Scan<'_> {
    /// Reads one log file, collecting its txns newer than the snapshot.
    fn file(&mut self, path: &Path, name_zxid: i64, is_last: bool) -> Result<FileEnd> {
        let buf = self.disk.fs().read(path).map_err(|e| StorageError::io(path, e))?;
        if let Err(reason) = record::check_log_header(&buf) {
            if is_last && record::valid_records_after(&buf, 0).is_empty() {
                // Died while creating the file, before any record in it was acknowledged.
                tracing::warn!(file = %path.display(), %reason, "removing log file with a torn header");
                files::remove(self.disk, path)?;
                files::sync_dir(self.disk, self.options.log_dir(), SyncPoint::Other)?;
                return Ok(FileEnd::Removed);
            }
            return self.corrupt(path, 0, reason, is_last);
        }

        let mut at = LOG_HEADER_LEN;
        let mut first = true;
        // Batch of the last good record: a torn batch cannot start before it.
        let mut last_batch = LOG_HEADER_LEN as u64;
        loop {
            if at == buf.len() && !first {
                break; // a rolled file ends exactly after its last record
            }
            let view = match record::decode_record(&buf, at) {
                Ok(view) => view,
                Err(reason) => {
                    let followers = record::valid_records_after(&buf, at);
                    if is_last && only_torn_batch(&followers, at, last_batch) {
                        if first {
                            // Header plus a torn first batch: nothing here was acknowledged,
                            // and the name may be a zxid that will be handed out again.
                            tracing::warn!(file = %path.display(), "removing log file without complete records");
                            files::remove(self.disk, path)?;
                            files::sync_dir(self.disk, self.options.log_dir(), SyncPoint::Other)?;
                            return Ok(FileEnd::Removed);
                        }
                        return self.clean_end(path, &buf, at, &reason, followers.len());
                    }
                    let reason = match followers.first() {
                        Some((next, _)) if is_last => format!(
                            "{reason}, and a record of another, acknowledged batch follows at offset {next}"
                        ),
                        Some((next, _)) => {
                            format!("{reason}, and a valid record follows at offset {next}")
                        }
                        None => format!("{reason}, in a log file that is not the last one"),
                    };
                    return self.corrupt(path, at, reason, is_last);
                }
            };
            if first && view.zxid != name_zxid {
                let reason = format!(
                    "first record has zxid {:#x}, but the file name says {name_zxid:#x}",
                    view.zxid
                );
                return self.corrupt(path, at, reason, is_last);
            }
            if let Some(prev) = self.last_zxid.filter(|prev| view.zxid <= *prev) {
                let reason = format!(
                    "zxid {:#x} does not follow the previous zxid {prev:#x}",
                    view.zxid
                );
                return self.corrupt(path, at, reason, is_last);
            }
            if self.snap_zxid.is_none_or(|s| view.zxid > s) {
                let payload = buf[view.payload_at..view.payload_at + view.payload_len].to_vec();
                self.txns.push((view.zxid, payload));
            }
            self.last_zxid = Some(view.zxid);
            last_batch = view.batch_start;
            first = false;
            at += view.total_len;
        }
        Ok(FileEnd::Complete { end: at as u64 })
    }

    /// End of the log at `at`: cut off whatever partial data lies beyond it. Zero fill alone
    /// is the normal end of the newest file and is left in place.
    fn clean_end(
        &self,
        path: &Path,
        buf: &[u8],
        at: usize,
        reason: &str,
        discarded: usize,
    ) -> Result<FileEnd> {
        if buf[at..].iter().any(|&b| b != 0) {
            // Never acknowledged if it is a torn write, but say so loudly: it could also be
            // damage to the very last batch, which cannot be told apart (see crate docs).
            tracing::warn!(
                file = %path.display(),
                offset = at,
                %reason,
                discarded_valid_records = discarded,
                "truncating the torn final batch of the log"
            );
            truncate(self.disk, path, at as u64)?;
        }
        Ok(FileEnd::Complete { end: at as u64 })
    }

    /// Damage at `at`: an error, or a truncation if the options allow it.
    fn corrupt(&self, path: &Path, at: usize, reason: String, is_last: bool) -> Result<FileEnd> {
        if !self.options.truncate_corrupt_tail {
            return Err(StorageError::CorruptLog {
                file: path.to_owned(),
                offset: at as u64,
                reason,
            });
        }
        tracing::warn!(file = %path.display(), offset = at, %reason, is_last, "corrupt log: truncating (truncate_corrupt_tail is set)");
        if at <= LOG_HEADER_LEN {
            // Nothing usable in this file: drop it entirely so a fresh one gets a valid header.
            files::remove(self.disk, path)?;
            return Ok(FileEnd::Truncated { end: None });
        }
        truncate(self.disk, path, at as u64)?;
        Ok(FileEnd::Truncated { end: Some(at as u64) })
    }
}

/// Whether the valid records found after the damage at `at` (if any) can all belong to the
/// final, unacknowledged batch: one batch that started at or before `at`, and not before the
/// batch of the last good record. Any other follower proves the damage was acknowledged data.
fn only_torn_batch(followers: &[(usize, RecordView)], at: usize, last_batch: u64) -> bool {
    let Some((_, first)) = followers.first() else {
        return true;
    };
    let batch = first.batch_start;
    batch <= at as u64 && batch >= last_batch && followers.iter().all(|(_, v)| v.batch_start == batch)
}

/// Cuts `path` to `len` bytes and makes that durable.
fn truncate(disk: &Disk, path: &Path, len: u64) -> Result<()> {
    let io = |e| StorageError::io(path, e);
    let mut file = disk.fs().open_rw(path).map_err(io)?;
    file.set_len(len).map_err(io)?;
    if disk.syncs(SyncPoint::Other) {
        file.sync_all().map_err(io)?;
    }
    Ok(())
}
