//! A small, real tmpfs for disk-full tests: mounted on demand, filled to the brim, unmounted when dropped.
//!
//! Mounting needs root (`mount -t tmpfs`). A test that needs a full disk fails with a clear message without it —
//! it never skips silently.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

/// A mounted tmpfs, unmounted when dropped (also when the test panics; lazily if something still holds a file in
/// it, such as a server that did not shut down).
#[derive(Debug)]
pub struct Tmpfs {
    mount: PathBuf,
    /// The temporary directory holding the mount point, when we made it; removed after the unmount.
    _parent: Option<TempDir>,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it: `"12m"`) on a fresh directory under a temporary
    /// directory, removed again on drop.
    ///
    /// # Panics
    /// With a clear message if that is impossible (not root, no tmpfs, no `mount(8)`).
    pub fn mount(size: &str) -> Tmpfs {
        let parent = tempfile::tempdir().expect("temp dir");
        let mount = parent.path().join("tmpfs");
        let mut fs = Tmpfs::mount_at(&mount, size).unwrap_or_else(|e| {
            panic!(
                "{e}\nThis test fills a real file system and needs root (mount -t tmpfs); it does not skip."
            )
        });
        fs._parent = Some(parent);
        fs
    }

    /// Mounts a tmpfs of `size` on `dir` (created if missing; left in place on drop). For callers that report
    /// the failure themselves instead of panicking.
    ///
    /// # Errors
    /// When `dir` cannot be created, `mount(8)` cannot be run, or the mount fails (not root, no tmpfs); the
    /// message names the directory, the size and what `mount` said.
    pub fn mount_at(dir: &Path, size: &str) -> io::Result<Tmpfs> {
        std::fs::create_dir_all(dir)?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run mount(8): {e}")))?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "cannot mount a {size} tmpfs on {} ({}): {}",
                dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(Tmpfs {
            mount: dir.to_owned(),
            _parent: None,
        })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mount
    }

    /// Fills the file system with a filler file, then gives back `leave` bytes: afterwards about `leave` bytes
    /// are free. Returns the filler's path (delete it to free the space). Call it once per mount (the filler is
    /// created anew).
    ///
    /// # Panics
    /// If the filler cannot be created, written (but for running out of space) or synced.
    pub fn fill_leaving(&self, leave: u64) -> PathBuf {
        let path = self.mount.join("filler");
        let mut file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)
            .expect("create filler");
        let chunk = vec![0xA5u8; 64 << 10];
        let mut len = 0u64;
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(n) => len += n as u64,
                Err(e) if e.kind() == io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling the tmpfs: {e}"),
            }
        }
        file.set_len(len.saturating_sub(leave)).expect("shrink filler");
        file.sync_all().expect("sync filler");
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&self.mount)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Busy (a server that did not shut down still has its log open): detach it now, gone when closed.
            let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        }
    }
}
