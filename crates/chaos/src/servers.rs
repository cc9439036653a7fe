//! The server under test: the embedded server as a `zklock serve` process (so kill -9 and a full disk are real),
//! real ZooKeeper 3.8 standalone, or a real 3-member ensemble whose members reach each other through links the
//! network faults act on (`netfault.rs`), all on 127.0.0.1.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zklock_testkit::{four_letter_word, ZooKeeper};

/// Which server the campaign runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServerKind {
    /// zklock's embedded server (`zklock serve`), one process on a data dir of its own.
    Embedded,
    /// Real ZooKeeper 3.8, standalone.
    Zookeeper,
    /// A real 3-member ZooKeeper 3.8 ensemble.
    Ensemble,
}

/// A running server of some kind.
pub enum Servers {
    /// `zklock serve`.
    Embedded(Embedded),
    /// Real ZooKeeper, standalone or ensemble; shared with blocking tasks that kill and restart members.
    ZooKeeper(Arc<Mutex<ZooKeeper>>),
}

/// The ZooKeeper servers, locked; a panic of another holder does not poison them for the campaign.
pub fn lock(zk: &Mutex<ZooKeeper>) -> MutexGuard<'_, ZooKeeper> {
    zk.lock().unwrap_or_else(|e| e.into_inner())
}

impl Servers {
    /// Starts `kind`. The embedded server's data dir is `dir/data` (on a small tmpfs when `disk` is set, so that
    /// the disk can be filled).
    /// `links`: an ensemble's members reach each other only through links the network faults can cut or slow.
    pub fn start(kind: ServerKind, zklock: &Path, dir: &Path, disk: bool, links: bool) -> Result<Servers> {
        Ok(match kind {
            ServerKind::Embedded => Servers::Embedded(Embedded::start(zklock, dir, disk)?),
            ServerKind::Zookeeper => Servers::ZooKeeper(Arc::new(Mutex::new(
                ZooKeeper::standalone().context("starting ZooKeeper")?,
            ))),
            ServerKind::Ensemble if links => Servers::ZooKeeper(Arc::new(Mutex::new(
                ZooKeeper::builder()
                    .members(3)
                    .peer_links()
                    .start()
                    .context("starting the ZooKeeper ensemble with links between its members")?,
            ))),
            ServerKind::Ensemble => Servers::ZooKeeper(Arc::new(Mutex::new(
                ZooKeeper::builder()
                    .members(3)
                    .start()
                    .context("starting the ZooKeeper ensemble")?,
            ))),
        })
    }

    /// Real ZooKeeper's handle, for faults that act on its members; `None` for the embedded server.
    pub fn zookeeper(&self) -> Option<Arc<Mutex<ZooKeeper>>> {
        match self {
            Servers::Embedded(_) => None,
            Servers::ZooKeeper(zk) => Some(zk.clone()),
        }
    }

    /// The addresses clients use, one per member.
    pub fn members(&self) -> Vec<SocketAddr> {
        match self {
            Servers::Embedded(e) => vec![e.addr],
            Servers::ZooKeeper(zk) => {
                let zk = lock(zk);
                (0..zk.members()).map(|i| zk.member_addr(i)).collect()
            }
        }
    }

    /// The connect string of every member.
    pub fn connect_string(&self) -> String {
        self.members()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `zklock serve` on a fixed port and data dir, restartable.
pub struct Embedded {
    zklock: PathBuf,
    /// Its address (kept across restarts).
    pub addr: SocketAddr,
    /// Its data dir.
    pub data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// The tmpfs mounted on `data`, if any (unmounted on drop, after the server was killed).
    tmpfs: Option<zklock_testkit::Tmpfs>,
}

/// The size of the tmpfs under the embedded server's data dir: room for the log preallocation (4 MiB), the log
/// files kept back to the oldest of 3 snapshots (4 MiB each) and the snapshots; small enough to fill at once.
const TMPFS_SIZE: &str = "64m";

/// The embedded server's configuration in a campaign: a snapshot after every 4 MiB logged (ZooKeeper's
/// `snapSizeLimitInKb`), so that old log files are pruned and the disk-full fault, which writes about that much
/// each time, does not fill the tmpfs for good.
// `mntr` for the aftermath (a session count), `ruok` for the start; the rest stays off as by default.
const ZOO_CFG: &str = "tickTime=2000\nsnapSizeLimitInKb=4096\n4lw.commands.whitelist=ruok,mntr\n";

impl Embedded {
    fn start(zklock: &Path, dir: &Path, disk: bool) -> Result<Embedded> {
        let data = dir.join("data");
        std::fs::create_dir_all(&data)?;
        let tmpfs = if disk {
            Some(
                zklock_testkit::Tmpfs::mount_at(&data, TMPFS_SIZE)
                    .context("mounting a tmpfs for the disk-full fault (needs root)")?,
            )
        } else {
            None
        };
        let port = zklock_testkit::ports::free_port()?;
        let mut embedded = Embedded {
            zklock: zklock.to_owned(),
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            data,
            log: dir.join("server.log"),
            child: None,
            tmpfs,
        };
        embedded.launch()?;
        Ok(embedded)
    }

    /// Starts the process (again) and waits until it answers `imok`.
    pub fn launch(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let config = self.log.with_file_name("zoo.cfg");
        std::fs::write(&config, ZOO_CFG)?;
        let mut command = Command::new(&self.zklock);
        command
            .args(["serve", "--listen", &self.addr.to_string(), "--config"])
            .arg(&config)
            .arg("--data-dir")
            .arg(&self.data)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = zklock_testkit::spawn_tied_to_process(command)
            .with_context(|| format!("starting {} serve", self.zklock.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(answer) = four_letter_word(self.addr, "ruok", Duration::from_secs(1)) {
                if answer.starts_with("imok") {
                    return Ok(());
                }
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                bail!(
                    "zklock serve exited with {status} at start; see {}",
                    self.log.display()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "zklock serve did not answer imok within 30 s; see {}",
                    self.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// kill -9 and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process is still running (reaps it if it exited).
    pub fn running(&mut self) -> bool {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(_) => {
                self.child = None;
                false
            }
            None => false,
        }
    }

    /// Fills the data dir's file system with a filler file; returns its path.
    pub fn fill_disk(&self) -> std::io::Result<PathBuf> {
        use std::io::Write;
        let path = self.data.join("chaos-filler");
        let mut file = std::fs::File::create(&path)?;
        let chunk = vec![0xA5u8; 64 * 1024];
        loop {
            match file.write_all(&chunk) {
                Ok(()) => {}
                Err(err) if err.raw_os_error() == Some(nix::libc::ENOSPC) => break,
                Err(err) => return Err(err),
            }
        }
        let _ = file.sync_all();
        Ok(path)
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.kill();
        drop(self.tmpfs.take());
    }
}

/// SIGSTOP or SIGCONT to one process.
pub fn signal(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}
