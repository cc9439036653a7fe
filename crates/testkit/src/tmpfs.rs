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

/// What [`Tmpfs::fill_under_writes`] left: the creates the server acknowledged before its disk was full.
#[derive(Debug)]
pub struct Filled {
    /// The paths of the acknowledged creates.
    pub acked: Vec<String>,
    /// The data each was given.
    pub value: Vec<u8>,
    filler: PathBuf,
}

impl Filled {
    /// Frees the space the filler took.
    pub fn free(&self) {
        std::fs::remove_file(&self.filler).expect("remove the filler");
    }

    /// Every acknowledged create is there with its data (read through `reader`, on the restarted server), and a
    /// new write works.
    pub async fn assert_all_there(&self, reader: &zookeeper_client::Client) {
        for path in &self.acked {
            let (got, _) = reader
                .get_data(path)
                .await
                .unwrap_or_else(|e| panic!("acknowledged {path} lost: {e}"));
            assert!(got == self.value, "{path} has other data");
        }
        reader
            .create("/after", b"ok", &persistent())
            .await
            .expect("writes work again");
    }
}

fn persistent() -> zookeeper_client::CreateOptions<'static> {
    zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all())
}

impl Tmpfs {
    /// Fills this file system under a server's writes: creates `/fill`, leaves 1 MiB free (the server's log
    /// file, once it exists with its 4 MiB of zero fill, then fits records until its next 4 MiB step, which cannot
    /// be written), and creates persistent 100 KiB nodes `/fill/n0000`, `n0001`… through `writer` until one fails
    /// (each answered or failed within `wait`). Asserts what every disk-full test needs of it: the disk filled
    /// within 200 writes, at least 20 fitted first, and the write that did not fit was not acknowledged
    /// (`ConnectionLoss`: the server gave up instead).
    pub async fn fill_under_writes(
        &self,
        writer: &zookeeper_client::Client,
        wait: std::time::Duration,
    ) -> Filled {
        writer
            .create("/fill", b"", &persistent())
            .await
            .expect("create /fill");
        let filler = self.fill_leaving(1 << 20);
        let value = vec![b'v'; 100 << 10];
        let mut acked = Vec::new();
        let failed_with = loop {
            let path = format!("/fill/n{:04}", acked.len());
            let created = tokio::time::timeout(wait, writer.create(&path, &value, &persistent()))
                .await
                .expect("a create is answered or fails in time");
            match created {
                Ok(_) => acked.push(path),
                Err(e) => break e,
            }
            assert!(
                acked.len() < 200,
                "the disk never filled ({} writes)",
                acked.len()
            );
        };
        assert!(
            acked.len() >= 20,
            "only {} writes fit before the failure",
            acked.len()
        );
        assert_eq!(
            failed_with,
            zookeeper_client::Error::ConnectionLoss,
            "the unlogged write is not acknowledged"
        );
        Filled { acked, value, filler }
    }
}
