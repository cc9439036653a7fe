//! Temp directories for launched servers, named after the owning test process so leftovers can be swept.
//!
//! Instances in statics (the shared ones) never run `Drop`, so their directories survive the test process. Each
//! directory is called `zk-<owner pid>-<random>`; creating a new one first removes those whose owner is dead.

use std::io;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// Creates a fresh directory for one ZooKeeper instance (or KDC), removed when the returned guard drops.
pub(crate) fn instance_dir() -> io::Result<TempDir> {
    let root = std::env::temp_dir().join("zklock-testkit");
    std::fs::create_dir_all(&root)?;
    sweep_stale(&root);
    tempfile::Builder::new()
        .prefix(&format!("zk-{}-", std::process::id()))
        .tempdir_in(&root)
}

fn sweep_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("zk-")?.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if !PathBuf::from(format!("/proc/{owner}")).exists() {
            // Another process may be sweeping the same directory right now; losing that race is fine.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
