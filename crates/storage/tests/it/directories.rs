//! The directories and options at open: a separate log directory, invalid options, room for the log, one
//! storage per directory, private permissions, and a data directory that is a file.

use std::fs;
use std::path::Path;

use tempfile::TempDir;
use zklock_storage::{Storage, StorageError};

use crate::support::{
    append_all_sync, expected, fresh, log_files, open, options, snapshot_files, tree_at, write_and_close,
};

pub(super) fn separate_log_dir_is_used(root: &Path) {
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

pub(super) fn invalid_options_are_rejected(root: &Path) {
    let (_tmp, mut o) = fresh(root);
    o.max_batch = 0;
    assert!(matches!(Storage::open(o), Err(StorageError::InvalidOptions(_))));
}

/// A log directory without room for one preallocation step is refused at open, with the numbers,
/// instead of failing the first append.
pub(super) fn open_refuses_a_log_dir_without_room_for_one_preallocation_step(root: &Path) {
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
