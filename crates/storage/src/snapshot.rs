//! Snapshot files: atomic write, validated read, and selection of the newest valid one.

use std::path::{Path, PathBuf};

use crate::error::{Result, StorageError};
use crate::files::{self, SNAPSHOT_PREFIX, TMP_SUFFIX};
use crate::vfs::{Disk, SyncPoint};

const SNAPSHOT_MAGIC: &[u8; 8] = b"ZKLKSNP\0";
const SNAPSHOT_VERSION: u32 = 1;
/// magic + version + reserved + zxid + len.
const SNAPSHOT_HEADER_LEN: usize = 32;

/// Writes `snapshot.<zxid>` atomically: temp file, fsync, rename, fsync of the directory.
/// On failure the temporary file is removed, so a snapshot that did not fit (a full disk) does not
/// keep holding the space the log needs.
pub(crate) fn write(disk: &Disk, dir: &Path, zxid: i64, blob: &[u8]) -> Result<PathBuf> {
    let tmp_path = dir.join(format!("{}{TMP_SUFFIX}", files::file_name(SNAPSHOT_PREFIX, zxid)));
    let written = write_via(disk, &tmp_path, dir, zxid, blob);
    if written.is_err() {
        if let Err(e) = files::remove(disk, &tmp_path) {
            tracing::warn!(error = %e, "cannot remove the unfinished snapshot");
        }
    }
    written
}

fn write_via(disk: &Disk, tmp_path: &Path, dir: &Path, zxid: i64, blob: &[u8]) -> Result<PathBuf> {
    let final_path = dir.join(files::file_name(SNAPSHOT_PREFIX, zxid));
    let mut header = [0u8; SNAPSHOT_HEADER_LEN];
    header[..8].copy_from_slice(SNAPSHOT_MAGIC);
    header[8..12].copy_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    header[16..24].copy_from_slice(&zxid.to_be_bytes());
    header[24..32].copy_from_slice(&(blob.len() as u64).to_be_bytes());
    let mut crc = crc32c::crc32c(&header);
    crc = crc32c::crc32c_append(crc, blob);

    let io = |e| StorageError::io(tmp_path, e);
    let mut file = disk.fs().create_truncate(tmp_path).map_err(io)?;
    // Three positioned writes: the blob may be large, so avoid copying it.
    file.write_at(&header, 0).map_err(io)?;
    file.write_at(blob, SNAPSHOT_HEADER_LEN as u64).map_err(io)?;
    file.write_at(&crc.to_be_bytes(), (SNAPSHOT_HEADER_LEN + blob.len()) as u64)
        .map_err(io)?;
    if disk.syncs(SyncPoint::Other) {
        file.sync_all().map_err(io)?;
    }
    drop(file);
    disk.fs()
        .rename(tmp_path, &final_path)
        .map_err(|e| StorageError::io(&final_path, e))?;
    files::sync_dir(disk, dir, SyncPoint::SnapshotDir)?;
    Ok(final_path)
}

/// Reads and validates a snapshot file named for `zxid`; `Err` says why it is unusable.
pub(crate) fn read(disk: &Disk, path: &Path, zxid: i64) -> Result<Vec<u8>, String> {
    let mut buf = disk.fs().read(path).map_err(|e| format!("cannot read: {e}"))?;
    if buf.len() < SNAPSHOT_HEADER_LEN + 4 {
        return Err(format!("file too short ({} bytes)", buf.len()));
    }
    if &buf[..8] != SNAPSHOT_MAGIC {
        return Err("bad magic".into());
    }
    let field = |at: usize| u64::from_be_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
    let version = u32::from_be_bytes(buf[8..12].try_into().expect("4 bytes"));
    let header_zxid = field(16) as i64;
    let len = field(24);
    let body_end = buf.len() - 4;
    if len != (body_end - SNAPSHOT_HEADER_LEN) as u64 {
        return Err(format!(
            "length field {len} does not match file size {}",
            buf.len()
        ));
    }
    let crc = u32::from_be_bytes(buf[body_end..].try_into().expect("4 bytes"));
    if crc != crc32c::crc32c(&buf[..body_end]) {
        return Err("checksum mismatch".into());
    }
    if version != SNAPSHOT_VERSION {
        return Err(format!("unsupported snapshot version {version}"));
    }
    if header_zxid != zxid {
        return Err(format!(
            "header zxid {header_zxid:#x} does not match the file name"
        ));
    }
    buf.truncate(body_end);
    buf.drain(..SNAPSHOT_HEADER_LEN);
    Ok(buf)
}

/// The newest valid snapshot in `dir`, falling back to older ones past damaged files.
/// Fails if snapshot files exist but none is valid.
pub(crate) fn load_newest(disk: &Disk, dir: &Path) -> Result<Option<(i64, Vec<u8>)>> {
    let all = files::list(disk, dir, SNAPSHOT_PREFIX)?;
    let mut newest_problem = None;
    for (zxid, path) in all.iter().rev() {
        match read(disk, path, *zxid) {
            Ok(blob) => return Ok(Some((*zxid, blob))),
            Err(reason) => {
                tracing::warn!(file = %path.display(), %reason, "ignoring invalid snapshot, trying an older one");
                newest_problem.get_or_insert(format!("{}: {reason}", path.display()));
            }
        }
    }
    match newest_problem {
        None => Ok(None),
        Some(reason) => Err(StorageError::NoValidSnapshot {
            dir: dir.to_owned(),
            count: all.len(),
            reason,
        }),
    }
}

/// Deletes all but the newest `keep` snapshots; returns the zxid of the oldest kept one.
pub(crate) fn prune(disk: &Disk, dir: &Path, keep: usize) -> Result<Option<i64>> {
    let all = files::list(disk, dir, SNAPSHOT_PREFIX)?;
    let cut = all.len().saturating_sub(keep);
    for (_, path) in &all[..cut] {
        tracing::debug!(file = %path.display(), "removing old snapshot");
        files::remove(disk, path)?;
    }
    if cut > 0 {
        files::sync_dir(disk, dir, SyncPoint::Other)?;
    }
    Ok(all.get(cut).map(|(zxid, _)| *zxid))
}
